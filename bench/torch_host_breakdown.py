#!/usr/bin/env python3
"""Host time of the pieces of one FP4 Linear step, without any profiler.

    FP4JIT_LIBRARY=... PYTHONPATH=python python3 bench/torch_host_breakdown.py \\
        --shape 8192x4096x4096 --recipe mxfp4

Each piece is called --calls times in a row while the GPU is kept busy by a sleep kernel queued
first (so no call waits for the GPU and the launch queue never fills), --rounds times; the
smallest per-call host time over the rounds is printed (microseconds). Pieces: the BF16 layer's
step (torch.nn.Linear forward + backward), the FP4 layer's step, its forward alone, the Engine's
linear_forward / linear_backward called directly with ready buffers, the C functions under them
called through ctypes with ready arguments, an autograd.Function that does nothing, and the
PyTorch calls the layer makes (torch.empty, the bias gradient's sum). --lines adds the time per
source line of the layer's forward, its autograd.Function's bodies and the Engine's linear calls.
"""
import argparse
import sys
import time

import torch

import fp4jit
import fp4jit.torch as fp4
from fp4jit import _arrays, _lib
from torch_busy_host import busy_host_us, sleep_cycles_per_second


def line_times(code, fn, steps):
    """Host time per source line of one function (sys.monitoring, every thread: the backward
    runs on autograd's): from a line's event to the function's next line or return, calls into
    other functions included. The monitoring adds about a microsecond per line."""
    mon = sys.monitoring
    tool = mon.PROFILER_ID
    mon.use_tool_id(tool, "fp4jit-lines")
    last = {}  # thread id -> (line, t)
    totals = {}
    import threading

    def close(now):
        tid = threading.get_ident()
        prev = last.pop(tid, None)
        if prev is not None:
            totals.setdefault(prev[0], []).append(now - prev[1])
        return tid

    def on_line(c, line):
        now = time.perf_counter_ns()
        last[close(now)] = (line, now)

    def on_return(c, offset, value):
        close(time.perf_counter_ns())

    mon.register_callback(tool, mon.events.LINE, on_line)
    mon.register_callback(tool, mon.events.PY_RETURN, on_return)
    mon.set_local_events(tool, code, mon.events.LINE | mon.events.PY_RETURN)
    try:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    finally:
        mon.set_local_events(tool, code, 0)
        mon.free_tool_id(tool)
    import linecache

    print("  lines of %s (%s:%d), us per step:" % (code.co_name, code.co_filename.split("/")[-1], code.co_firstlineno))
    per_step = {line: sum(v) / 1e3 / steps for line, v in totals.items()}
    total = sum(per_step.values())
    for line in sorted(per_step, key=per_step.get, reverse=True)[:12]:
        text = linecache.getline(code.co_filename, line).strip()
        print("    %7.1f  %4d  %s" % (per_step[line], line, text[:90]))
    print("    %7.1f  total" % total)


