# quantize_bench: the CUDA quantize kernels' bandwidth, compile and cache-load times (device).
add_executable(fp4jit_quantize_bench ${PROJECT_SOURCE_DIR}/bench/quantize_bench.cpp)
target_link_libraries(fp4jit_quantize_bench PRIVATE fp4jit_runtime)
set_target_properties(fp4jit_quantize_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
