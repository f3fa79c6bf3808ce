#!/usr/bin/env python3
"""Host time of fp4jit.torch.Linear's own Python: a forward and backward step with every library
call that would enqueue work replaced by a no-op, so what is left is the layer's Python, PyTorch's
autograd and its allocations. Runs on the CPU (no GPU needed) or on CUDA tensors.

    FP4JIT_LIBRARY=build/libfp4jit.so PYTHONPATH=python python3 bench/torch_python_overhead.py \\
        --recipes mxfp4,nvfp4,msfp4 [--device cpu] [--shape 64x64x64]

Also printed: the same step through an autograd.Function that only allocates its output and
gradients (PyTorch's own floor for a layer written in Python). Medians over --rounds rounds of
--steps steps, microseconds per step. The library calls are stubbed after the layer's first steps
(kernels planned and compiled), so only the steady state is timed; the results are meaningless.
"""
import argparse
import statistics
import sys
import time

import torch

import fp4jit.torch as fp4
from fp4jit import _lib

# The C entry points a step calls that enqueue work (or compute, on the host backend).
_WORK = ("fp4jit_linear_forward", "fp4jit_linear_forward_weights", "fp4jit_linear_backward_bias",
         "fp4jit_linear_backward_accumulate", "fp4jit_linear_backward_weights", "fp4jit_quantize",
         "fp4jit_quantize_pair", "fp4jit_gemm", "fp4jit_dge")


class _Floor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        return torch.empty((x.shape[0], w.shape[0]), dtype=x.dtype, device=x.device)

    @staticmethod
    def backward(ctx, dy):  # gradients shaped like the inputs (set by main), contents unset
        return torch.empty_like(_Floor.x), torch.empty_like(_Floor.w), torch.empty_like(_Floor.b)


def timed(step, sync, rounds, steps):
    for _ in range(20):
        step()
    sync()
    per_round = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        per_round.append((time.perf_counter() - t0) / steps * 1e6)
        sync()
    return statistics.median(per_round)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipes", default="mxfp4,nvfp4,msfp4")
    ap.add_argument("--shape", default="64x64x64", help="TOKENSxOUTxIN")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args(argv)
    tokens, fout, fin = (int(v) for v in args.shape.split("x"))
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    x = torch.randn(tokens, fin, device=device, dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(tokens, fout, device=device, dtype=torch.bfloat16)

    w = torch.nn.Parameter(torch.randn(fout, fin, device=device, dtype=torch.bfloat16))
    b = torch.nn.Parameter(torch.randn(fout, device=device, dtype=torch.bfloat16))
    _Floor.x, _Floor.w, _Floor.b = x, w, b

    def floor_step():
        w.grad = b.grad = x.grad = None
        _Floor.apply(x, w, b).backward(dy)

    print("device %s, shape %s (tokens x out x in), library calls stubbed" % (device, args.shape))
    print("%-10s %8.1f us  (an autograd.Function that only allocates)" % ("floor", timed(floor_step, sync, args.rounds,
                                                                                      args.steps)))
    real = {name: getattr(_lib.lib, name) for name in _WORK}
    for recipe in args.recipes.split(","):
        layer = fp4.Linear(fin, fout, recipe=recipe, device=device, dtype=torch.bfloat16)

        def step():
            layer.zero_grad(set_to_none=True)
            x.grad = None
            layer(x).backward(dy)

        for _ in range(3):  # plans, compiles and loads the kernels
            step()
        sync()
        try:
            for name in _WORK:
                setattr(_lib.lib, name, lambda *a: 0)
            us = timed(step, sync, args.rounds, args.steps)
        finally:
            for name, fn in real.items():
                setattr(_lib.lib, name, fn)
        print("%-10s %8.1f us" % (recipe, us))
    return 0


if __name__ == "__main__":
    sys.exit(main())
