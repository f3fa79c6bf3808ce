// fp4jit tune [--backend auto|host|cuda] --recipe SPEC (--gemm G ... | --shapes FILE |
//             --model NAME --tokens N) [--devices 0,1] [--out-dtype D] [--cache PATH]
//             [--max-candidates N] [--budget-ms T] [--early-stop R] [--lookahead N]
//             [--no-quantize] [--retune] [--json] [--report FILE.html [--peers FILE.json ...]]
// Tunes every GEMM and quantize kernel of the workload for this device and
// stores each result, with every candidate's time, in the kernel cache, where Engine finds it.
// Resumable: problems already tuned for this device are skipped (--retune measures them again).
// On CUDA, the next problems' inputs, references and kernels are made while one is measured
// (tuner::TuneSession).
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "cli/commands.hpp"
#include "cli/tune_report.hpp"
#include "cli/tune_run.hpp"
#include "core/log.hpp"
#include "core/text.hpp"
#include "runtime/backend.hpp"
#include "tuner/workload.hpp"

#if defined(FP4JIT_HAVE_LLVM)
#include "tuner/host_jobs.hpp"
#endif
#if defined(FP4JIT_HAVE_CUDA)
#include "runtime/cuda/device_memory.hpp"
#include "tuner/cuda_jobs.hpp"
#endif

