"""The fp4jit Python package on NumPy arrays: the host backend against the reference backend byte
for byte, the packed layout against an independent NumPy decoder, the CLI's files against the
package's arrays, GEMM and DGE, DLPack input, and errors that name what is wrong.

Run: FP4JIT_LIBRARY=build/libfp4jit.so PYTHONPATH=python python3 -m unittest tests/python/test_fp4jit.py
(FP4JIT_CLI=build/fp4jit adds the CLI comparison.)
"""

import os
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    print("numpy missing: skipped")
    sys.exit(77)

import fp4jit

try:
    import ml_dtypes
except ImportError:  # bfloat16 cases are skipped
    ml_dtypes = None

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float64)

HOST = fp4jit.Engine("host", use_cache=False)
REF = fp4jit.Engine("reference")


def sample(rows, cols, seed=0, outliers=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    if outliers:
        x.flat[:: 37] *= 20.0
    return x


def unpack(codes, cols):
    """E2M1 codes [rows, cols / 2] -> nibbles [rows, cols]: element 2i in the low nibble."""
    out = np.empty((codes.shape[0], cols), dtype=np.uint8)
    out[:, 0::2] = codes & 0xF
    out[:, 1::2] = codes >> 4
    return out


class Basics(unittest.TestCase):
    def test_version_and_presets(self):
        self.assertEqual(fp4jit.version(), "0.1.0")
        self.assertTrue({"mxfp4", "nvfp4", "msfp4", "tetrajet", "ue5m3"} <= set(fp4jit.presets()))
        self.assertEqual(HOST.backend, "host")
        self.assertEqual(REF.backend, "reference")

    def test_recipe(self):
        r = fp4jit.Recipe("msfp4:occ=0.97,dge.k=3")
        self.assertEqual(r.preset, "msfp4")
        self.assertIn("occ=0.97", r.canonical)
        self.assertEqual(len(r.hash), 64)
        self.assertEqual(fp4jit.Recipe(r.canonical), r)
        self.assertTrue(r.operand("x").occ)
        self.assertTrue(r.operand("w").dge)
        self.assertTrue(fp4jit.Recipe("tetrajet").operand("xt").requant)
        with self.assertRaises(fp4jit.Error) as cm:
            fp4jit.Recipe("nvfp4:colour=blue")
        self.assertEqual(cm.exception.status, "RECIPE")
        self.assertIn("colour", str(cm.exception))

    def test_recipe_pickles_and_copies(self):
        import copy
        import pickle

        r = fp4jit.Recipe("msfp4:occ=0.97,dge.k=3")
        for c in (pickle.loads(pickle.dumps(r)), copy.copy(r), copy.deepcopy(r)):
            self.assertEqual(c, r)
            self.assertEqual(c.text, r.text)
            self.assertNotEqual(c._handle.value, r._handle.value)  # each frees its own handle
            self.assertTrue(c.operand("w").dge)
        del c
        self.assertTrue(r.operand("x").occ)  # r's handle still alive after the copies went
        self.assertEqual(fp4jit.Recipe(r).text, r.text)  # a recipe made from one keeps its text

    def test_layout(self):
        l = fp4jit.layout("nvfp4", "xt", 64, 128)
        self.assertEqual((l.rows, l.cols, l.row_bytes), (128, 64, 32))
        self.assertEqual((l.scale_rows, l.scale_cols), (128, 4))
        self.assertTrue(l.two_level and l.transposed and l.scale_is_code)
        with self.assertRaises(fp4jit.Error) as cm:
            fp4jit.layout("nvfp4", "x", 64, 100)
        self.assertIn("100", str(cm.exception))


class Quantize(unittest.TestCase):
    def assert_same(self, a, b, what):
        na, nb = a.numpy(), b.numpy()
        self.assertEqual(sorted(na), sorted(nb))
        for key in na:
            if key == "amax":
                continue
            np.testing.assert_array_equal(na[key], nb[key], err_msg="%s: %s" % (what, key))

    def test_host_equals_reference(self):
        x = sample(64, 128, seed=1)
        for preset in ("mxfp4", "nvfp4", "msfp4", "tetrajet", "ue5m3"):
            r = fp4jit.Recipe(preset)
            for role in ("x", "dy", "w"):
                with self.subTest(preset=preset, role=role):
                    h = HOST.quantize_pair(r, role, x, seed=5, offset=3)
                    f = REF.quantize_pair(r, role, x, seed=5, offset=3)
                    self.assert_same(h[0], f[0], "%s %s" % (preset, role))
                    self.assert_same(h[1], f[1], "%s %s transposed" % (preset, role))
        q = HOST.quantize("msfp4", "x", x)
        index, value = q.residual()
        self.assertGreater(len(index), 0)
        self.assertTrue(np.all(np.diff(index) > 0))

    def test_seed_step_rounds_with_the_mixed_seed(self):
        """seed_step (a step counter in the engine's memory, read when the work runs): the bytes of
        mix_seed(seed, step) given by value; a wrong counter is refused by name."""
        x = sample(32, 64, seed=7)
        step = np.array([41], dtype=np.int64)
        for engine in (HOST, REF):
            for preset, role in (("nvfp4", "dy"), ("tetrajet", "dy"), ("ue5m3", "dy")):
                with self.subTest(engine=engine.backend, preset=preset):
                    got = engine.quantize_pair(preset, role, x, seed=5, offset=3, seed_step=step)
                    want = engine.quantize_pair(preset, role, x, seed=fp4jit.mix_seed(5, 41), offset=3)
                    other = engine.quantize_pair(preset, role, x, seed=5, offset=3)
                    self.assert_same(got[0], want[0], "%s %s" % (preset, role))
                    self.assert_same(got[1], want[1], "%s %s transposed" % (preset, role))
                    self.assertFalse(np.array_equal(got[0].codes, other[0].codes))
        self.assertEqual(fp4jit.mix_seed(0, 0), 0xE220A8397B1DCDAF)  # splitmix64's first output from 0
        for h, v in ((0, 0), (5, 41), (2**64 - 1, 2**63 + 7)):
            self.assertEqual(fp4jit.mix_seed(h, v), fp4jit._lib.lib.fp4jit_mix_seed(h, v))
        for bad in (np.array([1, 2], dtype=np.int64), np.array([1.0]), [3]):
            with self.assertRaisesRegex(fp4jit.Error, "seed_step"):
                HOST.quantize("nvfp4", "dy", x, seed=5, seed_step=bad)

    def test_packed_nibbles_decode(self):
        """mxfp4: value = E2M1(nibble) * 2^(e8m0 - 127); element 2i in the low nibble."""
        x = sample(16, 64, seed=2)
        q = HOST.quantize("mxfp4", "x", x)
        self.assertEqual(q.codes.shape, (16, 32))
        self.assertEqual(q.codes.dtype, np.uint8)
        self.assertEqual(q.scales.shape, (16, 2))
        nib = unpack(q.codes, 64)
        scale = np.exp2(q.scales.astype(np.float64) - 127.0)
        decoded = E2M1[nib] * np.repeat(scale, 32, axis=1)
        np.testing.assert_array_equal(decoded, HOST.dequantize(q).astype(np.float64))
        # Round trip within FP4's error; the largest element of a block lands on 4 or 6.
        self.assertLess(np.linalg.norm(decoded - x) / np.linalg.norm(x), 0.2)

    def test_nvfp4_two_level_decode(self):
        """nvfp4: value = E2M1(nibble) * UE4M3(scale) / s_enc, s_enc = 448 * 6 / amax."""
        x = sample(16, 64, seed=3)
        q = HOST.quantize("nvfp4", "x", x)
        self.assertAlmostEqual(float(q.tensor_scale[0]), 448 * 6 / np.abs(x).max(), places=2)
        if ml_dtypes is not None:
            s = q.scales.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
            value = E2M1[unpack(q.codes, 64)] * np.repeat(s, 16, axis=1) / float(q.tensor_scale[0])
            np.testing.assert_allclose(HOST.dequantize(q), value, rtol=1e-6)

    def test_cli_writes_the_same_bytes(self):
        cli = os.environ.get("FP4JIT_CLI")
        if not cli:
            self.skipTest("FP4JIT_CLI not set")
        x = sample(32, 64, seed=4)
        with tempfile.TemporaryDirectory() as tmp:
            np.save(os.path.join(tmp, "x.npy"), x)
            for preset, role in (("nvfp4", "dyt"), ("msfp4", "x"), ("tetrajet", "wt")):
                out = os.path.join(tmp, preset + role)
                subprocess.run(
                    [cli, "quantize", "--recipe", preset, "--operand", role, "--backend", "reference",
                     "--in", os.path.join(tmp, "x.npy"), "--out", out, "--seed", "9", "--offset", "2"],
                    check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, FP4JIT_CACHE=os.path.join(tmp, "c.db")),
                )
                q = HOST.quantize(preset, role, x, seed=9, offset=2).numpy()
                np.testing.assert_array_equal(np.load(os.path.join(out, "codes.npy")), q["codes"])
                np.testing.assert_array_equal(np.load(os.path.join(out, "scales.npy")), q["scales"])
                if "residual_index" in q:
                    np.testing.assert_array_equal(np.load(os.path.join(out, "residual_index.npy")), q["residual_index"])
                    np.testing.assert_array_equal(np.load(os.path.join(out, "residual_value.npy")), q["residual_value"])

    def test_input_dtypes_and_views(self):
        x = sample(32, 64, seed=5, outliers=False)
        base = HOST.quantize("mxfp4", "x", x).numpy()
        half = HOST.quantize("mxfp4", "x", x.astype(np.float16)).numpy()
        self.assertEqual(half["codes"].shape, base["codes"].shape)
        if ml_dtypes is not None:
            bf = x.astype(ml_dtypes.bfloat16)
            a = HOST.quantize("nvfp4", "x", bf).numpy()
            b = REF.quantize("nvfp4", "x", bf).numpy()
            np.testing.assert_array_equal(a["codes"], b["codes"])
        # [2, 16, 64] is read as [32, 64]; a row-strided view as its rows.
        np.testing.assert_array_equal(HOST.quantize("mxfp4", "x", x.reshape(2, 16, 64)).numpy()["codes"], base["codes"])
        wide = np.zeros((32, 128), dtype=np.float32)
        wide[:, :64] = x
        np.testing.assert_array_equal(HOST.quantize("mxfp4", "x", wide[:, :64]).numpy()["codes"], base["codes"])

    def test_dlpack_input(self):
        x = sample(32, 64, seed=6)

        class OnlyDlpack:
            def __init__(self, a):
                self.a = a

            def __dlpack__(self, stream=None):
                return self.a.__dlpack__()

            def __dlpack_device__(self):
                return self.a.__dlpack_device__()

        if not hasattr(x, "__dlpack__"):
            self.skipTest("NumPy without __dlpack__")
        a = HOST.quantize("nvfp4", "x", x).numpy()
        b = HOST.quantize("nvfp4", "x", OnlyDlpack(x)).numpy()
        np.testing.assert_array_equal(a["codes"], b["codes"])


