"""fp4jit.torch.Linear against a PyTorch fake-quantized reference built from the same recipe.

For each recipe the reference quantizes and dequantizes every operand with the layer's seeds
(fp4jit.torch.fake_quantize: X and W for fprop, dY and W^T for dgrad, dY^T and X^T for wgrad, in
their K-major layouts and transformed domains), multiplies them in float64 with torch, adds
msfp4's OCC compensation R W^T and multiplies wgrad by its DGE factor; the layer must match
within float32 rounding (float32 model) or bfloat16 rounding (bfloat16 model). Runs on the CPU
(host backend) and, where present, on CUDA; skipped (exit 77) without torch.

    FP4JIT_LIBRARY=build/libfp4jit.so PYTHONPATH=python python3 tests/python/test_torch.py -v
The speed comparison with torch.nn.Linear in BF16 is bench/torch_linear_bench.py.
"""

import copy
import sys
import unittest
import warnings

try:
    import numpy  # noqa: F401
    import torch
except ImportError as e:
    print("%s: skipped" % e)
    sys.exit(77)

import fp4jit
import fp4jit.torch as fp4
from fp4jit import _arrays

PRESETS = ("mxfp4", "nvfp4", "msfp4", "tetrajet", "ue5m3")
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def reference(layer, x, dy):
    """(Y, dX, dW, db) of the fake-quantized layer, float64."""
    r, w = layer.recipe, layer.weight.detach()
    s = layer.seeds()
    fq = lambda t, role, seed: fp4.fake_quantize(t, r, role, seed=seed).double()  # noqa: E731
    xq, wq = fq(x, "x", s["x"]), fq(w, "w", s["w"])
    y = xq @ wq.T
    if r.operand("x").occ:
        q = fp4.engine_for(x.device).quantize(r, "x", x.contiguous(), seed=s["x"])
        index, value = q.residual()
        residual = torch.zeros(x.numel(), dtype=torch.float64, device=x.device)
        residual[index.long()] = value.double()
        y = y + residual.view_as(x) @ w.double().T
    if layer.bias is not None:
        y = y + layer.bias.detach().double()
    dx = fq(dy, "dy", s["dy"]) @ fq(w, "wt", s["w"]).T
    dw = fq(dy, "dyt", s["dy"]) @ fq(x, "xt", s["x"]).T
    if r.operand("w").dge:
        dw = dw * fp4.engine_for(w.device).dge(r, w).double()
    db = dy.double().sum(0)
    return y, dx, dw, db


def close(test, got, want, rel, what):
    scale = want.abs().max().item() + 1e-30
    err = (got.double() - want).abs().max().item()
    test.assertLessEqual(err, rel * scale, "%s: max error %.3g, scale %.3g" % (what, err, scale))


