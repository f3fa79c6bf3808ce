"""PyTorch FP4 linear layers over fp4jit.

    import fp4jit.torch as fp4
    layer = fp4.Linear(4096, 4096, recipe="nvfp4", device="cuda", dtype=torch.bfloat16)
    model = fp4.convert(model, "msfp4", keep=2)      # keep the last 2 linear layers in BF16

A Linear's forward and backward run the three GEMMs of Y = X W^T exactly as the recipe says for
each of its six operands:
  fprop  Y  = Q(X; x)  Q(W; w)^T   [+ R_x W^T: msfp4's OCC compensation] [+ bias]
  dgrad  dX = Q(dY; dy) Q(W; wt)^T
  wgrad  dW = Q(dY; dyt) Q(X; xt)^T  [x f'(W): msfp4's DGE]
X, W and dY are each read once for both of their copies (quantize_pair); TetraJet's transposed
copies are re-quantized from the dequantized forward ones inside that call (src=requant);
Hadamard transforms and stochastic rounding happen where the recipe puts them, with seeds that
depend on the layer and advance every training step. Kernels run on PyTorch's current CUDA stream
(the host backend for CPU tensors). Weights and their gradients keep the parameter's dtype, dX the
input's, Y the input's (or autocast's) dtype; GEMMs accumulate in FP32.

Token counts that the recipe's blocks along the token axis do not divide are padded with zero
rows (which change no block scale, tensor scale or OCC quantile of the real rows).
"""

import ctypes
import fnmatch
import itertools
import threading
import warnings

import torch
from torch import nn

import fp4jit
from . import _arrays, _lib

__all__ = ["Linear", "convert", "fake_quantize", "set_first_microbatch"]

_ROLE_INDEX = {"x": 1, "w": 2, "dy": 3}
_NO_SEEDS = {role: 0 for role in _ROLE_INDEX}  # a step of a recipe that rounds nothing stochastically
_layer_ids = itertools.count()
_engines = {}


def _mix(*values):
    """A 64-bit hash of integers (splitmix64 over their sequence): seeds per layer, step and
    tensor that are the same on every rank and every run."""
    h = 0x9E3779B97F4A7C15
    for v in values:
        h = fp4jit.mix_seed(h, v)
    return h


def engine_for(device):
    """The engine for tensors on `device`: cuda on its ordinal, else the host backend."""
    if not isinstance(device, torch.device):
        device = torch.device(device)
    key = (device.type, device.index or 0)
    e = _engines.get(key)
    if e is None:
        if device.type == "cuda":
            e = fp4jit.Engine("cuda", device=device.index or 0)
        elif device.type == "cpu":
            try:
                e = fp4jit.Engine("host")
            except fp4jit.Error as err:
                if err.status != "UNSUPPORTED":
                    raise
                e = fp4jit.Engine("reference")
        else:
            raise fp4jit.Error("UNSUPPORTED", "fp4jit.torch: tensors on %s (cpu or cuda only)" % device)
        _engines[key] = e
    return e


def _stream(device):
    """PyTorch's current CUDA stream on `device` as a CUstream (0 for the CPU)."""
    if device.type != "cuda":
        return 0
    index = device.index if device.index is not None else torch.cuda.current_device()
    if _raw_stream is not None:  # the handle without making a Stream object (a step calls it twice)
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_BIAS_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _byte_buffer(nbytes, device):
    """A uint8 buffer of nbytes on device, 256-byte aligned (the linear step's buffers): PyTorch's
    CUDA allocations already are; its CPU ones are 64-byte aligned, so those (and any other that is
    not aligned) take an aligned slice of a larger one."""
    n = max(nbytes, 1)
    if device.type == "cuda":
        t = torch.empty(n, dtype=torch.uint8, device=device)
        if t.data_ptr() % 256 == 0:
            return t
    t = torch.empty(n + 255, dtype=torch.uint8, device=device)  # an allocator that does not align
    skew = (-t.data_ptr()) % 256
    return t[skew : skew + n]


