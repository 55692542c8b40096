"""Token tables (INSIDE / CROSS / HASLEX / DEEP) against their brute-force definitions."""
from __future__ import annotations

import ast
import hashlib
import itertools
import pathlib
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbnf_gpu.automata.build import literal_trie
from kbnf_gpu.compile import dfa_walk
from kbnf_gpu.compile.row_store import EMPTY_REF, RowStore
from kbnf_gpu.compile.table_cache import PackedSets, TableCache, decode_table, encode_table, table_key
from kbnf_gpu.compile.tables import (
    LexemeSplits,
    LexemeWalk,
    cross_sets,
    deep_sets,
    inside_of_walk,
    inside_sets,
    lexeme_splits,
    prefix_set,
    rest_cross_set,
    rest_deep_set,
    state_cross_set,
    state_deep_set,
    state_inside_set,
)
from kbnf_gpu.compile.token_sets import TokenSet, words_for
from kbnf_gpu.compile.token_trie import TokenTrie
from kbnf_gpu.vocab import Vocabulary

# ------------------------------------------------------------------ helpers


@dataclass(frozen=True, eq=False)
class ArrayDFA:
    """A ByteDFA look-alike built straight from arrays (start state 0)."""

    transitions: np.ndarray
    accepting: np.ndarray
    fingerprint: str = field(init=False)

    def __post_init__(self) -> None:
        t = np.ascontiguousarray(self.transitions, dtype=np.int32)
        a = np.ascontiguousarray(self.accepting, dtype=bool)
        object.__setattr__(self, "transitions", t)
        object.__setattr__(self, "accepting", a)
        h = hashlib.sha256(t.tobytes() + a.tobytes() + str(t.shape).encode())
        object.__setattr__(self, "fingerprint", h.hexdigest())


def make_dfa(n: int, edges: dict[tuple[int, int], int], accepting) -> ArrayDFA:
    trans = np.full((n, 256), -1, dtype=np.int32)
    for (s, b), t in edges.items():
        trans[s, b] = t
    acc = np.zeros(n, dtype=bool)
    acc[list(accepting)] = True
    return ArrayDFA(trans, acc)


def literal_dfa(lit: bytes, accepting=None) -> ArrayDFA:
    n = len(lit) + 1
    edges = {(i, b): i + 1 for i, b in enumerate(lit)}
    return make_dfa(n, edges, [n - 1] if accepting is None else accepting)


def shuffled(dfa: ArrayDFA, perm: np.ndarray) -> ArrayDFA:
    """Same language, states renamed by ``perm`` (perm[0] must stay 0)."""
    inv = np.argsort(perm)
    t = dfa.transitions[inv]
    t = np.where(t >= 0, perm[np.maximum(t, 0)], -1)
    return ArrayDFA(t, dfa.accepting[inv])


def vocab_of(tokens: list[bytes]) -> Vocabulary:
    return Vocabulary({i: t for i, t in enumerate(tokens)})


def run(dfa: ArrayDFA, q: int, data: bytes) -> int:
    for b in data:
        q = int(dfa.transitions[q, b])
        if q < 0:
            return -1
    return q


def accepts(dfa: ArrayDFA, q: int) -> bool:
    return q >= 0 and bool(dfa.accepting[q])


def brute_inside(dfa, tokens, q):
    return {i for i, t in enumerate(tokens) if t and run(dfa, q, t) >= 0}


def brute_cross(a, b, tokens, q):
    return {
        i
        for i, t in enumerate(tokens)
        if any(accepts(a, run(a, q, t[:k])) and run(b, 0, t[k:]) >= 0 for k in range(1, len(t)))
    }


def brute_haslex(b, t, k) -> bool:
    return any(accepts(b, run(b, 0, t[k:j])) for j in range(k + 1, len(t)))


def brute_deep(a, bs, tokens, q):
    return {
        i
        for i, t in enumerate(tokens)
        if any(
            accepts(a, run(a, q, t[:k])) and any(brute_haslex(b, t, k) for b in bs)
            for k in range(1, len(t) - 1)
        )
    }


def ids(s: TokenSet) -> set[int]:
    return set(s.to_ids().tolist())


# ----------------------------------------------------------- strategies

ALPHABET = [0x00, 0x22, 0x61, 0x62, 0x7B, 0xC3, 0xA9, 0xFF]  # NUL " a b { and é's bytes


@st.composite
def dfas(draw, max_states: int = 6) -> ArrayDFA:
    n = draw(st.integers(1, max_states))
    edges = {}
    for s in range(n):
        for b in ALPHABET:
            if draw(st.booleans()):
                edges[(s, b)] = draw(st.integers(0, n - 1))
    accepting = draw(st.sets(st.integers(0, n - 1)))
    return make_dfa(n, edges, accepting)


token_bytes = st.one_of(
    st.binary(max_size=0),
    st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=6).map(bytes),
    st.lists(st.sampled_from(ALPHABET), min_size=7, max_size=40).map(bytes),
    st.text(alphabet="a\"{é€😀 ", min_size=1, max_size=5).map(str.encode),
)
vocabs = st.lists(token_bytes, min_size=1, max_size=70)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------- trie


@FAST
@given(vocabs)
def test_trie_matches_sorted_tokens(tokens):
    vocab = vocab_of(tokens)
    trie = TokenTrie.from_vocab(vocab)
    rows = [trie.row_bytes(r) for r in range(trie.rows)]
    assert rows == sorted(t for t in tokens if t)
    assert [tokens[i] for i in trie.row_ids.tolist()] == rows
    prefixes = {t[:d] for t in tokens for d in range(1, len(t) + 1)}
    assert trie.node_count == len(prefixes)
    assert trie.node_count == int(trie.depth_start[-1]) - 1
    for n in range(1, trie.node_count + 1):
        d = int(trie.node_depth[n])
        assert trie.depth_start[d] <= n < trie.depth_start[d + 1]
        block = rows[trie.node_lo[n] : trie.node_lo[n] + trie.node_size[n]]
        p = block[0][:d]
        assert len(p) == d and p[-1] == trie.node_byte[n]
        assert all(r.startswith(p) for r in block)
        assert sum(r.startswith(p) for r in rows) == len(block)
        assert sum(r == p for r in rows) == trie.node_nterm[n]
        kids = range(trie.first_child[n], trie.first_child[n] + trie.n_children[n])
        assert sorted({r[: d + 1] for r in block if len(r) > d}) == [
            rows[trie.node_lo[c]][: d + 1] for c in kids
        ]
        assert (trie.path_nodes([p])[0, :d] >= 0).all() and trie.path_nodes([p])[0, d - 1] == n
    assert (np.diff(trie.child_key) > 0).all()


