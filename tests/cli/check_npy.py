#!/usr/bin/env python3
"""Checks fp4jit's files with NumPy alone.

    check_npy.py FP4JIT WORKDIR

For operands of every preset, loads codes.npy / scales.npy / tensor_scale.npy with numpy,
unpacks the nibbles, decodes E2M1, E4M3, E5M2, E8M0, UE4M3 and UE5M3 here (independently of
fp4jit; checked against ml_dtypes where it has the format), multiplies by the block scales and
compares with `fp4jit dequantize --operand-layout`: the bits must match exactly. Also checks that
bfloat16 inputs written by ml_dtypes (np.save writes them as '<V2') are read exactly, that
Fortran-ordered and 3-D inputs are handled, and that the OCC residual adds back as documented.
Exits 77 (skipped) when numpy or ml_dtypes cannot be imported.
"""
import json
import os
import shutil
import subprocess
import sys

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

FP4JIT, WORK = sys.argv[1], sys.argv[2]

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def minifloat(codes, exp_bits, man_bits, bias, signed, special):
    """Decodes integer codes of a small float format to float64.

    special: 'finite' (every code a number), 'ones_nan' (all-ones magnitude is NaN),
    'ieee' (top exponent: Inf with mantissa 0, else NaN).
    """
    codes = np.asarray(codes, dtype=np.int64)
    width = exp_bits + man_bits
    mag = codes & ((1 << width) - 1)
    neg = ((codes >> width) & 1).astype(bool) if signed else np.zeros(codes.shape, bool)
    e = mag >> man_bits
    m = mag & ((1 << man_bits) - 1)
    value = np.where(e == 0, m * 2.0 ** (1 - bias - man_bits),
                     ((1 << man_bits) + m) * np.exp2((e - bias - man_bits).astype(np.float64)))
    top = (1 << exp_bits) - 1
    if special == "ones_nan":
        value = np.where(mag == (1 << width) - 1, np.nan, value)
    elif special == "ieee":
        value = np.where((e == top) & (m == 0), np.inf, value)
        value = np.where((e == top) & (m != 0), np.nan, value)
    return np.where(neg, -value, value)


def e8m0(codes):
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes == 255, np.nan, np.exp2((codes - 127).astype(np.float64)))


UE5M3_SPECIAL = {"114688": "ones_nan", "122880": "finite", "61440": "ieee"}


def self_check_decoders():
    """The decoders above agree with ml_dtypes where it has the format."""
    codes = np.arange(256, dtype=np.uint8)
    for dtype, args in ((ml_dtypes.float8_e4m3fn, (4, 3, 7, True, "ones_nan")),
                        (ml_dtypes.float8_e5m2, (5, 2, 15, True, "ieee"))):
        ref = codes.view(dtype).astype(np.float64)
        mine = minifloat(codes, *args)
        assert np.array_equal(ref, mine, equal_nan=True), dtype
    if hasattr(ml_dtypes, "float8_e8m0fnu"):
        ref = codes.view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
        assert np.array_equal(ref, e8m0(codes), equal_nan=True)
    nib = np.arange(16, dtype=np.uint8)
    if hasattr(ml_dtypes, "float4_e2m1fn"):
        ref = nib.view(ml_dtypes.float4_e2m1fn).astype(np.float64)
        mine = np.where(nib & 8, -1.0, 1.0) * E2M1[nib & 7]
        assert np.array_equal(ref, mine)
    assert minifloat([0xFE], 5, 3, 15, False, "ones_nan")[0] == 114688
    assert minifloat([0xFF], 5, 3, 15, False, "finite")[0] == 122880
    assert minifloat([0xF7], 5, 3, 15, False, "ieee")[0] == 61440