class Gemm(unittest.TestCase):
    def test_three_gemms_host_vs_reference(self):
        tokens, fin, fout = 64, 128, 32
        x, w, dy = sample(tokens, fin, 7, False), sample(fout, fin, 8, False) * 0.1, sample(tokens, fout, 9, False)
        for preset in ("nvfp4", "tetrajet"):
            r = fp4jit.Recipe(preset)
            for e in (HOST, REF):
                qx, qxt = e.quantize_pair(r, "x", x, seed=1)
                qw, qwt = e.quantize_pair(r, "w", w, seed=2)
                qdy, qdyt = e.quantize_pair(r, "dy", dy, seed=3)
                got = {
                    "fprop": e.gemm("fprop", qx, qw),
                    "dgrad": e.gemm("dgrad", qdy, qwt),
                    "wgrad": e.gemm("wgrad", qdyt, qxt),
                }
                if e is HOST:
                    host = got
            for op, exact in (("fprop", x @ w.T), ("dgrad", dy @ w), ("wgrad", dy.T @ x)):
                with self.subTest(preset=preset, op=op):
                    np.testing.assert_allclose(host[op], got[op], rtol=1e-5, atol=1e-5 * np.abs(got[op]).max())
                    rel = np.linalg.norm(got[op] - exact) / np.linalg.norm(exact)
                    self.assertLess(rel, 0.25)

    def test_gemm_kernel_names_the_config(self):
        text = HOST.gemm_kernel("mxfp4", "fprop", 64, 64, 128)
        self.assertIn("mr=", text)
        self.assertTrue(text.endswith(" (default)") or text.endswith(" (tuned)"), text)
        self.assertEqual(REF.gemm_kernel(fp4jit.Recipe("nvfp4"), "wgrad", 64, 64, 128, "bfloat16"), "")
        with self.assertRaises(fp4jit.Error):
            HOST.gemm_kernel("mxfp4", "xgrad", 64, 64, 128)
        with self.assertRaises(fp4jit.Error):
            HOST.gemm_kernel("mxfp4", "fprop", 64, 64, 100)  # K: not whole 32-element blocks

    def test_product_of_dequantized_operands_and_epilogue(self):
        x, w = sample(32, 64, 10, False), sample(16, 64, 11, False)
        qx, qw = HOST.quantize("mxfp4", "x", x), HOST.quantize("mxfp4", "w", w)
        dx, dw = HOST.dequantize(qx).astype(np.float64), HOST.dequantize(qw).astype(np.float64)
        bias = np.linspace(-1, 1, 16).astype(np.float32)
        c = sample(32, 16, 12, False)
        y = HOST.gemm("fprop", qx, qw, alpha=0.5, beta=2.0, c=c, bias=bias)
        np.testing.assert_allclose(y, 0.5 * dx @ dw.T + bias + 2.0 * c, rtol=1e-5, atol=1e-5)
        steps = ((np.arange(16) - 8) * 0.25).astype(np.float32)  # exact in float16
        np.testing.assert_array_equal(HOST.gemm("fprop", qx, qw, bias=steps.astype(np.float16)),
                                      HOST.gemm("fprop", qx, qw, bias=steps))
        if ml_dtypes is not None:
            yb = HOST.gemm("fprop", qx, qw, dtype="bfloat16")
            self.assertEqual(yb.dtype, ml_dtypes.bfloat16)
            np.testing.assert_allclose(yb.astype(np.float32), dx @ dw.T, rtol=1e-2, atol=1e-2)

    def test_occ_compensation(self):
        x, w = sample(32, 128, 13), sample(16, 128, 14, False)
        r = fp4jit.Recipe("msfp4")
        qx, qw = HOST.quantize(r, "x", x), HOST.quantize(r, "w", w)
        plain = HOST.gemm("fprop", qx, qw)
        comp = HOST.gemm("fprop", qx, qw, occ_weight=w)
        ref = REF.gemm("fprop", qx, qw, occ_weight=w)
        np.testing.assert_allclose(comp, ref, rtol=1e-5, atol=1e-4)
        exact = x.astype(np.float64) @ w.T
        self.assertLess(np.linalg.norm(comp - exact), np.linalg.norm(plain - exact))

    def test_dge(self):
        w = sample(16, 64, 15, False) * 0.2
        a, b = HOST.dge("msfp4", w), REF.dge("msfp4", w)
        np.testing.assert_array_equal(a, b)
        self.assertEqual(a.shape, w.shape)
        self.assertTrue(np.all((a > 0) & (a <= 3.0)))


