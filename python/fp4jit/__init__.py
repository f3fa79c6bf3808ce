"""fp4jit: FP4 quantize, dequantize and GEMM kernels generated per recipe (Python over the C API).

    import numpy as np, fp4jit
    recipe = fp4jit.Recipe("nvfp4")
    engine = fp4jit.Engine("host")                    # "cuda" for device arrays, "reference"
    qx, qxt = engine.quantize_pair(recipe, "x", x)    # X for fprop and X^T for wgrad, one read
    qw = engine.quantize(recipe, "w", w)
    y = engine.gemm("fprop", qx, qw)                  # Y = X W^T from the FP4 operands

Operands (roles) of a linear layer Y = X W^T, X [tokens, in], W [out, in]: x, w (fprop), dy, wt
(dgrad), dyt, xt (wgrad); each role is quantized from the tensor as given (X, W or dY).
"""

import collections
import ctypes
import types

from . import _arrays, _lib
from ._lib import Error, LibraryNotFound  # noqa: F401

__all__ = [
    "Error",
    "Recipe",
    "Engine",
    "QuantizedTensor",
    "Layout",
    "presets",
    "version",
    "library_path",
    "layout",
    "quantize",
    "quantize_pair",
    "dequantize",
    "gemm",
    "dge",
    "linear_buffers",
    "LinearBuffers",
    "default_engine",
    "mix_seed",
]

# The operand roles each GEMM multiplies: (a, b).
_GEMM_ROLES = {"fprop": ("x", "w"), "dgrad": ("dy", "wt"), "wgrad": ("dyt", "xt")}

__version__ = "0.1.0"
library_path = _lib.path


def version():
    """The library's version ("0.1.0")."""
    return _lib.lib.fp4jit_version().decode()


def presets():
    """The preset recipe names."""
    n = _lib.lib.fp4jit_preset_count()
    return [_lib.lib.fp4jit_preset_name(i).decode() for i in range(n)]


def _role(role):
    if role not in _lib.ROLES:
        raise Error("INVALID_ARGUMENT", "unknown role %r (valid: %s)" % (role, ", ".join(_lib.ROLES)))
    return _lib.ROLES[role]


class Recipe:
    """A quantization recipe: "preset[:key=value,...]" (e.g. "nvfp4", "msfp4:occ=0.97")."""

    def __init__(self, text):
        if isinstance(text, Recipe):
            text = text.text  # as its user wrote it (the same canonical form)
        if not isinstance(text, str):
            raise Error("INVALID_ARGUMENT", "recipe: expected a string, got %s" % type(text).__name__)
        handle = ctypes.c_void_p()
        _lib.check(_lib.lib.fp4jit_recipe_parse(text.encode(), ctypes.byref(handle)))
        self._handle = handle
        self.text = text
        self.canonical = _lib.lib.fp4jit_recipe_canonical(handle).decode()
        self.hash = _lib.lib.fp4jit_recipe_hash(handle).decode()
        self.preset = _lib.lib.fp4jit_recipe_preset(handle).decode()
        self._cache = {}  # layouts and linear buffer sizes by their arguments (_cached)

    def _cached(self, key, make):
        """make(), remembered under key; bounded, since token counts can vary without end."""
        value = self._cache.get(key)
        if value is None:
            if len(self._cache) >= 4096:
                self._cache.clear()
            value = self._cache[key] = make()
        return value

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle and _lib is not None and _lib.lib is not None:
            _lib.lib.fp4jit_recipe_destroy(handle)
            self._handle = None

    def operand(self, role):
        """How the recipe quantizes `role`: elem_bits, block_rows, block_cols, two_level,
        stochastic_rounding, hadamard_size, occ, dge, requant, qema."""
        info = _lib.OperandInfo()
        _lib.check(_lib.lib.fp4jit_recipe_operand(self._handle, _role(role), ctypes.byref(info)))
        out = {name: int(getattr(info, name)) for name, _ in _lib.OperandInfo._fields_}
        for flag in ("two_level", "stochastic_rounding", "occ", "dge", "requant", "qema"):
            out[flag] = bool(out[flag])
        return types.SimpleNamespace(**out)

    def layout(self, role, rows, cols):
        """The buffers operand `role` of a [rows, cols] source tensor needs."""
        return layout(self, role, rows, cols)

    def __reduce__(self):
        """Pickled, copied and deep-copied as its text: the copy parses it again and owns its own
        library handle (a shallow copy sharing the handle would free it twice)."""
        return (Recipe, (self.text,))

    def __eq__(self, other):
        return isinstance(other, Recipe) and other.hash == self.hash

    def __hash__(self):
        return hash(self.hash)

    def __repr__(self):
        return "Recipe(%r)" % self.text


