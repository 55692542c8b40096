"""Mask kernels: Triton (interpreter on CPU tensors) vs torch reference vs brute force; validation; bounds."""
from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton_mask is imported

import importlib
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kbnf_gpu.kernels as K
from kbnf_gpu.errors import KbnfGpuError, KernelInputError
from kbnf_gpu.kernels.device_tables import HostStaging, RowPool, build_csr

if "kbnf_gpu.kernels.triton_mask" in sys.modules:  # imported earlier without the interpreter
    importlib.reload(sys.modules["kbnf_gpu.kernels.triton_mask"])
from kbnf_gpu.kernels import triton_mask as TM  # noqa: E402
from kernel_oracle import Batch, assert_bit_equal, bits, corrupt, pack, random_batch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
HYP = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ----------------------------------------------------------------- strategies


def random_logits(B, C, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, C, generator=g) * 4).to(dtype)


@st.composite
def batches(draw, max_vocab=2100, max_n=5):
    """A valid batch: vocabularies around word boundaries, 0-6 rows, optional indices and skip flags."""
    V = draw(st.one_of(st.integers(1, 70), st.integers(max_vocab // 2, max_vocab),
                       st.sampled_from([31, 32, 33, 1023, 1024, 1025, 2047, 2048, 2049])))
    W = -(-V // 32)
    b = random_batch(np.random.default_rng(draw(st.integers(0, 2**32))), V, draw(st.integers(0, max_n)),
                     draw(st.integers(0, 6)), use_indices=draw(st.booleans()), use_skip=draw(st.booleans()),
                     spare_rows=draw(st.integers(0, 2)))
    b.n_cols = draw(st.sampled_from([V, W * 32, V + 1, W * 32 + 40]))
    return b


@st.composite
def corrupted(draw, max_vocab=2100, max_n=5):
    """A batch with 0-3 corruptions: bad ids, indices, pointers (maybe still valid by chance)."""
    b = draw(batches(max_vocab, max_n))
    return corrupt(b, np.random.default_rng(draw(st.integers(0, 2**32))), draw(st.integers(0, 3)))


def run_mask(b: Batch, logits, backend, **kw):
    K.apply_token_masks(logits, b.rows(), *b.csr(), **b.options(), backend=backend, **kw)


def run_fill(b: Batch, bitmask, backend, **kw):
    K.fill_token_bitmask(bitmask, b.rows(), *b.csr(), **b.options(), backend=backend, **kw)


# ------------------------------------------------- torch reference vs brute force


@settings(HYP, max_examples=150)
@given(batches(max_vocab=3000, max_n=8), st.sampled_from(DTYPES))
def test_torch_ref_matches_brute_force(b, dtype):
    logits = random_logits(b.B_total, b.n_cols, dtype, 1)
    expect = b.expect_logits(logits)
    run_mask(b, logits, "torch")
    assert_bit_equal(logits, expect)


@settings(HYP, max_examples=100)
@given(batches(max_vocab=3000, max_n=8), st.integers(0, 2))
def test_torch_ref_bitmask_matches_brute_force(b, extra_words):
    bm = torch.full((b.B_total, b.W + extra_words), 0x5A5A5A5A, dtype=torch.int32)
    expect = b.expect_bitmask(bm)
    run_fill(b, bm, "torch")
    assert torch.equal(bm, expect)


# -------------------------------------------------------- Triton vs torch reference


@HYP
@given(batches(), st.sampled_from(DTYPES))
def test_triton_matches_torch_ref(b, dtype):
    l_tr = random_logits(b.B_total, b.n_cols, dtype, 2)
    l_ref = l_tr.clone()
    run_mask(b, l_tr, "triton")
    run_mask(b, l_ref, "torch")
    assert_bit_equal(l_tr, l_ref)


@settings(HYP, max_examples=30)
@given(batches(), st.integers(0, 2))
def test_triton_bitmask_matches_torch_ref(b, extra_words):
    bm_tr = torch.full((b.B_total, b.W + extra_words), 0x5A5A5A5A, dtype=torch.int32)
    bm_ref = bm_tr.clone()
    run_fill(b, bm_tr, "triton")
    run_fill(b, bm_ref, "torch")
    assert torch.equal(bm_tr, bm_ref)
    assert torch.equal(bm_ref, b.expect_bitmask(torch.full_like(bm_ref, 0x5A5A5A5A)))


@settings(HYP, max_examples=15)
@given(batches(max_n=4), st.sampled_from(DTYPES), st.sampled_from(["triton", "torch"]))
def test_fill_then_apply_equals_direct_mask(b, dtype, backend):
    """fill_token_bitmask + apply_bitmask_inplace == apply_token_masks."""
    direct = random_logits(b.B_total, b.n_cols, dtype, 3)
    two_step = direct.clone()
    run_mask(b, direct, backend)
    bm = K.allocate_token_bitmask(b.B_total, b.V)
    run_fill(b, bm, backend)
    # Skipped / untargeted rows keep -1 (unconstrained): only padding columns get masked there.
    touched = torch.tensor([b.target(i) for i in range(b.n) if b.writes(i)], dtype=torch.int32)
    K.apply_bitmask_inplace(two_step, bm, touched, vocab_size=b.V, backend=backend)
    assert_bit_equal(two_step, direct)


LAUNCHES = st.builds(
    TM.LaunchConfig,
    block_words=st.sampled_from([2, 4, 16, 32, 64]),
    num_warps=st.sampled_from([1, 2, 4]),
    blocks_per_program=st.sampled_from([1, 2, 4]),
    programs_per_sm=st.sampled_from([0, 0, 1]),
    store=st.sampled_from(sorted(TM.STORE_MODES)),
    extra_chunk=st.sampled_from([1, 4, 16]),
    row_chunk=st.sampled_from([1, 2, 8]),
)


@settings(HYP, max_examples=20)
@given(batches(max_vocab=400, max_n=4), st.sampled_from(DTYPES), LAUNCHES)
def test_every_launch_config_matches_brute_force(b, dtype, cfg):
    """Every tuning knob the sweep may pick computes the same masks, bit for bit."""
    logits = random_logits(b.B_total, b.n_cols, dtype, 4)
    expect = b.expect_logits(logits)
    opts = b.options()
    skip = None if opts["skip"] is None else opts["skip"].view(torch.int8)
    TM.mask_logits(logits, b.rows(), *b.csr(), opts["indices"], skip, b.V, launch=cfg)
    assert_bit_equal(logits, expect)
    bm = torch.full((b.B_total, b.W + 1), 0x5A5A5A5A, dtype=torch.int32)
    TM.fill_bitmask(bm, b.rows(), *b.csr(), opts["indices"], skip, b.V, launch=cfg)
    assert torch.equal(bm, b.expect_bitmask(torch.full_like(bm, 0x5A5A5A5A)))
    applied, ref = random_logits(b.B_total, b.n_cols, dtype, 5), None
    ref = applied.clone()
    TM.apply_bitmask(applied, bm, None, b.V, launch=cfg)
    K.apply_bitmask_inplace(ref, bm, vocab_size=b.V, backend="torch")
    assert_bit_equal(applied, ref)


@settings(HYP, max_examples=12)
@given(st.integers(0, 2**32), st.booleans(), st.sampled_from(DTYPES), st.sampled_from([16, 32, None]))
def test_hundreds_of_extra_ids_sorted_or_not(seed, sort, dtype, chunk):
    """A JSON state carries ~135 extra ids: every tile finds its own, whatever their order or repeats, in the
    chunk held for the whole program and in the further chunks (None: the default launch, 256 ids held)."""
    b = random_batch(np.random.default_rng(seed), 5000, 3, 2, use_indices=True, use_skip=False, extras=(150, 300),
                     sort_extras=sort)
    logits = random_logits(b.B_total, b.n_cols, dtype, 9)
    expect = b.expect_logits(logits)
    opts = b.options()
    TM.mask_logits(logits, b.rows(), *b.csr(), opts["indices"], None, b.V,
                   launch=None if chunk is None else TM.LaunchConfig(32, 2, extra_chunk=chunk))
    assert_bit_equal(logits, expect)


def test_default_launch_is_valid_for_every_size():
    for kind in ("mask", "apply", "fill"):
        for n in (1, 7, 128, 4096):
            for words in (1, 4008, 8192):
                for elem_size in (2, 4):
                    cfg = TM.default_launch(kind, n, words, elem_size)
                    assert cfg == TM.LaunchConfig(**cfg.__dict__)  # re-validates the fields
    with pytest.raises(ValueError, match="kind"):
        TM.default_launch("scatter", 1, 4008)
    with pytest.raises(ValueError, match="power of two"):
        TM.LaunchConfig(48, 2)
    with pytest.raises(ValueError, match="store"):
        TM.LaunchConfig(32, 2, store="scatter")


# ---------------------------------------------------------- validation (issue #13)


def _raises(fn) -> bool:
    try:
        fn()
    except KernelInputError:
        return True
    return False


@settings(HYP, max_examples=120)
@given(corrupted(max_vocab=600, max_n=6))
def test_validation_rejects_exactly_the_invalid_batches(b):
    """validate=True raises iff the brute-force oracle finds a problem; otherwise the mask is exact."""
    problems = b.problems()
    logits = random_logits(b.B_total, b.n_cols, torch.float32, 6)
    expect = b.expect_logits(logits)
    raised = _raises(lambda: run_mask(b, logits, "torch"))
    assert raised == bool(problems), problems
    if not raised:
        assert_bit_equal(logits, expect)
    bm = torch.zeros((b.B_total, b.W), dtype=torch.int32)
    assert _raises(lambda: run_fill(b, bm, "torch")) == bool(problems), problems


@settings(HYP, max_examples=25)
@given(corrupted(max_vocab=600, max_n=6), st.sampled_from(DTYPES))
def test_unvalidated_garbage_is_ignored_identically_and_stays_in_bounds(b, dtype):
    """validate=False: Triton ≡ torch reference ≡ oracle (ignore what is out of range); nothing outside the tensor moves.

    The logits and the bitmask are views into bigger buffers: a store outside
    the view would land in the guard region around it.
    """
    guard = random_logits(b.B_total + 4, b.n_cols + 96, dtype, 7)
    before = guard.clone()
    view = guard[2 : 2 + b.B_total, 32 : 32 + b.n_cols]
    ref = view.clone()
    run_mask(b, view, "triton", validate=False)
    run_mask(b, ref, "torch", validate=False)
    outside = torch.ones_like(guard, dtype=torch.bool)
    outside[2 : 2 + b.B_total, 32 : 32 + b.n_cols] = False
    assert torch.equal(bits(guard)[outside], bits(before)[outside])
    if not b.duplicate_writes():  # two masks for one row: which lands last is undefined
        assert_bit_equal(view, ref)
        assert_bit_equal(view, b.expect_logits(before[2 : 2 + b.B_total, 32 : 32 + b.n_cols]))

    bm_guard = torch.full((b.B_total + 4, b.W + 8), 0x13579BDF, dtype=torch.int32)
    bm_before = bm_guard.clone()
    bm_view = bm_guard[2 : 2 + b.B_total, 4 : 4 + b.W]
    run_fill(b, bm_view, "triton", validate=False)
    inside = torch.zeros_like(bm_guard, dtype=torch.bool)
    inside[2 : 2 + b.B_total, 4 : 4 + b.W] = True
    assert torch.equal(bm_guard[~inside], bm_before[~inside])
    if not b.duplicate_writes():
        assert torch.equal(bm_view, b.expect_bitmask(bm_before[2 : 2 + b.B_total, 4 : 4 + b.W]))


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_apply_bitmask_bounds_with_unvalidated_indices(backend):
    """Out-of-range indices for apply_bitmask_inplace: an error when validated; ignored, in bounds, when not."""
    V = 96
    bm = torch.tensor([[0b101, 0, -(1 << 31)], [-1, 0, 0]], dtype=torch.int32)
    guard = torch.zeros(6, V + 64)
    view = guard[2:4, 32 : 32 + V]
    bad = torch.tensor([-1, 2, 1, -7, 100], dtype=torch.int32)
    with pytest.raises(KernelInputError, match=r"indices\[0\] = -1 is outside \[0, 2\)"):
        K.apply_bitmask_inplace(view, bm, bad, vocab_size=V, backend=backend)
    K.apply_bitmask_inplace(view, bm, bad, vocab_size=V, backend=backend, validate=False)
    assert torch.isinf(guard).sum() == torch.isinf(view).sum() == V - 32  # only row 1 (index 1) is masked
    assert torch.nonzero(view[1] == 0).flatten().tolist() == list(range(32))
    assert not torch.isinf(view[0]).any()
    # the same mask twice is allowed (idempotent)
    K.apply_bitmask_inplace(view, bm, torch.tensor([1, 1], dtype=torch.int32), vocab_size=V, backend=backend)


def _one_row_batch(**over):
    b = pack(64, [{1, 2}, {40}], [[0], [1]], [[5], []], 3, 64, indices=[0, 2])
    for k, v in over.items():
        setattr(b, k, v)
    return b


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("change,message", [
    (dict(indices=[0, 3]), r"indices\[1\] = 3 is outside \[0, 3\) \(rows of logits\)"),
    (dict(indices=[-1, 2]), r"indices\[0\] = -1 is outside"),
    (dict(indices=[2, 2]), r"indices\[0\] and indices\[1\] are both 2"),
    (dict(row_idx=[0, 2]), r"row_idx\[1\] = 2 \(batch entry 1\) is outside \[0, 2\) \(rows of the table\)"),
    (dict(row_idx=[-3, 1]), r"row_idx\[0\] = -3 \(batch entry 0\)"),
    (dict(extra_ids=[64]), r"extra_ids\[0\] = 64 \(batch entry 0\) is outside \[0, 64\) \(vocab_size\)"),
    (dict(extra_ids=[-1]), r"extra_ids\[0\] = -1"),
    (dict(row_ptr=[0, 2, 1]), r"row_ptr must not decrease: row_ptr\[1\] = 2 > row_ptr\[2\] = 1"),
    (dict(row_ptr=[0, 1, 3]), r"row_ptr\[-1\] = 3 exceeds the 2 entries of row_idx"),
    (dict(extra_ptr=[-1, 1, 1]), r"extra_ptr\[0\] = -1 is negative"),
])
def test_validation_messages_name_the_entry(backend, change, message):
    b = _one_row_batch(**change)
    logits = torch.zeros(3, 64)
    with pytest.raises(KernelInputError, match=message) as info:
        run_mask(b, logits, backend)
    assert isinstance(info.value, KbnfGpuError) and isinstance(info.value, ValueError)
    assert torch.equal(logits, torch.zeros(3, 64))  # nothing launched
    with pytest.raises(KernelInputError, match=message.replace("logits", "bitmask_out")):
        run_fill(b, torch.zeros((3, 2), dtype=torch.int32), backend)


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_duplicate_index_of_a_skipped_entry_is_fine(backend):
    b = _one_row_batch(indices=[2, 2], skip=[True, False])
    logits = torch.zeros(3, 64)
    run_mask(b, logits, backend)
    assert torch.nonzero(logits[2] == 0).flatten().tolist() == [40]
    assert torch.equal(logits[:2], torch.zeros(2, 64))


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_metadata_errors(backend):
    rows = torch.zeros((2, 2), dtype=torch.int32)
    csr = build_csr([[0]], [[3]], device="cpu")
    kw = dict(backend=backend)
    with pytest.raises(KernelInputError, match="logits covers 60 tokens, fewer than vocab_size=64"):
        K.apply_token_masks(torch.zeros(1, 60), rows, *csr.csr(), **kw)
    with pytest.raises(KernelInputError, match="fewer than vocab_size=50"):
        K.apply_token_masks(torch.zeros(1, 49), rows, *csr.csr(), vocab_size=50, **kw)
    K.apply_token_masks(torch.zeros(1, 50), rows, *csr.csr(), vocab_size=50, **kw)  # exactly wide enough
    with pytest.raises(KernelInputError, match="vocab_size=65 does not fit"):
        K.apply_token_masks(torch.zeros(1, 64), rows, *csr.csr(), vocab_size=65, **kw)
    with pytest.raises(KernelInputError, match="rows of logits"):
        two = build_csr([[0], [0]], None, device="cpu")
        K.apply_token_masks(torch.zeros(1, 64), rows, *two.csr(), **kw)
    with pytest.raises(TypeError, match="rows must be int32"):
        K.apply_token_masks(torch.zeros(1, 64), rows.float(), *csr.csr(), **kw)
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        K.apply_token_masks(torch.zeros(1, 64), rows, *csr.csr(), indices=torch.zeros(1), **kw)
    with pytest.raises(TypeError, match="skip must be a bool or integer"):
        K.apply_token_masks(torch.zeros(1, 64), rows, *csr.csr(), skip=torch.zeros(1), **kw)
    with pytest.raises(ValueError, match="skip must be 1-D with 1 entries"):
        K.apply_token_masks(torch.zeros(1, 64), rows, *csr.csr(), skip=torch.zeros(2, dtype=torch.bool), **kw)
    with pytest.raises(KernelInputError, match="logits must be a floating"
                       if backend == "torch" else "logits must be float32, bfloat16 or float16"):
        K.apply_token_masks(torch.zeros(1, 64, dtype=torch.int32), rows, *csr.csr(), **kw)
    with pytest.raises(KernelInputError, match="backend"):
        K.apply_token_masks(torch.zeros(1, 64), rows, *csr.csr(), backend="cuda")
    # bitmasks: dtype, shape, width
    for bad in (torch.zeros(1, 2), torch.zeros(1, 2, dtype=torch.int64), torch.zeros(1, 2, dtype=torch.uint8)):
        with pytest.raises(TypeError, match="bitmask_out must be int32"):
            K.fill_token_bitmask(bad, rows, *csr.csr(), **kw)
        with pytest.raises(TypeError, match="bitmask must be int32"):
            K.apply_bitmask_inplace(torch.zeros(1, 64), bad, **kw)
    with pytest.raises(ValueError, match=r"bitmask_out must be \[B, W\]"):
        K.fill_token_bitmask(torch.zeros(1, 1, 2, dtype=torch.int32), rows, *csr.csr(), **kw)
    with pytest.raises(ValueError, match="bitmask_out covers 32 tokens, fewer than vocab_size=64"):
        K.fill_token_bitmask(torch.zeros(1, 1, dtype=torch.int32), rows, *csr.csr(), **kw)
    with pytest.raises(ValueError, match="logits covers 60 tokens, fewer than vocab_size=64"):
        K.apply_bitmask_inplace(torch.zeros(1, 60), torch.zeros(1, 2, dtype=torch.int32), **kw)
    with pytest.raises(ValueError, match="bitmask has 1 rows for 2 logits rows"):
        K.apply_bitmask_inplace(torch.zeros(2, 64), torch.zeros(1, 2, dtype=torch.int32), **kw)
    with pytest.raises(ValueError, match="row ids"):
        build_csr([[0, 3]], None, device="cpu", num_rows=2)


# ------------------------------------------------------------------ explicit edges


@pytest.mark.parametrize("block_words", [32, 64, 128])
@pytest.mark.parametrize("dtype", DTYPES)
def test_triton_block_sizes(monkeypatch, block_words, dtype):
    """Every block size the launcher can pick, with blocks that straddle V and the logits width."""
    monkeypatch.setattr(TM, "default_launch", lambda kind, n, w, elem_size=2: TM.LaunchConfig(block_words, 4))
    rng = np.random.default_rng(block_words)
    V = 5000
    sets = [set(rng.choice(V, size=k, replace=False).tolist()) for k in (0, 3, 700, 2500)]
    b = pack(V, sets, [[1, 2], [3, 3, 0], [], [2]], [[0, V - 1, 4099, 4100], [], [V - 1, 4096 + 31, 17], [5]], 5,
             V + 100, indices=[4, 0, 2, 3], skip=[0, 0, 0, 1])
    l_tr = random_logits(5, V + 100, dtype, 4)
    l_ref = l_tr.clone()
    run_mask(b, l_tr, "triton")
    run_mask(b, l_ref, "torch")
    assert_bit_equal(l_tr, l_ref)
    assert_bit_equal(l_ref, b.expect_logits(random_logits(5, V + 100, dtype, 4)))
    bm_tr = torch.full((5, b.W), 7, dtype=torch.int32)
    bm_ref = bm_tr.clone()
    run_fill(b, bm_tr, "triton")
    run_fill(b, bm_ref, "torch")
    assert torch.equal(bm_tr, bm_ref)
    a = random_logits(5, V + 100, dtype, 5)
    c = a.clone()
    K.apply_bitmask_inplace(a, bm_ref, vocab_size=V, backend="triton")
    K.apply_bitmask_inplace(c, bm_ref, vocab_size=V, backend="torch")
    assert_bit_equal(a, c)


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_vocab_of_one(backend, dtype):
    b = pack(1, [{0}, set()], [[0], [1], []], [[], [], [0]], 3, 9)
    logits = random_logits(3, 9, dtype, 6)
    orig = logits.clone()
    run_mask(b, logits, backend)
    assert_bit_equal(logits[:, :1], torch.stack([orig[0, :1], torch.full((1,), float("-inf"), dtype=dtype),
                                                 orig[2, :1]]))
    assert torch.isneginf(logits[:, 1:]).all()


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_single_entry_only_extras_and_one_dim_logits(backend):
    V = 100
    b = pack(V, [], [[]], [[0, 99, 96, 50, 50]], 1, V)
    logits = torch.zeros(V)
    run_mask(b, logits, backend)
    assert set(torch.nonzero(logits == 0).flatten().tolist()) == {0, 50, 96, 99}


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_empty_batch_and_all_skipped(backend):
    rows = torch.full((2, 4), -1, dtype=torch.int32)
    logits = torch.randn(3, 128)
    orig = logits.clone()
    empty = build_csr([], [], device="cpu")
    K.apply_token_masks(logits, rows, *empty.csr(), backend=backend)
    allskip = build_csr([[0], []], [[1], []], device="cpu", skip=[True, True])
    K.apply_token_masks(logits, rows, *allskip.csr(), **allskip.options(), backend=backend)
    assert torch.equal(logits, orig)


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_zero_row_table(backend):
    rows = torch.zeros((0, 2), dtype=torch.int32)
    csr = build_csr([[], []], [[5], []], device="cpu")
    logits = torch.zeros(2, 64)
    K.apply_token_masks(logits, rows, *csr.csr(), vocab_size=60, backend=backend)
    assert torch.nonzero(logits[0] == 0).flatten().tolist() == [5]
    assert torch.isneginf(logits[1]).all()


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_indices_leave_other_rows_untouched(backend):
    V = 64
    rows = torch.tensor([[0b1011, 0]], dtype=torch.int32)
    csr = build_csr([[0]], [[40]], device="cpu", indices=[2])
    logits = torch.randn(4, V, dtype=torch.bfloat16)
    orig = logits.clone()
    K.apply_token_masks(logits, rows, *csr.csr(), **csr.options(), backend=backend)
    for r in (0, 1, 3):
        assert_bit_equal(logits[r], orig[r])
    assert torch.nonzero(~torch.isneginf(logits[2])).flatten().tolist() == [0, 1, 3, 40]


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("skip_dtype", [torch.bool, torch.int8, torch.uint8, torch.int32, torch.int64])
def test_skip_tensor_dtypes(backend, skip_dtype):
    rows = torch.tensor([[0b110, 0]], dtype=torch.int32)
    csr = build_csr([[0], [0], []], [[], [9], [60]], device="cpu")
    skip = torch.tensor([1, 0, 1]).to(skip_dtype)
    logits = torch.randn(3, 64, dtype=torch.float16)
    orig = logits.clone()
    K.apply_token_masks(logits, rows, *csr.csr(), skip=skip, backend=backend)
    assert_bit_equal(logits[0], orig[0])
    assert_bit_equal(logits[2], orig[2])
    assert torch.nonzero(~torch.isneginf(logits[1])).flatten().tolist() == [1, 2, 9]
    bm = torch.full((3, 2), -1, dtype=torch.int32)
    K.fill_token_bitmask(bm, rows, *csr.csr(), skip=skip, backend=backend)
    assert bm.tolist() == [[-1, -1], [0b110 | (1 << 9), 0], [-1, -1]]


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_nan_payloads_and_signed_zero_survive(backend):
    """Allowed logits are left bit-exact in every store mode (select/packed rewrite them)."""
    V = 64
    logits = torch.tensor([[float("nan"), -0.0, 1.0, float("inf")] * 16], dtype=torch.float32)
    logits.view(torch.int32)[0, 0] = 0x7FC01234  # a NaN with a payload
    rows = torch.tensor([[-1, 0b1011]], dtype=torch.int32)
    csr = build_csr([[0]], None, device="cpu")
    stores = sorted(TM.STORE_MODES) if backend == "triton" else [None]
    for store in stores:
        out = logits.clone()
        if store is None:
            K.apply_token_masks(out, rows, *csr.csr(), backend=backend)
        else:
            TM.mask_logits(out, rows, *csr.csr(), None, None, V, launch=TM.LaunchConfig(2, 1, store=store))
        assert torch.equal(out.view(torch.int32)[0, :32], logits.view(torch.int32)[0, :32])
        assert torch.nonzero(~torch.isneginf(out[0, 32:])).flatten().tolist() == [0, 1, 3]


def test_high_bit_and_uint32_rows():
    """Bit 31 (negative int32 word) and uint32 input are handled."""
    rows_u = np.zeros((1, 2), dtype=np.uint32)
    rows_u[0, 0] = np.uint32(1 << 31)
    rows_u[0, 1] = np.uint32(0xFFFFFFFF)
    csr = build_csr([[0]], None, device="cpu")
    for backend in ("triton", "torch"):
        logits = torch.zeros(1, 64)
        K.apply_token_masks(logits, torch.from_numpy(rows_u.view(np.int32)), *csr.csr(), backend=backend)
        assert torch.nonzero(logits[0] == 0).flatten().tolist() == [31] + list(range(32, 64))


# ------------------------------------------------- no host sync, fixed buffers (CUDA graphs)


def test_unvalidated_apply_path_reads_nothing_back(monkeypatch):
    """The wrapper around the launch makes no data-dependent host decision, so CUDA can capture it.

    Proof: it runs on meta tensors, which have shapes but no values to read back.
    """
    launched = []
    monkeypatch.setattr(TM, "mask_logits", lambda *a, **k: launched.append("mask"))
    monkeypatch.setattr(TM, "fill_bitmask", lambda *a, **k: launched.append("fill"))
    monkeypatch.setattr(TM, "apply_bitmask", lambda *a, **k: launched.append("apply"))
    b = random_batch(np.random.default_rng(0), 300, 4, 3, use_indices=True, use_skip=True)
    meta = torch.device("meta")
    logits = torch.zeros(b.B_total, b.n_cols, device=meta)
    bm = torch.zeros(b.B_total, b.W, dtype=torch.int32, device=meta)
    args = (b.rows(meta), *b.csr(meta))
    opts = b.options(meta)
    K.apply_token_masks(logits, *args, **opts, backend="triton", validate=False)
    K.fill_token_bitmask(bm, *args, **opts, backend="triton", validate=False)
    K.apply_bitmask_inplace(logits, bm, opts["indices"], vocab_size=b.V, backend="triton", validate=False)
    assert launched == ["mask", "fill", "apply"]
    with pytest.raises((NotImplementedError, RuntimeError)):  # validation reads values: the switch is real
        K.apply_token_masks(logits, *args, **opts, backend="triton")


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_static_csr_stages_batches_at_fixed_addresses(backend):
    rng = np.random.default_rng(3)
    V = 700
    static = K.StaticCsr(max_batch=6, max_row_ids=40, max_extra_ids=60, device="cpu")
    first = None
    for step in range(5):  # more steps than slots: the ring is reused
        b = random_batch(rng, V, int(rng.integers(0, 7)), 5, use_indices=step % 2 == 0, use_skip=step % 3 == 0)
        b.B_total, b.n_cols = 8, V + 5
        rows = b.rows()
        csr = build_csr([b.row_idx[b.row_ptr[i]:b.row_ptr[i + 1]] for i in range(b.n)],
                        [b.extra_ids[b.extra_ptr[i]:b.extra_ptr[i + 1]] for i in range(b.n)], device="cpu",
                        indices=b.indices, skip=b.skip)
        assert static.stage(csr, num_rows=5, vocab_size=V, num_targets=8) == b.n
        views = static.csr(6)
        ptrs = [t.data_ptr() for t in (*views.csr(), views.indices, views.skip)]
        first = first or ptrs
        assert ptrs == first  # what a captured graph reads never moves
        logits = random_logits(8, V + 5, torch.bfloat16, step)
        expect = b.expect_logits(logits)
        static.apply(logits, rows, vocab_size=V, batch=6, backend=backend)
        assert_bit_equal(logits, expect)


def test_static_csr_rejects_bad_batches_at_stage():
    static = K.StaticCsr(max_batch=2, max_row_ids=3, max_extra_ids=3, device="cpu")
    with pytest.raises(KernelInputError, match="3 batch entries exceed this StaticCsr's capacity of 2"):
        static.stage(build_csr([[], [], []], None, device="cpu"), num_rows=1, vocab_size=64, num_targets=3)
    with pytest.raises(KernelInputError, match="4 row ids exceed"):
        static.stage(build_csr([[0, 0, 0, 0]], None, device="cpu"), num_rows=1, vocab_size=64, num_targets=3)
    with pytest.raises(KernelInputError, match=r"row_idx\[0\] = 1 \(batch entry 0\) is outside \[0, 1\)"):
        static.stage(build_csr([[1]], None, device="cpu"), num_rows=1, vocab_size=64, num_targets=3)
    with pytest.raises(KernelInputError, match="before any stage"):
        static.apply(torch.zeros(1, 64), torch.zeros(1, 2, dtype=torch.int32), vocab_size=64)
    static.stage(build_csr([[0]], [[63]], device="cpu", indices=[2]), num_rows=1, vocab_size=64, num_targets=3)
    with pytest.raises(KernelInputError, match="staged for 1 table rows, vocab_size=64, 3 logits rows"):
        static.apply(torch.zeros(2, 64), torch.zeros(1, 2, dtype=torch.int32), vocab_size=64)
    with pytest.raises(KernelInputError, match=r"batch=0 must lie in \[1"):
        static.csr(0)
    logits = torch.zeros(3, 64)
    static.apply(logits, torch.zeros(1, 2, dtype=torch.int32), vocab_size=64, backend="torch")
    assert torch.nonzero(logits == 0).tolist() == [[0, i] for i in range(64)] + [[1, i] for i in range(64)] + [[2, 63]]


# ------------------------------------------------------------ RowPool and staging


def test_row_pool_shares_rows_by_content_and_stays_bounded():
    """Rows are addressed by content key: uploaded once, shared by grammars, evicted LRU past capacity."""
    V = 200
    W = -(-V // 32)
    rng = np.random.default_rng(7)
    sets = [set(rng.choice(V, 20, replace=False).tolist()) for _ in range(12)]
    row_bits = pack(V, sets, [], [], 1, V).rows().numpy()
    keys = [b"row-%d" % i for i in range(12)]
    fetched: list[int] = []

    def fetch(positions, wanted):
        fetched.extend(wanted[p] for p in positions)
        return row_bits[[int(wanted[p][4:]) for p in positions]]

    pool = RowPool("cpu", capacity=4)  # a private pool; for_device() returns the shared one
    want = [keys[0], keys[2], keys[0]]
    slots = pool.slots(want, lambda pos: fetch(pos, want))
    assert slots[0] == slots[2] and fetched == [keys[0], keys[2]]  # a repeated key is uploaded once
    again = pool.slots([keys[2]], lambda pos: fetch(pos, [keys[2]]))
    assert again == [slots[1]] and pool.uploads == 2  # resident: no upload
    # a batch mixing rows: the launch ORs each entry's slots
    want = [keys[1], keys[3], keys[5], keys[0]]
    slots = pool.slots(want, lambda pos: fetch(pos, want))
    assert pool.num_rows == 4 and pool.evictions == 1  # capacity 4: the least recently used row (key 2) left
    assert keys[2] not in pool and keys[0] in pool
    csr = build_csr([[slots[0], slots[1]], [slots[2]], [slots[3]], []], [[], [5], [], [199]], device="cpu",
                    num_rows=pool.rows.shape[0])
    logits = torch.zeros(4, V)
    K.apply_token_masks(logits, pool.rows, *csr.csr(), vocab_size=V, backend="torch")
    tri = torch.zeros(4, V)
    K.apply_token_masks(tri, pool.rows, *csr.csr(), vocab_size=V, backend="triton")
    assert torch.equal(logits, tri)
    expect = [sets[1] | sets[3], sets[5] | {5}, sets[0], {199}]
    for b, s in enumerate(expect):
        assert set(torch.nonzero(logits[b] == 0).flatten().tolist()) == s
    # one call needing more rows than the capacity grows the buffer; rows stay intact
    want = keys[:9]
    slots = pool.slots(want, lambda pos: fetch(pos, want))
    assert pool.grows == 1 and len(set(slots)) == 9
    assert torch.equal(pool.rows[slots], torch.from_numpy(row_bits[:9]))
    with pytest.raises(ValueError, match="words"):
        pool.slots([b"other-vocab"], lambda pos: np.zeros((1, W + 1), dtype=np.int32))
    with pytest.raises(ValueError, match="capacity"):
        RowPool("cpu", capacity=0)
    assert RowPool.for_device("cpu", W) is RowPool.for_device(torch.device("cpu"), W)


_AS = {
    "list": lambda xs: list(xs),
    "tuple": lambda xs: tuple(xs),
    "int64": lambda xs: np.asarray(xs, dtype=np.int64),
    "int32": lambda xs: np.asarray(xs, dtype=np.int32),
}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 9), max_size=4), st.lists(st.integers(0, 999), max_size=6),
                          st.sampled_from(sorted(_AS)), st.sampled_from(sorted(_AS))), max_size=6),
       st.booleans())
