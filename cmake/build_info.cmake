# Writes build_info.cpp at build time (a custom target runs this script on every build), so
# the commit a binary reports is the one it was built from, not the one of the last cmake
# configure. configure_file rewrites the output only when its text changes, so a build
# with the same commit and dirtiness recompiles nothing.
#   -DSOURCE_DIR= -DINPUT= -DOUTPUT= -DPROJECT_VERSION= -DFUSEBENCH_CXX_FLAGS=
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE FUSEBENCH_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT FUSEBENCH_GIT_COMMIT)
  set(FUSEBENCH_GIT_COMMIT "unknown")
endif()

# Dirty: tracked files differ from the commit (a run from such a tree cannot be reproduced
# from its commit alone). --no-optional-locks: never take the index lock beside a user's git.
execute_process(COMMAND git --no-optional-locks status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE FUSEBENCH_GIT_STATUS RESULT_VARIABLE FUSEBENCH_GIT_STATUS_RC ERROR_QUIET)
if(FUSEBENCH_GIT_STATUS_RC EQUAL 0 AND NOT FUSEBENCH_GIT_STATUS STREQUAL "")
  set(FUSEBENCH_GIT_DIRTY 1)
else()
  set(FUSEBENCH_GIT_DIRTY 0)
endif()

configure_file(${INPUT} ${OUTPUT} @ONLY)