class _Calls(threading.local):
    """Per thread (autograd may run a backward on its own thread while another forward runs): the
    fp4jit_tensor structs of a layer's one-call steps by signature (token count, dtypes, device),
    each made from its tensor (and the tensor checked) on first sight; a step only sets their data
    pointers. The layer passes contiguous tensors whose shapes the signature fixes. At most
    _MAX_SIGNATURES are kept (token counts vary in training), the oldest dropped first."""

    _MAX_SIGNATURES = 64

    def __init__(self):
        self.structs = {}

    def slots(self, key, a, b, c, d):
        """Pointers to the structs of four (tensor or None, what) pairs for signature `key`, their
        data pointers set (None for a None tensor)."""
        slots = self.structs.get(key)
        if slots is None:
            slots = []
            for t, what in (a, b, c, d):
                if t is None:
                    slots.append(None)
                    continue
                struct = _arrays.torch_struct(t, what)
                slots.append((struct, ctypes.pointer(struct)))
            if len(self.structs) >= self._MAX_SIGNATURES:
                del self.structs[next(iter(self.structs))]
            self.structs[key] = slots = tuple(slots)
        sa, sb, sc, sd = slots
        if sa is not None:
            sa[0].data = a[0].data_ptr()
        if sb is not None:
            sb[0].data = b[0].data_ptr()
        if sc is not None:
            sc[0].data = c[0].data_ptr()
        if sd is not None:
            sd[0].data = d[0].data_ptr()
        return (None if sa is None else sa[1], None if sb is None else sb[1], None if sc is None else sc[1],
                None if sd is None else sd[1])


def _linear_forward(engine, recipe, calls, dev, x, w, y, bias, seeds, saved, stream, weights=None,
                    quantize_weights=True):
    """Engine.linear_forward for this layer's own tensors, without its generic argument handling:
    x, w, y (and bias) contiguous PyTorch tensors, saved a buffer of linear_buffers' size made by
    _byte_buffer (None: no backward follows); the scratch is the library's own (its workspace
    pool on CUDA: no PyTorch allocation). weights: W's copies kept across steps (a _byte_buffer of
    weight_bytes; quantize_weights: this call fills it) or None. The library checks shapes, dtypes
    and alignment as ever."""
    key = (0, x.shape[0], x.dtype, w.dtype, y.dtype, None if bias is None else bias.dtype, dev)
    px, pw, pb, py = calls.slots(key, (x, "Linear input"), (w, "Linear weight"), (bias, "Linear bias"),
                                 (y, "Linear output"))
    _lib.check(_lib.lib.fp4jit_linear_forward_weights(
        engine._handle, recipe._handle, px, pw, pb, py, seeds["x"], seeds["w"],
        None if saved is None else saved.data_ptr(), None, None if weights is None else weights.data_ptr(),
        1 if quantize_weights else 0, stream))


def _linear_backward(engine, recipe, calls, dev, in_features, dy, saved, dx, dw, db, seed_dy, stream, dw_beta=0.0,
                     weights=None):
    """Engine.linear_backward likewise (dy, dx, dw, db contiguous PyTorch tensors or None; dw_beta 1:
    the weight gradient added into dw; weights: the forward's, or None)."""
    key = (1, dy.shape[0], dy.dtype, None if dx is None else dx.dtype, None if dw is None else dw.dtype,
           None if db is None else db.dtype, dev)
    pdy, pdx, pdw, pdb = calls.slots(key, (dy, "Linear output gradient"), (dx, "Linear input gradient"),
                                     (dw, "Linear weight gradient"), (db, "Linear bias gradient"))
    _lib.check(_lib.lib.fp4jit_linear_backward_weights(
        engine._handle, recipe._handle, in_features, pdy, saved.data_ptr(),
        None if weights is None else weights.data_ptr(), None, pdx, pdw, pdb, dw_beta, seed_dy, stream))


