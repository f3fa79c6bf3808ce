#!/usr/bin/env python3
"""Compares two train_gpt outputs run by run (e.g. one GPU against torchrun on two at the same
global batch): for each run in both, the largest and the mean absolute difference of the
per-step training losses, the same over 20-step moving averages, and the validation losses at
the steps both evaluated. Writes a markdown table to stdout (and --out FILE).

    python3 examples/train_gpt/compare.py /tmp/one_gpu/losses.csv /tmp/two_gpus/losses.csv
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


def moving(x, k=20):
    k = min(k, len(x))
    return np.convolve(x, np.ones(k) / k, mode="valid")


def compare(a_path, b_path):
    a, b = report.read_csv(a_path), report.read_csv(b_path)
    common = [r for r in a if r in b]
    if not common:
        raise SystemExit("compare: %s and %s have no run in common" % (a_path, b_path))
    lines = [
        "Runs of `%s` (A) against `%s` (B):" % (a_path, b_path),
        "",
        "| run | steps | max abs diff, train loss | mean abs diff | max abs diff, 20-step average | "
        "final train loss A / B | val loss A / B (last common evaluation) |",
        "|---|---|---|---|---|---|---|",
    ]
    out = {}
    for run in common:
        sa = {s: (t, v) for s, t, v in a[run]}
        sb = {s: (t, v) for s, t, v in b[run]}
        steps = sorted(set(sa) & set(sb))
        ta = np.array([sa[s][0] for s in steps])
        tb = np.array([sb[s][0] for s in steps])
        d = np.abs(ta - tb)
        dm = np.abs(moving(ta) - moving(tb))
        evals = [s for s in steps if sa[s][1] is not None and sb[s][1] is not None]
        val = "%.4f / %.4f" % (sa[evals[-1]][1], sb[evals[-1]][1]) if evals else ""
        lines.append("| %s | %d | %.4f | %.4f | %.4f | %.4f / %.4f | %s |" % (
            run, len(steps), d.max(), d.mean(), dm.max(), ta[-1], tb[-1], val))
        out[run] = dict(max_abs=float(d.max()), mean_abs=float(d.mean()), max_abs_smoothed=float(dm.max()))
    return "\n".join(lines) + "\n", out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--out")
    args = p.parse_args(argv)
    text, _ = compare(args.a, args.b)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
