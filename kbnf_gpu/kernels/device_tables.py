"""Device-resident bitset tables and host-side staging of the per-step CSR arrays.

* :class:`RowPool` keeps the bitset rows the running grammars need in ONE
  bounded device tensor per device and vocabulary width, addressed by row
  content, so sequences of different grammars are masked in one launch and
  grammars that share terminals share rows.
* :func:`build_csr` packs a batch's row ids, extra ids, indices and skip flags
  into one int32 host buffer (pinned when CUDA is available) and moves it with
  ONE non-blocking host-to-device copy; the CSR tensors are views of it.
"""
from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

IntList = Sequence[int] | np.ndarray


def _normalize_device(device: torch.device | str | int) -> torch.device:
    dev = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


class RowPool:
    """A bounded cache of bitset rows on one device, addressed by row content.

    A row's key is its content digest (``RowStore.row_key``), so grammars that
    share a terminal share its rows, and a row is uploaded once however many
    grammars use it. ``slots(keys, fetch)`` returns the row slot of each key in
    ``rows``, uploading the missing ones (one host-to-device copy for all of
    them). At most ``capacity`` rows stay resident: the least recently used
    rows that the current call does not need are evicted first; the buffer
    grows past ``capacity`` only when one call needs more distinct rows (its
    address then changes: re-read ``rows`` after every call, and re-capture a
    CUDA graph if ``grows`` changed).
    """

    _pools: dict[tuple[torch.device, int | None], "RowPool"] = {}
    _pools_lock = threading.Lock()
    DEFAULT_CAPACITY = 4096

    def __init__(self, device: torch.device | str | int, width: int | None = None,
                 capacity: int = DEFAULT_CAPACITY) -> None:
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be a positive number of rows, got {capacity!r}")
        self.device = _normalize_device(device)
        self.capacity = capacity
        self._lock = threading.Lock()
        self._width = width
        self._buf: torch.Tensor | None = None
        self._slot_of: OrderedDict[bytes, int] = OrderedDict()  # least recently used first
        self._free: list[int] = []
        self.uploads = 0
        self.evictions = 0
        self.grows = 0

    @classmethod
    def for_device(cls, device: torch.device | str | int, width: int | None = None) -> "RowPool":
        """The process-wide pool of ``device`` for rows of ``width`` words (created on first use).

        Grammars of one vocabulary width share a pool (one launch serves them
        all); a server hosting models with different vocabularies gets one pool each.
        """
        dev = _normalize_device(device)
        with cls._pools_lock:
            pool = cls._pools.get((dev, width))
            if pool is None:
                pool = cls._pools[(dev, width)] = cls(dev, width)
            return pool

    @property
    def width(self) -> int | None:
        """Words per row (``ceil(V/32)``); None before the first row."""
        return self._width

    @property
    def num_rows(self) -> int:
        """Rows resident now."""
        return len(self._slot_of)

    @property
    def rows(self) -> torch.Tensor:
        """int32 ``[slots, W]`` on the pool's device; ``slots()`` indexes it (re-read it after each call)."""
        buf = self._buf
        if buf is None:
            return torch.zeros((1, self._width or 1), dtype=torch.int32, device=self.device)
        return buf

    def __contains__(self, key: bytes) -> bool:
        return key in self._slot_of

    def slots(self, keys: Sequence[bytes], fetch) -> list[int]:
        """Slot of each row key, uploading missing rows: ``fetch(positions)`` returns their ``[k, W]`` uint32/int32 rows."""
        with self._lock:
            slot_of = self._slot_of
            out = [-1] * len(keys)
            missing: list[int] = []
            needed = set(keys)
            for i, key in enumerate(keys):
                slot = slot_of.get(key)
                if slot is None:
                    missing.append(i)
                else:
                    slot_of.move_to_end(key)
                    out[i] = slot
            if not missing:
                return out
            unique: dict[bytes, int] = {}
            for i in missing:
                unique.setdefault(keys[i], i)
            data = np.asarray(fetch(list(unique.values())))
            if data.ndim != 2 or data.shape[0] != len(unique) or data.dtype not in (np.int32, np.uint32):
                raise ValueError(f"fetch must return [{len(unique)}, W] int32/uint32 rows, got {data.dtype} "
                                 f"{data.shape}")
            if self._width is None:
                self._width = data.shape[1]
            elif data.shape[1] != self._width:
                raise ValueError(f"rows of {data.shape[1]} words given to a pool of rows of {self._width} words "
                                 "(one pool per vocabulary width: RowPool.for_device(device, width))")
            new_slots = self._allocate(len(unique), needed)
            src = torch.from_numpy(np.ascontiguousarray(data).view(np.int32))
            index = torch.tensor(new_slots, dtype=torch.int64)
            if self.device.type == "cpu":
                self._buf.index_copy_(0, index, src)
            else:
                self._buf.index_copy_(0, index.to(self.device), src.to(self.device, non_blocking=False))
            self.uploads += len(unique)
            for (key, _), slot in zip(unique.items(), new_slots):
                slot_of[key] = slot
            for i in missing:
                out[i] = slot_of[keys[i]]
            return out

    def _allocate(self, n: int, needed: set) -> list[int]:
        """``n`` free slots: unused ones, then evicted least-recently-used rows not in ``needed``, then growth."""
        if self._buf is None:
            self._buf = torch.zeros((max(self.capacity, n), self._width), dtype=torch.int32, device=self.device)
            self._free = list(range(self._buf.shape[0] - 1, -1, -1))
        while len(self._free) < n and len(self._slot_of) + n > self.capacity:
            victim = next((k for k in self._slot_of if k not in needed), None)
            if victim is None:
                break
            self._free.append(self._slot_of.pop(victim))
            self.evictions += 1
        if len(self._free) < n:  # this call alone needs more rows than fit: grow
            old = self._buf
            size = max(2 * old.shape[0], old.shape[0] + n)
            self._buf = torch.zeros((size, self._width), dtype=torch.int32, device=self.device)
            self._buf[: old.shape[0]].copy_(old)
            self._free.extend(range(size - 1, old.shape[0] - 1, -1))
            self.grows += 1
        return [self._free.pop() for _ in range(n)]


