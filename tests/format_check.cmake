# Every C++ file of the source tree (core, sim, runtime, cli, gui, tests, bench, fuzz) formatted as
# .clang-format says: clang-format --dry-run --Werror, which names each file and line that differs.
# Usage: cmake -DCLANG_FORMAT=... -DSOURCE_DIR=... -P format_check.cmake
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/core/*.cc ${SOURCE_DIR}/core/*.h ${SOURCE_DIR}/sim/*.cc ${SOURCE_DIR}/sim/*.h
     ${SOURCE_DIR}/runtime/*.cc ${SOURCE_DIR}/runtime/*.h ${SOURCE_DIR}/runtime/*.cu ${SOURCE_DIR}/cli/*.cc
     ${SOURCE_DIR}/cli/*.h ${SOURCE_DIR}/gui/*.cc ${SOURCE_DIR}/gui/*.h ${SOURCE_DIR}/tests/*.cc ${SOURCE_DIR}/tests/*.h
     ${SOURCE_DIR}/bench/*.cc ${SOURCE_DIR}/bench/*.h ${SOURCE_DIR}/fuzz/*.cc ${SOURCE_DIR}/fuzz/*.h)
list(LENGTH files n)
if(n LESS 100)
  message(FATAL_ERROR "format check: found only ${n} C++ files under ${SOURCE_DIR}")
endif()
execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${files}
                WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "format check: files differ from .clang-format (run clang-format -i on them):\n${err}")
endif()
message(STATUS "format check: ${n} files as .clang-format says")
