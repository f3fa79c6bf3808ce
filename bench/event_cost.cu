// What one stream operation between back-to-back kernels costs the stream: a 64 MB copy kernel
// (about 30-50 us on an H100 or H200) enqueued 200 times in a row, alone and with an event record,
// a 4-byte cuMemsetD32Async or a cuStreamWriteValue32 before each; the median over 5 runs of the
// run's time per kernel. The difference to "kernels only" is the operation's cost (the
// quantize benchmark's in-a-row figure records no event between its calls for this reason).
// Built and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/event_cost bench/event_cost.cu -lcuda && /tmp/event_cost
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

__global__ void copy_kernel(const uint4* a, uint4* b, size_t n, unsigned* word) {
  unsigned m = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = a[i];
    b[i] = v;
    m = max(m, v.x);
  }
  if (m == 0xffffffffu) atomicMax(word, m);  // never taken (zero input): keeps the loads live
}

void check_rt(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "event_cost: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void check_drv(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* s = nullptr;
    cuGetErrorString(r, &s);
    std::fprintf(stderr, "event_cost: %s: %s\n", what, s != nullptr ? s : "unknown error");
    std::exit(1);
  }
}

}  // namespace

int main() {
  check_drv(cuInit(0), "cuInit");
  const size_t bytes = size_t{64} << 20;
  uint4 *a = nullptr, *b = nullptr;
  unsigned* word = nullptr;
  check_rt(cudaMalloc(&a, bytes), "cudaMalloc");
  check_rt(cudaMalloc(&b, bytes), "cudaMalloc");
  check_rt(cudaMalloc(&word, 4), "cudaMalloc");
  check_rt(cudaMemset(a, 0, bytes), "cudaMemset");
  cudaDeviceProp prop{};
  check_rt(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  cudaStream_t s = nullptr;
  check_rt(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t start = nullptr, stop = nullptr, between = nullptr;
  check_rt(cudaEventCreate(&start), "cudaEventCreate");
  check_rt(cudaEventCreate(&stop), "cudaEventCreate");
  check_rt(cudaEventCreate(&between), "cudaEventCreate");
  const char* names[] = {"kernels only", "an event record before each",
                         "a 4-byte cuMemsetD32Async before each",
                         "a cuStreamWriteValue32 before each"};
  constexpr int kKernels = 200, kRuns = 7, kWarm = 2;
  double base = 0.0;
  for (int mode = 0; mode < 4; ++mode) {
    std::vector<double> us;
    for (int run = 0; run < kRuns; ++run) {
      check_rt(cudaEventRecord(start, s), "cudaEventRecord");
      for (int k = 0; k < kKernels; ++k) {
        if (mode == 1) check_rt(cudaEventRecord(between, s), "cudaEventRecord");
        if (mode == 2)
          check_drv(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(word), 0, 1, s),
                    "cuMemsetD32Async");
        if (mode == 3)
          check_drv(cuStreamWriteValue32(s, reinterpret_cast<CUdeviceptr>(word), 0, 0),
                    "cuStreamWriteValue32");
        copy_kernel<<<prop.multiProcessorCount * 4, 512, 0, s>>>(a, b, bytes / 16, word);
      }
      check_rt(cudaEventRecord(stop, s), "cudaEventRecord");
      check_rt(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0.0f;
      check_rt(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      if (run >= kWarm) us.push_back(1e3 * ms / kKernels);
    }
    std::sort(us.begin(), us.end());
    const double med = us[us.size() / 2];
    if (mode == 0) base = med;
    std::printf("%-40s %7.2f us per kernel (+%.2f us)\n", names[mode], med, med - base);
  }
  return 0;
}