class LinearVsFakeQuant(unittest.TestCase):
    def run_case(self, preset, device, dtype, rel, tokens=128, fin=256, fout=128):
        torch.manual_seed(0)
        layer = fp4.Linear(fin, fout, recipe=preset, device=device, dtype=dtype)
        x = torch.randn(tokens, fin, device=device, dtype=dtype)
        x.view(-1)[::53] *= 12.0  # outliers for OCC
        x.requires_grad_(True)
        dy = torch.randn(tokens, fout, device=device, dtype=dtype)
        want = reference(layer, x.detach(), dy)
        y = layer(x)
        y.backward(dy)
        for name, got, ref in (("Y", y, want[0]), ("dX", x.grad, want[1]), ("dW", layer.weight.grad, want[2]),
                               ("db", layer.bias.grad, want[3])):
            self.assertEqual(got.dtype, dtype, name)
            close(self, got.detach(), ref, rel, "%s %s %s %s" % (preset, device, dtype, name))
        self.assertEqual(layer.step, 1)

    def test_float32_every_recipe(self):
        for device in DEVICES:
            for preset in PRESETS:
                with self.subTest(device=device, preset=preset):
                    self.run_case(preset, device, torch.float32, 2e-5)

    def test_bfloat16_model(self):
        for device in DEVICES:
            for preset in ("nvfp4", "msfp4"):
                with self.subTest(device=device, preset=preset):
                    self.run_case(preset, device, torch.bfloat16, 2e-2)

    def test_later_steps_read_their_own_tensors(self):
        """The one-call steps keep their fp4jit_tensor structs per signature and only set the data
        pointers: every step must still read its own input, weight, bias and dY and write its own
        outputs (new tensors each step, same shapes)."""
        for device in DEVICES:
            for preset in ("mxfp4", "nvfp4"):
                with self.subTest(device=device, preset=preset):
                    torch.manual_seed(5)
                    layer = fp4.Linear(256, 128, recipe=preset, device=device)
                    for step in range(3):
                        with torch.no_grad():  # a new weight and bias each step, as an optimizer's
                            layer.weight.mul_(0.5 + step)
                            layer.bias.add_(1.0)
                        layer.zero_grad(set_to_none=True)
                        x = torch.randn(64, 256, device=device, requires_grad=True)
                        dy = torch.randn(64, 128, device=device)
                        want = reference(layer, x.detach(), dy)
                        y = layer(x)
                        y.backward(dy)
                        for name, got, ref in (("Y", y, want[0]), ("dX", x.grad, want[1]),
                                               ("dW", layer.weight.grad, want[2]), ("db", layer.bias.grad, want[3])):
                            close(self, got.detach(), ref, 2e-5, "%s %s step %d %s" % (preset, device, step, name))

    def test_layer_pickles_and_deep_copies(self):
        """A used layer deep-copies (an EMA or teacher model) and pickles (torch.save of the
        module): the copy computes what the original does, with parameters of its own."""
        import copy
        import io

        torch.manual_seed(7)
        layer = fp4.Linear(64, 32, recipe="nvfp4")
        x = torch.randn(32, 64)
        layer(x)  # plans made
        buf = io.BytesIO()
        torch.save(layer, buf)
        buf.seek(0)
        for c in (copy.deepcopy(layer), torch.load(buf, weights_only=False)):
            self.assertEqual(c.recipe, layer.recipe)
            self.assertEqual((c.seed, c.step), (layer.seed, layer.step))
            torch.testing.assert_close(c(x), layer(x), rtol=0, atol=0)  # same seeds, same bytes
            layer.step -= 1  # both advanced one step above
            with torch.no_grad():
                c.weight.zero_()
            self.assertNotEqual(layer.weight.abs().sum().item(), 0.0)

    def test_many_token_counts_keep_few_structs(self):
        """Token counts that vary from step to step (one signature each) keep a bounded number of
        the one-call steps' structs, and a count seen again after being dropped is still right."""
        torch.manual_seed(6)
        layer = fp4.Linear(64, 32, recipe="mxfp4")
        calls = layer._plan(torch.device("cpu")).calls
        limit = type(calls)._MAX_SIGNATURES
        for tokens in range(32, 32 * (limit + 6) + 1, 32):
            layer(torch.randn(tokens, 64, requires_grad=True)).sum().backward()
            self.assertLessEqual(len(calls.structs), limit)
        x = torch.randn(32, 64, requires_grad=True)  # its signatures were dropped long ago
        dy = torch.randn(32, 32)
        want = reference(layer, x.detach(), dy)
        y = layer(x)
        y.backward(dy)
        close(self, y.detach(), want[0], 2e-5, "Y after the signature came back")
        close(self, x.grad, want[1], 2e-5, "dX after the signature came back")

    def test_three_dimensional_input_and_ragged_tokens(self):
        for device in DEVICES:
            torch.manual_seed(1)
            layer = fp4.Linear(128, 64, recipe="nvfp4", device=device)
            x = torch.randn(3, 33, 128, device=device)  # 99 tokens: padded for the 1x16 blocks of X^T
            y = layer(x)
            self.assertEqual(tuple(y.shape), (3, 33, 64))
            layer.step = 0
            tokens = layer._plan(x.device).padded(99, x.device)
            self.assertEqual(tokens, 112 if device == "cpu" else 128)
            padded = torch.cat([x.reshape(99, 128), torch.zeros(tokens - 99, 128, device=device)])
            y2 = layer(padded)[:99]
            torch.testing.assert_close(y.reshape(99, 64), y2, rtol=0, atol=0)