def test_build_csr_is_the_same_for_every_list_type(entries, with_skip):
    """int32 arrays take a one-copy path, anything else the checked int64 one: the buffers are identical."""
    rows = [r for r, _, _, _ in entries]
    extras = [e for _, e, _, _ in entries]
    skip = [i % 2 == 0 for i in range(len(entries))] if with_skip else None
    plain = build_csr(rows, extras, device="cpu", skip=skip, num_rows=10)
    typed = build_csr([_AS[kr](r) for r, _, kr, _ in entries], [_AS[ke](e) for _, e, _, ke in entries],
                      device="cpu", skip=skip, num_rows=10)
    for a, b in zip((*plain.csr(), plain.skip), (*typed.csr(), typed.skip)):
        assert (a is None and b is None) or a.tolist() == b.tolist()
    assert typed.row_idx.tolist() == [x for r in rows for x in r]
    assert typed.extra_ids.tolist() == [x for e in extras for x in e]


@pytest.mark.parametrize("kind", ["list", "int32", "int64"])
def test_build_csr_checks_ids_on_every_path(kind):
    with pytest.raises(ValueError, match=r"row ids must lie in \[0, 2\)"):
        build_csr([_AS[kind]([0, 1]), _AS[kind]([2])], None, device="cpu", num_rows=2)
    with pytest.raises(ValueError, match=r"row ids must lie in \[0, 2\)"):
        build_csr([_AS[kind]([-1])], None, device="cpu", num_rows=2)
    if kind != "int32":
        with pytest.raises(ValueError, match="extra token ids must fit in int32"):
            build_csr([[0]], [_AS[kind]([1 << 31])], device="cpu")