_MASK64 = (1 << 64) - 1


def mix_seed(h, v):
    """One splitmix64 round: the state after mixing integer v into h (64-bit). What the library
    makes of a seed and its step counter (QuantizeArgs.seed_step): mix_seed(seed, step)."""
    h = ((int(h) ^ (int(v) & _MASK64)) + 0x9E3779B97F4A7C15) & _MASK64
    z = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _step_pointer(step, backend):
    """The address of a step counter: one int64 / uint64 element of a torch tensor, of an array
    with __cuda_array_interface__ or __array_interface__ (CuPy, NumPy), in the memory of the
    engine's backend (device memory for cuda: the library checks it; host memory for the others,
    which read it at the call: device memory is refused here)."""
    dtype = getattr(step, "dtype", None)
    on_device = bool(getattr(step, "is_cuda", False)) or (
        hasattr(step, "__cuda_array_interface__") and not hasattr(step, "__array_interface__"))
    if on_device and backend != "cuda":
        raise Error("INVALID_ARGUMENT", "seed_step: device memory for the %s backend, which reads the step on the "
                    "host" % backend)
    if hasattr(step, "data_ptr") and hasattr(step, "numel"):  # torch
        if str(dtype) not in ("torch.int64", "torch.uint64") or step.numel() != 1:
            raise Error("INVALID_ARGUMENT", "seed_step: one int64 or uint64 element, got %s of %d" % (dtype, step.numel()))
        return step.data_ptr()
    iface = getattr(step, "__cuda_array_interface__", None) or getattr(step, "__array_interface__", None)
    if iface is None:
        raise Error("INVALID_ARGUMENT", "seed_step: expected a one-element int64 array or tensor, got %s" % type(step).__name__)
    count = 1
    for n in iface["shape"]:
        count *= n
    if iface["typestr"] not in ("<i8", "<u8") or count != 1:
        raise Error("INVALID_ARGUMENT", "seed_step: one int64 or uint64 element, got %s of %d" % (iface["typestr"], count))
    return iface["data"][0]


def _recipe(r):
    return r if isinstance(r, Recipe) else Recipe(r)


class Layout(types.SimpleNamespace):
    """rows, cols (the operand, K-major), row_bytes, code_bytes, scale_rows, scale_cols,
    scale_count, scale_is_code, two_level, scale_bytes, occ, transposed, residual_capacity.
    Read-only: a recipe hands the same object to every caller that asks for the same operand."""

    def __setattr__(self, name, value):
        raise AttributeError("fp4jit.Layout is read-only")


def layout(recipe, role, rows, cols):
    recipe = _recipe(recipe)

    def query():
        l = _lib.Layout()
        _lib.check(
            _lib.lib.fp4jit_layout_query(recipe._handle, _role(role), int(rows), int(cols), ctypes.byref(l))
        )
        out = {name: int(getattr(l, name)) for name, _ in _lib.Layout._fields_}
        for flag in ("scale_is_code", "two_level", "occ", "transposed"):
            out[flag] = bool(out[flag])
        return Layout(**out)

    return recipe._cached((role, int(rows), int(cols)), query)


