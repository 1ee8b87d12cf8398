# Fusion analysis tests: the kernels of testdata/fusion_cases.cu, compiled to PTX with nvcc at build time, give
# the legality cases (elementwise, stencil, gather, atomics) real nvcc output to reason about.
set(KFUSE_ANALYZER_TEST_PTX ${CMAKE_CURRENT_BINARY_DIR}/fusion_cases.ptx)
add_custom_command(OUTPUT ${KFUSE_ANALYZER_TEST_PTX}
  COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -ptx -arch=sm_90 ${CMAKE_CURRENT_SOURCE_DIR}/testdata/fusion_cases.cu
          -o ${KFUSE_ANALYZER_TEST_PTX}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/testdata/fusion_cases.cu
  COMMENT "nvcc -ptx fusion_cases.cu"
  VERBATIM)
set(KFUSE_EPILOGUE_TEST_PTX ${CMAKE_CURRENT_BINARY_DIR}/epilogue_cases.ptx)
add_custom_command(OUTPUT ${KFUSE_EPILOGUE_TEST_PTX}
  COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -ptx -arch=sm_90 ${CMAKE_CURRENT_SOURCE_DIR}/testdata/epilogue_cases.cu
          -o ${KFUSE_EPILOGUE_TEST_PTX}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/testdata/epilogue_cases.cu
  COMMENT "nvcc -ptx epilogue_cases.cu"
  VERBATIM)
add_custom_target(kfuse_analyzer_test_ptx DEPENDS ${KFUSE_ANALYZER_TEST_PTX} ${KFUSE_EPILOGUE_TEST_PTX})
kfuse_add_gtest(kfuse_analysis_test SOURCES src/analysis_test.cpp src/cost_model_test.cpp src/thread_locality_test.cpp
  src/epilogue_test.cpp
  LIBS kfuse::analyzer kfuse::core kfuse::ptx)
if(TARGET kfuse_analysis_test)
  add_dependencies(kfuse_analysis_test kfuse_analyzer_test_ptx)
  target_compile_definitions(kfuse_analysis_test PRIVATE KFUSE_ANALYZER_TEST_PTX="${KFUSE_ANALYZER_TEST_PTX}"
                                                         KFUSE_EPILOGUE_TEST_PTX="${KFUSE_EPILOGUE_TEST_PTX}")
endif()
