// What built this binary: version, git commit and whether the tree was dirty when it was
// built, and the compiler flags. Generated into one source file at every build
// (build_info.cpp.in, cmake/build_info.cmake), rewritten only when the commit or the
// dirtiness changes, so that a new commit recompiles that file only.
#pragma once

namespace fb {

const char* fusebench_version();
const char* fusebench_git_commit();  // 12 hex digits, or "unknown" outside a git checkout
bool fusebench_git_dirty();          // tracked files differed from the commit at build time
const char* fusebench_cxx_flags();

}  // namespace fb
