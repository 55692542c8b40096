"""Sets of token ids: sparse sorted id lists or dense ``uint32`` bitsets.

The bitset layout is the one xgrammar and vLLM use: ``W = ceil(V / 32)``
words, token ``t`` is bit ``t % 32`` of word ``t // 32``. A set is stored
sparse iff it holds at most ``sparse_limit`` tokens (the canonical form the
builders here produce), so a 50-key JSON Schema's many tiny rows cost a few
bytes each instead of 16 KB.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

DEFAULT_SPARSE_LIMIT = 256


def words_for(vocab_size: int) -> int:
    """Number of ``uint32`` words of a bitset over ``vocab_size`` tokens."""
    return (vocab_size + 31) // 32


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def pack_masks(masks: np.ndarray) -> np.ndarray:
    """Pack ``bool [n, V]`` into ``uint32 [n, ceil(V/32)]`` bitsets."""
    n, v = masks.shape
    w = words_for(v)
    packed = np.packbits(masks, axis=1, bitorder="little")
    out = np.zeros((n, w * 4), dtype=np.uint8)
    out[:, : packed.shape[1]] = packed
    return out.view("<u4").astype(np.uint32, copy=False)


def unpack_bits(bits: np.ndarray, vocab_size: int) -> np.ndarray:
    """Inverse of :func:`pack_masks` for one row: ``bool [vocab_size]``."""
    raw = np.ascontiguousarray(bits, dtype="<u4").view(np.uint8)
    return np.unpackbits(raw, bitorder="little", count=vocab_size).astype(bool)


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values; sort-based, which beats numpy's hash-based unique here."""
    values = np.sort(np.asarray(values), kind="stable")
    if values.shape[0] > 1:
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


def row_digest(bits: np.ndarray) -> bytes:
    """A 128-bit content digest of a bitset row (rows are addressed by it instead of their 16 KB of bytes)."""
    return hashlib.blake2b(np.ascontiguousarray(bits, dtype=np.uint32).data, digest_size=16).digest()