class _Null(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        return x

    @staticmethod
    def backward(ctx, dy):
        return dy, None


class _Ready(torch.autograd.Function):
    """Shaped like the FP4 layer's Function (x, weight, bias, layer, seeds, flag -> y), its
    gradients made ahead: PyTorch's cost of such a Function and of accumulating three gradients."""

    @staticmethod
    def forward(ctx, x, w, b, grads, seeds, flag):
        ctx.grads = grads
        return grads[3]

    @staticmethod
    def backward(ctx, dy):
        g = ctx.grads
        return g[0], g[1], g[2], None, None, None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="8192x4096x4096", help="TOKENSxOUTxIN")
    ap.add_argument("--recipe", default="mxfp4")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lines", action="store_true", help="also the host time per source line of the layer's functions (Python 3.12+)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("torch_host_breakdown: no CUDA device", file=sys.stderr)
        return 2
    tokens, fout, fin = (int(v) for v in args.shape.split("x"))
    dev, bf16 = "cuda", torch.bfloat16
    x = torch.randn(tokens, fin, device=dev, dtype=bf16, requires_grad=True)
    dy = torch.randn(tokens, fout, device=dev, dtype=bf16)
    ref = torch.nn.Linear(fin, fout, device=dev, dtype=bf16)
    layer = fp4.Linear(fin, fout, recipe=args.recipe, device=dev, dtype=bf16)
    engine = fp4.engine_for(x.device)
    recipe = layer.recipe
    sizes = engine.linear_buffers(recipe, tokens, fin, fout)
    saved = torch.empty(sizes.saved_bytes, dtype=torch.uint8, device=dev)
    fwd = torch.empty(sizes.forward_scratch_bytes, dtype=torch.uint8, device=dev)
    bwd = torch.empty(sizes.backward_scratch_bytes, dtype=torch.uint8, device=dev)
    y = torch.empty(tokens, fout, device=dev, dtype=bf16)
    dx = torch.empty(tokens, fin, device=dev, dtype=bf16)
    dw = torch.empty(fout, fin, device=dev, dtype=bf16)
    xd, w, b = x.detach(), layer.weight.detach(), layer.bias.detach()
    stream = torch.cuda.current_stream().cuda_stream
    views = [_arrays.view(t, "t") for t in (xd, w, b, y, dy, dx, dw)]
    vx, vw, vb, vy, vdy, vdx, vdw = views

    def c_forward():
        _lib.check(_lib.lib.fp4jit_linear_forward(
            engine._handle, recipe._handle, vx.ref(), vw.ref(), vb.ref(), vy.ref(), 1, 2,
            saved.data_ptr(), fwd.data_ptr(), stream))

    def c_backward():
        _lib.check(_lib.lib.fp4jit_linear_backward(
            engine._handle, recipe._handle, fin, vdy.ref(), saved.data_ptr(), bwd.data_ptr(),
            vdx.ref(), vdw.ref(), 3, stream))

    xn = torch.randn(tokens, fin, device=dev, dtype=bf16, requires_grad=True)
    ready = (torch.empty_like(xd), torch.empty_like(w), torch.empty_like(b), torch.empty_like(y))
    pieces = [
        ("bf16 step (torch.nn.Linear forward + backward)", lambda: ref(x).backward(dy)),
        ("fp4 step (fp4jit.torch.Linear forward + backward)", lambda: layer(x).backward(dy)),
        ("fp4 forward, no grad", lambda: torch.no_grad()(layer)(x)),
        ("fp4 forward with grad (graph kept for a backward)", lambda: layer(x)),
        ("bf16 forward with grad", lambda: ref(x)),
        ("bf16 forward, no grad", lambda: torch.no_grad()(ref)(x)),
        ("Engine.linear_forward (ready buffers)", lambda: engine.linear_forward(
            recipe, xd, w, y, bias=b, seed_x=1, seed_w=2, saved=saved, scratch=fwd, stream=stream)),
        ("Engine.linear_backward (ready buffers)", lambda: engine.linear_backward(
            recipe, fin, dy, saved, bwd, dx=dx, dw=dw, seed_dy=3, stream=stream)),
        ("C fp4jit_linear_forward through ctypes", c_forward),
        ("C fp4jit_linear_backward through ctypes", c_backward),
        ("_arrays.view of one tensor", lambda: _arrays.view(xd, "x")),
        ("autograd.Function doing nothing, forward + backward", lambda: _Null.apply(xn, w).backward(dy[:, :fin] if fout >= fin else None)),
        ("autograd.Function with ready gradients for x, W, b", lambda: _Ready.apply(
            x, layer.weight, layer.bias, ready, {"x": 1}, True).backward(dy)),
        ("torch.empty (saved buffer's size)", lambda: torch.empty(sizes.saved_bytes, dtype=torch.uint8, device=dev)),
        ("dy.sum(0) (the bias gradient)", lambda: dy.sum(0)),
        ("layer.seeds()", layer.seeds),
    ]
    cps = sleep_cycles_per_second()
    print("%s %s, %s, torch %s" % (args.recipe, args.shape, torch.cuda.get_device_name(), torch.__version__))
    for name, fn in pieces:
        try:
            us = busy_host_us(fn, args.calls, args.rounds, cycles_per_s=cps)
            print("  %-56s %8.1f us" % (name, us))
        except Exception as e:  # a piece that does not apply (e.g. shapes) is named, not fatal
            print("  %-56s failed: %s" % (name, e))

    # The FP4 step once more with the bodies of the layer's autograd.Function timed inside: what
    # is left is PyTorch's autograd machinery around them.
    spent = {"forward body": [], "backward body": []}

    def timed(name, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            r = fn(*a, **k)
            spent[name].append((time.perf_counter() - t0) * 1e6)
            return r

        return staticmethod(wrapper)

    f = fp4._LinearFunction
    original = f.forward, f.backward
    f.forward = timed("forward body", original[0])
    f.backward = timed("backward body", original[1])
    try:
        step = busy_host_us(lambda: layer(x).backward(dy), args.calls, args.rounds, cycles_per_s=cps)
    finally:
        f.forward, f.backward = staticmethod(original[0]), staticmethod(original[1])
    print("  fp4 step with its Function's bodies timed: %.1f us a step, of which" % step)
    for name, v in spent.items():
        v = sorted(v)
        print("    %-20s %8.1f us (median of %d)" % (name, v[len(v) // 2], len(v)))
    if args.lines:
        for code in (fp4.Linear.forward.__code__, f.forward.__code__, f.backward.__code__,
                     fp4jit.Engine.linear_forward.__code__, fp4jit.Engine.linear_backward.__code__):
            line_times(code, lambda: layer(x).backward(dy), args.calls * args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
