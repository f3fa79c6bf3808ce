// Private to libfp4jit.so: the C API's handles, and guard(), which every entry point runs its
// body in: an fp4jit::Error becomes its status and this thread's message, any other exception
// FP4JIT_ERROR_INTERNAL (or OUT_OF_MEMORY); nothing propagates across the C boundary.
#pragma once
#include <mutex>
#include <new>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "fp4jit/engine.hpp"
#include "fp4jit/fp4jit.h"

struct fp4jit_recipe {
  fp4jit::Recipe recipe;
  std::string canonical, hash;
};

struct fp4jit_engine {
  fp4jit::Engine engine;
  int device = 0;
  std::string description;
  std::mutex mutex;  // one call at a time: a handle may be shared between threads
};

namespace fp4jit::capi {

std::string& last_error();  // this thread's message
fp4jit_status status_of(ErrorKind kind);

template <class F>
fp4jit_status guard(F&& body) noexcept {
  try {
    body();
    return FP4JIT_OK;
  } catch (const Error& e) {
    try {
      last_error() = e.what();
      if (!e.log().empty()) last_error() += "\n" + e.log();
    } catch (...) {
    }
    return status_of(e.kind());
  } catch (const std::bad_alloc&) {
    last_error() = "out of host memory";
    return FP4JIT_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try {
      last_error() = std::string("internal error: ") + e.what();
    } catch (...) {
    }
    return FP4JIT_ERROR_INTERNAL;
  } catch (...) {
    last_error() = "internal error: unknown exception";
    return FP4JIT_ERROR_INTERNAL;
  }
}

template <class T>
void require(const T* p, std::string_view what) {
  if (p == nullptr) fail(ErrorKind::invalid_argument, "{} is NULL", what);
}

Role to_role(fp4jit_role r);
GemmOp to_op(fp4jit_gemm_op op);
// The operand's name in messages: "quantize output (operand x)".
std::string what(std::string_view arg, Role role);

}  // namespace fp4jit::capi
