#!/usr/bin/env python3
"""Two builds of the fp4jit CLI, or one build under two settings, timed against each other on
the same GPU in one run.

    python3 bench/gemm_ab.py --old OLD/fp4jit --new NEW/fp4jit --recipes mxfp4,nvfp4 \
        --gemm 8192x4096x4096 --gemm 128x4096x4096 [--op fprop] [--rounds 2] [--iters 40] \
        [--env FP4JIT_SM90_GEMM=staged] [--json out.json]
    python3 bench/gemm_ab.py --old fp4jit --recipes mxfp4 --gemm 8192x4096x4096 \
        --new-env FP4JIT_SM90_GEMM=sg=1,bn=128,ps=5,rg=8m,pp=4,ts=1,sk=1

--env applies to both sides, --old-env and --new-env (repeatable, KEY=VALUE) to one side on top
of it; without --new the new side runs the old build (then its settings must differ).

Each side (a build with its settings) first runs every GEMM once (its kernels compiled, or read
from the cache), then the rounds run both sides back to back, alternating which goes first, so
that clock and thermal drift fall on both. The figure compared is `fp4jit bench gemm`'s
back-to-back median (the GPU kept busy by consecutive calls); the table gives each side's range
over the rounds, the speed-up of the medians (old / new time), and the kernel each side ran
where they differ.
Without a GPU the CLI reports no time and the speed-up column says so.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def bench(binary, recipe, op, shapes, iters, env):
    """One `fp4jit bench gemm` run: {(op, shape): (back-to-back ms, kernel)}."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        cmd = [binary, "bench", "gemm", "--recipe", recipe, "--op", op, "--iters", str(iters),
               "--json", out]
        for s in shapes:
            cmd += ["--gemm", s]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("gemm_ab: %s failed (rc %d):\n%s%s" % (" ".join(cmd), run.returncode,
                                                           run.stdout, run.stderr))
        with open(out) as f:
            results = json.load(f)["results"]
    return {(r["op"], "%dx%dx%d" % (r["m"], r["n"], r["k"])): (r["back_to_back_ms"], r["kernel"])
            for r in results}


def with_pairs(base, pairs, flag):
    """base (an environment) with the KEY=VALUE settings of one option added."""
    out = dict(base)
    for kv in pairs:
        if "=" not in kv:
            sys.exit("gemm_ab: %s takes KEY=VALUE, got %r" % (flag, kv))
        k, v = kv.split("=", 1)
        out[k] = v
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="the fp4jit CLI to compare against")
    ap.add_argument("--new", help="the fp4jit CLI under test (default: --old, with --new-env)")
    ap.add_argument("--recipes", default="mxfp4")
    ap.add_argument("--gemm", action="append", required=True,
                    help="layer shape tokens x out x in (repeatable), as `fp4jit bench gemm`")
    ap.add_argument("--op", default="fprop", choices=("all", "fprop", "dgrad", "wgrad"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for both sides")
    ap.add_argument("--old-env", action="append", default=[], help="KEY=VALUE for the old side")
    ap.add_argument("--new-env", action="append", default=[], help="KEY=VALUE for the new side")
    ap.add_argument("--json", help="write every round's figures here")
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit("gemm_ab: --rounds must be at least 1")
    env = with_pairs(os.environ, a.env, "--env")
    envs = {"old": with_pairs(env, a.old_env, "--old-env"),
            "new": with_pairs(env, a.new_env, "--new-env")}
    if a.new is None:
        a.new = a.old
        if envs["old"] == envs["new"]:
            sys.exit("gemm_ab: without --new, --old-env / --new-env must make the two sides differ")
    builds = {"old": a.old, "new": a.new}
    for name, path in builds.items():
        if not os.access(path, os.X_OK):
            sys.exit("gemm_ab: --%s %s is not an executable file" % (name, path))
    recipes = [r for r in a.recipes.split(",") if r]

    times = {}    # (recipe, op, shape) -> {"old": [ms...], "new": [ms...]}
    kernels = {}  # (recipe, op, shape) -> {"old": text, "new": text}
    for recipe in recipes:
        for name, path in builds.items():  # each side compiles / loads its kernels first
            bench(path, recipe, a.op, a.gemm, 3, envs[name])
        for rnd in range(a.rounds):
            order = ("old", "new") if rnd % 2 == 0 else ("new", "old")
            for name in order:
                for (op, shape), (ms, kernel) in bench(builds[name], recipe, a.op, a.gemm,
                                                       a.iters, envs[name]).items():
                    key = (recipe, op, shape)
                    times.setdefault(key, {"old": [], "new": []})[name].append(ms)
                    kernels.setdefault(key, {})[name] = kernel

    print("%-8s %-6s %-16s %-17s %-17s %s" % ("recipe", "op", "shape", "old ms", "new ms",
                                              "old / new"))
    rows = []
    for key in sorted(times):
        recipe, op, shape = key
        t = times[key]
        span = {n: "%.4f-%.4f" % (min(v), max(v)) for n, v in t.items()}
        mo, mn = statistics.median(t["old"]), statistics.median(t["new"])
        ratio = mo / mn if mn > 0 and mo > 0 else None
        line = "%-8s %-6s %-16s %-17s %-17s %s" % (recipe, op, shape, span["old"], span["new"],
                                                   "%.3fx" % ratio if ratio else "n/a (no time)")
        k = kernels[key]
        if k["old"] != k["new"]:
            line += "   kernels: %s | %s" % (k["old"], k["new"])
        print(line)
        rows.append({"recipe": recipe, "op": op, "shape": shape, "old_ms": t["old"],
                     "new_ms": t["new"], "speedup": ratio, "old_kernel": k["old"],
                     "new_kernel": k["new"]})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"old": a.old, "new": a.new, "rounds": a.rounds, "iters": a.iters,
                       "env": a.env, "old_env": a.old_env, "new_env": a.new_env,
                       "results": rows}, f, indent=1)


if __name__ == "__main__":
    main()
