"""Batched token-mask kernels: one launch masks a whole batch of logits.

Inputs shared by every operation (all int32 unless noted):

* ``rows`` ``[R, W]``: resident bitset table (see :class:`RowPool`); bit
  ``t % 32`` of word ``t // 32`` set = token ``t`` allowed. ``W = ceil(V/32)``.
* CSR per batch entry ``b in [0, n)``: rows ``row_idx[row_ptr[b]:row_ptr[b+1]]``
  are ORed, and token ids ``extra_ids[extra_ptr[b]:extra_ptr[b+1]]`` are also
  allowed (sparse rows, verified DEEP tokens, EOS). ``row_ptr``/``extra_ptr``
  have ``n + 1`` entries. Extra ids outside ``[0, vocab_size)`` are ignored.
* ``indices`` ``[n]`` (optional, distinct): entry ``b`` targets row
  ``indices[b]`` of logits/bitmask; default row ``b``. Rows not targeted are
  untouched.
* ``skip`` ``[n]`` (optional; bool, int8 or int32): **skip convention** —
  ``skip[b] != 0`` leaves entry ``b``'s target row untouched (finished or
  unconstrained sequence); its CSR slice is then ignored (it may be empty).

Backends: ``backend=None`` picks Triton for CUDA tensors and the torch
reference otherwise; ``"triton"`` / ``"torch"`` force one (Triton on CPU
tensors needs ``TRITON_INTERPRET=1`` set before first use).
"""
from __future__ import annotations

from typing import Literal

import torch

from . import torch_ref
from .device_tables import CsrBatch, HostStaging, RowPool, build_csr, pinned_int32

__all__ = [
    "apply_token_masks",
    "fill_token_bitmask",
    "apply_bitmask_inplace",
    "allocate_token_bitmask",
    "RowPool",
    "CsrBatch",
    "HostStaging",
    "build_csr",
    "pinned_int32",
]

Backend = Literal["triton", "torch"]
_FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _triton_module():
    from . import triton_mask

    return triton_mask


def _resolve_backend(backend: str | None, t: torch.Tensor) -> str:
    if backend is None:
        return "triton" if t.is_cuda else "torch"
    if backend not in ("triton", "torch"):
        raise ValueError(f"backend must be 'triton', 'torch' or None, got {backend!r}")
    if backend == "triton" and not t.is_cuda:
        tm = _triton_module()
        if type(tm._mask_logits_kernel).__name__ != "InterpretedFunction":
            raise ValueError(
                "backend='triton' on CPU tensors needs TRITON_INTERPRET=1 set before "
                "kbnf_gpu.kernels.triton_mask is first imported"
            )
    return backend


def _int_vec(name: str, t: torch.Tensor, device: torch.device, numel: int | None = None) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        t = torch.as_tensor(t, dtype=torch.int32)
    if t.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{name} must be int32 or int64, got {t.dtype}")
    if t.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    if numel is not None and t.numel() != numel:
        raise ValueError(f"{name} must have {numel} entries, got {t.numel()}")
    if t.device != device:
        raise ValueError(f"{name} is on {t.device}, expected {device}")
    return t.contiguous()


def _check_rows(rows: torch.Tensor, device: torch.device) -> torch.Tensor:
    if rows.dim() != 2:
        raise ValueError(f"rows must be 2-D [R, W], got shape {tuple(rows.shape)}")
    if rows.dtype == torch.uint32:
        rows = rows.view(torch.int32)
    if rows.dtype != torch.int32:
        raise TypeError(f"rows must be int32 (uint32 bit patterns), got {rows.dtype}")
    if rows.device != device:
        raise ValueError(f"rows is on {rows.device}, expected {device}")
    return rows.contiguous()


def _check_vocab(vocab_size: int | None, W: int) -> int:
    if vocab_size is None:
        return W * 32
    if not 0 <= vocab_size <= W * 32:
        raise ValueError(f"vocab_size={vocab_size} does not fit a table of {W} words ({W * 32} tokens)")
    return int(vocab_size)


def _check_logits(logits: torch.Tensor, backend: str) -> torch.Tensor:
    if logits.dim() == 1:
        logits = logits.view(1, -1)
    if logits.dim() != 2:
        raise ValueError(f"logits must be [B, V], got shape {tuple(logits.shape)}")
    if backend == "triton":
        if logits.dtype not in _FLOAT_DTYPES:
            raise TypeError(f"logits must be float32, bfloat16 or float16, got {logits.dtype}")
        if logits.stride(1) != 1:
            raise ValueError("logits must be contiguous along the vocabulary dimension")
    elif not logits.is_floating_point():
        raise TypeError(f"logits must be a floating tensor, got {logits.dtype}")
    return logits


