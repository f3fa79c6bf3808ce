#!/usr/bin/env python3
"""Where the time of one FP4 linear layer's forward + backward goes, kernel by kernel.

    FP4JIT_LIBRARY=... PYTHONPATH=python python3 bench/torch_linear_profile.py \\
        --shapes 8192x4096x4096 --recipes bf16,mxfp4,nvfp4

For each shape (TOKENSxOUTxIN) and layer (bf16: torch.nn.Linear; else fp4jit.torch.Linear with
that recipe), after warm-up runs, records --iters forward + backward calls with the PyTorch
profiler and prints, per call: the GPU span (first kernel start to last kernel end), the time
the GPU runs kernels (union of their intervals), the idle gaps between them (host work the GPU
waits for), the host time of each Engine call (under the profiler, which slows the host), and
each kernel's median duration and count; then, without the profiler, the host time to enqueue a
step while the GPU is kept busy. --in-a-row N also profiles N steps enqueued back to back (the
"in a row" figure of torch_linear_bench.py): the GPU's idle time among them and its largest gaps,
with the kernels on either side. --out writes the same as JSON.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import time

import torch

import fp4jit
import fp4jit.torch as fp4
from torch_busy_host import busy_host_us

_host_us = {}


def _timed(name, fn):
    """Wraps an Engine method: its host time per call (perf_counter) and a profiler range."""

    def wrapper(*args, **kwargs):
        # the GEMM's op or the quantized role in the label
        what = name + (" %s" % args[1] if name == "gemm" else " %s" % args[2] if name.startswith("quantize") else "")
        t0 = time.perf_counter()
        with torch.profiler.record_function("fp4jit." + what):
            r = fn(*args, **kwargs)
        _host_us.setdefault(what, []).append((time.perf_counter() - t0) * 1e6)
        return r

    return wrapper


for _name in ("quantize", "quantize_pair", "gemm", "dge", "linear_forward", "linear_backward"):
    setattr(fp4jit.Engine, _name, _timed(_name, getattr(fp4jit.Engine, _name)))


def kernel_events(trace_path):
    with open(trace_path) as f:
        trace = json.load(f)
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")]
    return sorted(events, key=lambda e: e["ts"])


def split_calls(events):
    """The kernels of each call: the calls are separated by a marker (a short sleep kernel
    launched after each call's synchronization), which is left out."""
    out, cur = [], []
    for e in events:
        if "spin_kernel" in e["name"]:
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(e)
    if cur:
        out.append(cur)
    return out


def summarize(call):
    start = call[0]["ts"]
    end = max(e["ts"] + e["dur"] for e in call)
    busy, cur_s, cur_e = 0.0, None, None
    for e in call:
        s, t = e["ts"], e["ts"] + e["dur"]
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, t
        else:
            cur_e = max(cur_e, t)
    busy += cur_e - cur_s
    return end - start, busy


def host_enqueue_us(layer, x, dy, steps=10, rounds=3):
    """Host time of one forward + backward while the GPU is kept busy (a sleep kernel queued
    first, so no launch waits for the GPU): what the host needs to enqueue a step."""
    return busy_host_us(lambda: layer(x).backward(dy), steps, rounds, ms_per_call=5.0)


def profile_layer(layer, x, dy, warmup, iters):
    for _ in range(warmup):
        layer(x).backward(dy)
    torch.cuda.synchronize()
    _host_us.clear()
    host_total = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(iters):
                t0 = time.perf_counter()
                layer(x).backward(dy)
                host_total.append((time.perf_counter() - t0) * 1e6)
                torch.cuda.synchronize()
                torch.cuda._sleep(1000)  # the marker between calls (split_calls)
        prof.export_chrome_trace(path)
        events = kernel_events(path)
    host = {n: {"calls_per_step": len(v) / iters, "median_us": statistics.median(v)} for n, v in _host_us.items()}
    host["forward+backward (enqueue)"] = {"calls_per_step": 1, "median_us": statistics.median(host_total)}
    calls = split_calls(events)
    spans, busies = zip(*(summarize(c) for c in calls))
    per_kernel = {}
    for c in calls:
        for e in c:
            per_kernel.setdefault(e["name"], []).append(e["dur"])
    kernels = sorted(
        ({"name": n, "per_call": len(d) / len(calls), "median_us": statistics.median(d), "total_us_per_call": sum(d) / len(calls)}
         for n, d in per_kernel.items()),
        key=lambda k: -k["total_us_per_call"],
    )
    median_call = sorted(calls, key=lambda c: summarize(c)[0])[len(calls) // 2]
    timeline, prev_end = [], None
    for e in median_call:
        gap = 0.0 if prev_end is None else e["ts"] - prev_end
        timeline.append({"gap_before_us": gap, "us": e["dur"], "name": e["name"]})
        prev_end = e["ts"] + e["dur"] if prev_end is None else max(prev_end, e["ts"] + e["dur"])
    return {"span_us": statistics.median(spans), "busy_us": statistics.median(busies), "kernels": kernels,
            "timeline": timeline, "host": host}


def profile_chain(layer, x, dy, chain, warmup, top=12):
    """`chain` steps enqueued back to back after a synchronization (as torch_linear_bench.py's
    "in a row" figure, gradients dropped before each step), under the profiler: the GPU span from
    the first kernel's start to the last one's end, the time it runs kernels, its idle time, the
    host's time from the chain's first call to its first kernel, and the largest idle gaps with
    the kernels on either side (what the GPU waited for between them)."""
    for _ in range(warmup):
        layer(x).backward(dy)
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as prof:
            torch.cuda.synchronize()
            with torch.profiler.record_function("chain_start"):
                pass
            for _ in range(chain):
                layer.zero_grad(set_to_none=True)
                x.grad = None
                layer(x).backward(dy)
            torch.cuda.synchronize()
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f).get("traceEvents", [])
    events = sorted((e for e in trace if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")),
                    key=lambda e: e["ts"])
    marks = [e for e in trace if e.get("ph") == "X" and e.get("name") == "chain_start"]
    span, busy = summarize(events)
    gaps, prev_end, prev_name = [], None, None
    for e in events:
        if prev_end is not None and e["ts"] > prev_end:
            gaps.append((e["ts"] - prev_end, prev_name, e["name"]))
        if prev_end is None or e["ts"] + e["dur"] > prev_end:
            prev_end, prev_name = e["ts"] + e["dur"], e["name"]
    lead = events[0]["ts"] - marks[0]["ts"] if marks else float("nan")
    return {"steps": chain, "span_us": span, "busy_us": busy, "lead_us": lead,
            "gaps": sorted(gaps, reverse=True)[:top], "gap_count": len(gaps)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x4096x4096")
    ap.add_argument("--recipes", default="bf16,mxfp4,nvfp4")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--timeline", action="store_true", help="print the median call's kernels in order, with the gaps")
    ap.add_argument("--cprofile", action="store_true", help="also run the calls under cProfile: the host's Python and C time by function")
    ap.add_argument("--in-a-row", type=int, default=0, metavar="N",
                    help="also profile N steps enqueued back to back: span, idle, the largest gaps")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("torch_linear_profile: no CUDA device", file=sys.stderr)
        return 2
    results = []
    for shape in args.shapes.split(","):
        tokens, fout, fin = (int(v) for v in shape.split("x"))
        x = torch.randn(tokens, fin, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        dy = torch.randn(tokens, fout, device="cuda", dtype=torch.bfloat16)
        for recipe in args.recipes.split(","):
            if recipe == "bf16":
                layer = torch.nn.Linear(fin, fout, device="cuda", dtype=torch.bfloat16)
            else:
                layer = fp4.Linear(fin, fout, recipe=recipe, device="cuda", dtype=torch.bfloat16)
            r = profile_layer(layer, x, dy, args.warmup, args.iters)
            r.update(shape=shape, layer=recipe, host_enqueue_us=host_enqueue_us(layer, x, dy))
            if args.in_a_row:
                c = profile_chain(layer, x, dy, args.in_a_row, args.warmup)
                r["in_a_row"] = c
                print("%s %s: %d steps in a row: GPU span %.1f us (%.1f a step), kernels busy %.1f, idle %.1f "
                      "in %d gaps; first kernel %.1f us after the chain's start"
                      % (shape, recipe, c["steps"], c["span_us"], c["span_us"] / c["steps"], c["busy_us"],
                         c["span_us"] - c["busy_us"], c["gap_count"], c["lead_us"]))
                for g, before, after in c["gaps"]:
                    print("    gap %7.1f us after %s, before %s" % (g, before[:60], after[:60]))
            results.append(r)
            print("%s %s: GPU span %.1f us, kernels busy %.1f us, idle %.1f us; host enqueue of a step "
                  "(GPU busy, no profiler) %.1f us" % (shape, recipe, r["span_us"], r["busy_us"],
                                                       r["span_us"] - r["busy_us"], r["host_enqueue_us"]))
            for n, h in r["host"].items():
                print("  host %-28s x%-4g %8.1f us median" % (n, h["calls_per_step"], h["median_us"]))
            if args.timeline:
                for t in r["timeline"]:
                    print("    gap %7.1f  run %7.1f  %s" % (t["gap_before_us"], t["us"], t["name"][:90]))
            for k in r["kernels"]:
                print("  %8.1f us  x%-4g %8.1f us median  %s" % (k["total_us_per_call"], k["per_call"], k["median_us"], k["name"][:110]))
            if args.cprofile and recipe != "bf16":
                import cProfile
                import pstats

                pr = cProfile.Profile()
                pr.enable()
                for _ in range(args.iters):
                    layer(x).backward(dy)
                    torch.cuda.synchronize()
                pr.disable()
                pstats.Stats(pr).sort_stats("tottime").print_stats(25)
            del layer
            torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
