# One harness's ctest pass: first every regression input (tests/data/malformed, one run each),
# then SECONDS of fuzzing from the seed corpora, a 1 s limit per input counting as a hang
# (libFuzzer -timeout=1) and 2 GB of memory as a leak or blow-up. Fails on any finding; the
# crashing input is left in WORK (crash-*, timeout-*, oom-*) to be added to tests/data/malformed.
#   cmake -DHARNESS=... -DSECONDS=10 -DWORK=dir -DSEEDS="d1;d2" -DREGRESSIONS=dir -P run_harness.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
file(GLOB regressions ${REGRESSIONS}/*)
set(common -timeout=1 -rss_limit_mb=2048 -print_final_stats=1)
execute_process(COMMAND ${HARNESS} ${common} ${regressions} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${HARNESS}: a regression input in ${REGRESSIONS} failed (exit ${rc})")
endif()
set(seed_dirs)
foreach(d ${SEEDS})
  if(EXISTS ${d})
    list(APPEND seed_dirs ${d})
  else()
    message(FATAL_ERROR "seed corpus ${d} is missing")
  endif()
endforeach()
execute_process(COMMAND ${HARNESS} ${common} -max_total_time=${SECONDS} ${WORK}/corpus ${seed_dirs}
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found ${WORK}/crash-* ${WORK}/timeout-* ${WORK}/oom-* ${WORK}/leak-*)
  message(FATAL_ERROR "${HARNESS}: finding (exit ${rc}): ${found}")
endif()
