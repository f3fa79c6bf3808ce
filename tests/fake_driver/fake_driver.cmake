# A stand-in libcuda.so.1 (fake_cuda.cpp): the CUDA backend's host side where no GPU is, for
# tests/fake_driver and bench/host_overhead.cpp. Built as <build>/fake_driver/libcuda.so.1.
add_library(fp4jit_fake_cuda SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cuda.cpp
                                   ${CMAKE_CURRENT_LIST_DIR}/fake_memory.cpp)
target_include_directories(fp4jit_fake_cuda PRIVATE ${FP4JIT_CUDA_INCLUDE})
set_target_properties(fp4jit_fake_cuda PROPERTIES
  OUTPUT_NAME cuda SOVERSION 1 CXX_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fake_driver)
