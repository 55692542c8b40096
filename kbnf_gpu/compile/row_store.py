"""Deduplicated storage of a compiled grammar's token sets.

Dense sets become rows of one ``uint32 [R, W]`` matrix, sparse ones slices of
a CSR id list; identical sets are stored once. A set's *reference* is an
``int``: ``r >= 0`` is dense row ``r``, ``r < 0`` is sparse list ``-1 - r``.
Reference ``EMPTY_REF`` (-1) is always the empty set.

The store grows while a grammar runs (tables are computed on first use): the
dense matrix has spare capacity and is reallocated by doubling; a reader keeps
whatever matrix it got, whose first rows never change. Adding is thread-safe.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping

import numpy as np

from .token_sets import DEFAULT_SPARSE_LIMIT, TokenSet, row_digest, words_for

EMPTY_REF = -1


def is_dense_ref(ref: int) -> bool:
    return ref >= 0


class RowStore:
    """Collects :class:`TokenSet` s; canonical form is decided by ``sparse_limit``."""

    def __init__(self, vocab_size: int, sparse_limit: int = DEFAULT_SPARSE_LIMIT) -> None:
        self.vocab_size = vocab_size
        self.sparse_limit = sparse_limit
        self._dense: list[np.ndarray] = []
        self._dense_index: dict[bytes, int] = {}  # content digest -> row
        self._keys: list[bytes] = []
        self._matrix = np.zeros((0, words_for(vocab_size)), dtype=np.uint32)
        self._sparse: list[np.ndarray] = []
        self._sparse_index: dict[bytes, int] = {}
        self._lock = threading.Lock()
        self._add_sparse(np.zeros(0, dtype=np.int32))

    # ------------------------------------------------------------ building

    def add(self, tokens: TokenSet) -> int:
        """Store ``tokens`` (once per distinct content) and return its reference."""
        if tokens.vocab_size != self.vocab_size:
            raise ValueError(
                f"token set over {tokens.vocab_size} tokens added to a store over {self.vocab_size}"
            )
        if tokens.count <= self.sparse_limit:
            return -1 - self._add_sparse(tokens.to_ids(), tokens.store_key() if tokens.ids is not None else None)
        if tokens.bits is not None:
            return self._add_dense(tokens.bits, tokens.store_key())
        return self._add_dense(tokens.to_bitset())

    def _add_sparse(self, ids: np.ndarray, key: bytes | None = None) -> int:
        ids = np.ascontiguousarray(ids, dtype=np.int32)
        key = ids.tobytes() if key is None else key
        index = self._sparse_index.get(key)
        if index is None:
            with self._lock:
                index = self._sparse_index.get(key)
                if index is None:
                    ids.setflags(write=False)
                    self._sparse.append(ids)
                    index = self._sparse_index[key] = len(self._sparse) - 1
        return index

    def _add_dense(self, bits: np.ndarray, key: bytes | None = None) -> int:
        bits = np.ascontiguousarray(bits, dtype=np.uint32)
        key = row_digest(bits) if key is None else key
        index = self._dense_index.get(key)
        if index is None:
            with self._lock:
                index = self._dense_index.get(key)
                if index is None:
                    index = len(self._dense)
                    matrix = self._matrix
                    if index == matrix.shape[0]:
                        grown = np.zeros((max(8, 2 * index), matrix.shape[1]), dtype=np.uint32)
                        grown[:index] = matrix[:index]
                        matrix = grown
                    matrix[index] = bits
                    # publish in the order readers (no lock) look: the matrix, then the row count, then the index
                    self._matrix = matrix
                    self._keys.append(key)
                    self._dense.append(matrix[index])
                    self._dense_index[key] = index
        return index

    def row_key(self, ref: int) -> bytes:
        """Content digest of dense row ``ref``: equal rows of any store have equal keys (the device pool's address)."""
        return self._keys[ref]

    # ------------------------------------------------------------- queries

    @property
    def dense_count(self) -> int:
        return len(self._dense)

    @property
    def sparse_count(self) -> int:
        return len(self._sparse)

    @property
    def words(self) -> int:
        return words_for(self.vocab_size)

    def get(self, ref: int) -> TokenSet:
        if ref >= 0:
            bits = self._dense[ref]
            return TokenSet(self.vocab_size, int(np.bitwise_count(bits).sum()), bits=bits)
        ids = self._sparse[-1 - ref]
        return TokenSet(self.vocab_size, int(ids.size), ids=ids)

    def dense_rows(self) -> np.ndarray:
        """``uint32 [R, W]``: every dense row so far, in reference order (a read-only view; later rows may follow)."""
        count = len(self._dense)  # read before the matrix: a matrix read later holds at least ``count`` rows
        view = self._matrix[:count]
        view.setflags(write=False)
        return view

    def nbytes(self) -> int:
        return 4 * (self.words * len(self._dense) + sum(s.size for s in self._sparse))

    # ------------------------------------------------------- (de)serialize

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain numpy arrays (no objects) that :meth:`from_arrays` rebuilds the store from."""
        lengths = np.array([s.size for s in self._sparse], dtype=np.int64)
        ptr = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        return {
            "meta": np.array([self.vocab_size, self.sparse_limit], dtype=np.int64),
            "dense_rows": self.dense_rows(),
            "sparse_ptr": ptr,
            "sparse_ids": np.concatenate(self._sparse).astype(np.int32),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "RowStore":
        meta = np.asarray(arrays["meta"])
        dense = np.array(arrays["dense_rows"], dtype=np.uint32)
        ptr = np.asarray(arrays["sparse_ptr"], dtype=np.int64)
        ids = np.array(arrays["sparse_ids"], dtype=np.int32)
        vocab_size, sparse_limit = int(meta[0]), int(meta[1])
        w = words_for(vocab_size)
        if dense.ndim != 2 or dense.shape[1] != w:
            raise ValueError(f"dense rows must have shape [R, {w}], got {dense.shape}")
        if ptr.ndim != 1 or ptr.size < 1 or ptr[0] != 0 or ptr[-1] != ids.size or (np.diff(ptr) < 0).any():
            raise ValueError("malformed sparse row pointers")
        if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
            raise ValueError("sparse token id out of range")
        ids.setflags(write=False)
        store = cls(vocab_size, sparse_limit)
        store._matrix = dense  # a private copy (np.array above): later rows are appended after it
        store._sparse.clear()
        store._sparse_index.clear()
        for i in range(ptr.size - 1):
            s = ids[ptr[i] : ptr[i + 1]]
            store._sparse_index.setdefault(s.tobytes(), i)
            store._sparse.append(s)
        if not store._sparse or store._sparse[0].size:
            raise ValueError("sparse list 0 must be the empty set")
        for r in range(dense.shape[0]):
            row = dense[r]
            key = row_digest(row)
            store._dense_index.setdefault(key, r)
            store._keys.append(key)
            store._dense.append(row)
        return store
