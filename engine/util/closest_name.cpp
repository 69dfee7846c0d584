#include "engine/util/closest_name.h"

#include <algorithm>

namespace fb {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest_name(const std::string& given, const std::vector<std::string>& known, size_t max_distance) {
  std::string best;
  size_t best_distance = max_distance + 1;
  for (const std::string& k : known) {
    const size_t d = edit_distance(given, k);
    if (d < best_distance) best_distance = d, best = k;
  }
  return best;
}

// `prefix` is how the name is written ("--" for a flag), so the suggestion can be pasted.
std::string did_you_mean(const std::string& given, const std::vector<std::string>& known, const std::string& prefix) {
  const std::string best = closest_name(given, known);
  return best.empty() ? "" : "; did you mean '" + prefix + best + "'?";
}

}  // namespace fb
