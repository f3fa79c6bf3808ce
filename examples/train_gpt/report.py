"""What examples/train_gpt writes: the loss CSV, the table with the goals read off the results,
runs.json and the plot. Needs no PyTorch (matplotlib only for the plot, optional)."""

import csv
import json
import math
import os
import sys

import numpy as np

CSV_FIELDS = ["run", "step", "tokens", "train_loss", "val_loss", "lr", "step_ms"]


def _finite(v):
    return isinstance(v, float) and math.isfinite(v)


def goals(results):
    """The goals of FP4 training against BF16, read off the runs' final validation losses:
    a list of (text, met) with met True, False, or None where it cannot be judged (no BF16 run
    finished). A run that diverged meets none of its goals."""
    by = {r["run"]: r for r in results}

    def val(name):
        v = by[name]["final_val_loss"]
        return v if _finite(v) else None

    out = []
    base = val("bf16") if "bf16" in by else None
    for name in ("nvfp4", "msfp4"):  # the preset, and the preset with more layers kept (name@...)
        for r in results:
            if r["run"] == name or r["run"].startswith(name + "@"):
                if "bf16" in by:
                    v = val(r["run"])
                    out.append(("%s within 1.5%% of BF16's validation loss" % r["run"],
                                None if base is None else (v is not None and (v - base) / base <= 0.015)))
    if "naive" in by:
        naive = val("naive")
        for r in results:
            if r["run"] not in ("bf16", "naive"):
                v = val(r["run"])
                out.append(("%s below the naive cast" % r["run"], v is not None and (naive is None or v < naive)))
    if "nvfp4" in by and "mxfp4" in by:
        a, b = val("nvfp4"), val("mxfp4")
        out.append(("nvfp4 at or below mxfp4", a is not None and (b is None or a <= b)))
    return out


def table(results):
    """The markdown table: one row a run, gaps relative to the bf16 run when there is one."""
    base = next((r["final_val_loss"] for r in results if r["run"] == "bf16"), None)
    lines = [
        "| run | final val loss | gap to BF16 | final train loss | step ms (median) | tokens/s | FP4 layers |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        v = r["final_val_loss"]
        gap = "%+.2f %%" % (100 * (v - base) / base) if _finite(v) and _finite(base) else ""
        train = r["final_train_loss"]
        if r.get("error"):
            lines.append("| %s | failed: %s | | | | | |" % (r["run"], r["error"].replace("|", "/")[:300]))
            continue
        lines.append("| %s | %s | %s | %s | %.1f | %.0f | %d |" % (
            r["run"], "%.4f" % v if _finite(v) else "diverged", gap, "%.4f" % train if _finite(train) else str(train),
            r["step_ms"], r["tokens_per_s"], r["fp4_layers"]))
    return lines


def write(out, header, config, results, rows):
    """Writes losses.csv, table.md, runs.json and losses.png into out; returns table.md's text."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "losses.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(rows)
    verdicts = goals(results)
    text = "\n".join(
        header + [""] + table(results) + ["", "Goals:"] +
        ["- %s: %s" % (t, {True: "yes", False: "NO", None: "not judged (no BF16 result)"}[ok]) for t, ok in verdicts]
    ) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "runs.json"), "w") as f:
        json.dump(dict(config=config, header=header, results=results,
                       goals=[dict(goal=t, met=ok) for t, ok in verdicts]), f, indent=1, default=str)
    plot(os.path.join(out, "losses.png"), rows, [r["run"] for r in results])
    return text


def read_csv(path):
    """losses.csv back as {run: [(step, train_loss, val_loss or None)]}."""
    runs = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            val = float(row["val_loss"]) if row["val_loss"] not in ("", None) else None
            runs.setdefault(row["run"], []).append((int(row["step"]), float(row["train_loss"]), val))
    return runs


def plot(path, rows, runs):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no %s" % os.path.basename(path), file=sys.stderr)
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    finite = []
    for run in runs:
        mine = [row for row in rows if row["run"] == run]
        if not mine:
            continue
        steps = np.array([row["step"] + 1 for row in mine])
        loss = np.array([row["train_loss"] for row in mine], dtype=float)
        finite += [v for v in loss if math.isfinite(v)]
        k = min(20, len(loss))
        smooth = np.convolve(loss, np.ones(k) / k, mode="valid")
        vals = [row["val_loss"] for row in mine if row["val_loss"] != ""]
        label = "%s (val %.3f)" % (run, vals[-1]) if vals and _finite(vals[-1]) else run
        (line,) = ax1.plot(steps[k - 1:], smooth, label=label, lw=1.2)
        ev = [(row["step"] + 1, row["val_loss"]) for row in mine if row["val_loss"] != ""]
        if ev:
            ax2.plot(*zip(*ev), marker="o", ms=3, label=label, color=line.get_color())
    ax1.set(title="training loss (moving average of 20 steps; off-scale runs still in the legend)", xlabel="step", ylabel="cross-entropy (nats/byte)")
    ax2.set(title="validation loss", xlabel="step")
    for ax in (ax1, ax2):
        if finite:
            ax.set_ylim(min(finite) - 0.1, min(finite) + 1.5)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
