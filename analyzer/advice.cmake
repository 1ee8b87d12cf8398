# Advice tests: kernel families on real kernel names, operator context, operator bytes, the Execution Trace join,
# remedies, and the recommendations on the real PyTorch traces in ../shared/data (golden reports).
kfuse_add_gtest(kfuse_advice_test
  SOURCES src/advice/advice_test.cpp src/advice/kernel_families_test.cpp
  LIBS kfuse::analyzer kfuse::core)
