"""ctypes bindings of include/fp4jit/fp4jit.h: the structs, the function signatures, loading.

The library is looked up in this order:
  1. $FP4JIT_LIBRARY (a path to libfp4jit.so);
  2. libfp4jit.so next to this package;
  3. <prefix>/lib (and lib64) of the Python prefixes (sys.prefix, sys.base_prefix) and of the
     prefix this package sits under (site-packages of `cmake --install --prefix P` -> P/lib);
  4. the dynamic linker's search path (ctypes.util.find_library).
"""

import ctypes
import ctypes.util
import os
import sys

ABI_VERSION = 1

OK = 0
STATUS_NAMES = {
    0: "OK",
    1: "INVALID_ARGUMENT",
    2: "RECIPE",
    3: "IO",
    4: "CORRUPT",
    5: "UNSUPPORTED",
    6: "NO_GPU",
    7: "DRIVER",
    8: "COMPILE",
    9: "CACHE",
    10: "INTERNAL",
    11: "OUT_OF_MEMORY",
}

BACKENDS = {"auto": 0, "cuda": 1, "host": 2, "reference": 3}
BACKEND_NAMES = {v: k for k, v in BACKENDS.items()}
DTYPES = {"float32": 0, "float16": 1, "bfloat16": 2}
ROLES = {"x": 0, "w": 1, "dy": 2, "wt": 3, "dyt": 4, "xt": 5}
PARTNERS = {"x": "xt", "w": "wt", "dy": "dyt"}
GEMMS = {"fprop": 0, "dgrad": 1, "wgrad": 2}
DEVICE_UNKNOWN, DEVICE_CPU, DEVICE_CUDA, DEVICE_CUDA_HOST, DEVICE_CUDA_MANAGED = 0, 1, 2, 3, 13

c_int64_p = ctypes.POINTER(ctypes.c_int64)
c_float_p = ctypes.POINTER(ctypes.c_float)


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("ndim", ctypes.c_int32),
        ("shape", c_int64_p),
        ("strides", c_int64_p),
        ("device", ctypes.c_int),
        ("device_id", ctypes.c_int32),
    ]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", c_int64_p),
        ("strides", c_int64_p),
        ("byte_offset", ctypes.c_uint64),
    ]


class OperandInfo(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_int32)
        for name in (
            "elem_bits",
            "block_rows",
            "block_cols",
            "two_level",
            "stochastic_rounding",
            "hadamard_size",
            "occ",
            "dge",
            "requant",
            "qema",
        )
    ]


class Layout(ctypes.Structure):
    _fields_ = [
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("row_bytes", ctypes.c_int64),
        ("code_bytes", ctypes.c_int64),
        ("scale_rows", ctypes.c_int64),
        ("scale_cols", ctypes.c_int64),
        ("scale_count", ctypes.c_int64),
        ("scale_is_code", ctypes.c_int32),
        ("two_level", ctypes.c_int32),
        ("scale_bytes", ctypes.c_int64),
        ("occ", ctypes.c_int32),
        ("transposed", ctypes.c_int32),
        ("residual_capacity", ctypes.c_int64),
    ]


class Quantized(ctypes.Structure):
    _fields_ = [
        ("codes", ctypes.c_void_p),
        ("codes_bytes", ctypes.c_int64),
        ("scales", ctypes.c_void_p),
        ("scales_bytes", ctypes.c_int64),
        ("tensor_scale", ctypes.c_void_p),
        ("amax", ctypes.c_void_p),
        ("residual_index", ctypes.c_void_p),
        ("residual_value", ctypes.c_void_p),
        ("residual_count", ctypes.c_void_p),
        ("residual_capacity", ctypes.c_int64),
    ]


class EngineOptions(ctypes.Structure):
    _fields_ = [
        ("backend", ctypes.c_int),
        ("device", ctypes.c_int32),
        ("cache_path", ctypes.c_char_p),
        ("use_cache", ctypes.c_int32),
    ]


class QuantizeArgs(ctypes.Structure):
    _fields_ = [
        ("seed", ctypes.c_uint64),
        ("offset", ctypes.c_uint64),
        ("amax", ctypes.c_void_p),
        ("amax_transposed", ctypes.c_void_p),
    ]