class RowLocality(unittest.TestCase):
    """Row t of Y = X W^T may depend on row t of X only (token t of a causal model must not see
    later tokens). Every preset blocks X along K within a token, and the per-tensor amax of the
    two-level recipes stays in the unchanged rows here, so changing the later rows of X must leave
    the earlier rows of Y bit for bit, in training (quantize_pair) and evaluation (quantize)."""

    def check(self, preset, device, tokens, fin, fout):
        torch.manual_seed(5)
        layer = fp4.Linear(fin, fout, bias=False, recipe=preset, device=device, dtype=torch.bfloat16)
        x = torch.randn(tokens, fin, device=device, dtype=torch.bfloat16)
        x.view(-1)[::97] *= 8.0  # outliers for OCC
        x[0, 0] = 64.0  # the tensor's amax, in an unchanged row
        half = tokens // 2
        x2 = x.clone()
        x2[half:] = torch.randn(tokens - half, fin, device=device, dtype=torch.bfloat16).clamp(-30, 30)
        for mode in ("train", "eval"):
            layer.train(mode == "train")
            with torch.set_grad_enabled(mode == "train"):
                xa, xb = x.clone().requires_grad_(mode == "train"), x2.clone().requires_grad_(mode == "train")
                layer.step = 0
                ya = layer(xa).detach()
                layer.step = 0
                yb = layer(xb).detach()
            diff = (ya[:half].float() - yb[:half].float()).abs()
            rows = torch.nonzero(diff.amax(1)).flatten()
            self.assertEqual(rows.numel(), 0, "%s %s %s: rows %s of Y changed (max %.3g) when only rows >= %d of X did"
                             % (preset, device, mode, rows[:8].tolist(), diff.max().item(), half))
            self.assertFalse(torch.equal(ya[half:], yb[half:]), "%s %s %s: later rows unchanged" % (preset, device, mode))

    def test_every_recipe(self):
        for device in DEVICES:
            for preset in PRESETS:
                with self.subTest(device=device, preset=preset):
                    self.check(preset, device, 256, 256, 128)

    @unittest.skipUnless(torch.cuda.is_available(), "CUDA")
    def test_training_shapes_on_cuda(self):
        for preset in PRESETS:  # the shapes of examples/train_gpt's attention and MLP projections
            for fin, fout in ((512, 1536), (1408, 512)):
                with self.subTest(preset=preset, fin=fin, fout=fout):
                    self.check(preset, "cuda", 8192, fin, fout)


