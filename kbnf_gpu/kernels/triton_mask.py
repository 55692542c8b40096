"""Triton kernels: OR CSR row sets of a resident bitset table, mask logits / fill bitmasks.

Same semantics as :mod:`kbnf_gpu.kernels.torch_ref` (see its module doc).
Import this module only after ``TRITON_INTERPRET`` has its final value: the
``@triton.jit`` decorators read it when the module is imported.

Grid: ``(n, cdiv(num_words, BLOCK_WORDS))``. Program ``(b, j)`` ORs entry
``b``'s rows over words ``[j*BLOCK_WORDS, (j+1)*BLOCK_WORDS)`` (the rows are a
small hot table, served from L2), ORs in the extra ids falling in that block,
expands the bits and stores ``-inf`` where a token is not allowed. Logits are
never read: allowed logits stay bit-exact and each disallowed one is written
once, which is the memory floor of the operation.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

# Extra token ids examined per loop step (a [EXTRA_CHUNK, BLOCK_WORDS] compare).
EXTRA_CHUNK = 16


@triton.jit
def _bit_or(a, b):
    return a | b


@triton.jit
def _entry_words(
    rows_ptr,
    W,
    row_ptr_ptr,
    row_idx_ptr,
    extra_ptr_ptr,
    extra_ids_ptr,
    b,
    words,
    vocab_size,
    active,
    BLOCK_WORDS: tl.constexpr,
    EXTRA_CHUNK: tl.constexpr,
):
    """int32 [BLOCK_WORDS]: OR of entry b's rows and extra ids over ``words``."""
    acc = tl.zeros([BLOCK_WORDS], dtype=tl.int32)
    in_table = words < W
    r0 = tl.load(row_ptr_ptr + b)
    r1 = tl.load(row_ptr_ptr + b + 1)
    r1 = tl.where(active, r1, r0)
    for i in range(r0, r1):
        r = tl.load(row_idx_ptr + i).to(tl.int64)
        acc |= tl.load(rows_ptr + r * W + words, mask=in_table, other=0)
    e0 = tl.load(extra_ptr_ptr + b)
    e1 = tl.load(extra_ptr_ptr + b + 1)
    e1 = tl.where(active, e1, e0)
    lane = tl.arange(0, EXTRA_CHUNK)
    for j in range(e0, e1, EXTRA_CHUNK):
        ids = tl.load(extra_ids_ptr + j + lane, mask=j + lane < e1, other=-1).to(tl.int32)
        ids = tl.where(ids < vocab_size, ids, -1)
        hit = (ids >> 5)[:, None] == words[None, :]
        bit = tl.full([EXTRA_CHUNK], 1, tl.int32) << (ids & 31)
        acc |= tl.reduce(tl.where(hit, bit[:, None], 0), 0, _bit_or)
    return acc


@triton.jit
def _mask_logits_kernel(
    logits_ptr,
    logits_stride,
    n_cols,
    rows_ptr,
    W,
    row_ptr_ptr,
    row_idx_ptr,
    extra_ptr_ptr,
    extra_ids_ptr,
    indices_ptr,
    skip_ptr,
    vocab_size,
    HAS_INDICES: tl.constexpr,
    HAS_SKIP: tl.constexpr,
    BLOCK_WORDS: tl.constexpr,
    EXTRA_CHUNK: tl.constexpr,
):
    b = tl.program_id(0)
    blk = tl.program_id(1)
    if HAS_SKIP:
        active = tl.load(skip_ptr + b) == 0
    else:
        active = tl.full([], 1, tl.int1)
    if HAS_INDICES:
        target = tl.load(indices_ptr + b).to(tl.int64)
    else:
        target = b.to(tl.int64)
    words = blk * BLOCK_WORDS + tl.arange(0, BLOCK_WORDS)
    acc = _entry_words(
        rows_ptr, W, row_ptr_ptr, row_idx_ptr, extra_ptr_ptr, extra_ids_ptr,
        b, words, vocab_size, active, BLOCK_WORDS, EXTRA_CHUNK,
    )
    lanes = tl.arange(0, 32)
    cols = words[:, None] * 32 + lanes[None, :]
    allowed = ((acc[:, None] >> lanes[None, :]) & 1) != 0
    # A skipped entry stores nothing: its column limit becomes 0.
    banned = (~allowed | (cols >= vocab_size)) & (cols < tl.where(active, n_cols, 0))
    ptrs = logits_ptr + target * logits_stride + cols
    tl.store(ptrs, tl.full([BLOCK_WORDS, 32], float("-inf"), logits_ptr.dtype.element_ty), mask=banned)


