"""``mask_batch``: mask a whole batch of logits in one kernel launch.

Per step only small index arrays travel to the device: each matcher's dense
row slots (in the device's ``RowPool``, a bounded cache of table rows
addressed by content; a row is uploaded the first time any grammar needs it)
and its extra token ids, packed as CSR into one buffer and copied once.
Matchers of different grammars share a batch and a pool.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from .kernels import RowPool, apply_token_masks, build_csr, fill_token_bitmask
from .kernels.validate import check_indices
from .runtime.matcher import Matcher


def _gather(matchers: Sequence[Matcher | None], device: torch.device):
    """Each matcher's mask as device row slots + extra ids (one pool call uploads every missing row).

    A mask keeps the slots its rows got (``Mask.pool_slots``) until its pool
    evicts any row, so a batch of known states makes no pool call at all. An
    eviction may reuse a slot that such a kept list names: then every mask of
    the batch asks the pool again (all their rows needed, so none is evicted).
    """
    pool = None
    masks: list = []
    vocab_size = None
    seen = None  # the last grammar checked (a batch usually holds one)
    for m in matchers:
        if m is None or m.is_finished():
            masks.append(None)
            continue
        compiled = m.compiled
        if compiled is not seen:
            if vocab_size is None:
                vocab_size = compiled.vocab.size
                pool = RowPool.for_device(device, compiled.words)
            elif compiled.vocab.size != vocab_size:
                raise ValueError("all matchers of a batch must share one vocabulary size")
            seen = compiled
        masks.append((compiled, compiled.mask(m.state)))
    if pool is not None:
        epoch = pool.evictions
        kept = (pool, epoch)
        stale = [e for e in masks if e is not None and (e[1].pool_slots is None or e[1].pool_slots[:2] != kept)]
        if stale:
            _ask_pool(pool, stale)
            if pool.evictions != epoch:
                _ask_pool(pool, [e for e in masks if e is not None])
    # finished or unconstrained: the entry is skipped (its row left alone); no skip list when none is
    row_lists = [_NONE if e is None else e[1].pool_slots[2] for e in masks]
    extra_lists = [_NONE if e is None else e[1].extras for e in masks]
    skip = [e is None for e in masks] if None in masks else None
    return pool, row_lists, extra_lists, skip, vocab_size


_NONE = np.zeros(0, dtype=np.int32)  # a skipped entry's rows and extras (int32: build_csr copies them whole)


def _ask_pool(pool: RowPool, entries: list) -> None:
    """Slots for every row of the masks in ``entries`` (uploading missing rows), kept on each mask."""
    keys: list[bytes] = []
    sources: list[tuple] = []  # (compiled, row id) behind each key
    for compiled, mask in entries:
        keys.extend(compiled.row_keys(mask))
        sources.extend((compiled, r) for r in mask.rows.tolist())
    epoch = pool.evictions  # read first: an eviction during the call (any thread's) leaves the slots unkept
    slots = pool.slots(keys, lambda positions: np.stack([sources[i][0].dense_rows[sources[i][1]]
                                                         for i in positions])) if keys else []
    at = 0
    for _, mask in entries:
        n = mask.rows.size
        mask.pool_slots = (pool, epoch, np.asarray(slots[at:at + n], dtype=np.int32))
        at += n


class PreparedBatch:
    """A batch's mask, ready to apply: device CSR index tensors, or (on the CPU) the bitsets themselves."""

    __slots__ = ("vocab_size", "rows", "csr", "targets", "words")

    def __init__(self, vocab_size: int, *, rows=None, csr=None, targets=None, words=None) -> None:
        self.vocab_size = vocab_size
        self.rows = rows
        self.csr = csr
        self.targets = targets
        self.words = words


def prepare_batch(
    matchers: Sequence[Matcher | None],
    device: torch.device | str,
    indices: Sequence[int] | None = None,
    *,
    backend: str | None = None,
) -> PreparedBatch | None:
    """The CPU half of ``mask_batch``: every matcher's mask, packed for one launch.

    For a GPU: row ids and extra ids as CSR, sent to ``device`` in one copy.
    For the CPU (no ``backend`` forced): each state's cached bitset.
    ``None`` when no matcher constrains anything (all finished or ``None``).
    """
    device = torch.device(device)
    if device.type == "cpu" and backend is None:
        return _prepare_cpu(matchers, indices)
    pool, row_lists, extra_lists, skip, vocab_size = _gather(matchers, device)
    if vocab_size is None:
        return None
    rows = pool.rows
    csr = build_csr(row_lists, extra_lists, device=device,
                    indices=None if indices is None else [int(i) for i in indices], skip=skip,
                    num_rows=rows.shape[0])
    return PreparedBatch(vocab_size, rows=rows, csr=csr)


