// Tuning results as the cache stores them: which config won for one problem on one device, with
// every candidate's measurement kept (for reports and for re-selection).
//
// The key holds everything that decides which config is fastest and nothing else: the device
// (model, arch, SM count, driver, compiler), the problem text (kernel kind, operation, the M
// bucket, N, K, dtypes) and the canonical recipe.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fp4jit {

// The device a tuning was measured on. Host backend: model is LLVM's CPU name, arch the host
// target ("host:<cpu>:<features hash>"), sm_count the worker threads, driver empty.
struct DeviceIdentity {
  std::string gpu_model;  // "NVIDIA H100 80GB HBM3", "znver3"
  std::string arch;       // "sm_90a", "host:znver3:0123abcd..."
  int sm_count = 0;
  std::string driver;        // "13.0" (CUDA), "" (host)
  std::string compiler;      // "nvrtc 13.0", "llvm 14.0.6"
  std::string text() const;  // one line, for messages
};

struct TuningKey {
  DeviceIdentity device;
  std::string kind;          // "gemm", "quantize"
  std::string problem;       // e.g. "gemm fprop m<=8192 n=4096 k=4096 out=bf16"
  std::string recipe;        // canonical recipe text
  std::string hash() const;  // lower-case hex SHA-256 over every field, length-prefixed
};

enum class CandidateStatus : std::uint8_t { ok, pruned, compile_failed, wrong_result, run_failed };
std::string_view candidate_status_name(CandidateStatus s);   // "ok", "pruned", ...
CandidateStatus parse_candidate_status(std::string_view s);  // unknown text: run_failed

struct CandidateResult {
  std::string config;      // the config's canonical text (a kernel config key)
  bool heuristic = false;  // the config the heuristic picks for this problem
  CandidateStatus status = CandidateStatus::ok;
  std::string reason;      // why it failed; when ok, why it has fewer repeats (or empty)
  double median_ms = 0.0;  // ok only
  double noise = 0.0;      // relative spread of its repeats ((p75 - p25) / median)
  int repeats = 0;
  double compile_ms = 0.0;
};

// A candidate left out before compiling (invalid or beyond a cap), with the reason.
inline CandidateResult pruned_candidate(std::string config, bool heuristic, std::string reason) {
  CandidateResult r;
  r.config = std::move(config);
  r.heuristic = heuristic;
  r.status = CandidateStatus::pruned;
  r.reason = std::move(reason);
  return r;
}

struct TuningRecord {
  TuningKey key;
  std::string winner;  // config text of the chosen candidate
  double winner_ms = 0.0;
  std::string heuristic;                    // config text of the heuristic's choice
  double heuristic_ms = 0.0;                // 0 when it failed or was not measured
  double work = 0.0;                        // FLOPs (GEMM) or bytes (quantize) of one call
  std::string unit;                         // "TFLOP/s" or "GB/s"
  std::int64_t created_unix = 0;            // set by put_tuning()
  std::vector<CandidateResult> candidates;  // in measurement order
};

}  // namespace fp4jit
