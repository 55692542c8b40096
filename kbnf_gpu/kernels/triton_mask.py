"""Triton kernels: OR CSR row sets of a resident bitset table, mask logits / fill bitmasks.

Same semantics as :mod:`kbnf_gpu.kernels.torch_ref` (see its module doc), bit
for bit. Import this module only after ``TRITON_INTERPRET`` has its final
value: the ``@triton.jit`` decorators read it when the module is imported.

Work split: batch entry ``b``'s words are cut into *tiles* of
``block_words * blocks_per_program`` words; tile ``t`` of the flat list
(entry-major, so neighbouring programs read neighbouring words of the same
rows) goes to program ``t % grid``. With the default grid (one program per
tile) every program runs one tile; a persistent grid (``programs_per_sm``)
loops. A program ORs its entry's rows over the tile's words (the rows are a
small hot table, served from L2), ORs in the extra ids falling there, clears
bits at or past ``vocab_size``, expands the bits and writes ``-inf`` where a
token is not allowed.

Every load and store is bounded: a target row outside the tensor, a skipped
entry, a row id outside ``[0, R)`` or an extra id outside ``[0, vocab_size)``
touch nothing, and CSR pointers are clamped to their arrays. Validation
(:mod:`.validate`) turns such values into errors before the launch; these
bounds make an unvalidated launch memory-safe, never a write outside the
tensor.

The kernels read no host state and make no data-dependent host decisions, so
a launch is non-blocking and can be captured in a CUDA graph.

Tuning knobs (:class:`LaunchConfig`, swept by ``benchmarks/gpu_suite.py --sweep``):

* ``block_words``: words (32 tokens each) per tile step; ``num_warps``: warps per program.
* ``blocks_per_program``: consecutive tile steps one program walks (words per
  program = ``block_words * blocks_per_program``): fewer programs, CSR pointers read once.
* ``programs_per_sm``: 0 = one program per tile; k > 0 = a persistent grid of
  k programs per SM looping over tiles (what xgrammar's Triton kernel does).
* ``store``: how logits are written.

  - ``"masked"``: never read logits; a predicated store of ``-inf`` per
    disallowed element. Traffic = the disallowed elements only; element-wide stores.
  - ``"select"``: read every logit and write back ``where(allowed, x, -inf)``
    with unpredicated 16-byte vectors: exactly the read-once + write-once floor.
  - ``"packed"``: per 16-byte pack (8 bf16/fp16 or 4 fp32 logits): all allowed
    → untouched; none allowed → one 16-byte ``-inf`` store; mixed → 16-byte
    load, select, 16-byte store (what xgrammar's CUDA kernel does).
  - ``"split"``: nothing read; none allowed → one 16-byte ``-inf`` store;
    mixed → element-wide stores of ``-inf`` to its disallowed logits only.
* ``extra_chunk``: extra ids compared per step against a tile's words.
* ``row_chunk``: an entry's row ids read per step; 1 = one row at a time (a
  dependent id → row load chain per row), k > 1 = k ids and their k row slices
  loaded together and OR-reduced (independent loads in flight).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

STORE_MODES = {"masked": 0, "select": 1, "packed": 2, "split": 3}

# An H100 has 132 SMs; used when no CUDA device answers (interpreter, ahead-of-time builds).
_DEFAULT_SMS = 132


@dataclass(frozen=True)
class LaunchConfig:
    """One launch's tuning knobs (see the module doc); every field a power of two except ``programs_per_sm``."""

    block_words: int
    num_warps: int
    blocks_per_program: int = 1
    programs_per_sm: int = 0
    store: str = "masked"
    extra_chunk: int = 16
    row_chunk: int = 1

    def __post_init__(self) -> None:
        for name in ("block_words", "num_warps", "blocks_per_program", "extra_chunk", "row_chunk"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1 or v & (v - 1):
                raise ValueError(f"LaunchConfig.{name} must be a power of two >= 1, got {v!r}")
        if not isinstance(self.programs_per_sm, int) or self.programs_per_sm < 0:
            raise ValueError(f"LaunchConfig.programs_per_sm must be an int >= 0, got {self.programs_per_sm!r}")
        if self.store not in STORE_MODES:
            raise ValueError(f"LaunchConfig.store must be one of {sorted(STORE_MODES)}, got {self.store!r}")

    @property
    def words_per_program(self) -> int:
        return self.block_words * self.blocks_per_program


def default_launch(kind: str, n: int, num_words: int, elem_size: int = 2) -> LaunchConfig:
    """The launch for ``n`` entries of ``num_words`` words of ``elem_size``-byte logits.

    ``kind`` is "mask", "apply" or "fill". Measured on an H200 (``gpu_suite.py
    --sweep`` and ``profile_kernels.py --launches``, V = 128,256):

    * "mask": one warp per 32-word tile (1,024 tokens), scalar masked stores and
      64 extra ids compared per step were the fastest of 41 launches at every
      batch size (1 to 1,024) in bf16 and fp32: B = 1 in 3.8 µs, B = 1,024 bf16
      in 194 µs (1.5x the read + write floor) against 497 µs for the launch
      reasoned before (128-word tiles, 8 warps). Wider tiles, more warps,
      several tiles per program, persistent grids and the "select", "packed"
      and "split" stores were slower or no faster.
    * "apply" (a bitmask already on the device): the same tile with the
      "packed" store in bf16/fp16: 19 µs at B = 128 and 524 µs at B = 4,096
      against 47 and 1,464 µs with masked stores (those stall on the bitmask
      load: ncu showed 0.25 eligible warps per scheduler). In fp32 "packed"
      is 2.6x slower (4 logits per pack); there masked stores on a persistent
      grid of 4 programs per SM win: 36 µs at B = 128 and 1,088 µs at B =
      4,096 against 42 and 1,330 µs.
    * "fill": the same tile (484 µs at B = 4,096, from 700 reasoned).
    """
    if kind not in ("mask", "apply", "fill"):
        raise ValueError(f"kind must be 'mask', 'apply' or 'fill', got {kind!r}")
    if kind == "apply":
        return _APPLY_LAUNCH_16 if elem_size <= 2 else _APPLY_LAUNCH_32
    return _DEFAULT_LAUNCH


_DEFAULT_LAUNCH = LaunchConfig(32, 1, extra_chunk=64)
_APPLY_LAUNCH_16 = LaunchConfig(32, 1, store="packed")
_APPLY_LAUNCH_32 = LaunchConfig(32, 1, programs_per_sm=4)

_SM_COUNT: dict[int, int] = {}


def _grid(tiles: int, cfg: LaunchConfig, device: torch.device) -> tuple[int]:
    if cfg.programs_per_sm == 0:
        return (tiles,)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        if index not in _SM_COUNT:
            _SM_COUNT[index] = torch.cuda.get_device_properties(index).multi_processor_count
        sms = _SM_COUNT[index]
    else:
        sms = _DEFAULT_SMS
    return (max(1, min(tiles, cfg.programs_per_sm * sms)),)


# ------------------------------------------------------------------ device helpers


@triton.jit
def _bit_or(a, b):
    return a | b


@triton.jit
def _target(b, indices_ptr, skip_ptr, n_targets, HAS_INDICES: tl.constexpr, HAS_SKIP: tl.constexpr):
    """(target row of entry b as int64, whether the entry writes: not skipped, target inside the tensor)."""
    if HAS_INDICES:
        target = tl.load(indices_ptr + b).to(tl.int64)
    else:
        target = b.to(tl.int64)
    ok = (target >= 0) & (target < n_targets)
    if HAS_SKIP:
        ok = ok & (tl.load(skip_ptr + b) == 0)
    return target, ok


@triton.jit
def _slice(ptr_ptr, b, length):
    """Entry b's CSR slice [start, end), clamped to [0, length) (a decreasing slice is empty)."""
    start = tl.minimum(tl.maximum(tl.load(ptr_ptr + b).to(tl.int64), 0), length)
    end = tl.minimum(tl.maximum(tl.load(ptr_ptr + b + 1).to(tl.int64), 0), length)
    return start, end


@triton.jit
def _entry_words(
    rows_ptr, R, W, row_idx_ptr, r0, r1, extra_ids_ptr, e0, e1, w0, vocab_size,
    BLOCK_WORDS: tl.constexpr, EXTRA_CHUNK: tl.constexpr, ROW_CHUNK: tl.constexpr,
):
    """int32 [BLOCK_WORDS]: OR over words [w0, w0 + BLOCK_WORDS) of rows row_idx[r0:r1] and ids extra_ids[e0:e1].

    Every tile scans its entry's extra ids (a JSON state has ~135 of them), so a
    chunk with no id in the tile costs one load and one compare; only chunks
    that hit pay the [EXTRA_CHUNK, BLOCK_WORDS] compare. Any order is correct;
    sorted ids (what matchers produce) cluster the hits into one or two chunks.
    """
    words = w0 + tl.arange(0, BLOCK_WORDS)
    acc = tl.zeros([BLOCK_WORDS], dtype=tl.int32)
    # An unknown row id reads nothing: its word limit becomes 0.
    if ROW_CHUNK == 1:
        for i in range(r0, r1):
            r = tl.load(row_idx_ptr + i).to(tl.int64)
            known = (r >= 0) & (r < R)
            acc |= tl.load(rows_ptr + tl.where(known, r, 0) * W + words, mask=words < tl.where(known, W, 0),
                           other=0)
    else:
        row_lane = tl.arange(0, ROW_CHUNK)
        for i in range(r0, r1, ROW_CHUNK):
            r = tl.load(row_idx_ptr + i + row_lane, mask=i + row_lane < r1, other=-1).to(tl.int64)
            known = (r >= 0) & (r < R)
            limit = tl.where(known, W, 0)
            block = tl.load(rows_ptr + tl.where(known, r, 0)[:, None] * W + words[None, :],
                            mask=words[None, :] < limit[:, None], other=0)
            acc |= tl.reduce(block, 0, _bit_or)
    lane = tl.arange(0, EXTRA_CHUNK)
    for j in range(e0, e1, EXTRA_CHUNK):
        ids = tl.load(extra_ids_ptr + j + lane, mask=j + lane < e1, other=-1).to(tl.int64)
        ids = tl.where((ids >= 0) & (ids < vocab_size), ids, -1).to(tl.int32)
        word = ids >> 5  # -1 for an ignored id
        in_tile = (word >= w0) & (word < w0 + BLOCK_WORDS)
        if tl.max(in_tile.to(tl.int32), 0) > 0:
            hit = word[:, None] == words[None, :]
            bit = tl.full([EXTRA_CHUNK], 1, tl.int32) << (ids & 31)
            acc |= tl.reduce(tl.where(hit, bit[:, None], 0), 0, _bit_or)
    return acc


@triton.jit
def _clip_to_vocab(acc, words, vocab_size, BLOCK_WORDS: tl.constexpr):
    """``acc`` with the bits of tokens >= vocab_size cleared."""
    nbits = tl.minimum(tl.maximum(vocab_size - words * 32, 0), 32)
    keep = tl.where(nbits >= 32, -1, (tl.full([BLOCK_WORDS], 1, tl.int32) << tl.minimum(nbits, 31)) - 1)
    return acc & keep


@triton.jit
def _store_logits(
    row_base, acc, words, n_cols,
    BLOCK_WORDS: tl.constexpr, STORE: tl.constexpr, PACK: tl.constexpr,
):
    """Write -inf into the logits row at ``row_base`` wherever ``acc`` (clipped to the vocabulary) has no bit."""
    ninf = float("-inf")
    if STORE >= 2:  # packed or split: 16-byte packs of PACK logits
        G: tl.constexpr = 32 // PACK
        FULL: tl.constexpr = (1 << PACK) - 1
        g = tl.arange(0, G)
        k = tl.arange(0, PACK)
        shift = g[:, None] * PACK + k[None, :]
        cols = words[:, None, None] * 32 + shift[None, :, :]
        allowed = ((acc[:, None, None] >> shift[None, :, :]) & 1) != 0
        pack = (acc[:, None] >> (g[None, :] * PACK)) & FULL
        inside = cols < n_cols
        mixed = ((pack != 0) & (pack != FULL))[:, :, None] & inside
        if STORE == 2:
            x = tl.load(row_base + cols, mask=mixed, other=ninf)
            tl.store(row_base + cols, tl.where(allowed, x, ninf), mask=(pack != FULL)[:, :, None] & inside)
        else:
            ninf_packs = tl.full([BLOCK_WORDS, G, PACK], ninf, row_base.dtype.element_ty)
            tl.store(row_base + cols, ninf_packs, mask=(pack == 0)[:, :, None] & inside)
            tl.store(row_base + cols, ninf_packs, mask=mixed & ~allowed)
    else:
        lanes = tl.arange(0, 32)
        cols = words[:, None] * 32 + lanes[None, :]
        allowed = ((acc[:, None] >> lanes[None, :]) & 1) != 0
        inside = cols < n_cols
        if STORE == 1:  # select: read everything, write everything
            x = tl.load(row_base + cols, mask=inside)
            tl.store(row_base + cols, tl.where(allowed, x, ninf), mask=inside)
        else:  # masked: write the disallowed elements only
            tl.store(row_base + cols, tl.full([BLOCK_WORDS, 32], ninf, row_base.dtype.element_ty),
                     mask=inside & ~allowed)


# ------------------------------------------------------------------ kernels


@triton.jit
def _mask_logits_kernel(
    logits_ptr, logits_stride, n_cols, n_targets,
    rows_ptr, R, W,
    row_ptr_ptr, row_idx_ptr, nnz, extra_ptr_ptr, extra_ids_ptr, n_extra,
    indices_ptr, skip_ptr, vocab_size, n_entries, tiles_per_entry,
    HAS_INDICES: tl.constexpr, HAS_SKIP: tl.constexpr,
    BLOCK_WORDS: tl.constexpr, BLOCKS_PER_PROGRAM: tl.constexpr, EXTRA_CHUNK: tl.constexpr,
    ROW_CHUNK: tl.constexpr,
    STORE: tl.constexpr, PACK: tl.constexpr,
):
    for tile in tl.range(tl.program_id(0), n_entries * tiles_per_entry, tl.num_programs(0)):
        b = tile // tiles_per_entry
        target, ok = _target(b, indices_ptr, skip_ptr, n_targets, HAS_INDICES, HAS_SKIP)
        if ok:
            r0, r1 = _slice(row_ptr_ptr, b, nnz)
            e0, e1 = _slice(extra_ptr_ptr, b, n_extra)
            row_base = logits_ptr + target * logits_stride
            first = (tile - b * tiles_per_entry) * BLOCKS_PER_PROGRAM
            for step in tl.static_range(BLOCKS_PER_PROGRAM):
                w0 = (first + step) * BLOCK_WORDS
                words = w0 + tl.arange(0, BLOCK_WORDS)
                acc = _entry_words(rows_ptr, R, W, row_idx_ptr, r0, r1, extra_ids_ptr, e0, e1, w0,
                                   vocab_size, BLOCK_WORDS, EXTRA_CHUNK, ROW_CHUNK)
                acc = _clip_to_vocab(acc, words, vocab_size, BLOCK_WORDS)
                _store_logits(row_base, acc, words, n_cols, BLOCK_WORDS, STORE, PACK)


@triton.jit
def _fill_bitmask_kernel(
    out_ptr, out_stride, out_words, n_targets,
    rows_ptr, R, W,
    row_ptr_ptr, row_idx_ptr, nnz, extra_ptr_ptr, extra_ids_ptr, n_extra,
    indices_ptr, skip_ptr, vocab_size, n_entries, tiles_per_entry,
    HAS_INDICES: tl.constexpr, HAS_SKIP: tl.constexpr,
    BLOCK_WORDS: tl.constexpr, BLOCKS_PER_PROGRAM: tl.constexpr, EXTRA_CHUNK: tl.constexpr,
    ROW_CHUNK: tl.constexpr,
):
    for tile in tl.range(tl.program_id(0), n_entries * tiles_per_entry, tl.num_programs(0)):
        b = tile // tiles_per_entry
        target, ok = _target(b, indices_ptr, skip_ptr, n_targets, HAS_INDICES, HAS_SKIP)
        if ok:
            r0, r1 = _slice(row_ptr_ptr, b, nnz)
            e0, e1 = _slice(extra_ptr_ptr, b, n_extra)
            first = (tile - b * tiles_per_entry) * BLOCKS_PER_PROGRAM
            for step in tl.static_range(BLOCKS_PER_PROGRAM):
                w0 = (first + step) * BLOCK_WORDS
                words = w0 + tl.arange(0, BLOCK_WORDS)
                acc = _entry_words(rows_ptr, R, W, row_idx_ptr, r0, r1, extra_ids_ptr, e0, e1, w0,
                                   vocab_size, BLOCK_WORDS, EXTRA_CHUNK, ROW_CHUNK)
                acc = _clip_to_vocab(acc, words, vocab_size, BLOCK_WORDS)
                tl.store(out_ptr + target * out_stride + words, acc, mask=words < out_words)


@triton.jit
def _apply_bitmask_kernel(
    logits_ptr, logits_stride, n_cols, n_targets,
    bitmask_ptr, bitmask_stride, bitmask_words,
    indices_ptr, vocab_size, n_entries, tiles_per_entry,
    HAS_INDICES: tl.constexpr, BLOCK_WORDS: tl.constexpr, BLOCKS_PER_PROGRAM: tl.constexpr,
    STORE: tl.constexpr, PACK: tl.constexpr,
):
    for tile in tl.range(tl.program_id(0), n_entries * tiles_per_entry, tl.num_programs(0)):
        b = tile // tiles_per_entry
        target, ok = _target(b, indices_ptr, indices_ptr, n_targets, HAS_INDICES, False)
        if ok:
            row_base = logits_ptr + target * logits_stride
            first = (tile - b * tiles_per_entry) * BLOCKS_PER_PROGRAM
            for step in tl.static_range(BLOCKS_PER_PROGRAM):
                words = (first + step) * BLOCK_WORDS + tl.arange(0, BLOCK_WORDS)
                acc = tl.load(bitmask_ptr + target * bitmask_stride + words, mask=words < bitmask_words, other=0)
                acc = _clip_to_vocab(acc, words, vocab_size, BLOCK_WORDS)
                _store_logits(row_base, acc, words, n_cols, BLOCK_WORDS, STORE, PACK)


# ------------------------------------------------------------------ launchers


def _tiles(n: int, num_words: int, cfg: LaunchConfig) -> tuple[int, int]:
    """(tiles per entry, total tiles)."""
    per_entry = triton.cdiv(num_words, cfg.words_per_program)
    return per_entry, n * per_entry


def _pack(t: torch.Tensor) -> int:
    return 16 // t.element_size()


def mask_logits(
    logits: torch.Tensor,
    rows: torch.Tensor,
    row_ptr: torch.Tensor,
    row_idx: torch.Tensor,
    extra_ptr: torch.Tensor,
    extra_ids: torch.Tensor,
    indices: torch.Tensor | None,
    skip: torch.Tensor | None,
    vocab_size: int,
    launch: LaunchConfig | None = None,
) -> None:
    """Launch the logits-masking kernel (arguments already checked by the entry point)."""
    n = row_ptr.numel() - 1
    num_words = triton.cdiv(logits.shape[1], 32)
    if n == 0 or num_words == 0:
        return
    cfg = launch or default_launch("mask", n, num_words, logits.element_size())
    per_entry, tiles = _tiles(n, num_words, cfg)
    _mask_logits_kernel[_grid(tiles, cfg, logits.device)](
        logits, logits.stride(0), logits.shape[1], logits.shape[0],
        rows, rows.shape[0], rows.shape[1],
        row_ptr, row_idx, row_idx.numel(), extra_ptr, extra_ids, extra_ids.numel(),
        indices if indices is not None else row_ptr,
        skip if skip is not None else row_ptr,
        vocab_size, n, per_entry,
        HAS_INDICES=indices is not None, HAS_SKIP=skip is not None,
        BLOCK_WORDS=cfg.block_words, BLOCKS_PER_PROGRAM=cfg.blocks_per_program, EXTRA_CHUNK=cfg.extra_chunk,
        ROW_CHUNK=cfg.row_chunk,
        STORE=STORE_MODES[cfg.store], PACK=_pack(logits),
        num_warps=cfg.num_warps,
    )


def fill_bitmask(
    bitmask_out: torch.Tensor,
    rows: torch.Tensor,
    row_ptr: torch.Tensor,
    row_idx: torch.Tensor,
    extra_ptr: torch.Tensor,
    extra_ids: torch.Tensor,
    indices: torch.Tensor | None,
    skip: torch.Tensor | None,
    vocab_size: int,
    launch: LaunchConfig | None = None,
) -> None:
    """Launch the bitmask-filling kernel (arguments already checked by the entry point)."""
    n = row_ptr.numel() - 1
    num_words = bitmask_out.shape[1]
    if n == 0 or num_words == 0:
        return
    cfg = launch or default_launch("fill", n, num_words)
    per_entry, tiles = _tiles(n, num_words, cfg)
    _fill_bitmask_kernel[_grid(tiles, cfg, bitmask_out.device)](
        bitmask_out, bitmask_out.stride(0), num_words, bitmask_out.shape[0],
        rows, rows.shape[0], rows.shape[1],
        row_ptr, row_idx, row_idx.numel(), extra_ptr, extra_ids, extra_ids.numel(),
        indices if indices is not None else row_ptr,
        skip if skip is not None else row_ptr,
        vocab_size, n, per_entry,
        HAS_INDICES=indices is not None, HAS_SKIP=skip is not None,
        BLOCK_WORDS=cfg.block_words, BLOCKS_PER_PROGRAM=cfg.blocks_per_program, EXTRA_CHUNK=cfg.extra_chunk,
        ROW_CHUNK=cfg.row_chunk,
        num_warps=cfg.num_warps,
    )


def apply_bitmask(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    indices: torch.Tensor | None,
    vocab_size: int,
    launch: LaunchConfig | None = None,
) -> None:
    """Launch the bitmask-application kernel (arguments already checked by the entry point)."""
    n = indices.numel() if indices is not None else min(logits.shape[0], bitmask.shape[0])
    num_words = triton.cdiv(logits.shape[1], 32)
    if n == 0 or num_words == 0:
        return
    cfg = launch or default_launch("apply", n, num_words, logits.element_size())
    per_entry, tiles = _tiles(n, num_words, cfg)
    _apply_bitmask_kernel[_grid(tiles, cfg, logits.device)](
        logits, logits.stride(0), logits.shape[1], min(logits.shape[0], bitmask.shape[0]),
        bitmask, bitmask.stride(0), bitmask.shape[1],
        indices if indices is not None else bitmask,
        vocab_size, n, per_entry,
        HAS_INDICES=indices is not None,
        BLOCK_WORDS=cfg.block_words, BLOCKS_PER_PROGRAM=cfg.blocks_per_program,
        STORE=STORE_MODES[cfg.store], PACK=_pack(logits),
        num_warps=cfg.num_warps,
    )
