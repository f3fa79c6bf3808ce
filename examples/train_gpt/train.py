#!/usr/bin/env python3
"""FP4 training against BF16: one command trains a small LLaMA-style decoder on the Python
standard library's source (bytes) once in BF16 and once per FP4 recipe, with the same seed, data
order and hyper-parameters, and writes

    OUT/losses.csv   every step's training loss and every evaluation's validation loss, per run
    OUT/losses.png   the curves (when matplotlib is installed)
    OUT/table.md     final validation loss, gap to BF16, step time, tokens/s, and the goals
    OUT/runs.json    the same, machine-readable, with the configuration

    python3 examples/train_gpt/train.py --out /tmp/train_gpt                  # one GPU
    torchrun --nproc-per-node 2 examples/train_gpt/train.py --out /tmp/ddp    # DDP over NCCL

Runs: `bf16` (torch.nn.Linear under BF16 autocast), the fp4jit presets (msfp4, tetrajet, nvfp4,
mxfp4, ue5m3: every linear layer but the output head swapped by fp4jit.torch.convert), and `naive`
(every GEMM operand cast to E2M1 with one absmax scale per tensor and round-to-nearest: no
blocks, no stochastic rounding, no transforms; its operands are quantized and dequantized by
fp4jit and multiplied in FP32, since no FP4 GEMM kernel takes per-tensor E2M1 operands).
Without a GPU the same runs go through the host backend (use a small --preset smoke there).
"""

import argparse
import contextlib
import math
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
import report  # noqa: E402
import model as gpt  # noqa: E402

RECIPES = ["bf16", "msfp4", "tetrajet", "nvfp4", "mxfp4", "ue5m3", "naive"]
NAIVE_RECIPE = "mxfp4:block=tensor,scale=fp32,rule=absmax,round=even"
PRESETS = {
    # ~26M parameters, 8192 tokens a step (the GEMMs' M), about a minute a recipe on an H200
    "default": dict(d_model=512, n_layers=8, n_heads=8, d_ff=1408, seq_len=256, batch=32, steps=600),
    # seconds on a CPU: a check that every path runs, not a measurement
    "smoke": dict(d_model=64, n_layers=2, n_heads=2, d_ff=192, seq_len=32, batch=8, steps=6),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="train_gpt_out", help="output folder (default: %(default)s)")
    p.add_argument("--recipes", default=",".join(RECIPES),
                   help="comma-separated runs, in order (default: %(default)s); bf16 first gives the gaps")
    p.add_argument("--run", action="append", default=[], metavar="RECIPE",
                   help="one more run after --recipes, with any recipe text, e.g. 'msfp4:w.dge=off' or "
                        "'msfp4:x.occ=off,xt.occ=off' (an ablation), optionally followed by @PATTERNS: layers "
                        "this run also keeps in BF16 (e.g. 'nvfp4@blocks.7.*', NVFP4's BF16 last block); repeatable")
    p.add_argument("--preset", choices=sorted(PRESETS), default="default", help="model and run size")
    for key in ("d_model", "n_layers", "n_heads", "d_ff", "seq_len", "batch", "steps"):
        p.add_argument("--" + key.replace("_", "-"), type=int, help="overrides the preset's %s" % key)
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (AdamW)")
    p.add_argument("--warmup", type=float, default=0.05, help="warm-up, fraction of the steps")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--micro-batches", type=int, default=1,
                   help="gradient accumulation: each rank's batch in this many parts (a one-GPU run with 2 "
                        "has the numerics of a two-GPU run)")
    p.add_argument("--clip", type=float, default=1.0, help="gradient norm clip")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--eval-every", type=int, default=50, help="steps between validation losses")
    p.add_argument("--eval-batches", type=int, default=8, help="global batches per periodic validation")
    p.add_argument("--final-eval-batches", type=int, default=32, help="global batches of the final one")
    p.add_argument("--keep", default="lm_head", help="layers kept in BF16 (glob patterns, comma-separated)")
    p.add_argument("--corpus", help="folder of .py files (default: this Python's standard library)")
    p.add_argument("--device", help="cuda or cpu (default: cuda when there is a GPU)")
    p.add_argument("--log-every", type=int, default=50)
    args = p.parse_args(argv)
    size = dict(PRESETS[args.preset])
    for key in size:
        if getattr(args, key) is not None:
            size[key] = getattr(args, key)
    args.size = size
    args.recipes = [r.strip() for r in args.recipes.split(",") if r.strip()]
    for r in args.recipes:
        if r not in RECIPES:
            p.error("unknown run %r in --recipes (valid: %s; --run takes any recipe text)" % (r, ", ".join(RECIPES)))
    args.recipes += [r.strip() for r in args.run if r.strip()]
    if not args.recipes:
        p.error("--recipes and --run name no run")
    if args.micro_batches < 1 or size["batch"] % args.micro_batches:
        p.error("--micro-batches %d does not divide the batch %d" % (args.micro_batches, size["batch"]))
    if len(set(args.recipes)) != len(args.recipes):
        p.error("a run is named twice: %s" % ", ".join(args.recipes))
    return args