# ------------------------------------------------------- tables vs brute


@FAST
@given(dfas(), vocabs)
def test_inside_matches_definition(dfa, tokens):
    vocab = vocab_of(tokens)
    sets = inside_sets(dfa, vocab, sparse_limit=3)
    assert len(sets) == dfa.transitions.shape[0]
    for q, s in enumerate(sets):
        assert ids(s) == brute_inside(dfa, tokens, q)
        assert s.is_dense == (s.count > 3)


@FAST
@given(dfas(), dfas(), vocabs)
def test_cross_matches_definition(a, b, tokens):
    vocab = vocab_of(tokens)
    sets = cross_sets(a, b, vocab, sparse_limit=3)
    for q, s in enumerate(sets):
        assert ids(s) == brute_cross(a, b, tokens, q)


@FAST
@given(dfas(), vocabs)
def test_lexeme_splits_match_definition(b, tokens):
    splits = lexeme_splits(b, vocab_of(tokens))
    got = set(zip(splits.token_ids.tolist(), splits.offsets.tolist()))
    want = {(i, k) for i, t in enumerate(tokens) for k in range(len(t)) if brute_haslex(b, t, k)}
    assert got == want
    keys = splits.keys(1000)
    assert (np.diff(keys) > 0).all()
    # asked position by position (what a DEEP table does for a follower it does not tabulate)
    trie = TokenTrie.from_vocab(vocab_of(tokens))
    positions = np.arange(trie.flat.shape[0], dtype=np.int64)[::-1]  # any order
    rows = trie.flat_row[positions]
    asked = {(int(trie.row_ids[r]), int(p - trie.row_start[r]))
             for r, p, hit in zip(rows, positions, dfa_walk.lexemes_start_at(trie, b, positions)) if hit}
    assert asked == want
    assert dfa_walk.lexeme_start_count(trie, b) >= len({p for p in splits.flat_positions(trie).tolist()})


def lexeme_variants(bs: list, vocab) -> list[list]:
    """The followers' HASLEX as tables, as walks per DEEP table, and mixed."""
    return [[lexeme_splits(b, vocab) for b in bs], [LexemeWalk(b) for b in bs],
            [LexemeWalk(b) if i % 2 else lexeme_splits(b, vocab) for i, b in enumerate(bs)]]


@FAST
@given(dfas(), st.lists(dfas(max_states=4), max_size=2), vocabs)
def test_deep_matches_definition(a, bs, tokens):
    vocab = vocab_of(tokens)
    for lexemes in lexeme_variants(bs, vocab):
        sets = deep_sets(a, lexemes, vocab, sparse_limit=3)
        for q, s in enumerate(sets):
            assert ids(s) == brute_deep(a, bs, tokens, q)


@FAST
@given(dfas(), dfas(), vocabs)
def test_one_state_tables_match_definition_and_the_whole_tables(a, b, tokens):
    """The tables of one state of a large DFA (``state_*_set``, its own walk) equal the definitions and the
    whole tables' sets for that state, in the same canonical form."""
    vocab = vocab_of(tokens)
    splits = [lexeme_splits(b, vocab)]
    whole = (inside_sets(a, vocab, 3), cross_sets(a, b, vocab, 3), deep_sets(a, splits, vocab, 3))
    for heavy_share in (0.0, 2.0):  # every state walked by byte columns, then every state down the trie
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(dfa_walk, "_HEAVY_SHARE", heavy_share)
            dfa_walk.clear_walk_cache()  # one state's accept positions are memoized
            for q in range(a.transitions.shape[0]):
                one = (state_inside_set(a, q, vocab, 3), state_cross_set(a, q, b, vocab, 3),
                       state_deep_set(a, q, splits, vocab, 3))
                assert [ids(s) for s in one] == [brute_inside(a, tokens, q), brute_cross(a, b, tokens, q),
                                                 brute_deep(a, [b], tokens, q)]
                assert [(ids(s), s.is_dense) for s in one] == [(ids(t[q]), t[q].is_dense) for t in whole]
                walked = state_deep_set(a, q, [LexemeWalk(b)], vocab, 3)
                assert (ids(walked), walked.is_dense) == (ids(whole[2][q]), whole[2][q].is_dense)


@FAST
@given(st.lists(token_bytes, min_size=1, max_size=12), dfas(), vocabs)
def test_tables_at_the_start_of_a_literal_trie_match_definition(strings, b, tokens):
    """``prefix_set``/``rest_cross_set``/``rest_deep_set`` (read off the token trie along the strings) equal
    INSIDE/CROSS/DEEP of the strings' trie DFA at its start state, by the definitions."""
    vocab = vocab_of(tokens)
    strings = sorted(set(strings))
    trie_dfa = literal_trie(strings)
    assert ids(prefix_set(strings, vocab, sparse_limit=3)) == brute_inside(trie_dfa, tokens, 0)
    assert ids(rest_cross_set(strings, b, vocab, sparse_limit=3)) == brute_cross(trie_dfa, b, tokens, 0)
    for lexemes in lexeme_variants([b], vocab):
        assert ids(rest_deep_set(strings, lexemes, vocab, sparse_limit=3)) == brute_deep(trie_dfa, [b], tokens, 0)


@st.composite
def chains(draw) -> tuple[ArrayDFA, bytes]:
    lit = bytes(draw(st.lists(st.sampled_from(ALPHABET), max_size=12)))
    n = len(lit) + 1
    accepting = draw(st.sets(st.integers(0, n - 1))) | {n - 1}
    perm = np.concatenate([[0], 1 + np.array(draw(st.permutations(range(n - 1))), dtype=int)])
    return shuffled(literal_dfa(lit, sorted(accepting)), perm.astype(np.int64)), lit


