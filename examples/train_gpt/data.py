"""The corpus of examples/train_gpt: the Python standard library's own source files, as bytes.

Every machine with Python has it, so the example needs no download. Files are listed in sorted
order of their path relative to the library's root; a file goes to validation when the CRC-32 of
that path is 0 modulo `val_every` (about 1 in 20 files by default), else to training. The split
depends only on the paths, so it is the same on every run and rank of one Python installation;
another Python version has other files (the summary prints the corpus' size and hash).

Batches are drawn by offset: step s of a run with seed S takes its global batch of windows from
a generator seeded with (S, s), and rank r of W ranks takes rows [r B/W, (r+1) B/W) of it, so a
run on W GPUs sees exactly the sequences a one-GPU run sees at the same global batch.

This module needs NumPy only (no PyTorch): tests/python/test_train_gpt_data.py runs it in CI.
"""

import hashlib
import os
import sysconfig
import zlib

import numpy as np

SEPARATOR = b"\n\x00\n"  # between files; byte 0 never occurs inside a Python source file


def stdlib_root():
    return sysconfig.get_paths()["stdlib"]


def list_sources(root):
    """The .py files under root (site-packages excluded), as sorted relative paths."""
    paths = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__"))
        for name in files:
            if name.endswith(".py"):
                paths.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return sorted(paths)


def is_validation(relpath, val_every=20):
    return zlib.crc32(relpath.encode()) % val_every == 0


class Corpus:
    """Train and validation byte arrays (uint8) with the fixed split."""

    def __init__(self, root=None, val_every=20, max_bytes=None):
        self.root = root or stdlib_root()
        paths = list_sources(self.root)
        if not paths:
            raise RuntimeError("train_gpt: no .py files under %s (the corpus is the standard library's "
                               "source; pass --corpus DIR to use another folder of .py files)" % self.root)
        train, val = [], []
        digest = hashlib.sha256()
        size = 0
        for rel in paths:
            with open(os.path.join(self.root, rel), "rb") as f:
                data = f.read()
            digest.update(rel.encode() + b"\0" + data)
            (val if is_validation(rel, val_every) else train).append(data + SEPARATOR)
            size += len(data)
            if max_bytes is not None and size >= max_bytes:
                break
        self.files = len(train) + len(val)
        self.train = np.frombuffer(b"".join(train), dtype=np.uint8)
        self.val = np.frombuffer(b"".join(val), dtype=np.uint8)
        self.sha256 = digest.hexdigest()[:16]

    def describe(self):
        return "%s: %d files, %.1f MB train, %.2f MB validation, sha256 %s" % (
            self.root, self.files, self.train.size / 1e6, self.val.size / 1e6, self.sha256)


def batch_offsets(size, seq_len, batch, seed, step):
    """Start offsets of the global batch of step `step` (windows of seq_len + 1 bytes)."""
    rng = np.random.Generator(np.random.Philox(key=[seed & (2**64 - 1), step & (2**64 - 1)]))
    return rng.integers(0, size - seq_len - 1, size=batch, dtype=np.int64)


def rank_slice(batch, rank, world):
    if batch % world:
        raise ValueError("train_gpt: global batch %d is not divisible by the %d ranks" % (batch, world))
    per = batch // world
    return slice(rank * per, (rank + 1) * per)


def windows(data, offsets, seq_len):
    """[len(offsets), seq_len + 1] int64: inputs are [:, :-1], targets [:, 1:]."""
    index = offsets[:, None] + np.arange(seq_len + 1, dtype=np.int64)[None, :]
    return data[index].astype(np.int64)