class Dist:
    """torchrun's environment when there is one, else a single process."""

    def __init__(self, device_arg):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        local = int(os.environ.get("LOCAL_RANK", "0"))
        if device_arg:
            kind = device_arg
        else:
            kind = "cuda" if torch.cuda.is_available() else "cpu"
        if kind == "cuda":
            torch.cuda.set_device(local)
            self.device = torch.device("cuda", local)
        else:
            self.device = torch.device("cpu")
        if self.world > 1:
            # NVLink multicast (NVLS) stays off: see the device notes of this repository's README.
            os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
            dist.init_process_group("nccl" if kind == "cuda" else "gloo", device_id=self.device if kind == "cuda" else None)

    @property
    def main(self):
        return self.rank == 0

    def mean(self, value):
        if self.world == 1:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.item() / self.world

    def close(self):
        if self.world > 1:
            # Every rank reaches the teardown before any tears its connections down: without the
            # barrier a rank whose peer had already left aborted in Gloo's teardown now and then
            # ("terminate called without an active exception", torch 2.15 on the CPU).
            dist.barrier()
            dist.destroy_process_group()


class NaiveFunction(torch.autograd.Function):
    """Y = Q(X) Q(W)^T, dX = Q(dY) Q(W), dW = Q(dY)^T Q(X) with Q the naive per-tensor E2M1 cast
    (fp4jit quantize + dequantize), products in FP32."""

    @staticmethod
    def forward(ctx, x, weight, recipe):
        import fp4jit.torch as fp4

        xq = fp4.fake_quantize(x, recipe, "x")
        wq = fp4.fake_quantize(weight, recipe, "w")
        ctx.save_for_backward(xq, wq)
        ctx.recipe, ctx.x_dtype = recipe, x.dtype
        return (xq @ wq.t()).to(x.dtype)

    @staticmethod
    def backward(ctx, dy):
        import fp4jit.torch as fp4

        xq, wq = ctx.saved_tensors
        dyq = fp4.fake_quantize(dy.contiguous(), ctx.recipe, "dy")
        return (dyq @ wq).to(ctx.x_dtype), (dyq.t() @ xq), None


class NaiveLinear(torch.nn.Module):
    def __init__(self, linear, recipe):
        super().__init__()
        self.weight = linear.weight
        self.recipe = recipe

    def forward(self, x):
        shape = x.shape
        y = NaiveFunction.apply(x.reshape(-1, shape[-1]).contiguous(), self.weight, self.recipe)
        return y.reshape(*shape[:-1], self.weight.shape[0])


def keep_fn(patterns):
    import fnmatch

    pats = [p for p in patterns.split(",") if p]
    return lambda name, module: any(fnmatch.fnmatchcase(name, p) for p in pats)


def to_fp4(net, recipe, keep):
    """Swaps the linear layers for the run's FP4 ones; returns how many were swapped."""
    import fp4jit
    import fp4jit.torch as fp4

    linears = [(n, m) for n, m in net.named_modules() if type(m) is torch.nn.Linear]
    kept = keep_fn(keep)
    if recipe == "naive":
        r = fp4jit.Recipe(NAIVE_RECIPE)
        for name, module in linears:
            if not kept(name, module):
                parent, _, child = name.rpartition(".")
                setattr(net.get_submodule(parent) if parent else net, child, NaiveLinear(module, r))
    else:
        fp4.convert(net, recipe, keep=kept, seed=0)
    return sum(1 for _, m in net.named_modules() if type(m) is not torch.nn.Linear and
               isinstance(m, (torch.nn.Linear, NaiveLinear)))


