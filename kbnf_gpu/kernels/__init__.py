"""Batched token-mask kernels: one launch masks a whole batch of logits.

Inputs shared by every operation (all int32 unless noted):

* ``rows`` ``[R, W]``: resident bitset table (see :class:`RowPool`); bit
  ``t % 32`` of word ``t // 32`` set = token ``t`` allowed. ``W = ceil(V/32)``.
* CSR per batch entry ``b in [0, n)``: rows ``row_idx[row_ptr[b]:row_ptr[b+1]]``
  are ORed, and token ids ``extra_ids[extra_ptr[b]:extra_ptr[b+1]]`` are also
  allowed (sparse rows, verified DEEP tokens, EOS). ``row_ptr``/``extra_ptr``
  have ``n + 1`` entries.
* ``indices`` ``[n]`` (optional): entry ``b`` targets row ``indices[b]`` of
  logits/bitmask; default row ``b``. Rows not targeted are untouched.
* ``skip`` ``[n]`` (optional; bool or integer): **skip convention** —
  ``skip[b] != 0`` leaves entry ``b``'s target row untouched (finished or
  unconstrained sequence); its index is then ignored.
* ``vocab_size``: tokens at or past it are never allowed (padded logits
  columns get ``-inf``). Default: the mask source's width, ``W * 32``. The
  target must cover it: logits narrower than ``vocab_size`` are an error, not
  a partly applied mask.

Validation (``validate=True``, the default) rejects, before any launch, with
a :class:`~kbnf_gpu.errors.KernelInputError` naming the entry: row ids outside
``[0, R)``, extra ids outside ``[0, vocab_size)``, CSR pointers that decrease
or leave their arrays, target indices outside the tensor, and two active
entries targeting one row. Metadata checks are free; value checks of CUDA
tensors cost one device-to-host sync (see :mod:`.validate`). Hot paths check
the host arrays where they are built and pass ``validate=False``; the kernels
bound every load and store either way.

Backends: ``backend=None`` picks Triton for CUDA tensors and the torch
reference otherwise; ``"triton"`` / ``"torch"`` force one (Triton on CPU
tensors needs ``TRITON_INTERPRET=1`` set before first use).

Serving loop (CUDA). The mask's CPU half (matchers → row ids + extra ids)
runs while the GPU computes the model's forward; the launch never blocks::

    static = StaticCsr(max_batch, max_row_ids, max_extra_ids, device="cuda")
    while serving:
        logits = model(input_ids)               # enqueued; the CPU goes on at once
        csr = build_csr(row_lists, extra_lists, device="cpu", row_offsets=offsets)  # CPU half, overlaps it
        static.stage(csr, num_rows=R, vocab_size=V, num_targets=logits.shape[0])  # host checks, 1 async copy
        apply_token_masks(logits, rows, *static.csr(B).csr(), **static.csr(B).options(),
                          vocab_size=V, validate=False)   # enqueued behind the copy
        tokens = sample(logits)                 # the step's only sync

Every per-step tensor the launch reads lives at a fixed address, so the
``apply_token_masks`` call can instead be captured once per batch size in a
CUDA graph (``torch.cuda.graph``) over static ``logits`` and replayed after
each ``stage`` on the same stream. The ``rows`` table must then stay at one
address too: capture after the grammars' rows are resident, and capture again
if the pool reallocates.
"""
from __future__ import annotations

from typing import Literal

import torch

from ..errors import KernelInputError
from . import torch_ref, validate as V
from .device_tables import CsrBatch, HostStaging, RowPool, build_csr, pinned_int32
from .static_csr import StaticCsr

__all__ = [
    "apply_token_masks",
    "fill_token_bitmask",
    "apply_bitmask_inplace",
    "allocate_token_bitmask",
    "KernelInputError",
    "RowPool",
    "CsrBatch",
    "HostStaging",
    "StaticCsr",
    "build_csr",
    "pinned_int32",
]

Backend = Literal["triton", "torch"]


def _triton_module():
    from . import triton_mask

    return triton_mask


def _resolve_backend(backend: str | None, t: torch.Tensor) -> str:
    if not isinstance(t, torch.Tensor):
        raise KernelInputError(f"expected a tensor to mask, got {type(t).__name__}")
    if backend is None:
        return "triton" if t.is_cuda else "torch"
    if backend not in ("triton", "torch"):
        raise KernelInputError(f"backend must be 'triton', 'torch' or None, got {backend!r}")
    if backend == "triton" and not t.is_cuda:
        tm = _triton_module()
        if type(tm._mask_logits_kernel).__name__ != "InterpretedFunction":
            raise KernelInputError(
                "backend='triton' on CPU tensors needs TRITON_INTERPRET=1 set before "
                "kbnf_gpu.kernels.triton_mask is first imported"
            )
    return backend


