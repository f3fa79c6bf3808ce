#!/usr/bin/env python3
"""An fp4jit fprop GEMM and cuBLASLt's FP8 per-tensor GEMM (torch._scaled_mm) on the same shape,
each timed two ways in one process: back to back (--reps calls enqueued in a row from Python) and
replayed from a CUDA graph holding the same --reps calls, so the second figure is the GPU's time
without the host's. At small M both libraries' calls are short enough for the host's enqueueing
to bound the first figure.

    FP4JIT_LIBRARY=... PYTHONPATH=python python3 bench/torch_gemm_graph.py \\
        --recipes mxfp4,nvfp4 --shapes 128x4096x4096,128x13824x5120

Shapes are MxNxK; operands random normal BF16, quantized once; output BF16. Figures: medians of
CUDA-event timings over --iters rounds, per call, and TFLOP/s; the ratio is cuBLASLt's time over
fp4jit's (above 1: fp4jit faster).
"""
import argparse
import json
import statistics
import sys

import torch

import fp4jit.torch as fp4


def per_call(fn, reps, iters):
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    return statistics.median(times)


def both_ways(call, reps, iters):
    """(back to back ms, graph ms) per call, and whether the graph's result equals the eager one."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            out = call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    eager = out.clone()
    b2b = per_call(lambda: [call() for _ in range(reps)], reps, iters)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            out = call()
    g.replay()
    torch.cuda.synchronize()
    same = torch.equal(out, eager)
    graphed = per_call(g.replay, reps, iters)
    return b2b, graphed, same


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="128x4096x4096,128x11008x4096,128x4096x11008,128x13824x5120")
    ap.add_argument("--recipes", default="mxfp4,nvfp4")
    ap.add_argument("--reps", type=int, default=50, help="calls per timing (and per graph)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("torch_gemm_graph: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda", torch.cuda.current_device())
    engine = fp4.engine_for(dev)
    rows = []
    print("%-16s %-8s %12s %12s %12s %12s %9s %9s" % ("shape", "library", "b2b ms", "b2b TF/s", "graph ms",
                                                      "graph TF/s", "b2b x", "graph x"))
    for shape in args.shapes.split(","):
        m, n, k = (int(v) for v in shape.split("x"))
        torch.manual_seed(0)
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        tflop = 2.0 * m * n * k / 1e9
        a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev)
        fp8 = both_ways(lambda: torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                        args.reps, args.iters)
        print("%-16s %-8s %12.4f %12.1f %12.4f %12.1f" % (shape, "fp8", fp8[0], tflop / fp8[0], fp8[1],
                                                          tflop / fp8[1]))
        rows.append({"shape": shape, "library": "cublaslt_fp8_tensor", "b2b_ms": fp8[0], "graph_ms": fp8[1]})
        for recipe in args.recipes.split(","):
            qa, qw = engine.quantize(recipe, "x", a), engine.quantize(recipe, "w", w)
            out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            ours = both_ways(lambda: engine.gemm("fprop", qa, qw, out=out, dtype="bfloat16"), args.reps, args.iters)
            print("%-16s %-8s %12.4f %12.1f %12.4f %12.1f %8.2fx %8.2fx%s"
                  % (shape, recipe, ours[0], tflop / ours[0], ours[1], tflop / ours[1], fp8[0] / ours[0],
                     fp8[1] / ours[1], "" if ours[2] else "  (graph result differs from eager!)"))
            rows.append({"shape": shape, "library": recipe, "b2b_ms": ours[0], "graph_ms": ours[1],
                         "b2b_vs_fp8": fp8[0] / ours[0], "graph_vs_fp8": fp8[1] / ours[1], "graph_equals_eager": ours[2]})
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