def test_build_csr_layout_one_buffer():
    csr = build_csr([[1, 2], [], [3]], [[9], [8, 7], []], device="cpu", indices=[5, 3, 1],
                    skip=[False, True, False], row_offsets=[10, 0, 20])
    assert csr.row_ptr.tolist() == [0, 2, 2, 3]
    assert csr.row_idx.tolist() == [11, 12, 23]
    assert csr.extra_ptr.tolist() == [0, 1, 3, 3]
    assert csr.extra_ids.tolist() == [9, 8, 7]
    assert csr.indices.tolist() == [5, 3, 1] and csr.skip.tolist() == [0, 1, 0]
    ptrs = {t.untyped_storage().data_ptr() for t in (*csr.csr(), csr.indices, csr.skip)}
    assert len(ptrs) == 1 and all(t.dtype == torch.int32 for t in csr.csr())
    # numpy inputs
    csr2 = build_csr([np.array([1, 2], dtype=np.int32)], [np.array([], dtype=np.int64)], device="cpu")
    assert csr2.row_idx.tolist() == [1, 2] and csr2.extra_ids.numel() == 0


def test_host_staging_ring_reuse_and_growth():
    st_ = HostStaging(slots=2, pin=False)
    a = st_.acquire(10)
    b = st_.acquire(5000)
    c = st_.acquire(3)
    assert a.numel() == 10 and b.numel() == 5000 and c.numel() == 3
    assert c.data_ptr() == a.data_ptr()  # slot 0 reused
    assert st_.to_device(c, "cpu").data_ptr() != c.data_ptr()  # CPU copies, never aliases the ring
    assert K.pinned_int32(7).numel() == 7