@FAST
@given(chains(), dfas(), vocabs)
def test_literal_fast_path_equals_generic(chain, b, tokens):
    dfa, lit = chain
    trie = TokenTrie.from_vocab(vocab_of(tokens))
    detected = dfa_walk.chain_literal(dfa)
    assert detected is not None and detected[0] == lit
    fast = dfa_walk.walk_chain(trie, dfa, detected)
    slow = dfa_walk.walk_all_states(trie, dfa)
    n = dfa.transitions.shape[0]
    V = trie.vocab_size
    assert inside_of_walk(fast, n, V) == inside_of_walk(slow, n, V)
    for name in ("depth", "node", "ptr", "states"):
        assert np.array_equal(getattr(fast.events, name), getattr(slow.events, name))
    # and the public functions (which take the fast path) agree with brute force
    for q, s in enumerate(cross_sets(dfa, b, trie)):
        assert ids(s) == brute_cross(dfa, b, tokens, q)
    for q, s in enumerate(inside_sets(dfa, trie)):
        assert ids(s) == brute_inside(dfa, tokens, q)


def test_chain_detection_rejects_non_chains():
    assert dfa_walk.chain_literal(make_dfa(2, {(0, 97): 1, (0, 98): 1}, [1])) is None
    assert dfa_walk.chain_literal(make_dfa(2, {(0, 97): 1, (1, 97): 1}, [1])) is None  # a+
    assert dfa_walk.chain_literal(make_dfa(3, {(0, 97): 1}, [1])) is None  # unreachable state
    assert dfa_walk.chain_literal(literal_dfa(b""))[0] == b""
    assert dfa_walk.chain_literal(literal_dfa(b"true"))[0] == b"true"


def test_edge_vocabularies():
    a = literal_dfa(b"ab")
    only_specials = Vocabulary({0: b"", 1: None}, size=33)
    for s in [*inside_sets(a, only_specials), *cross_sets(a, a, only_specials)]:
        assert s.count == 0 and s.vocab_size == 33
    long = [b"ab" * 200, b"a", b"ab"]  # a token far longer than the DFA
    sets = inside_sets(make_dfa(2, {(0, 97): 1, (1, 98): 0}, [0, 1]), vocab_of(long))
    assert ids(sets[0]) == {0, 1, 2} and ids(sets[1]) == set()


REGEXES = [
    r'"([^"\\\x00-\x1f]|\\["\\/bfnrtu])*"',
    r"-?(0|[1-9][0-9]*)(\.[0-9]+)?",
    r"[ \t\n]*",
    r"é+|[^a]",
    r"(ab|a)*b?",
    r"true|tru",
]


@pytest.fixture(scope="module")
def regex_dfas():
    from kbnf_gpu import ir
    from kbnf_gpu.automata import regexpr_to_dfa

    return [regexpr_to_dfa(ir.Pattern(p)) for p in REGEXES]


REAL_TOKENS = st.text(alphabet='ab"\\ \t\n-.019eé{}\x01', min_size=0, max_size=8).map(str.encode)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(REAL_TOKENS, min_size=1, max_size=60), st.data())
def test_real_regex_dfas_match_definition(regex_dfas, tokens, data):
    vocab = vocab_of(tokens)
    a = data.draw(st.sampled_from(regex_dfas))
    b = data.draw(st.sampled_from(regex_dfas))
    for q, s in enumerate(inside_sets(a, vocab)):
        assert ids(s) == brute_inside(a, tokens, q)
    for q, s in enumerate(cross_sets(a, b, vocab)):
        assert ids(s) == brute_cross(a, b, tokens, q)
    for q, s in enumerate(deep_sets(a, [lexeme_splits(b, vocab)], vocab)):
        assert ids(s) == brute_deep(a, [b], tokens, q)


def test_empty_language_dfa():
    from kbnf_gpu.automata.dfa import empty_dfa

    vocab = vocab_of([b"a", b"ab", b"b"])
    empty, lit = empty_dfa(), literal_dfa(b"a")
    assert inside_sets(empty, vocab) == () and cross_sets(empty, lit, vocab) == ()
    assert all(not s for s in cross_sets(lit, empty, vocab))
    assert lexeme_splits(empty, vocab).count == 0
    assert all(not s for s in deep_sets(lit, [lexeme_splits(empty, vocab)], vocab))


# --------------------------------------------------------------- TokenSet


