# Runs `kfuse demo -o DIR` (replacing DIR): the elementwise-chain example recorded on the CPU stand-in, rewritten,
# and recorded again under `kfuse run` with its plans (DIR/before.sqlite, DIR/after.sqlite, DIR/plans, DIR/run.json).
file(REMOVE_RECURSE ${DIR})
execute_process(COMMAND ${KFUSE} demo -o ${DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kfuse demo failed (${rc}): ${out}${err}")
endif()
