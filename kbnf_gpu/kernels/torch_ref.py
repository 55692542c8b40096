"""Torch reference implementation of the mask kernels.

It is the CPU fallback when no GPU is present and the oracle the Triton
kernels are tested against. Semantics (shared with ``triton_mask``):

* ``rows`` is an int32 ``[R, W]`` bitset table: bit ``t % 32`` of word
  ``t // 32`` set means token ``t`` is allowed (uint32 bit patterns stored in
  int32).
* Batch entry ``b`` (``0 <= b < n``) allows the OR of the rows
  ``row_idx[row_ptr[b]:row_ptr[b+1]]`` plus the token ids
  ``extra_ids[extra_ptr[b]:extra_ptr[b+1]]``. Token ids outside
  ``[0, vocab_size)`` are ignored; bits at or beyond ``vocab_size`` never
  count as allowed.
* Entry ``b`` targets row ``indices[b]`` of ``logits`` / the bitmask (row
  ``b`` when ``indices`` is None). Indices must be distinct.
* ``skip[b]`` non-zero: entry ``b`` leaves its target row untouched.

Out-of-range values (which :mod:`.validate` rejects unless the caller opts
out) are ignored exactly as the Triton kernels ignore them, so both agree
bit for bit on any input: a target row outside the tensor masks nothing, a
row id outside ``[0, R)`` adds no row, and CSR pointers are clamped to
``[0, len)`` (a decreasing slice is empty).
"""
from __future__ import annotations

import sys

import torch

# Logits elements masked per chunk: bounds the fallback's temporaries (a few
# MB) whatever the batch size and keeps them cache-friendly.
_EXPAND_ELEMS = 1 << 21


def _as_long(t: torch.Tensor | None, device: torch.device) -> torch.Tensor | None:
    if t is None:
        return None
    return t.to(device=device, dtype=torch.int64)


def _to_int32_bits(x: torch.Tensor) -> torch.Tensor:
    """int64 holding uint32 bit patterns -> int32 with the same bits."""
    x = x & 0xFFFFFFFF
    return torch.where(x >= (1 << 31), x - (1 << 32), x).to(torch.int32)


def _valid_bits_mask(num_words: int, vocab_size: int, device: torch.device) -> torch.Tensor:
    """int32 [num_words]: bits of tokens < vocab_size."""
    nb = (vocab_size - torch.arange(num_words, device=device, dtype=torch.int64) * 32).clamp(0, 32)
    return _to_int32_bits((torch.ones_like(nb) << nb) - 1)