def apply_prepared(logits: torch.Tensor, prepared: PreparedBatch | None, *, backend: str | None = None,
                   validate: bool = True) -> None:
    """The device half of ``mask_batch``: one launch (or one vectorized pass on the CPU).

    ``validate=False`` skips the launch's value checks (a device sync on CUDA) for callers that checked
    the indices on the host, as ``mask_batch`` does.
    """
    if prepared is None:
        return
    if prepared.words is not None:
        _apply_cpu(logits, prepared)
    else:
        apply_token_masks(logits, prepared.rows, *prepared.csr.csr(), **prepared.csr.options(),
                          vocab_size=prepared.vocab_size, backend=backend, validate=validate)


def mask_batch(
    logits: torch.Tensor,
    matchers: Sequence[Matcher | None],
    indices: Sequence[int] | torch.Tensor | None = None,
    *,
    backend: str | None = None,
) -> None:
    """Set every disallowed logit of ``logits[B, V]`` to ``-inf`` in place, one launch for the batch.

    ``matchers[b]`` constrains row ``indices[b]`` (default row ``b``); a
    ``None`` matcher or a finished one leaves its row untouched. Columns beyond
    the vocabulary (padded logits) are disallowed. CUDA tensors use the Triton
    kernel; CPU tensors a numpy path over each state's cached bitset
    (``backend="torch"`` or ``"triton"`` forces the kernels' reference or Triton).
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must be [B, V], got shape {tuple(logits.shape)}")
    if indices is None and len(matchers) > logits.shape[0]:
        raise ValueError(f"{len(matchers)} matchers but only {logits.shape[0]} logits rows")
    if indices is not None and len(indices) != len(matchers):
        raise ValueError(f"{len(matchers)} matchers but {len(indices)} indices")
    if indices is not None:  # on the host, so the launch needs no device sync
        check_indices(indices, logits.shape[0])
    apply_prepared(logits, prepare_batch(matchers, logits.device, indices, backend=backend), backend=backend,
                   validate=False)


def _prepare_cpu(matchers: Sequence[Matcher | None], indices) -> PreparedBatch | None:
    targets, words = [], []
    vocab_size = None
    for b, m in enumerate(matchers):
        if m is None or m.is_finished():
            continue
        if vocab_size is None:
            vocab_size = m.compiled.vocab.size
        elif m.compiled.vocab.size != vocab_size:
            raise ValueError("all matchers of a batch must share one vocabulary size")
        targets.append(b if indices is None else int(indices[b]))
        words.append(m.compiled.allowed_bitset(m.state))
    if vocab_size is None:
        return None
    return PreparedBatch(vocab_size, targets=targets, words=np.stack(words))


def _apply_cpu(logits: torch.Tensor, prepared: PreparedBatch) -> None:
    targets = prepared.targets
    width = logits.shape[1]
    bits = np.unpackbits(prepared.words.view(np.uint8), axis=1, bitorder="little")
    allowed = np.zeros((len(targets), width), dtype=bool)
    n = min(width, prepared.vocab_size, bits.shape[1])
    allowed[:, :n] = bits[:, :n]
    banned = torch.from_numpy(~allowed)
    if targets == list(range(targets[0], targets[0] + len(targets))):
        logits[targets[0] : targets[0] + len(targets)].masked_fill_(banned, float("-inf"))
    else:
        rows = torch.tensor(targets)
        logits[rows] = logits[rows].masked_fill_(banned, float("-inf"))


def fill_bitmask_batch(
    bitmask: torch.Tensor,
    matchers: Sequence[Matcher | None],
    indices: Sequence[int] | None = None,
    *,
    backend: str | None = None,
) -> None:
    """Write each matcher's allowed set into the packed ``int32[B, ceil(V/32)]`` bitmask (one launch).

    Rows of ``None`` or finished matchers are left untouched (fill them with -1
    beforehand for "unconstrained", as xgrammar's callers do).
    """
    if indices is not None:  # on the host, so the launch needs no device sync
        check_indices(indices, bitmask.shape[0], "bitmask")
    pool, row_lists, extra_lists, skip, vocab_size = _gather(matchers, bitmask.device)
    if vocab_size is None:
        return
    rows = pool.rows
    csr = build_csr(row_lists, extra_lists, device=bitmask.device,
                    indices=None if indices is None else list(indices), skip=skip, num_rows=rows.shape[0])
    fill_token_bitmask(bitmask, rows, *csr.csr(), **csr.options(), vocab_size=vocab_size, backend=backend,
                       validate=False)
