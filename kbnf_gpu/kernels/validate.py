"""Kernel inputs checked before any launch: a clear ``KernelInputError``, never a silent no-op or a stray write.

Metadata (dtype, shape, device, stride, widths) is always checked; it costs nothing.
Values are checked by :func:`check_values`, vectorized:

* ``row_ptr`` / ``extra_ptr`` start at ``>= 0``, never decrease and end within ``row_idx`` / ``extra_ids``;
* every row id in use lies in ``[0, R)`` (rows of the table), every extra id in use in ``[0, vocab_size)``;
* the ``indices`` of active (not skipped) entries lie in ``[0, num_targets)`` and are distinct where each
  entry brings its own mask (two masks for one row would race: whichever write lands last would win).

On CPU tensors that is a handful of small torch ops and no synchronization. On device tensors it costs ONE
device-to-host transfer (all flags at once): a serving loop must not pay it every step, and CUDA graph
capture forbids it. There the host arrays are checked where they are built, with this same function on CPU
tensors (:meth:`StaticCsr.stage <kbnf_gpu.kernels.static_csr.StaticCsr.stage>` does), and the launch runs
with ``validate=False``. Unvalidated, the kernels stay memory-safe (every load and store is bounded;
out-of-range ids, targets and pointers are ignored), but the mask is then whatever those values make it.
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from ..errors import KernelInputError

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
SKIP_DTYPES = (torch.bool, torch.int8, torch.uint8, torch.int32, torch.int64)

# A value check: (flag tensor that is True when violated, message builder run only then).
Pending = tuple[torch.Tensor, Callable[[], str]]


# ---------------------------------------------------------------- metadata


def int_vector(name: str, t, device: torch.device, numel: int | None = None) -> torch.Tensor:
    """``t`` as a contiguous 1-D int32/int64 tensor on ``device`` (lists become int32 tensors)."""
    if not isinstance(t, torch.Tensor):
        try:
            t = torch.as_tensor(t, dtype=torch.int32, device=device)
        except (TypeError, ValueError, RuntimeError, OverflowError) as e:
            raise KernelInputError(f"{name} must be a 1-D int32/int64 tensor, got {type(t).__name__}: {e}") from None
    if t.dtype not in (torch.int32, torch.int64):
        raise KernelInputError(f"{name} must be int32 or int64, got {t.dtype}")
    if t.dim() != 1:
        raise KernelInputError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    if numel is not None and t.numel() != numel:
        raise KernelInputError(f"{name} must have {numel} entries, got {t.numel()}")
    if t.device != device:
        raise KernelInputError(f"{name} is on {t.device}, expected {device}")
    return t.contiguous()


def skip_vector(skip: torch.Tensor | None, device: torch.device, n: int) -> torch.Tensor | None:
    """``skip`` as a contiguous 1-D integer tensor (bool viewed as int8); nonzero = leave the row alone."""
    if skip is None:
        return None
    if not isinstance(skip, torch.Tensor) or skip.dtype not in SKIP_DTYPES:
        what = skip.dtype if isinstance(skip, torch.Tensor) else type(skip).__name__
        raise KernelInputError(f"skip must be a bool or integer tensor, got {what}")
    if skip.dim() != 1 or skip.numel() != n:
        raise KernelInputError(f"skip must be 1-D with {n} entries, got shape {tuple(skip.shape)}")
    if skip.device != device:
        raise KernelInputError(f"skip is on {skip.device}, expected {device}")
    skip = skip.contiguous()
    return skip.view(torch.int8) if skip.dtype == torch.bool else skip


def table(rows: torch.Tensor, device: torch.device) -> torch.Tensor:
    """The bitset table as a contiguous int32 ``[R, W]`` tensor on ``device`` (uint32 is viewed as int32)."""
    if not isinstance(rows, torch.Tensor) or rows.dim() != 2:
        shape = tuple(rows.shape) if isinstance(rows, torch.Tensor) else type(rows).__name__
        raise KernelInputError(f"rows must be a 2-D [R, W] tensor, got {shape}")
    if rows.dtype == torch.uint32:
        rows = rows.view(torch.int32)
    if rows.dtype != torch.int32:
        raise KernelInputError(f"rows must be int32 (uint32 bit patterns), got {rows.dtype}")
    if rows.device != device:
        raise KernelInputError(f"rows is on {rows.device}, expected {device}")
    return rows.contiguous()


def logits_2d(logits: torch.Tensor, triton: bool) -> torch.Tensor:
    """``logits`` as ``[B, V]`` (a 1-D tensor is one row); Triton needs fp32/bf16/fp16 with unit column stride."""
    if not isinstance(logits, torch.Tensor):
        raise KernelInputError(f"logits must be a tensor, got {type(logits).__name__}")
    if logits.dim() == 1:
        logits = logits.view(1, -1)
    if logits.dim() != 2:
        raise KernelInputError(f"logits must be [B, V], got shape {tuple(logits.shape)}")
    if triton:
        if logits.dtype not in FLOAT_DTYPES:
            raise KernelInputError(f"logits must be float32, bfloat16 or float16, got {logits.dtype}")
        if logits.shape[1] > 1 and logits.stride(1) != 1:
            raise KernelInputError("logits must be contiguous along the vocabulary dimension")
    elif not logits.is_floating_point():
        raise KernelInputError(f"logits must be a floating tensor, got {logits.dtype}")
    return logits


def bitmask_2d(name: str, bitmask: torch.Tensor, device: torch.device | None = None) -> torch.Tensor:
    """A packed ``int32 [B, W]`` bitmask (on ``device`` if given), unit stride along W (1-D: one row)."""
    if not isinstance(bitmask, torch.Tensor):
        raise KernelInputError(f"{name} must be an int32 tensor, got {type(bitmask).__name__}")
    if bitmask.dtype != torch.int32:
        raise KernelInputError(
            f"{name} must be int32 (32 tokens per word, xgrammar's layout), got {bitmask.dtype}"
        )
    if bitmask.dim() == 1:
        bitmask = bitmask.view(1, -1)
    if bitmask.dim() != 2:
        raise KernelInputError(f"{name} must be [B, W], got shape {tuple(bitmask.shape)}")
    if device is not None and bitmask.device != device:
        raise KernelInputError(f"{name} is on {bitmask.device}, expected {device}")
    if bitmask.shape[1] > 1 and bitmask.stride(1) != 1:
        raise KernelInputError(f"{name} must be contiguous along its last dimension")
    return bitmask


def vocab_width(vocab_size: int | None, words: int, source: str, target_cols: int, target: str) -> int:
    """The vocabulary size: ``vocab_size``, or the ``source``'s width in tokens; ``target`` must cover it.

    Columns of ``target`` at or past the vocabulary are disallowed, so a target narrower than the
    vocabulary would silently lose part of the mask: that is an error instead.
    """
    if vocab_size is None:
        vocab_size = words * 32
    elif isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise KernelInputError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if not 0 <= vocab_size <= words * 32:
        raise KernelInputError(
            f"vocab_size={vocab_size} does not fit the {source} ({words} words = {words * 32} tokens)"
        )
    if target_cols < vocab_size:
        raise KernelInputError(
            f"{target} covers {target_cols} tokens, fewer than vocab_size={vocab_size}: part of the mask would be "
            f"lost (pass the real vocab_size if the {source} is padded)"
        )
    return int(vocab_size)


def csr_tensors(row_ptr, row_idx, extra_ptr, extra_ids, indices, skip, device: torch.device, num_targets: int,
                target: str):
    """The CSR arguments as tensors on ``device`` with their metadata checked (values: :func:`check_values`)."""
    row_ptr = int_vector("row_ptr", row_ptr, device)
    n = row_ptr.numel() - 1
    if n < 0:
        raise KernelInputError("row_ptr must have n + 1 >= 1 entries")
    extra_ptr = int_vector("extra_ptr", extra_ptr, device, n + 1)
    row_idx = int_vector("row_idx", row_idx, device)
    extra_ids = int_vector("extra_ids", extra_ids, device)
    if indices is not None:
        indices = int_vector("indices", indices, device, n)
    elif n > num_targets:
        raise KernelInputError(f"{n} batch entries but only {num_targets} rows of {target} (pass indices)")
    return row_ptr, row_idx, extra_ptr, extra_ids, indices, skip_vector(skip, device, n)


def no_capture_sync(device: torch.device) -> None:
    """Refuse value checks of device tensors inside CUDA graph capture (they need a device sync)."""
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise KernelInputError(
            "validate=True reads device tensors back to the host, which CUDA graph capture forbids: check the "
            "host arrays where they are built (StaticCsr.stage) and launch with validate=False"
        )


# ------------------------------------------------------------------ values


def _first(flags: torch.Tensor) -> int:
    return int(flags.nonzero()[0, 0])


def _slice_checks(
    ptr_name: str,
    ptr: torch.Tensor,
    ids_name: str,
    ids: torch.Tensor,
    hi: int,
    hi_what: str,
) -> list[Pending]:
    """``ptr`` a valid CSR pointer array over ``ids``; every id in ``ptr``'s span within ``[0, hi)``."""
    p = ptr.long()
    v = ids.long()
    steps = p[1:] < p[:-1]
    first_bad = p[:1] < 0
    last_bad = p[-1:] > v.numel()
    pos = torch.arange(v.numel(), device=v.device)
    in_span = (pos >= p[:1]) & (pos < p[-1:])
    out_of_range = in_span & ((v < 0) | (v >= hi))

    def steps_msg() -> str:
        i = _first(steps)
        return f"{ptr_name} must not decrease: {ptr_name}[{i}] = {int(p[i])} > {ptr_name}[{i + 1}] = {int(p[i + 1])}"

    def range_msg() -> str:
        i = _first(out_of_range)
        entry = int(torch.searchsorted(p, torch.tensor(i, device=p.device), right=True)) - 1
        return f"{ids_name}[{i}] = {int(v[i])} (batch entry {entry}) is outside [0, {hi}) ({hi_what})"

    return [
        (first_bad.any(), lambda: f"{ptr_name}[0] = {int(p[0])} is negative"),
        (last_bad.any(), lambda: f"{ptr_name}[-1] = {int(p[-1])} exceeds the {v.numel()} entries of {ids_name}"),
        (steps.any(), steps_msg),
        (out_of_range.any(), range_msg),
    ]


