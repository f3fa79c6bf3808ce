"""examples/train_gpt: its corpus split, data order across ranks, goal verdicts and outputs (NumPy
only), and, where PyTorch is installed, a short run of every recipe on the CPU (host backend)
with its CSV and table checked.

    FP4JIT_LIBRARY=build/libfp4jit.so PYTHONPATH=python python3 tests/python/test_train_gpt.py -v
"""

import importlib.util
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "train_gpt")
sys.path.insert(0, EXAMPLE)
import compare  # noqa: E402
import data  # noqa: E402
import report  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


class Corpus(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.files = {"pkg/m%02d.py" % i: "x = %d\n" % i * (i + 5) for i in range(60)}
        self.files["site-packages/skip.py"] = "never = 1\n"
        self.files["notes.txt"] = "not python\n"
        write_tree(self.root, self.files)

    def tearDown(self):
        self.tmp.cleanup()

    def test_split_is_by_path_disjoint_and_complete(self):
        c = data.Corpus(self.root)
        sources = {k: v for k, v in self.files.items() if k.startswith("pkg/")}
        val = {k for k in sources if data.is_validation(k)}
        self.assertTrue(0 < len(val) < len(sources), "the test tree must have files on both sides")
        self.assertEqual(c.files, len(sources))
        train_text, val_text = c.train.tobytes(), c.val.tobytes()
        for k, text in sources.items():
            blob = text.encode() + data.SEPARATOR
            self.assertEqual((blob in val_text), k in val, k)
        self.assertEqual(len(train_text) + len(val_text),
                         sum(len(t) + len(data.SEPARATOR) for t in sources.values()))
        self.assertNotIn(b"never", train_text + val_text)
        self.assertNotIn(b"not python", train_text + val_text)

    def test_same_tree_same_hash_and_bytes(self):
        a, b = data.Corpus(self.root), data.Corpus(self.root)
        self.assertEqual(a.sha256, b.sha256)
        np.testing.assert_array_equal(a.train, b.train)
        write_tree(self.root, {"pkg/m00.py": "changed = 1\n"})
        self.assertNotEqual(data.Corpus(self.root).sha256, a.sha256)

    def test_empty_folder_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaisesRegex(RuntimeError, "no .py files"):
                data.Corpus(empty)


class Batches(unittest.TestCase):
    def test_offsets_depend_on_seed_and_step_only(self):
        a = data.batch_offsets(10000, 64, 16, seed=7, step=3)
        np.testing.assert_array_equal(a, data.batch_offsets(10000, 64, 16, seed=7, step=3))
        self.assertFalse(np.array_equal(a, data.batch_offsets(10000, 64, 16, seed=7, step=4)))
        self.assertFalse(np.array_equal(a, data.batch_offsets(10000, 64, 16, seed=8, step=3)))
        self.assertTrue(((a >= 0) & (a + 65 <= 10000)).all())

    def test_ranks_split_the_one_gpu_batch(self):
        offsets = data.batch_offsets(5000, 32, 12, seed=1, step=0)
        for world in (1, 2, 3, 4):
            parts = [offsets[data.rank_slice(12, r, world)] for r in range(world)]
            np.testing.assert_array_equal(np.concatenate(parts), offsets)
        with self.assertRaisesRegex(ValueError, "not divisible"):
            data.rank_slice(12, 0, 5)

    def test_windows_are_inputs_and_shifted_targets(self):
        arr = np.arange(100, dtype=np.uint8)
        w = data.windows(arr, np.array([3, 50]), 8)
        self.assertEqual(w.shape, (2, 9))
        np.testing.assert_array_equal(w[0], np.arange(3, 12))
        np.testing.assert_array_equal(w[1, 1:], w[1, :-1] + 1)


def result(run, val, train=None, ms=10.0):
    return dict(run=run, final_val_loss=val, final_train_loss=val if train is None else train, step_ms=ms,
                tokens_per_s=8192 / ms * 1e3, fp4_layers=0 if run == "bf16" else 32, params=1)


class Goals(unittest.TestCase):
    def verdicts(self, results):
        return dict(report.goals(results))

    def test_all_met(self):
        v = self.verdicts([result("bf16", 1.00), result("nvfp4", 1.01), result("msfp4", 1.014),
                           result("mxfp4", 1.02), result("naive", 1.5)])
        self.assertEqual(v, {
            "nvfp4 within 1.5% of BF16's validation loss": True,
            "msfp4 within 1.5% of BF16's validation loss": True,
            "nvfp4 below the naive cast": True, "msfp4 below the naive cast": True, "mxfp4 below the naive cast": True,
            "nvfp4 at or below mxfp4": True})

    def test_each_failure_is_seen(self):
        v = self.verdicts([result("bf16", 1.00), result("nvfp4", 1.03), result("msfp4", 1.016),
                           result("mxfp4", 1.02), result("naive", 1.02)])
        self.assertFalse(v["nvfp4 within 1.5% of BF16's validation loss"])
        self.assertFalse(v["msfp4 within 1.5% of BF16's validation loss"])
        self.assertFalse(v["nvfp4 at or below mxfp4"])
        self.assertFalse(v["mxfp4 below the naive cast"])  # equal is not below
        self.assertFalse(v["nvfp4 below the naive cast"])

    def test_runs_with_more_layers_kept_are_judged_too(self):
        v = self.verdicts([result("bf16", 1.00), result("nvfp4", 1.03), result("nvfp4@blocks.7.*", 1.012),
                           result("nvfp4x", 1.0)])
        self.assertEqual(v, {"nvfp4 within 1.5% of BF16's validation loss": False,
                             "nvfp4@blocks.7.* within 1.5% of BF16's validation loss": True})

    def test_divergence(self):
        v = self.verdicts([result("bf16", 1.0), result("nvfp4", float("nan"), train=float("nan")),
                           result("naive", None, train=float("inf"))])
        self.assertFalse(v["nvfp4 within 1.5% of BF16's validation loss"])
        self.assertFalse(v["nvfp4 below the naive cast"])
        v = self.verdicts([result("bf16", None), result("nvfp4", 1.0)])
        self.assertIsNone(v["nvfp4 within 1.5% of BF16's validation loss"])

    def test_table_and_files(self):
        results = [result("bf16", 2.0), result("nvfp4", 2.02), result("naive", None, train=float("nan"))]
        rows = [dict(run=r["run"], step=s, tokens=(s + 1) * 8192, train_loss=3.0 - 0.01 * s,
                     val_loss=2.5 if s == 24 else "", lr=1e-3, step_ms=10.0) for r in results for s in range(25)]
        with tempfile.TemporaryDirectory() as out:
            text = report.write(out, ["# t"], {"steps": 25}, results, rows)
            self.assertIn("| nvfp4 | 2.0200 | +1.00 % |", text)
            self.assertIn("| naive | diverged |", text)
            self.assertIn("- nvfp4 within 1.5% of BF16's validation loss: yes", text)
            back = report.read_csv(os.path.join(out, "losses.csv"))
            self.assertEqual(sorted(back), ["bf16", "naive", "nvfp4"])
            self.assertEqual(len(back["nvfp4"]), 25)
            self.assertAlmostEqual(back["nvfp4"][24][2], 2.5)
            self.assertIsNone(back["nvfp4"][0][2])
            for name in ("table.md", "runs.json"):
                self.assertTrue(os.path.getsize(os.path.join(out, name)) > 0)


class Compare(unittest.TestCase):
    def test_differences(self):
        def rows(run, losses, vals):
            return [dict(run=run, step=i, tokens=i, train_loss=l, val_loss=vals.get(i, ""), lr=0, step_ms=1)
                    for i, l in enumerate(losses)]

        with tempfile.TemporaryDirectory() as out:
            a, b = os.path.join(out, "a"), os.path.join(out, "b")
            base = [3.0 - 0.01 * i for i in range(40)]
            report.write(a, ["a"], {}, [result("nvfp4", 2.6)], rows("nvfp4", base, {39: 2.6}))
            shifted = list(base)
            shifted[10] += 0.05
            report.write(b, ["b"], {}, [result("nvfp4", 2.61), result("bf16", 2.5)],
                         rows("nvfp4", shifted, {39: 2.61}) + rows("bf16", base, {}))
            text, numbers = compare.compare(os.path.join(a, "losses.csv"), os.path.join(b, "losses.csv"))
            self.assertEqual(list(numbers), ["nvfp4"])
            self.assertAlmostEqual(numbers["nvfp4"]["max_abs"], 0.05, places=6)
            self.assertAlmostEqual(numbers["nvfp4"]["mean_abs"], 0.05 / 40, places=6)
            self.assertAlmostEqual(numbers["nvfp4"]["max_abs_smoothed"], 0.05 / 20, places=6)
            self.assertIn("2.6000 / 2.6100", text)


@unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed")
class Causality(unittest.TestCase):
    """The decoder's logits at position t must not depend on tokens after t, with every recipe
    whose quantizers see one token at a time (mxfp4, msfp4, tetrajet: blocks along K within a
    token; nvfp4 and ue5m3 also share one amax over the whole tensor, so a later token can move
    every scale: not checked here)."""

    def test_later_tokens_do_not_change_earlier_logits(self):
        import torch

        import fp4jit.torch as fp4
        import model as gpt

        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
        for device in devices:
            for recipe in ("bf16", "mxfp4", "msfp4", "tetrajet"):
                with self.subTest(device=device, recipe=recipe):
                    torch.manual_seed(0)
                    cfg = gpt.Config(d_model=128, n_layers=2, n_heads=2, d_ff=256, seq_len=64)
                    net = gpt.GPT(cfg).to(device)
                    if recipe != "bf16":
                        fp4.convert(net, recipe, keep="lm_head")
                    x = torch.randint(0, 256, (8, 64), device=device)
                    x2 = x.clone()
                    x2[:, 40:] = torch.randint(0, 256, (8, 24), device=device)
                    for training in (True, False):
                        net.train(training)
                        with torch.set_grad_enabled(training), torch.autocast(device, dtype=torch.bfloat16):
                            a, b = net(x).detach(), net(x2).detach()
                        self.assertTrue(torch.equal(a[:, :40], b[:, :40]),
                                        "%s %s training=%s: logits before position 40 changed by %.3g" % (
                                            device, recipe, training, (a[:, :40] - b[:, :40]).abs().max().item()))
                        self.assertFalse(torch.equal(a[:, 40:], b[:, 40:]))


@unittest.skipUnless(HAVE_TORCH, "PyTorch is not installed")
class SmokeRun(unittest.TestCase):
    """Every run of the example, a few steps on the CPU through the host backend."""

    def test_every_recipe_trains(self):
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, os.path.join(EXAMPLE, "train.py"), "--preset", "smoke", "--device", "cpu",
                   "--steps", "3", "--eval-every", "2", "--eval-batches", "1", "--final-eval-batches", "1",
                   "--out", out]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            self.assertEqual(proc.returncode, 0, proc.stdout[-3000:] + proc.stderr[-3000:])
            runs = report.read_csv(os.path.join(out, "losses.csv"))
            self.assertEqual(set(runs), {"bf16", "msfp4", "tetrajet", "nvfp4", "mxfp4", "ue5m3", "naive"})
            for run, points in runs.items():
                self.assertEqual([p[0] for p in points], [0, 1, 2], run)
                self.assertTrue(all(math.isfinite(p[1]) and 4.0 < p[1] < 7.0 for p in points), (run, points))
                self.assertIsNotNone(points[1][2], run)  # evaluated at step 2 and at the end
                self.assertIsNotNone(points[2][2], run)
            with open(os.path.join(out, "table.md")) as f:
                table = f.read()
            for run in runs:
                self.assertRegex(table, r"\| %s \| \d\.\d{4} \|" % run)
            self.assertIn("Goals:", table)

    def test_two_processes_match_two_micro_batches(self):
        """DistributedDataParallel (torchrun, gloo on the CPU) over 2 ranks against one process
        accumulating 2 micro-batches: the same global batch, split the same way."""
        common = ["--preset", "smoke", "--device", "cpu", "--steps", "4", "--eval-every", "4", "--eval-batches", "1",
                  "--final-eval-batches", "1", "--recipes", "bf16,mxfp4"]
        with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
            script = os.path.join(EXAMPLE, "train.py")
            proc = subprocess.run([sys.executable, script, "--micro-batches", "2", "--out", one] + common,
                                  capture_output=True, text=True, timeout=600)
            self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
            proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                                   script, "--out", two] + common, capture_output=True, text=True, timeout=600)
            self.assertEqual(proc.returncode, 0, proc.stdout[-3000:] + proc.stderr[-3000:])
            text, numbers = compare.compare(os.path.join(one, "losses.csv"), os.path.join(two, "losses.csv"))
            self.assertEqual(sorted(numbers), ["bf16", "mxfp4"])
            for run, n in numbers.items():
                self.assertLess(n["max_abs"], 1e-4, text)


if __name__ == "__main__":
    unittest.main()