class GemmEpilogue(ctypes.Structure):
    _fields_ = [
        ("alpha", ctypes.c_float),
        ("beta", ctypes.c_float),
        ("c", ctypes.POINTER(Tensor)),
        ("bias", ctypes.POINTER(Tensor)),
        ("occ_weight", ctypes.POINTER(Tensor)),
    ]


class LinearBuffers(ctypes.Structure):
    _fields_ = [
        ("saved_bytes", ctypes.c_int64),
        ("forward_scratch_bytes", ctypes.c_int64),
        ("backward_scratch_bytes", ctypes.c_int64),
    ]


class Error(RuntimeError):
    """An fp4jit call failed; `status` is the C status name (e.g. "INVALID_ARGUMENT")."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class LibraryNotFound(ImportError):
    pass


def _candidates():
    env = os.environ.get("FP4JIT_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libfp4jit.so")
    prefixes = [sys.prefix, sys.base_prefix]
    # .../P/lib/pythonX.Y/site-packages/fp4jit -> P
    parts = here.split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in ("site-packages", "dist-packages") and i >= 2:
            prefixes.append(os.sep.join(parts[: i - 2]) or os.sep)
            break
    for prefix in prefixes:
        for libdir in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")):
            yield os.path.join(prefix, libdir, "libfp4jit.so")
    found = ctypes.util.find_library("fp4jit")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise LibraryNotFound(
        "fp4jit: libfp4jit.so not found. Build it (cmake --build BUILD --target fp4jit_lib) and set "
        "FP4JIT_LIBRARY=BUILD/libfp4jit.so, or install fp4jit (cmake --install BUILD --prefix P) "
        "into this Python's prefix. Tried: " + "; ".join(tried)
    )


def _declare(lib, path):
    P = ctypes.POINTER
    vp = ctypes.c_void_p
    sigs = {
        "fp4jit_version": (ctypes.c_char_p, []),
        "fp4jit_abi_version": (ctypes.c_int, []),
        "fp4jit_last_error": (ctypes.c_char_p, []),
        "fp4jit_status_name": (ctypes.c_char_p, [ctypes.c_int]),
        "fp4jit_tensor_from_dlpack": (ctypes.c_int, [P(DLTensor), P(Tensor)]),
        "fp4jit_recipe_parse": (ctypes.c_int, [ctypes.c_char_p, P(vp)]),
        "fp4jit_recipe_destroy": (None, [vp]),
        "fp4jit_recipe_canonical": (ctypes.c_char_p, [vp]),
        "fp4jit_recipe_hash": (ctypes.c_char_p, [vp]),
        "fp4jit_recipe_preset": (ctypes.c_char_p, [vp]),
        "fp4jit_preset_count": (ctypes.c_size_t, []),
        "fp4jit_preset_name": (ctypes.c_char_p, [ctypes.c_size_t]),
        "fp4jit_recipe_operand": (ctypes.c_int, [vp, ctypes.c_int, P(OperandInfo)]),
        "fp4jit_layout_query": (
            ctypes.c_int,
            [vp, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, P(Layout)],
        ),
        "fp4jit_engine_options_init": (None, [P(EngineOptions)]),
        "fp4jit_engine_create": (ctypes.c_int, [P(EngineOptions), P(vp)]),
        "fp4jit_engine_destroy": (None, [vp]),
        "fp4jit_engine_backend": (ctypes.c_int, [vp, P(ctypes.c_int)]),
        "fp4jit_engine_description": (ctypes.c_char_p, [vp]),
        "fp4jit_quantize": (
            ctypes.c_int,
            [vp, vp, ctypes.c_int, P(Tensor), P(Quantized), P(QuantizeArgs), vp],
        ),
        "fp4jit_quantize_pair": (
            ctypes.c_int,
            [vp, vp, ctypes.c_int, P(Tensor), P(Quantized), P(Quantized), P(QuantizeArgs), vp],
        ),
        "fp4jit_quantize_stepped": (
            ctypes.c_int,
            [vp, vp, ctypes.c_int, P(Tensor), P(Quantized), P(QuantizeArgs), vp, vp],
        ),
        "fp4jit_quantize_pair_stepped": (
            ctypes.c_int,
            [vp, vp, ctypes.c_int, P(Tensor), P(Quantized), P(Quantized), P(QuantizeArgs), vp, vp],
        ),
        "fp4jit_mix_seed": (ctypes.c_uint64, [ctypes.c_uint64, ctypes.c_uint64]),
        "fp4jit_dequantize": (
            ctypes.c_int,
            [vp, vp, ctypes.c_int, P(Quantized), ctypes.c_int64, ctypes.c_int64, P(Tensor), vp],
        ),
        "fp4jit_gemm_epilogue_init": (None, [P(GemmEpilogue)]),
        "fp4jit_gemm": (
            ctypes.c_int,
            [
                vp,
                vp,
                ctypes.c_int,
                P(Quantized),
                P(Quantized),
                ctypes.c_int64,
                ctypes.c_int64,
                ctypes.c_int64,
                P(Tensor),
                P(GemmEpilogue),
                vp,
            ],
        ),
        "fp4jit_gemm_kernel": (
            ctypes.c_int,
            [
                vp,
                vp,
                ctypes.c_int,
                ctypes.c_int64,
                ctypes.c_int64,
                ctypes.c_int64,
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_size_t,
                P(ctypes.c_size_t),
            ],
        ),
        "fp4jit_dge": (ctypes.c_int, [vp, vp, P(Tensor), P(Tensor), vp]),
        "fp4jit_linear_buffers_query": (
            ctypes.c_int,
            [vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, P(LinearBuffers)],
        ),
        "fp4jit_linear_forward": (
            ctypes.c_int,
            [vp, vp, P(Tensor), P(Tensor), P(Tensor), P(Tensor), ctypes.c_uint64, ctypes.c_uint64, vp, vp, vp],
        ),
        "fp4jit_linear_backward": (
            ctypes.c_int,
            [vp, vp, ctypes.c_int64, P(Tensor), vp, vp, P(Tensor), P(Tensor), ctypes.c_uint64, vp],
        ),
        "fp4jit_linear_backward_bias": (
            ctypes.c_int,
            [vp, vp, ctypes.c_int64, P(Tensor), vp, vp, P(Tensor), P(Tensor), P(Tensor), ctypes.c_uint64, vp],
        ),
        "fp4jit_linear_backward_accumulate": (
            ctypes.c_int,
            [vp, vp, ctypes.c_int64, P(Tensor), vp, vp, P(Tensor), P(Tensor), P(Tensor), ctypes.c_float,
             ctypes.c_uint64, vp],
        ),
        "fp4jit_linear_weights_query": (
            ctypes.c_int,
            [vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, P(ctypes.c_int64), P(ctypes.c_int64)],
        ),
        "fp4jit_linear_forward_weights": (
            ctypes.c_int,
            [vp, vp, P(Tensor), P(Tensor), P(Tensor), P(Tensor), ctypes.c_uint64, ctypes.c_uint64, vp, vp, vp,
             ctypes.c_int, vp],
        ),
        "fp4jit_linear_backward_weights": (
            ctypes.c_int,
            [vp, vp, ctypes.c_int64, P(Tensor), vp, vp, vp, P(Tensor), P(Tensor), P(Tensor), ctypes.c_float,
             ctypes.c_uint64, vp],
        ),
    }
    for name, (restype, argtypes) in sigs.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise ImportError(
                "fp4jit: %s has no %s: the library is older than this package (rebuild or reinstall "
                "one of them)" % (path, name)
            ) from None
        fn.restype = restype
        fn.argtypes = argtypes


lib, path = _load()
_declare(lib, path)
if lib.fp4jit_abi_version() != ABI_VERSION:
    raise ImportError(
        "fp4jit: %s has C ABI version %d; this package needs %d (rebuild or reinstall one of them)"
        % (path, lib.fp4jit_abi_version(), ABI_VERSION)
    )


def check(status):
    """Raises Error with the library's message when `status` is not OK."""
    if status != OK:
        raise Error(STATUS_NAMES.get(status, str(status)), lib.fp4jit_last_error().decode())