@FAST
@given(st.integers(1, 200).flatmap(lambda v: st.tuples(st.just(v), st.sets(st.integers(0, v - 1)))))
def test_token_set_representations(case):
    V, members = case
    a = TokenSet.from_ids(members, V, sparse_limit=5)
    assert a.is_dense == (len(members) > 5)
    assert ids(a) == members and a.count == len(members)
    bits = a.to_bitset()
    assert bits.dtype == np.uint32 and bits.shape == (words_for(V),)
    for t in members:
        assert (int(bits[t // 32]) >> (t % 32)) & 1
    assert TokenSet.from_bitset(bits, V, sparse_limit=5) == a
    assert TokenSet.from_ids(members, V, sparse_limit=10_000) == a  # equality ignores the form
    assert hash(TokenSet.from_ids(members, V, sparse_limit=0)) == hash(a)
    assert a.to_bitset(words_for(V) + 2)[-2:].tolist() == [0, 0]
    assert all(t in a for t in members) and (V not in a)
    other = TokenSet.from_ids(range(0, V, 3), V, sparse_limit=5)
    assert ids(a | other) == members | set(range(0, V, 3))


# --------------------------------------------------------------- RowStore


def test_row_store_dedup_and_round_trip():
    V = 100
    store = RowStore(V, sparse_limit=4)
    dense1 = TokenSet.from_ids(range(50), V, sparse_limit=4)
    dense2 = TokenSet.from_ids(range(1, 51), V, sparse_limit=4)
    small = TokenSet.from_ids([3, 7], V, sparse_limit=4)
    refs = [store.add(s) for s in
            [dense1, small, dense2, TokenSet.from_ids(range(50), V, sparse_limit=1000), small, TokenSet.empty(V)]]
    assert refs[0] == refs[3] >= 0 and refs[2] >= 0 and refs[0] != refs[2]
    assert refs[1] == refs[4] < 0 and refs[5] == EMPTY_REF
    assert store.dense_count == 2 and store.sparse_count == 2
    arrays = store.to_arrays()
    assert all(isinstance(v, np.ndarray) and v.dtype != object for v in arrays.values())
    assert arrays["dense_rows"].shape == (2, words_for(V))
    back = RowStore.from_arrays(arrays)
    for ref, s in zip(refs, [dense1, small, dense2, dense1, small, TokenSet.empty(V)]):
        assert back.get(ref) == s == store.get(ref)
    assert back.add(dense2) == refs[2] and back.add(small) == refs[1]
    assert back.dense_count == 2 and back.sparse_count == 2
    with pytest.raises(ValueError):
        RowStore.from_arrays({**arrays, "sparse_ids": np.array([3, 700], dtype=np.int32)})


# -------------------------------------------------------------- TableCache


def string_and_brace():
    """A small vocabulary, a two-state string-like DFA and the literal ``{``."""
    tokens = [b"a", b"ab", b"\"a", b"b\"", b"{\"", b"", b"\"\"{"]
    return vocab_of(tokens), make_dfa(2, {(0, 0x22): 1, (1, 97): 1, (1, 98): 1}, [1]), literal_dfa(b"{")


def test_table_cache_memory_and_disk(tmp_path):
    vocab, a, b = string_and_brace()
    cache = TableCache(tmp_path / "tables", sparse_limit=1)
    first = (cache.inside(a, vocab), cache.cross(a, b, vocab), cache.splits(b, vocab), cache.deep(a, [b], vocab))
    assert cache.misses == 4 and cache.hits == 1  # deep reuses the splits
    again = (cache.inside(a, vocab), cache.cross(a, b, vocab), cache.splits(b, vocab), cache.deep(a, [b, b], vocab))
    assert all(x is y for x, y in zip(first, again))
    assert first[0] == inside_sets(a, vocab, sparse_limit=1)
    files = list((tmp_path / "tables").glob("*.npy"))
    assert len(files) == 4
    for f in files:  # every entry loads without pickle
        assert np.load(f, allow_pickle=False).dtype == np.uint32
    cold = TableCache(tmp_path / "tables", sparse_limit=1)
    loaded = (cold.inside(a, vocab), cold.cross(a, b, vocab), cold.splits(b, vocab), cold.deep(a, [b], vocab))
    assert cold.disk_hits == 4 and cold.misses == 0
    assert loaded == first
    other_limit = TableCache(tmp_path / "tables", sparse_limit=256)
    other_limit.inside(a, vocab)
    assert other_limit.misses == 1
    for i, f in enumerate(files):  # a corrupt entry is recomputed, not trusted
        f.write_bytes(b"garbage" if i % 2 else f.read_bytes()[:-4])
    broken = TableCache(tmp_path / "tables", sparse_limit=1)
    assert broken.inside(a, vocab) == first[0] and broken.cross(a, b, vocab) == first[1]
    assert broken.splits(b, vocab) == first[2] and broken.deep(a, [b], vocab) == first[3]
    assert broken.misses == 4 and broken.disk_hits == 0


def test_table_cache_tabulates_lexemes_only_of_followers_that_start_at_few_positions(monkeypatch):
    """``TableCache.lexemes``: a splits table (cached, shared by the DEEP tables) for a follower whose first
    bytes start few positions of the vocabulary; a walk per DEEP table beyond ``SPLITS_MAX_STARTS``. The DEEP
    table is the same either way."""
    from kbnf_gpu.compile import tables

    vocab, a, b = string_and_brace()
    trie = TokenTrie.from_vocab(vocab)
    starts = dfa_walk.lexeme_start_count(trie, a)  # a '"' with 1 byte or more after it: b'"a', b'""{' twice
    assert starts == 3
    cache = TableCache(None, sparse_limit=1)
    monkeypatch.setattr(tables, "SPLITS_MAX_STARTS", starts)
    assert isinstance(cache.lexemes(a, trie), LexemeSplits)
    tabulated = cache.deep(b, [a], trie)
    monkeypatch.setattr(tables, "SPLITS_MAX_STARTS", starts - 1)
    walked = TableCache(None, sparse_limit=1)
    assert isinstance(walked.lexemes(a, trie), LexemeWalk) and walked.misses == 0
    assert walked.deep(b, [a], trie) == tabulated and walked.misses == 1  # the DEEP table alone


def test_table_cache_keeps_one_state_sets_in_memory_only(tmp_path):
    vocab, a, b = string_and_brace()
    cache = TableCache(tmp_path / "tables", sparse_limit=1)
    for q in range(2):
        one = (cache.inside_state(a, q, vocab), cache.cross_state(a, q, b, vocab),
               cache.deep_state(a, q, [b, b], vocab))
        assert one == (inside_sets(a, vocab, 1)[q], cross_sets(a, b, vocab, 1)[q],
                       deep_sets(a, [lexeme_splits(b, vocab)], vocab, 1)[q])
        hits = cache.hits
        assert cache.inside_state(a, q, vocab) == one[0] and cache.deep_state(a, q, [b], vocab) == one[2]
        assert cache.hits == hits + 2  # found in memory (``[b]`` and ``[b, b]`` name one table)
    assert [f.name for f in (tmp_path / "tables").glob("*.npy")] == [
        f"{table_key('splits', vocab.fingerprint, b.fingerprint, sparse_limit=1)}.npy"]  # the shared splits only


def test_table_cache_computes_a_table_whole_after_enough_single_states(monkeypatch):
    """Ski rental: after ``STATE_READS`` states computed one by one, the whole table is computed once and
    every later state (of any grammar) is read off it; all sets equal the whole table's."""
    from kbnf_gpu.compile import table_cache

    monkeypatch.setattr(table_cache, "STATE_READS", 3)
    vocab = vocab_of([b"a", b"ab", b"ba", b"abab", b"b", b"aab"])
    counter = make_dfa(8, {**{(i, 97): i + 1 for i in range(7)}, **{(i, 98): i + 1 for i in range(7)}}, [7])
    cache = TableCache(sparse_limit=1)
    whole = inside_sets(counter, vocab, 1)
    assert [cache.inside_state(counter, q, vocab) for q in (0, 1, 2)] == list(whole[:3])
    assert len(cache) == 3  # three single states, no whole table yet
    assert cache.inside_state(counter, 1, vocab) == whole[1] and len(cache) == 3  # a state read again: no walk
    assert cache.inside_state(counter, 5, vocab) == whole[5]
    assert len(cache) == 4  # the fourth state computed took the whole table
    misses = cache.misses
    assert [cache.inside_state(counter, q, vocab) for q in range(8)] == list(whole)
    assert cache.misses == misses


def test_table_cache_keeps_states_of_a_dfa_without_heavy_states_one_by_one(monkeypatch):
    """No ski rental for a DFA without a state most tokens enter: its whole walk is threads from every state,
    the cost of all its states' own walks, so however many states are read, none is read off a whole table."""
    from kbnf_gpu.compile import table_cache

    monkeypatch.setattr(table_cache, "STATE_READS", 3)
    monkeypatch.setattr(dfa_walk, "_HEAVY_SHARE", 2.0)  # no state is heavy
    vocab = vocab_of([b"a", b"ab", b"ba", b"abab", b"b", b"aab"])
    counter = make_dfa(8, {**{(i, 97): i + 1 for i in range(7)}, **{(i, 98): i + 1 for i in range(7)}}, [7])
    cache = TableCache(sparse_limit=1)
    assert [cache.inside_state(counter, q, vocab) for q in range(8)] == list(inside_sets(counter, vocab, 1))
    assert len(cache) == 8 and cache.misses == 8  # eight single states, never the whole table


def test_table_cache_keeps_states_of_a_wide_dfa_one_by_one(monkeypatch):
    """No ski rental either for a DFA whose whole walk is long (``walk_width`` above ``WHOLE_MAX_WIDTH``: a
    pattern that counts far): the read that turned it whole would stall its step for the whole walk. The same
    DFA under a higher cap turns whole as before."""
    from kbnf_gpu.compile import table_cache

    monkeypatch.setattr(table_cache, "STATE_READS", 3)
    vocab = vocab_of([b"a", b"ab", b"ba", b"abab", b"b", b"aab"])
    counter = make_dfa(8, {**{(i, 97): i + 1 for i in range(7)}, **{(i, 98): i + 1 for i in range(7)}}, [7])
    width = dfa_walk.walk_width(TokenTrie.from_vocab(vocab), counter)
    whole = list(inside_sets(counter, vocab, 1))
    monkeypatch.setattr(table_cache, "WHOLE_MAX_WIDTH", width - 0.5)
    cache = TableCache(sparse_limit=1)
    assert [cache.inside_state(counter, q, vocab) for q in range(8)] == whole
    assert len(cache) == 8 and cache.misses == 8  # eight single states, never the whole table
    monkeypatch.setattr(table_cache, "WHOLE_MAX_WIDTH", width)
    cache = TableCache(sparse_limit=1)
    assert [cache.inside_state(counter, q, vocab) for q in range(8)] == whole
    assert cache.misses == 4  # three single states, then the whole table


@st.composite
def counters(draw) -> ArrayDFA:
    """``X{lo,n}``-like DFAs: position ``i`` steps to ``i + 1`` on one byte class, accepting from ``lo`` on,
    plus a few random edges (positions far from the bound act alike on short strings)."""
    n = draw(st.integers(2, 12))
    step = draw(st.sets(st.sampled_from(ALPHABET), min_size=1))
    edges = {(i, byte): i + 1 for i in range(n - 1) for byte in step}
    for _ in range(draw(st.integers(0, 2))):
        edges[(draw(st.integers(0, n - 1)), draw(st.sampled_from(ALPHABET)))] = draw(st.integers(0, n - 1))
    return make_dfa(n, edges, set(range(draw(st.integers(0, n - 1)), n)))


@FAST
@given(st.one_of(dfas(max_states=8), counters()), st.lists(st.integers(0, 3), min_size=1, max_size=3))
def test_short_twins_act_alike_on_every_short_string(dfa, horizons):
    """For each horizon, two states share a twin iff on every string of at most that many bytes both die after
    the same prefixes and accept after the same ones; the twin is the least such state (several horizons from
    one refinement)."""
    horizons = tuple(sorted(horizons))
    n = dfa.transitions.shape[0]

    def behaviour(q: int, horizon: int) -> tuple:
        out = []
        for data in (bytes(p) for k in range(horizon + 1) for p in itertools.product(ALPHABET, repeat=k)):
            s = q
            for byte in data:
                s = int(dfa.transitions[s, byte]) if s >= 0 else -1
            out.append(-1 if s < 0 else int(dfa.accepting[s]))
        return tuple(out)

    ladder = dfa_walk.short_twins(dfa, horizons)
    assert len(ladder) == len(horizons)
    for horizon, twins in zip(horizons, ladder):
        seen = {behaviour(q, horizon) for q in range(n)}
        first = {}
        for q in range(n):
            first.setdefault(behaviour(q, horizon), q)
        assert len(set(twins.tolist())) == len(seen)
        assert twins.tolist() == [first[behaviour(q, horizon)] for q in range(n)]


@FAST
@given(st.one_of(dfas(max_states=8), counters()), dfas(), vocabs, st.lists(st.integers(0, 3), min_size=1, max_size=2),
       st.booleans(), st.sampled_from([-1, 3, 10**9]))
def test_one_state_sets_from_short_twins_are_the_whole_tables(a, b, tokens, rungs, backwards, few):
    """A state read one by one whose twin acts alike on every token of at most a rung of ``TWIN_TOKEN_BYTES``
    bytes (and one byte more) takes the twin's set for those tokens and walks only the longer ones: every
    state's sets equal the whole tables' (canonical form included), whichever state of a pair is read first;
    and so whether a walk's few last rows or threads go on as arrays (``few`` -1), in Python at once (10**9),
    or in Python from the point where three are left."""
    from kbnf_gpu.compile import table_cache

    vocab = vocab_of(tokens)
    whole = (inside_sets(a, vocab, 3), cross_sets(a, b, vocab, 3), deep_sets(a, [lexeme_splits(b, vocab)], vocab, 3))
    n = a.transitions.shape[0]
    rungs = tuple(sorted(set(rungs)))
    dfa_walk.clear_walk_cache()  # the one-state walks of an earlier example (another ``few``) are memoized
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dfa_walk, "_FEW_ROWS", few)
        patch.setattr(dfa_walk, "_FEW_THREADS", few)
        patch.setattr(table_cache, "TWIN_TOKEN_BYTES", rungs)
        patch.setattr(table_cache, "STATE_READS", 1 << 30)  # never the whole table
        cache = TableCache(sparse_limit=3)
        for q in (reversed(range(n)) if backwards else range(n)):
            got = (cache.inside_state(a, q, vocab), cache.cross_state(a, q, b, vocab),
                   cache.deep_state(a, q, [b], vocab))
            assert [(ids(s), s.is_dense) for s in got] == [(ids(t[q]), t[q].is_dense) for t in whole]


@FAST
@given(dfas(), vocabs)
def test_walk_width_counts_the_tokens_each_state_can_start_on(dfa, tokens):
    """Per state, the tokens whose first two bytes (one, for a one-byte token) the DFA takes from there;
    summed over the states, in vocabularies."""
    trie = TokenTrie.from_vocab(vocab_of(tokens))
    rows = [t for t in tokens if t]
    want = sum(sum(1 for t in rows if run(dfa, q, t[:2]) >= 0) for q in range(dfa.transitions.shape[0]))
    assert dfa_walk.walk_width(trie, dfa) == pytest.approx(want / len(rows) if rows else 0.0)


def test_encode_decode_round_trip():
    sets = (TokenSet.from_ids([1, 2], 40), TokenSet.from_ids(range(30), 40, sparse_limit=3), TokenSet.empty(40))
    blob = encode_table(sets)
    assert blob.dtype == np.uint32 and blob.ndim == 1
    assert decode_table(blob) == sets
    splits = LexemeSplits(40, np.array([1, 1, 5], np.int32), np.array([0, 2, 1], np.int32))
    assert decode_table(encode_table(splits)) == splits
    for bad in (blob[:-1], blob.astype(np.int64), np.concatenate([blob, blob[:1]])):
        with pytest.raises(ValueError):
            decode_table(bad)


@FAST
@given(st.integers(1, 300).flatmap(lambda v: st.tuples(st.just(v), st.lists(st.sets(st.integers(0, v - 1)), max_size=6),
                                                         st.sampled_from([0, 3, 256]))))
def test_packed_sets_are_the_sets_they_pack(case):
    """The cache's form of a table: each state's set cut out of one array, equal to the sets packed, with
    nothing the garbage collector has to scan."""
    import gc

    V, members, limit = case
    sets = tuple(TokenSet.from_ids(m, V, sparse_limit=limit) for m in members)
    packed = PackedSets.of(sets)
    assert packed == sets and len(packed) == len(sets) and packed[:2] == sets[:2]
    assert not sets or packed[-1] == sets[-1]
    assert PackedSets.of(packed) is packed and decode_table(encode_table(packed)) == sets
    for q, s in enumerate(sets):
        assert ids(packed[q]) == members[q] and packed[q].is_dense == s.is_dense
        assert packed[q].store_key() == s.store_key()  # a dense row's digest, kept by the table
    gc.collect()
    assert not any(gc.is_tracked(x) for x in gc.get_referents(packed) if x is not PackedSets)
    store = RowStore(V, sparse_limit=limit)
    assert [store.get(store.add(s)) for s in packed] == list(sets)


def test_no_pickle_in_compile_package():
    root = pathlib.Path(__file__).resolve().parents[1] / "kbnf_gpu" / "compile"
    mine = ["token_trie.py", "token_sets.py", "dfa_walk.py", "tables.py", "row_store.py", "table_cache.py"]
    for name in mine:
        tree = ast.parse((root / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any("pickle" in n or n == "marshal" for n in names), name
            if isinstance(node, ast.keyword) and node.arg == "allow_pickle":
                assert isinstance(node.value, ast.Constant) and node.value.value is False, name


# ------------------------------------------------------------- Llama-3


@pytest.fixture(scope="session")
def llama3():
    """Llama-3's tokens (b"" for specials), vocabulary and trie, built once per session."""
    vocab = Vocabulary.from_name("llama3")
    matrix, lengths = vocab.token_matrix()
    tokens = [matrix[i, :n].tobytes() for i, n in enumerate(lengths.tolist())]
    return tokens, vocab, TokenTrie.from_vocab(vocab)


def _json_string_dfa() -> ArrayDFA:
    """``"([^"\\\\\\x00-\\x1f]|\\\\["\\\\/bfnrtu])*"`` over bytes (any byte >= 0x20 inside)."""
    trans = np.full((4, 256), -1, dtype=np.int32)
    trans[0, 0x22] = 1
    trans[1, 0x20:] = 1
    trans[1, 0x22] = 3
    trans[1, 0x5C] = 2
    for c in b'"\\/bfnrtu':
        trans[2, c] = 1
    return ArrayDFA(trans, np.array([False, False, False, True]))


@pytest.mark.slow
def test_llama3_tables_match_brute_force_sample(llama3):
    tokens, vocab, trie = llama3
    assert trie.rows == sum(1 for t in tokens if t) and trie.vocab_size == len(tokens) == vocab.size
    assert trie.max_len == max(map(len, tokens))
    assert tokens.index(b" the") >= 0 and tokens.index(b'",') >= 0
    s = _json_string_dfa()
    comma = literal_dfa(b",")
    rng = np.random.default_rng(0)
    sample = rng.choice(len(tokens), 3000, replace=False).tolist()
    sample += [i for i, t in enumerate(tokens) if t.startswith(b'"') or t.endswith(b'"')][:3000]
    inside = inside_sets(s, trie)
    cross = cross_sets(s, comma, trie)
    deep = deep_sets(s, [lexeme_splits(comma, trie), lexeme_splits(s, trie)], trie)
    for q in range(4):
        for i in sample:
            t = tokens[i]
            assert (i in inside[q]) == (bool(t) and run(s, q, t) >= 0)
            assert (i in cross[q]) == bool(brute_cross(s, comma, [t], q))
            assert (i in deep[q]) == bool(brute_deep(s, [comma, s], [t], q))
    ws = make_dfa(1, {(0, c): 0 for c in b" \t\n"}, [0])
    digits = make_dfa(1, {(0, c): 0 for c in b"0123456789"}, [0])
    true_lit = literal_dfa(b"true")
    for a, b in [(ws, s), (digits, comma), (true_lit, comma), (comma, ws)]:
        cross_ab = cross_sets(a, b, trie)
        deep_ab = deep_sets(a, [lexeme_splits(b, trie), lexeme_splits(ws, trie)], trie)
        for q in range(a.transitions.shape[0]):
            for i in sample:
                t = tokens[i]
                assert (i in cross_ab[q]) == bool(brute_cross(a, b, [t], q))
                assert (i in deep_ab[q]) == bool(brute_deep(a, [b, ws], [t], q))
    chain = dfa_walk.chain_literal(true_lit)
    fast, slow = dfa_walk.walk_chain(trie, true_lit, chain), dfa_walk.walk_all_states(trie, true_lit)
    assert np.array_equal(fast.events.node, slow.events.node)
    assert inside_of_walk(fast, 5, trie.vocab_size) == inside_of_walk(slow, 5, trie.vocab_size)
    assert inside[1].is_dense and inside[1].count > 100_000
    assert cross[1].count > 0
    assert all(tokens[i].startswith(b'"",') for i in cross[0].to_ids().tolist())
    assert tokens.index(b'",') in cross[1] and tokens.index(b'",') not in cross[2]


def _key_excluding_string_dfa(keys: list[bytes]) -> ArrayDFA:
    """A JSON-ish string ``"..."`` whose content is none of ``keys``: a tree of key-prefix
    states (one per prefix) that falls back into the string body, so walks converge."""
    prefixes = sorted({k[:i] for k in keys for i in range(len(k) + 1)})
    at = {p: 1 + i for i, p in enumerate(prefixes)}  # 0: before the opening quote
    body, escape, done = len(at) + 1, len(at) + 2, len(at) + 3
    trans = np.full((done + 1, 256), -1, dtype=np.int32)
    trans[0, 0x22] = at[b""]
    for s in [*at.values(), body]:
        trans[s, 0x20:] = body
        trans[s, 0x5C] = escape
        trans[s, 0x22] = done
    for p, s in at.items():
        if p in keys:
            trans[s, 0x22] = -1
        for c in range(256):
            if p + bytes([c]) in at:
                trans[s, c] = at[p + bytes([c])]
    for c in b'"\\/bfnrtu':
        trans[escape, c] = body
    acc = np.zeros(done + 1, dtype=bool)
    acc[done] = True
    return ArrayDFA(trans, acc)


KEYS = [
    b"name", b"age", b"email", b"tags", b"active", b"address", b"city", b"country", b"zip",
    b"phone", b"id", b"created_at", b"updated_at", b"status", b"type", b"items", b"price",
    b"quantity", b"description", b"title", b"url", b"count", b"enabled", b"owner", b"weight",
    b"height", b"width", b"color",
]


@pytest.mark.slow
def test_llama3_converging_dfa_walks(llama3):
    """A ~150-state key-excluding string DFA on Llama-3: the merged walk is taken and
    agrees with threads + level blocks and with brute force on a sample."""
    tokens, _, trie = llama3
    dfa = _key_excluding_string_dfa(KEYS)
    n = dfa.transitions.shape[0]
    assert n > 128  # three bitset words
    auto = walk_in_mode(trie, dfa, "auto")
    assert not auto.inside_states.size and auto.inside_bits[0][0].shape[0] == n  # merged
    want = walk_tables(walk_in_mode(trie, dfa, "never merged"), n, trie.vocab_size)
    assert walk_tables(auto, n, trie.vocab_size) == want
    inside = want[0]
    comma = literal_dfa(b",")
    cross = cross_sets(dfa, comma, trie)
    rng = np.random.default_rng(1)
    sample = rng.choice(len(tokens), 1500, replace=False).tolist()
    sample += [i for i, t in enumerate(tokens) if t.startswith((b"na", b"ag", b'"', b"em")) or b'"' in t][:1500]
    states = [0, 1, n - 1, n - 2, n - 3] + rng.choice(n, 6, replace=False).tolist()
    for q in states:
        for i in sample:
            t = tokens[i]
            assert (i in inside[q]) == (bool(t) and run(dfa, q, t) >= 0)
            assert (i in cross[q]) == bool(brute_cross(dfa, comma, [t], q))
    assert inside[1].count > 100_000 and tokens.index(b'",') in cross[1]


# Walk strategies of ``walk_all_states`` (module knobs of dfa_walk): each must give the same tables.
WALK_MODES = {
    "threads": dict(_MERGE=False, _HEAVY_SHARE=2.0, _FEW_THREADS=-1),  # every level of threads as arrays
    # threads whose tokens are few followed to their ends in Python (at once: every walk is such)
    "threads, Python ends": dict(_MERGE=False, _HEAVY_SHARE=2.0),
    "threads, Python ends at once": dict(_MERGE=False, _HEAVY_SHARE=2.0, _FEW_THREADS=10**9, _FEW_ROWS=10**9),
    "levels, chunks of 2": dict(_MERGE=False, _HEAVY_SHARE=-1.0, _LEVEL_CHUNK=2),
    "levels": dict(_MERGE=False, _HEAVY_SHARE=-1.0),
    # level blocks to the end, and level blocks that turn into threads after the first depth
    "levels, never threads": dict(_MERGE=False, _HEAVY_SHARE=-1.0, _LEVEL_SPARSE=0),
    "levels, threads at once": dict(_MERGE=False, _HEAVY_SHARE=-1.0, _LEVEL_SPARSE=10**9),
    # merged entries, children found by entry, INSIDE as bitsets
    "merged by entry": dict(_MERGE=True, _NODE_SCAN=0, _SMALL_WALK=0),
    # merged entries, children found by scanning the next depth, INSIDE as pairs
    "merged by node scan": dict(_MERGE=True, _NODE_SCAN=10**9, _SMALL_WALK=10**9),
    "merged, 70 origins per walk": dict(_MERGE=True, _MERGE_CHUNK=70, _SMALL_WALK=0),
    # by cost (small vocabularies make small walks: without _MERGE_MIN_COST merging is judged)
    "by cost": dict(_MERGE_MIN_COST=0),
    "by cost, all origins heavy": dict(_HEAVY_SHARE=-1.0, _MERGE_MIN_COST=0),
    "never merged": dict(_MERGE=False),
    "auto": {},
}


def walk_in_mode(trie: TokenTrie, dfa, mode: str, inside: bool = True) -> dfa_walk.WalkResult:
    knobs = WALK_MODES[mode]
    saved = {k: getattr(dfa_walk, k) for k in knobs}
    try:
        for k, v in knobs.items():
            setattr(dfa_walk, k, v)
        return dfa_walk.walk_all_states(trie, dfa, inside)
    finally:
        for k, v in saved.items():
            setattr(dfa_walk, k, v)


def walk_tables(result: dfa_walk.WalkResult, n: int, vocab_size: int):
    events = [getattr(result.events, f).tolist() for f in ("depth", "node", "ptr", "states")]
    return inside_of_walk(result, n, vocab_size, sparse_limit=2), events


def assert_walk_modes_agree(trie: TokenTrie, dfa) -> tuple:
    """The tables of every walk mode, which must all be the same; returns them."""
    n = dfa.transitions.shape[0]
    want = walk_tables(walk_in_mode(trie, dfa, "threads"), n, trie.vocab_size)
    for mode in WALK_MODES:
        got = walk_tables(walk_in_mode(trie, dfa, mode), n, trie.vocab_size)
        assert got[0] == want[0], mode
        assert got[1] == want[1], mode
        events_only = walk_in_mode(trie, dfa, mode, inside=False)
        assert [getattr(events_only.events, f).tolist() for f in ("depth", "node", "ptr", "states")] == want[1], mode
    return want


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas(), vocabs)
def test_walk_modes_agree(dfa, tokens):
    """Threads, level blocks (in chunks of 2, to the end, turning into threads at once), merged entries: the same tables."""
    trie = TokenTrie.from_vocab(vocab_of(tokens))
    inside, _ = assert_walk_modes_agree(trie, dfa)
    for q, s in enumerate(inside):
        assert ids(s) == brute_inside(dfa, tokens, q)


@st.composite
def converging_dfas(draw) -> ArrayDFA:
    """Many states (up to 3 bitset words) that mostly flow into a few shared "core" states.

    Like a JSON key that must differ from declared keys: a tree of prefix
    states where most bytes lead back into the string body. Walks from
    different states meet again after a byte or two, so merged entries
    carry many origins; some transitions stay distinct so they do not all.
    """
    n_prefix = draw(st.integers(1, 180))
    n_core = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    converge = draw(st.floats(0.3, 1.0))
    n = n_prefix + n_core
    trans = np.full((n, 256), -1, dtype=np.int32)
    alphabet = np.array(ALPHABET)
    shared = n_prefix + rng.integers(0, n_core, 256)  # the core state each byte leads to
    for s in range(n_prefix):
        for b in alphabet:
            r = rng.random()
            if r < converge:
                trans[s, b] = shared[b]
            elif r < converge + (1 - converge) / 2:
                trans[s, b] = rng.integers(0, n)
    for s in range(n_prefix, n):
        for b in alphabet:
            r = rng.random()
            if r < 0.8:
                trans[s, b] = shared[b] if rng.random() < 0.7 else rng.integers(n_prefix, n)
            elif r < 0.85:
                trans[s, b] = rng.integers(0, n)
    accepting = rng.random(n) < draw(st.sampled_from([0.0, 0.05, 0.3]))
    return ArrayDFA(trans, accepting)


SHORT_TOKENS = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=10).map(bytes)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(converging_dfas(), st.lists(st.one_of(token_bytes, SHORT_TOKENS), min_size=1, max_size=40), st.data())
def test_converging_many_state_dfas_match_definition(dfa, tokens, data):
    """INSIDE / CROSS / DEEP of many-state converging DFAs (merged walks) against brute force."""
    trie = TokenTrie.from_vocab(vocab_of(tokens))
    inside, _ = assert_walk_modes_agree(trie, dfa)
    n = dfa.transitions.shape[0]
    for q, s in enumerate(inside):
        assert ids(s) == brute_inside(dfa, tokens, q)
    for q, s in enumerate(inside_sets(dfa, trie, sparse_limit=2)):
        assert ids(s) == brute_inside(dfa, tokens, q)
    b = data.draw(dfas(max_states=3))
    states = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=6, unique=True))
    cross = cross_sets(dfa, b, trie, sparse_limit=2)
    deep = deep_sets(dfa, [lexeme_splits(b, trie)], trie, sparse_limit=2)
    for q in states:
        assert ids(cross[q]) == brute_cross(dfa, b, tokens, q)
        assert ids(deep[q]) == brute_deep(dfa, [b], tokens, q)


