"""A trie of a vocabulary's token byte strings, stored as flat numpy arrays.

Non-empty tokens are sorted lexicographically ("rows"). The trie's nodes are
the distinct prefixes, numbered depth by depth (root = node 0 at depth 0) and
in row order within a depth, so:

* a node covers the contiguous rows ``[lo, lo + size)`` it prefixes, and the
  first ``nterm`` of them end exactly at the node;
* a node's children are the contiguous nodes ``[first_child, + n_children)``;
* ``child_key = parent * 256 + byte`` is strictly increasing (searchable).

Walking a DFA over the trie visits each distinct prefix once instead of each
(token, position) pair.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

import numpy as np


class VocabularyLike(Protocol):
    """What the compiler needs from ``kbnf_gpu.vocab.Vocabulary``."""

    @property
    def size(self) -> int: ...

    @property
    def fingerprint(self) -> str: ...

    def token_matrix(self) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass(frozen=True, eq=False)
class TokenTrie:
    """Sorted non-empty tokens of a vocabulary and the trie of their prefixes."""

    vocab_size: int
    fingerprint: str
    # rows: the non-empty tokens in lexicographic order
    row_ids: np.ndarray  # int32 [R]: token id of each row
    row_of_id: np.ndarray  # int32 [V]: inverse of row_ids, -1 for empty tokens
    row_len: np.ndarray  # int32 [R]
    row_start: np.ndarray  # int64 [R]: offset of the row's bytes in ``flat``
    flat: np.ndarray  # uint8 [B]: all rows' bytes, concatenated
    flat_row: np.ndarray  # int32 [B]: row of each flat position
    split_pos: np.ndarray  # int32: flat positions with >= 2 bytes left in their row, by byte
    split_ptr: np.ndarray  # int64 [257]: split_pos[split_ptr[b]:split_ptr[b+1]] hold byte b
    # nodes
    depth_start: np.ndarray  # int64 [max_len + 2]: nodes of depth d are [depth_start[d], depth_start[d+1])
    node_byte: np.ndarray  # uint8 [N]: last byte of the prefix (0 for the root)
    node_depth: np.ndarray  # int32 [N]
    node_lo: np.ndarray  # int32 [N]
    node_size: np.ndarray  # int32 [N]
    node_nterm: np.ndarray  # int32 [N]
    first_child: np.ndarray  # int32 [N]
    n_children: np.ndarray  # int32 [N]
    child_key: np.ndarray  # int64 [N]: parent * 256 + byte (negative for the root)
    node_passes: np.ndarray  # bool [N]: some token continues past the node (size > nterm)
    max_nterm: int  # most rows ending at one node (> 1 only with duplicate tokens)

    @property
    def max_len(self) -> int:
        return self.depth_start.shape[0] - 2

    @property
    def rows(self) -> int:
        return int(self.row_ids.shape[0])

    @property
    def node_count(self) -> int:
        """Trie nodes, the root excluded."""
        return int(self.node_byte.shape[0]) - 1

    def row_bytes(self, row: int) -> bytes:
        s = int(self.row_start[row])
        return self.flat[s : s + int(self.row_len[row])].tobytes()

    @classmethod
    def from_matrix(
        cls, matrix: np.ndarray, lengths: np.ndarray, vocab_size: int, fingerprint: str = ""
    ) -> "TokenTrie":
        """Build from a zero-padded ``uint8 [V, max_len]`` matrix and lengths.

        Without a ``fingerprint`` one is derived from the content (tables are
        memoized on it, so two different tries must never share one).
        """
        lengths = np.asarray(lengths, dtype=np.int32)
        matrix = np.ascontiguousarray(matrix, dtype=np.uint8)
        ids = np.flatnonzero(lengths > 0).astype(np.int32)
        width = int(lengths.max(initial=0))
        row_ids = ids[_lex_order(matrix, lengths, ids, width)]
        row_len = lengths[row_ids]
        row_start = np.zeros(row_ids.shape[0], dtype=np.int64)
        np.cumsum(row_len[:-1], out=row_start[1:])
        flat_row = np.repeat(np.arange(row_ids.shape[0], dtype=np.int32), row_len)
        flat_col = np.arange(flat_row.shape[0], dtype=np.int64) - row_start[flat_row]
        flat = matrix.reshape(-1)[row_ids[flat_row].astype(np.int64) * matrix.shape[1] + flat_col]
        inner = np.flatnonzero(flat_col < row_len[flat_row] - 1).astype(np.int32)
        split_pos = inner[np.argsort(flat[inner], kind="stable")]
        split_ptr = np.zeros(257, dtype=np.int64)
        np.cumsum(np.bincount(flat[inner], minlength=256), out=split_ptr[1:])
        if not fingerprint:
            h = hashlib.sha256(np.array([vocab_size], dtype="<i8").tobytes())
            h.update(row_ids.astype("<i4").tobytes())
            h.update(row_len.astype("<i4").tobytes())
            h.update(flat.tobytes())
            fingerprint = "trie:" + h.hexdigest()
        row_of_id = np.full(vocab_size, -1, dtype=np.int32)
        row_of_id[row_ids] = np.arange(row_ids.shape[0], dtype=np.int32)
        nodes = _build_nodes(flat, row_start, row_len, width)
        rows = (row_ids, row_of_id, row_len, row_start, flat, flat_row, split_pos, split_ptr)
        for arr in (*rows, *nodes):
            arr.setflags(write=False)
        node_passes = nodes[4] > nodes[5]
        node_passes.setflags(write=False)
        max_nterm = int(nodes[5].max(initial=0))
        return cls(vocab_size, fingerprint, *rows, *nodes, node_passes, max_nterm)

    @classmethod
    def from_vocab(cls, vocab: VocabularyLike) -> "TokenTrie":
        matrix, lengths = vocab.token_matrix()
        return cls.from_matrix(matrix, lengths, int(vocab.size), vocab.fingerprint)

    def longer_than(self, min_len: int) -> "TokenTrie":
        """The trie of the tokens longer than ``min_len`` bytes: same ids and vocabulary size, every other
        token empty (a walk over it costs what those few tokens do)."""
        keep = np.flatnonzero(self.row_len > min_len)
        n = self.row_len[keep].astype(np.int64)
        matrix = np.zeros((self.vocab_size, int(n.max(initial=1))), dtype=np.uint8)
        owner = np.repeat(np.arange(keep.shape[0]), n)
        column = np.arange(owner.shape[0], dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        matrix[self.row_ids[keep][owner], column] = self.flat[self.row_start[keep][owner] + column]
        lengths = np.zeros(self.vocab_size, dtype=np.int32)
        lengths[self.row_ids[keep]] = n
        return TokenTrie.from_matrix(matrix, lengths, self.vocab_size, f"{self.fingerprint}/longer-than-{min_len}")

    def path_nodes(self, strings: list[bytes]) -> np.ndarray:
        """Node along each string's path at each depth: int32 [len(strings), max_len].

        Entry ``[i, d - 1]`` is the node spelling ``strings[i][:d]``, or -1 once
        no token has that prefix (or the string is shorter than ``d``).
        """
        n = len(strings)
        out = np.full((n, self.max_len), -1, dtype=np.int32)
        width = min(self.max_len, max((len(s) for s in strings), default=0))
        if n == 0 or width == 0:
            return out
        padded = np.zeros((n, width), dtype=np.int64)
        lens = np.zeros(n, dtype=np.int64)
        for i, s in enumerate(strings):
            s = s[:width]
            padded[i, : len(s)] = np.frombuffer(s, dtype=np.uint8)
            lens[i] = len(s)
        cur = np.zeros(n, dtype=np.int64)
        for d in range(1, width + 1):
            live = np.flatnonzero((cur >= 0) & (lens >= d))
            if live.size == 0:
                break
            key = cur[live] * 256 + padded[live, d - 1]
            pos = np.minimum(np.searchsorted(self.child_key, key), self.child_key.shape[0] - 1)
            found = self.child_key[pos] == key
            cur = np.full(n, -1, dtype=np.int64)
            cur[live[found]] = pos[found]
            out[:, d - 1] = cur
        return out


def _lex_order(matrix: np.ndarray, lengths: np.ndarray, ids: np.ndarray, width: int) -> np.ndarray:
    """Stable lexicographic order of the true byte strings of rows ``ids``.

    Rows compare as zero-padded big-endian 64-bit chunks, then by length
    (padding alone ties ``b"a"`` with ``b"a\\0"``; the shorter first is exactly
    lexicographic order). One numeric argsort on the first chunk does the
    bulk; only groups still tied are refined, chunk by chunk (MSD radix).
    """
    n = ids.shape[0]
    m = max(1, (width + 7) // 8)
    padded = np.zeros((n, m * 8), dtype=np.uint8)
    padded[:, :width] = matrix[ids, :width]
    chunks = padded.view(">u8")
    order = np.argsort(chunks[:, 0], kind="stable")
    rows, where = order, np.arange(n)
    key, group = chunks[order, 0], np.zeros(n, dtype=np.int64)
    for j in range(1, m + 1):
        same = (key[1:] == key[:-1]) & (group[1:] == group[:-1])
        tied = np.zeros(rows.shape[0], dtype=bool)
        tied[1:] |= same
        tied[:-1] |= same
        if not tied.any():
            break
        pos = np.flatnonzero(tied)
        group = np.cumsum(np.concatenate(([True], ~same)))[pos]
        rows, where = rows[pos], where[pos]  # each tied group fills a contiguous run of ``where``
        key = chunks[rows, j] if j < m else lengths[ids[rows]].astype(np.uint64)
        o = np.lexsort((key, group))
        rows, key, group = rows[o], key[o], group[o]
        order[where] = rows
    return order


def _build_nodes(
    flat: np.ndarray, row_start: np.ndarray, row_len: np.ndarray, width: int
) -> tuple[np.ndarray, ...]:
    """Node arrays in TokenTrie field order, from ``depth_start`` to ``child_key``."""
    n_rows = row_len.shape[0]
    byte, parent, lo, size, nterm, counts = [np.zeros(1, np.uint8)], [np.full(1, -1, np.int64)], [np.zeros(1, np.int32)], [np.array([n_rows], np.int32)], [np.zeros(1, np.int32)], [1]
    active = np.arange(n_rows, dtype=np.int32)  # rows with len >= d
    node_prev = np.zeros(n_rows, dtype=np.int64)  # their (global) node at depth d-1
    offset = 1
    for d in range(1, width + 1):
        b = flat[row_start[active] + (d - 1)]
        start = np.ones(active.shape[0], dtype=bool)
        start[1:] = ~(
            (active[1:] == active[:-1] + 1) & (node_prev[1:] == node_prev[:-1]) & (b[1:] == b[:-1])
        )
        local = np.cumsum(start, dtype=np.int64) - 1
        n = int(local[-1]) + 1
        ends_here = row_len[active] == d
        byte.append(b[start])
        parent.append(node_prev[start])
        lo.append(active[start])
        size.append(np.bincount(local, minlength=n).astype(np.int32))
        nterm.append(np.bincount(local[ends_here], minlength=n).astype(np.int32))
        counts.append(n)
        keep = ~ends_here
        active, node_prev = active[keep], local[keep] + offset
        offset += n
    depth_start = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=depth_start[1:])
    node_byte = np.concatenate(byte)
    node_parent = np.concatenate(parent)
    node_depth = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    n_children = np.bincount(node_parent[1:], minlength=node_byte.shape[0]).astype(np.int32)
    first_child = np.ones(node_byte.shape[0], dtype=np.int32)  # children follow in node order
    np.cumsum(n_children[:-1], out=first_child[1:])
    first_child[1:] += 1
    child_key = node_parent * 256 + node_byte
    return (
        depth_start,
        node_byte,
        node_depth,
        np.concatenate(lo),
        np.concatenate(size),
        np.concatenate(nterm),
        first_child,
        n_children,
        child_key,
    )


_CACHE_SIZE = 4
_cache: "OrderedDict[str, TokenTrie]" = OrderedDict()
_lock = threading.Lock()


def trie_for(vocab: VocabularyLike) -> TokenTrie:
    """The trie of ``vocab``, built once per vocabulary fingerprint (small LRU)."""
    key = vocab.fingerprint
    with _lock:
        trie = _cache.get(key)
        if trie is not None:
            _cache.move_to_end(key)
            return trie
    trie = TokenTrie.from_vocab(vocab)
    with _lock:
        _cache[key] = trie
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return trie


def clear_trie_cache() -> None:
    with _lock:
        _cache.clear()
