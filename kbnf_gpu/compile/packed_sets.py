"""A table's token sets, one per DFA state, held as one flat ``uint32`` array.

The array is what the table cache keeps in memory and writes to disk; a
state's :class:`~.token_sets.TokenSet` is cut out of it only when a grammar
reaches that state. Layout:
``[magic, V, n, n_dense, nnz, counts[n], dense_of[n], ptr[n+1], ids[nnz], dense[n_dense*W]]``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .token_sets import DEFAULT_SPARSE_LIMIT, TokenSet, pack_masks, unique_sorted, words_for

SETS_MAGIC = 0x4B545331  # "KTS1"
NO_DENSE_ROW = np.uint32(0xFFFFFFFF)  # ``dense_of`` of a sparse set


def pack_sets(sets: Sequence[TokenSet]) -> np.ndarray:
    """The flat array of ``sets`` (all over one vocabulary)."""
    n = len(sets)
    vocab_size = sets[0].vocab_size if sets else 0
    dense_at = [i for i, s in enumerate(sets) if s.bits is not None]
    dense_of = np.full(n, NO_DENSE_ROW, dtype=np.uint32)
    dense_of[dense_at] = np.arange(len(dense_at), dtype=np.uint32)
    sizes = np.fromiter((0 if s.ids is None else s.ids.size for s in sets), dtype=np.int64, count=n)
    ptr = np.zeros(n + 1, dtype=np.uint32)
    np.cumsum(sizes, out=ptr[1:])
    ids = [np.ascontiguousarray(s.ids, dtype=np.int32).view(np.uint32) for s in sets if s.ids is not None and s.ids.size]
    counts = np.fromiter((s.count for s in sets), dtype=np.uint32, count=n)
    dense = [np.ascontiguousarray(sets[i].bits, dtype=np.uint32) for i in dense_at]
    return _blob(vocab_size, counts, dense_of, ptr, len(dense_at), ids, dense)


def _blob(vocab_size: int, counts: np.ndarray, dense_of: np.ndarray, ptr: np.ndarray, n_dense: int,
          ids: list[np.ndarray], dense: list[np.ndarray]) -> np.ndarray:
    head = np.array([SETS_MAGIC, vocab_size, counts.shape[0], n_dense, int(ptr[-1])], dtype=np.uint32)
    return np.concatenate([head, counts, dense_of, ptr, *ids, *dense])


def sets_from_pairs(
    groups: np.ndarray,
    tokens: np.ndarray,
    n_groups: int,
    vocab_size: int,
    sparse_limit: int = DEFAULT_SPARSE_LIMIT,
) -> "PackedSets":
    """One canonical set per group from (group, token) pairs (pairs may repeat), packed.

    Groups with more than ``sparse_limit`` pairs go through one boolean
    scatter and ``packbits`` (dense if their distinct tokens are still that
    many); the rest through one sort. No per-group objects: most tables are a
    few dozen small sets, where making each set costs more than finding it.
    """
    groups = np.asarray(groups, dtype=np.int64)
    tokens = np.asarray(tokens, dtype=np.int64)
    dense_of = np.full(n_groups, NO_DENSE_ROW, dtype=np.uint32)
    dense: list[np.ndarray] = []
    dense_rows = np.zeros(0, dtype=np.int64)
    dense_counts = np.zeros(0, dtype=np.int64)
    big = np.flatnonzero(np.bincount(groups, minlength=n_groups) > sparse_limit)
    if big.size:
        slot = np.full(n_groups, -1, dtype=np.int64)
        slot[big] = np.arange(big.size)
        where = slot[groups]
        sel = where >= 0
        masks = np.zeros((big.size, vocab_size), dtype=bool)
        masks.reshape(-1)[where[sel] * vocab_size + tokens[sel]] = True
        true_counts = np.count_nonzero(masks, axis=1)
        is_dense = true_counts > sparse_limit
        dense_rows, dense_counts = big[is_dense], true_counts[is_dense]
        if dense_rows.size:
            dense_of[dense_rows] = np.arange(dense_rows.size, dtype=np.uint32)
            dense = [pack_masks(masks[is_dense]).reshape(-1)]
            keep = dense_of[groups] == NO_DENSE_ROW
            groups, tokens = groups[keep], tokens[keep]
    keys = unique_sorted(groups * vocab_size + tokens)
    ptr = np.searchsorted(keys // vocab_size, np.arange(n_groups + 1)).astype(np.uint32)
    counts = np.diff(ptr).astype(np.uint32)
    counts[dense_rows] = dense_counts
    ids = [(keys % vocab_size).astype(np.uint32)]
    blob = _blob(vocab_size, counts, dense_of, ptr, int(dense_rows.size), ids, dense)
    blob.setflags(write=False)
    return PackedSets(blob, check=False)


class PackedSets(Sequence[TokenSet]):
    """A table's token sets (one per DFA state) held as the one flat array of :func:`pack_sets`.

    Cached tables are kept in this form: one array per table instead of a
    ``TokenSet`` per state, so thousands of cached tables cost the garbage
    collector nothing to scan, and a state's set is cut out only when a
    grammar reaches it. Equal to any sequence of equal sets.
    """

    __slots__ = ("_blob", "_vocab_size", "_counts", "_dense_of", "_ptr", "_ids", "_dense", "_digests")

    def __init__(self, blob: np.ndarray, *, check: bool = True) -> None:
        vocab_size, n, n_dense, nnz = (int(x) for x in blob[1:5])
        w = words_for(vocab_size)
        at = 5
        counts, dense_of, ptr = blob[at : at + n], blob[at + n : at + 2 * n], blob[at + 2 * n : at + 3 * n + 1]
        at += 3 * n + 1
        if blob.size != at + nnz + n_dense * w or ptr.size != n + 1 or int(ptr[-1]) != nnz:
            raise ValueError("token table: wrong length")
        if check:  # a blob read from disk; one packed here is right by construction
            if nnz and int(blob[at : at + nnz].max()) >= vocab_size or (np.diff(ptr.astype(np.int64)) < 0).any():
                raise ValueError("token table: malformed ids")
            is_dense = dense_of != NO_DENSE_ROW
            if (dense_of[is_dense] >= n_dense).any():
                raise ValueError("token table: bad dense row")
            if (np.diff(ptr.astype(np.int64))[~is_dense] != counts[~is_dense]).any():
                raise ValueError("token table: count mismatch")
        blob = blob.copy() if blob.flags.writeable or not blob.flags.c_contiguous else blob
        blob.setflags(write=False)
        self._blob = blob
        self._vocab_size = vocab_size
        # tuples and a dict of atomic values: the collector stops tracking them
        self._counts = tuple(counts.tolist())
        self._dense_of = tuple(int(d) if d != NO_DENSE_ROW else -1 for d in dense_of.tolist())
        self._ptr = tuple(ptr.tolist())
        self._ids = blob[at : at + nnz].view(np.int32)
        self._dense = blob[at + nnz :].reshape(n_dense, w)
        self._digests: dict[int, bytes] = {}

    @classmethod
    def of(cls, sets: Sequence[TokenSet]) -> "PackedSets":
        if isinstance(sets, PackedSets):
            return sets
        blob = pack_sets(tuple(sets))
        blob.setflags(write=False)  # ours alone: no defensive copy
        return cls(blob, check=False)

    @property
    def blob(self) -> np.ndarray:
        return self._blob

    def __len__(self) -> int:
        return len(self._counts)

    def __getitem__(self, q):  # type: ignore[override]
        if isinstance(q, slice):
            return tuple(self[i] for i in range(*q.indices(len(self))))
        if q < 0:
            q += len(self)
        d = self._dense_of[q]
        if d < 0:
            return TokenSet(self._vocab_size, self._counts[q], ids=self._ids[self._ptr[q] : self._ptr[q + 1]])
        tokens = TokenSet(self._vocab_size, self._counts[q], bits=self._dense[d])
        digest = self._digests.get(d)
        if digest is None:  # a race computes it twice, with one result
            self._digests[d] = tokens.store_key()
        else:
            object.__setattr__(tokens, "_store_key", digest)
        return tokens

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedSets({len(self)} sets, {self._blob.nbytes} bytes)"