class HostStaging:
    """A ring of reusable int32 host buffers for asynchronous host-to-device copies.

    Buffers are pinned when CUDA is available. :meth:`acquire` hands out the
    next slot after waiting for the copy last issued from it, so the ring can
    be refilled every step without racing an in-flight copy.
    """

    def __init__(self, slots: int = 4, pin: bool | None = None) -> None:
        self.pin = torch.cuda.is_available() if pin is None else pin
        self._bufs: list[torch.Tensor | None] = [None] * slots
        self._events: list[object | None] = [None] * slots
        self._next = 0
        self._last = -1

    def acquire(self, n: int) -> torch.Tensor:
        """An int32 host tensor of ``n`` elements (contents undefined)."""
        slot = self._next
        self._next = (slot + 1) % len(self._bufs)
        ev = self._events[slot]
        if ev is not None:
            ev.synchronize()
            self._events[slot] = None
        buf = self._bufs[slot]
        if buf is None or buf.numel() < n:
            size = max(n, 1024, 0 if buf is None else 2 * buf.numel())
            buf = torch.empty(size, dtype=torch.int32, pin_memory=self.pin)
            self._bufs[slot] = buf
        self._last = slot
        return buf[:n]

    def to_device(self, host: torch.Tensor, device: torch.device | str) -> torch.Tensor:
        """Copy ``host`` (from the latest :meth:`acquire`) to ``device``, non-blocking when pinned."""
        dev = _normalize_device(device)
        if dev.type == "cpu":
            return host.clone()
        out = host.to(dev, non_blocking=self.pin)
        if self.pin and dev.type == "cuda" and self._last >= 0:
            ev = torch.cuda.Event()
            ev.record(torch.cuda.current_stream(dev))
            self._events[self._last] = ev
        return out


_local = threading.local()


def default_staging() -> HostStaging:
    """This thread's staging ring."""
    st = getattr(_local, "staging", None)
    if st is None:
        st = _local.staging = HostStaging()
    return st


def pinned_int32(n: int) -> torch.Tensor:
    """A reusable int32 host buffer of ``n`` elements from this thread's ring (pinned when CUDA is available).

    Move it with ``default_staging().to_device(buf, device)`` so the ring waits
    for that copy before handing the buffer out again.
    """
    return default_staging().acquire(n)


