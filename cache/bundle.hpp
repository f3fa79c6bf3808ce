// Bundles: the compiled kernels and tuning results of one device model in one read-only SQLite
// file, to ship tunings with a build (fp4jit export / import / verify, FP4JIT_BUNDLES).
//
// A bundle holds a `meta` table (format, device identity, counts, content digest), the `binaries`
// rows whose target and compiler match the device (each with the SHA-256 of its bytes) and the
// device's `tunings` with every candidate. Its content digest is the SHA-256 over every row in
// key order, so a changed binary, tuning or metadata field is detected. A bundle is refused (never
// read) when a binary fails its SHA-256, the digest does not match, or it is for another model,
// arch or compiler than the device using it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cache/cache.hpp"

namespace fp4jit {

struct BundleInfo {
  int format = 0;
  DeviceIdentity device;
  std::string fp4jit_version;
  std::int64_t created_unix = 0;
  std::int64_t binaries = 0, tunings = 0;
  std::string content_sha256;
};

struct BundleCheck {
  bool ok = false;
  BundleInfo info;
  std::vector<std::string> problems;  // each names what is wrong (row, field, expected vs found)
};

// Writes the tunings of `gpu_model` from `cache` and the binaries of their arch and compiler into
// a new bundle at `out_path` (replaced if present). When the model was tuned with several
// arch / compiler combinations, the most recent one is exported. Throws Error(invalid_argument)
// when the cache holds no tuning for the model (naming the models it has), Error(io) when the file
// cannot be written.
BundleInfo export_bundle(KernelCache& cache, const std::string& gpu_model,
                         const std::string& out_path, const std::string& fp4jit_version);

// Integrity of a bundle file (never throws): readable, a bundle of a known format, every binary's
// SHA-256, the content digest.
BundleCheck verify_bundle(const std::string& path);

// Why a bundle cannot serve `device` ("model 'A100' != 'H100'"), or empty when it can.
std::string bundle_mismatch(const BundleInfo& info, const DeviceIdentity& device);

struct ImportCounts {
  std::int64_t binaries = 0, tunings = 0;
};
// Verifies the bundle, checks it against `device` (when given) and copies its rows into the
// cache. Throws Error(corrupt) for a bundle that fails verification and Error(invalid_argument)
// for one made for another device, each naming the reason; nothing is imported then.
ImportCounts import_bundle(KernelCache& cache, const std::string& path,
                           const DeviceIdentity* device);

}  // namespace fp4jit
