# Fusion analysis tests: the kernels of testdata/fusion_cases.cu (elementwise, stencil, gather, atomics) and
# testdata/epilogue_cases.cu (epilogues and their near misses), compiled to PTX with nvcc at build time, give the
# legality cases real nvcc output to reason about.
# kfuse_analyzer_test_ptx_rule(NAME): testdata/NAME.cu -> ${CMAKE_CURRENT_BINARY_DIR}/NAME.ptx
function(kfuse_analyzer_test_ptx_rule name)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${name}.ptx
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -ptx -arch=sm_90 ${CMAKE_CURRENT_SOURCE_DIR}/testdata/${name}.cu
            -o ${CMAKE_CURRENT_BINARY_DIR}/${name}.ptx
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/testdata/${name}.cu
    COMMENT "nvcc -ptx ${name}.cu"
    VERBATIM)
endfunction()
kfuse_analyzer_test_ptx_rule(fusion_cases)
kfuse_analyzer_test_ptx_rule(epilogue_cases)
set(KFUSE_ANALYZER_TEST_PTX ${CMAKE_CURRENT_BINARY_DIR}/fusion_cases.ptx)
set(KFUSE_EPILOGUE_TEST_PTX ${CMAKE_CURRENT_BINARY_DIR}/epilogue_cases.ptx)
add_custom_target(kfuse_analyzer_test_ptx DEPENDS ${KFUSE_ANALYZER_TEST_PTX} ${KFUSE_EPILOGUE_TEST_PTX})
kfuse_add_gtest(kfuse_analysis_test SOURCES src/analysis_test.cpp src/cost/cost_model_test.cpp src/legality/thread_locality_test.cpp
  src/graph/byte_dependences_test.cpp
  src/legality/epilogue_test.cpp
  src/legality/budgets_test.cpp
  LIBS kfuse::analyzer kfuse::core kfuse::ptx)
if(TARGET kfuse_analysis_test)
  add_dependencies(kfuse_analysis_test kfuse_analyzer_test_ptx)
  target_compile_definitions(kfuse_analysis_test PRIVATE KFUSE_ANALYZER_TEST_PTX="${KFUSE_ANALYZER_TEST_PTX}"
                                                         KFUSE_EPILOGUE_TEST_PTX="${KFUSE_EPILOGUE_TEST_PTX}")
endif()