def _main_grad(layer, weight_dtype):
    """The layer's weight.main_grad for fused weight-gradient accumulation, checked."""
    weight = layer.weight
    main = getattr(weight, "main_grad", None)
    if main is None:
        raise fp4jit.Error(
            "INVALID_ARGUMENT",
            "fp4jit.torch.Linear(%d, %d) with fuse_wgrad_accumulation: weight.main_grad is not set (a "
            "tensor shaped like the weight, float32 or the weight's dtype, that the weight gradient is "
            "added into)" % (layer.in_features, layer.out_features),
        )
    want = (layer.out_features, layer.in_features)
    if (tuple(main.shape) != want or main.device != weight.device or main.dtype not in (torch.float32, weight_dtype)
            or not main.is_contiguous()):
        raise fp4jit.Error(
            "INVALID_ARGUMENT",
            "fp4jit.torch.Linear(%d, %d) with fuse_wgrad_accumulation: weight.main_grad must be a contiguous %s "
            "tensor of %s on %s, got %s %s%s on %s"
            % (layer.in_features, layer.out_features, list(want),
               " or ".join(sorted({"float32", str(weight_dtype).replace("torch.", "")})), weight.device,
               list(main.shape), str(main.dtype).replace("torch.", ""),
               "" if main.is_contiguous() else " (not contiguous)", main.device),
        )
    return main


class _Weights:
    """A layer's quantized W kept over the micro-batches of one optimizer step (is_first_microbatch):
    the one-call path's weights buffer (Engine.linear_forward's `weights`) or the per-operation
    path's two QuantizedTensors, with what identifies the W they were made from."""

    __slots__ = ("key", "buffer", "qw", "qwt")

    def __init__(self, key):
        self.key = key
        self.buffer = self.qw = self.qwt = None


def _graph_seed_step(layer, backward, device):
    """The replay counter a captured step's stochastic rounding reads, or None (no capture, or no
    operand of this step rounds stochastically).

    A CUDA graph keeps the seeds its capture passed by value, so a captured step takes them as
    bases and the library mixes each with this counter (QuantizeArgs.seed_step: mix_seed(base,
    replays), read on the device when the kernels run); the graph advances it at the end of the
    step, so every replay draws new bits. The counter (int64 [1]) is made by the layer's eager
    steps on that device, before any capture: made inside a capture, its initialization would be
    part of the graph and every replay would start it over."""
    plan = layer._plan(None)
    if not (plan.seeded_step if backward else plan.seeded_forward):
        return None
    counter = getattr(layer, "_replays", None)  # absent from layers pickled before it existed
    capturing = torch.cuda.is_current_stream_capturing()
    if counter is None or counter.device != device:
        if capturing:
            raise fp4jit.Error(
                "INVALID_ARGUMENT",
                "fp4jit.torch.Linear with recipe %r: capture of a step that rounds stochastically "
                "before any eager step of the layer on %s: run one eagerly first (torch.cuda.graph's "
                "warm-up), which makes the layer's replay counter" % (layer.recipe.text, device),
            )
        layer._replays = torch.zeros(1, dtype=torch.int64, device=device)
    return counter if capturing else None


def _weight_key(weight):
    """What says W is the tensor it was: storage, view, dtype and PyTorch's version counter (which
    every in-place update, an optimizer step's among them, advances)."""
    return (weight.data_ptr(), tuple(weight.shape), tuple(weight.stride()), weight.dtype, weight.device,
            weight._version)


def _weights_for(layer, weight, first):
    """(a _Weights, whether this forward quantizes W into it) for is_first_microbatch = first (True
    or False): a new one to fill (the forward keeps it in the layer once filled; a backward still
    pending may read the previous one), or the layer's, checked to be of this W."""
    key = _weight_key(weight)
    if first:
        return _Weights(key), True
    cached = layer._weights
    if cached is None:
        raise fp4jit.Error(
            "INVALID_ARGUMENT",
            "fp4jit.torch.Linear(%d, %d): is_first_microbatch=False, but no forward with "
            "is_first_microbatch=True has quantized this layer's weight yet"
            % (layer.in_features, layer.out_features),
        )
    if cached.key != key:
        raise fp4jit.Error(
            "INVALID_ARGUMENT",
            "fp4jit.torch.Linear(%d, %d): is_first_microbatch=False, but the weight changed since "
            "it was quantized (%s): pass is_first_microbatch=True on the first micro-batch after every "
            "update of the weight"
            % (layer.in_features, layer.out_features,
               "updated in place, e.g. by an optimizer step" if cached.key[:-1] == key[:-1] else "another tensor"),
        )
    return cached, False


