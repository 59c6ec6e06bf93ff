# The calibration loop on a real GPU's measurements (tests/data/gpu/h200-2026-11-28: the cuda
# backend on one H200): fit a profile to the GEMM sweep and the GPT 1.7B run, then predict the two
# runs the fit never saw (GPT 3.6B; GPT 1.7B at sequence 4096). The fitted run comes within 2.8%, the
# held-out ones within 3.3% and 6.1% (the default profile: -21%, -15%, -25%; before the GEMMs'
# memory side was fitted on its own: +12.5%, +10.5%, +21%, docs/calibration.md "On a GPU").
# Bounds: 4%, 5% and 8%. Deterministic: no timing here, only the committed measurements.
#   cmake -DMESHPLAN=... -DDATA=tests/data/gpu/h200-2026-11-28 -DWORK=dir -P calibrate_h200.cmake
# "0.6371" -> 637100 (microseconds; cmake's math() has integers only).
function(to_micro value out)
  if(NOT value MATCHES "^([0-9]+)\\.([0-9]+)$")
    message(FATAL_ERROR "not a decimal: ${value}")
  endif()
  string(SUBSTRING "${CMAKE_MATCH_2}000000" 0 6 frac)
  math(EXPR v "${CMAKE_MATCH_1} * 1000000 + 1${frac} - 1000000")
  set(${out} ${v} PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ENV{MESHPLAN_DB} ${WORK}/store.db)
execute_process(COMMAND ${MESHPLAN} calibrate fit ${DATA}/gemm.json ${DATA}/gpt17b.json --gpu h200 --name h200-cuda
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "calibrate fit failed (${rc}): ${out}${err}")
endif()
# The device's memory as meshplan-run recorded it is the h200 preset's capacity (cuda_total_bytes,
# docs/memory.md §4), and calibrate says so.
if(NOT out MATCHES "# the device \\(NVIDIA H200\\) reports 150109880320 B of memory \\(cudaGetDeviceProperties' totalGlobalMem\\), h200's capacity as the fit verdicts take it")
  message(FATAL_ERROR "calibrate fit: no device memory line: ${out}")
endif()
foreach(pair "gpt17b;40" "gpt36b;50" "gpt17b_s4k;80")  # bounds in per mille
  list(GET pair 0 run)
  list(GET pair 1 bound)
  execute_process(COMMAND ${MESHPLAN} report --compare ${DATA}/${run}.json --profile h200-cuda
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "report --compare ${run} failed (${rc}): ${out}${err}")
  endif()
  if(NOT out MATCHES "step: measured ([0-9.]+) s vs predicted ([0-9.]+) s")
    message(FATAL_ERROR "no step line for ${run}: ${out}")
  endif()
  set(measured ${CMAKE_MATCH_1})
  set(predicted ${CMAKE_MATCH_2})
  to_micro(${measured} m)
  to_micro(${predicted} p)
  math(EXPR diff "${p} - ${m}")
  if(diff LESS 0)
    math(EXPR diff "0 - ${diff}")
  endif()
  math(EXPR per_mille "${diff} * 1000 / ${m}")
  message(STATUS "${run}: measured ${measured} s, predicted ${predicted} s, off by ${per_mille} per mille (bound ${bound})")
  if(per_mille GREATER bound)
    message(FATAL_ERROR "${run}: the fitted profile is off by ${per_mille} per mille, over ${bound}")
  endif()
endforeach()