namespace fp4jit::cli {

namespace {

struct TuneCliOptions {
  std::string backend = "auto", recipe, shapes, model, out_dtype = "bfloat16", cache, report,
              devices = "0";
  std::vector<std::string> gemms, peers;
  std::int64_t tokens = 0;
  bool json = false, no_quantize = false, retune = false;
  int max_candidates = -1;  // -1: the backend's default
  double budget_ms = 0.0;   // 0: the default
  double early_stop = 1.25;
  int lookahead = -1;  // -1: the backend's default
};

double rate(const TuningRecord& r, double ms) {
  if (!(ms > 0.0)) return 0.0;
  return r.work / (ms * 1e-3) / (r.unit == "GB/s" ? 1e9 : 1e12);
}

nlohmann::json outcome_json(const Outcome& o) {
  const TuningRecord& r = o.record;
  nlohmann::json cands = nlohmann::json::array();
  for (const CandidateResult& c : r.candidates)
    cands.push_back({{"config", c.config},
                     {"heuristic", c.heuristic},
                     {"status", candidate_status_name(c.status)},
                     {"reason", c.reason},
                     {"median_ms", c.median_ms},
                     {"noise", c.noise},
                     {"repeats", c.repeats},
                     {"compile_ms", c.compile_ms},
                     {"rate", rate(r, c.median_ms)}});
  return {{"label", o.label},
          {"kind", r.key.kind},
          {"problem", r.key.problem},
          {"cached", o.cached},
          {"error", o.error},
          {"skipped", o.skipped},
          {"times_s",
           {{"prepare", o.times.prepare},
            {"compile_wait", o.times.compile_wait},
            {"measure", o.times.measure}}},
          {"winner", r.winner},
          {"winner_ms", r.winner_ms},
          {"heuristic", r.heuristic},
          {"heuristic_ms", r.heuristic_ms},
          {"unit", r.unit},
          {"work", r.work},
          {"rate_tuned", rate(r, r.winner_ms)},
          {"rate_heuristic", rate(r, r.heuristic_ms)},
          {"candidates", cands}};
}

std::vector<int> parse_devices(const std::string& text) {
  std::vector<int> out;
  for (const std::string_view piece : split(text)) {
    const std::string item(piece);
    try {
      std::size_t used = 0;
      const int d = std::stoi(item, &used);
      if (used != item.size() || d < 0) throw std::invalid_argument(item);
      out.push_back(d);
    } catch (const std::exception&) {
      fail(ErrorKind::invalid_argument,
           "--devices '{}': '{}' is not a device number (e.g. --devices 0,1)", text, item);
    }
  }
  return out;
}

void run_tune(const TuneCliOptions& o) {
  const Recipe recipe = parse_recipe(o.recipe);
  tuner::Workload w;
  for (const std::string& g : o.gemms) w.add(parse_gemm_request(g));
  if (!o.shapes.empty())
    for (const GemmRequest& r : tuner::read_shapes_file(o.shapes)) w.add(r);
  if (!o.model.empty()) {
    if (o.tokens <= 0)
      fail(ErrorKind::invalid_argument, "tune --model {}: give the token count with --tokens N",
           o.model);
    for (const tuner::LinearLayer& l : tuner::model_layers(o.model))
      w.add_layer(o.tokens, l.in, l.out);
  } else if (o.tokens > 0) {
    fail(ErrorKind::invalid_argument, "tune: --tokens needs --model");
  }
  if (w.gemms.empty())
    fail(ErrorKind::invalid_argument, "tune: nothing to tune: give --gemm, --shapes or --model");
  const bool cuda = o.backend == "cuda" || (o.backend == "auto" && cuda_available());
  if (o.backend == "cuda" && !cuda_available())
    fail(ErrorKind::no_gpu,
         "tune --backend cuda: no GPU here (libcuda.so.1 missing or no CUDA device); tune the CPU "
         "with --backend host");
  if (!cuda && o.devices != "0")
    fail(ErrorKind::invalid_argument, "tune: --devices applies to --backend cuda");
  [[maybe_unused]] const DType out = parse_dtype(o.out_dtype);
  [[maybe_unused]] const std::vector<int> devices = parse_devices(o.devices);
  const std::string cache_path = o.cache.empty() ? KernelCache::default_path() : o.cache;

  std::vector<JobSpec> specs;
  for (const tuner::GemmProblem& g : w.gemms) specs.push_back({true, g, {}});
  // The host backend's pairs are its two single-operand kernels, tuned as such.
  if (!o.no_quantize)
    for (const tuner::QuantizeProblem& q : w.quantizes)
      if (cuda || !q.pair) specs.push_back({false, {}, q});

  if (o.early_stop != 0.0 && o.early_stop < 1.0)
    fail(ErrorKind::invalid_argument,
         "tune --early-stop {}: give 0 (off) or a ratio of at least 1 to the best median",
         o.early_stop);
  tuner::TuneOptions topts;
  topts.timing.budget_ms = o.budget_ms > 0 ? o.budget_ms : 100.0;
  topts.timing.early_stop = o.early_stop;
  topts.max_candidates = o.max_candidates >= 0 ? o.max_candidates : (cuda ? 24 : 0);
  topts.overlap = cuda;  // host kernels run on the cores a compile would take
  // Nothing runs beside a host measurement: no problem is staged ahead there.
  const int lookahead = !cuda ? 0 : (o.lookahead >= 0 ? o.lookahead : 8);
  std::vector<Outcome> outcomes(specs.size());
  JobQueue queue(specs.size());
  ProgressView view(specs.size());
  Stopwatch wall;
  std::string device;

  if (!cuda) {
#if defined(FP4JIT_HAVE_LLVM)
    host::HostBackendOptions ho;
    ho.cache_path = cache_path;
    host::HostBackend backend(ho);
    device = backend.description();
    KernelCache store(cache_path);
    if (!store.enabled())
      fail(ErrorKind::cache, "tune: the kernel cache {} cannot be used (see the warning above)",
           cache_path);
    run_jobs(specs, queue, outcomes, store, topts, lookahead, o.retune, view,
             [&](const JobSpec& s) {
               return s.gemm ? tuner::host_gemm_job(backend, recipe, s.g.op, s.g.shape)
                             : tuner::host_quantize_job(backend, recipe, s.q.role, s.q.rows,
                                                        s.q.cols, DType::bf16);
             });
#else
    fail(ErrorKind::unsupported,
         "tune --backend host: fp4jit was built without LLVM (the host backend)");
#endif
  } else {
#if defined(FP4JIT_HAVE_CUDA)
    std::vector<std::thread> threads;
    std::mutex error_mutex;
    std::string first_error;
    for (int d : devices)
      threads.emplace_back([&, d] {
        try {
          cuda::DeviceScope scope(d);
          EngineOptions eo;
          eo.backend = BackendKind::cuda;
          eo.device = d;
          eo.cache_path = cache_path;
          cuda::CudaBackend backend(eo);
          {
            std::lock_guard lock(error_mutex);
            device += (device.empty() ? "" : "; ") + backend.description();
          }
          KernelCache store(cache_path);
          run_jobs(specs, queue, outcomes, store, topts, lookahead, o.retune, view,
                   [&](const JobSpec& s) {
                     return s.gemm ? tuner::cuda_gemm_job(backend, recipe, s.g.op, s.g.shape, out)
                                   : tuner::cuda_quantize_job(backend, recipe, s.q.role, s.q.rows,
                                                              s.q.cols, DType::bf16, s.q.pair);
                   });
        } catch (const Error& e) {
          std::lock_guard lock(error_mutex);
          if (first_error.empty()) first_error = fmt::format("device {}: {}", d, e.what());
        }
      });
    for (auto& t : threads) t.join();
    if (!first_error.empty()) fmt::print(stderr, "tune: {}\n", first_error);
#else
    fail(ErrorKind::unsupported, "tune --backend cuda: fp4jit was built without the CUDA backend");
#endif
  }
  const double wall_s = wall.ms() / 1000.0;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    Outcome& r = outcomes[i];
    if (r.done) continue;
    const JobSpec& js = specs[i];
    r.label = js.gemm ? fmt::format("{} {}", name(js.g.op), gemm_shape_text(js.g.shape))
                      : fmt::format("quantize {} {}x{}", name(js.q.role), js.q.rows, js.q.cols);
    r.error =
        "not tuned: no usable device was left (see above); run the same command again to resume";
  }