def _check_csr(
    row_ptr, row_idx, extra_ptr, extra_ids, indices, skip, device: torch.device, n_rows_target: int
):
    row_ptr = _int_vec("row_ptr", row_ptr, device)
    n = row_ptr.numel() - 1
    if n < 0:
        raise ValueError("row_ptr must have n + 1 >= 1 entries")
    extra_ptr = _int_vec("extra_ptr", extra_ptr, device, n + 1)
    row_idx = _int_vec("row_idx", row_idx, device)
    extra_ids = _int_vec("extra_ids", extra_ids, device)
    if indices is not None:
        indices = _int_vec("indices", indices, device, n)
    elif n > n_rows_target:
        raise ValueError(f"{n} batch entries but only {n_rows_target} target rows (pass indices)")
    if skip is not None:
        if skip.dim() != 1 or skip.numel() != n:
            raise ValueError(f"skip must be 1-D with {n} entries, got shape {tuple(skip.shape)}")
        if skip.device != device:
            raise ValueError(f"skip is on {skip.device}, expected {device}")
        if skip.dtype == torch.bool:
            skip = skip.view(torch.int8)
        skip = skip.contiguous()
    return row_ptr, row_idx, extra_ptr, extra_ids, indices, skip


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
    vocab_size: int | None = None,
    backend: Backend | None = None,
) -> None:
    """Write ``-inf`` in place to every logit its batch entry does not allow.

    ``logits`` ``[B_total, V_logits]`` (fp32/bf16/fp16). Allowed logits are left
    bit-exact; columns ``>= vocab_size`` (default ``W*32``) are always
    disallowed. One kernel launch for the whole batch.
    """
    be = _resolve_backend(backend, logits)
    logits = _check_logits(logits, be)
    rows = _check_rows(rows, logits.device)
    V = _check_vocab(vocab_size, rows.shape[1])
    row_ptr, row_idx, extra_ptr, extra_ids, indices, skip = _check_csr(
        row_ptr, row_idx, extra_ptr, extra_ids, indices, skip, logits.device, logits.shape[0]
    )
    if be == "torch":
        torch_ref.apply_token_masks(
            logits, rows, row_ptr, row_idx, extra_ptr, extra_ids, indices=indices, skip=skip, vocab_size=V
        )
    else:
        _triton_module().mask_logits(logits, rows, row_ptr, row_idx, extra_ptr, extra_ids, indices, skip, V)


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
    vocab_size: int | None = None,
    backend: Backend | None = None,
) -> None:
    """Write each entry's allowed set, packed, to ``bitmask_out`` ``[B_total, W_out]`` int32.

    Bits ``>= vocab_size`` are cleared (words past the table width are 0).
    Skipped entries and rows not targeted are left untouched: callers fill
    them with -1 (all allowed) themselves when they mean "unconstrained",
    as xgrammar's bitmask users expect.
    """
    be = _resolve_backend(backend, bitmask_out)
    if bitmask_out.dim() != 2 or bitmask_out.dtype != torch.int32:
        raise ValueError(f"bitmask_out must be int32 [B, W], got {bitmask_out.dtype} {tuple(bitmask_out.shape)}")
    if bitmask_out.stride(1) != 1:
        raise ValueError("bitmask_out must be contiguous along its last dimension")
    rows = _check_rows(rows, bitmask_out.device)
    V = _check_vocab(vocab_size, rows.shape[1])
    row_ptr, row_idx, extra_ptr, extra_ids, indices, skip = _check_csr(
        row_ptr, row_idx, extra_ptr, extra_ids, indices, skip, bitmask_out.device, bitmask_out.shape[0]
    )
    if be == "torch":
        torch_ref.fill_token_bitmask(
            bitmask_out, rows, row_ptr, row_idx, extra_ptr, extra_ids, indices=indices, skip=skip, vocab_size=V
        )
    else:
        _triton_module().fill_bitmask(bitmask_out, rows, row_ptr, row_idx, extra_ptr, extra_ids, indices, skip, V)


def apply_bitmask_inplace(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    indices: torch.Tensor | None = None,
    *,
    vocab_size: int | None = None,
    backend: Backend | None = None,
) -> None:
    """``logits[i, t] = -inf`` where bit ``t`` of ``bitmask[i]`` is 0 (xgrammar's layout).

    Rows ``indices[k]`` of both tensors (every logits row when None). Unlike
    xgrammar, logits columns ``>= vocab_size`` (default ``bitmask.shape[1]*32``)
    are set to -inf too, matching :func:`apply_token_masks`.
    """
    be = _resolve_backend(backend, logits)
    logits = _check_logits(logits, be)
    if bitmask.dim() == 1:
        bitmask = bitmask.view(1, -1)
    if bitmask.dim() != 2 or bitmask.dtype != torch.int32:
        raise ValueError(f"bitmask must be int32 [B, W], got {bitmask.dtype} {tuple(bitmask.shape)}")
    if bitmask.device != logits.device:
        raise ValueError(f"bitmask is on {bitmask.device}, expected {logits.device}")
    bitmask = bitmask.contiguous()
    V = _check_vocab(vocab_size, bitmask.shape[1])
    if indices is not None:
        if not isinstance(indices, torch.Tensor):
            indices = torch.as_tensor(indices, dtype=torch.int32, device=logits.device)
        indices = _int_vec("indices", indices, logits.device)
    elif bitmask.shape[0] < logits.shape[0]:
        raise ValueError(f"bitmask has {bitmask.shape[0]} rows for {logits.shape[0]} logits rows")
    if be == "torch":
        torch_ref.apply_bitmask_inplace(logits, bitmask, indices=indices, vocab_size=V)
    else:
        _triton_module().apply_bitmask(logits, bitmask, indices, V)


def allocate_token_bitmask(batch_size: int, vocab_size: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """int32 ``[batch_size, ceil(vocab_size/32)]`` filled with -1 (everything allowed)."""
    return torch.full((batch_size, -(-vocab_size // 32)), -1, dtype=torch.int32, device=device)
