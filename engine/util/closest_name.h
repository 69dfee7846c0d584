// "Did you mean": the known name closest to a misspelled one, by edit distance. Shared by
// every place that refuses a name it does not know (scenario keys, zoo models and their
// parameters, commands and flags), so they all suggest alike.
#pragma once
#include <string>
#include <vector>

namespace fb {

// Levenshtein distance: insertions, deletions and substitutions, one each.
size_t edit_distance(const std::string& a, const std::string& b);

// The known name nearest to `given`, if it is at most `max_distance` edits away (only
// close misspellings are suggested); "" otherwise.
std::string closest_name(const std::string& given, const std::vector<std::string>& known, size_t max_distance = 2);

// "; did you mean 'NAME'?" for the closest name, or "" when none is close.
std::string did_you_mean(const std::string& given, const std::vector<std::string>& known, const std::string& prefix = "");

}  // namespace fb
