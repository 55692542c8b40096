"""Mask kernels: Triton (interpreter on CPU tensors) vs torch reference vs brute force."""
from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton_mask is imported

import importlib
import json
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
from kbnf_gpu.kernels.device_tables import HostStaging, RowPool, build_csr

if "kbnf_gpu.kernels.triton_mask" in sys.modules:  # imported earlier without the interpreter
    importlib.reload(sys.modules["kbnf_gpu.kernels.triton_mask"])
from kbnf_gpu.kernels import triton_mask as TM  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
HYP = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ----------------------------------------------------------------- helpers


class Case:
    """A random batch: table as python sets and as int32 words, CSR lists, targets."""

    def __init__(self, V, sets, row_lists, extra_lists, B_total, n_cols, indices=None, skip=None):
        self.V = V
        self.W = -(-V // 32)
        self.sets = sets
        self.row_lists = row_lists
        self.extra_lists = extra_lists
        self.B_total = B_total
        self.n_cols = n_cols
        self.indices = indices
        self.skip = skip
        words = np.zeros((len(sets), self.W), dtype=np.uint32)
        for r, s in enumerate(sets):
            for t in s:
                words[r, t // 32] |= np.uint32(1 << (t % 32))
        self.rows_np = words.view(np.int32)
        self.rows = torch.from_numpy(self.rows_np.copy())
        self.csr = build_csr(row_lists, extra_lists, device="cpu", indices=indices, skip=skip)

    @property
    def n(self):
        return len(self.row_lists)

    def target(self, b):
        return b if self.indices is None else self.indices[b]

    def allowed(self, b):
        """Allowed token ids of entry b, from python sets."""
        s = set()
        for r in self.row_lists[b]:
            s |= self.sets[r]
        s |= {t for t in self.extra_lists[b] if 0 <= t}
        return {t for t in s if t < self.V}

    def skipped(self, b):
        return self.skip is not None and bool(self.skip[b])

    def brute_logits(self, logits):
        out = logits.clone()
        for b in range(self.n):
            if self.skipped(b):
                continue
            ban = np.ones(self.n_cols, dtype=bool)
            ok = [t for t in self.allowed(b) if t < self.n_cols]
            ban[ok] = False
            out[self.target(b), torch.from_numpy(ban)] = float("-inf")
        return out

    def brute_bitmask(self, bitmask):
        out = bitmask.clone()
        for b in range(self.n):
            if self.skipped(b):
                continue
            words = np.zeros(out.shape[1], dtype=np.uint32)
            for t in self.allowed(b):
                if t // 32 < out.shape[1]:
                    words[t // 32] |= np.uint32(1 << (t % 32))
            out[self.target(b)] = torch.from_numpy(words.view(np.int32))
        return out

    def kwargs(self):
        return dict(indices=self.csr.indices, skip=self.csr.skip, vocab_size=self.V)


def random_logits(B, C, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, C, generator=g) * 4).to(dtype)


def bits(t):
    return t.view({torch.float32: torch.int32, torch.bfloat16: torch.int16, torch.float16: torch.int16}[t.dtype])


def assert_bit_equal(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    if not torch.equal(bits(a), bits(b)):
        diff = (bits(a) != bits(b)).nonzero()
        raise AssertionError(f"{diff.shape[0]} elements differ, first at {diff[:5].tolist()}")


@st.composite
def cases(draw, max_vocab=2100, max_n=5):
    V = draw(st.one_of(
        st.integers(1, 70),
        st.integers(1000, max_vocab),
        st.sampled_from([31, 32, 33, 1023, 1024, 1025, 2047, 2048, 2049]),
    ))
    W = -(-V // 32)
    R = draw(st.integers(0, 6))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(R):
        density = rng.choice([0.0, 0.01, 0.3, 0.9, 1.0])
        sets.append({int(t) for t in np.nonzero(rng.random(W * 32) < density)[0]})  # bits >= V too
    n = draw(st.integers(0, max_n))
    specials = sorted({0, V - 1, (W - 1) * 32, W * 32 - 1, V, -1, W * 32 + 3, max(0, V - 33)})
    tok = st.one_of(st.sampled_from(specials), st.integers(0, max(0, V - 1)))
    row_lists, extra_lists = [], []
    for _ in range(n):
        rl = draw(st.lists(st.integers(0, R - 1), max_size=4)) if R else []
        if rl and draw(st.booleans()):
            rl.append(rl[0])  # duplicate row id
        row_lists.append(rl)
        extra_lists.append(draw(st.lists(tok, max_size=6)))
    B_total = n + draw(st.integers(0, 2))
    use_indices = draw(st.booleans())
    indices = None
    if use_indices:
        indices = [int(i) for i in rng.permutation(B_total)[:n]]
    elif n == 0:
        B_total = max(B_total, 1)
    skip = None
    if n and draw(st.booleans()):
        skip = [draw(st.booleans()) for _ in range(n)]
    n_cols = draw(st.sampled_from([V, W * 32, V + 1, W * 32 + 40, max(1, V - 3)]))
    if B_total == 0:
        B_total = 1
    return Case(V, sets, row_lists, extra_lists, B_total, n_cols, indices, skip)


# ------------------------------------------------- torch reference vs brute force


@settings(HYP, max_examples=150)
@given(cases(max_vocab=3000, max_n=8), st.sampled_from(DTYPES))
def test_torch_ref_matches_brute_force(case, dtype):
    logits = random_logits(case.B_total, case.n_cols, dtype, 1)
    expect = case.brute_logits(logits)
    K.apply_token_masks(logits, case.rows, *case.csr.csr(), **case.kwargs(), backend="torch")
    assert_bit_equal(logits, expect)


@settings(HYP, max_examples=100)
@given(cases(max_vocab=3000, max_n=8), st.integers(0, 2))
def test_torch_ref_bitmask_matches_brute_force(case, extra_words):
    bm = torch.full((case.B_total, case.W + extra_words), 0x5A5A5A5A, dtype=torch.int32)
    expect = case.brute_bitmask(bm)
    K.fill_token_bitmask(bm, case.rows, *case.csr.csr(), **case.kwargs(), backend="torch")
    assert torch.equal(bm, expect)


# -------------------------------------------------------- Triton vs torch reference


@HYP
@given(cases(), st.sampled_from(DTYPES))
def test_triton_matches_torch_ref(case, dtype):
    l_tr = random_logits(case.B_total, case.n_cols, dtype, 2)
    l_ref = l_tr.clone()
    K.apply_token_masks(l_tr, case.rows, *case.csr.csr(), **case.kwargs(), backend="triton")
    K.apply_token_masks(l_ref, case.rows, *case.csr.csr(), **case.kwargs(), backend="torch")
    assert_bit_equal(l_tr, l_ref)


@HYP
@given(cases(), st.integers(0, 2))
def test_triton_bitmask_matches_torch_ref(case, extra_words):
    bm_tr = torch.full((case.B_total, case.W + extra_words), 0x5A5A5A5A, dtype=torch.int32)
    bm_ref = bm_tr.clone()
    K.fill_token_bitmask(bm_tr, case.rows, *case.csr.csr(), **case.kwargs(), backend="triton")
    K.fill_token_bitmask(bm_ref, case.rows, *case.csr.csr(), **case.kwargs(), backend="torch")
    assert torch.equal(bm_tr, bm_ref)
    assert torch.equal(bm_ref, case.brute_bitmask(torch.full_like(bm_ref, 0x5A5A5A5A)))


@settings(HYP, max_examples=15)
@given(cases(max_n=4), st.sampled_from(DTYPES), st.sampled_from(["triton", "torch"]))
def test_fill_then_apply_equals_direct_mask(case, dtype, backend):
    """fill_token_bitmask + apply_bitmask_inplace == apply_token_masks."""
    direct = random_logits(case.B_total, case.n_cols, dtype, 3)
    two_step = direct.clone()
    K.apply_token_masks(direct, case.rows, *case.csr.csr(), **case.kwargs(), backend=backend)
    bm = K.allocate_token_bitmask(case.B_total, case.V)
    K.fill_token_bitmask(bm, case.rows, *case.csr.csr(), **case.kwargs(), backend=backend)
    # Skipped / untargeted rows keep -1 (unconstrained): only padding columns get masked there.
    touched = [case.target(b) for b in range(case.n) if not case.skipped(b)]
    idx = torch.tensor(touched, dtype=torch.int32)
    K.apply_bitmask_inplace(two_step, bm, idx, vocab_size=case.V, backend=backend)
    assert_bit_equal(two_step, direct)


@pytest.mark.parametrize("block_words", [32, 64, 128])
@pytest.mark.parametrize("dtype", DTYPES)
def test_triton_block_sizes(monkeypatch, block_words, dtype):
    """Every block size the launcher can pick, with blocks that straddle V and the logits width."""
    monkeypatch.setattr(TM, "_launch_config", lambda n, w: (block_words, 4))
    rng = np.random.default_rng(block_words)
    V = 5000
    sets = [set(rng.choice(V, size=k, replace=False).tolist()) for k in (0, 3, 700, 2500)]
    row_lists = [[1, 2], [3, 3, 0], [], [2]]
    extra_lists = [[0, V - 1, 4099, 4100], [], [V - 1, 4096 + 31, 17], [-1, V, 999999]]
    case = Case(V, sets, row_lists, extra_lists, 5, V + 100, indices=[4, 0, 2, 3], skip=[0, 0, 0, 1])
    l_tr = random_logits(5, V + 100, dtype, 4)
    l_ref = l_tr.clone()
    K.apply_token_masks(l_tr, case.rows, *case.csr.csr(), **case.kwargs(), backend="triton")
    K.apply_token_masks(l_ref, case.rows, *case.csr.csr(), **case.kwargs(), backend="torch")
    assert_bit_equal(l_tr, l_ref)
    assert_bit_equal(l_ref, case.brute_logits(random_logits(5, V + 100, dtype, 4)))
    bm_tr = torch.full((5, case.W), 7, dtype=torch.int32)
    bm_ref = bm_tr.clone()
    K.fill_token_bitmask(bm_tr, case.rows, *case.csr.csr(), **case.kwargs(), backend="triton")
    K.fill_token_bitmask(bm_ref, case.rows, *case.csr.csr(), **case.kwargs(), backend="torch")
    assert torch.equal(bm_tr, bm_ref)
    a, b = random_logits(5, V + 100, dtype, 5), None
    b = a.clone()
    K.apply_bitmask_inplace(a, bm_ref, vocab_size=V, backend="triton")
    K.apply_bitmask_inplace(b, bm_ref, vocab_size=V, backend="torch")
    assert_bit_equal(a, b)


# ------------------------------------------------------------------ explicit edges


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_vocab_of_one(backend, dtype):
    case = Case(1, [{0}, set()], [[0], [1], []], [[], [], [0]], 3, 9)
    logits = random_logits(3, 9, dtype, 6)
    orig = logits.clone()
    K.apply_token_masks(logits, case.rows, *case.csr.csr(), **case.kwargs(), backend=backend)
    assert_bit_equal(logits[:, :1], torch.stack([orig[0, :1], torch.full((1,), float("-inf"), dtype=dtype), orig[2, :1]]))
    assert torch.isneginf(logits[:, 1:]).all()


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_single_entry_only_extras_and_one_dim_logits(backend):
    V = 100
    case = Case(V, [], [[]], [[0, 99, 96, 50, 50]], 1, V)
    logits = torch.zeros(V)
    K.apply_token_masks(logits, case.rows, *case.csr.csr(), **case.kwargs(), backend=backend)
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
@pytest.mark.parametrize("skip_dtype", [torch.bool, torch.int8, torch.int32])
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


def test_validation_errors():
    rows = torch.zeros((1, 2), dtype=torch.int32)
    csr = build_csr([[0]], None, device="cpu")
    with pytest.raises(ValueError, match="vocab_size"):
        K.apply_token_masks(torch.zeros(1, 64), rows, *csr.csr(), vocab_size=65)
    with pytest.raises(ValueError, match="backend"):
        K.apply_token_masks(torch.zeros(1, 64), rows, *csr.csr(), backend="cuda")
    with pytest.raises(ValueError, match="target rows"):
        two = build_csr([[0], [0]], None, device="cpu")
        K.apply_token_masks(torch.zeros(1, 64), rows, *two.csr())
    with pytest.raises(TypeError):
        K.apply_token_masks(torch.zeros(1, 64), rows.float(), *csr.csr())
    with pytest.raises(ValueError, match="row ids"):
        build_csr([[0, 3]], None, device="cpu", num_rows=2)


# ------------------------------------------------------------ RowPool and staging


def test_row_pool_shares_rows_by_content_and_stays_bounded():
    """Rows are addressed by content key: uploaded once, shared by grammars, evicted LRU past capacity."""
    V = 200
    W = -(-V // 32)
    rng = np.random.default_rng(7)
    sets = [set(rng.choice(V, 20, replace=False).tolist()) for _ in range(12)]
    row_bits = Case(V, sets, [[0]], [[]], 1, V).rows_np
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
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from kbnf_gpu.kernels import triton_mask as tm

    def compile_(fn, types, consts, warps):
        sig = {a: ("constexpr" if a in consts else types[a]) for a in fn.arg_names}
        triton.compile(ASTSource(fn, sig, constexprs=consts), target=GPUTarget("cuda", 90, 32),
                       options=dict(num_warps=warps))

    csr = dict(rows_ptr="*i32", W="i32", row_ptr_ptr="*i32", row_idx_ptr="*i32", extra_ptr_ptr="*i32",
               extra_ids_ptr="*i32", indices_ptr="*i32", skip_ptr="*i8", vocab_size="i32")
    for dt in ("fp32", "bf16", "fp16"):
        for bw, warps in ((32, 2), (64, 4), (128, 8)):
            for flags in ((False, False), (True, True)):
                c = dict(HAS_INDICES=flags[0], HAS_SKIP=flags[1], BLOCK_WORDS=bw, EXTRA_CHUNK=tm.EXTRA_CHUNK)
                compile_(tm._mask_logits_kernel, dict(csr, logits_ptr="*" + dt, logits_stride="i32",
                         n_cols="i32"), c, warps)
                compile_(tm._apply_bitmask_kernel, dict(logits_ptr="*" + dt, logits_stride="i32", n_cols="i32",
                         bitmask_ptr="*i32", bitmask_stride="i32", bitmask_words="i32", indices_ptr="*i32",
                         vocab_size="i32"), dict(HAS_INDICES=flags[0], BLOCK_WORDS=bw), warps)
    for bw, warps in ((32, 1), (64, 2), (128, 4)):
        c = dict(HAS_INDICES=True, HAS_SKIP=True, BLOCK_WORDS=bw, EXTRA_CHUNK=tm.EXTRA_CHUNK)
        compile_(tm._fill_bitmask_kernel, dict(csr, out_ptr="*i32", out_stride="i32", out_words="i32"), c, warps)
    print("AOT-OK")
    """
)


def _have_ptxas() -> bool:
    import triton

    return (Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas").exists() or bool(
        shutil.which("ptxas")
    )


@pytest.mark.skipif(not _have_ptxas(), reason="no ptxas to compile for sm_90")
def test_kernels_compile_for_sm90(tmp_path):
    """The interpreter accepts things the compiler rejects: compile every variant for H100, no GPU needed."""
    r = subprocess.run([sys.executable, "-c", _AOT_SCRIPT], env=_clean_env(), capture_output=True,
                       text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0 and "AOT-OK" in r.stdout, r.stderr[-4000:]


_GPU_SCRIPT = textwrap.dedent(
    """
    import json, torch
    import kbnf_gpu.kernels as K
    from kbnf_gpu.kernels.device_tables import build_csr
    g = torch.Generator().manual_seed(0)
    V = 128256; W = (V + 31) // 32; dev = "cuda"
    rows = torch.randint(-2**31, 2**31 - 1, (64, W), generator=g, dtype=torch.int64).to(torch.int32)
    rows[::3] &= 0x01010101  # sparser rows
    rows = rows.to(dev)
    failures = []
    for B in (1, 7, 128, 300):
        rl = [torch.randint(0, 64, (int(torch.randint(0, 5, (1,), generator=g)),), generator=g).tolist()
              for _ in range(B)]
        el = [torch.randint(-2, V + 40, (int(torch.randint(0, 40, (1,), generator=g)),), generator=g).tolist()
              for _ in range(B)]
        idx = torch.randperm(B + 3, generator=g)[:B].tolist()
        skip = [i % 5 == 4 for i in range(B)]
        csr = build_csr(rl, el, device=dev, indices=idx, skip=skip)
        for dt in (torch.float32, torch.bfloat16, torch.float16):
            a = torch.randn(B + 3, V + 64, generator=g).to(dt).to(dev); b = a.clone()
            K.apply_token_masks(a, rows, *csr.csr(), **csr.options(), vocab_size=V, backend="triton")
            K.apply_token_masks(b, rows, *csr.csr(), **csr.options(), vocab_size=V, backend="torch")
            if not torch.equal(a.view(torch.uint8), b.view(torch.uint8)):
                failures.append(("mask", B, str(dt)))
        m1 = torch.full((B + 3, W), 3, dtype=torch.int32, device=dev); m2 = m1.clone()
        K.fill_token_bitmask(m1, rows, *csr.csr(), **csr.options(), vocab_size=V, backend="triton")
        K.fill_token_bitmask(m2, rows, *csr.csr(), **csr.options(), vocab_size=V, backend="torch")
        if not torch.equal(m1, m2):
            failures.append(("fill", B))
        a = torch.randn(B + 3, V, device=dev); b = a.clone()
        K.apply_bitmask_inplace(a, m2, vocab_size=V, backend="triton")
        K.apply_bitmask_inplace(b, m2, vocab_size=V, backend="torch")
        if not torch.equal(a, b):
            failures.append(("apply", B))
    print(json.dumps(failures))
    """
)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_triton_on_gpu_matches_torch_ref(tmp_path):
    r = subprocess.run([sys.executable, "-c", _GPU_SCRIPT], env=_clean_env(), capture_output=True,
                       text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-4000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []


def test_bench_script_runs_on_cpu(tmp_path):
    r = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_mask_gpu.py"), "--device", "cpu", "--batch", "1,4",
         "--vocab", "3000", "--repeats", "3", "--warmup", "1", "--out", str(tmp_path / "b.json")],
        env=_clean_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    data = json.loads((tmp_path / "b.json").read_text())
    assert {row["batch"] for row in data["results"]} == {1, 4}
