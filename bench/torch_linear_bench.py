#!/usr/bin/env python3
"""Forward + backward of one linear layer: torch.nn.Linear in BF16 against fp4jit.torch.Linear
for each recipe (quantizers, the three GEMMs and every recipe step included), on one GPU.

    FP4JIT_LIBRARY=... PYTHONPATH=python python3 bench/torch_linear_bench.py \\
        --shapes 8192x4096x4096,8192x11008x4096,8192x4096x11008 --recipes nvfp4,mxfp4,msfp4

Shapes are TOKENSxOUTxIN. Two figures per layer, both medians of CUDA-event timings on the
current stream after --warmup runs; the ratio is BF16's time over the recipe's (above 1: faster
than BF16):
  step       events around one forward and backward, then a synchronization (--iters times): the
             GPU also waits for the host to enqueue the step's first kernels
  in a row   events around --chain forward + backward steps enqueued back to back, as a training
             loop enqueues its layers (--iters // 4 times), per step: the host runs ahead of the
             GPU unless it needs longer per step than the GPU does; with the SM clock read
             while the chain runs (NVML, where PyTorch can read it)
  graph      (--graph) the step captured once into a CUDA graph (torch.cuda.graph) and replayed,
             events around each replay, then a synchronization (--iters times): the GPU's own
             time for the step, without the host's (recipes that round stochastically replay
             through the per-operation calls, their seeds mixed with the layer's replay
             counter); "-" where the layer refuses the capture
Gradients (--grads): `none` (the default) drops the layer's and the input's gradients before
every step, as a training loop does after `optimizer.zero_grad()` (PyTorch's default
set_to_none=True): autograd then keeps each returned gradient as it is. `accumulate` keeps them,
so every step also adds dX, dW and db into the existing .grad tensors (gradient accumulation over
micro-batches; the same extra kernels for every layer). `main_grad` keeps an FP32 weight.main_grad
per layer that every step adds the weight gradient into, as Megatron-LM's optimizers do: BF16 and
the `<recipe>/hook` rows through a post-accumulate-grad hook (main_grad += weight.grad, then the
gradient freed), the `<recipe>` rows with fp4jit.torch.Linear(fuse_wgrad_accumulation=True).
--keep-weights adds a `<recipe>/kept` row per recipe: W quantized once per optimizer step and
reused by its other micro-batches (fp4jit.torch.Linear's is_first_microbatch): each chain of the
second figure is one optimizer step (its first step quantizes W, the others reuse it), and the
first figure times micro-batches that reuse it.
--out writes the table as JSON.
"""
import argparse
import json
import statistics
import sys

import torch

import fp4jit
import fp4jit.torch as fp4


def drop_grads(layer, x):
    """What `optimizer.zero_grad()` does by default: the next backward's gradients are kept as
    returned instead of being added into the previous ones."""
    layer.zero_grad(set_to_none=True)
    x.grad = None


def add_main_grad(layer, hook):
    """An FP32 weight.main_grad for the layer; hook: the weight gradient added into it by a
    post-accumulate-grad hook (and freed), as a framework does without fused accumulation."""
    w = layer.weight
    w.main_grad = torch.zeros(w.shape, dtype=torch.float32, device=w.device)

    def add_and_free(param):
        param.main_grad.add_(param.grad)
        param.grad = None

    if hook:
        w.register_post_accumulate_grad_hook(add_and_free)
    return layer


def microbatch(layer, first):
    """For a `<recipe>/kept` layer: whether the next step is its optimizer step's first micro-batch."""
    if getattr(layer, "bench_kept", False):
        layer.is_first_microbatch = first


def time_layer(layer, x, dy, warmup, iters, accumulate):
    for i in range(warmup):
        microbatch(layer, i == 0)
        layer(x).backward(dy)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        if not accumulate:
            drop_grads(layer, x)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        layer(x).backward(dy)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _clock_mhz():
    """The SM clock now (NVML through PyTorch), or None where PyTorch cannot read it."""
    try:
        return torch.cuda.clock_rate()
    except Exception:
        return None


def time_chain(layer, x, dy, chain, iters, accumulate):
    """Median per-step time of `chain` steps in a row, and the median SM clock read right after
    each chain's last step was enqueued (the GPU is still running the chain then): sustained
    16-bit GEMMs can lower the clock, which this makes visible."""
    times, clocks = [], []
    for _ in range(max(iters, 1)):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(chain):
            if not accumulate:
                drop_grads(layer, x)
            microbatch(layer, i == 0)
            layer(x).backward(dy)
        end.record()
        clock = _clock_mhz()
        end.synchronize()
        times.append(start.elapsed_time(end) / chain)
        if clock is not None:
            clocks.append(clock)
    return statistics.median(times), (statistics.median(clocks) if clocks else None)


