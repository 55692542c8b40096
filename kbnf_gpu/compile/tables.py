"""Token tables of byte DFAs over a vocabulary (see DESIGN.md, "token tables").

With ``t`` a non-empty token, ``δ*`` the DFA walk (-1 dead) and ``F`` the
accepting states:

* ``INSIDE[a][q] = {t : δ_a*(q, t) != -1}``
* ``CROSS[a,b][q] = {t : ∃ 1 <= k < len(t): δ_a*(q, t[:k]) ∈ F_a and δ_b*(0, t[k:]) != -1}``
* ``HASLEX_b[t, k] = ∃ k < j < len(t): δ_b*(0, t[k:j]) ∈ F_b`` (:class:`LexemeSplits`)
* ``DEEP[a; B][q] = {t : ∃ 1 <= k, k + 1 < len(t): δ_a*(q, t[:k]) ∈ F_a and ∃ b ∈ B: HASLEX_b[t, k]}``

The ``*_sets`` functions give a table for every state of ``a`` at once (one
walk); the ``state_*_set`` ones the set of one state (a grammar reaches few).
``vocab`` may be a vocabulary or an already built :class:`TokenTrie`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

import numpy as np

from ..automata.dfa import expand_ranges
from .dfa_walk import (
    AcceptEvents,
    DFALike,
    WalkResult,
    accept_events,
    first_bytes,
    lexeme_ends,
    lexeme_start_count,
    lexemes_start_at,
    state_accepts,
    state_inside_tokens,
    suffixes_alive,
    takes_first,
    walk,
)
from .packed_sets import sets_from_pairs
from .token_sets import DEFAULT_SPARSE_LIMIT, TokenSet
from .token_trie import TokenTrie, VocabularyLike, trie_for


def as_trie(vocab: VocabularyLike | TokenTrie) -> TokenTrie:
    return vocab if isinstance(vocab, TokenTrie) else trie_for(vocab)


def _n_states(dfa: DFALike) -> int:
    return int(np.asarray(dfa.transitions).shape[0])


def _one_set(tokens: np.ndarray, trie: TokenTrie, sparse_limit: int) -> TokenSet:
    return sets_from_pairs(np.zeros(tokens.shape[0], dtype=np.int64), tokens, 1, trie.vocab_size, sparse_limit)[0]


def _continuing_in(dfa_b: DFALike, rows: np.ndarray, k: np.ndarray, trie: TokenTrie) -> np.ndarray:
    """Token ids of the rows whose rest after byte ``k`` stays alive in ``dfa_b`` from its start (CROSS of
    candidates that complete ``a`` after ``k`` bytes); rows whose next byte ``b`` cannot take are dropped first."""
    sel = np.flatnonzero(takes_first(dfa_b)[trie.flat[trie.row_start[rows] + k]])
    rows, k = rows[sel], k[sel]
    return trie.row_ids[rows[suffixes_alive(trie, dfa_b, rows, k)]]


def _lexeme_after(lexemes: Sequence[Lexemes], rows: np.ndarray, k: np.ndarray, trie: TokenTrie) -> np.ndarray:
    """Token ids of the rows in which a lexeme of one of the DFAs of ``lexemes`` starts at byte ``k`` (DEEP of
    candidates that complete ``a`` after ``k`` bytes)."""
    return trie.row_ids[rows[_lexeme_at(lexemes, trie.row_start[rows] + k, trie)]]


def _lexeme_at(lexemes: Sequence[Lexemes], positions: np.ndarray, trie: TokenTrie) -> np.ndarray:
    """``bool`` per position in ``trie.flat``: does a lexeme of one of the DFAs start there (and end strictly
    inside the token)? Tabulated ones are read off one union of their tables; the others walk from the
    positions asked."""
    tabulated = [x for x in lexemes if isinstance(x, LexemeSplits)]
    found = np.zeros(positions.shape[0], dtype=bool)
    if tabulated:
        has_lexeme = np.zeros(trie.flat.shape[0], dtype=bool)
        for split in tabulated:
            has_lexeme[split.flat_positions(trie)] = True
        found = has_lexeme[positions]
    for lexeme in lexemes:
        if isinstance(lexeme, LexemeWalk):
            open_ = np.flatnonzero(~found)
            found[open_[lexemes_start_at(trie, lexeme.dfa, positions[open_])]] = True
    return found


def inside_sets(
    dfa: DFALike, vocab: VocabularyLike | TokenTrie, sparse_limit: int = DEFAULT_SPARSE_LIMIT
) -> Sequence[TokenSet]:
    """``INSIDE[dfa][q]`` for every state ``q``."""
    trie = as_trie(vocab)
    return inside_of_walk(walk(trie, dfa, inside=True), _n_states(dfa), trie.vocab_size, sparse_limit)


def inside_of_walk(
    result: WalkResult, n_states: int, vocab_size: int, sparse_limit: int = DEFAULT_SPARSE_LIMIT
) -> Sequence[TokenSet]:
    """The INSIDE sets a walk found, one per state."""
    packed = sets_from_pairs(result.inside_states, result.inside_tokens, n_states, vocab_size, sparse_limit)
    if not result.inside_bits:
        return packed
    sets = list(packed)
    for states, bits in result.inside_bits:
        for q, s in zip(states.tolist(), sets_from_bitsets(bits, vocab_size, sparse_limit)):
            sets[q] = s
    return tuple(sets)


def prefix_set(
    strings: Sequence[bytes], vocab: VocabularyLike | TokenTrie, sparse_limit: int = DEFAULT_SPARSE_LIMIT
) -> TokenSet:
    """Tokens that are a prefix of one of ``strings``: ``INSIDE`` of their trie at its start, read off the token
    trie along each string (no walk from the other states)."""
    trie = as_trie(vocab)
    nodes = trie.path_nodes(list(strings))
    nodes = np.unique(nodes[nodes >= 0])
    nodes = nodes[trie.node_nterm[nodes] > 0]
    _, rows = expand_ranges(trie.node_lo[nodes], trie.node_nterm[nodes])
    tokens = trie.row_ids[rows]
    return _one_set(tokens, trie, sparse_limit)


def _completions(strings: Sequence[bytes], trie: TokenTrie, min_rest: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, k)`` of every token that starts with one of ``strings`` (``k`` its length) and has at least
    ``min_rest`` bytes after it."""
    strings = list(strings)
    nodes = trie.path_nodes(strings)
    lengths = np.array([len(x) for x in strings], dtype=np.int64)
    fits = np.flatnonzero((lengths >= 1) & (lengths <= nodes.shape[1]))
    ends = nodes[fits, lengths[fits] - 1]
    fits, ends = fits[ends >= 0], ends[ends >= 0].astype(np.int64)
    nterm = trie.node_nterm[ends]
    owner, rows = expand_ranges(trie.node_lo[ends] + nterm, trie.node_size[ends] - nterm)
    k = lengths[fits][owner]
    if min_rest > 1:
        ok = trie.row_len[rows] >= k + min_rest
        rows, k = rows[ok], k[ok]
    return rows, k