def lr_at(step, args):
    steps = args.size["steps"]
    warm = max(1, int(args.warmup * steps))
    if step < warm:
        return args.lr * (step + 1) / warm
    progress = (step - warm) / max(1, steps - warm)
    return args.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def batch(array, offsets, seq_len, device):
    w = torch.from_numpy(data.windows(array, offsets, seq_len))
    if device.type == "cuda":
        w = w.pin_memory().to(device, non_blocking=True)
    return w[:, :-1], w[:, 1:]


def evaluate(net, corpus, args, world, n_batches):
    s = args.size
    rng_seed = args.seed ^ 0x5EED
    total = 0.0
    net.eval()
    with torch.no_grad(), torch.autocast(world.device.type, dtype=torch.bfloat16):
        for i in range(n_batches):
            offsets = data.batch_offsets(corpus.val.size, s["seq_len"], s["batch"], rng_seed, i)
            x, y = batch(corpus.val, offsets[data.rank_slice(s["batch"], world.rank, world.world)], s["seq_len"], world.device)
            logits = net(x)
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()
    net.train()
    return world.mean(total / n_batches)


def train_one(recipe, corpus, args, world, rows):
    s = args.size
    cfg = gpt.Config(d_model=s["d_model"], n_layers=s["n_layers"], n_heads=s["n_heads"], d_ff=s["d_ff"],
                     seq_len=s["seq_len"])
    torch.manual_seed(args.seed)  # the same initial weights for every run
    net = gpt.GPT(cfg).to(world.device)
    name, _, extra_keep = recipe.partition("@")
    swapped = 0 if name == "bf16" else to_fp4(net, name, ",".join(k for k in (args.keep, extra_keep) if k))
    params = gpt.count_parameters(net)
    model = net
    if world.world > 1:
        model = torch.nn.parallel.DistributedDataParallel(net, device_ids=[world.device.index] if world.device.type == "cuda" else None)
    decay = [p for p in net.parameters() if p.dim() >= 2]
    no_decay = [p for p in net.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=world.device.type == "cuda")
    tokens_per_step = s["batch"] * s["seq_len"]
    if (s["batch"] // world.world) % args.micro_batches:
        raise ValueError("train_gpt: %d micro-batches do not divide a rank's batch of %d"
                         % (args.micro_batches, s["batch"] // world.world))
    cuda = world.device.type == "cuda"
    step_ms = []
    last_val = None
    t_start = time.perf_counter()
    for step in range(s["steps"]):
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        offsets = data.batch_offsets(corpus.train.size, s["seq_len"], s["batch"], args.seed, step)
        x, y = batch(corpus.train, offsets[data.rank_slice(s["batch"], world.rank, world.world)], s["seq_len"], world.device)
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        else:
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = 0.0
        for i, (xm, ym) in enumerate(zip(x.chunk(args.micro_batches), y.chunk(args.micro_batches))):
            # DDP all-reduces with the last micro-batch's backward only
            sync = world.world == 1 or i == args.micro_batches - 1
            with (contextlib.nullcontext() if sync else model.no_sync()):
                with torch.autocast(world.device.type, dtype=torch.bfloat16):
                    logits = model(xm)
                part = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ym.reshape(-1)) / args.micro_batches
                part.backward()
            loss = loss + part.detach()
        gnorm = torch.nn.utils.clip_grad_norm_(net.parameters(), args.clip)
        opt.step()
        if cuda:
            end.record()
            end.synchronize()
            step_ms.append(start.elapsed_time(end))
        else:
            step_ms.append((time.perf_counter() - t0) * 1e3)
        train_loss = world.mean(loss.item())
        if not math.isfinite(train_loss):
            if world.main:
                print("  %s: training loss is %s at step %d; the run stops here" % (recipe, train_loss, step), flush=True)
            rows.append(dict(run=recipe, step=step, tokens=(step + 1) * tokens_per_step, train_loss=train_loss,
                             val_loss="", lr=lr, step_ms=step_ms[-1]))
            break
        val = ""
        last = step == s["steps"] - 1
        if (step + 1) % args.eval_every == 0 or last:
            val = evaluate(model, corpus, args, world, args.final_eval_batches if last else args.eval_batches)
            last_val = val
        rows.append(dict(run=recipe, step=step, tokens=(step + 1) * tokens_per_step, train_loss=train_loss,
                         val_loss=val, lr=lr, step_ms=step_ms[-1]))
        if world.main and ((step + 1) % args.log_every == 0 or step == 0 or last):
            print("  %-8s step %5d  loss %.4f  %s lr %.2e  |g| %.2f  %.1f ms" % (
                recipe, step + 1, train_loss, ("val %.4f " % val) if val != "" else "", lr, gnorm.item(), step_ms[-1]),
                flush=True)
    wall = time.perf_counter() - t_start
    # Step time: the median over steps after the first 10 (which include the kernels' compiles or
    # cache loads and the allocator's warm-up).
    timed = step_ms[10:] if len(step_ms) > 20 else step_ms
    median_ms = statistics.median(timed) if timed else float("nan")
    return dict(run=recipe, params=params, fp4_layers=swapped, steps=len(step_ms), final_val_loss=last_val,
                final_train_loss=rows[-1]["train_loss"], step_ms=median_ms,
                tokens_per_s=tokens_per_step / (median_ms / 1e3) if median_ms == median_ms else float("nan"),
                first_steps_s=sum(step_ms[:10]) / 1e3, wall_s=wall)


def header(args, world, device, corpus, results):
    s = args.size
    return [
        "# train_gpt: FP4 recipes against BF16",
        "",
        "Device: %s; %d process(es); torch %s." % (device, world.world, torch.__version__),
        "Model: d_model %d, %d layers, %d heads, SwiGLU %d, %.1fM parameters; sequence %d, global batch %d "
        "(%d tokens a step), %d steps, AdamW lr %g (warm-up %d%%, cosine to 10%%), seed %d; kept in BF16: %s."
        % (s["d_model"], s["n_layers"], s["n_heads"], s["d_ff"], max(r["params"] for r in results) / 1e6, s["seq_len"],
           s["batch"], s["batch"] * s["seq_len"], s["steps"], args.lr, round(100 * args.warmup), args.seed,
           args.keep or "nothing"),
        "Corpus: %s." % corpus.describe(),
    ] + (["Gradient accumulation: %d micro-batches a step." % args.micro_batches] if args.micro_batches > 1 else []) + [
        "Naive cast: `%s` (fake-quantized, FP32 products)." % NAIVE_RECIPE,
        "Step time: median of CUDA-event (CPU: wall-clock) times of a whole step (forward, backward, "
        "optimizer), the first 10 steps left out.",
    ]


def main(argv=None):
    args = parse_args(argv)
    world = Dist(args.device)
    corpus = data.Corpus(args.corpus)
    if world.main:
        print("train_gpt: %s; %d process(es) on %s" % (corpus.describe(), world.world, world.device), flush=True)
    for recipe in args.recipes:  # a bad recipe text fails now, not after the runs before it
        name = recipe.partition("@")[0]
        if name not in ("bf16", "naive"):
            import fp4jit

            fp4jit.Recipe(name)
    rows, results, failed = [], [], []
    device = torch.cuda.get_device_name(world.device) if world.device.type == "cuda" else "CPU"
    for recipe in args.recipes:
        if world.main:
            print("run %s" % recipe, flush=True)
        try:
            results.append(train_one(recipe, corpus, args, world, rows))
        except Exception as e:  # noqa: BLE001: one failed run is reported, the others go on
            if world.world > 1:
                raise  # the other ranks would wait for this one forever
            import traceback

            traceback.print_exc()
            failed.append(recipe)
            results.append(dict(run=recipe, params=0, fp4_layers=0, steps=0, final_val_loss=None,
                                final_train_loss=float("nan"), step_ms=float("nan"), tokens_per_s=float("nan"),
                                first_steps_s=0.0, wall_s=0.0, error="%s: %s" % (type(e).__name__, e)))
        if world.device.type == "cuda":
            torch.cuda.empty_cache()
        if world.main:  # after every run: a run cut short still leaves the finished ones
            text = report.write(args.out, header(args, world, device, corpus, results), dict(vars(args), world=world.world, device=device),
                                results, rows)
    if world.main:
        print(text)
    world.close()
    if failed:
        print("train_gpt: runs failed: %s" % ", ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