# ------------------------------------------------------- GPU-only checks (skipped here)


def _clean_env():
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [str(REPO)])  # same kbnf_gpu as here
    return env


_AOT_SCRIPT = textwrap.dedent(
    """
    import json, re
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from kbnf_gpu.kernels import triton_mask as tm

    PTR = dict(rows_ptr="*i32", row_ptr_ptr="*i32", row_idx_ptr="*i32", extra_ptr_ptr="*i32",
               extra_ids_ptr="*i32", indices_ptr="*i32", skip_ptr="*i8", out_ptr="*i32", bitmask_ptr="*i32")
    DIV16 = {"logits_stride", "n_cols", "vocab_size"}  # what the JIT specializes for V = 128,256

    def compile_(fn, consts, warps, dtype="fp32"):
        sig, attrs = {}, {}
        for i, a in enumerate(fn.arg_names):
            if a in consts:
                sig[a] = "constexpr"
                continue
            sig[a] = "*" + dtype if a == "logits_ptr" else PTR.get(a, "i32")
            if sig[a].startswith("*") or a in DIV16:
                attrs[(i,)] = [["tt.divisibility", 16]]
        k = triton.compile(ASTSource(fn, sig, constexprs=consts, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                           options=dict(num_warps=warps))
        return re.findall(r"st\\.global[.\\w]*", k.asm["ptx"])

    stores = {}
    for dt, pack in (("fp32", 4), ("bf16", 8), ("fp16", 8)):
        for mode, code in tm.STORE_MODES.items():
            c = dict(HAS_INDICES=True, HAS_SKIP=True, BLOCK_WORDS=64, BLOCKS_PER_PROGRAM=2, EXTRA_CHUNK=16,
                     ROW_CHUNK=1, STORE=code, PACK=pack)
            stores[f"mask-{dt}-{mode}"] = compile_(tm._mask_logits_kernel, c, 4, dt)
            c = dict(HAS_INDICES=True, BLOCK_WORDS=64, BLOCKS_PER_PROGRAM=2, STORE=code, PACK=pack)
            stores[f"apply-{dt}-{mode}"] = compile_(tm._apply_bitmask_kernel, c, 4, dt)
    for dt, pack, size in (("bf16", 8, 2), ("fp32", 4, 4)):  # the default launches, without indices or skip
        d = tm.default_launch("mask", 1, 4008, size)
        c = dict(HAS_INDICES=False, HAS_SKIP=False, BLOCK_WORDS=d.block_words,
                 BLOCKS_PER_PROGRAM=d.blocks_per_program, EXTRA_CHUNK=d.extra_chunk, ROW_CHUNK=d.row_chunk,
                 STORE=tm.STORE_MODES[d.store], PACK=pack)
        stores[f"mask-{dt}-{d.store}-default"] = compile_(tm._mask_logits_kernel, c, d.num_warps, dt)
    d = tm.default_launch("fill", 1, 4008)  # the fill's default launch; and wide row chunks
    for bw, warps, rc in ((d.block_words, d.num_warps, d.row_chunk), (128, 8, 4)):
        c = dict(HAS_INDICES=True, HAS_SKIP=True, BLOCK_WORDS=bw, BLOCKS_PER_PROGRAM=1, EXTRA_CHUNK=d.extra_chunk,
                 ROW_CHUNK=rc)
        compile_(tm._fill_bitmask_kernel, c, warps)
    print(json.dumps(stores))
    """
)