def target_checks(
    indices: torch.Tensor | None,
    skip: torch.Tensor | None,
    num_targets: int,
    target: str,
    *,
    distinct: bool,
) -> list[Pending]:
    """Active entries' ``indices`` in ``[0, num_targets)`` (rows of ``target``), distinct if ``distinct``."""
    if indices is None:
        return []
    idx = indices.long()
    n = idx.numel()
    active = torch.ones(n, dtype=torch.bool, device=idx.device) if skip is None else skip == 0
    out_of_range = active & ((idx < 0) | (idx >= num_targets))
    out = [(out_of_range.any(), lambda: (
        f"indices[{_first(out_of_range)}] = {int(idx[_first(out_of_range)])} is outside [0, {num_targets}) "
        f"(rows of {target})"
    ))]
    if distinct and n > 1:
        # Skipped entries get distinct negative keys, so only active entries can collide.
        key = torch.where(active, idx, -1 - torch.arange(n, device=idx.device))
        ordered, order = torch.sort(key)
        same = ordered[1:] == ordered[:-1]

        def dup_msg() -> str:
            k = _first(same)
            a, b = sorted((int(order[k]), int(order[k + 1])))
            return (f"indices[{a}] and indices[{b}] are both {int(idx[a])}: each active batch entry needs its own "
                    f"row of {target}")

        out.append((same.any(), dup_msg))
    return out