@FAST
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 70)), max_size=300), st.integers(0, 8))
def test_sets_from_pairs(pairs, limit):
    """Each group's distinct tokens, dense exactly when they are more than the limit, packed as the cache keeps
    them (the same array as packing the sets one by one)."""
    from kbnf_gpu.compile.packed_sets import pack_sets, sets_from_pairs

    V = 71
    groups = np.array([g for g, _ in pairs], dtype=np.int64)
    tokens = np.array([t for _, t in pairs], dtype=np.int64)
    sets = sets_from_pairs(groups, tokens, 6, V, sparse_limit=limit)
    assert len(sets) == 6
    for g, s in enumerate(sets):
        assert ids(s) == {t for gg, t in pairs if gg == g}
        assert s.count == len(ids(s)) and s.is_dense == (s.count > limit)
    assert np.array_equal(sets.blob, pack_sets(tuple(sets)))


def test_table_cache_threads():
    from concurrent.futures import ThreadPoolExecutor

    vocab = vocab_of([b"ab", b"a", b"b", b"\"a\"", b"aa,", b",", b"a,b"])
    a = make_dfa(1, {(0, 97): 0, (0, 98): 0}, [0])
    b = literal_dfa(b",")
    cache = TableCache(max_entries=2)  # tiny LRU: evictions under contention too
    want = (inside_sets(a, vocab), cross_sets(a, b, vocab), deep_sets(a, [lexeme_splits(b, vocab)], vocab))

    def job(i: int):
        return cache.inside(a, vocab), cache.cross(a, b, vocab), cache.deep(a, [b], vocab)

    with ThreadPoolExecutor(8) as pool:
        for got in pool.map(job, range(64)):
            assert got == want
    assert len(cache) <= 2