def rest_cross_set(
    strings: Sequence[bytes], dfa_b: DFALike, vocab: VocabularyLike | TokenTrie,
    sparse_limit: int = DEFAULT_SPARSE_LIMIT,
) -> TokenSet:
    """``CROSS[a, b]`` at the start of ``a``, the trie of ``strings``: tokens that complete one of them and
    continue (non-empty) inside ``b``."""
    trie = as_trie(vocab)
    return _one_set(_continuing_in(dfa_b, *_completions(strings, trie, 1), trie), trie, sparse_limit)


def rest_deep_set(
    strings: Sequence[bytes], lexemes: Sequence["Lexemes"], vocab: VocabularyLike | TokenTrie,
    sparse_limit: int = DEFAULT_SPARSE_LIMIT,
) -> TokenSet:
    """``DEEP[a; B]`` at the start of ``a``, the trie of ``strings``, B given by its :data:`Lexemes`."""
    trie = as_trie(vocab)
    return _one_set(_lexeme_after(lexemes, *_completions(strings, trie, 2), trie), trie, sparse_limit)


def sets_from_bitsets(
    bits: np.ndarray, vocab_size: int, sparse_limit: int = DEFAULT_SPARSE_LIMIT
) -> tuple[TokenSet, ...]:
    """One canonical :class:`TokenSet` per row of ``uint32 [n, ceil(V / 32)]`` bitsets
    (bits past ``vocab_size`` clear)."""
    counts = np.bitwise_count(bits).sum(axis=1)
    sparse = np.flatnonzero(counts <= sparse_limit)
    # ids of all the sparse rows at once, from their non-zero words only
    row, word = np.nonzero(bits[sparse])
    values = bits[sparse[row], word].astype("<u4")
    k, b = np.nonzero(np.unpackbits(values.view(np.uint8).reshape(-1, 4), axis=1, bitorder="little"))
    ids_all = (word[k] * 32 + b).astype(np.int32)
    bounds = np.zeros(sparse.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts[sparse], out=bounds[1:])
    slot = np.full(bits.shape[0], -1, dtype=np.int64)
    slot[sparse] = np.arange(sparse.shape[0])
    out = []
    for i, c in enumerate(counts.tolist()):
        if slot[i] < 0:
            row_bits = bits[i].astype(np.uint32)  # a copy: the set must not hold the whole block
            row_bits.setflags(write=False)
            out.append(TokenSet(vocab_size, c, bits=row_bits))
        else:
            ids = ids_all[bounds[slot[i]] : bounds[slot[i] + 1]]
            ids.setflags(write=False)
            out.append(TokenSet(vocab_size, c, ids=ids))
    return tuple(out)