class _Plan:
    """What a recipe asks of a layer of a given size: operand flags and the token padding."""

    def __init__(self, recipe, in_features, out_features):
        self.recipe = recipe
        self.in_features, self.out_features = in_features, out_features
        self.ops = {role: recipe.operand(role) for role in _lib.ROLES}
        if self.ops["w"].qema:
            raise fp4jit.Error(
                "UNSUPPORTED",
                "recipe %r: Q-EMA weight rounding (w.qema=on) needs the EMA of the weights, which "
                "fp4jit.torch does not keep; use the recipe with w.qema=off" % recipe.text,
            )
        for role, rows, cols in (("w", out_features, in_features), ("wt", out_features, in_features)):
            try:
                recipe.layout(role, rows, cols)
            except fp4jit.Error as e:
                raise fp4jit.Error(
                    "INVALID_ARGUMENT",
                    "fp4jit.torch.Linear(%d, %d) with recipe %r: %s"
                    % (in_features, out_features, recipe.text, e),
                ) from None
        self._tokens = {}
        self.calls = _Calls()
        # One library call each way (Engine.linear_forward / linear_backward) unless the recipe
        # has steps that call does not take: OCC compensation on x, DGE on w.
        self.fused = not (self.ops["x"].occ or self.ops["w"].dge)
        # Operands whose codes depend on the step's seeds: a forward that only infers quantizes x
        # and w; one that trains all six.
        seeded = {role for role, op in self.ops.items() if op.stochastic_rounding}
        self.seeded_forward = sorted(seeded & {"x", "w"})
        self.seeded_step = sorted(seeded)

    def fits(self, tokens):
        try:
            for role, cols in (("x", self.in_features), ("xt", self.in_features), ("dy", self.out_features),
                               ("dyt", self.out_features)):
                self.recipe.layout(role, tokens, cols)
            return True
        except fp4jit.Error:
            return False

    def buffers(self, tokens):
        """linear_buffers' sizes for a step of `tokens` (padded) tokens (remembered by the recipe)."""
        return fp4jit.linear_buffers(self.recipe, tokens, self.in_features, self.out_features)

    def padded(self, tokens, device):
        """The smallest token count >= tokens that every token-axis block divides (on CUDA also a
        multiple of 32: rows of 16 bytes for the wgrad operands' TMA loads)."""
        key = (tokens, device.type)
        t = self._tokens.get(key)
        if t is None:
            t = tokens
            first = (32,) if device.type == "cuda" else (1, 16)
            for multiple in first + (32, 64, 128, 256, 512):
                t = -(-tokens // multiple) * multiple
                if t > 0 and self.fits(t):
                    break
            else:
                raise fp4jit.Error("INVALID_ARGUMENT", "recipe %r: no token padding fits %d tokens" % (self.recipe.text, tokens))
            self._tokens[key] = t
        return t


class _LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, layer, seeds, backward, kept=None, seed_step=None):
        # kept: (_Weights, fill) where W's copies are kept over micro-batches, else None.
        # seed_step: a captured step's replay counter (_graph_seed_step): the per-operation calls,
        # whose quantize arguments take it, with the seeds as bases.
        dev = x.device  # a new torch.device at every access
        plan = layer._plan(dev)
        recipe, engine = plan.recipe, engine_for(dev)
        stream = _stream(dev)
        tokens = x.shape[0]
        padded = plan.padded(tokens, dev)
        if padded != tokens:
            x = torch.nn.functional.pad(x, (0, 0, 0, padded - tokens))
        out_dtype = x.dtype
        if x.is_cuda and torch.is_autocast_enabled("cuda"):
            out_dtype = torch.get_autocast_dtype("cuda")
        y = torch.empty((padded, weight.shape[0]), dtype=out_dtype, device=dev)
        if not weight.is_contiguous():  # a transposed or tied parameter: the library reads rows
            weight = weight.contiguous()
        b = None  # added in FP32 by the GEMM epilogue from its own dtype (no grad mode in here)
        if bias is not None:
            b = bias if bias.dtype in _BIAS_DTYPES else bias.to(torch.float32)
            if not b.is_contiguous():
                b = b.contiguous()
        qxt = qwt = saved = wbuf = None
        fused = plan.fused and seed_step is None
        if fused:
            sizes = plan.buffers(padded)
            if kept is not None:
                if kept[1]:
                    kept[0].buffer = _byte_buffer(sizes.weight_bytes, dev)
                wbuf = kept[0].buffer
            if backward:
                saved = _byte_buffer(sizes.saved_bytes if wbuf is None else sizes.saved_x_bytes, dev)
            _linear_forward(engine, recipe, plan.calls, dev, x, weight, y, b, seeds, saved, stream, wbuf,
                            kept is not None and kept[1])
        else:
            if backward:  # the transposed copies for dgrad and wgrad, from the same reads
                qx, qxt = engine.quantize_pair(recipe, "x", x, seed=seeds["x"], stream=stream, seed_step=seed_step)
            else:
                qx = engine.quantize(recipe, "x", x, seed=seeds["x"], stream=stream, seed_step=seed_step)
            if kept is not None:
                if kept[1]:  # both copies: later micro-batches may have a backward
                    kept[0].qw, kept[0].qwt = engine.quantize_pair(recipe, "w", weight, seed=seeds["w"],
                                                                   stream=stream, seed_step=seed_step)
                qw, qwt = kept[0].qw, kept[0].qwt
            elif backward:
                qw, qwt = engine.quantize_pair(recipe, "w", weight, seed=seeds["w"], stream=stream,
                                               seed_step=seed_step)
            else:
                qw = engine.quantize(recipe, "w", weight, seed=seeds["w"], stream=stream, seed_step=seed_step)
        if kept is not None and kept[1]:  # filled: the layer's from now on
            layer._weights = kept[0]
        if not fused:
            occ_w = weight if plan.ops["x"].occ else None
            engine.gemm("fprop", qx, qw, out=y, bias=b, occ_weight=occ_w, stream=stream)
            if seed_step is not None and not backward:
                seed_step.add_(1)  # the graph's next replay draws new bits
        ctx.layer, ctx.seeds, ctx.tokens, ctx.padded = layer, seeds, tokens, padded
        ctx.fused, ctx.seed_step = fused, (seed_step if backward else None)
        ctx.qxt, ctx.qwt, ctx.saved_q, ctx.wbuf = qxt, qwt, saved, wbuf
        ctx.x_dtype, ctx.w_dtype = x.dtype, weight.dtype
        ctx.has_bias = bias is not None
        ctx.bias_dtype = None if bias is None else bias.dtype
        ctx.save_for_backward(weight if plan.ops["w"].dge else None)
        return y[:tokens] if padded != tokens else y

    @staticmethod
    def backward(ctx, dy):
        (weight,) = ctx.saved_tensors
        dev = dy.device
        plan = ctx.layer._plan(dev)
        recipe, engine = plan.recipe, engine_for(dev)
        stream = _stream(dev)
        if not dy.is_contiguous():
            dy = dy.contiguous()
        if ctx.padded != ctx.tokens:
            dy_full = torch.nn.functional.pad(dy, (0, 0, 0, ctx.padded - ctx.tokens))
        else:
            dy_full = dy
        dx = dw = db = None
        want_dx, want_dw = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        want_db = ctx.has_bias and ctx.needs_input_grad[2]
        w_dtype = ctx.w_dtype
        # Fused weight-gradient accumulation: dW goes into weight.main_grad, autograd gets none.
        main = _main_grad(ctx.layer, w_dtype) if want_dw and ctx.layer.fuse_wgrad_accumulation else None
        if want_dx:
            dx = torch.empty((ctx.padded, plan.in_features), dtype=ctx.x_dtype, device=dev)
        if ctx.fused:
            if want_dx or want_dw:
                if want_dw and main is None:
                    dw = torch.empty((plan.out_features, plan.in_features), dtype=w_dtype, device=dev)
                # The bias gradient from dY's quantize pass (no read of dY of its own).
                if want_db and ctx.bias_dtype in _BIAS_DTYPES:
                    db = torch.empty((plan.out_features,), dtype=ctx.bias_dtype, device=dev)
                _linear_backward(engine, recipe, plan.calls, dev, plan.in_features, dy_full, ctx.saved_q, dx,
                                 dw if main is None else main, db, ctx.seeds["dy"], stream,
                                 0.0 if main is None else 1.0, ctx.wbuf)
        else:
            qdy, qdyt = engine.quantize_pair(recipe, "dy", dy_full, seed=ctx.seeds["dy"], stream=stream,
                                             seed_step=ctx.seed_step)
            if want_dx:
                engine.gemm("dgrad", qdy, ctx.qwt, out=dx, stream=stream)
            if want_dw:
                if weight is not None:  # DGE: dW * f'(W sf), in FP32 before the cast
                    dw = torch.empty((plan.out_features, plan.in_features), dtype=torch.float32, device=dev)
                    engine.gemm("wgrad", qdyt, ctx.qxt, out=dw, stream=stream)
                    dw.mul_(engine.dge(recipe, weight.detach(), stream=stream))
                    if main is None:
                        dw = dw.to(w_dtype)
                elif main is not None:
                    engine.gemm("wgrad", qdyt, ctx.qxt, out=main, c=main, beta=1.0, stream=stream)
                else:
                    dw = torch.empty((plan.out_features, plan.in_features), dtype=w_dtype, device=dev)
                    engine.gemm("wgrad", qdyt, ctx.qxt, out=dw, stream=stream)
        if ctx.seed_step is not None:
            ctx.seed_step.add_(1)  # the end of a captured step: the graph's next replay draws new bits
            ctx.seed_step = None
        if main is not None and dw is not None:  # DGE's dW in FP32, added once (rounded to main_grad's dtype)
            main.add_(dw)
            dw = None
        if main is not None:
            ctx.layer.weight.grad_added_to_main_grad = True
        if dx is not None and ctx.padded != ctx.tokens:
            dx = dx[: ctx.tokens]
        if want_db and db is None:
            # PyTorch reduces 16-bit tensors in FP32 and rounds once: one kernel where the dtypes agree.
            db = dy.sum(0) if dy.dtype == ctx.bias_dtype else dy.sum(0, dtype=torch.float32).to(ctx.bias_dtype)
        ctx.qxt = ctx.qwt = ctx.saved_q = ctx.wbuf = None
        return dx, dw, db, None, None, None, None, None


