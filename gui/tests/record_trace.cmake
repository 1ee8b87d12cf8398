# Records PROGRAM on the CPU stand-in driver with `kfuse record` into OUT (replacing it).
file(REMOVE ${OUT} ${OUT}-wal ${OUT}-shm)
get_filename_component(dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${STANDIN} ${KFUSE} -q record -o ${OUT} -- ${PROGRAM}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kfuse record failed (${rc}): ${out}${err}")
endif()