def cross_sets(
    dfa_a: DFALike,
    dfa_b: DFALike,
    vocab: VocabularyLike | TokenTrie,
    sparse_limit: int = DEFAULT_SPARSE_LIMIT,
) -> Sequence[TokenSet]:
    """``CROSS[a, b][q]`` for every state ``q`` of ``dfa_a``."""
    trie = as_trie(vocab)
    states, tokens = _cross_pairs(accept_events(trie, dfa_a), dfa_b, trie)
    return sets_from_pairs(states, tokens, _n_states(dfa_a), trie.vocab_size, sparse_limit)


def _cross_pairs(events: AcceptEvents, dfa_b: DFALike, trie: TokenTrie) -> tuple[np.ndarray, np.ndarray]:
    """(state, token) of CROSS from ``a``'s accept events."""
    ev, rows, ptr = events.suffix_candidates(trie)
    first = first_bytes(dfa_b)
    _, sel = expand_ranges(ptr[first], ptr[first + 1] - ptr[first])
    ev, rows = ev[sel], rows[sel]
    ok = suffixes_alive(trie, dfa_b, rows, events.depth[ev].astype(np.int64))
    owner, states = events.expand_states(ev[ok])
    return states, trie.row_ids[rows[ok][owner]]


@dataclass(frozen=True, eq=False)
class LexemeSplits:
    """The true entries of ``HASLEX_b``: pairs (token id, k), sorted."""

    vocab_size: int
    token_ids: np.ndarray  # int32 [n]
    offsets: np.ndarray  # int32 [n]
    _positions: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def count(self) -> int:
        return int(self.token_ids.shape[0])

    @property
    def empty(self) -> bool:
        return self.count == 0

    def flat_positions(self, trie: TokenTrie) -> np.ndarray:
        """Positions in ``trie.flat`` of the pairs (memoized per trie)."""
        pos = self._positions.get(trie.fingerprint)
        if pos is None:
            pos = trie.row_start[trie.row_of_id[self.token_ids]] + self.offsets
            pos.setflags(write=False)
            self._positions[trie.fingerprint] = pos
        return pos

    def keys(self, stride: int) -> np.ndarray:
        """``token * stride + k`` (int64, sorted); ``stride`` must exceed every ``k``."""
        return self.token_ids.astype(np.int64) * stride + self.offsets

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LexemeSplits):
            return NotImplemented
        return (
            self.vocab_size == other.vocab_size
            and np.array_equal(self.token_ids, other.token_ids)
            and np.array_equal(self.offsets, other.offsets)
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class LexemeWalk:
    """``HASLEX_b`` of a DFA whose lexemes may start at most positions of the vocabulary (a string body with
    length bounds or a pattern): not tabulated, since the table would walk from every one of those positions,
    while a DEEP table asks only where its own terminal ends. Each DEEP table walks from the positions it asks."""

    dfa: DFALike
    empty = False  # unknown until asked


Lexemes = Union[LexemeSplits, LexemeWalk]  # HASLEX_b, as DEEP tables read it
SPLITS_MAX_STARTS = 1 << 17  # a follower whose lexemes may start at more positions is a LexemeWalk


def tabulates_lexemes(dfa_b: DFALike, vocab: VocabularyLike | TokenTrie) -> bool:
    """Is ``HASLEX_b`` kept as a :class:`LexemeSplits` table (shared by every DEEP table with follower ``b``)
    rather than walked per DEEP table (:class:`LexemeWalk`)? Yes unless its lexemes may start at more than
    :data:`SPLITS_MAX_STARTS` positions of the vocabulary (the table's cost: ~80 ms at 600,000 on Llama-3)."""
    return lexeme_start_count(as_trie(vocab), dfa_b) <= SPLITS_MAX_STARTS


def lexeme_splits(dfa_b: DFALike, vocab: VocabularyLike | TokenTrie) -> LexemeSplits:
    """``HASLEX_b``: where a non-empty lexeme of ``dfa_b`` starts and ends strictly inside a token."""
    trie = as_trie(vocab)
    rows, ks, positions = lexeme_ends(trie, dfa_b)
    stride = trie.max_len + 1
    key = np.sort(trie.row_ids[rows].astype(np.int64) * stride + ks)
    token_ids = (key // stride).astype(np.int32)
    offsets = (key % stride).astype(np.int32)
    for arr in (token_ids, offsets, positions):
        arr.setflags(write=False)
    splits = LexemeSplits(trie.vocab_size, token_ids, offsets)
    splits._positions[trie.fingerprint] = positions
    return splits


def deep_sets(
    dfa_a: DFALike,
    lexemes: Sequence[Lexemes],
    vocab: VocabularyLike | TokenTrie,
    sparse_limit: int = DEFAULT_SPARSE_LIMIT,
) -> Sequence[TokenSet]:
    """``DEEP[a; B][q]`` for every state ``q`` of ``dfa_a``, B given by its :data:`Lexemes`."""
    trie = as_trie(vocab)
    n = _n_states(dfa_a)
    if all(x.empty for x in lexemes):
        return tuple(TokenSet.empty(trie.vocab_size) for _ in range(n))
    states, tokens = _deep_pairs(accept_events(trie, dfa_a), lexemes, trie)
    return sets_from_pairs(states, tokens, n, trie.vocab_size, sparse_limit)


def _deep_pairs(
    events: AcceptEvents, lexemes: Sequence[Lexemes], trie: TokenTrie
) -> tuple[np.ndarray, np.ndarray]:
    """(state, token) of DEEP from ``a``'s accept events."""
    ev, rows = events.candidates(trie, min_rest=2)
    ok = _lexeme_at(lexemes, trie.row_start[rows] + events.depth[ev], trie)
    owner, states = events.expand_states(ev[ok])
    return states, trie.row_ids[rows[ok][owner]]


# ------------------------------------------------------------ one DFA state


def state_inside_set(
    dfa: DFALike, q: int, vocab: VocabularyLike | TokenTrie, sparse_limit: int = DEFAULT_SPARSE_LIMIT
) -> TokenSet:
    """``INSIDE[dfa][q]`` alone (equal to ``inside_sets(...)[q]``)."""
    trie = as_trie(vocab)
    tokens = state_inside_tokens(trie, dfa, q)
    return _one_set(tokens, trie, sparse_limit)


def state_cross_set(
    dfa_a: DFALike, q: int, dfa_b: DFALike, vocab: VocabularyLike | TokenTrie,
    sparse_limit: int = DEFAULT_SPARSE_LIMIT,
) -> TokenSet:
    """``CROSS[a, b][q]`` alone (equal to ``cross_sets(...)[q]``)."""
    trie = as_trie(vocab)
    return _one_set(_continuing_in(dfa_b, *state_accepts(trie, dfa_a, q), trie), trie, sparse_limit)


def state_deep_set(
    dfa_a: DFALike, q: int, lexemes: Sequence[Lexemes], vocab: VocabularyLike | TokenTrie,
    sparse_limit: int = DEFAULT_SPARSE_LIMIT,
) -> TokenSet:
    """``DEEP[a; B][q]`` alone (equal to ``deep_sets(...)[q]``)."""
    trie = as_trie(vocab)
    if all(x.empty for x in lexemes):
        return TokenSet.empty(trie.vocab_size)
    rows, k = state_accepts(trie, dfa_a, q)
    longer = trie.row_len[rows] >= k + 2  # DEEP needs a whole lexeme and more after the split
    return _one_set(_lexeme_after(lexemes, rows[longer], k[longer], trie), trie, sparse_limit)
