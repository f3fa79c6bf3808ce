# quantize_bench: the CUDA quantize kernels' bandwidth, compile and cache-load times (device).
add_executable(fp4jit_quantize_bench ${PROJECT_SOURCE_DIR}/bench/quantize_bench.cpp)
target_link_libraries(fp4jit_quantize_bench PRIVATE fp4jit_runtime)
set_target_properties(fp4jit_quantize_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})

# host_overhead: the host time of the CUDA backend's Engine calls (device, or here with the
# stand-in driver below).
add_executable(fp4jit_host_overhead ${PROJECT_SOURCE_DIR}/bench/host_overhead.cpp)
target_link_libraries(fp4jit_host_overhead PRIVATE fp4jit_runtime ${CMAKE_DL_LIBS})
set_target_properties(fp4jit_host_overhead PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
