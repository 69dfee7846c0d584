// A file written whole or not at all: the text goes to a temporary file beside it (named
// with this process's id, so processes writing the same file at once do not mix), which is
// then renamed over it. A reader never sees half a report, JUnit file or cache.
#pragma once
#include <string>

namespace fb {

// Error "cannot write WHAT to PATH: REASON" when the file cannot be written; the temporary
// file is removed then.
void write_file_atomically(const std::string& path, const std::string& text, const std::string& what);

}  // namespace fb