class Linear(nn.Linear):
    """A drop-in torch.nn.Linear whose three GEMMs run in FP4 as `recipe` says.

    seed: the base of the stochastic-rounding seeds (default: a counter over the layers made in
    this process, so every rank of a job that builds the same model gets the same seeds). The
    seeds of a training step mix (seed, step, tensor); `step` advances after each forward in
    training mode.

    fuse_wgrad_accumulation: the backward adds the weight gradient into `weight.main_grad` (set by
    the caller: a contiguous tensor shaped like the weight, float32 or the weight's dtype, on its
    device, zeroed when an accumulation window starts, as Megatron-LM's optimizers keep it) in the
    wgrad GEMM's epilogue (beta * C with C = main_grad) instead of returning it: no gradient tensor
    of its own, no add pass, and the sum in FP32 where main_grad is float32. DGE recipes (msfp4)
    add dW * f'(W) with one add of their own. autograd then gets no weight gradient
    (weight.grad stays as it was) and `weight.grad_added_to_main_grad` is set to True: for
    frameworks that reduce main_grad themselves; a DDP that reduces .grad needs the option off.

    is_first_microbatch (forward's argument; None there: the layer's attribute of that name, which
    set_first_microbatch sets for a whole model; None by default): W quantized once per optimizer
    step for the micro-batches of gradient accumulation, as Transformer Engine's option of that
    name. True quantizes W (both copies, fprop's and dgrad's, with this step's seed) and keeps them
    in the layer; False reuses them instead of quantizing W (an error if W changed since: PyTorch's
    version counter, which an optimizer step advances, or another tensor; msfp4's OCC compensation
    and DGE still read W itself); None quantizes W every step and keeps nothing. Results equal
    those of quantizing W again where the recipe rounds W to nearest; where it rounds W's copies
    stochastically (tetrajet's W^T) the later micro-batches reuse the first one's draw.

    CUDA graphs (torch.cuda.graph): a captured step replays on the static inputs' current values.
    Where it rounds stochastically, its capture's seeds are bases that the kernels mix with the
    layer's replay counter (on the device; the graph advances it at the end of the step), so
    replay k rounds with fp4jit.mix_seed(seed, k); an eager step of the layer on that device must
    come first (torch.cuda.graph's warm-up), which makes the counter.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, recipe="nvfp4", seed=None,
                 fuse_wgrad_accumulation=False):
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self.recipe = fp4jit.Recipe(recipe)
        self.seed = next(_layer_ids) if seed is None else int(seed)
        self.step = 0
        self.fuse_wgrad_accumulation = bool(fuse_wgrad_accumulation)
        self.is_first_microbatch = None
        self._plans = self._weights = self._replays = None
        _Plan(self.recipe, in_features, out_features)  # fail early on shapes the recipe refuses

    @classmethod
    def from_linear(cls, linear, recipe, seed=None, fuse_wgrad_accumulation=False):
        """An FP4 layer sharing `linear`'s weight and bias Parameters (optimizer state stays)."""
        layer = cls.__new__(cls)
        nn.Module.__init__(layer)
        layer.in_features, layer.out_features = linear.in_features, linear.out_features
        layer.weight = linear.weight
        layer.bias = linear.bias
        layer.recipe = fp4jit.Recipe(recipe)
        layer.seed = next(_layer_ids) if seed is None else int(seed)
        layer.step = 0
        layer.fuse_wgrad_accumulation = bool(fuse_wgrad_accumulation)
        layer.is_first_microbatch = None
        layer._plans = layer._weights = layer._replays = None
        _Plan(layer.recipe, layer.in_features, layer.out_features)
        return layer

    def __getstate__(self):
        """Pickled and deep-copied (torch.save of the module, copy.deepcopy for an EMA or teacher
        model) without its plans, which hold per-process state: the copy makes its own on first
        use. The recipe travels as its text (fp4jit.Recipe.__reduce__)."""
        state = dict(super().__getstate__())
        # The kept W and the replay counter too: device buffers of this process.
        state["_plans"] = state["_weights"] = state["_replays"] = None
        return state

    def _plan(self, device):
        if self._plans is None:
            self._plans = _Plan(self.recipe, self.in_features, self.out_features)
        return self._plans

    def seeds(self, step=None):
        """The stochastic-rounding seeds of X, W and dY at `step` (default: the next step)."""
        step = self.step if step is None else step
        # _mix(seed, step, index) with the (seed, step) prefix mixed once: a step asks for three.
        h = fp4jit.mix_seed(fp4jit.mix_seed(0x9E3779B97F4A7C15, self.seed), step)
        return {role: fp4jit.mix_seed(h, index) for role, index in _ROLE_INDEX.items()}

    def forward(self, x, is_first_microbatch=None):
        shape = x.shape
        if not shape or shape[-1] != self.in_features:
            raise fp4jit.Error(
                "INVALID_ARGUMENT",
                "fp4jit.torch.Linear(%d, %d): input of shape %s, expected [..., %d]"
                % (self.in_features, self.out_features, list(shape), self.in_features),
            )
        flat = len(shape) == 2  # [tokens, in] already: no reshapes (each is a dispatched op)
        x2 = x if flat else x.reshape(-1, shape[-1])
        if not x2.is_contiguous():
            x2 = x2.contiguous()
        weight, bias = self.weight, self.bias  # each a lookup through nn.Module.__getattr__
        grad = torch.is_grad_enabled()
        backward = grad and (x2.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad))
        first = self.is_first_microbatch if is_first_microbatch is None else is_first_microbatch
        if first is None:
            kept = None
            if self._weights is not None:  # nothing kept while the option is off
                self._weights = None
        else:
            kept = _weights_for(self, weight, bool(first))
        seed_step = _graph_seed_step(self, backward, x2.device) if x2.is_cuda else None
        # Seeds only where an operand rounds stochastically (nothing else reads them).
        seeds = self.seeds() if self._plan(None).seeded_step else _NO_SEEDS
        y = _LinearFunction.apply(x2, weight, bias, self, seeds, backward, kept, seed_step)
        if self.training and grad:
            self.step += 1
        return y if flat else y.reshape(*shape[:-1], self.out_features)

    def __setstate__(self, state):
        state.setdefault("fuse_wgrad_accumulation", False)  # layers pickled before the options
        state.setdefault("is_first_microbatch", None)
        state.setdefault("_weights", None)
        super().__setstate__(state)

    def extra_repr(self):
        return "%s, recipe=%s%s" % (super().extra_repr(), self.recipe.text,
                                    ", fuse_wgrad_accumulation=True" if self.fuse_wgrad_accumulation else "")


