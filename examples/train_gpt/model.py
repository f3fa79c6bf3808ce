"""A small LLaMA-style decoder for examples/train_gpt: byte vocabulary, RMSNorm, rotary position
embeddings, causal attention, SwiGLU MLP, pre-norm residual blocks.

The linear layers are plain torch.nn.Linear (fused QKV and fused gate/up projections);
fp4jit.torch.convert swaps them for FP4 ones. Parameters are FP32 (the optimizer's master copy);
the linear layers' inputs are in the activation dtype (BF16), which is what the BF16 baseline's
autocast GEMMs and the FP4 quantizers both read.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Config:
    vocab: int = 256
    d_model: int = 512
    n_layers: int = 8
    n_heads: int = 8
    d_ff: int = 1408  # SwiGLU hidden size: ~8/3 d_model, a multiple of 32 (every recipe's block)
    seq_len: int = 256
    act_dtype: torch.dtype = torch.bfloat16


class RMSNorm(nn.Module):
    def __init__(self, dim, out_dtype, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps
        self.out_dtype = out_dtype

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        return y.to(self.out_dtype)


def rope_tables(seq_len, head_dim, base=10000.0, device=None):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin):
    """x: [batch, heads, seq, head_dim]; rotates pairs (x[2i], x[2i+1]) by position angles."""
    xf = x.float()
    x1, x2 = xf[..., 0::2], xf[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
    return out.to(x.dtype)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.attn_norm = RMSNorm(d, cfg.act_dtype)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.mlp_norm = RMSNorm(d, cfg.act_dtype)
        self.gate_up = nn.Linear(d, 2 * cfg.d_ff, bias=False)
        self.down = nn.Linear(cfg.d_ff, d, bias=False)
        self.act_dtype = cfg.act_dtype

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        h = self.n_heads
        q, k, v = self.qkv(self.attn_norm(x)).to(self.act_dtype).split(d, dim=-1)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d)).float()
        gate, up = self.gate_up(self.mlp_norm(x)).to(self.act_dtype).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up).float()


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, cfg.act_dtype)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        cos, sin = rope_tables(cfg.seq_len, cfg.d_model // cfg.n_heads)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * cfg.n_layers) if name.endswith(("o.weight", "down.weight")) else 0.02
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.embed(idx)
        cos, sin = self.cos[:t], self.sin[:t]
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.lm_head(self.norm(x)).float()


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())
