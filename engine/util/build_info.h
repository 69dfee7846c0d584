// What built this binary: version, git commit and whether the tree was dirty when CMake
// configured, and the compiler flags. Generated into one source file (build_info.cpp.in)
// so that a new commit recompiles that file only, not every file that names the commit.
#pragma once

namespace fb {

const char* fusebench_version();
const char* fusebench_git_commit();  // 12 hex digits, or "unknown" outside a git checkout
bool fusebench_git_dirty();          // tracked files differed from the commit at configure time
const char* fusebench_cxx_flags();

}  // namespace fb
