"""``Matcher``: the per-sequence state of constrained decoding.

All state lives here: a persistent history of parser state ids (so ``fork`` is
O(1) and ``rollback`` walks back), and whether the sequence finished. Every
computation is delegated to the shared, memoized ``CompiledGrammar``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import TokenRejected
from .earley import DEAD

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from ..compile.compiled import CompiledGrammar


_last_rows: tuple = (None, 0, None)  # (bitmask, its data pointer, its numpy view): a server passes one every step


def _numpy_rows(bitmask: "torch.Tensor") -> np.ndarray | None:
    """A numpy view of ``bitmask`` if it is a CPU int32 tensor without grad (else ``None``). The last one is kept
    (with the tensor, so its memory cannot go): asking torch for the view and its checks cost more per step than
    copying the row itself."""
    global _last_rows
    tensor, pointer, rows = _last_rows
    if tensor is bitmask and bitmask.data_ptr() == pointer and rows.shape == bitmask.shape:
        return rows
    import torch

    if not (bitmask.is_cpu and bitmask.dtype == torch.int32 and not bitmask.requires_grad):
        return None
    rows = bitmask.numpy()
    _last_rows = (bitmask, bitmask.data_ptr(), rows)
    return rows


class _Step:
    """One node of the persistent history: the state after a token, linked to the one before."""

    __slots__ = ("state", "finished", "depth", "parent")

    def __init__(self, state: int, finished: bool, parent: "_Step | None") -> None:
        self.state = state
        self.finished = finished
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1


class Matcher:
    """Tracks one sequence through a compiled grammar.

    ``accept_token`` advances (or raises ``TokenRejected`` and changes
    nothing); ``allowed_token_ids`` / ``fill_bitmask`` give the exact mask.
    """

    def __init__(self, compiled: "CompiledGrammar") -> None:
        self.compiled = compiled
        self._top = _Step(compiled.initial_state, False, None)

    # --------------------------------------------------------------- queries

    @property
    def state(self) -> int:
        """The current parser state id (equal ids behave identically)."""
        return self._top.state

    @property
    def num_tokens(self) -> int:
        """Tokens accepted since the start (what ``rollback`` can undo)."""
        return self._top.depth

    def is_accepting(self) -> bool:
        """Is the output so far a complete sentence of the grammar?"""
        return self.compiled.parser.is_accepting(self._top.state)

    def is_finished(self) -> bool:
        """Eager mode: the grammar completed. EOS mode: an EOS token was accepted."""
        return self._top.finished

    def allowed_token_ids(self) -> np.ndarray:
        """Sorted int32 ids of every token allowed next (EOS ids when accepting, in eos mode).

        The array is read-only: it is the grammar's cached mask, shared by every matcher.
        """
        if self._top.finished:
            return np.zeros(0, dtype=np.int32)
        return self.compiled.allowed_ids(self._top.state)

    def is_token_allowed(self, token_id: int) -> bool:
        try:
            self._advance(token_id)
        except TokenRejected:
            return False
        return True

    def fill_bitmask(self, bitmask: "torch.Tensor", index: int = 0) -> None:
        """Write the allowed set into row ``index`` of an int32 ``[B, ceil(V/32)]`` bitmask."""
        top = self._top
        rows = _numpy_rows(bitmask)
        if rows is not None and not top.finished:
            # a server's step: a state whose packed mask is cached, as wide as the row (so wide enough)
            mask = top.state.mask
            words = None if mask is None else mask.words
            if words is not None and words.shape[0] == rows.shape[1]:
                rows[index] = words
                return
        width = bitmask.shape[1] if rows is None else rows.shape[1]
        vocab_size = self.compiled.vocab.size
        if width * 32 < vocab_size:
            raise ValueError(f"bitmask rows hold {width * 32} tokens; the vocabulary has {vocab_size} "
                             f"(use {(vocab_size + 31) // 32} int32 words per row)")
        # ``words`` has ceil(V / 32) <= width entries; words beyond them are zeroed
        words = None if top.finished else self.compiled.bitmask_words(top.state)
        if rows is not None:
            if words is None:
                rows[index] = 0
            elif words.shape[0] == width:
                rows[index] = words  # one copy of the cached bitset straight into the caller's row
            else:
                row = rows[index]
                row[: words.shape[0]] = words
                row[words.shape[0]:] = 0
            return
        import torch

        row = np.zeros(width, dtype=np.int32)
        if words is not None:
            row[: words.shape[0]] = words
        bitmask[index].copy_(torch.from_numpy(row))

    def mask_parts(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(dense row ids, extra token ids) of the current mask; ``None`` once finished (leave logits alone)."""
        if self._top.finished:
            return None
        return self.compiled.mask_parts(self._top.state)

    # --------------------------------------------------------------- updates

    def _advance(self, token_id: int) -> _Step:
        compiled = self.compiled
        top = self._top
        if top.finished:
            raise TokenRejected(f"token {token_id} rejected: the matcher has finished")
        tid = token_id
        if type(tid) is not int:  # numpy integers, bools...: converted off the common path (-1: not an integer)
            tid = int(tid) if isinstance(tid, (int, np.integer)) else -1
        if not 0 <= tid < compiled.vocab.size:
            raise TokenRejected(f"token id {token_id!r} is outside the vocabulary (size {compiled.vocab.size})")
        token_id = tid
        if token_id in compiled.eos_set:
            if compiled.end_mode == "eos" and compiled.parser.is_accepting(top.state):
                return _Step(top.state, True, top)
            raise TokenRejected(f"EOS token {token_id} rejected: the output is not a complete sentence")
        state, passed_accept = compiled.step_token(top.state, token_id)
        if state is DEAD:
            raise TokenRejected(f"token {token_id} ({compiled.vocab.token_bytes(token_id)!r}) is not allowed here")
        return _Step(state, compiled.end_mode == "eager" and passed_accept, top)

    def accept_token(self, token_id: int) -> None:
        """Advance by one token; ``TokenRejected`` (state unchanged) if the grammar does not allow it."""
        self._top = self._advance(token_id)

    def accept_tokens(self, token_ids) -> None:
        """Advance by several tokens, all or nothing."""
        top = self._top
        try:
            for t in token_ids:
                self.accept_token(t)
        except TokenRejected:
            self._top = top
            raise

    def accept_bytes(self, data: bytes) -> None:
        """Advance by raw bytes (counts as one step for ``rollback``); all or nothing."""
        compiled = self.compiled
        top = self._top
        if top.finished:
            raise TokenRejected("bytes rejected: the matcher has finished")
        state, passed_accept, consumed = compiled.parser.step_bytes(top.state, bytes(data))
        if state is DEAD:
            raise TokenRejected(f"bytes rejected at offset {consumed}: {bytes(data)[consumed:consumed + 16]!r}")
        self._top = _Step(state, compiled.end_mode == "eager" and passed_accept, top)

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` accepted tokens."""
        if num_tokens < 0 or num_tokens > self._top.depth:
            raise ValueError(f"cannot roll back {num_tokens} tokens; {self._top.depth} accepted")
        top = self._top
        for _ in range(num_tokens):
            top = top.parent  # type: ignore[assignment]
        self._top = top  # type: ignore[assignment]

    def fork(self) -> "Matcher":
        """An independent copy sharing the compiled grammar and history (O(1))."""
        other = Matcher.__new__(Matcher)
        other.compiled = self.compiled
        other._top = self._top
        return other

    def reset(self) -> None:
        """Back to the start; the grammar's caches are kept."""
        self._top = _Step(self.compiled.initial_state, False, None)

    def find_jump_forward_bytes(self, limit: int = 256) -> bytes:
        """Bytes every continuation must start with (for jump-forward decoding); empty if none are forced."""
        parser = self.compiled.parser
        state = self._top.state
        out = bytearray()
        if self._top.finished:
            return b""
        while len(out) < limit:
            if parser.is_accepting(state):
                break
            alive = [b for b in range(256) if parser.step_byte(state, b) != DEAD]
            if len(alive) != 1:
                break
            forced = alive[0]
            out.append(forced)
            state = parser.step_byte(state, forced)
        return bytes(out)
