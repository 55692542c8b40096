"""Brute-force oracle of the mask kernels: python sets, one token at a time.

Shared by ``tests/test_kernels.py`` and ``benchmarks/gpu_suite.py`` (which
runs on a GPU machine without pytest or hypothesis), so it needs only numpy
and torch. A :class:`Batch` holds raw CSR arrays, valid or not: the oracle
says what the kernels must do with any of them (:meth:`Batch.allowed`,
:meth:`Batch.writes`) and whether validation must reject them
(:meth:`Batch.problems`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

INT32_MAX = 2**31 - 1
BIT_VIEW = {torch.float32: torch.int32, torch.bfloat16: torch.int16, torch.float16: torch.int16}


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits of a float tensor (so NaN payloads and -0.0 compare exactly)."""
    return t.view(BIT_VIEW[t.dtype])


def bit_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(bits(a.cpu()), bits(b.cpu()))


def assert_bit_equal(a: torch.Tensor, b: torch.Tensor) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if not torch.equal(bits(a.cpu()), bits(b.cpu())):
        diff = (bits(a.cpu()) != bits(b.cpu())).nonzero()
        raise AssertionError(f"{diff.shape[0]} elements differ, first at {diff[:5].tolist()}")


def _clamp(x: int, length: int) -> int:
    return min(max(x, 0), length)


