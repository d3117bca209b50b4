# Fails when the epbrokerd binary FILE lists one of the lazily loaded libraries
# (daemon/lazylib/lazy_library.hpp) as DT_NEEDED: some function of theirs is
# called without a stub in daemon/lazylib/, so the library would be loaded at
# start-up. Run: cmake -DFILE=... -DOBJDUMP=... -DSONAMES="a;b" -P check_not_needed.cmake
cmake_minimum_required(VERSION 3.20)
execute_process(COMMAND ${OBJDUMP} -p ${FILE} OUTPUT_VARIABLE dump RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "objdump -p ${FILE} failed")
endif()
string(REGEX MATCHALL "NEEDED[ \t]+[^ \t\n]+" lines "${dump}")
set(needed "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE "NEEDED[ \t]+" "" name "${line}")
  list(APPEND needed "${name}")
endforeach()
foreach(soname IN LISTS SONAMES)
  if(soname IN_LIST needed)
    execute_process(COMMAND nm -D --undefined-only ${FILE} OUTPUT_VARIABLE undefined)
    message(FATAL_ERROR
      "${FILE} needs ${soname} at start-up: a function of it is called without a stub in "
      "daemon/lazylib/ (add one there). Undefined dynamic symbols:\n${undefined}")
  endif()
endforeach()