def run(*args):
    cmd = [FP4JIT, *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def decode_elements(layout, codes):
    fmt = layout["elements"]["format"]
    rows, cols = layout["operand"]["rows"], layout["operand"]["cols"]
    if fmt == "e2m1":
        nib = np.empty((rows, cols), dtype=np.uint8)
        nib[:, 0::2] = codes & 0x0F  # element 2i in the low nibble
        nib[:, 1::2] = codes >> 4
        return np.where(nib & 8, -1.0, 1.0) * E2M1[nib & 7]
    if fmt == "e4m3":
        return minifloat(codes, 4, 3, 7, True, "ones_nan")
    if fmt == "e5m2":
        return minifloat(codes, 5, 2, 15, True, "ieee")
    raise AssertionError(f"unknown element format {fmt}")


def decode_scales(layout, scales):
    s = layout["scales"]
    if s["format"] == "fp32":
        assert scales.dtype == np.float32
        return scales.astype(np.float64)
    assert scales.dtype == np.uint8
    if s["format"] == "e8m0":
        return e8m0(scales)
    if s["format"] == "ue4m3":
        return minifloat(scales, 4, 3, 7, False, "ones_nan")
    if s["format"] == "ue5m3":
        return minifloat(scales, 5, 3, 15, False, UE5M3_SPECIAL[s["ue5m3_max"]])
    raise AssertionError(f"unknown scale format {s['format']}")


def expand_scales(layout, scale_values):
    """The scale of every element of the operand, from the block shape."""
    rows, cols = layout["operand"]["rows"], layout["operand"]["cols"]
    block = layout["scales"]["block"]
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    if block == "row":
        return np.broadcast_to(scale_values[r, 0], (rows, cols))
    if block == "col":
        return np.broadcast_to(scale_values[0, c], (rows, cols))
    if block == "tensor":
        return np.full((rows, cols), scale_values[0, 0])
    br, bc = map(int, block.split("x"))
    return scale_values[r // br, c // bc]


def same_bits(expected, got, what):
    with np.errstate(over="ignore", invalid="ignore"):  # float64 -> float32 may overflow to Inf
        expected = np.asarray(expected, dtype=np.float32)
    assert expected.shape == got.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    nan_e, nan_g = np.isnan(expected), np.isnan(got)
    assert np.array_equal(nan_e, nan_g), f"{what}: NaN positions differ"
    diff = (expected.view(np.uint32) != got.view(np.uint32)) & ~nan_e
    if diff.any():
        i = np.argwhere(diff)[0]
        raise AssertionError(f"{what}: {diff.sum()} values differ, first at {tuple(i)}: "
                             f"expected {expected[tuple(i)]!r}, fp4jit wrote {got[tuple(i)]!r}")


def check_operand(src, recipe, operand, tag):
    qdir = os.path.join(WORK, f"q_{tag}")
    run("quantize", "--recipe", recipe, "--operand", operand, "--in", src, "--out", qdir,
        "--seed", 42, "--offset", 7)
    with open(os.path.join(qdir, "layout.json")) as f:
        layout = json.load(f)
    codes = np.load(os.path.join(qdir, "codes.npy"))
    scales = np.load(os.path.join(qdir, "scales.npy"))
    assert codes.dtype == np.uint8 and list(codes.shape) == layout["elements"]["shape"]
    assert list(scales.shape) == layout["scales"]["shape"]
    value = decode_elements(layout, codes) * expand_scales(layout, decode_scales(layout, scales))
    if layout["tensor_scale"] is not None:
        ts = np.load(os.path.join(qdir, "tensor_scale.npy"))
        assert ts.dtype == np.float32 and ts.shape == (1,)
        assert float(ts[0]) == layout["tensor_scale"]["value"]
        value = value / np.float64(ts[0])
    out = os.path.join(WORK, f"op_{tag}.npy")
    run("dequantize", "--in", qdir, "--out", out, "--operand-layout")
    same_bits(value, np.load(out), f"{tag} operand layout")
    if layout["occ"] is not None and layout["hadamard"] is None:
        check_residual(layout, qdir, value, tag)
    return layout


def check_residual(layout, qdir, value, tag):
    """Source layout = operand values (transposed back) + residual at its positions."""
    index = np.load(os.path.join(qdir, "residual_index.npy"))
    resid = np.load(os.path.join(qdir, "residual_value.npy"))
    assert index.dtype == np.int64 and resid.dtype == np.float32
    assert len(index) == layout["occ"]["count"] and np.all(np.diff(index) > 0)
    full = value.copy().reshape(-1)
    full[index] += resid.astype(np.float64)
    full = full.reshape(value.shape)
    if layout["operand"]["transposed"]:
        full = full.T
    out = os.path.join(WORK, f"src_{tag}.npy")
    run("dequantize", "--in", qdir, "--out", out)
    same_bits(full.reshape(layout["source"]["shape"]), np.load(out), f"{tag} with residual")


CASES = [("mxfp4", "x"), ("mxfp4", "xt"), ("nvfp4", "x"), ("nvfp4", "w"), ("nvfp4", "dy"),
         ("nvfp4", "dyt"), ("nvfp4", "xt"), ("msfp4", "x"), ("msfp4", "w"), ("msfp4", "dy"),
         ("msfp4", "wt"), ("msfp4", "xt"), ("tetrajet", "x"), ("tetrajet", "wt"),
         ("tetrajet", "dyt"), ("ue5m3", "x"), ("ue5m3", "dy"),
         ("mxfp4:elem=e4m3", "x"), ("ue5m3:ue5m3=61440", "w"), ("ue5m3:ue5m3=122880", "w"),
         ("nvfp4:x.block=tensor,x.rule=absmax,x.scale=fp32", "x")]


def test_operands(x_bf16_path, adversarial_path):
    for i, (recipe, operand) in enumerate(CASES):
        check_operand(x_bf16_path, recipe, operand, f"n{i}")
        check_operand(adversarial_path, recipe, operand, f"a{i}")
    print(f"operand layout: {2 * len(CASES)} quantized operands decoded bit-exactly")


def test_bfloat16_input(x_f32):
    """An ml_dtypes bfloat16 file ('<V2') reads as the same floats as its float32 copy."""
    xb = x_f32.astype(ml_dtypes.bfloat16)
    pb, pf = os.path.join(WORK, "xb.npy"), os.path.join(WORK, "xbf.npy")
    np.save(pb, xb)
    with open(pb, "rb") as f:
        assert b"'<V2'" in f.read(128), "np.save of ml_dtypes.bfloat16 no longer writes '<V2'?"
    np.save(pf, xb.astype(np.float32))
    for recipe in ("mxfp4", "nvfp4", "msfp4"):
        run("quantize", "-r", recipe, "--in", pb, "--out", os.path.join(WORK, "qb"))
        run("quantize", "-r", recipe, "--in", pf, "--out", os.path.join(WORK, "qf"))
        for name in ("codes.npy", "scales.npy"):
            a = np.load(os.path.join(WORK, "qb", name))
            b = np.load(os.path.join(WORK, "qf", name))
            assert np.array_equal(a, b), f"{recipe} {name}: bfloat16 input differs from float32"
    # Values on the E2M1 grid of their mxfp4 block survive quantization exactly.
    rng = np.random.default_rng(1)
    k = rng.integers(-6, 6, size=(32, 4))
    grid = np.where(rng.random((32, 128)) < 0.5, -1, 1) * E2M1[rng.integers(0, 8, (32, 128))]
    grid[:, ::32] = 6.0
    exact = (grid * np.exp2(np.repeat(k, 32, axis=1))).astype(ml_dtypes.bfloat16)
    pg = os.path.join(WORK, "grid.npy")
    np.save(pg, exact)
    run("quantize", "-r", "mxfp4", "--in", pg, "--out", os.path.join(WORK, "qg"))
    for dtype, view in (("bfloat16", ml_dtypes.bfloat16), ("float16", np.float16),
                        ("float32", np.float32)):
        out = os.path.join(WORK, f"grid_{dtype}.npy")
        run("dequantize", "--in", os.path.join(WORK, "qg"), "--out", out, "--dtype", dtype)
        y = np.load(out)
        if dtype == "bfloat16":
            assert y.dtype == np.dtype("V2")
            y = y.view(ml_dtypes.bfloat16)
        assert y.dtype == view
        assert np.array_equal(y.astype(np.float64), exact.astype(np.float64)), dtype
    print("bfloat16: ml_dtypes '<V2' input read exactly; bfloat16/float16/float32 outputs exact")


def test_layouts(x_f32):
    """Fortran order and 3-D inputs give the same codes as the C-order 2-D tensor."""
    pc, pF, p3 = (os.path.join(WORK, n) for n in ("c.npy", "F.npy", "x3.npy"))
    np.save(pc, x_f32)
    np.save(pF, np.asfortranarray(x_f32))
    np.save(p3, x_f32.reshape(2, -1, x_f32.shape[1]))
    for p, tag in ((pc, "c"), (pF, "F"), (p3, "3")):
        run("quantize", "-r", "nvfp4", "--operand", "xt", "--in", p, "--out", os.path.join(WORK, "L" + tag))
    for name in ("codes.npy", "scales.npy", "tensor_scale.npy"):
        ref = np.load(os.path.join(WORK, "Lc", name))
        for tag in ("F", "3"):
            assert np.array_equal(ref, np.load(os.path.join(WORK, "L" + tag, name))), (tag, name)
    out = os.path.join(WORK, "y3.npy")
    run("dequantize", "--in", os.path.join(WORK, "L3"), "--out", out)
    assert np.load(out).shape == (2, x_f32.shape[0] // 2, x_f32.shape[1])
    print("layouts: Fortran-ordered and 3-D inputs match the C-order 2-D tensor")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    self_check_decoders()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128)) * np.exp2(rng.integers(-4, 4, size=(64, 1)))
    x[rng.random(x.shape) < 0.01] *= 50.0
    x = x.astype(np.float32)
    px = os.path.join(WORK, "x_bf16.npy")
    np.save(px, x.astype(ml_dtypes.bfloat16))
    pa = os.path.join(WORK, "adv.npy")
    run("sample", "--shape", "64x128", "--dist", "adversarial", "--seed", 9, "--out", pa)
    test_operands(px, pa)
    test_bfloat16_input(x)
    test_layouts(x)
    print("PASS")


if __name__ == "__main__":
    main()