LinearBuffers = collections.namedtuple(
    "LinearBuffers", "saved_bytes forward_scratch_bytes backward_scratch_bytes weight_bytes saved_x_bytes")
LinearBuffers.__doc__ = """Bytes of a linear step's buffers: saved (X^T and W^T quantized, from a
forward to its backward), forward and backward scratch; with W's copies kept in a weights buffer
across steps (linear_forward's `weights`): that buffer's bytes and saved's then (X^T only)."""


def linear_buffers(recipe, tokens, in_features, out_features):
    """Buffer sizes of a linear step (Engine.linear_forward / linear_backward); raises Error
    UNSUPPORTED for recipes whose extra steps (OCC on x, DGE or Q-EMA on w) the step has not."""
    recipe = _recipe(recipe)
    shape = (int(tokens), int(in_features), int(out_features))

    def query():
        b = _lib.LinearBuffers()
        _lib.check(_lib.lib.fp4jit_linear_buffers_query(recipe._handle, *shape, ctypes.byref(b)))
        saved_x, weight = ctypes.c_int64(), ctypes.c_int64()
        _lib.check(_lib.lib.fp4jit_linear_weights_query(recipe._handle, *shape, ctypes.byref(saved_x),
                                                        ctypes.byref(weight)))
        return LinearBuffers(b.saved_bytes, b.forward_scratch_bytes, b.backward_scratch_bytes, weight.value,
                             saved_x.value)

    return recipe._cached(("linear",) + shape, query)