def _slices(ptr: torch.Tensor, entries: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(start, count) of each entry's CSR slice, clamped to ``[0, length)`` as the kernels clamp it."""
    start = ptr[entries].clamp(0, length)
    end = ptr[entries + 1].clamp(0, length)
    return start, (end - start).clamp(min=0)


def or_rows(
    rows: torch.Tensor,
    row_ptr: torch.Tensor,
    row_idx: torch.Tensor,
    extra_ptr: torch.Tensor,
    extra_ids: torch.Tensor,
    num_words: int,
    vocab_size: int,
    entries: torch.Tensor | None = None,
) -> torch.Tensor:
    """int32 ``[m, num_words]``: the allowed-token bitset of each batch entry.

    ``entries`` (int64) selects which batch entries to compute (all ``n`` when
    None). Words beyond the table width are zero; bits >= ``vocab_size`` are
    cleared.
    """
    device = rows.device
    row_ptr = _as_long(row_ptr, device)
    extra_ptr = _as_long(extra_ptr, device)
    row_idx = _as_long(row_idx, device)
    extra_ids = _as_long(extra_ids, device)
    n = row_ptr.numel() - 1
    if entries is None:
        entries = torch.arange(n, device=device, dtype=torch.int64)
    m = entries.numel()
    R, W = rows.shape
    wc = min(W, num_words)
    acc = torch.zeros((m, num_words), dtype=torch.int32, device=device)
    if m == 0:
        return acc

    # Rows: the k-th round ORs the k-th row of every entry that has one.
    start, count = _slices(row_ptr, entries, row_idx.numel())
    kmax = int(count.max()) if m else 0
    table = rows[:, :wc]
    for k in range(kmax):
        active = (count > k).nonzero(as_tuple=True)[0]
        rid = row_idx[start[active] + k]
        in_table = (rid >= 0) & (rid < R)
        acc[active[in_table], :wc] |= table[rid[in_table]]

    # Extras: deduplicated (entry, token) bits summed per (entry, word) == ORed.
    e_start, e_count = _slices(extra_ptr, entries, extra_ids.numel())
    total = int(e_count.sum())
    cap = min(vocab_size, num_words * 32)
    if total and cap > 0:
        owner = torch.repeat_interleave(torch.arange(m, device=device), e_count)
        pos = torch.arange(total, device=device) - torch.repeat_interleave(
            torch.cumsum(e_count, 0) - e_count, e_count
        )
        ids = extra_ids[torch.repeat_interleave(e_start, e_count) + pos]
        keep = (ids >= 0) & (ids < cap)
        key = torch.unique(owner[keep] * cap + ids[keep])
        owner, ids = key // cap, key % cap
        flat = owner * num_words + (ids >> 5)
        slots, inverse = torch.unique(flat, return_inverse=True)
        word_bits = torch.zeros(slots.numel(), dtype=torch.int64, device=device)
        word_bits.index_add_(0, inverse, torch.ones_like(ids) << (ids & 31))
        acc.view(-1)[slots] |= _to_int32_bits(word_bits)

    full = min(vocab_size // 32, num_words)  # words entirely below vocab_size
    if full < num_words:
        acc[:, full:] &= _valid_bits_mask(num_words, vocab_size, device)[full:]
    return acc


_LUTS: dict[tuple, torch.Tensor] = {}
_INT_OF_SIZE = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _byte_lut(device: torch.device, dtype: torch.dtype, on: int | bool, off: int | bool) -> torch.Tensor:
    """[256, 8] of ``dtype``: ``on`` where bit j of byte value v is set, else ``off``."""
    key = (device, dtype, on, off)
    lut = _LUTS.get(key)
    if lut is None:
        v = torch.arange(256, dtype=torch.int32)
        bit = ((v[:, None] >> torch.arange(8, dtype=torch.int32)) & 1).bool()
        lut = torch.where(bit, torch.tensor(on, dtype=dtype), torch.tensor(off, dtype=dtype)).to(device)
        _LUTS[key] = lut
    return lut


def _byte_index(words: torch.Tensor) -> torch.Tensor:
    """Flat index of every byte of ``words`` (little-endian: byte k of word w holds tokens 32w+8k..)."""
    return words.contiguous().view(torch.uint8).reshape(-1).int()


def _expand(words: torch.Tensor, num_cols: int, lut: torch.Tensor, pad, index: torch.Tensor | None = None) -> torch.Tensor:
    """``[m, num_cols]``: per token, ``lut[byte, bit]`` of its bit in ``words``; ``pad`` past ``W*32``."""
    m, W = words.shape
    if sys.byteorder == "little":
        by = _byte_index(words) if index is None else index
        out = lut.index_select(0, by).reshape(m, W * 32)
    else:  # pragma: no cover - big-endian hosts
        shifts = torch.arange(32, dtype=torch.int32, device=words.device)
        bits = ((words.unsqueeze(-1) >> shifts) & 1).reshape(m, W * 32).bool()
        out = torch.where(bits, lut[1, 0], lut[0, 0])
    if num_cols <= W * 32:
        return out[:, :num_cols]
    fill = torch.full((m, num_cols - W * 32), pad, dtype=lut.dtype, device=words.device)
    return torch.cat([out, fill], dim=1)


def unpack_bits(words: torch.Tensor, num_cols: int) -> torch.Tensor:
    """bool ``[m, num_cols]`` from int32 ``[m, W]`` bitsets (columns past ``W*32`` False)."""
    return _expand(words, num_cols, _byte_lut(words.device, torch.bool, True, False), False)


def _mask_block_(block: torch.Tensor, words: torch.Tensor, vocab_size: int) -> None:
    """In place: ``block[i, t] = -inf`` unless bit t of ``words[i]`` is set and ``t < vocab_size``."""
    Vl = block.shape[1]
    it = _INT_OF_SIZE.get(block.element_size())
    if it is None:  # pragma: no cover - exotic float widths
        banned = ~unpack_bits(words, Vl)
        banned[:, vocab_size:] = True
        block.masked_fill_(banned, float("-inf"))
        return
    # Bitwise select on the integer view (several times faster than masked_fill on CPU):
    # allowed -> x & ~0 | 0 == x (bit-exact), banned -> x & 0 | bits(-inf).
    ninf = int(torch.tensor(float("-inf"), dtype=block.dtype).view(it))
    index = _byte_index(words) if sys.byteorder == "little" else None
    keep = _expand(words, Vl, _byte_lut(words.device, it, -1, 0), 0, index)
    ban = _expand(words, Vl, _byte_lut(words.device, it, 0, ninf), ninf, index)
    if Vl > vocab_size:
        keep[:, vocab_size:] = 0
        ban[:, vocab_size:] = ninf
    iv = block.view(it)
    iv.bitwise_and_(keep)
    iv.bitwise_or_(ban)


def _targets_and_entries(
    n: int,
    indices: torch.Tensor | None,
    skip: torch.Tensor | None,
    num_targets: int,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Entries that write, and their target rows: not skipped, target inside ``[0, num_targets)``."""
    entries = torch.arange(n, device=device, dtype=torch.int64)
    targets = entries if indices is None else _as_long(indices, device)
    keep = (targets >= 0) & (targets < num_targets)
    if skip is not None:
        keep &= skip.to(device) == 0
    return entries[keep], targets[keep]


def _mask_rows_(logits: torch.Tensor, targets: torch.Tensor, allowed_words: torch.Tensor, vocab_size: int) -> None:
    """Write -inf to ``logits[targets[i]]`` wherever ``allowed_words[i]`` has no bit."""
    Vl = logits.shape[1]
    m = targets.numel()
    # Contiguous targets (the common "no indices" case) are masked through views.
    contiguous = m > 0 and bool(
        (targets == torch.arange(m, device=targets.device) + targets[0]).all()
    )
    first = int(targets[0]) if contiguous else 0
    step = max(1, _EXPAND_ELEMS // max(1, Vl))
    for s in range(0, m, step):
        words = allowed_words[s : s + step]
        if contiguous:
            _mask_block_(logits[first + s : first + s + words.shape[0]], words, vocab_size)
        else:
            tg = targets[s : s + step]
            sub = logits.index_select(0, tg)
            _mask_block_(sub, words, vocab_size)
            logits.index_copy_(0, tg, sub)


def apply_token_masks(
    logits: torch.Tensor,
    rows: torch.Tensor,
    row_ptr: torch.Tensor,
    row_idx: torch.Tensor,
    extra_ptr: torch.Tensor,
    extra_ids: torch.Tensor,
    *,
    indices: torch.Tensor | None = None,
    skip: torch.Tensor | None = None,
    vocab_size: int,
) -> None:
    """Mask ``logits`` [B_total, V_logits] in place from the CSR row sets (see module doc)."""
    n = row_ptr.numel() - 1
    entries, targets = _targets_and_entries(n, indices, skip, logits.shape[0], logits.device)
    if entries.numel() == 0:
        return
    num_words = -(-logits.shape[1] // 32)
    allowed = or_rows(rows, row_ptr, row_idx, extra_ptr, extra_ids, num_words, vocab_size, entries)
    _mask_rows_(logits, targets.to(logits.device), allowed.to(logits.device), vocab_size)


def fill_token_bitmask(
    bitmask_out: torch.Tensor,
    rows: torch.Tensor,
    row_ptr: torch.Tensor,
    row_idx: torch.Tensor,
    extra_ptr: torch.Tensor,
    extra_ids: torch.Tensor,
    *,
    indices: torch.Tensor | None = None,
    skip: torch.Tensor | None = None,
    vocab_size: int,
) -> None:
    """Write each entry's packed allowed set into ``bitmask_out`` [B_total, W_out]."""
    n = row_ptr.numel() - 1
    entries, targets = _targets_and_entries(n, indices, skip, bitmask_out.shape[0], bitmask_out.device)
    if entries.numel() == 0:
        return
    words = or_rows(rows, row_ptr, row_idx, extra_ptr, extra_ids, bitmask_out.shape[1], vocab_size, entries)
    bitmask_out.index_copy_(0, targets, words.to(bitmask_out.device))


def apply_bitmask_inplace(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    *,
    indices: torch.Tensor | None = None,
    vocab_size: int,
) -> None:
    """``logits[i, t] = -inf`` where bit t of ``bitmask[i]`` is 0 or ``t >= vocab_size``.

    With ``indices`` only rows ``indices[k]`` (of both tensors) are touched.
    """
    device = logits.device
    num_targets = min(logits.shape[0], bitmask.shape[0])
    if indices is None:
        targets = torch.arange(num_targets, device=device)
    else:
        targets = _as_long(indices, device)
        targets = targets[(targets >= 0) & (targets < num_targets)]
    if targets.numel() == 0:
        return
    words = bitmask.index_select(0, targets.to(bitmask.device)).to(device)
    _mask_rows_(logits, targets, words, vocab_size)
