# host_bench: quantize GB/s and GEMM GFLOP/s of the host JIT kernels against the reference, as
# built (fp4jit_reference) and compiled again with -O3 -march=native (fp4jit_bench_native).
file(GLOB FP4JIT_NATIVE_SOURCES ${PROJECT_SOURCE_DIR}/reference/*.cpp ${PROJECT_SOURCE_DIR}/core/*.cpp)
add_library(fp4jit_bench_native STATIC ${FP4JIT_NATIVE_SOURCES} ${PROJECT_SOURCE_DIR}/bench/host_bench_native.cpp)
target_compile_options(fp4jit_bench_native PRIVATE -O3 -march=native)
target_compile_definitions(fp4jit_bench_native PRIVATE fp4jit=fp4jit_native)
target_link_libraries(fp4jit_bench_native PRIVATE fp4jit_options fp4jit_fmt)

add_executable(fp4jit_host_bench ${PROJECT_SOURCE_DIR}/bench/host_bench.cpp)
target_link_libraries(fp4jit_host_bench PRIVATE fp4jit_runtime fp4jit_bench_native)
set_target_properties(fp4jit_host_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