def ids_to_bits(ids: np.ndarray, vocab_size: int) -> np.ndarray:
    """``uint32 [ceil(V/32)]`` bitset of token ``ids`` (repeats allowed)."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size > 4096:
        mask = np.zeros((1, vocab_size), dtype=bool)
        mask[0, ids] = True
        return pack_masks(mask)[0]
    out = np.zeros(words_for(vocab_size), dtype=np.uint32)
    np.bitwise_or.at(out, ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
    return out


@dataclass(frozen=True, eq=False)
class TokenSet:
    """An immutable set of token ids of a vocabulary of ``vocab_size`` tokens.

    Exactly one of ``ids`` (sorted unique ``int32``) and ``bits``
    (``uint32 [ceil(V/32)]``) is set. Equality and hashing are by content.
    """

    vocab_size: int
    count: int
    ids: np.ndarray | None = None
    bits: np.ndarray | None = None

    # ------------------------------------------------------------ builders

    @classmethod
    def empty(cls, vocab_size: int) -> "TokenSet":
        return cls(vocab_size, 0, ids=_frozen(np.zeros(0, dtype=np.int32)))

    @classmethod
    def from_ids(
        cls,
        ids: Iterable[int] | np.ndarray,
        vocab_size: int,
        sparse_limit: int = DEFAULT_SPARSE_LIMIT,
        *,
        sorted_unique: bool = False,
    ) -> "TokenSet":
        arr = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids), dtype=np.int64)
        if not sorted_unique:
            arr = unique_sorted(arr)
        if arr.size and (arr[0] < 0 or arr[-1] >= vocab_size):
            raise ValueError(f"token ids must lie in [0, {vocab_size})")
        if arr.size <= sparse_limit:
            return cls(vocab_size, int(arr.size), ids=_frozen(arr.astype(np.int32)))
        mask = np.zeros((1, vocab_size), dtype=bool)
        mask[0, arr] = True
        return cls(vocab_size, int(arr.size), bits=_frozen(pack_masks(mask)[0]))

    @classmethod
    def from_mask(
        cls, mask: np.ndarray, sparse_limit: int = DEFAULT_SPARSE_LIMIT
    ) -> "TokenSet":
        mask = np.asarray(mask, dtype=bool)
        count = int(np.count_nonzero(mask))
        if count <= sparse_limit:
            return cls(mask.shape[0], count, ids=_frozen(np.flatnonzero(mask).astype(np.int32)))
        return cls(mask.shape[0], count, bits=_frozen(pack_masks(mask[None, :])[0]))

    @classmethod
    def from_bitset(
        cls, bits: np.ndarray, vocab_size: int, sparse_limit: int = DEFAULT_SPARSE_LIMIT
    ) -> "TokenSet":
        w = words_for(vocab_size)
        bits = np.asarray(bits, dtype=np.uint32)
        bits = bits[:w].copy() if bits.shape[0] >= w else np.pad(bits, (0, w - bits.shape[0]))
        if vocab_size % 32:
            bits[-1] &= np.uint32((1 << (vocab_size % 32)) - 1)  # no token past the vocabulary
        return cls.from_words(bits, vocab_size, sparse_limit)

    # ------------------------------------------------------------- queries

    @property
    def is_dense(self) -> bool:
        return self.bits is not None

    @property
    def words(self) -> int:
        return words_for(self.vocab_size)

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __contains__(self, token: int) -> bool:
        if not 0 <= token < self.vocab_size:
            return False
        if self.bits is not None:
            return bool((int(self.bits[token >> 5]) >> (token & 31)) & 1)
        i = int(np.searchsorted(self.ids, token))
        return i < self.count and int(self.ids[i]) == token

    def store_key(self) -> bytes:
        """What a :class:`RowStore` finds this set by within its form: the id list's bytes, or the bitset's
        digest. Computed once: a cached table's sets are stored by every grammar that uses the table."""
        key = self.__dict__.get("_store_key")
        if key is None:
            key = (np.ascontiguousarray(self.ids, dtype=np.int32).tobytes() if self.ids is not None
                   else row_digest(self.bits))
            object.__setattr__(self, "_store_key", key)
        return key

    def to_ids(self) -> np.ndarray:
        """Sorted ``int32`` token ids."""
        if self.ids is not None:
            return self.ids
        return np.flatnonzero(unpack_bits(self.bits, self.vocab_size)).astype(np.int32)

    def to_mask(self) -> np.ndarray:
        if self.bits is not None:
            return unpack_bits(self.bits, self.vocab_size)
        mask = np.zeros(self.vocab_size, dtype=bool)
        mask[self.ids] = True
        return mask

    def to_bitset(self, words: int | None = None) -> np.ndarray:
        """``uint32 [words]`` bitset (zero-padded beyond ``ceil(V/32)``)."""
        w = self.words if words is None else words
        if w < self.words:
            raise ValueError(f"a bitset over {self.vocab_size} tokens needs {self.words} words")
        out = np.zeros(w, dtype=np.uint32)
        out[: self.words] = self.bits if self.bits is not None else ids_to_bits(self.ids, self.vocab_size)
        return out

    # ---------------------------------------------------------- set algebra

    def union(self, other: "TokenSet", sparse_limit: int = DEFAULT_SPARSE_LIMIT) -> "TokenSet":
        return TokenSet.union_all((self, other), self.vocab_size, sparse_limit)

    def __or__(self, other: "TokenSet") -> "TokenSet":
        return self.union(other)

    @staticmethod
    def union_all(
        sets: Iterable["TokenSet"], vocab_size: int, sparse_limit: int = DEFAULT_SPARSE_LIMIT
    ) -> "TokenSet":
        sets = list(sets)
        if any(s.vocab_size != vocab_size for s in sets):
            raise ValueError("token sets over different vocabulary sizes")
        dense = [s.bits for s in sets if s.bits is not None]
        sparse = [s.ids for s in sets if s.ids is not None and s.count]
        if not dense:
            ids = unique_sorted(np.concatenate(sparse)) if sparse else np.zeros(0, np.int64)
            return TokenSet.from_ids(ids, vocab_size, sparse_limit, sorted_unique=True)
        bits = np.bitwise_or.reduce(np.stack(dense), axis=0)
        if sparse:
            bits = bits | ids_to_bits(np.concatenate(sparse), vocab_size)
        return TokenSet.from_words(bits, vocab_size, sparse_limit)

    @staticmethod
    def from_words(bits: np.ndarray, vocab_size: int, sparse_limit: int = DEFAULT_SPARSE_LIMIT) -> "TokenSet":
        """The set of a ``uint32 [ceil(V/32)]`` bitset with no bits past ``vocab_size``."""
        count = int(np.bitwise_count(bits).sum())
        if count <= sparse_limit:
            return TokenSet.from_mask(unpack_bits(bits, vocab_size), sparse_limit)
        return TokenSet(vocab_size, count, bits=_frozen(bits.astype(np.uint32)))

    # ------------------------------------------------------------ identity

    def content_key(self) -> bytes:
        """Bytes identifying the content regardless of representation."""
        return self.to_bitset().tobytes()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TokenSet):
            return NotImplemented
        if self.vocab_size != other.vocab_size or self.count != other.count:
            return False
        if self.ids is not None and other.ids is not None:
            return bool(np.array_equal(self.ids, other.ids))
        return bool(np.array_equal(self.to_bitset(), other.to_bitset()))

    def __hash__(self) -> int:
        return hash((self.vocab_size, self.count, self.content_key()))

    def __repr__(self) -> str:
        kind = "dense" if self.is_dense else "sparse"
        return f"TokenSet({kind}, count={self.count}, vocab_size={self.vocab_size})"
