"""``mask_batch`` over real matchers: every row equals the matcher's own allowed set, in one call."""
from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # the Triton path runs on CPU tensors under the interpreter

import importlib
import random
import sys

import numpy as np
import pytest
import torch

from kbnf_gpu import Matcher, Vocabulary
from kbnf_gpu.batch import fill_bitmask_batch, mask_batch

sys.path.insert(0, os.path.dirname(__file__))
from test_compiled_masks import compile_ir, json_grammar, small_grammars  # noqa: E402

if "kbnf_gpu.kernels.triton_mask" in sys.modules and os.environ.get("TRITON_INTERPRET") == "1":
    importlib.reload(sys.modules["kbnf_gpu.kernels.triton_mask"])

BACKENDS = ["torch", "triton"] if torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1" else ["torch"]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # CPU tensors take Triton only under the interpreter


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.from_name("gpt2")


@pytest.fixture(scope="module")
def grammars(vocab):
    return [compile_ir(json_grammar(), vocab, sparse_limit=64), compile_ir(small_grammars()[2], vocab),
            compile_ir(small_grammars()[1], vocab, end_mode="eager")]


def expected_row(matcher: Matcher | None, row: torch.Tensor, vocab_size: int) -> torch.Tensor:
    if matcher is None or matcher.is_finished():
        return row.clone()
    out = torch.full_like(row, float("-inf"))
    allowed = torch.from_numpy(matcher.allowed_token_ids().astype(np.int64))
    allowed = allowed[allowed < vocab_size]
    out[allowed] = row[allowed]
    return out


CASES = [(None, torch.float32), (None, torch.bfloat16), ("torch", torch.float32), ("torch", torch.bfloat16),
         ("torch", torch.float16)] + [
    (b, torch.bfloat16) for b in BACKENDS if b == "triton"]  # dtypes × Triton: see test_kernels.py


@pytest.mark.parametrize("backend,dtype", CASES)
def test_mask_batch_matches_each_matcher(vocab, grammars, backend, dtype):
    rng = random.Random(1)
    matchers: list[Matcher | None] = [Matcher(grammars[i % 3]) for i in range(5)] + [None]
    for step in range(3):
        logits = torch.randn(len(matchers) + 1, vocab.size + 13, dtype=dtype, device=DEVICE)  # padded columns
        before = logits.clone()
        mask_batch(logits, matchers, backend=backend)
        for b, m in enumerate(matchers):
            assert torch.equal(logits[b].cpu(), expected_row(m, before[b].cpu(), vocab.size)), (step, b)
        assert torch.equal(logits[-1], before[-1])  # a row no matcher targets
        for m in matchers:
            if m is not None and not m.is_finished():
                allowed = m.allowed_token_ids()
                if allowed.size:
                    m.accept_token(int(rng.choice(allowed)))


@pytest.mark.parametrize("backend", [None, *BACKENDS])
def test_mask_batch_indices_and_finished_rows(vocab, grammars, backend):
    finished = Matcher(grammars[2])
    finished.accept_bytes(";".encode())
    assert finished.is_finished()
    matchers = [Matcher(grammars[0]), finished, Matcher(grammars[1])]
    logits = torch.randn(6, vocab.size, device=DEVICE)
    before = logits.clone()
    mask_batch(logits, matchers, indices=[4, 0, 2], backend=backend)
    logits, before = logits.cpu(), before.cpu()
    for b, row in zip(range(3), [4, 0, 2]):
        assert torch.equal(logits[row], expected_row(matchers[b], before[row], vocab.size))
    for untouched in (1, 3, 5):
        assert torch.equal(logits[untouched], before[untouched])


@pytest.mark.parametrize("backend", BACKENDS)
def test_fill_bitmask_batch_equals_fill_bitmask(vocab, grammars, backend):
    matchers = [Matcher(g) for g in grammars]
    words = (vocab.size + 31) // 32
    batch = torch.full((3, words), -1, dtype=torch.int32, device=DEVICE)
    fill_bitmask_batch(batch, matchers, backend=backend)
    batch = batch.cpu()
    for b, m in enumerate(matchers):
        single = torch.zeros((1, words), dtype=torch.int32)
        m.fill_bitmask(single, 0)
        assert torch.equal(batch[b], single[0])


def test_mask_batch_rejects_mismatched_shapes(vocab, grammars):
    with pytest.raises(ValueError):
        mask_batch(torch.randn(1, vocab.size), [Matcher(grammars[0]), Matcher(grammars[0])])
    with pytest.raises(ValueError):
        mask_batch(torch.randn(vocab.size), [Matcher(grammars[0])])


@pytest.mark.parametrize("capacity", [1, 2, 64])
def test_kept_pool_slots_survive_evictions(vocab, grammars, monkeypatch, capacity):
    """A mask keeps its rows' pool slots until the pool evicts a row; masks read from kept slots stay exact.

    Matchers one at a time, twice (a small pool has evicted their rows by the second round), then growing
    batches, each adding a matcher whose rows the pool lacks beside matchers whose masks kept their slots:
    with room for 1 or 2 rows its upload evicts rows those kept slots name. With room for all, a batch of
    known states makes no pool call.
    """
    from kbnf_gpu.kernels import RowPool

    pool = RowPool(DEVICE, capacity=capacity)
    monkeypatch.setattr(RowPool, "for_device", classmethod(lambda cls, device, width=None: pool))
    calls = []
    slots = pool.slots
    monkeypatch.setattr(pool, "slots", lambda keys, fetch: calls.append(len(keys)) or slots(keys, fetch))
    doc = b'{"a": [1, 2.5, true], "bc": {"d": null, "e": "x y"}, "f": -3e2}'
    matchers, masks = [], set()
    for k in range(len(doc)):
        m = Matcher(grammars[0])
        m.accept_bytes(doc[:k])
        mask = m.compiled.mask(m.state)
        if mask.rows.size and id(mask) not in masks:
            masks.add(id(mask))
            matchers.append(m)
    assert len(matchers) >= 6
    alone = [[m] for m in matchers]  # the second time round, each one's kept slots name rows evicted since
    batches = alone + alone + [matchers[:end][::-1] for end in range(1, len(matchers) + 1)]  # new matcher first
    for batch in batches:
        for _ in range(2):
            logits = torch.randn(len(batch), vocab.size, device=DEVICE)
            before = logits.clone()
            mask_batch(logits, batch, backend="torch")
            for b, m in enumerate(batch):
                assert torch.equal(logits[b].cpu(), expected_row(m, before[b].cpu(), vocab.size)), (len(batch), b)
    if capacity < 64:
        assert pool.evictions > 0
    else:
        assert pool.evictions == 0 and len(calls) == len(matchers)  # one call per new mask, none for known ones