@dataclass(frozen=True)
class CsrBatch:
    """The per-step index tensors of one batch, views of one device buffer."""

    row_ptr: torch.Tensor
    row_idx: torch.Tensor
    extra_ptr: torch.Tensor
    extra_ids: torch.Tensor
    indices: torch.Tensor | None = None
    skip: torch.Tensor | None = None

    @property
    def n(self) -> int:
        return self.row_ptr.numel() - 1

    def csr(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(row_ptr, row_idx, extra_ptr, extra_ids)``, the positional kernel arguments."""
        return self.row_ptr, self.row_idx, self.extra_ptr, self.extra_ids

    def options(self) -> dict[str, torch.Tensor | None]:
        """``indices`` and ``skip`` keyword arguments."""
        return {"indices": self.indices, "skip": self.skip}


def _concat(lists: Sequence[IntList], total: int) -> np.ndarray:
    """The lists end to end as int64; numpy arrays (a state's extra ids) are copied whole, not element by element."""
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    if any(isinstance(x, np.ndarray) for x in lists):
        return np.concatenate([x for x in lists if len(x)]).astype(np.int64, copy=False)
    return np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=total)


def _concat_into(out: np.ndarray, lists: Sequence[IntList]) -> bool:
    """Write int32 arrays end to end into ``out`` in one copy; False (nothing promised) for any other input."""
    if not out.size:
        return True
    try:
        np.concatenate(lists, out=out, casting="no")
    except (TypeError, ValueError):  # a list, a tuple or a wider dtype: the checked int64 path
        return False
    return True


def _check_row_ids(row_idx: np.ndarray, num_rows: int | None) -> None:
    if num_rows is not None and row_idx.size and (row_idx.min() < 0 or row_idx.max() >= num_rows):
        raise ValueError(f"row ids must lie in [0, {num_rows}), got [{row_idx.min()}, {row_idx.max()}]")


def build_csr(
    row_lists: Sequence[IntList],
    extra_lists: Sequence[IntList] | None = None,
    *,
    device: torch.device | str,
    row_offsets: IntList | None = None,
    indices: IntList | None = None,
    skip: Sequence[bool] | np.ndarray | None = None,
    num_rows: int | None = None,
    staging: HostStaging | None = None,
) -> CsrBatch:
    """Pack a batch's CSR arrays and move them to ``device`` with one copy.

    ``row_lists[b]``: row ids of entry ``b`` (local to its table; ``row_offsets[b]``
    — its table's :meth:`RowPool.offset_of` — is added). ``extra_lists[b]``: extra
    allowed token ids. ``num_rows``: if given, row ids (after offsets) are checked
    to lie in ``[0, num_rows)``; the kernels do not bounds-check them.
    """
    n = len(row_lists)
    if extra_lists is None:
        extra_lists = [()] * n
    if len(extra_lists) != n:
        raise ValueError(f"{n} row lists but {len(extra_lists)} extra lists")
    rc = np.fromiter(map(len, row_lists), dtype=np.int64, count=n)
    ec = np.fromiter(map(len, extra_lists), dtype=np.int64, count=n)
    nnz, ne = int(rc.sum()), int(ec.sum())
    parts: list[tuple[str, int]] = [("row_ptr", n + 1), ("extra_ptr", n + 1)]
    if indices is not None:
        parts.append(("indices", n))
    if skip is not None:
        parts.append(("skip", n))
    parts += [("row_idx", nnz), ("extra_ids", ne)]
    total = sum(size for _, size in parts)

    dev = _normalize_device(device)
    on_cpu = dev.type == "cpu"
    if on_cpu:
        host_t = torch.empty(total, dtype=torch.int32)
    else:
        staging = staging or default_staging()
        host_t = staging.acquire(total)
    host = host_t.numpy()

    spans: dict[str, slice] = {}
    pos = 0
    for name, size in parts:
        spans[name] = slice(pos, pos + size)
        pos += size
    rp = host[spans["row_ptr"]]
    rp[0] = 0
    rp[1:] = np.cumsum(rc)
    ep = host[spans["extra_ptr"]]
    ep[0] = 0
    ep[1:] = np.cumsum(ec)
    if indices is not None:
        idx = np.asarray(indices, dtype=np.int64)
        if idx.shape != (n,):
            raise ValueError(f"indices must have {n} entries, got shape {idx.shape}")
        host[spans["indices"]] = idx
    if skip is not None:
        sk = np.asarray(skip)
        if sk.shape != (n,):
            raise ValueError(f"skip must have {n} entries, got shape {sk.shape}")
        host[spans["skip"]] = sk != 0
    row_out, extra_out = host[spans["row_idx"]], host[spans["extra_ids"]]
    if row_offsets is None and _concat_into(row_out, row_lists):
        _check_row_ids(row_out, num_rows)
    else:
        row_idx = _concat(row_lists, nnz)
        if row_offsets is not None:
            off = np.asarray(row_offsets, dtype=np.int64)
            if off.shape != (n,):
                raise ValueError(f"row_offsets must have {n} entries, got shape {off.shape}")
            row_idx = row_idx + np.repeat(off, rc)
        _check_row_ids(row_idx, num_rows)
        row_out[:] = row_idx
    if not _concat_into(extra_out, extra_lists):
        extra_ids = _concat(extra_lists, ne)
        if ne and (extra_ids.min() < -(1 << 31) or extra_ids.max() >= (1 << 31)):
            raise ValueError("extra token ids must fit in int32")
        extra_out[:] = extra_ids

    buf = host_t if on_cpu else staging.to_device(host_t, dev)
    views = {name: buf[s] for name, s in spans.items()}
    return CsrBatch(
        row_ptr=views["row_ptr"],
        row_idx=views["row_idx"],
        extra_ptr=views["extra_ptr"],
        extra_ids=views["extra_ids"],
        indices=views.get("indices"),
        skip=views.get("skip"),
    )