def _have_ptxas() -> bool:
    import triton

    return (Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas").exists() or bool(
        shutil.which("ptxas")
    )


@pytest.mark.skipif(not _have_ptxas(), reason="no ptxas to compile for sm_90")
def test_kernels_compile_for_sm90(tmp_path):
    """The interpreter accepts things the compiler rejects: compile every variant for H100, no GPU needed.

    Also pins the store width: "select" and "packed" write 16-byte vectors; "split" writes 16-byte vectors
    where a pack has no allowed logit, element-wide stores in mixed packs.
    """
    r = subprocess.run([sys.executable, "-c", _AOT_SCRIPT], env=_clean_env(), capture_output=True,
                       text=True, timeout=900, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-4000:]
    stores = json.loads(r.stdout.strip().splitlines()[-1])
    for name, ops in stores.items():
        assert ops, name
        vector = [op for op in ops if re.fullmatch(r"st\.global(\.\w+)*\.v4\.b32", op)]
        if name.endswith("-split"):  # vectors for whole packs, element-wide stores for mixed ones
            assert vector and len(vector) < len(ops), (name, ops)
        elif not re.search(r"-masked(-|$)", name):  # masked stores are scalar by design
            assert len(vector) == len(ops), (name, ops)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_suite_checks(tmp_path):
    """On a GPU: the suite's correctness checks (oracle, bounds, validation, CUDA graph capture) with CUDA tensors."""
    out = tmp_path / "checks.json"
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_suite.py"), "--only", "checks",
                        "--device", "cuda", "--out", str(out)], env=_clean_env(), capture_output=True, text=True,
                       timeout=900, cwd=tmp_path)
    assert r.returncode == 0, (r.stdout[-4000:], r.stderr[-4000:])
    checks = json.loads(out.read_text())["checks"]
    assert checks["failed"] == [] and checks["passed"], checks


