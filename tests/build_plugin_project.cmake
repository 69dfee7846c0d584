# CTest fixture: configures and builds tests/data/plugin_project (a plugin library outside
# the tree) against this build tree's fusebench package, twice: as written, and as if
# built against plugin API version 999 (for the refusal test).
#   cmake -DSOURCE=... -DBINARY=... -DFUSEBENCH_DIR=... -DCXX=... -P build_plugin_project.cmake
foreach(variant "" "_v999")
  set(dir "${BINARY}/plugin_project${variant}")
  set(extra "")
  if(variant STREQUAL "_v999")
    set(extra "-DFAKE_API_VERSION=999")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${dir} -DCMAKE_BUILD_TYPE=Release
                          -DCMAKE_CXX_COMPILER=${CXX} -Dfusebench_DIR=${FUSEBENCH_DIR} ${extra}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring the plugin project failed:\n${out}\n${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${dir} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the plugin project failed:\n${out}\n${err}")
  endif()
endforeach()
