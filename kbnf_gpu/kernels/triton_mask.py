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

A tile of bf16 logits is only 2 KB, so what bounds the kernel is the chain of
dependent loads before its stores, not bandwidth. The chain is kept to three
loads: the entry's CSR pointers; the first chunks of its row ids and extra ids
together (held for every step of the program); the rows' words at each step.

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
* ``extra_chunk``: an entry's extra ids loaded per chunk. The first chunk is
  loaded once per program and kept; a longer list loads its further chunks at
  every tile step.
* ``row_chunk``: an entry's row ids loaded per chunk, the first one once per
  program; a chunk's row slices are loaded together and OR-reduced
  (independent loads in flight). 1 = a further id → row load chain per row.
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

    ``kind`` is "mask", "apply" or "fill". Measured on an H200 by CUDA-graph
    replay (``profile_kernels.py --launches``, ``gpu_suite.py``; V = 128,256,
    JSON-shaped batches: 1-3 rows and up to 260 extra ids per entry):

    * "mask": one warp per 32-word tile (1,024 tokens), an entry's first 4 row
      ids and first 256 extra ids loaded once, so a tile waits on one row load.
      In bf16/fp16 the "packed" store: B = 128 in 19.5 µs and B = 1,024 in 136
      µs (1.25x and 1.08x the read + write floor; 1.14x and 1.09x a device copy
      of the same logits), against 26 and 192 µs before the ids were loaded
      once; masked stores are 2-2.5x slower there. In fp32 the masked store
      with 64 ids per chunk (35.5 and 265 µs, 1.1x the floor); "packed" is
      3.8x slower there (4 logits per pack), "select" ties.
    * "apply" (a bitmask already on the device): the same tile with the
      "packed" store in bf16/fp16 (19 µs at B = 128; masked stores stall on the
      bitmask load: ncu showed 0.25 eligible warps per scheduler); in fp32
      masked stores on a persistent grid of 4 programs per SM (36 µs at B = 128).
    * "fill": four 32-word tiles per program, the id lists loaded once for all
      four: 39 µs at B = 1,024 against 80 with one tile per program.
    """
    if kind not in ("mask", "apply", "fill"):
        raise ValueError(f"kind must be 'mask', 'apply' or 'fill', got {kind!r}")
    if kind == "apply":
        return _APPLY_LAUNCH_16 if elem_size <= 2 else _APPLY_LAUNCH_32
    if kind == "mask":
        return _MASK_LAUNCH_16 if elem_size <= 2 else _MASK_LAUNCH_32
    return _FILL_LAUNCH


_MASK_LAUNCH_16 = LaunchConfig(32, 1, store="packed", extra_chunk=256, row_chunk=4)
_MASK_LAUNCH_32 = LaunchConfig(32, 1, extra_chunk=64)
_FILL_LAUNCH = LaunchConfig(32, 1, blocks_per_program=4, extra_chunk=256, row_chunk=4)
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
def _load_ids(ids_ptr, start, end, limit, CHUNK: tl.constexpr):
    """int32 [CHUNK]: ids_ptr[start:start + CHUNK] where below ``end``; -1 past it and for ids outside [0, limit)."""
    lane = tl.arange(0, CHUNK)
    ids = tl.load(ids_ptr + start + lane, mask=start + lane < end, other=-1).to(tl.int64)
    return tl.where((ids >= 0) & (ids < limit), ids, -1).to(tl.int32)


@triton.jit
def _or_rows(acc, rows_ptr, W, row_ids, words):
    """``acc`` OR the rows ``row_ids`` (int32, -1 = none) over ``words``: their loads are in flight together."""
    limit = tl.where(row_ids >= 0, W, 0)  # an unknown row id reads nothing
    block = tl.load(rows_ptr + tl.maximum(row_ids, 0).to(tl.int64)[:, None] * W + words[None, :],
                    mask=words[None, :] < limit[:, None], other=0)
    return acc | tl.reduce(block, 0, _bit_or)


@triton.jit
def _or_ids(acc, ids, words, w0, BLOCK_WORDS: tl.constexpr):
    """``acc`` OR the bits of the token ids ``ids`` (int32, -1 = none) that fall in words [w0, w0 + BLOCK_WORDS).

    A tile holds few of its entry's extra ids (a JSON state has ~135 over 4,008
    words): count them, then set one per step, smallest first, so a tile with no
    id costs one compare per id and a hit costs one reduction, whatever the order.
    """
    word = ids >> 5  # -1 for none
    in_tile = (word >= w0) & (word < w0 + BLOCK_WORDS)
    hits = tl.sum(in_tile.to(tl.int32), 0)
    last = hits * 0 - 1
    for _ in range(hits):
        m = tl.min(tl.where(in_tile & (ids > last), ids, 0x7FFFFFFF), 0)  # a repeated id leaves m at the sentinel
        acc |= tl.where((words == (m >> 5)) & (m != 0x7FFFFFFF), 1 << (m & 31), 0)
        last = m
    return acc


@triton.jit
def _entry_lists(b, row_ptr_ptr, row_idx_ptr, nnz, R, extra_ptr_ptr, extra_ids_ptr, n_extra, vocab_size,
                 ROW_CHUNK: tl.constexpr, EXTRA_CHUNK: tl.constexpr):
    """Entry b's row-id slice [r0, r1) and extra-id slice [e0, e1), each with its first chunk
    (:func:`_load_ids`): what every tile step of a program reads."""
    r0, r1 = _slice(row_ptr_ptr, b, nnz)
    e0, e1 = _slice(extra_ptr_ptr, b, n_extra)
    return (r0, r1, _load_ids(row_idx_ptr, r0, r1, R, ROW_CHUNK),
            e0, e1, _load_ids(extra_ids_ptr, e0, e1, vocab_size, EXTRA_CHUNK))


@triton.jit
def _entry_words(
    rows_ptr, R, W, row_idx_ptr, r0, r1, first_rows, extra_ids_ptr, e0, e1, first_ids, w0, vocab_size,
    BLOCK_WORDS: tl.constexpr, EXTRA_CHUNK: tl.constexpr, ROW_CHUNK: tl.constexpr,
):
    """int32 [BLOCK_WORDS]: OR over words [w0, w0 + BLOCK_WORDS) of rows row_idx[r0:r1] and ids extra_ids[e0:e1],
    bits at or past ``vocab_size`` cleared.

    ``first_rows`` and ``first_ids`` are the first chunks of both lists
    (:func:`_load_ids`), loaded once per program: a typical entry (1-3 rows, up
    to a few hundred extra ids) waits on one row load per tile step; longer
    lists load their further chunks here.
    """
    words = w0 + tl.arange(0, BLOCK_WORDS)
    acc = _or_rows(tl.zeros([BLOCK_WORDS], dtype=tl.int32), rows_ptr, W, first_rows, words)
    for i in range(r0 + ROW_CHUNK, r1, ROW_CHUNK):
        acc = _or_rows(acc, rows_ptr, W, _load_ids(row_idx_ptr, i, r1, R, ROW_CHUNK), words)
    acc = _or_ids(acc, first_ids, words, w0, BLOCK_WORDS)
    for j in range(e0 + EXTRA_CHUNK, e1, EXTRA_CHUNK):
        acc = _or_ids(acc, _load_ids(extra_ids_ptr, j, e1, vocab_size, EXTRA_CHUNK), words, w0, BLOCK_WORDS)
    return _clip_to_vocab(acc, words, vocab_size, BLOCK_WORDS)


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
            r0, r1, first_rows, e0, e1, first_ids = _entry_lists(
                b, row_ptr_ptr, row_idx_ptr, nnz, R, extra_ptr_ptr, extra_ids_ptr, n_extra, vocab_size,
                ROW_CHUNK, EXTRA_CHUNK)
            row_base = logits_ptr + target * logits_stride
            first = (tile - b * tiles_per_entry) * BLOCKS_PER_PROGRAM
            for step in tl.static_range(BLOCKS_PER_PROGRAM):
                w0 = (first + step) * BLOCK_WORDS
                words = w0 + tl.arange(0, BLOCK_WORDS)
                acc = _entry_words(rows_ptr, R, W, row_idx_ptr, r0, r1, first_rows, extra_ids_ptr, e0, e1,
                                   first_ids, w0, vocab_size, BLOCK_WORDS, EXTRA_CHUNK, ROW_CHUNK)
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
            r0, r1, first_rows, e0, e1, first_ids = _entry_lists(
                b, row_ptr_ptr, row_idx_ptr, nnz, R, extra_ptr_ptr, extra_ids_ptr, n_extra, vocab_size,
                ROW_CHUNK, EXTRA_CHUNK)
            first = (tile - b * tiles_per_entry) * BLOCKS_PER_PROGRAM
            for step in tl.static_range(BLOCKS_PER_PROGRAM):
                w0 = (first + step) * BLOCK_WORDS
                words = w0 + tl.arange(0, BLOCK_WORDS)
                acc = _entry_words(rows_ptr, R, W, row_idx_ptr, r0, r1, first_rows, extra_ids_ptr, e0, e1,
                                   first_ids, w0, vocab_size, BLOCK_WORDS, EXTRA_CHUNK, ROW_CHUNK)
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
