"""Fixed-capacity device buffers for a batch's CSR arrays: the per-step inputs of a capturable mask launch.

A CUDA graph replays kernel launches with the pointers they were captured
with, so everything a step changes must be written into tensors that never
move. :class:`StaticCsr` owns one int32 device buffer laid out as

    row_ptr [C+1] | extra_ptr [C+1] | indices [C] | skip [C] | row_idx [max_row_ids] | extra_ids [max_extra_ids]

for a capacity of ``C`` batch entries. :meth:`StaticCsr.stage` checks a
host-built batch (CPU tensors: no device sync), writes it into a pinned host
slot, pads the entries past ``n`` as skipped with empty slices, and copies it
to the device buffer with non-blocking copies on the current stream (so they
run after the previous step's kernel and before the next one). The launch
then reads the buffer with ``validate=False``: no host sync, no allocation.
"""
from __future__ import annotations

import torch

from ..errors import KernelInputError
from . import validate as V
from .device_tables import CsrBatch


class StaticCsr:
    """Per-step CSR arrays at fixed device addresses (see the module doc).

    ``stage`` and the launch must run on the same CUDA stream. The ring of
    ``slots`` pinned host buffers lets the CPU stage the next step while the
    previous copy is in flight; a slot is reused only after its copy finished.
    """

    def __init__(self, max_batch: int, max_row_ids: int, max_extra_ids: int, device: torch.device | str,
                 *, slots: int = 2) -> None:
        for name, value in (("max_batch", max_batch), ("max_row_ids", max_row_ids),
                            ("max_extra_ids", max_extra_ids), ("slots", slots)):
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name in ("max_batch", "slots")
                                                                                 else 0):
                raise KernelInputError(f"StaticCsr {name} must be a non-negative int (batch, slots >= 1), "
                                       f"got {value!r}")
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.capacity = max_batch
        cap = max_batch
        self._spans = {}
        pos = 0
        for name, size in (("row_ptr", cap + 1), ("extra_ptr", cap + 1), ("indices", cap), ("skip", cap),
                           ("row_idx", max_row_ids), ("extra_ids", max_extra_ids)):
            self._spans[name] = (pos, pos + size)
            pos += size
        self._head = self._spans["row_idx"][0]  # row_ptr..skip: copied whole every step
        pin = self.device.type == "cuda"
        self._host = [torch.zeros(pos, dtype=torch.int32, pin_memory=pin) for _ in range(slots)]
        self._events: list[torch.cuda.Event | None] = [None] * slots
        self._next = 0
        self._buf = torch.zeros(pos, dtype=torch.int32, device=self.device)
        self._views = {name: self._buf[a:b] for name, (a, b) in self._spans.items()}
        self.n = 0
        self._staged: tuple[int, int, int] | None = None  # (num_rows, vocab_size, num_targets)
        self._pad(self._buf, 0, 0, 0)  # every entry skipped until the first stage

    def _pad(self, buf: torch.Tensor, n: int, nnz: int, ne: int) -> None:
        """Entries ``n..C-1`` of ``buf``: empty slices at the end of the used ids, skipped, index 0."""
        s = self._spans
        buf[s["row_ptr"][0] + n + 1 : s["row_ptr"][1]] = nnz
        buf[s["extra_ptr"][0] + n + 1 : s["extra_ptr"][1]] = ne
        buf[s["indices"][0] + n : s["indices"][1]] = 0
        buf[s["skip"][0] + n : s["skip"][1]] = 1

    def stage(self, csr: CsrBatch, *, num_rows: int, vocab_size: int, num_targets: int) -> int:
        """Check ``csr`` (CPU tensors, e.g. ``build_csr(..., device="cpu")``) and copy it in; returns ``n``.

        ``num_rows`` (rows of the table), ``vocab_size`` and ``num_targets``
        (rows of the logits) describe the launch that will read it.
        """
        cpu = torch.device("cpu")
        row_ptr, row_idx, extra_ptr, extra_ids, indices, skip = V.csr_tensors(
            csr.row_ptr, csr.row_idx, csr.extra_ptr, csr.extra_ids, csr.indices, csr.skip, cpu, num_targets,
            "logits")
        n, nnz, ne = row_ptr.numel() - 1, row_idx.numel(), extra_ids.numel()
        for what, have, cap in (("batch entries", n, self.capacity),
                                ("row ids", nnz, self._spans["row_idx"][1] - self._spans["row_idx"][0]),
                                ("extra ids", ne, self._spans["extra_ids"][1] - self._spans["extra_ids"][0])):
            if have > cap:
                raise KernelInputError(f"{have} {what} exceed this StaticCsr's capacity of {cap}")
        V.check_values(row_ptr, row_idx, extra_ptr, extra_ids, indices, skip, num_rows=num_rows,
                       vocab_size=vocab_size, num_targets=num_targets)
        # Pointers are rebased so the slices start at 0 (check_values allows row_ptr[0] > 0).
        host = self._slot()
        s = self._spans
        a = s["row_ptr"][0]
        host[a : a + n + 1] = row_ptr - row_ptr[0]
        a = s["extra_ptr"][0]
        host[a : a + n + 1] = extra_ptr - extra_ptr[0]
        a = s["indices"][0]
        host[a : a + n] = indices if indices is not None else torch.arange(n, dtype=torch.int32)
        a = s["skip"][0]
        host[a : a + n] = 0 if skip is None else (skip != 0).to(torch.int32)
        r0, e0 = int(row_ptr[0]), int(extra_ptr[0])
        used_rows, used_extras = int(row_ptr[-1]) - r0, int(extra_ptr[-1]) - e0
        a = s["row_idx"][0]
        host[a : a + used_rows] = row_idx[r0 : r0 + used_rows]
        a = s["extra_ids"][0]
        host[a : a + used_extras] = extra_ids[e0 : e0 + used_extras]
        self._pad(host, n, used_rows, used_extras)
        self._copy(host, 0, self._head)
        self._copy(host, s["row_idx"][0], s["row_idx"][0] + used_rows)
        self._copy(host, s["extra_ids"][0], s["extra_ids"][0] + used_extras)
        if self.device.type == "cuda":
            ev = torch.cuda.Event()
            ev.record(torch.cuda.current_stream(self.device))
            self._events[(self._next - 1) % len(self._host)] = ev
        self.n = n
        self._staged = (num_rows, vocab_size, num_targets)
        return n

    def _slot(self) -> torch.Tensor:
        """The next pinned host buffer, once the copy last issued from it has finished."""
        k = self._next
        self._next = (k + 1) % len(self._host)
        ev = self._events[k]
        if ev is not None:
            ev.synchronize()
            self._events[k] = None
        return self._host[k]

    def _copy(self, host: torch.Tensor, a: int, b: int) -> None:
        if b > a:
            self._buf[a:b].copy_(host[a:b], non_blocking=self.device.type == "cuda")

    def csr(self, batch: int | None = None) -> CsrBatch:
        """Views of the device buffer for the first ``batch`` entries (default: the staged ``n``).

        A graph captured for ``batch`` entries serves any staged ``n <= batch``:
        the entries past ``n`` are skipped.
        """
        batch = self.n if batch is None else batch
        if not self.n <= batch <= self.capacity:
            raise KernelInputError(f"batch={batch} must lie in [{self.n} (staged entries), {self.capacity}]")
        v = self._views
        return CsrBatch(row_ptr=v["row_ptr"][: batch + 1], row_idx=v["row_idx"],
                        extra_ptr=v["extra_ptr"][: batch + 1], extra_ids=v["extra_ids"],
                        indices=v["indices"][:batch], skip=v["skip"][:batch])

    def apply(self, logits: torch.Tensor, rows: torch.Tensor, *, vocab_size: int, batch: int | None = None,
              backend: str | None = None) -> None:
        """``apply_token_masks`` over the staged batch, unvalidated (``stage`` checked it): no sync, capturable.

        The tensors must match what ``stage`` was told (checked on their shapes, which is free).
        """
        from . import apply_token_masks

        if self._staged is None:
            raise KernelInputError("StaticCsr.apply before any stage()")
        num_rows, staged_vocab, num_targets = self._staged
        if rows.shape[0] < num_rows or vocab_size != staged_vocab or logits.shape[0] < num_targets:
            raise KernelInputError(
                f"StaticCsr staged for {num_rows} table rows, vocab_size={staged_vocab}, {num_targets} logits rows; "
                f"applied with {rows.shape[0]} rows, vocab_size={vocab_size}, {logits.shape[0]} logits rows"
            )
        csr = self.csr(batch)
        apply_token_masks(logits, rows, *csr.csr(), **csr.options(), vocab_size=vocab_size, backend=backend,
                          validate=False)
