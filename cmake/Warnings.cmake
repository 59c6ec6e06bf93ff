# meshplan_set_warnings(target): the project's warning set, errors on nothing (CI reads them).
function(meshplan_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wconversion -Wno-sign-conversion)
endfunction()