def _prepare_csr_launch(target_t, target, rows, csr, vocab_size, target_cols, validate):
    """Shared checks of :func:`apply_token_masks` and :func:`fill_token_bitmask`."""
    device = target_t.device
    rows = V.table(rows, device)
    vocab = V.vocab_width(vocab_size, rows.shape[1], "rows table", target_cols, target)
    args = V.csr_tensors(*csr, device, target_t.shape[0], target)
    if validate:
        V.no_capture_sync(device)
        V.check_values(*args, num_rows=rows.shape[0], vocab_size=vocab, num_targets=target_t.shape[0],
                       target=target)
    return rows, vocab, args


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
    validate: bool = True,
) -> None:
    """Write ``-inf`` in place to every logit its batch entry does not allow.

    ``logits`` ``[B_total, V_logits]`` (fp32/bf16/fp16; ``V_logits >= vocab_size``).
    Allowed logits are left bit-exact; columns ``>= vocab_size`` are always
    disallowed. One kernel launch for the whole batch; with ``validate=False``
    no host sync either (see the module doc).
    """
    be = _resolve_backend(backend, logits)
    logits = V.logits_2d(logits, be == "triton")
    rows, vocab, args = _prepare_csr_launch(
        logits, "logits", rows, (row_ptr, row_idx, extra_ptr, extra_ids, indices, skip), vocab_size,
        logits.shape[1], validate,
    )
    row_ptr, row_idx, extra_ptr, extra_ids, indices, skip = args
    if be == "torch":
        torch_ref.apply_token_masks(logits, rows, row_ptr, row_idx, extra_ptr, extra_ids, indices=indices,
                                    skip=skip, vocab_size=vocab)
    else:
        _triton_module().mask_logits(logits, rows, row_ptr, row_idx, extra_ptr, extra_ids, indices, skip, vocab)


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
    validate: bool = True,
) -> None:
    """Write each entry's allowed set, packed, to ``bitmask_out`` ``[B_total, W_out]`` int32.

    ``W_out * 32 >= vocab_size``. Bits ``>= vocab_size`` are cleared (words
    past the table width are 0). Skipped entries and rows not targeted are
    left untouched: callers fill them with -1 (all allowed) themselves when
    they mean "unconstrained", as xgrammar's bitmask users expect.
    """
    be = _resolve_backend(backend, bitmask_out)
    bitmask_out = V.bitmask_2d("bitmask_out", bitmask_out)
    rows, vocab, args = _prepare_csr_launch(
        bitmask_out, "bitmask_out", rows, (row_ptr, row_idx, extra_ptr, extra_ids, indices, skip), vocab_size,
        bitmask_out.shape[1] * 32, validate,
    )
    row_ptr, row_idx, extra_ptr, extra_ids, indices, skip = args
    if be == "torch":
        torch_ref.fill_token_bitmask(bitmask_out, rows, row_ptr, row_idx, extra_ptr, extra_ids, indices=indices,
                                     skip=skip, vocab_size=vocab)
    else:
        _triton_module().fill_bitmask(bitmask_out, rows, row_ptr, row_idx, extra_ptr, extra_ids, indices, skip,
                                      vocab)


def apply_bitmask_inplace(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    indices: torch.Tensor | None = None,
    *,
    vocab_size: int | None = None,
    backend: Backend | None = None,
    validate: bool = True,
) -> None:
    """``logits[i, t] = -inf`` where bit ``t`` of ``bitmask[i]`` is 0 (xgrammar's layout).

    Rows ``indices[k]`` of both tensors (every row when None; then
    ``bitmask`` needs at least as many rows as ``logits``); an index may
    repeat (the same mask twice). Unlike xgrammar, ``vocab_size`` defaults to
    the bitmask's width ``W * 32``, logits must cover it, and logits columns
    ``>= vocab_size`` are set to -inf too, matching :func:`apply_token_masks`.
    """
    be = _resolve_backend(backend, logits)
    logits = V.logits_2d(logits, be == "triton")
    bitmask = V.bitmask_2d("bitmask", bitmask, logits.device)
    vocab = V.vocab_width(vocab_size, bitmask.shape[1], "bitmask", logits.shape[1], "logits")
    num_targets = min(logits.shape[0], bitmask.shape[0])
    if indices is not None:
        indices = V.int_vector("indices", indices, logits.device)
        if validate:
            V.no_capture_sync(logits.device)
            V.raise_first(V.target_checks(indices, None, num_targets, "logits and bitmask", distinct=False))
    elif bitmask.shape[0] < logits.shape[0]:
        raise KernelInputError(f"bitmask has {bitmask.shape[0]} rows for {logits.shape[0]} logits rows")
    if be == "torch":
        torch_ref.apply_bitmask_inplace(logits, bitmask, indices=indices, vocab_size=vocab)
    else:
        _triton_module().apply_bitmask(logits, bitmask, indices, vocab)


def allocate_token_bitmask(batch_size: int, vocab_size: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """int32 ``[batch_size, ceil(vocab_size/32)]`` filled with -1 (everything allowed)."""
    return torch.full((batch_size, -(-vocab_size // 32)), -1, dtype=torch.int32, device=device)