class Training(unittest.TestCase):
    def test_seeds_advance_each_step(self):
        device = DEVICES[-1]
        torch.manual_seed(2)
        layer = fp4.Linear(128, 64, recipe="nvfp4", device=device)
        x = torch.randn(64, 128, device=device)
        dy = torch.randn(64, 64, device=device)
        grads, outputs, seeds = [], [], []
        for _ in range(2):
            seeds.append(layer.seeds())
            layer.weight.grad = None
            y = layer(x)
            y.backward(dy)
            outputs.append(y.detach())
            grads.append(layer.weight.grad.clone())
        self.assertNotEqual(seeds[0]["dy"], seeds[1]["dy"])
        torch.testing.assert_close(outputs[0], outputs[1], rtol=0, atol=0)  # X and W round to nearest
        self.assertFalse(torch.equal(grads[0], grads[1]))  # dY rounds stochastically
        layer.eval()
        with torch.no_grad():
            y_eval = layer(x)  # forward copies only
        self.assertEqual(layer.step, 2)
        torch.testing.assert_close(y_eval, outputs[0], rtol=0, atol=0)

    def test_seeds_made_only_where_a_recipe_rounds_stochastically(self):
        # mxfp4 rounds every operand to nearest: a step makes no seeds (its results are those of
        # any seeds, LinearVsFakeQuant's reference uses the layer's); nvfp4 rounds dY
        # stochastically: every training step makes them.
        device = DEVICES[-1]
        x = torch.randn(64, 128, device=device)
        dy = torch.randn(64, 64, device=device)
        for recipe, want in (("mxfp4", 0), ("nvfp4", 2)):
            layer = fp4.Linear(128, 64, recipe=recipe, device=device)
            made = []
            seeds = layer.seeds
            layer.seeds = lambda step=None, seeds=seeds, made=made: made.append(step) or seeds(step)
            for _ in range(2):
                layer(x).backward(dy)
            self.assertEqual(len(made), want, recipe)

    def test_one_call_step_equals_per_operation_calls(self):
        """The layer's one-call-each-way path (Engine.linear_forward / linear_backward) and its
        per-operation path (quantize_pair + gemm) give the same bytes, ragged tokens included, but
        for the bias gradient (each path's own order of FP32 sums)."""
        for device in DEVICES:
            for preset in ("mxfp4", "nvfp4", "tetrajet", "ue5m3"):
                with self.subTest(device=device, preset=preset):
                    torch.manual_seed(4)
                    fused = fp4.Linear(128, 96, recipe=preset, device=device, seed=9)
                    split = fp4.Linear(128, 96, recipe=preset, device=device, seed=9)
                    split.load_state_dict(fused.state_dict())
                    self.assertTrue(fused._plan(torch.device(device)).fused)
                    split._plan(torch.device(device)).fused = False
                    x = torch.randn(50, 128, device=device)
                    dy = torch.randn(50, 96, device=device)
                    got = []
                    for layer in (fused, split):
                        xi = x.clone().requires_grad_(True)
                        y = layer(xi)
                        y.backward(dy)
                        got.append((y.detach(), xi.grad, layer.weight.grad, layer.bias.grad))
                    for what, a, b in zip(("y", "dx", "dw"), got[0], got[1]):
                        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=what)
                    # db: the fused step sums dY's columns in fp4jit's fixed order (from its
                    # quantize pass), the split one with PyTorch's own sum.
                    torch.testing.assert_close(got[0][3], got[1][3], rtol=1e-5, atol=1e-5, msg="db")

    def test_fused_wgrad_accumulation_adds_into_main_grad(self):
        """fuse_wgrad_accumulation: dW added into weight.main_grad by the wgrad GEMM's epilogue
        (one-call and per-operation paths; msfp4's DGE with an add of its own; float32 and
        bfloat16 layers, main_grad float32 or bfloat16) over two micro-batches, against the same
        layer without it (weight.grad summed by autograd); dX and db unchanged, no weight.grad, the
        flag set; a missing or misshapen main_grad named."""
        f32, bf16 = torch.float32, torch.bfloat16
        cases = (("mxfp4", False, f32, f32), ("nvfp4", False, f32, f32), ("nvfp4", True, f32, f32),
                 ("msfp4", False, f32, f32), ("mxfp4", False, bf16, bf16), ("nvfp4", True, bf16, f32),
                 ("msfp4", False, bf16, bf16))
        for device in DEVICES:
            for preset, split_path, dtype, main_dtype in cases:
                with self.subTest(device=device, preset=preset, split_path=split_path, dtype=dtype,
                                  main_dtype=main_dtype):
                    torch.manual_seed(6)
                    fused = fp4.Linear(128, 96, recipe=preset, device=device, dtype=dtype, seed=3,
                                       fuse_wgrad_accumulation=True)
                    plain = fp4.Linear(128, 96, recipe=preset, device=device, dtype=dtype, seed=3)
                    plain.load_state_dict(fused.state_dict())
                    if split_path:  # both layers: each path sums db in its own order
                        for layer in (fused, plain):
                            layer._plan(torch.device(device)).fused = False
                    start = torch.randn(96, 128, device=device, dtype=main_dtype)
                    fused.weight.main_grad = start.clone()
                    for _ in range(2):  # two micro-batches, the seeds advancing alike
                        x = torch.randn(64, 128, device=device, dtype=dtype)
                        dy = torch.randn(64, 96, device=device, dtype=dtype)
                        got = []
                        for layer in (fused, plain):
                            xi = x.clone().requires_grad_(True)
                            layer(xi).backward(dy)
                            got.append((xi.grad, layer.bias.grad))
                        torch.testing.assert_close(got[0][0], got[1][0], rtol=0, atol=0, msg="dx")
                        torch.testing.assert_close(got[0][1], got[1][1], rtol=0, atol=0, msg="db")
                    self.assertIsNone(fused.weight.grad)
                    self.assertTrue(fused.weight.grad_added_to_main_grad)
                    # Sums in FP32 either way; the epilogue may round dW's scaling and the add once.
                    # A bfloat16 main_grad rounds each sum, autograd each dW and its sum.
                    self.assertEqual(fused.weight.main_grad.dtype, main_dtype)
                    close(self, fused.weight.main_grad, start.double() + plain.weight.grad.double(),
                          1e-6 if dtype == main_dtype == f32 else 1e-2, "%s %s main_grad" % (preset, device))
            layer = fp4.Linear(128, 96, recipe="mxfp4", device=device, fuse_wgrad_accumulation=True)
            self.assertIn("fuse_wgrad_accumulation=True", repr(layer))
            x = torch.randn(64, 128, device=device, requires_grad=True)
            with self.assertRaisesRegex(fp4jit.Error, "weight.main_grad is not set"):
                layer(x).sum().backward()
            layer.weight.main_grad = torch.zeros(128, 96, device=device)
            with self.assertRaisesRegex(fp4jit.Error, r"main_grad must be a contiguous \[96, 128\] tensor"):
                layer(x).sum().backward()
            layer.weight.main_grad = torch.zeros(96, 128, device=device, dtype=torch.float16)
            with self.assertRaisesRegex(fp4jit.Error, "tensor of float32 on .*, got \\[96, 128\\] float16"):
                layer(x).sum().backward()

    def test_weights_kept_over_microbatches(self):
        """is_first_microbatch: W quantized by the first micro-batch and reused by the others (one-call
        and per-operation paths, msfp4's OCC and DGE): the same results as quantizing it again
        where W is rounded to nearest; W's copies not made again when reused (W's storage changed
        behind PyTorch's version counter leaves the results as they were); an in-place update,
        another tensor or a missing first micro-batch named; set_first_microbatch for a whole
        model."""
        for device in DEVICES:
            for preset, split_path in (("mxfp4", False), ("nvfp4", False), ("nvfp4", True), ("msfp4", False),
                                       ("tetrajet", False)):
                with self.subTest(device=device, preset=preset, split_path=split_path):
                    torch.manual_seed(8)
                    kept = fp4.Linear(128, 96, recipe=preset, device=device, seed=5)
                    plain = fp4.Linear(128, 96, recipe=preset, device=device, seed=5)
                    plain.load_state_dict(kept.state_dict())
                    if split_path:
                        for layer in (kept, plain):
                            layer._plan(torch.device(device)).fused = False
                    for i in range(3):
                        x = torch.randn(64, 128, device=device)
                        dy = torch.randn(64, 96, device=device)
                        # W's storage changed without a version bump: a reusing forward does not quantize it
                        # (msfp4's OCC compensation and DGE read W itself in every micro-batch).
                        if i == 2 and preset != "msfp4":
                            kept.weight.data.mul_(3.0)
                        got = []
                        for layer in (kept, plain):
                            layer.zero_grad(set_to_none=True)
                            xi = x.clone().requires_grad_(True)
                            y = layer(xi, is_first_microbatch=(i == 0)) if layer is kept else layer(xi)
                            y.backward(dy)
                            got.append((y.detach(), xi.grad, layer.weight.grad))
                        torch.testing.assert_close(got[0][0], got[1][0], rtol=0, atol=0, msg="y %d" % i)
                        torch.testing.assert_close(got[0][2], got[1][2], rtol=0, atol=0, msg="dw %d" % i)
                        if preset == "tetrajet" and i > 0:  # W^T rounded stochastically: the first draw reused
                            close(self, got[0][1], got[1][1].double(), 0.1, "tetrajet dx %d" % i)
                        else:
                            torch.testing.assert_close(got[0][1], got[1][1], rtol=0, atol=0, msg="dx %d" % i)
            # What a reusing forward refuses.
            layer = fp4.Linear(128, 96, recipe="mxfp4", device=device)
            x = torch.randn(64, 128, device=device)
            with self.assertRaisesRegex(fp4jit.Error, "no forward with is_first_microbatch=True"):
                layer(x, is_first_microbatch=False)
            layer(x, is_first_microbatch=True)
            layer(x, is_first_microbatch=False)
            with torch.no_grad():
                layer.weight.add_(1.0)  # as an optimizer step does
            with self.assertRaisesRegex(fp4jit.Error, "changed since it was quantized .updated in place"):
                layer(x, is_first_microbatch=False)
            layer(x, is_first_microbatch=True)
            layer.weight = torch.nn.Parameter(layer.weight.detach().clone())
            with self.assertRaisesRegex(fp4jit.Error, "changed since it was quantized .another tensor"):
                layer(x, is_first_microbatch=False)
            layer(x)  # the option off: nothing kept
            self.assertIsNone(layer._weights)
            # A whole model: the attribute, set by set_first_microbatch, where forward passes nothing.
            model = torch.nn.Sequential(fp4.Linear(128, 128, recipe="mxfp4", device=device), torch.nn.ReLU(),
                                        fp4.Linear(128, 96, recipe="mxfp4", device=device))
            ref = copy.deepcopy(model)
            self.assertEqual(fp4.set_first_microbatch(model, True), 2)
            torch.testing.assert_close(model(x), ref(x), rtol=0, atol=0)
            self.assertEqual(fp4.set_first_microbatch(model, False), 2)
            with torch.no_grad():
                model[0].weight.data.add_(1.0)  # not read while reused
            torch.testing.assert_close(model(x), ref(x), rtol=0, atol=0)
            self.assertIsNotNone(model[0]._weights)
            self.assertIsNone(copy.deepcopy(model)[0]._weights)  # device buffers stay with their layer
            fp4.set_first_microbatch(model, None)

    def test_non_contiguous_weight(self):
        """A weight that is a transposed view (a tied or re-laid-out parameter) gives the layer
        the same results as its contiguous copy, on the one-call path and the per-operation one
        (msfp4: OCC and DGE)."""
        for preset in ("mxfp4", "msfp4"):
            with self.subTest(preset=preset):
                self.non_contiguous_weight(preset)

    def non_contiguous_weight(self, preset):
        device = DEVICES[-1]
        torch.manual_seed(6)
        a = fp4.Linear(128, 64, recipe=preset, device=device, seed=3)
        b = fp4.Linear(128, 64, recipe=preset, device=device, seed=3)
        b.weight = torch.nn.Parameter(a.weight.detach().t().contiguous().t())
        b.bias = torch.nn.Parameter(a.bias.detach().clone())
        self.assertFalse(b.weight.is_contiguous())
        x = torch.randn(64, 128, device=device)
        dy = torch.randn(64, 64, device=device)
        ya, yb = a(x), b(x)
        torch.testing.assert_close(ya, yb, rtol=0, atol=0)
        ya.backward(dy)
        yb.backward(dy)
        torch.testing.assert_close(a.weight.grad, b.weight.grad, rtol=0, atol=0)

    def test_convert_keeps_parameters_and_named_layers(self):
        device = DEVICES[-1]
        torch.manual_seed(3)
        model = torch.nn.Sequential(
            torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(),
            torch.nn.Linear(128, 128), torch.nn.Linear(128, 10),
        ).to(device)
        before = [p for p in model.parameters()]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fp4.convert(model, "mxfp4", keep=["4"])
        self.assertIsInstance(model[0], fp4.Linear)
        self.assertIsInstance(model[2], fp4.Linear)
        self.assertIs(type(model[4]), torch.nn.Linear)  # kept by name
        self.assertIs(type(model[5]), torch.nn.Linear)  # 10 outputs: no 1x32 blocks fit
        self.assertTrue(any("keeping 5" in str(w.message) for w in caught))
        self.assertEqual([id(p) for p in model.parameters()], [id(p) for p in before])
        out = model(torch.randn(32, 128, device=device))
        out.sum().backward()
        self.assertTrue(all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters()))
        model2 = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 64), torch.nn.Linear(64, 64))
        fp4.convert(model2, "nvfp4", keep=2)
        self.assertEqual([type(m) is fp4.Linear for m in model2], [True, False, False])
        self.assertIn("recipe=nvfp4)", repr(model2[0]))  # the recipe as written, not its canonical text
        model3 = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 64))
        fp4.convert(model3, "nvfp4", keep=5)  # more than there are: all kept
        self.assertEqual([type(m) is fp4.Linear for m in model3], [False, False])

    @unittest.skipUnless(torch.cuda.is_available(), "CUDA")
    def test_runs_on_the_current_stream(self):
        torch.manual_seed(4)
        layer = fp4.Linear(256, 256, recipe="nvfp4", device="cuda", dtype=torch.bfloat16)
        x = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16)
        base = layer(x)
        layer.step = 0
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            y = layer(x)
        torch.cuda.current_stream().wait_stream(s)
        torch.testing.assert_close(y, base, rtol=0, atol=0)