@dataclass
class Batch:
    """A table of ``len(sets)`` rows over ``V`` tokens and one batch's raw CSR arrays (any values)."""

    V: int
    sets: list[set[int]]  # row r's tokens; may hold bits >= V (the kernels must clear them)
    row_ptr: list[int]
    row_idx: list[int]
    extra_ptr: list[int]
    extra_ids: list[int]
    B_total: int  # rows of logits / bitmask
    n_cols: int  # logits columns
    indices: list[int] | None = None
    skip: list[bool] | None = None

    @property
    def W(self) -> int:
        return -(-self.V // 32)

    @property
    def n(self) -> int:
        return len(self.row_ptr) - 1

    def target(self, b: int) -> int:
        return b if self.indices is None else self.indices[b]

    def skipped(self, b: int) -> bool:
        return self.skip is not None and bool(self.skip[b])

    def writes(self, b: int) -> bool:
        """Entry b touches its target row: not skipped and the target lies inside the tensor."""
        return not self.skipped(b) and 0 <= self.target(b) < self.B_total

    def allowed(self, b: int) -> set[int]:
        """Entry b's allowed tokens: pointers clamped, unknown row ids and extra ids ignored."""
        out: set[int] = set()
        lo, hi = _clamp(self.row_ptr[b], len(self.row_idx)), _clamp(self.row_ptr[b + 1], len(self.row_idx))
        for r in self.row_idx[lo:hi]:
            if 0 <= r < len(self.sets):
                out |= self.sets[r]
        lo, hi = _clamp(self.extra_ptr[b], len(self.extra_ids)), _clamp(self.extra_ptr[b + 1], len(self.extra_ids))
        out |= {t for t in self.extra_ids[lo:hi] if 0 <= t < self.V}
        return {t for t in out if t < self.V}

    def problems(self) -> list[str]:
        """Why validation must reject this batch (empty: it must accept it)."""
        out = []
        if self.indices is None and self.n > self.B_total:
            out.append("more entries than target rows")
        for name, ptr, ids, hi in (("row", self.row_ptr, self.row_idx, len(self.sets)),
                                   ("extra", self.extra_ptr, self.extra_ids, self.V)):
            if ptr[0] < 0 or ptr[-1] > len(ids) or any(b < a for a, b in zip(ptr, ptr[1:])):
                out.append(f"bad {name}_ptr")
            elif any(not 0 <= i < hi for i in ids[ptr[0]:ptr[-1]]):
                out.append(f"{name} id out of range")
        if self.indices is not None:
            active = [self.indices[b] for b in range(self.n) if not self.skipped(b)]
            if any(not 0 <= t < self.B_total for t in active):
                out.append("index out of range")
            if len(set(active)) != len(active):
                out.append("duplicate index")
        return out

    def duplicate_writes(self) -> bool:
        """Two writing entries share a target row (which write lands last is then undefined)."""
        targets = [self.target(b) for b in range(self.n) if self.writes(b)]
        return len(set(targets)) != len(targets)

    # ------------------------------------------------------------ tensors

    def rows(self, device="cpu") -> torch.Tensor:
        words = np.zeros((len(self.sets), self.W), dtype=np.uint32)
        for r, s in enumerate(self.sets):
            for t in s:
                if t < self.W * 32:
                    words[r, t // 32] |= np.uint32(1 << (t % 32))
        return torch.from_numpy(words.view(np.int32).copy()).to(device)

    def csr(self, device="cpu") -> tuple[torch.Tensor, ...]:
        """``(row_ptr, row_idx, extra_ptr, extra_ids)`` as int32 tensors."""
        return tuple(torch.tensor(a, dtype=torch.int32, device=device)
                     for a in (self.row_ptr, self.row_idx, self.extra_ptr, self.extra_ids))

    def options(self, device="cpu") -> dict:
        """``indices``, ``skip`` and ``vocab_size`` keyword arguments."""
        return dict(
            indices=None if self.indices is None else torch.tensor(self.indices, dtype=torch.int32, device=device),
            skip=None if self.skip is None else torch.tensor(self.skip, dtype=torch.bool, device=device),
            vocab_size=self.V,
        )

    def expect_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """``logits`` masked one token at a time."""
        out = logits.clone().cpu()
        for b in range(self.n):
            if not self.writes(b):
                continue
            ban = np.ones(self.n_cols, dtype=bool)
            ban[[t for t in self.allowed(b) if t < self.n_cols]] = False
            out[self.target(b), torch.from_numpy(ban)] = float("-inf")
        return out

    def expect_bitmask(self, bitmask: torch.Tensor) -> torch.Tensor:
        """``bitmask`` with every writing entry's row replaced by its packed allowed set."""
        out = bitmask.clone().cpu()
        for b in range(self.n):
            if not self.writes(b):
                continue
            words = np.zeros(out.shape[1], dtype=np.uint32)
            for t in self.allowed(b):
                if t // 32 < out.shape[1]:
                    words[t // 32] |= np.uint32(1 << (t % 32))
            out[self.target(b)] = torch.from_numpy(words.view(np.int32))
        return out


def pack(V: int, sets: list[set[int]], row_lists: list[list[int]], extra_lists: list[list[int]], B_total: int,
         n_cols: int, indices=None, skip=None) -> Batch:
    """A :class:`Batch` from per-entry lists (the CSR arrays packed as ``build_csr`` packs them)."""
    row_ptr, extra_ptr = [0], [0]
    for rl, el in zip(row_lists, extra_lists):
        row_ptr.append(row_ptr[-1] + len(rl))
        extra_ptr.append(extra_ptr[-1] + len(el))
    return Batch(V, sets, row_ptr, [r for rl in row_lists for r in rl], extra_ptr,
                 [t for el in extra_lists for t in el], B_total, n_cols,
                 None if indices is None else list(indices), None if skip is None else list(skip))


def random_batch(rng: np.random.Generator, V: int, n: int, R: int, *, use_indices: bool, use_skip: bool,
                 spare_rows: int = 2, extra_cols: int = 0, extras: tuple[int, int] = (0, 7),
                 sort_extras: bool = False) -> Batch:
    """A valid random batch: rows of mixed densities (bits past V set too), 0-4 rows and ``extras`` (lo, hi)
    extra ids each (sorted and distinct, as matchers give them, if ``sort_extras``)."""
    W = -(-V // 32)
    sets = []
    for _ in range(R):
        density = rng.choice([0.0, 0.01, 0.3, 0.9, 1.0])
        sets.append({int(t) for t in np.nonzero(rng.random(W * 32) < density)[0]})
    edge = sorted({0, V - 1, (W - 1) * 32, max(0, V - 33), min(V - 1, 31)})
    row_lists, extra_lists = [], []
    for _ in range(n):
        rl = [int(r) for r in rng.integers(0, R, int(rng.integers(0, 5)))] if R else []
        if rl and rng.random() < 0.3:
            rl.append(rl[0])  # a repeated row id
        row_lists.append(rl)
        k = int(rng.integers(*extras))
        ids = [int(edge[i]) if rng.random() < 0.5 else int(rng.integers(0, V)) for i in rng.integers(0, len(edge), k)]
        extra_lists.append(sorted(set(ids)) if sort_extras else ids)
    B_total = max(1, n + spare_rows)
    indices = [int(i) for i in rng.permutation(B_total)[:n]] if use_indices else None
    skip = [bool(rng.random() < 0.3) for _ in range(n)] if use_skip else None
    return pack(V, sets, row_lists, extra_lists, B_total, V + extra_cols, indices, skip)


def corrupt(batch: Batch, rng: np.random.Generator, count: int) -> Batch:
    """``batch`` with ``count`` random corruptions of the kinds validation must catch."""
    b = Batch(**{k: (list(v) if isinstance(v, list) else v) for k, v in batch.__dict__.items()})
    for _ in range(count):
        kind = int(rng.integers(0, 8))
        if kind == 0 and b.row_idx:
            b.row_idx[int(rng.integers(0, len(b.row_idx)))] = int(rng.choice([-1, len(b.sets), INT32_MAX]))
        elif kind == 1 and b.extra_ids:
            b.extra_ids[int(rng.integers(0, len(b.extra_ids)))] = int(rng.choice([-1, b.V, INT32_MAX, -INT32_MAX]))
        elif kind == 2 and b.n:
            if b.indices is None:
                b.indices = list(range(b.n))
            b.indices[int(rng.integers(0, b.n))] = int(rng.choice([-1, b.B_total, -INT32_MAX, INT32_MAX]))
        elif kind == 3 and b.n >= 2:
            if b.indices is None:
                b.indices = list(range(b.n))
            i, j = rng.choice(b.n, 2, replace=False)
            b.indices[int(i)] = b.indices[int(j)]
        elif kind == 4 and b.n:
            ptr = b.row_ptr if rng.random() < 0.5 else b.extra_ptr
            ptr[int(rng.integers(1, b.n + 1))] = int(rng.choice([-5, 0, ptr[-1] + 3, INT32_MAX]))
        elif kind == 5:
            ptr = b.row_ptr if rng.random() < 0.5 else b.extra_ptr
            ptr[0] = int(rng.choice([-1, 1, INT32_MAX]))
        elif kind == 6 and b.n:
            b.skip = [bool(rng.random() < 0.5) for _ in range(b.n)]
        elif kind == 7 and b.row_idx:
            b.row_idx[int(rng.integers(0, len(b.row_idx)))] = int(rng.integers(0, max(1, len(b.sets))))
    return b
