# meshplan-gui's command line where there is no display: --help and --version work, a plain start
# says why it cannot in one line and exits 2 (Qt alone would abort).
# cmake -DGUI=path/to/meshplan-gui -P gui_cli_test.cmake
set(failures 0)
function(check name code regex)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY --unset=QT_QPA_PLATFORM
                          ${GUI} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL code OR NOT "${out}${err}" MATCHES "${regex}")
    message(SEND_ERROR "${name}: exit ${rc} (expected ${code}), output must match '${regex}'\nstdout:\n${out}\nstderr:\n${err}")
  else()
    message(STATUS "ok ${name}")
  endif()
endfunction()
check(help 0 "--screenshot <FILE>.*--view <NAME>" --help)
check(version 0 "meshplan-gui 0\\.1\\.0" --version)
check(no_display 2 "^error: meshplan-gui needs a display and none is set \\(DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are empty\\); run it in a desktop session or under xvfb-run")
# A DISPLAY that names no X server: Qt's platform plugin fails; one line, exit 2, no abort.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=WAYLAND_DISPLAY --unset=QT_QPA_PLATFORM DISPLAY=:97
                        ${GUI} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "error: meshplan-gui cannot start its display")
  message(SEND_ERROR "bad_display: exit ${rc} (expected 2)\nstdout:\n${out}\nstderr:\n${err}")
else()
  message(STATUS "ok bad_display")
endif()