def check_indices(indices, num_targets: int, target: str = "logits") -> None:
    """Host-side check of a batch's target rows (a sequence or tensor): in ``[0, num_targets)`` and distinct.

    For callers that hold the indices on the host anyway (``mask_batch``): the launch then needs no check.
    """
    if isinstance(indices, torch.Tensor):
        idx = indices.detach().cpu()
    else:
        try:
            idx = torch.as_tensor(list(indices), dtype=torch.int64)
        except (TypeError, ValueError, RuntimeError, OverflowError) as e:
            raise KernelInputError(f"indices must be integers, got {type(indices).__name__}: {e}") from None
    idx = int_vector("indices", idx, torch.device("cpu"))
    raise_first(target_checks(idx, None, num_targets, target, distinct=True))


def raise_first(pending: Sequence[Pending]) -> None:
    """Raise ``KernelInputError`` for the first violated check; all flags cross to the host in one transfer."""
    if not pending:
        return
    flags = torch.stack([flag.reshape(()) for flag, _ in pending]).tolist()
    for bad, (_, message) in zip(flags, pending):
        if bad:
            raise KernelInputError(message())


def check_values(
    row_ptr: torch.Tensor,
    row_idx: torch.Tensor,
    extra_ptr: torch.Tensor,
    extra_ids: torch.Tensor,
    indices: torch.Tensor | None,
    skip: torch.Tensor | None,
    *,
    num_rows: int,
    vocab_size: int,
    num_targets: int,
    target: str = "logits",
) -> None:
    """Check a batch's CSR values (see the module doc); ``KernelInputError`` names the first bad entry."""
    raise_first(
        _slice_checks("row_ptr", row_ptr, "row_idx", row_idx, num_rows, "rows of the table")
        + _slice_checks("extra_ptr", extra_ptr, "extra_ids", extra_ids, vocab_size, "vocab_size")
        + target_checks(indices, skip, num_targets, target, distinct=True)
    )