def aligned_bytes(n):
    """A uint8 NumPy buffer of n bytes at a 256-byte boundary (the linear step's buffers)."""
    raw = np.zeros(n + 256, dtype=np.uint8)
    skew = (-raw.ctypes.data) % 256
    return raw[skew : skew + n]


class LinearStep(unittest.TestCase):
    """Engine.linear_forward / linear_backward against quantize_pair + gemm: the same bytes."""

    tokens, fin, fout = 64, 128, 96

    def operands(self):
        x, w = sample(self.tokens, self.fin, 20), sample(self.fout, self.fin, 21, False) * 0.1
        dy, bias = sample(self.tokens, self.fout, 22), np.linspace(-2, 2, self.fout).astype(np.float32)
        return x, w, dy, bias

    def test_equals_the_per_operation_calls(self):
        x, w, dy, bias = self.operands()
        for preset in ("mxfp4", "nvfp4", "tetrajet", "ue5m3"):
            with self.subTest(preset=preset):
                r = fp4jit.Recipe(preset)
                qx, qxt = HOST.quantize_pair(r, "x", x, seed=11)
                qw, qwt = HOST.quantize_pair(r, "w", w, seed=12)
                qdy, qdyt = HOST.quantize_pair(r, "dy", dy, seed=13)
                y_ref = HOST.gemm("fprop", qx, qw, bias=bias)
                dx_ref, dw_ref = HOST.gemm("dgrad", qdy, qwt), HOST.gemm("wgrad", qdyt, qxt)

                b = HOST.linear_buffers(r, self.tokens, self.fin, self.fout)
                self.assertGreater(b.saved_bytes, qxt.codes.nbytes + qwt.codes.nbytes)
                saved = aligned_bytes(b.saved_bytes)
                y = np.full((self.tokens, self.fout), np.nan, dtype=np.float32)
                HOST.linear_forward(r, x, w, y, bias=bias, seed_x=11, seed_w=12, saved=saved,
                                    scratch=aligned_bytes(b.forward_scratch_bytes))
                np.testing.assert_array_equal(y, y_ref)
                dx = np.full((self.tokens, self.fin), np.nan, dtype=np.float32)
                dw = np.full((self.fout, self.fin), np.nan, dtype=np.float32)
                HOST.linear_backward(r, self.fin, dy, saved, aligned_bytes(b.backward_scratch_bytes), dx=dx, dw=dw,
                                     seed_dy=13)
                np.testing.assert_array_equal(dx, dx_ref)
                np.testing.assert_array_equal(dw, dw_ref)
                # Either gradient alone, and a forward with no backward to follow.
                dw_only = np.full_like(dw, np.nan)
                HOST.linear_backward(r, self.fin, dy, saved, aligned_bytes(b.backward_scratch_bytes), dw=dw_only,
                                     seed_dy=13)
                np.testing.assert_array_equal(dw_only, dw_ref)
                dx_only = np.full_like(dx, np.nan)
                HOST.linear_backward(r, self.fin, dy, saved, aligned_bytes(b.backward_scratch_bytes), dx=dx_only,
                                     seed_dy=13)
                np.testing.assert_array_equal(dx_only, dx_ref)
                y_inf = np.full_like(y, np.nan)
                HOST.linear_forward(r, x, w, y_inf, bias=bias, seed_x=11, seed_w=12,
                                    scratch=aligned_bytes(b.forward_scratch_bytes))
                np.testing.assert_array_equal(y_inf, y_ref)
                # No scratch given: the library's own for the call, the same bytes.
                saved2 = aligned_bytes(b.saved_bytes)
                y2, dx2, dw2 = np.full_like(y, np.nan), np.full_like(dx, np.nan), np.full_like(dw, np.nan)
                HOST.linear_forward(r, x, w, y2, bias=bias, seed_x=11, seed_w=12, saved=saved2)
                HOST.linear_backward(r, self.fin, dy, saved2, None, dx=dx2, dw=dw2, seed_dy=13)
                np.testing.assert_array_equal(y2, y_ref)
                np.testing.assert_array_equal(dx2, dx_ref)
                np.testing.assert_array_equal(dw2, dw_ref)
                # The weight gradient accumulated into dw: gemm("wgrad") with beta * C, C = dw.
                main = sample(self.fout, self.fin, 23)
                dw_acc = main.copy()
                HOST.linear_backward(r, self.fin, dy, saved, None, dw=dw_acc, seed_dy=13, dw_beta=1.0)
                want = main.copy()
                HOST.gemm("wgrad", qdyt, qxt, out=want, c=want, beta=1.0)
                np.testing.assert_array_equal(dw_acc, want)
                self.assertFalse(np.array_equal(dw_acc, dw_ref))

    def test_weights_kept_across_steps(self):
        """linear_forward / linear_backward with W's copies in a weights buffer: filled by one
        forward, read by the next ones (W's data not read: another W gives the first one's
        results) and by their backwards; saved then holds X^T only (saved_x_bytes); a short weights
        buffer named."""
        x, w, dy, bias = self.operands()
        other_w = sample(self.fout, self.fin, 24, False)
        for preset in ("mxfp4", "nvfp4"):
            with self.subTest(preset=preset):
                r = fp4jit.Recipe(preset)
                b = HOST.linear_buffers(r, self.tokens, self.fin, self.fout)
                self.assertLess(b.saved_x_bytes, b.saved_bytes)
                self.assertGreater(b.weight_bytes, 0)
                saved = aligned_bytes(b.saved_bytes)
                y_ref = np.full((self.tokens, self.fout), np.nan, dtype=np.float32)
                HOST.linear_forward(r, x, w, y_ref, bias=bias, seed_x=11, seed_w=12, saved=saved)
                dx_ref = np.full((self.tokens, self.fin), np.nan, dtype=np.float32)
                dw_ref = np.full((self.fout, self.fin), np.nan, dtype=np.float32)
                HOST.linear_backward(r, self.fin, dy, saved, None, dx=dx_ref, dw=dw_ref, seed_dy=13)
                weights = aligned_bytes(b.weight_bytes)
                for step, (wi, fill) in enumerate(((w, True), (other_w, False), (other_w, False))):
                    saved_x = aligned_bytes(b.saved_x_bytes)
                    y = np.full_like(y_ref, np.nan)
                    HOST.linear_forward(r, x, wi, y, bias=bias, seed_x=11, seed_w=12 if fill else 99, saved=saved_x,
                                        weights=weights, quantize_weights=fill)
                    np.testing.assert_array_equal(y, y_ref, err_msg="step %d" % step)
                    dx, dw = np.full_like(dx_ref, np.nan), np.full_like(dw_ref, np.nan)
                    HOST.linear_backward(r, self.fin, dy, saved_x, None, dx=dx, dw=dw, seed_dy=13, weights=weights)
                    np.testing.assert_array_equal(dx, dx_ref, err_msg="step %d" % step)
                    np.testing.assert_array_equal(dw, dw_ref, err_msg="step %d" % step)
                with self.assertRaisesRegex(fp4jit.Error, "weights holds %d bytes; %d are needed" % (
                        b.weight_bytes - 1, b.weight_bytes)):
                    HOST.linear_forward(r, x, w, y_ref, saved=aligned_bytes(b.saved_x_bytes),
                                        weights=aligned_bytes(b.weight_bytes - 1))

    def test_bias_gradient_in_the_fixed_order(self):
        """db from linear_backward: dY's column sums in FP32, in the order every backend follows
        (64-row chunks of eight interleaved slices), rounded once to db's dtype."""

        def fixed_order_sums(m):
            rows = m.shape[0]
            chunks = -(-rows // 64)
            padded = np.zeros((chunks * 64, m.shape[1]), dtype=np.float32)
            padded[:rows] = m
            parts = []
            for k in range(chunks):
                slices = []
                for s in range(8):
                    acc = np.zeros(m.shape[1], dtype=np.float32)
                    for j in range(8):
                        acc = acc + padded[64 * k + 8 * j + s]
                    slices.append(acc)
                a = [slices[i] + slices[i + 4] for i in range(4)]
                parts.append((a[0] + a[2]) + (a[1] + a[3]))
            total = np.zeros(m.shape[1], dtype=np.float32)
            for g in range(8):
                acc = np.zeros(m.shape[1], dtype=np.float32)
                for k in range(g, chunks, 8):
                    acc = acc + parts[k]
                total = total + acc
            return total

        tokens = 224  # three whole 64-row chunks and a partial one
        x, w = sample(tokens, self.fin, 30), sample(self.fout, self.fin, 31, False) * 0.1
        dy = sample(tokens, self.fout, 32) * np.float32(10.0)  # sums that round, within FP16 range
        want = fixed_order_sums(dy)
        self.assertFalse(np.array_equal(want, dy.sum(axis=0, dtype=np.float32)),
                         "the check must tell the fixed order from NumPy's own")
        r = fp4jit.Recipe("mxfp4")
        b = HOST.linear_buffers(r, tokens, self.fin, self.fout)
        saved = aligned_bytes(b.saved_bytes)
        y = np.empty((tokens, self.fout), dtype=np.float32)
        HOST.linear_forward(r, x, w, y, seed_x=1, seed_w=2, saved=saved,
                            scratch=aligned_bytes(b.forward_scratch_bytes))
        dw_ref = np.full((self.fout, self.fin), np.nan, dtype=np.float32)
        HOST.linear_backward(r, self.fin, dy, saved, aligned_bytes(b.backward_scratch_bytes), dw=dw_ref, seed_dy=3)
        for dtype in (np.float32, np.float16):
            with self.subTest(dtype=dtype.__name__):
                db = np.full(self.fout, np.nan, dtype=dtype)
                dw = np.full_like(dw_ref, np.nan)
                HOST.linear_backward(r, self.fin, dy, saved, aligned_bytes(b.backward_scratch_bytes), dw=dw,
                                     seed_dy=3, db=db)
                np.testing.assert_array_equal(db, want.astype(dtype))
                np.testing.assert_array_equal(dw, dw_ref)  # the sums leave the gradients alone
        with self.assertRaisesRegex(fp4jit.Error, "bias gradient dB: must be a contiguous vector of 96"):
            HOST.linear_backward(r, self.fin, dy, saved, aligned_bytes(b.backward_scratch_bytes), dw=dw_ref,
                                 db=np.empty(95, dtype=np.float32))

    def test_errors(self):
        x, w, dy, bias = self.operands()
        with self.assertRaisesRegex(fp4jit.Error, "OCC") as cm:
            HOST.linear_buffers("msfp4", self.tokens, self.fin, self.fout)
        self.assertEqual(cm.exception.status, "UNSUPPORTED")
        b = HOST.linear_buffers("mxfp4", self.tokens, self.fin, self.fout)
        y = np.empty((self.tokens, self.fout), dtype=np.float32)
        with self.assertRaisesRegex(fp4jit.Error, "scratch holds %d bytes; %d are needed" % (
                b.forward_scratch_bytes - 1, b.forward_scratch_bytes)):
            HOST.linear_forward("mxfp4", x, w, y, scratch=aligned_bytes(b.forward_scratch_bytes - 1))
        misaligned = aligned_bytes(b.forward_scratch_bytes + 8)[8:]
        with self.assertRaisesRegex(fp4jit.Error, "256-byte aligned"):
            HOST.linear_forward("mxfp4", x, w, y, scratch=misaligned)
        with self.assertRaisesRegex(fp4jit.Error, "W must be \\[out, in\\]"):
            HOST.linear_forward("mxfp4", x, sample(self.fout, 64, 1), y, scratch=aligned_bytes(1 << 20))
        saved = aligned_bytes(b.saved_bytes)
        with self.assertRaisesRegex(fp4jit.Error, "neither dx nor dw"):
            HOST.linear_backward("mxfp4", self.fin, dy, saved, aligned_bytes(b.backward_scratch_bytes))
        with self.assertRaisesRegex(fp4jit.Error, "gemm: output must be \\[64, 128\\]"):
            HOST.linear_backward("mxfp4", self.fin, dy, saved, aligned_bytes(b.backward_scratch_bytes),
                                 dx=np.empty((self.tokens, 64), dtype=np.float32))


class Errors(unittest.TestCase):
    def check(self, fn, status, needle):
        with self.assertRaises(fp4jit.Error) as cm:
            fn()
        self.assertEqual(cm.exception.status, status, str(cm.exception))
        self.assertIn(needle, str(cm.exception))

    def test_bad_inputs(self):
        x = sample(32, 64)
        self.check(lambda: HOST.quantize("nvfp4", "x", x.astype(np.float64)), "INVALID_ARGUMENT", "float64")
        self.check(lambda: HOST.quantize("nvfp4", "x", x[:, :60]), "INVALID_ARGUMENT", "60")
        self.check(lambda: HOST.quantize("nvfp4", "x", np.asfortranarray(x)), "INVALID_ARGUMENT", "contiguous")
        raw = np.zeros(32 * 64 * 4 + 2, dtype=np.uint8)
        odd = np.frombuffer(raw.data, dtype=np.float32, count=32 * 64, offset=2).reshape(32, 64)
        self.check(lambda: HOST.quantize("nvfp4", "x", odd), "INVALID_ARGUMENT", "not aligned")
        self.check(lambda: HOST.quantize("nvfp4", "q", x), "INVALID_ARGUMENT", "unknown role 'q'")
        self.check(lambda: HOST.quantize("nvfp4:colour=1", "x", x), "RECIPE", "colour")
        self.check(lambda: HOST.quantize_pair("nvfp4", "xt", x), "INVALID_ARGUMENT", "x, w or dy")
        self.check(lambda: HOST.quantize("nvfp4", "x", None), "INVALID_ARGUMENT", "quantize input is None")
        self.check(lambda: HOST.quantize("nvfp4", "x", "text"), "INVALID_ARGUMENT", "not an array")
        self.check(lambda: HOST.dge("nvfp4", x), "INVALID_ARGUMENT", "dge")
        qa = HOST.quantize("nvfp4", "x", x)
        qb = HOST.quantize("mxfp4", "w", x)
        self.check(lambda: HOST.gemm("fprop", qa, qb), "INVALID_ARGUMENT", "different recipes")
        self.check(lambda: HOST.gemm("sideways", qa, qb), "INVALID_ARGUMENT", "unknown GEMM")
        qw = HOST.quantize("nvfp4", "w", x)
        self.check(lambda: HOST.gemm("fprop", qa, qw, bias=np.zeros(7, np.float32)), "INVALID_ARGUMENT",
                   "contiguous vector of %d elements" % qw.shape[0])
        self.check(lambda: HOST.gemm("fprop", qa, qw, out=np.zeros((32, 16), np.float32)), "INVALID_ARGUMENT", "output")
        self.check(lambda: HOST.gemm("fprop", qw, qa), "INVALID_ARGUMENT", "takes a = x and b = w operands")
        self.check(lambda: HOST.gemm("dgrad", qa, qw), "INVALID_ARGUMENT", "got a = x and b = w")
        qw_short = HOST.quantize("nvfp4", "w", sample(48, 32))
        self.check(lambda: HOST.gemm("fprop", qa, qw_short), "INVALID_ARGUMENT", "differ in K: 64 and 32")
        self.check(lambda: fp4jit.Engine("gpu"), "INVALID_ARGUMENT", "unknown backend 'gpu'")

    def test_missing_library_message(self):
        env = dict(os.environ, FP4JIT_LIBRARY="/nonexistent/libfp4jit.so")
        p = subprocess.run([sys.executable, "-c", "import fp4jit"], env=env, capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("libfp4jit.so not found", p.stderr)
        self.assertIn("FP4JIT_LIBRARY", p.stderr)


if __name__ == "__main__":
    unittest.main()
