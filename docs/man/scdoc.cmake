# cmake -DSCDOC=scdoc -DINPUT=PAGE.N.scd -DOUTPUT=PAGE.N -P scdoc.cmake
# scdoc reads stdin and writes stdout; a failed run leaves no OUTPUT behind (it
# writes OUTPUT.tmp first), so the next build tries again instead of installing a
# half-written page.
execute_process(COMMAND ${SCDOC} INPUT_FILE ${INPUT} OUTPUT_FILE ${OUTPUT}.tmp
                RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  file(REMOVE ${OUTPUT}.tmp)
  message(FATAL_ERROR "scdoc ${INPUT}: ${_err}")
endif()
file(RENAME ${OUTPUT}.tmp ${OUTPUT})
