"""The Python package on the CUDA backend: device arrays through DLPack (CuPy, PyTorch) and
__cuda_array_interface__, quantized byte for byte like the reference backend on the same values
in host memory, GEMMs within FP32 rounding of it, and host arrays refused with a clear error.
Skipped (exit 77) without a GPU, CuPy or PyTorch.

    FP4JIT_LIBRARY=build/libfp4jit.so PYTHONPATH=python python3 tests/python/test_cuda.py -v
"""

import sys
import unittest

try:
    import cupy
    import numpy as np

    if cupy.cuda.runtime.getDeviceCount() < 1:
        raise ImportError("no CUDA device")
except Exception as e:  # noqa: BLE001 - any failure to reach a GPU is a skip
    print("%s: skipped" % e)
    sys.exit(77)

import fp4jit

CUDA = fp4jit.Engine("cuda")
REF = fp4jit.Engine("reference")
PRESETS = ("mxfp4", "nvfp4", "msfp4", "tetrajet", "ue5m3")


def sample(rows, cols, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x.flat[::41] *= 15.0
    return x


class Only:
    """Exposes one interchange protocol of a CuPy array."""

    def __init__(self, a, protocol):
        self.a = a
        if protocol == "dlpack":
            self.__dlpack__ = a.__dlpack__
            self.__dlpack_device__ = a.__dlpack_device__
        else:
            self.__cuda_array_interface__ = a.__cuda_array_interface__


def assert_same(test, dev, ref, what):
    d, r = dev.numpy(), ref.numpy()
    for key in r:
        if key != "amax":
            np.testing.assert_array_equal(d[key], r[key], err_msg="%s: %s" % (what, key))


class CudaBackend(unittest.TestCase):
    def test_quantize_pair_equals_reference(self):
        x = sample(256, 512, 1)
        xd = cupy.asarray(x)
        for preset in PRESETS:
            for role in ("x", "w", "dy"):
                with self.subTest(preset=preset, role=role):
                    dq = CUDA.quantize_pair(preset, role, xd, seed=11, offset=4)
                    cupy.cuda.get_current_stream().synchronize()
                    rq = REF.quantize_pair(preset, role, x, seed=11, offset=4)
                    assert_same(self, dq[0], rq[0], "%s %s" % (preset, role))
                    assert_same(self, dq[1], rq[1], "%s %s transposed" % (preset, role))

    def test_protocols(self):
        x = sample(128, 256, 2)
        ref = REF.quantize("nvfp4", "x", x)
        for protocol in ("dlpack", "cai"):
            with self.subTest(protocol=protocol):
                q = CUDA.quantize("nvfp4", "x", Only(cupy.asarray(x), protocol))
                assert_same(self, q, ref, protocol)

    def test_torch_bfloat16(self):
        try:
            import ml_dtypes
            import torch
        except ImportError:
            self.skipTest("torch or ml_dtypes missing")
        x = sample(128, 256, 3)
        t = torch.from_numpy(x).to(device="cuda", dtype=torch.bfloat16)
        q = CUDA.quantize_pair("nvfp4", "x", t, seed=3)
        torch.cuda.synchronize()
        self.assertIsInstance(q[0].codes, torch.Tensor)
        ref = REF.quantize_pair("nvfp4", "x", x.astype(ml_dtypes.bfloat16), seed=3)
        assert_same(self, q[0], ref[0], "bf16")
        assert_same(self, q[1], ref[1], "bf16 transposed")

    def test_gemms_match_reference(self):
        tokens, fin, fout = 256, 512, 256
        x, w, dy = sample(tokens, fin, 4), sample(fout, fin, 5) * 0.1, sample(tokens, fout, 6)
        for preset in PRESETS:
            with self.subTest(preset=preset):
                got, want = {}, {}
                for e, arr in ((CUDA, cupy.asarray), (REF, lambda a: a)):
                    out = got if e is CUDA else want
                    qx, qxt = e.quantize_pair(preset, "x", arr(x), seed=1)
                    qw, qwt = e.quantize_pair(preset, "w", arr(w), seed=2)
                    qdy, qdyt = e.quantize_pair(preset, "dy", arr(dy), seed=3)
                    occ = arr(w) if fp4jit.Recipe(preset).operand("x").occ else None
                    out["fprop"] = e.gemm("fprop", qx, qw, occ_weight=occ)
                    out["dgrad"] = e.gemm("dgrad", qdy, qwt)
                    out["wgrad"] = e.gemm("wgrad", qdyt, qxt)
                # Relative Frobenius error, as the C++ GPU tests: on Hopper, E2M1 x E2M1 products
                # (mxfp4, tetrajet, msfp4 fprop) accumulate on FP8 tensor cores, whose adder keeps
                # about 13 mantissa bits within a K tile before the FP32 promotion, so single
                # elements that cancel a large partial sum differ from the double-precision
                # reference by a few units of that partial sum's 2^-13.
                for op in got:
                    g, r = cupy.asnumpy(got[op]).astype(np.float64), want[op].astype(np.float64)
                    self.assertTrue(np.all(np.isfinite(g)), op)
                    rel = np.linalg.norm(g - r) / np.linalg.norm(r)
                    self.assertLessEqual(rel, 1e-4, f"{preset} {op}: relative Frobenius error {rel:.3g}")

    def test_dge_and_dequantize(self):
        w = sample(128, 256, 7) * 0.05
        np.testing.assert_array_equal(cupy.asnumpy(CUDA.dge("msfp4", cupy.asarray(w))), REF.dge("msfp4", w))
        q = CUDA.quantize("mxfp4", "x", cupy.asarray(w))
        r = REF.quantize("mxfp4", "x", w)
        np.testing.assert_array_equal(cupy.asnumpy(CUDA.dequantize(q)), REF.dequantize(r))

    def test_host_array_refused(self):
        with self.assertRaises(fp4jit.Error) as cm:
            CUDA.quantize("nvfp4", "x", sample(32, 64, 8))
        self.assertIn("needs device memory", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