def test_bench_script_runs_on_cpu(tmp_path):
    r = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_mask_gpu.py"), "--device", "cpu", "--batch", "1,4",
         "--vocab", "3000", "--repeats", "3", "--warmup", "1", "--out", str(tmp_path / "b.json")],
        env=_clean_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    data = json.loads((tmp_path / "b.json").read_text())
    assert {row["batch"] for row in data["results"]} == {1, 4}


# ------------------------------------------------- mask_batch: indices checked on the host


@pytest.fixture(scope="module")
def tiny_json():
    from kbnf_gpu import Vocabulary, compile_grammar
    from kbnf_gpu.grammars import JSON_KBNF

    tokens = {i: bytes([i]) for i in range(256)}
    tokens.update({256: b'{"', 257: b'":', 258: b"true", 259: b"</s>"})
    vocab = Vocabulary(tokens, special_ids=[259], eos_ids=[259], size=264)
    return compile_grammar(JSON_KBNF, vocab, syntax="kbnf", end_mode="eos")


@pytest.mark.parametrize("backend", [None, "torch", "triton"])
def test_mask_batch_checks_indices_on_the_host(tiny_json, backend):
    from kbnf_gpu import Matcher
    from kbnf_gpu.batch import fill_bitmask_batch, mask_batch

    matchers = [Matcher(tiny_json), None, Matcher(tiny_json)]
    matchers[2].accept_bytes(b'{"a')
    for bad, message in (([0, 1, -1], r"indices\[2\] = -1 is outside \[0, 4\)"),
                         ([0, 4, 1], r"indices\[1\] = 4 is outside"),
                         ([3, 1, 3], r"indices\[0\] and indices\[2\] are both 3")):
        logits = torch.zeros(4, 264)
        with pytest.raises(KernelInputError, match=message):
            mask_batch(logits, matchers, bad, backend=backend)
        assert torch.equal(logits, torch.zeros(4, 264))
        with pytest.raises(KernelInputError, match=message):
            fill_bitmask_batch(torch.zeros(4, 9, dtype=torch.int32), matchers, bad,
                               backend=backend if backend else "torch")
    logits = torch.zeros(4, 264)
    mask_batch(logits, matchers, [3, 0, 1], backend=backend)
    assert set(torch.nonzero(logits[3] == 0).flatten().tolist()) == set(matchers[0].allowed_token_ids().tolist())
    assert set(torch.nonzero(logits[1] == 0).flatten().tolist()) == set(matchers[2].allowed_token_ids().tolist())
    assert torch.equal(logits[0], torch.zeros(264)) and torch.equal(logits[2], torch.zeros(264))