def time_graph(layer, x, dy, warmup, iters):
    """Median time of one replay of the step captured into a CUDA graph (gradients dropped before
    the capture, so the graph writes them into its own buffers), or None where the layer refuses
    the capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph asks
        for _ in range(max(warmup, 1)):
            drop_grads(layer, x)
            layer(x).backward(dy)
    torch.cuda.current_stream().wait_stream(side)
    drop_grads(layer, x)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            layer(x).backward(dy)
    except fp4jit.Error as e:
        if e.status != "UNSUPPORTED":
            raise
        torch.cuda.synchronize()
        return None
    g.replay()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    drop_grads(layer, x)
    del g
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x4096x4096")
    ap.add_argument("--recipes", default="nvfp4,mxfp4,msfp4,tetrajet,ue5m3")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--chain", type=int, default=8, help="steps enqueued back to back per timing of the second figure")
    ap.add_argument("--grads", choices=("none", "accumulate", "main_grad"), default="none",
                    help="none: gradients dropped before each step (optimizer.zero_grad()); accumulate: added up; "
                    "main_grad: the weight gradient added into an FP32 weight.main_grad")
    ap.add_argument("--keep-weights", action="store_true",
                    help="also each recipe with W quantized once per chain of steps (is_first_microbatch)")
    ap.add_argument("--graph", action="store_true",
                    help="also each step replayed from a CUDA graph (with --grads none, without --keep-weights)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.graph and (args.grads != "none" or args.keep_weights):
        ap.error("--graph times steps with gradients dropped (--grads none) and W quantized every step")
    if not torch.cuda.is_available():
        print("torch_linear_bench: no CUDA device", file=sys.stderr)
        return 2
    rows = []
    accumulate = args.grads == "accumulate"
    print("gradients: %s" % {"none": "dropped before each step (optimizer.zero_grad())",
                             "accumulate": "accumulated into .grad every step",
                             "main_grad": "dW added into an FP32 weight.main_grad every step"}[args.grads])
    main_grad = args.grads == "main_grad"
    head = ("shape", "layer", "step ms", "vs bf16", "in a row ms", "vs bf16", "SM MHz")
    print("%-18s %-14s %10s %10s %12s %10s %8s" % head + ("  %10s %10s" % ("graph ms", "vs bf16") if args.graph else ""))
    for shape in args.shapes.split(","):
        tokens, fout, fin = (int(v) for v in shape.split("x"))
        x = torch.randn(tokens, fin, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        dy = torch.randn(tokens, fout, device="cuda", dtype=torch.bfloat16)
        def made(layer, hook):  # with --grads main_grad, its FP32 main_grad (hook: added by a hook)
            return add_main_grad(layer, hook) if main_grad else layer

        layers = [("bf16", made(torch.nn.Linear(fin, fout, device="cuda", dtype=torch.bfloat16), True))]
        for r in (r for r in args.recipes.split(",") if r):
            layers.append((r, made(fp4.Linear(fin, fout, recipe=r, device="cuda", dtype=torch.bfloat16,
                                              fuse_wgrad_accumulation=main_grad), False)))
            if main_grad:
                layers.append((r + "/hook", made(fp4.Linear(fin, fout, recipe=r, device="cuda", dtype=torch.bfloat16),
                                                 True)))
            if args.keep_weights:
                kept = made(fp4.Linear(fin, fout, recipe=r, device="cuda", dtype=torch.bfloat16,
                                       fuse_wgrad_accumulation=main_grad), False)
                kept.bench_kept = True
                layers.append((r + "/kept", kept))
        base = base_chain = base_graph = None
        for name, layer in layers:
            ms = time_layer(layer, x, dy, args.warmup, args.iters, accumulate)
            chain, clock = time_chain(layer, x, dy, args.chain, args.iters // 4, accumulate)
            base = ms if base is None else base
            base_chain = chain if base_chain is None else base_chain
            row = {"shape": shape, "layer": name, "ms": round(ms, 4), "speedup_vs_bf16": round(base / ms, 3),
                   "in_a_row_ms": round(chain, 4), "in_a_row_speedup_vs_bf16": round(base_chain / chain, 3),
                   "in_a_row_sm_clock_mhz": clock}
            line = "%-18s %-14s %10.3f %9.2fx %12.3f %9.2fx %8s" % (shape, name, ms, base / ms, chain, base_chain / chain,
                                                                    "-" if clock is None else "%d" % clock)
            if args.graph:
                graph = time_graph(layer, x, dy, args.warmup, args.iters)
                base_graph = graph if base_graph is None else base_graph
                if graph is None:
                    line += "  %10s %10s" % ("-", "-")
                else:
                    row.update(graph_ms=round(graph, 4), graph_speedup_vs_bf16=round(base_graph / graph, 3))
                    line += "  %10.3f %9.2fx" % (graph, base_graph / graph)
            rows.append(row)
            print(line)
            del layer
        torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "grads": args.grads,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