  nlohmann::json doc{{"device", device},        {"backend", cuda ? "cuda" : "host"},
                     {"recipe", recipe.preset}, {"recipe_canonical", canonical(recipe)},
                     {"wall_s", wall_s},        {"results", nlohmann::json::array()}};
  int failed = 0, skipped = 0, gemms = 0, faster = 0;
  double log_speedup = 0.0;
  tuner::TuneTimes times;  // summed over the problems (per device thread)
  for (const Outcome& r : outcomes) {
    doc["results"].push_back(outcome_json(r));
    times.prepare += r.times.prepare;
    times.compile_wait += r.times.compile_wait;
    times.measure += r.times.measure;
    if (!r.error.empty()) {
      failed += r.skipped ? 0 : 1;
      skipped += r.skipped ? 1 : 0;
      continue;
    }
    if (r.record.key.kind == "gemm" && r.record.heuristic_ms > 0 && r.record.winner_ms > 0) {
      ++gemms;
      const double s = r.record.heuristic_ms / r.record.winner_ms;
      log_speedup += std::log(s);
      faster += s >= 1.1 ? 1 : 0;
    }
  }
  doc["times_s"] = {
      {"prepare", times.prepare}, {"compile_wait", times.compile_wait}, {"measure", times.measure}};
  if (o.json) {
    fmt::print("{}\n", doc.dump(1));
  } else {
    fmt::print("fp4jit tune: recipe {} on {}\n", recipe.preset, device);
    fmt::print("  {:<9} {:<34} {:>12} {:>12} {:>7}  {}\n", "kind", "problem", "heuristic", "tuned",
               "speedup", "winner");
    for (const Outcome& r : outcomes) {
      if (!r.error.empty()) {
        fmt::print("  {:<9} {:<34} {}: {}\n", "", r.label, r.skipped ? "skipped" : "failed",
                   r.error);
        continue;
      }
      const TuningRecord& t = r.record;
      fmt::print("  {:<9} {:<34} {:>12} {:>12} {:>7}  {}{}\n", t.key.kind, r.label,
                 t.heuristic_ms > 0 ? fmt::format("{:.2f} {}", rate(t, t.heuristic_ms),
                                                  t.unit == "GB/s" ? "GB/s" : "TF/s")
                                    : "failed",
                 fmt::format("{:.2f} {}", rate(t, t.winner_ms), t.unit == "GB/s" ? "GB/s" : "TF/s"),
                 t.heuristic_ms > 0 ? fmt::format("{:.2f}x", t.heuristic_ms / t.winner_ms) : "-",
                 t.winner, r.cached ? "  (cached)" : "");
    }
    fmt::print(
        "wall time {:.1f} s; {} problems, {} failed, {} skipped (no kernel on this backend); "
        "GEMMs: geometric-mean speedup {:.3f}x over the heuristic, >= 1.1x on {} of {}\n",
        wall_s, outcomes.size(), failed, skipped, gemms > 0 ? std::exp(log_speedup / gemms) : 1.0,
        faster, gemms);
    fmt::print(
        "  measuring thread: {:.1f} s preparing, {:.1f} s waiting for compiles, {:.1f} s verifying "
        "and timing\n",
        times.prepare, times.compile_wait, times.measure);
  }
  if (!o.report.empty()) {
    std::vector<nlohmann::json> peers;
    for (const std::string& p : o.peers) {
      std::ifstream f(p);
      if (!f) fail(ErrorKind::io, "tune --peers {}: cannot be read", p);
      try {
        peers.push_back(nlohmann::json::parse(f));
      } catch (const std::exception& e) {
        fail(ErrorKind::invalid_argument, "tune --peers {}: not JSON ({})", p, e.what());
      }
    }
    write_tune_report(o.report, doc, peers);
    if (!o.json) fmt::print("report: {}\n", o.report);
  }
  if (failed > 0)
    fail(ErrorKind::internal, "tune: {} of {} problems could not be tuned (see above)", failed,
         outcomes.size());
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* cmd = app.add_subcommand("tune",
                                     "Tune the GEMM and quantize kernels of shapes or a "
                                     "model for this device; results go to the kernel cache");
  cmd->add_option("--recipe,-r", o->recipe, "Recipe text, e.g. nvfp4")->required();
  cmd->add_option("--backend", o->backend, "auto, host or cuda")
      ->check(one_of("backend", {"auto", "host", "cuda"}))
      ->capture_default_str();
  cmd->add_option(
      "--gemm", o->gemms,
      "MxNxK: a layer of that fprop shape (its three GEMMs), or fprop:MxNxK (repeatable)");
  cmd->add_option("--shapes", o->shapes, "File with one --gemm value per line ('#' comments)");
  std::string models;
  for (const auto& m : tuner::model_names()) models += (models.empty() ? "" : ", ") + m;
  cmd->add_option("--model", o->model,
                  "Model preset: every linear layer's GEMMs and quantizations (" + models + ")");
  cmd->add_option("--tokens", o->tokens,
                  "Tokens per step for --model (M of fprop and dgrad, K of wgrad)");
  cmd->add_option("--devices", o->devices, "CUDA devices to spread the work over, e.g. 0,1")
      ->capture_default_str();
  cmd->add_option("--out-dtype", o->out_dtype,
                  "GEMM output type (CUDA kernels are specialized by it)")
      ->check(one_of("dtype", dtype_option_names()))
      ->capture_default_str();
  add_cache_option(cmd, &o->cache);
  cmd->add_option("--max-candidates", o->max_candidates,
                  "Candidates measured per problem (default: all on the host, 24 on CUDA)");
  cmd->add_option("--budget-ms", o->budget_ms, "Measuring time per candidate (default 100 ms)");
  cmd->add_option("--early-stop", o->early_stop,
                  "Stop measuring a candidate whose fastest run after the minimum repeats is over "
                  "R times the best median so far (0: measure every candidate in full)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--lookahead", o->lookahead,
                  "Problems whose inputs, references and kernels are made while one is measured "
                  "(default: 8 on CUDA, 0 on the host)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-quantize", o->no_quantize, "Tune the GEMMs only");
  cmd->add_flag("--retune", o->retune, "Measure problems that already have a result again");
  cmd->add_flag("--json", o->json, "Print the results (every candidate) as JSON");
  cmd->add_option("--report", o->report, "Write a self-contained HTML page with charts");
  cmd->add_option("--peers", o->peers,
                  "JSON of peers for the report (bench/peers.py output or another tune --json)");
  cmd->callback([o] { run_tune(*o); });
}

}  // namespace fp4jit::cli