class CudaGraphs(unittest.TestCase):
    """A layer's training step captured into a CUDA graph (torch.cuda.graph) and replayed."""

    @staticmethod
    def capture(layer, x, dy):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up on a side stream, as torch.cuda.graph asks
            layer(x).backward(dy)
        torch.cuda.current_stream().wait_stream(s)
        layer.zero_grad(set_to_none=True)
        x.grad = None
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = layer(x)
            y.backward(dy)
        return g, y

    @unittest.skipUnless(torch.cuda.is_available(), "CUDA")
    def test_replays_equal_eager_steps_on_new_inputs(self):
        """Each replay recomputes the step from the static inputs' current values: Y, dX, dW and
        db equal an eager step's on the same values, byte for byte (recipes without stochastic
        rounding, and nvfp4 with its gradients rounded to nearest)."""
        for text in ("mxfp4", "msfp4", "nvfp4:dy.round=even,dyt.round=even"):
            with self.subTest(text):
                torch.manual_seed(7)
                layer = fp4.Linear(256, 192, recipe=text, device="cuda", dtype=torch.bfloat16)
                x = torch.randn(320, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                dy = torch.randn(320, 192, device="cuda", dtype=torch.bfloat16)
                g, y = self.capture(layer, x, dy)
                for _ in range(2):
                    with torch.no_grad():
                        x.copy_(torch.randn_like(x))
                        dy.copy_(torch.randn_like(dy))
                    g.replay()
                    got = [t.clone() for t in (y, x.grad, layer.weight.grad, layer.bias.grad)]
                    static = (x.grad, layer.weight.grad, layer.bias.grad)
                    layer.zero_grad(set_to_none=True)
                    x.grad = None
                    ye = layer(x)
                    ye.backward(dy)
                    want = (ye, x.grad, layer.weight.grad, layer.bias.grad)
                    for name, a, b in zip(("y", "dx", "dw", "db"), got, want):
                        self.assertTrue(torch.equal(a, b), "%s: %s differs from the eager step" % (text, name))
                    x.grad, layer.weight.grad, layer.bias.grad = static  # the graph's own buffers
                self.assertFalse(torch.equal(got[0], torch.zeros_like(got[0])))

    @unittest.skipUnless(torch.cuda.is_available(), "CUDA")
    def test_stochastic_rounding_draws_new_bits_every_replay(self):
        """A captured nvfp4 step rounds dY stochastically with the seeds of its capture mixed with
        the layer's replay counter (read on the device): replay k's dX is the dgrad GEMM of dY
        quantized with mix_seed(seed, k), so replays on the same inputs differ, and a second layer
        with the same seed, captured the same way, replays the same sequence; the forward (rounded
        to nearest) is the same every replay."""

        def replays(seed):
            torch.manual_seed(8)
            layer = fp4.Linear(128, 64, recipe="nvfp4", device="cuda", dtype=torch.bfloat16, seed=seed)
            x = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            dy = torch.randn(128, 64, device="cuda", dtype=torch.bfloat16)
            g, y = self.capture(layer, x, dy)
            out = []
            for _ in range(3):
                g.replay()
                out.append([t.clone() for t in (y, x.grad, layer.weight.grad)])
            return layer, x, dy, out

        layer, x, dy, first = replays(3)
        _, _, _, second = replays(3)
        for k, (a, b) in enumerate(zip(first, second)):
            for name, u, v in zip(("y", "dx", "dw"), a, b):
                self.assertTrue(torch.equal(u, v), "replay %d: %s differs between two captures" % (k, name))
        self.assertTrue(torch.equal(first[0][0], first[1][0]))
        self.assertFalse(torch.equal(first[0][1], first[1][1]))
        self.assertFalse(torch.equal(first[1][2], first[2][2]))
        self.assertEqual(int(layer._replays.item()), 3)
        seeds = layer.seeds(step=1)  # the captured step (one eager warm-up step before it)
        engine = fp4.engine_for(x.device)
        _, qwt = engine.quantize_pair(layer.recipe, "w", layer.weight.detach(), seed=seeds["w"])
        for k in range(3):
            qdy, _ = engine.quantize_pair(layer.recipe, "dy", dy, seed=fp4jit.mix_seed(seeds["dy"], k))
            dx = engine.gemm("dgrad", qdy, qwt, out=torch.empty_like(x), dtype="bfloat16")
            self.assertTrue(torch.equal(dx, first[k][1]), "replay %d: dX is not dY's at mix_seed(seed, %d)" % (k, k))

    @unittest.skipUnless(torch.cuda.is_available(), "CUDA")
    def test_step_counter_in_the_wrong_memory_is_refused(self):
        """seed_step in device memory for a CPU backend (host or reference: either reads it on the
        host), or in host memory for the CUDA backend (whose kernels read it), is refused by name."""
        x = torch.randn(64, 64)
        with self.assertRaisesRegex(fp4jit.Error, "seed_step: device memory for the (host|reference) backend"):
            fp4.engine_for("cpu").quantize("nvfp4", "dy", x, seed_step=torch.zeros(1, dtype=torch.int64, device="cuda"))
        with self.assertRaisesRegex(fp4jit.Error, "seed_step .* not memory the GPU can address"):
            fp4.engine_for(torch.device("cuda", 0)).quantize("nvfp4", "dy", x.cuda(),
                                                             seed_step=torch.zeros(1, dtype=torch.int64))

    @unittest.skipUnless(torch.cuda.is_available(), "CUDA")
    def test_capture_before_an_eager_step_is_refused(self):
        """The replay counter is made by an eager step: made inside the capture, its zeroing would
        be part of the graph. Capturing a layer's first step is refused by name."""
        layer = fp4.Linear(128, 64, recipe="nvfp4", device="cuda", dtype=torch.bfloat16)
        x = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        g = torch.cuda.CUDAGraph()
        with self.assertRaisesRegex(fp4jit.Error, "before any eager step"):
            with torch.cuda.graph(g):
                layer(x)
        torch.cuda.synchronize()


class Structs(unittest.TestCase):
    """Views of PyTorch tensors (fp4jit._arrays.view, and torch_struct, the layer's bare structs)
    are copied from a template per dtype, shape, strides and device: each must describe its own
    tensor as a view made from scratch does."""

    FIELDS = ("dtype", "ndim", "device", "device_id")

    def assert_same(self, s, t, what):
        fresh = _arrays._torch_view_checked(t, what).struct  # no template
        self.assertEqual(s.data, t.data_ptr(), what)
        for f in self.FIELDS:
            self.assertEqual(getattr(s, f), getattr(fresh, f), "%s: %s" % (what, f))
        self.assertEqual(s.ndim, t.dim(), what)
        self.assertEqual([s.shape[i] for i in range(t.dim())], list(t.shape), what)
        self.assertEqual([s.strides[i] for i in range(t.dim())], list(t.stride()), what)

    def test_structs_and_views_describe_their_tensor(self):
        for device in DEVICES:
            base = torch.randn(6, 40, 64, device=device)
            cases = [
                ("contiguous", torch.randn(40, 64, device=device, dtype=torch.bfloat16)),
                ("same key, other data", torch.randn(40, 64, device=device, dtype=torch.bfloat16)),
                ("three dimensions", base),
                ("transposed", base[1].t()),
                ("offset rows", base[2, 8:24]),
                ("one dimension", torch.randn(96, device=device, dtype=torch.float16)),
            ]
            for what, t in cases:
                with self.subTest(device=device, case=what):
                    self.assert_same(_arrays.torch_struct(t, what), t, what)
                    self.assert_same(_arrays.torch_struct(t, what), t, what + " (from the template)")
                    v = _arrays.view(t, what)
                    self.assert_same(v.struct, t, what + " (view)")
                    self.assertIs(v.keep, t)
                    self.assertEqual(v.shape, tuple(t.shape))
                    self.assertEqual((v.rows, v.cols), (t.numel() // t.shape[-1], t.shape[-1]))

    def test_templates_do_not_keep_tensors_alive(self):
        import gc
        import weakref

        t = torch.randn(24, 72)  # a shape no other test uses
        ref = weakref.ref(t)
        _arrays.torch_struct(t, "t")
        _arrays.view(t, "t")
        del t
        gc.collect()
        self.assertIsNone(ref(), "a template kept its first tensor alive")

    def test_past_the_limit_structs_are_still_right(self):
        saved = _arrays._TORCH_TEMPLATE_LIMIT
        _arrays._TORCH_TEMPLATE_LIMIT = len(_arrays._TORCH_TEMPLATES)
        try:
            t = torch.randn(56, 8)
            s = _arrays.torch_struct(t, "t")
            self.assertNotIn((t.dtype, t.shape, t.stride(), t.device), _arrays._TORCH_TEMPLATES)
            self.assert_same(s, t, "past the limit")
            self.assert_same(_arrays.view(t, "t").struct, t, "past the limit (view)")
            with self.assertRaises(fp4jit.Error):  # still checked
                _arrays.torch_struct(torch.zeros(56, 8, dtype=torch.int32), "t")
        finally:
            _arrays._TORCH_TEMPLATE_LIMIT = saved

    def test_wrong_input_width_is_named(self):
        layer = fp4.Linear(64, 32, recipe="mxfp4")
        for x in (torch.randn(8, 32), torch.randn(2, 3, 96), torch.tensor(1.0)):
            with self.assertRaises(fp4jit.Error) as e:
                layer(x)
            self.assertEqual(e.exception.status, "INVALID_ARGUMENT")
            self.assertIn("Linear(64, 32): input of shape %s, expected [..., 64]" % list(x.shape), str(e.exception))

    def test_bad_dtype_is_named(self):
        with self.assertRaises(fp4jit.Error) as e:
            _arrays.torch_struct(torch.zeros(4, 4, dtype=torch.int32), "Linear input")
        self.assertEqual(e.exception.status, "INVALID_ARGUMENT")
        self.assertIn("Linear input", str(e.exception))
        self.assertIn("int32", str(e.exception))


if __name__ == "__main__":
    unittest.main()
