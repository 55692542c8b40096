"""Reuse of token tables across grammars: an in-memory LRU plus an optional directory.

Tables depend only on a DFA (or a few), the vocabulary and the sparse limit,
so a cache keyed by ``sha256`` of their fingerprints lets every grammar that
shares a terminal (JSON strings, numbers, whitespace, punctuation) skip the
vocabulary walk. A disk entry is one ``.npy`` file holding a flat ``uint32``
array, read with ``allow_pickle=False``: a cache directory never makes us run
foreign code, and a corrupt entry is recomputed.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TypeVar, Union

import numpy as np

from ..budget import current_budget
from .dfa_walk import DFALike, has_heavy_state, long_tokens, short_twins, walk_width
from .tables import (
    Lexemes,
    LexemeSplits,
    LexemeWalk,
    as_trie,
    cross_sets,
    deep_sets,
    inside_sets,
    lexeme_splits,
    state_cross_set,
    state_deep_set,
    state_inside_set,
    tabulates_lexemes,
)
from .packed_sets import SETS_MAGIC, PackedSets, pack_sets
from .token_sets import DEFAULT_SPARSE_LIMIT, TokenSet
from .token_trie import TokenTrie, VocabularyLike

FORMAT = "kbnf_gpu.tables/1"
STATE_READS = 16  # states of one table computed one by one in a process before its whole table is instead
# ... if its whole walk is at most this many walks of the trie (``walk_width``; on Llama-3 a width of 9 walks
# whole in ~35 ms, the counted-string chunk's 19 in 80-110 ms, 30 in 150-330 ms, ``.{10,60}``'s 89 in a second):
# the read that turns a table whole waits for it, and a longer stall is worse than going on state by state
# (where ``short_twins`` spare most of a counter's walks)
WHOLE_MAX_WIDTH = 10.0
# A state read one by one whose twin on every string of this many bytes and one more (``short_twins``: a
# counter's position far from its bound) takes the twin's set for the tokens no longer than that and walks only
# the longer ones (on Llama-3, 12,145 of 128,256 tokens are longer than 10 bytes, 1,566 longer than 16). The
# rungs (ascending): the longest whose twin is another state serves; the first is ``short_token_bytes``, the
# parser's DEEP checks' twins
TWIN_TOKEN_BYTES = (10, 16)

Table = Union["PackedSets", LexemeSplits]  # what the cache holds
T = TypeVar("T", "PackedSets", LexemeSplits)


@lru_cache(maxsize=8192)  # asked at every lookup of a table (tens per first mask of a small schema)
def table_key(kind: str, vocab_fingerprint: str, *dfa_fingerprints: str, sparse_limit: int = 0) -> str:
    """sha256 hex naming one table."""
    h = hashlib.sha256()
    for part in (FORMAT, kind, str(sparse_limit), vocab_fingerprint, *dfa_fingerprints):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def table_nbytes(table: Table) -> int:
    """The array bytes of a table (what bounds the cache)."""
    if isinstance(table, LexemeSplits):
        return 3 * (table.token_ids.nbytes + table.offsets.nbytes)  # with its memoized positions
    return table.blob.nbytes


class TableCache:
    """Token tables by content key, bounded in entries and bytes (LRU). Thread-safe; a lost race computes twice."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        max_entries: int = 4096,
        sparse_limit: int = DEFAULT_SPARSE_LIMIT,
        max_bytes: int = 256 << 20,
    ) -> None:
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._bytes = 0
        self.sparse_limit = sparse_limit
        self._mem: OrderedDict[str | tuple, Table] = OrderedDict()
        self._whole_keys: dict[tuple, str] = {}  # (kind, fingerprints) -> the whole table's key
        self._state_reads: dict[tuple, int] = {}  # (kind, fingerprints) -> its states computed one by one
        self._whole_pays: dict[tuple[str, str], bool] = {}  # (vocabulary, DFA) -> may its tables turn whole (bounded
        # with ``_whole_keys``)
        self._lock = threading.Lock()
        self.hits = 0
        self.disk_hits = 0
        self.misses = 0

    # ---------------------------------------------------------------- tables

    def inside(self, dfa: DFALike, vocab: VocabularyLike | TokenTrie) -> "PackedSets":
        return self._get(
            "inside",
            vocab,
            (dfa,),
            lambda trie: inside_sets(dfa, trie, self.sparse_limit),
        )

    def cross(
        self, dfa_a: DFALike, dfa_b: DFALike, vocab: VocabularyLike | TokenTrie
    ) -> "PackedSets":
        return self._get(
            "cross",
            vocab,
            (dfa_a, dfa_b),
            lambda trie: cross_sets(dfa_a, dfa_b, trie, self.sparse_limit),
        )

    def splits(self, dfa_b: DFALike, vocab: VocabularyLike | TokenTrie) -> LexemeSplits:
        return self._get("splits", vocab, (dfa_b,), lambda trie: lexeme_splits(dfa_b, trie))

    def lexemes(self, dfa_b: DFALike, vocab: VocabularyLike | TokenTrie) -> Lexemes:
        """``HASLEX_b`` as DEEP tables read it: the cached splits table, or a walk per DEEP table for a DFA
        whose lexemes may start almost anywhere (:func:`~.tables.tabulates_lexemes`)."""
        return self.splits(dfa_b, vocab) if tabulates_lexemes(dfa_b, vocab) else LexemeWalk(dfa_b)

    def deep(
        self, dfa_a: DFALike, followers: Sequence[DFALike], vocab: VocabularyLike | TokenTrie
    ) -> "PackedSets":
        """``DEEP[a; B]`` with B = ``followers`` (their order does not matter)."""
        followers = sorted({b.fingerprint: b for b in followers}.items())
        return self._get(
            "deep",
            vocab,
            (dfa_a, *(b for _, b in followers)),
            lambda trie: deep_sets(
                dfa_a, [self.lexemes(b, trie) for _, b in followers], trie, self.sparse_limit
            ),
        )

    # ------------------------------------------------------ one DFA state
    # One state's set is kept in memory only: it is cheap to recompute, and a file per state would litter the
    # directory. A table whose states this process has computed ``STATE_READS`` times one by one is computed
    # whole (a DFA that recurs across grammars: one walk of every state then costs less than going on), so
    # state-by-state costs at most that many single walks more than the whole table would have. Not so a DFA
    # without a state most tokens enter (``[a-z]{200}``): its whole walk is threads from every state, what
    # every state's own walk costs together, so its states stay one by one; nor one whose whole walk would stall
    # the step that triggers it for long (``WHOLE_MAX_WIDTH``: a pattern counting far, ``.{10,60}``).

    def inside_state(self, dfa: DFALike, q: int, vocab: VocabularyLike | TokenTrie) -> TokenSet:
        """``inside(dfa, vocab)[q]``, computed for ``q`` alone (or read off the whole table)."""
        return self._one_state("inside", (dfa,), q, vocab, lambda: self.inside(dfa, vocab),
                               lambda trie, q: state_inside_set(dfa, q, trie, self.sparse_limit))

    def cross_state(self, dfa_a: DFALike, q: int, dfa_b: DFALike, vocab: VocabularyLike | TokenTrie) -> TokenSet:
        """``cross(dfa_a, dfa_b, vocab)[q]``, computed for ``q`` alone (or read off the whole table)."""
        return self._one_state("cross", (dfa_a, dfa_b), q, vocab, lambda: self.cross(dfa_a, dfa_b, vocab),
                               lambda trie, q: state_cross_set(dfa_a, q, dfa_b, trie, self.sparse_limit))

    def deep_state(
        self, dfa_a: DFALike, q: int, followers: Sequence[DFALike], vocab: VocabularyLike | TokenTrie
    ) -> TokenSet:
        """``deep(dfa_a, followers, vocab)[q]``, computed for ``q`` alone (or read off the whole table)."""
        followers = [b for _, b in sorted({b.fingerprint: b for b in followers}.items())]
        return self._one_state(
            "deep", (dfa_a, *followers), q, vocab, lambda: self.deep(dfa_a, followers, vocab),
            lambda trie, q: state_deep_set(dfa_a, q, [self.lexemes(b, trie) for b in followers], trie,
                                           self.sparse_limit))

    def _one_state(
        self, kind: str, dfas: tuple[DFALike, ...], q: int, vocab: VocabularyLike | TokenTrie,
        whole: Callable[[], "PackedSets"], one: Callable[[TokenTrie, int], TokenSet],
    ) -> TokenSet:
        table_id = (kind, vocab.fingerprint, *(d.fingerprint for d in dfas))
        with self._lock:
            hit = self._mem.get((q, *table_id))
            whole_key = self._whole_keys.get(table_id)
            if whole_key is None:
                if len(self._whole_keys) >= self.max_entries:
                    self._whole_keys.clear()
                    self._state_reads.clear()
                    self._whole_pays.clear()
                whole_key = self._whole_keys[table_id] = table_key(*table_id, sparse_limit=self.sparse_limit)
            table = self._mem.get(whole_key)
            reads = self._state_reads.get(table_id, 0)
            if hit is None and table is None:
                self._state_reads[table_id] = reads + 1
        if table is not None:
            return table[q]
        if hit is None and reads >= STATE_READS and self._turns_whole(dfas[0], vocab):
            return whole()[q]
        twin, rung = q, 0
        if hit is None:
            for rung, twins in reversed(tuple(zip(TWIN_TOKEN_BYTES, self._twin_ladder(dfas[0])))):
                twin = int(twins[q])
                if twin != q:
                    break
        if twin == q:
            return self._get(kind, vocab, dfas, lambda trie: (one(trie, q),), persist=False, state=q)[0]

        def from_twin(trie: TokenTrie) -> tuple[TokenSet]:
            shared = self._one_state(kind, dfas, twin, vocab, whole, one)
            longer, long_bits = long_tokens(trie, rung)
            bits = shared.to_bitset() & ~long_bits | one(longer, q).to_bitset()
            return (TokenSet.from_words(bits, trie.vocab_size, self.sparse_limit),)

        return self._get(kind, vocab, dfas, from_twin, persist=False, state=q)[0]

    @property
    def short_token_bytes(self) -> int:
        return TWIN_TOKEN_BYTES[0]

    def short_twins(self, dfa: DFALike) -> np.ndarray:
        """Each state's short twin: the least state alike on every token of at most ``short_token_bytes``
        bytes and on one byte more, which decides whether such a token ends alive (``dfa_walk.short_twins``)."""
        return self._twin_ladder(dfa)[0]

    def _twin_ladder(self, dfa: DFALike) -> tuple[np.ndarray, ...]:
        """The twins of every rung of ``TWIN_TOKEN_BYTES``, from one refinement."""
        return short_twins(dfa, tuple(n + 1 for n in TWIN_TOKEN_BYTES))

    def _turns_whole(self, dfa: DFALike, vocab: VocabularyLike | TokenTrie) -> bool:
        """May ``dfa``'s tables, once read state by state ``STATE_READS`` times, be computed whole: it has a state
        most tokens enter, and its whole walk is short (``WHOLE_MAX_WIDTH``)."""
        key = (vocab.fingerprint, dfa.fingerprint)
        found = self._whole_pays.get(key)
        if found is None:
            trie = as_trie(vocab)
            found = has_heavy_state(trie, dfa) and walk_width(trie, dfa) <= WHOLE_MAX_WIDTH
            with self._lock:
                self._whole_pays[key] = found
        return found

    # --------------------------------------------------------------- storage

    def clear(self) -> None:
        with self._lock:
            self._mem.clear()
            self._bytes = 0
            self._state_reads.clear()
            self._whole_pays.clear()

    def __len__(self) -> int:
        return len(self._mem)

    def _get(
        self,
        kind: str,
        vocab: VocabularyLike | TokenTrie,
        dfas: tuple[DFALike, ...],
        compute: Callable[[TokenTrie], T],
        persist: bool = True,
        state: int | None = None,
    ) -> T:
        if persist:
            key = table_key(kind, vocab.fingerprint, *(d.fingerprint for d in dfas), sparse_limit=self.sparse_limit)
        else:  # memory only (one ``state``'s set): the tuple itself is the key, no digest per lookup
            key = (state, kind, vocab.fingerprint, *(d.fingerprint for d in dfas))
        with self._lock:
            table = self._mem.get(key)
            if table is not None:
                self._mem.move_to_end(key)
                self.hits += 1
                return table  # type: ignore[return-value]
        table = self._load(key, kind) if persist else None
        if table is not None:
            with self._lock:
                self.disk_hits += 1
        else:
            current_budget().check_time("computing token tables")  # a compilation's first mask computes some
            table = compute(as_trie(vocab))
            if not isinstance(table, LexemeSplits):
                table = PackedSets.of(table)
            with self._lock:
                self.misses += 1
            if persist:
                self._store(key, kind, table)
        with self._lock:
            old = self._mem.get(key)
            self._bytes += table_nbytes(table) - (0 if old is None else table_nbytes(old))
            self._mem[key] = table
            self._mem.move_to_end(key)
            while len(self._mem) > 1 and (len(self._mem) > self.max_entries or self._bytes > self.max_bytes):
                _, evicted = self._mem.popitem(last=False)
                self._bytes -= table_nbytes(evicted)
        return table  # type: ignore[return-value]

    @property
    def nbytes(self) -> int:
        """Bytes held by the tables in memory (bounded by ``max_bytes``)."""
        return self._bytes

    def _path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / f"{key}.npy"

    def _store(self, key: str, kind: str, table: Table) -> None:
        path = self._path(key)
        if path is None:
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.save(f, encode_table(table), allow_pickle=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _load(self, key: str, kind: str) -> Table | None:
        path = self._path(key)
        if path is None or not path.exists():
            return None
        try:
            table = decode_table(np.load(path, allow_pickle=False))
        except (OSError, ValueError, EOFError):
            return None  # unreadable or foreign entry: recompute and overwrite
        if isinstance(table, LexemeSplits) != (kind == "splits"):
            return None
        return table


_SPLITS_MAGIC = 0x4B4C5331  # "KLS1"


def encode_table(table: Table | Sequence[TokenSet]) -> np.ndarray:
    """One flat ``uint32`` array holding a table (a tuple of token sets or lexeme splits).

    One array per file keeps a disk hit to a single small ``.npy`` read.
    Sets: ``[magic, V, n, n_dense, nnz, counts[n], dense_of[n], ptr[n+1], ids[nnz], dense[n_dense*W]]``;
    splits: ``[magic, V, n, token_ids[n], offsets[n]]``.
    """
    if isinstance(table, PackedSets):
        return table.blob
    if isinstance(table, LexemeSplits):
        head = np.array([_SPLITS_MAGIC, table.vocab_size, table.count], dtype=np.uint32)
        return np.concatenate([head, table.token_ids.astype(np.uint32), table.offsets.astype(np.uint32)])
    return pack_sets(table)


def decode_table(blob: np.ndarray) -> Table:
    """Inverse of :func:`encode_table` (sets come back as :class:`PackedSets`); ``ValueError`` on malformed
    input."""
    blob = np.asarray(blob)
    if blob.dtype != np.uint32 or blob.ndim != 1 or blob.size < 3:
        raise ValueError("not a token table")
    magic, vocab_size, n = (int(x) for x in blob[:3])
    if magic == _SPLITS_MAGIC:
        if blob.size != 3 + 2 * n:
            raise ValueError("lexeme splits: wrong length")
        token_ids = blob[3 : 3 + n].astype(np.int32)
        offsets = blob[3 + n :].astype(np.int32)
        if n and int(token_ids.max()) >= vocab_size:
            raise ValueError("lexeme splits: token id out of range")
        token_ids.setflags(write=False)
        offsets.setflags(write=False)
        return LexemeSplits(vocab_size, token_ids, offsets)
    if magic != SETS_MAGIC or blob.size < 5:
        raise ValueError("not a token table")
    return PackedSets(blob)