@triton.jit
def _fill_bitmask_kernel(
    out_ptr,
    out_stride,
    out_words,
    rows_ptr,
    W,
    row_ptr_ptr,
    row_idx_ptr,
    extra_ptr_ptr,
    extra_ids_ptr,
    indices_ptr,
    skip_ptr,
    vocab_size,
    HAS_INDICES: tl.constexpr,
    HAS_SKIP: tl.constexpr,
    BLOCK_WORDS: tl.constexpr,
    EXTRA_CHUNK: tl.constexpr,
):
    b = tl.program_id(0)
    blk = tl.program_id(1)
    if HAS_SKIP:
        active = tl.load(skip_ptr + b) == 0
    else:
        active = tl.full([], 1, tl.int1)
    if HAS_INDICES:
        target = tl.load(indices_ptr + b).to(tl.int64)
    else:
        target = b.to(tl.int64)
    words = blk * BLOCK_WORDS + tl.arange(0, BLOCK_WORDS)
    acc = _entry_words(
        rows_ptr, W, row_ptr_ptr, row_idx_ptr, extra_ptr_ptr, extra_ids_ptr,
        b, words, vocab_size, active, BLOCK_WORDS, EXTRA_CHUNK,
    )
    nbits = tl.minimum(tl.maximum(vocab_size - words * 32, 0), 32)
    keep = tl.where(nbits >= 32, -1, (tl.full([BLOCK_WORDS], 1, tl.int32) << tl.minimum(nbits, 31)) - 1)
    tl.store(out_ptr + target * out_stride + words, acc & keep, mask=words < tl.where(active, out_words, 0))


@triton.jit
def _apply_bitmask_kernel(
    logits_ptr,
    logits_stride,
    n_cols,
    bitmask_ptr,
    bitmask_stride,
    bitmask_words,
    indices_ptr,
    vocab_size,
    HAS_INDICES: tl.constexpr,
    BLOCK_WORDS: tl.constexpr,
):
    b = tl.program_id(0)
    blk = tl.program_id(1)
    if HAS_INDICES:
        target = tl.load(indices_ptr + b).to(tl.int64)
    else:
        target = b.to(tl.int64)
    words = blk * BLOCK_WORDS + tl.arange(0, BLOCK_WORDS)
    acc = tl.load(bitmask_ptr + target * bitmask_stride + words, mask=words < bitmask_words, other=0)
    lanes = tl.arange(0, 32)
    cols = words[:, None] * 32 + lanes[None, :]
    allowed = ((acc[:, None] >> lanes[None, :]) & 1) != 0
    banned = (~allowed | (cols >= vocab_size)) & (cols < n_cols)
    ptrs = logits_ptr + target * logits_stride + cols
    tl.store(ptrs, tl.full([BLOCK_WORDS, 32], float("-inf"), logits_ptr.dtype.element_ty), mask=banned)


def _launch_config(n: int, num_words: int) -> tuple[int, int]:
    """(BLOCK_WORDS, num_warps): enough programs to fill an H100 (132 SMs), big blocks otherwise.

    A program covers BLOCK_WORDS*32 tokens with num_warps*32 threads, 16
    tokens per thread; each warp-wide store writes 32 consecutive logits.
    """
    for bw in (128, 64):
        if n * triton.cdiv(num_words, bw) >= 4 * 132:
            return bw, bw // 16
    return 32, 2


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
) -> None:
    """Launch the logits-masking kernel (arguments already validated)."""
    n = row_ptr.numel() - 1
    num_words = triton.cdiv(logits.shape[1], 32)
    if n == 0 or num_words == 0:
        return
    bw, warps = _launch_config(n, num_words)
    grid = (n, triton.cdiv(num_words, bw))
    _mask_logits_kernel[grid](
        logits, logits.stride(0), logits.shape[1],
        rows, rows.shape[1], row_ptr, row_idx, extra_ptr, extra_ids,
        indices if indices is not None else row_ptr,
        skip if skip is not None else row_ptr,
        vocab_size,
        HAS_INDICES=indices is not None,
        HAS_SKIP=skip is not None,
        BLOCK_WORDS=bw,
        EXTRA_CHUNK=EXTRA_CHUNK,
        num_warps=warps,
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
) -> None:
    """Launch the bitmask-filling kernel (arguments already validated)."""
    n = row_ptr.numel() - 1
    num_words = bitmask_out.shape[1]
    if n == 0 or num_words == 0:
        return
    bw, warps = _launch_config(n, num_words)
    grid = (n, triton.cdiv(num_words, bw))
    _fill_bitmask_kernel[grid](
        bitmask_out, bitmask_out.stride(0), num_words,
        rows, rows.shape[1], row_ptr, row_idx, extra_ptr, extra_ids,
        indices if indices is not None else row_ptr,
        skip if skip is not None else row_ptr,
        vocab_size,
        HAS_INDICES=indices is not None,
        HAS_SKIP=skip is not None,
        BLOCK_WORDS=bw,
        EXTRA_CHUNK=EXTRA_CHUNK,
        num_warps=max(1, warps // 2),
    )


def apply_bitmask(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    indices: torch.Tensor | None,
    vocab_size: int,
) -> None:
    """Launch the bitmask-application kernel (arguments already validated)."""
    n = indices.numel() if indices is not None else logits.shape[0]
    num_words = triton.cdiv(logits.shape[1], 32)
    if n == 0 or num_words == 0:
        return
    bw, warps = _launch_config(n, num_words)
    grid = (n, triton.cdiv(num_words, bw))
    _apply_bitmask_kernel[grid](
        logits, logits.stride(0), logits.shape[1],
        bitmask, bitmask.stride(0), bitmask.shape[1],
        indices if indices is not None else bitmask,
        vocab_size,
        HAS_INDICES=indices is not None,
        BLOCK_WORDS=bw,
        num_warps=warps,
    )