class QuantizedTensor:
    """A quantized operand: arrays in the memory of the engine that made it.

    codes         uint8 [rows, row_bytes]; E2M1 two per byte, element 2i in the low nibble
    scales        [scale_rows, scale_cols]: uint8 codes (e8m0, ue4m3, ue5m3) or float32
    tensor_scale  float32 [1]: s_enc of two-level recipes (value = code * scale / s_enc)
    amax          float32 [1]: the operand's largest finite |value|
    residual_*    OCC operands: index int64 / value float32 [capacity], count int64 [1];
                  residual() gives the filled part
    """

    def __init__(self, recipe, role, source_shape, layout_, alloc):
        self.recipe = recipe
        self.role = role
        self.source_shape = tuple(source_shape)
        self.layout = layout_
        self.shape = (layout_.rows, layout_.cols)
        self._alloc = alloc
        l = layout_
        # One allocation holds every array (each part 256-byte aligned); the arrays themselves are
        # views made when first asked for: a training step never needs them, only the pointers.
        cap = max(l.residual_capacity, 1) if l.occ else 0
        parts = [
            ("codes", l.code_bytes, (l.rows, l.row_bytes), "uint8"),
            ("scales", l.scale_bytes, (l.scale_rows, l.scale_cols), "uint8" if l.scale_is_code else "float32"),
            ("tensor_scale", 4, (1,), "float32"),
            ("amax", 4, (1,), "float32"),
        ]
        if l.occ:
            parts += [
                ("residual_index", 8 * cap, (cap,), "int64"),
                ("residual_value", 4 * cap, (cap,), "float32"),
                ("residual_count", 8, (1,), "int64"),
            ]
        self._parts, offset = {}, 0
        for name, nbytes, shape, dtype in parts:
            self._parts[name] = (offset, nbytes, shape, dtype)
            offset += -(-max(nbytes, 1) // 256) * 256
        self._buffer = alloc.empty((offset,), "uint8")
        base = alloc.pointer(self._buffer)
        at = {name: base + part[0] for name, part in self._parts.items()}
        self.struct = _lib.Quantized(
            at["codes"],
            l.code_bytes,
            at["scales"],
            l.scale_bytes,
            at["tensor_scale"],
            at["amax"],
            at.get("residual_index"),
            at.get("residual_value"),
            at.get("residual_count"),
            cap,
        )

    def _part(self, name):
        view = self.__dict__.get("_view_" + name)
        if view is None:
            if name not in self._parts:
                return None
            offset, nbytes, shape, dtype = self._parts[name]
            view = self._alloc.part(self._buffer[offset : offset + nbytes], shape, dtype)
            self.__dict__["_view_" + name] = view
        return view

    codes = property(lambda self: self._part("codes"))
    scales = property(lambda self: self._part("scales"))
    tensor_scale = property(lambda self: self._part("tensor_scale"))
    amax = property(lambda self: self._part("amax"))
    residual_index = property(lambda self: self._part("residual_index"))
    residual_value = property(lambda self: self._part("residual_value"))
    residual_count = property(lambda self: self._part("residual_count"))

    def ref(self):
        return ctypes.byref(self.struct)

    def residual(self):
        """(index, value) of the OCC residual, trimmed to the entries written; None without OCC.
        Reading the count waits for the device."""
        if not self.layout.occ:
            return None
        count = int(self._alloc.to_numpy(self.residual_count)[0])
        return self.residual_index[:count], self.residual_value[:count]

    def numpy(self):
        """A dict of NumPy arrays (copied from the device where needed), residual trimmed."""
        a = self._alloc.to_numpy
        out = {"codes": a(self.codes), "scales": a(self.scales), "amax": a(self.amax)}
        if self.layout.two_level:
            out["tensor_scale"] = a(self.tensor_scale)
        if self.layout.occ:
            index, value = self.residual()
            out["residual_index"], out["residual_value"] = a(index), a(value)
        return out

    def __repr__(self):
        return "QuantizedTensor(role=%s, shape=%s, recipe=%r)" % (self.role, self.shape, self.recipe.text)


class Engine:
    """Quantize, dequantize and GEMM on one backend: "auto" (cuda where a GPU is present, else
    host), "cuda" (device arrays), "host" (CPU JIT; NumPy arrays) or "reference" (golden model)."""

    def __init__(self, backend="auto", device=0, cache_path=None, use_cache=True):
        if backend not in _lib.BACKENDS:
            raise Error(
                "INVALID_ARGUMENT", "unknown backend %r (valid: %s)" % (backend, ", ".join(_lib.BACKENDS))
            )
        opts = _lib.EngineOptions()
        _lib.lib.fp4jit_engine_options_init(ctypes.byref(opts))
        opts.backend = _lib.BACKENDS[backend]
        opts.device = int(device)
        opts.cache_path = cache_path.encode() if cache_path else None
        opts.use_cache = 1 if use_cache else 0
        handle = ctypes.c_void_p()
        _lib.check(_lib.lib.fp4jit_engine_create(ctypes.byref(opts), ctypes.byref(handle)))
        self._handle = handle
        kind = ctypes.c_int()
        _lib.check(_lib.lib.fp4jit_engine_backend(handle, ctypes.byref(kind)))
        self.backend = _lib.BACKEND_NAMES[kind.value]
        self.device = int(device)
        self.description = _lib.lib.fp4jit_engine_description(handle).decode()

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle and _lib is not None and _lib.lib is not None:
            _lib.lib.fp4jit_engine_destroy(handle)
            self._handle = None

    def __repr__(self):
        return "Engine(%r: %s)" % (self.backend, self.description)

    # ---- helpers ----

    def _alloc(self, obj, v):
        return _arrays.allocator_for(obj, v)

    def _args(self, seed, offset, amax, amax_transposed, keep):
        args = _lib.QuantizeArgs(int(seed) & (2**64 - 1), int(offset) & (2**64 - 1), None, None)
        if amax is not None:
            v = _arrays.view(amax, "amax")
            keep.append(v)
            args.amax = v.struct.data
        if amax_transposed is not None:
            v = _arrays.view(amax_transposed, "amax_transposed")
            keep.append(v)
            args.amax_transposed = v.struct.data
        return args

    # ---- operations ----

    def layout(self, recipe, role, rows, cols):
        return layout(recipe, role, rows, cols)

    def quantize(self, recipe, role, x, seed=0, offset=0, amax=None, stream=None, seed_step=None):
        """Operand `role` of `recipe` quantized from x (the source tensor: X, W or dY; [..., C] is
        read as [prod(...), C]). Stochastic rounding draws element i's bits at (seed, offset + i);
        with seed_step (a one-element int64 tensor or array in the engine's memory, a step counter)
        at (mix_seed(seed, step), offset + i), the step read when the work runs: a CUDA graph
        whose replays advance it draws new bits each replay."""
        recipe = _recipe(recipe)
        s = _arrays.stream_handle(stream, x)
        v = _arrays.view(x, "quantize input", s)
        keep = [v]
        l = layout(recipe, role, v.rows, v.cols)
        q = QuantizedTensor(recipe, role, (v.rows, v.cols), l, self._alloc(x, v))
        args = self._args(seed, offset, amax, None, keep)
        if seed_step is None:
            status = _lib.lib.fp4jit_quantize(self._handle, recipe._handle, _role(role), v.ref(), q.ref(),
                                              ctypes.byref(args), s)
        else:
            status = _lib.lib.fp4jit_quantize_stepped(self._handle, recipe._handle, _role(role), v.ref(), q.ref(),
                                                      ctypes.byref(args), _step_pointer(seed_step, self.backend), s)
        _lib.check(status)
        return q

    def quantize_pair(self, recipe, role, x, seed=0, offset=0, amax=None, amax_transposed=None, stream=None,
                      seed_step=None):
        """Both copies of a tensor from one read: role (x, w or dy) and its transposed partner (xt,
        wt or dyt). Returns (row-wise, transposed). seed_step: as quantize's."""
        recipe = _recipe(recipe)
        if role not in _lib.PARTNERS:
            raise Error("INVALID_ARGUMENT", "quantize_pair: role must be x, w or dy (got %r)" % (role,))
        partner = _lib.PARTNERS[role]
        s = _arrays.stream_handle(stream, x)
        v = _arrays.view(x, "quantize_pair input", s)
        keep = [v]
        alloc = self._alloc(x, v)
        q = QuantizedTensor(recipe, role, (v.rows, v.cols), layout(recipe, role, v.rows, v.cols), alloc)
        qt = QuantizedTensor(recipe, partner, (v.rows, v.cols), layout(recipe, partner, v.rows, v.cols), alloc)
        args = self._args(seed, offset, amax, amax_transposed, keep)
        if seed_step is None:
            status = _lib.lib.fp4jit_quantize_pair(self._handle, recipe._handle, _role(role), v.ref(), q.ref(),
                                                   qt.ref(), ctypes.byref(args), s)
        else:
            status = _lib.lib.fp4jit_quantize_pair_stepped(self._handle, recipe._handle, _role(role), v.ref(),
                                                           q.ref(), qt.ref(), ctypes.byref(args),
                                                           _step_pointer(seed_step, self.backend), s)
        _lib.check(status)
        return q, qt

    def dequantize(self, q, dtype="float32", out=None, stream=None):
        """The operand's values [rows, cols] in its own K-major layout and transformed domain (what
        the GEMM multiplies; the OCC residual not added)."""
        if not isinstance(q, QuantizedTensor):
            raise Error("INVALID_ARGUMENT", "dequantize: expected a QuantizedTensor, got %s" % type(q).__name__)
        if out is None:
            out = q._alloc.empty(q.shape, dtype)
        s = _arrays.stream_handle(stream, out)
        v = _arrays.view(out, "dequantize output", s)
        rows, cols = q.source_shape
        _lib.check(
            _lib.lib.fp4jit_dequantize(
                self._handle, q.recipe._handle, _role(q.role), q.ref(), rows, cols, v.ref(), s
            )
        )
        return out

    def gemm(self, op, a, b, out=None, dtype="float32", alpha=1.0, beta=0.0, c=None, bias=None,
             occ_weight=None, stream=None):
        """out [M, N] = alpha * (deq(a) deq(b)^T [+ R occ_weight^T]) [+ bias] [+ beta * c] for
        op fprop (a: x, b: w), dgrad (dy, wt) or wgrad (dyt, xt). bias: [N], float32, bfloat16 or
        float16 (added in FP32); occ_weight: the weight in high precision [N, K] for OCC
        compensation (a's recipe has occ)."""
        if op not in _lib.GEMMS:
            raise Error("INVALID_ARGUMENT", "unknown GEMM %r (valid: fprop, dgrad, wgrad)" % (op,))
        for name, q in (("a", a), ("b", b)):
            if not isinstance(q, QuantizedTensor):
                raise Error("INVALID_ARGUMENT", "gemm: %s must be a QuantizedTensor, got %s" % (name, type(q).__name__))
        if a.recipe != b.recipe:
            raise Error(
                "INVALID_ARGUMENT", "gemm: a (%s) and b (%s) were quantized with different recipes" % (a.recipe.text, b.recipe.text)
            )
        want = _GEMM_ROLES[op]
        if (a.role, b.role) != want:
            raise Error(
                "INVALID_ARGUMENT",
                "gemm %s takes a = %s and b = %s operands (quantized with those roles), got a = %s and b = %s"
                % (op, want[0], want[1], a.role, b.role),
            )
        m, k = a.shape
        n = b.shape[0]
        if b.shape[1] != k:
            raise Error(
                "INVALID_ARGUMENT",
                "gemm %s: a (%s, [%d, %d]) and b (%s, [%d, %d]) differ in K: %d and %d"
                % (op, a.role, m, k, b.role, n, b.shape[1], k, b.shape[1]),
            )
        if out is None:
            out = a._alloc.empty((m, n), dtype)
        keep = []
        s = _arrays.stream_handle(stream, out)
        vo = _arrays.view(out, "gemm output", s)
        ep = _lib.GemmEpilogue()
        _lib.lib.fp4jit_gemm_epilogue_init(ctypes.byref(ep))
        ep.alpha, ep.beta = float(alpha), float(beta)
        for field, arr, what in (("c", c, "gemm c"), ("bias", bias, "gemm bias"), ("occ_weight", occ_weight, "gemm occ_weight")):
            if arr is not None:
                v = _arrays.view(arr, what, s)
                keep.append(v)
                setattr(ep, field, ctypes.pointer(v.struct))
        _lib.check(
            _lib.lib.fp4jit_gemm(
                self._handle, a.recipe._handle, _lib.GEMMS[op], a.ref(), b.ref(), m, n, k, vo.ref(), ctypes.byref(ep), s
            )
        )
        return out

    def gemm_kernel(self, recipe, op, m, n, k, dtype="float32"):
        """The kernel config gemm() runs on this engine for op (fprop, dgrad, wgrad) at
        M x N x K with that output dtype, and why: e.g. "sg=1,bn=192,ps=4,rg=8m,pp=4,ts=1,sk=1
        (heuristic)" on CUDA, "... (tuned)" or "... (default)" on the host, "" on the reference
        backend."""
        if op not in _lib.GEMMS:
            raise Error("INVALID_ARGUMENT", "unknown GEMM %r (valid: fprop, dgrad, wgrad)" % (op,))
        if dtype not in _lib.DTYPES:
            raise Error("INVALID_ARGUMENT", "gemm_kernel: dtype %r (float32, bfloat16 or float16)" % (dtype,))
        r = _recipe(recipe)
        buf = ctypes.create_string_buffer(256)
        needed = ctypes.c_size_t(0)
        args = (self._handle, r._handle, _lib.GEMMS[op], int(m), int(n), int(k), _lib.DTYPES[dtype])
        status = _lib.lib.fp4jit_gemm_kernel(*args, buf, len(buf), ctypes.byref(needed))
        if status != 0 and needed.value > len(buf):
            buf = ctypes.create_string_buffer(needed.value)
            status = _lib.lib.fp4jit_gemm_kernel(*args, buf, len(buf), ctypes.byref(needed))
        _lib.check(status)
        return buf.value.decode()

    # ---- a linear layer's step, one call each way ----

    def linear_buffers(self, recipe, tokens, in_features, out_features):
        """Bytes of the buffers of linear_forward / linear_backward for Y [tokens, out] = X W^T:
        a LinearBuffers with saved_bytes (X^T and W^T quantized, kept from a forward to its
        backward), forward_scratch_bytes and backward_scratch_bytes; weight_bytes and saved_x_bytes
        (saved's size then) for W's copies kept in a `weights` buffer."""
        return linear_buffers(recipe, tokens, in_features, out_features)

    def linear_forward(self, recipe, x, w, y, bias=None, seed_x=0, seed_w=0, saved=None, scratch=None,
                       stream=None, weights=None, quantize_weights=True):
        """y [tokens, out] = X W^T [+ bias] with X and W quantized as the recipe says (both copies
        when `saved` is given: the backward's X^T and W^T go there). saved / scratch: uint8
        arrays in the engine's memory of linear_buffers' sizes (256-byte aligned); scratch None:
        the library's own for the call. Equal to quantize_pair + gemm("fprop") with the same
        seeds, bit for bit.
        weights: a uint8 array of linear_buffers' weight_bytes that holds W's two copies across
        calls (the micro-batches of one optimizer step): quantize_weights True quantizes W into
        it (both copies), False reads the copies an earlier call left there (w's data is not
        read; the caller vouches W has not changed). saved then holds X^T only (saved_x_bytes),
        and the backward takes the same `weights`."""
        recipe = _recipe(recipe)
        s = _arrays.stream_handle(stream, y)
        vx = _arrays.view(x, "linear_forward x", s)
        vw = _arrays.view(w, "linear_forward w", s)
        vy = _arrays.view(y, "linear_forward y", s)
        vb = _arrays.view(bias, "linear_forward bias", s) if bias is not None else None
        b = linear_buffers(recipe, vx.rows, vx.cols, vw.rows)
        saved_bytes = b.saved_bytes if weights is None else b.saved_x_bytes
        p_saved = None if saved is None else _arrays.buffer_pointer(saved, "linear_forward saved", saved_bytes)
        p_scratch = (None if scratch is None
                     else _arrays.buffer_pointer(scratch, "linear_forward scratch", b.forward_scratch_bytes))
        p_weights = (None if weights is None
                     else _arrays.buffer_pointer(weights, "linear_forward weights", b.weight_bytes))
        _lib.check(
            _lib.lib.fp4jit_linear_forward_weights(
                self._handle, recipe._handle, vx.ref(), vw.ref(), vb.ref() if vb is not None else None, vy.ref(),
                int(seed_x) & (2**64 - 1), int(seed_w) & (2**64 - 1), p_saved, p_scratch, p_weights,
                1 if quantize_weights else 0, s,
            )
        )
        return y

    def linear_backward(self, recipe, in_features, dy, saved, scratch, dx=None, dw=None, seed_dy=0, stream=None,
                        db=None, dw_beta=0.0, weights=None):
        """dx [tokens, in] and / or dw [out, in] from dy [tokens, out] and the forward's `saved`
        buffer (scratch None: the library's own for the call). Equal to quantize_pair("dy") +
        gemm("dgrad") / gemm("wgrad") bit for bit.
        db [out] (float32, bfloat16 or float16), if given: the bias gradient, dy's column sums,
        taken from dy's quantize pass (FP32 additions in a fixed order, rounded once to db's
        dtype: the same bits on every backend).
        dw_beta: dw = dW + dw_beta * dw, in the wgrad GEMM's epilogue (gemm("wgrad", ...,
        out=dw, c=dw, beta=dw_beta) bit for bit): 1 accumulates the weight gradient into dw.
        weights: the buffer its forward kept W's copies in (W^T read from there), or None."""
        recipe = _recipe(recipe)
        if dx is None and dw is None:
            raise Error("INVALID_ARGUMENT", "linear_backward: neither dx nor dw is asked for")
        s = _arrays.stream_handle(stream, dy)
        vdy = _arrays.view(dy, "linear_backward dy", s)
        vdx = _arrays.view(dx, "linear_backward dx", s) if dx is not None else None
        vdw = _arrays.view(dw, "linear_backward dw", s) if dw is not None else None
        vdb = _arrays.view(db, "linear_backward db", s) if db is not None else None
        b = linear_buffers(recipe, vdy.rows, in_features, vdy.cols)
        p_saved = _arrays.buffer_pointer(saved, "linear_backward saved",
                                         b.saved_bytes if weights is None else b.saved_x_bytes)
        p_weights = (None if weights is None
                     else _arrays.buffer_pointer(weights, "linear_backward weights", b.weight_bytes))
        p_scratch = (None if scratch is None
                     else _arrays.buffer_pointer(scratch, "linear_backward scratch", b.backward_scratch_bytes))
        _lib.check(
            _lib.lib.fp4jit_linear_backward_weights(
                self._handle, recipe._handle, int(in_features), vdy.ref(), p_saved, p_weights, p_scratch,
                vdx.ref() if vdx is not None else None, vdw.ref() if vdw is not None else None,
                vdb.ref() if vdb is not None else None, float(dw_beta), int(seed_dy) & (2**64 - 1), s,
            )
        )

    def dge(self, recipe, w, out=None, stream=None):
        """The DGE factor f'(W * sf) of the recipe's weight operand, float32, shaped like w."""
        recipe = _recipe(recipe)
        s = _arrays.stream_handle(stream, w)
        vw = _arrays.view(w, "dge input", s)
        if out is None:
            out = self._alloc(w, vw).empty(vw.shape, "float32")
        vo = _arrays.view(out, "dge output", s)
        _lib.check(_lib.lib.fp4jit_dge(self._handle, recipe._handle, vw.ref(), vo.ref(), s))
        return out


_engines = {}


def default_engine(x=None):
    """The engine for arrays like x: host memory -> "host" (the reference where this build has
    no host backend), device memory -> "cuda" on the array's device. One per process and place."""
    if x is None:
        return _engine_for(_lib.DEVICE_CPU, 0)
    v = _arrays.view(x, "array")
    return _engine_for(v.device, v.device_id)


def _engine_for(device, device_id):
    on_host = device in (_lib.DEVICE_CPU, _lib.DEVICE_CUDA_HOST)
    key = ("host", 0) if on_host else ("cuda", device_id)
    e = _engines.get(key)
    if e is None:
        if key[0] == "cuda":
            e = Engine("cuda", device=device_id)
        else:
            try:
                e = Engine("host")
            except Error as err:
                if err.status != "UNSUPPORTED":
                    raise
                e = Engine("reference")
        _engines[key] = e
    return e


def quantize(recipe, role, x, **kwargs):
    """Engine.quantize on the default engine for x."""
    return default_engine(x).quantize(recipe, role, x, **kwargs)


def quantize_pair(recipe, role, x, **kwargs):
    """Engine.quantize_pair on the default engine for x."""
    return default_engine(x).quantize_pair(recipe, role, x, **kwargs)


def dequantize(q, **kwargs):
    """Engine.dequantize on the default engine for q's memory."""
    return _engine_for(q._alloc.device, q._alloc.device_id).dequantize(q, **kwargs)


def gemm(op, a, b, **kwargs):
    """Engine.gemm on the default engine for the operands' memory."""
    return _engine_for(a._alloc.device, a._alloc.device_id).gemm(op, a, b, **kwargs)


def dge(recipe, w, **kwargs):
    """Engine.dge on the default engine for w."""
    return default_engine(w).dge(recipe, w, **kwargs)