def _fits(recipe, linear):
    try:
        _Plan(recipe, linear.in_features, linear.out_features)
        return None
    except fp4jit.Error as e:
        if e.status != "INVALID_ARGUMENT":  # the recipe itself, not this layer's shape
            raise
        return str(e)


def convert(model, recipe, keep=None, seed=0, fuse_wgrad_accumulation=False):
    """Swaps the model's torch.nn.Linear layers for fp4jit Linear ones (in place; returns model).

    keep: layers that stay in high precision: an int N (the last N linear layers, in module
    order: e.g. the NVFP4 recipe keeps the last blocks in BF16), a name or glob pattern
    ("lm_head", "layers.11.*"), a list of them, or a callable (name, module) -> bool. Layers whose
    shapes the recipe cannot block (in or out features not a multiple of its block) stay too,
    with a warning. Seeds are seed + the layer's index in module order (equal on every rank).
    fuse_wgrad_accumulation: Linear's option, for every converted layer.
    """
    recipe = fp4jit.Recipe(recipe)
    linears = [(n, m) for n, m in model.named_modules() if type(m) is nn.Linear]
    if keep is None:
        kept = set()
    elif isinstance(keep, int) and not isinstance(keep, bool):
        kept = {n for n, _ in linears[max(0, len(linears) - keep):]} if keep > 0 else set()
    elif callable(keep):
        kept = {n for n, m in linears if keep(n, m)}
    elif isinstance(keep, (str, list, tuple, set)):
        patterns = [keep] if isinstance(keep, str) else list(keep)
        kept = {n for n, _ in linears if any(fnmatch.fnmatchcase(n, p) for p in patterns)}
    else:
        raise TypeError(
            "fp4jit.torch.convert: keep must be an int, a name or glob pattern, a list of them, or a "
            "callable (name, module) -> bool; got %r" % (keep,)
        )
    for index, (name, module) in enumerate(linears):
        if name in kept:
            continue
        problem = _fits(recipe, module)
        if problem is not None:
            warnings.warn("fp4jit.torch.convert: keeping %s in high precision: %s" % (name, problem))
            continue
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, Linear.from_linear(module, recipe, seed=seed + index,
                                                  fuse_wgrad_accumulation=fuse_wgrad_accumulation))
    return model


def set_first_microbatch(model, first):
    """Sets is_first_microbatch (True, False or None) on every fp4jit Linear in `model` (a module,
    itself included): for models whose forward does not pass the argument down. A gradient
    accumulation loop sets True before its first micro-batch and False before the others:

        for i, batch in enumerate(micro_batches):
            fp4jit.torch.set_first_microbatch(model, i == 0)
            loss_fn(model(batch)).backward()
        optimizer.step()

    Returns the number of layers set."""
    if first is not None:
        first = bool(first)
    n = 0
    for module in model.modules():
        if isinstance(module, Linear):
            module.is_first_microbatch = first
            n += 1
    return n


def fake_quantize(x, recipe, role, seed=0, offset=0):
    """The operand `role` of `recipe` quantized from x and dequantized, in the operand's K-major
    layout and transformed domain, float32 (what the FP4 GEMM multiplies): the building block of
    a fake-quantized reference."""
    engine = engine_for(x.device)
    q = engine.quantize(fp4jit.Recipe(recipe) if not isinstance(recipe, fp4jit.Recipe) else recipe, role,
                        x.contiguous(), seed=seed, offset=offset, stream=_stream(x.device))
    return engine.dequantize(q, dtype="float32", stream=_stream(x.device))
