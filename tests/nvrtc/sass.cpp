#include "tests/nvrtc/sass.hpp"

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <stdexcept>

namespace fp4jit::test_util {

namespace {

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// Output of a shell command (stdout), and its exit status.
std::string run(const std::string& command, int& status) {
  std::string out;
  FILE* f = ::popen(command.c_str(), "r");
  if (f == nullptr) {
    status = -1;
    return out;
  }
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  status = ::pclose(f);
  return out;
}

// The value of a kernel key's field `name`, or "".
std::string field(const std::string& key_text, const std::string& name) {
  for (const auto& [n, value] : key_fields(key_text))
    if (n == name) return value;
  return "";
}

}  // namespace

std::string find_cuobjdump() {
  if (const char* env = std::getenv("FP4JIT_CUOBJDUMP"); env != nullptr && *env != '\0')
    return executable(env) ? std::string(env) : std::string();
  if (const char* path = std::getenv("PATH")) {
    std::string dirs(path);
    std::size_t begin = 0;
    while (begin <= dirs.size()) {
      const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
      const std::filesystem::path p =
          std::filesystem::path(dirs.substr(begin, end - begin)) / "cuobjdump";
      if (end > begin && executable(p)) return p.string();
      begin = end + 1;
    }
  }
  if (executable("/usr/local/cuda/bin/cuobjdump")) return "/usr/local/cuda/bin/cuobjdump";
  // The wheel's nvidia/cu*/bin/cuobjdump under one of python3's site folders.
  int status = 0;
  const std::string found =
      run("python3 -c 'import glob, os, site; "
          "dirs = [site.getusersitepackages()] + site.getsitepackages(); "
          "hits = [p for d in dirs for p in sorted(glob.glob(os.path.join(d, \"nvidia\", \"cu*\", "
          "\"bin\", \"cuobjdump\")), reverse=True)]; print(hits[0] if hits else \"\")' 2>/dev/null",
          status);
  const std::string p = found.substr(0, found.find('\n'));
  return status == 0 && !p.empty() && executable(p) ? p : std::string();
}

std::set<std::string> mma_mnemonics(const std::string& cuobjdump,
                                    const std::vector<std::uint8_t>& cubin,
                                    const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "kernel.cubin";
  {
    std::ofstream f(file, std::ios::binary);
    f.write(reinterpret_cast<const char*>(cubin.data()),
            static_cast<std::streamsize>(cubin.size()));
    if (!f) throw std::runtime_error("could not write " + file.string());
  }
  // cuobjdump runs nvdisasm, found on PATH: its own folder first (the toolkit's and the wheels'
  // keep both in one).
  const std::string bin_dir = std::filesystem::path(cuobjdump).parent_path().string();
  int status = 0;
  const std::string sass =
      run("PATH='" + bin_dir + "':\"$PATH\" '" + cuobjdump + "' -sass '" + file.string() + "' 2>&1",
          status);
  if (status != 0 || sass.find("Function :") == std::string::npos)
    throw std::runtime_error("cuobjdump -sass failed (status " + std::to_string(status) +
                             "): " + sass.substr(0, 400));
  // An instruction line: /*0a10*/  @!P0 QGMMA.64x192x32.F32.E4M3.E4M3 ... ;
  static const std::regex op(R"(/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9]*MMA)\b)");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(sass.begin(), sass.end(), op); it != std::sregex_iterator();
       ++it)
    out.insert((*it)[1].str());
  return out;
}

std::vector<std::pair<std::string, std::string>> key_fields(const std::string& key_text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t at = 0; at < key_text.size();) {
    const std::size_t end = std::min(key_text.find(';', at), key_text.size());
    const std::size_t eq = key_text.find('=', at);
    if (eq < end)
      out.emplace_back(key_text.substr(at, eq - at), key_text.substr(eq + 1, end - eq - 1));
    at = end + 1;
  }
  return out;
}

MmaExpectation expected_mma(const std::string& key_text) {
  const std::string op = field(key_text, "op"), path = field(key_text, "path");
  const std::set<std::string> all{"QGMMA",   "HGMMA",   "HMMA",   "IMMA",
                                  "UTCOMMA", "UTCQMMA", "UTCHMMA"};
  const auto except = [&](const std::string& keep) {
    std::set<std::string> s = all;
    s.erase(keep);
    return s;
  };
  if (op == "gemm_sm90") {
    if (path == "mx" || path == "ms") return {{"QGMMA"}, except("QGMMA")};       // E4M3 expansions
    if (path == "nv" || path == "ms_grad") return {{"HGMMA"}, except("HGMMA")};  // FP16 / BF16
    throw std::runtime_error("unknown sm90 GEMM path in key: " + key_text);
  }
  if (op == "gemm_sm100") return {{"UTCOMMA"}, except("UTCOMMA")};  // kind::mxf4nvf4
  return {{}, all};  // expansions, OCC kernels: no matrix instruction
}

std::string sass_family(const std::string& key_text) {
  const std::string op = field(key_text, "op");
  std::string kernel;
  if (op == "gemm_sm90") {
    const std::string config = field(key_text, "config");
    const std::string first = config.substr(0, config.find(','));
    kernel = first == "sg=1"   ? "staged"
             : first == "sw=1" ? "swapped"
             : first == "dk=1" ? "direct"
                               : "fused";
  }
  return op + "|" + field(key_text, "path") + "|" + kernel + "|" + field(key_text, "target");
}

}  // namespace fp4jit::test_util
