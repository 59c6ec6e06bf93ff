# MLPerf Training v6.0's records come from transcripts of the release's files
# (tests/data/validation/sources/mlperf_v6.0/), not from a clone: regenerating them with
# scripts/mlperf_corpus.py --transcript must give the committed records and launch entries byte for
# byte (the other releases' records are kept as the files hold them), so a transcript, the script
# and the committed corpus cannot drift apart.
#   cmake -DPYTHON=python3 -DSOURCE_DIR=<repo> -DWORK=dir -P mlperf_transcripts.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(records ${SOURCE_DIR}/tests/data/validation/mlperf_training.json)
set(launches ${SOURCE_DIR}/presets/launches/mlperf-training.json)
file(COPY_FILE ${records} ${WORK}/records.json)
file(COPY_FILE ${launches} ${WORK}/launches.json)
execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/scripts/mlperf_corpus.py
                        --transcript v6.0=${SOURCE_DIR}/tests/data/validation/sources/mlperf_v6.0
                        --out ${WORK}/records.json --launch ${WORK}/launches.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "scripts/mlperf_corpus.py --transcript failed (${rc}): ${out}${err}")
endif()
string(REGEX MATCHALL "mlperf-v60-[^ ]+" made "${err}")
list(LENGTH made n)
if(NOT n EQUAL 10)
  message(FATAL_ERROR "expected the 10 v6.0 DeepSeek-V3 records from the transcripts, got ${n}: ${err}")
endif()
foreach(pair "${WORK}/records.json;${records}" "${WORK}/launches.json;${launches}")
  list(GET pair 0 regenerated)
  list(GET pair 1 committed)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${regenerated} ${committed} RESULT_VARIABLE same)
  if(NOT same EQUAL 0)
    message(FATAL_ERROR "${committed} differs from what scripts/mlperf_corpus.py writes from the transcripts "
                        "(${regenerated}); regenerate it with --transcript v6.0=tests/data/validation/sources/mlperf_v6.0")
  endif()
endforeach()
message(STATUS "the 10 v6.0 records and their launch entries regenerate from the transcripts unchanged")
