"""kbnf_gpu.automata: terminals -> trimmed, minimal, canonical byte DFAs.

Oracles: Python ``re.fullmatch`` on exhaustively enumerated short byte strings
(invalid UTF-8 must be rejected), and the ``kbnf`` package for the KBNF kinds.
"""
from __future__ import annotations

import importlib

import functools
import itertools
import os
import pickle
import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from kbnf_gpu import ir
from kbnf_gpu.automata import (
    ByteDFA,
    build_dfa,
    dfa_concat,
    dfa_literal,
    dfa_repeat,
    dfa_union,
    regexpr_to_dfa,
)
from kbnf_gpu.automata import charset
from kbnf_gpu.automata.regex import translate
from kbnf_gpu.automata.utf8 import utf8_sequences
from kbnf_gpu.errors import DFATooLarge, GrammarError
from kbnf_oracle import sentinel_status

K = ir.TerminalKind
# AUTOMATA_EXAMPLES=2000 for a deeper run
SETTINGS = settings(
    max_examples=int(os.environ.get("AUTOMATA_EXAMPLES", 60)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def rx(source: str, flags: str = "", **kw) -> ByteDFA:
    return regexpr_to_dfa(ir.Pattern(source, flags), **kw)


# ------------------------------------------------------------------ helpers


class Corpus:
    """Byte strings enumerated once, grouped by length, with their UTF-8 decodings."""

    def __init__(self, byte_alphabet: bytes, max_len: int, char_alphabet: str = "", char_len: int = 0) -> None:
        strings = {bytes(t) for n in range(max_len + 1) for t in itertools.product(byte_alphabet, repeat=n)}
        strings |= {"".join(t).encode() for t in itertools.product(char_alphabet, repeat=char_len)}
        self.strings = sorted(strings, key=lambda s: (len(s), s))
        self.by_len: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for n in {len(s) for s in self.strings}:
            idx = [i for i, s in enumerate(self.strings) if len(s) == n]
            mat = np.array([list(self.strings[i]) for i in idx], dtype=np.int64).reshape(len(idx), n)
            self.by_len[n] = (np.array(idx), mat)
        self.decoded: list[str | None] = []
        for s in self.strings:
            try:
                self.decoded.append(s.decode("utf-8"))
            except UnicodeDecodeError:
                self.decoded.append(None)

    def dfa_results(self, dfa: ByteDFA) -> np.ndarray:
        """(alive, accepted) per string, walking all strings of a length at once."""
        alive = np.zeros(len(self.strings), dtype=bool)
        accepted = np.zeros(len(self.strings), dtype=bool)
        if dfa.n_states == 0:
            return np.stack([alive, accepted])
        t = np.vstack([dfa.transitions, np.full((1, 256), -1, dtype=np.int32)])
        acc = np.append(dfa.accepting, False)
        for n, (idx, mat) in self.by_len.items():
            state = np.zeros(len(idx), dtype=np.int64)
            for col in range(n):
                state = t[state, mat[:, col]]
            alive[idx] = state >= 0
            accepted[idx] = acc[state]
        return np.stack([alive, accepted])

    def re_results(self, pattern: re.Pattern) -> np.ndarray:
        return np.array([d is not None and pattern.fullmatch(d) is not None for d in self.decoded])


def assert_agrees_with_re(dfa: ByteDFA, source: str, corpus: Corpus, flags: int = 0) -> None:
    got = corpus.dfa_results(dfa)[1]
    want = corpus.re_results(re.compile(source, flags))
    bad = np.flatnonzero(got != want)
    assert not len(bad), [(corpus.strings[i], bool(want[i])) for i in bad[:8]]


def assert_well_formed(dfa: ByteDFA) -> None:
    """Shapes, read-only, trimmed, BFS-canonical and minimal."""
    t, acc = dfa.transitions, dfa.accepting
    n = dfa.n_states
    assert t.dtype == np.int32 and t.shape == (n, 256) and acc.dtype == bool and acc.shape == (n,)
    assert not t.flags.writeable and not acc.flags.writeable
    assert t.min(initial=-1) >= -1 and t.max(initial=-1) < n
    if n == 0:
        return
    order, seen = [0], {0}
    for s in order:
        for b in range(256):
            x = int(t[s, b])
            if x >= 0 and x not in seen:
                seen.add(x)
                order.append(x)
    assert order == list(range(n)), "not reachable in BFS byte order"
    live = acc.copy()
    while True:
        nxt = live | np.array([any(live[x] for x in set(t[s].tolist()) if x >= 0) for s in range(n)])
        if (nxt == live).all():
            break
        live = nxt
    assert live.all(), "a state cannot reach acceptance"
    # Moore refinement: minimal iff it separates every state
    cls = acc.astype(np.int64)
    while True:
        sig = np.hstack([cls[:, None], np.where(t >= 0, cls[np.maximum(t, 0)], -1)])
        _, new = np.unique(sig, axis=0, return_inverse=True)
        new = new.reshape(-1)
        if len(set(new.tolist())) == len(set(cls.tolist())):
            break
        cls = new
    assert len(set(cls.tolist())) == n, "not minimal"


# -------------------------------------------------------- random regexes

ALPHABET = ["a", "b", "\n", "é", "€"]  # 1-, 2- and 3-byte UTF-8
CORPUS = Corpus(
    b"ab\nc\xc3\xa9\xe2\x82\xac\xff\x80",
    4,
    char_alphabet="ab\né€c",
    char_len=5,
)

_CLASS_ITEMS = ["a", "b", "\\n", "é", "€", "a-b", "b-é", "é-€", "\\n-a", "\\w", "\\s", "\\W", "\\d"]


def _leaf_strategy(chars, class_items, anchors: bool, categories: bool):
    leaves = [
        st.sampled_from(chars).map(re.escape),
        st.just("."),
        st.tuples(st.booleans(), st.lists(st.sampled_from(class_items), min_size=1, max_size=3)).map(
            lambda t: "[" + ("^" if t[0] else "") + "".join(t[1]) + "]"
        ),
        st.just(""),
    ]
    if categories:
        leaves.append(st.sampled_from(["\\w", "\\W", "\\s", "\\S"]))
    if anchors:
        leaves.append(st.sampled_from(["^", "$", "\\A", "\\Z"]))
    return st.one_of(*leaves)


def _extend(children):
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map("".join),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
        st.tuples(children, st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "*?", "{,2}"])).map(
            lambda t: "(?:" + t[0] + ")" + t[1]
        ),
        children.map(lambda x: "(" + x + ")"),
        children.map(lambda x: "(?s:" + x + ")"),
    )


def regexes(chars=ALPHABET, class_items=_CLASS_ITEMS, anchors: bool = False, categories: bool = True):
    return st.recursive(_leaf_strategy(chars, class_items, anchors, categories), _extend, max_leaves=8)


# Unicode \w and friends have ~300-state byte DFAs: keep them out where many DFAs are built
_CHEAP_ITEMS = [i for i in _CLASS_ITEMS if not i.startswith("\\") or i.startswith("\\n")]


def cheap_regexes():
    return regexes(class_items=_CHEAP_ITEMS, categories=False)


@SETTINGS
@given(regexes(), st.sampled_from(["", "s"]))
def test_random_regex_agrees_with_re(source, flags):
    dfa = rx(source, flags)
    assert_agrees_with_re(dfa, source, CORPUS, re.S if flags else 0)
    assert_well_formed(dfa)


@SETTINGS
@given(regexes(anchors=True), st.sampled_from(["", "m", "s", "ms"]))
def test_random_regex_with_anchors_agrees_with_re(source, flags):
    dfa = rx(source, flags)
    bits = (re.M if "m" in flags else 0) | (re.S if "s" in flags else 0)
    assert_agrees_with_re(dfa, source, CORPUS, bits)


# ------------------------------------------------------------ lookarounds

_LOOK_ITEMS = ["a", "b", "\\n", "é", "a-b", "\\w", "^a"]


def _fixed_width_bodies():
    """Lookbehind bodies Python accepts (fixed width), with start anchors and nested lookbehinds."""
    atom = st.sampled_from(["a", "b", ".", "[ab]", "[^a]", "é", "\\n", "\\w", "(?s:.)"])
    body = st.one_of(
        st.lists(atom, min_size=1, max_size=2).map("".join),
        st.sampled_from(["(?:a|b)", "(?:é|\\n)", "(?:ab|ba)", "(?:a.|\\nb)"]),
    )
    return st.tuples(st.sampled_from(["", "", "^", "\\A"]), body, st.sampled_from(["", "", "(?<=a)", "(?<!b)"])).map(
        "".join
    )


def _ahead_bodies():
    """Lookahead bodies: anchors, nested lookaheads and lookbehinds, word boundaries."""
    leaves = st.one_of(
        _leaf_strategy(ALPHABET, _LOOK_ITEMS, anchors=True, categories=False),
        _fixed_width_bodies().map("(?<={})".format),
        _fixed_width_bodies().map("(?<!{})".format),
        st.sampled_from(["\\b", "\\B"]),
    )

    def extend(children):
        return st.one_of(_extend(children), children.map("(?={})".format), children.map("(?!{})".format))

    return st.recursive(leaves, extend, max_leaves=4)


def lookaround_regexes():
    looks = st.one_of(
        _ahead_bodies().map("(?={})".format),
        _ahead_bodies().map("(?!{})".format),
        _fixed_width_bodies().map("(?<={})".format),
        _fixed_width_bodies().map("(?<!{})".format),
        st.sampled_from(["\\b", "\\B"]),
    )
    leaves = st.one_of(_leaf_strategy(ALPHABET, _LOOK_ITEMS, anchors=True, categories=False), looks)
    return st.recursive(leaves, _extend, max_leaves=6)


@SETTINGS
@given(lookaround_regexes(), st.sampled_from(["", "m", "s", "ms", "a"]))
def test_random_lookaround_regex_agrees_with_re(source, flags):
    """Lookaheads, lookbehinds, word boundaries and anchors anywhere: exact, by brute force against ``re``."""
    dfa = rx(source, flags)
    bits = sum(getattr(re, f.upper()) for f in flags)
    assert_agrees_with_re(dfa, source, CORPUS, bits)
    assert_well_formed(dfa)


@pytest.mark.parametrize(
    "source,flags",
    [
        ("(?:(?!ab).)*", ""),  # tempered greedy token: no "ab" anywhere
        ("(?=.*[0-9])(?=.*[a-z]).{3,}", ""),  # password-style conjunction
        ("(?!.*\\n$).*", "s"),
        ("(?=a)", ""),
        ("a(?=b)c", ""),
        ("a(?=b)b", ""),
        ("(?:a(?=b)|b)*", ""),
        (".*(?<!a)b", ""),
        ("(?:.(?<=ab))*", ""),
        ("(?<=(?<=a)b)a|.*", ""),
        ("(?:(?=(?:a|b)*$)a)*b", ""),
        ("(?m)(?=^a)[a\\n]+", ""),
        ("(?=^)a|(?!^)b", ""),
        ("\\b\\w+\\b", ""),
        ("\\B", ""),
        ("a\\Bb|\\Ba", ""),
        ("\\b", "a"),
        ("[\\w\\n]+(?<=\\w)", ""),
        ("a^b", ""),
        ("a$b", ""),
        ("a$\\n", ""),
        ("(?i)(?!k)\\w+", ""),
        ("(?!.*\\bab\\b).*", ""),  # a word boundary inside a lookahead
        ("(?:(?=(?<=a)b).)+", ""),
        ("(?=.*(?<!a)b$).*", ""),
    ],
)
def test_lookaround_features_agree_with_re(source, flags):
    _check_with_re(source, flags, Corpus(b"ab\nc1\xc3\xa9", 4, char_alphabet="ab\n1éK\u212a", char_len=4))


def _check_with_re(source: str, flags: str, corpus) -> None:
    bits = sum(getattr(re, f.upper()) for f in flags)
    dfa = rx(source, flags)
    assert_agrees_with_re(dfa, source, corpus, bits)
    assert_well_formed(dfa)


CASE_CHARS = ["k", "K", "\u212a", "s", "\u017f", "é", "É", "x"]  # Kelvin sign, long s
CASE_CORPUS = Corpus("kKsxé".encode() + "\u212a\u017fÉ".encode(), 3, char_alphabet="".join(CASE_CHARS), char_len=3)


@SETTINGS
@given(regexes(CASE_CHARS, ["k", "K", "s-x", "\\u212a", "É", "a-z", "\\w"]), st.sampled_from(["i", "ia"]))
def test_random_case_insensitive_regex_agrees_with_re(source, flags):
    dfa = rx(source, flags)
    bits = re.I | (re.A if "a" in flags else 0)
    assert_agrees_with_re(dfa, source, CASE_CORPUS, bits)


@pytest.mark.parametrize(
    "source,flags",
    [
        ("^a$", ""),
        ("a$\n", ""),
        ("a$\n?", ""),
        ("a\\Z\n?", ""),
        ("(?:a|^b)+", ""),
        ("a\n^b", "m"),
        ("a$\n^b$", "m"),
        ("a\n^b", ""),
        (".*$.*", "s"),
        ("(?m:^a$)\n?", ""),
        ("\\d+", ""),
        ("\\d+", "a"),
        ("[^\\W\\d]+", ""),
        ("(?i)straße", ""),
        ("(?x) a b # comment\n c", ""),
        ("[\\u0100-\\U0001f600]", ""),
        ("\\ud800", ""),
    ],
)
def test_regex_features_agree_with_re(source, flags):
    _check_with_re(source, flags, Corpus(b"ab\nc1\xc3\xa9\xd9\xa3\xff", 3, char_alphabet="ab\n1é٣ßSsẞ", char_len=3))


# -------------------------------------------------------------- canonical


@SETTINGS
@given(cheap_regexes(), cheap_regexes())
def test_equivalent_regexes_give_identical_arrays(r, s):
    base = rx(f"(?:{r})|(?:{s})")
    for variant in [f"(?:{s})|(?:{r})", f"(?:{r})|(?:{s})|(?:{r})", f"(?:(?:{r})|(?:{s}))(?:)"]:
        other = rx(variant)
        assert np.array_equal(base.transitions, other.transitions)
        assert np.array_equal(base.accepting, other.accepting)
        assert base.fingerprint == other.fingerprint
    assert rx(f"(?:(?:{r})*)*").fingerprint == rx(f"(?:{r})*").fingerprint
    assert rx(f"(?:{r}){{2}}").fingerprint == rx(f"(?:{r})(?:{r})").fingerprint


@SETTINGS
@given(cheap_regexes(), st.sampled_from([0, 1, 2]))
def test_hopcroft_agrees_with_moore(source, rounds):
    from kbnf_gpu.automata import dfa as dfa_module

    want = rx(source)
    saved = dfa_module._MOORE_ROUNDS
    dfa_module._MOORE_ROUNDS = rounds  # hand over to Hopcroft early
    try:
        got = rx(source)
    finally:
        dfa_module._MOORE_ROUNDS = saved
    assert got.fingerprint == want.fingerprint


@SETTINGS
@given(st.integers(1, 12), st.integers(1, 3), st.data())
def test_minimal_classes_are_the_equivalence_of_states(n, k, data):
    """``minimal_classes`` (heights, then Moore, then Hopcroft; each handing over early too): two live states
    share a class iff they accept the same strings, as a plain refinement to its fixpoint finds; and
    ``height_classes`` is exact on the states with no loop ahead, acceptance alone on the others."""
    from kbnf_gpu.automata import dfa as dfa_module

    table = np.array(data.draw(st.lists(st.lists(st.integers(-1, n - 1), min_size=k, max_size=k), min_size=n,
                                        max_size=n)), dtype=np.int64)
    accepting = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    live = np.zeros(n, dtype=bool)
    for start in range(n):  # trimmed as ``finalize`` gives it: every state reached and reaching acceptance
        live |= dfa_module._live_states(table, accepting, start)
    assume(live.any())
    old = np.flatnonzero(live)
    remap = np.full(n + 1, -1, dtype=np.int64)
    remap[old] = np.arange(len(old))
    table, accepting = remap[table[old]], accepting[old]
    n = len(old)
    want = [int(a) for a in accepting]  # the reference: refine (label, successors' labels) until stable
    while True:
        keys = [(want[s], *(want[t] if t >= 0 else -1 for t in table[s])) for s in range(n)]
        ids = {key: i for i, key in enumerate(dict.fromkeys(keys))}
        refined = [ids[key] for key in keys]
        if len(ids) == len(set(want)):
            break
        want = refined
    rounds = data.draw(st.sampled_from([0, 1, 24]))
    saved = dfa_module._MOORE_ROUNDS
    dfa_module._MOORE_ROUNDS = rounds  # hand over to Hopcroft early
    try:
        got = dfa_module.minimal_classes(table, accepting).tolist()
    finally:
        dfa_module._MOORE_ROUNDS = saved
    heights = dfa_module.height_classes(table, accepting).tolist()
    looping = [_on_a_loop(table, s) for s in range(n)]
    finite = [not any(looping[t] for t in _reached(table, [s])) for s in range(n)]
    for a in range(n):
        for b in range(n):
            assert (got[a] == got[b]) == (want[a] == want[b])
            if finite[a] and finite[b]:
                assert (heights[a] == heights[b]) == (want[a] == want[b])
            elif finite[a] != finite[b]:
                assert heights[a] != heights[b]
            else:
                assert (heights[a] == heights[b]) == (accepting[a] == accepting[b])


def _reached(table: np.ndarray, starts) -> set[int]:
    """The states ``starts`` lead to (themselves included)."""
    seen, stack = set(), [int(s) for s in starts if s >= 0]
    while stack:
        s = stack.pop()
        if s not in seen:
            seen.add(s)
            stack.extend(int(t) for t in table[s] if t >= 0)
    return seen


def _on_a_loop(table: np.ndarray, state: int) -> bool:
    """Does a path of one or more symbols lead ``state`` back to itself?"""
    return state in _reached(table, table[state])


@SETTINGS
@given(st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3), min_size=1, max_size=30), st.booleans())
def test_row_classes_number_the_distinct_rows(rows, colliding):
    """Moore's rounds key each row by one int and check the keys against the rows; with weights that make
    permuted rows collide (all ones: a row's key is its sum) the check fails and the exact way answers."""
    from kbnf_gpu.automata import dfa as dfa_module

    sig = np.array(rows, dtype=np.int64)
    saved = dfa_module._ROW_WEIGHTS
    if colliding:
        dfa_module._ROW_WEIGHTS = np.ones_like(saved)
    try:
        ids = dfa_module._row_classes(sig)
    finally:
        dfa_module._ROW_WEIGHTS = saved
    distinct = {tuple(r) for r in rows}
    assert sorted(set(ids.tolist())) == list(range(len(distinct)))
    for i, a in enumerate(rows):
        for j, b in enumerate(rows):
            assert (ids[i] == ids[j]) == (a == b)


@SETTINGS
@given(cheap_regexes(), cheap_regexes(), st.integers(0, 2), st.one_of(st.none(), st.integers(0, 3)))
def test_combinators_agree_with_regex(r, s, lo, extra):
    a, b = rx(r), rx(s)
    assert dfa_concat([a, b]).fingerprint == rx(f"(?:{r})(?:{s})").fingerprint
    assert dfa_union([a, b]).fingerprint == rx(f"(?:{r})|(?:{s})").fingerprint
    hi = None if extra is None else lo + extra
    want = rx(f"(?:{r}){{{lo},{'' if hi is None else hi}}}")
    got = dfa_repeat(a, lo, hi)
    assert got.fingerprint == want.fingerprint
    assert_well_formed(got)


@SETTINGS
@given(st.integers(1, 3), st.data())
def test_repeat_copies_keep_the_first_copy_numbering(length, data):
    """``repeat_copies``: for a lexeme whose accepting states end it (words of one length), the language
    ``X{1,copies}`` (``dfa_repeat``'s), copy 0 in ``X``'s own numbering (a word that leads ``X`` to ``q`` leads
    the copies to ``q`` too); ``None`` for a lexeme that may go on after accepting or accepts the empty word."""
    from kbnf_gpu.automata.build import repeat_copies

    alphabet = st.sampled_from(b"abc")
    words = data.draw(st.lists(st.lists(alphabet, min_size=length, max_size=length).map(bytes), min_size=1,
                               max_size=6))
    x = dfa_union([dfa_literal(w) for w in words])
    copies = data.draw(st.integers(1, 4))
    got, want = repeat_copies(x, copies), dfa_repeat(x, 1, copies)
    probes = data.draw(st.lists(st.lists(alphabet, max_size=3 * length + 2).map(bytes), max_size=40))
    for word in probes + [w * k for w in words for k in (1, copies, copies + 1)]:
        assert got.matches(word) == want.matches(word), word
        q = x.step(0, word)
        if q >= 0:  # inside the first copy
            assert got.step(0, word) == q
    assert repeat_copies(dfa_union([x, dfa_literal(words[0] + b"a")]), copies) is None  # goes on after accepting
    assert repeat_copies(dfa_union([x, dfa_literal(b"")]), copies) is None  # accepts the empty word


@SETTINGS
@given(st.lists(st.one_of(cheap_regexes(), st.sampled_from(['"k[a-c]y"', "[ \\t]*:[ \\t]*", "[0-9]+", "-?[1-9][0-9]*",
                                                           "[ ]*,", "\\{", "x?"])), min_size=2, max_size=4))
def test_glued_concat_agrees_with_subset_construction(sources):
    """The concatenation built without a subset construction (where a part's ends and the next part's start
    bytes are disjoint) is the same canonical DFA; where they are not disjoint it declines."""
    from kbnf_gpu.automata.build import _glued

    parts = tuple(rx(r) for r in sources)
    want = rx("".join(f"(?:{r})" for r in sources))
    got = _glued(parts, 10_000)
    if got is not None:
        assert got.fingerprint == want.fingerprint
    assert dfa_concat(list(parts)).fingerprint == want.fingerprint


def test_glued_concat_takes_the_json_shapes():
    from kbnf_gpu.automata.build import _glued

    parts = tuple(rx(r) for r in ['"name"', "[ \t]*:[ \t]*", "-?(?:0|[1-9][0-9]*)", "[ \t]*,"])
    got = _glued(parts, 10_000)
    assert got is not None and got.fingerprint == rx('"name"[ \t]*:[ \t]*-?(?:0|[1-9][0-9]*)[ \t]*,').fingerprint
    assert _glued((rx("a+"), rx("a")), 10_000) is None  # "a" may continue the first part: not disjoint
    with pytest.raises(DFATooLarge):
        _glued(parts, 5)


def test_combinator_edge_cases():
    a = dfa_literal(b"ab")
    assert a.matches(b"ab") and not a.matches(b"a") and a.n_states == 3
    assert dfa_literal(b"").nullable and dfa_literal(b"").n_states == 1
    assert dfa_concat([]).fingerprint == dfa_literal(b"").fingerprint
    assert dfa_union([]).is_empty()
    assert dfa_repeat(a, 0, 0).fingerprint == dfa_literal(b"").fingerprint
    assert dfa_concat([a, dfa_union([])]).is_empty()
    assert dfa_repeat(dfa_union([]), 0, None).fingerprint == dfa_literal(b"").fingerprint
    assert dfa_repeat(a, 1000, 1000).n_states == 2001
    with pytest.raises(GrammarError):
        dfa_repeat(a, 3, 2)


# ------------------------------------------------------------- IR nodes


def test_ir_nodes():
    e = ir.Concat(
        (
            ir.Literal(b"\x00\xff"),
            ir.CharClass(((0x41, 0x42), (0xD7FF, 0xE000), (0x10FFFF, 0x10FFFF))),
            ir.ByteClass(((0x80, 0x81),)),
            ir.Repeat(ir.Alternation((ir.Literal(b"x"), ir.Pattern("y+"))), 1, 2),
        )
    )
    d = regexpr_to_dfa(e)
    assert_well_formed(d)
    for mid in ["A", "\ud7ff", "\ue000", "\U0010ffff"]:
        assert d.matches(b"\x00\xff" + mid.encode("utf-8", "surrogatepass") + b"\x80xyy")
    assert not d.matches(b"\x00\xff\xed\xa0\x80\x80x")  # a surrogate is not UTF-8
    assert not d.matches(b"\x00\xffA\x80")
    assert not d.matches(b"\x00\xffA\x80xxx")
    assert regexpr_to_dfa(ir.CharClass(((0xD800, 0xDFFF),))).is_empty()


@SETTINGS
@given(st.integers(1, 5), st.data())
def test_automaton_node_is_its_language(n_states, data):
    """An ``ir.Automaton`` (edges labelled with expressions, each read as one match) compiles to the DFA of
    its language, whatever its labels (classes, literals, labels that read nothing, multi-byte code
    points), alone and inside a larger expression: checked against a walk of its edges on short texts."""
    labels = st.sampled_from([ir.Literal(b"a"), ir.Literal(b"bc"), ir.CharClass(((0x61, 0x63),)),
                              ir.Repeat(ir.Literal(b"b"), 0, 2), ir.Literal(b""), ir.CharClass(((0xE9, 0xE9),))])
    state = st.integers(0, n_states - 1)
    edges = data.draw(st.lists(st.tuples(state, labels, state), max_size=8))
    accepting = data.draw(st.lists(state, max_size=n_states, unique=True))
    automaton = ir.Automaton(n_states, tuple(edges), tuple(accepting))
    alone = regexpr_to_dfa(automaton)
    inside = regexpr_to_dfa(ir.Concat((ir.Literal(b"x"), ir.Repeat(automaton, 1, 2))))
    assert_well_formed(alone)
    for text in ["", "a", "bc", "abc", "bb", "é", "ab", "cba", "aa", "bcbc", "aébc", "bbbb"]:
        accepted = _automaton_accepts(automaton, text)
        assert alone.matches(text.encode()) == accepted, (automaton, text)
        assert inside.matches(b"x" + text.encode()) == (accepted or any(
            _automaton_accepts(automaton, text[:k]) and _automaton_accepts(automaton, text[k:])
            for k in range(len(text) + 1))), (automaton, text)


def _automaton_accepts(a: ir.Automaton, text: str) -> bool:
    """Brute force: the (state, characters read) pairs reachable over the edges, each label matched by Python's
    ``re`` (its rendering over code points)."""
    from kbnf_gpu.frontends.json_schema._pyre import to_python

    seen = {(0, 0)}
    stack = [(0, 0)]
    while stack:
        q, i = stack.pop()
        for p, label, t in a.edges:
            if p != q:
                continue
            matcher = re.compile(to_python(label), re.S)
            for j in range(i, len(text) + 1):
                if matcher.fullmatch(text, i, j) and (t, j) not in seen:
                    seen.add((t, j))
                    stack.append((t, j))
    return any((q, len(text)) in seen for q in a.accepting)


_SPELLED_POINTS = [0x22, 0x41, 0x61, 0xE9, 0x5C, 0x0A, 0x263A, 0x1F600]  # quote, A, a, é, backslash, newline, ☺, 😀


def _spelled_automaton(n_states: int, data) -> tuple[list, tuple[int, ...]]:
    """A code-point automaton as a JSON Schema string writes one: at each state a partition of some code points
    into classes, each spelled as a JSON string body (UTF-8 or an escape) and leading to a drawn state."""
    from kbnf_gpu.frontends.json_schema._strings import encode

    state = st.integers(0, n_states - 1)
    edges = []
    for p in range(n_states):
        chosen = data.draw(st.lists(st.sampled_from(_SPELLED_POINTS), unique=True))
        parts = data.draw(st.integers(1, max(1, len(chosen))))
        for group in (chosen[i::parts] for i in range(parts)):
            if group:
                label = encode(ir.CharClass(tuple((c, c) for c in sorted(group))))
                edges.append((p, label, data.draw(state)))
    return edges, tuple(data.draw(st.lists(state, unique=True, max_size=n_states)))


@SETTINGS
@given(st.integers(1, 6), st.data())
def test_labelled_automaton_is_built_without_the_subset_construction(n_states, data):
    """Labels disjoint at each state and none a prefix of another (a JSON Schema string's automaton): the
    tries side by side (``automata.labelled``) are taken and give the subset construction's minimal DFA, array
    for array; tries past ``max_states`` raise ``StateLimit`` without a subset construction."""
    from kbnf_gpu.automata import build
    from kbnf_gpu.automata.dfa import LazyDFA, StateLimit
    from kbnf_gpu.automata.labelled import chained, labelled_dfa, lazy_labelled_dfa
    from kbnf_gpu.automata.nfa import DFALeaf

    edges, accepting = _spelled_automaton(n_states, data)
    leaves = {label: regexpr_to_dfa(label) for _, label, _ in edges}
    direct = labelled_dfa(n_states, [(p, leaves[label], q) for p, label, q in edges], accepting, 10_000)
    assert direct is not None
    subset = build._determinized(
        ir.Automaton(n_states, tuple((p, DFALeaf(leaves[label]), q) for p, label, q in edges), accepting),
        10_000, build._nfa_limit(10_000), build._Context("test"))
    assert np.array_equal(direct.transitions, subset.transitions), edges
    assert np.array_equal(direct.accepting, subset.accepting), edges
    compiled = regexpr_to_dfa(ir.Automaton(n_states, tuple(edges), accepting))
    assert np.array_equal(compiled.transitions, direct.transitions)
    assert np.array_equal(compiled.accepting, direct.accepting)
    if direct.n_states > 1:  # the tries are at least the minimal DFA: one state fewer is refused at once
        with pytest.raises(StateLimit):
            labelled_dfa(n_states, [(p, leaves[label], q) for p, label, q in edges], accepting, direct.n_states - 1)
        with pytest.raises(StateLimit):  # made on first use, it fails (or not) where the DFA made now would
            lazy_labelled_dfa(n_states, [(p, leaves[label], q) for p, label, q in edges], accepting,
                              direct.n_states - 1)
    # made on first use: what the parser asks before (nullable, empty, whether the start leads on) is answered
    # without building, then the same arrays
    lazy = lazy_labelled_dfa(n_states, [(p, leaves[label], q) for p, label, q in edges], accepting, 10_000)
    if direct.n_states == 0:
        assert lazy.is_empty() and not isinstance(lazy, LazyDFA)
    else:
        assert isinstance(lazy, LazyDFA) and not lazy.built
        assert (lazy.nullable, lazy.is_empty(), lazy.exits_start) == (direct.nullable, False, direct.has_exit_list[0])
        assert not lazy.built
        assert np.array_equal(lazy.transitions, direct.transitions) and lazy.built
        assert np.array_equal(lazy.accepting, direct.accepting) and lazy.fingerprint == direct.fingerprint
    # between quotes (a string lexeme): chained into one automaton, again the subset construction's DFA
    quote = regexpr_to_dfa(ir.Literal(b'"'))
    chain = chained([(2, ((0, quote, 1),), (1,)), (n_states, [(p, leaves[label], q) for p, label, q in edges],
                                                    accepting), (2, ((0, quote, 1),), (1,))])
    # the empty string between the quotes too (an accepting start: the quote's end takes the closing quote)
    chained_dfa = labelled_dfa(*chain, 10_000)
    assert chained_dfa is not None
    quoted = regexpr_to_dfa(ir.Concat((ir.Literal(b'"'), ir.Automaton(n_states, tuple(edges), accepting),
                                       ir.Literal(b'"'))))
    subset = build._determinized(ir.Concat((ir.Literal(b'"'), ir.Automaton(
        n_states, tuple((p, DFALeaf(leaves[label]), q) for p, label, q in edges), accepting), ir.Literal(b'"'))),
        10_000, build._nfa_limit(10_000), build._Context("test"))
    assert np.array_equal(quoted.transitions, subset.transitions), edges
    assert np.array_equal(quoted.accepting, subset.accepting), edges
    assert np.array_equal(chained_dfa.transitions, subset.transitions), edges
    assert np.array_equal(chained_dfa.accepting, subset.accepting), edges


@SETTINGS
@given(st.data())
def test_one_label_trie_is_the_product_walks(data):
    """A state reading one label takes its trie from the label's own table (``_one_label_trie``): the very array
    the product walk builds, or ``None`` where it gives none (a spelling that goes on past another's end)."""
    from kbnf_gpu.automata import labelled
    from kbnf_gpu.frontends.json_schema._strings import encode

    if data.draw(st.booleans()):
        points = data.draw(st.lists(st.sampled_from(_SPELLED_POINTS), min_size=1, unique=True))
        label = regexpr_to_dfa(encode(ir.CharClass(tuple((c, c) for c in sorted(points)))))
    else:
        # words over two letters: one is often a prefix of another (no trie then)
        words = data.draw(st.lists(st.text("ab\xe9", min_size=1, max_size=3), min_size=1, max_size=6, unique=True))
        label = regexpr_to_dfa(ir.Alternation(tuple(ir.Literal(w.encode()) for w in words)))
    fast, walked = labelled._one_label_trie(label), labelled._product_trie((label,))
    assert (fast is None) == (walked is None)
    if fast is not None:
        assert fast.dtype == walked.dtype and np.array_equal(fast, walked)


def test_one_label_trie_of_a_large_class():
    """The trie of a spelled ``\\p{L}\\p{N}`` (hundreds of states: raw UTF-8 and ``\\u`` escapes) is the product
    walk's."""
    from kbnf_gpu.automata import labelled
    from kbnf_gpu.frontends.json_schema import _charset as cs
    from kbnf_gpu.frontends.json_schema._strings import unit

    label = regexpr_to_dfa(unit(cs.union(cs.unicode_category("L"), cs.unicode_category("N"))))
    fast = labelled._one_label_trie(label)
    assert label.n_states > 500 and np.array_equal(fast, labelled._product_trie((label,)))


def test_lexeme_made_on_first_use_knows_its_start_without_building():
    """``exits_start`` is whether the built DFA's start leads on: not whether the start has edges (an edge
    into states that never accept is trimmed), so ``"" | a x*`` without ``x*`` accepting is the empty string
    alone; ``nullable`` is the start's acceptance; the empty language is no ``LazyDFA`` at all."""
    from kbnf_gpu.automata.dfa import LazyDFA
    from kbnf_gpu.automata.labelled import lazy_labelled_dfa

    a, x = regexpr_to_dfa(ir.Literal(b"a")), regexpr_to_dfa(ir.Literal(b"x"))
    only_empty = lazy_labelled_dfa(2, [(0, a, 1), (1, x, 1)], (0,), 100)
    assert isinstance(only_empty, LazyDFA) and (only_empty.nullable, only_empty.exits_start) == (True, False)
    assert not only_empty.built and only_empty.n_states == 1 and only_empty.has_exit_list == [False]
    leads_on = lazy_labelled_dfa(2, [(0, a, 1), (1, x, 1)], (0, 1), 100)
    assert (leads_on.nullable, leads_on.exits_start) == (True, True) and leads_on.has_exit_list[0]
    assert lazy_labelled_dfa(2, [(0, a, 1), (1, x, 1)], (), 100).is_empty()


def test_terminal_memo_holds_a_lexeme_made_on_first_use_then_packs_it(monkeypatch):
    """``build_dfa`` of a string lexeme (an automaton between quotes) gives a ``LazyDFA``; the terminal memo
    holds it as it is, counted at the bytes its layout holds (not at a table it has not made), and hands the
    same object to the next grammar; once built, the memo holds it packed like any other DFA, and a hit while
    a grammar holds it still gives that object."""
    from kbnf_gpu.automata import build
    from kbnf_gpu.automata.dfa import LazyDFA
    from kbnf_gpu.frontends.json_schema._strings import encode

    monkeypatch.setattr(build, "_FLAT_CACHE", {})
    label = encode(ir.CharClass(((0x61, 0x66), (0x3B1, 0x3B5))))
    term = ir.Terminal(ir.Concat((ir.Literal(b'"'), ir.Automaton(3, ((0, label, 1), (1, label, 2), (2, label, 2)),
                                                                 (2,)), ir.Literal(b'"'))))
    lazy = build.build_dfa(term)
    assert isinstance(lazy, LazyDFA) and not lazy.built
    assert build._FLAT_CACHE[next(iter(build._FLAT_CACHE))] is lazy
    assert build._memo_bytes[id(build._FLAT_CACHE)] == lazy.held_bytes > 0
    assert build.build_dfa(term) is lazy and not lazy.built
    copied = pickle.loads(pickle.dumps(lazy))  # a pickle (or copy) is the built DFA
    assert type(copied) is ByteDFA and lazy.built and copied.fingerprint == lazy.fingerprint
    assert lazy.matches('"aβ"'.encode()) and not lazy.matches(b'"a"')
    packed = build._FLAT_CACHE[next(iter(build._FLAT_CACHE))]
    assert isinstance(packed, build._Packed) and packed.fingerprint == lazy.fingerprint
    assert build._memo_bytes[id(build._FLAT_CACHE)] == packed.nbytes
    assert build.build_dfa(term) is lazy


def test_labelled_trie_cache_is_bounded(monkeypatch):
    """The tries are shared across grammars in a bounded cache (rows in all): emptied when a new trie would pass
    the bound, and what it gives is unchanged."""
    from kbnf_gpu.automata import labelled
    from kbnf_gpu.frontends.json_schema._strings import encode

    monkeypatch.setattr(labelled, "_TRIE_CACHE_ROWS", 40)  # a trie here: 8 rows
    monkeypatch.setattr(labelled, "_TRIE_CACHE", {})
    monkeypatch.setattr(labelled, "_trie_rows", 0)
    for first in range(0x41, 0x5B):  # one spelled class per automaton: a new trie each time
        label = regexpr_to_dfa(encode(ir.CharClass(((first, first), (0xE9, 0xE9)))))
        dfa = labelled.labelled_dfa(2, [(0, label, 1), (1, label, 1)], (1,), 10_000)
        assert dfa.matches(chr(first).encode() + "é".encode() + b"\\u00e9") and not dfa.matches(b"")
        held = sum(len(found[0]) for found in labelled._TRIE_CACHE.values() if found is not None)
        assert held == labelled._trie_rows <= 40


def test_labelled_automaton_gives_way_where_labels_overlap():
    """Two labels of one state that share a spelling, a label that is a prefix of another, a label that reads
    nothing: no deterministic trie, so ``None`` (the subset construction, checked above by brute force)."""
    from kbnf_gpu.automata.labelled import chained, labelled_dfa

    a, ab, both = (regexpr_to_dfa(ir.Literal(b"a")), regexpr_to_dfa(ir.Literal(b"ab")),
                   regexpr_to_dfa(ir.CharClass(((0x61, 0x62),))))
    empty = regexpr_to_dfa(ir.Literal(b""))
    assert labelled_dfa(2, [(0, a, 1), (0, both, 0)], (1,), 100) is None
    assert labelled_dfa(2, [(0, a, 1), (0, ab, 0)], (1,), 100) is None
    assert labelled_dfa(2, [(0, empty, 1)], (1,), 100) is None
    assert labelled_dfa(2, [(0, a, 1), (1, ab, 0)], (0,), 100).matches(b"aab")
    # a chain: a malformed part is not chained; parts that accept the empty string are skipped over, alone or in
    # a row, up to the end (``a (b|bb)? c* d?``, brute force below)
    b, c, d = (regexpr_to_dfa(ir.Literal(x)) for x in (b"b", b"c", b"d"))
    assert chained([(2, ((0, a, 1),), (1,)), (1, (), (0,))])[2] == (1, 2)
    assert labelled_dfa(*chained([(1, (), (0,)), (2, ((0, a, 1),), (1,))]), 100).matches(b"a")
    optional = labelled_dfa(*chained([(2, ((0, a, 1),), (1,)), (3, ((0, b, 1), (1, b, 2)), (0, 1, 2)),
                                      (1, ((0, c, 0),), (0,)), (2, ((0, d, 1),), (0, 1))]), 100)
    pattern = re.compile(rb"a(b|bb)?c*d?")
    for text in map(bytes, itertools.product(b"abcd", repeat=4)):
        for cut in range(5):
            assert optional.matches(text[:cut]) == bool(pattern.fullmatch(text[:cut])), text[:cut]
    assert chained([(2, ((0, a, 3),), (1,)), (2, ((0, a, 1),), (1,))]) is None
    n, edges, accepting = chained([(2, ((0, a, 1),), (1,)), (2, ((0, ab, 1), (1, a, 0)), (1,))])
    chain = labelled_dfa(n, edges, accepting, 100)
    assert [chain.matches(t) for t in (b"aab", b"aabaab", b"a", b"ab", b"aaab")] == [True, True, False, False, False]


def test_automaton_node_refuses_states_out_of_range():
    with pytest.raises(GrammarError, match="automaton"):
        regexpr_to_dfa(ir.Automaton(2, ((0, ir.Literal(b"a"), 5),), (1,)))
    with pytest.raises(GrammarError, match="automaton"):
        regexpr_to_dfa(ir.Automaton(2, ((0, ir.Literal(b"a"), 1),), (2,)))


def test_anchor_is_local_to_its_pattern():
    # "$" inside an embedded pattern refers to the end of that pattern's match
    d = regexpr_to_dfa(ir.Concat((ir.Pattern("a$"), ir.Literal(b"b"))))
    assert d.matches(b"ab") and not d.matches(b"a\nb")
    d = regexpr_to_dfa(ir.Concat((ir.Literal(b"x"), ir.Pattern("^a"))))
    assert d.matches(b"xa")


def test_utf8_sequences_cover_exactly():
    for lo, hi in [(0, 0x10FFFF), (0x7F, 0x80), (0x7FF, 0x800), (0xFFFF, 0x10000), (0xD7FF, 0xE000), (0x3A5, 0x1F60A)]:
        total = 0
        for seq in utf8_sequences(((lo, hi),)):
            total += int(np.prod([b - a + 1 for a, b in seq]))
            for pick in (min, max):
                cp = ord(bytes(pick(r) for r in seq).decode("utf-8"))
                assert lo <= cp <= hi
        surrogates = max(0, min(hi, 0xDFFF) - max(lo, 0xD800) + 1)
        assert total == hi - lo + 1 - surrogates


def test_multibyte_classes_and_invalid_utf8():
    d = rx("[^a€]")
    assert d.matches("é".encode()) and d.matches("😀".encode()) and d.matches(b"\n")
    assert not d.matches("€".encode()) and not d.matches(b"a")
    for bad in [b"\xff", b"\x80", b"\xc3", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe0\x80\x80"]:
        assert not d.matches(bad)
    assert d.step(0, b"\xc3") >= 0  # a viable prefix of a character
    assert rx(".").matches("€".encode()) and not rx(".").matches(b"\n") and rx(".", "s").matches(b"\n")


# ------------------------------------------------------------ ByteDFA API


def test_bytedfa_api():
    d = rx("ab*")
    assert d.n_states == 2 and not d.nullable and not d.is_empty()
    assert d.step(0, b"abb") == 1 and d.step(0, b"ba") == -1 and d.step(-1, b"") == -1
    assert d.matches(b"a") and not d.matches(b"")
    assert len(d.fingerprint) == 64 and d.fingerprint == rx("a(?:b|b)*").fingerprint
    with pytest.raises(ValueError):
        d.transitions[0, 0] = 5
    e = rx("[^\\x00-\\U0010ffff]")
    assert e.is_empty() and e.transitions.shape == (0, 256) and not e.nullable
    assert not e.matches(b"") and e.step(0, b"") == -1
    assert rx("a*").nullable


# -------------------------------------------------------- limits, errors


def test_state_limit_raises_fast():
    t0 = time.perf_counter()
    with pytest.raises(DFATooLarge) as info:
        build_dfa(ir.Terminal(ir.Pattern("(a|b)*a(a|b){30}"), name="evil"))
    assert "evil" in str(info.value) and "10000" in str(info.value)
    with pytest.raises(DFATooLarge):
        build_dfa(ir.Terminal(ir.Pattern("(a|b)*a(a|b){12}")), max_states=500)
    with pytest.raises(DFATooLarge) as info:
        rx("(?:(?:a{1000}){1000}){1000}")  # NFA bound: never materialized
    assert time.perf_counter() - t0 < 10
    assert rx("a{0,1000}").n_states == 1001


# Hostile terminals: refused from an estimate (copies x fragment size, shortest or
# longest word) before the NFA or DFA is built; each well under a second.
HOSTILE = [
    "((a{100}){100}){100}",
    "(a{1000}){1000}",
    "a{65535}",
    "a{0,65535}",
    "(ab){2,50000}",
    "(a|b){0,30000}c",
    "(?:\\w{1,20}){1,500}",
    "(?:[a-z]x{50}|[0-9]y{50}|[A-Z]z{50}){300}",
]


@pytest.mark.parametrize("source", HOSTILE)
def test_hostile_repetition_is_refused_before_building(source: str) -> None:
    started = time.perf_counter()
    with pytest.raises(DFATooLarge, match="terminal hostile: (N|D)FA exceeds the limit") as info:
        build_dfa(ir.Terminal(ir.Pattern(source), name="hostile", span=ir.Span(3, 7)))
    assert (info.value.line, info.value.column) == (3, 7)
    assert time.perf_counter() - started < 1.0


def test_repetition_estimates_keep_what_fits() -> None:
    # just under the limits: built, and exact
    assert rx("a{9998}").n_states == 10000 - 1
    assert rx("(?:a+){0,60000}").n_states == 1  # (Y+){0,n} is Y*: merged, never copied
    assert rx("(?:(?:ab){2,}){3,60000}").n_states == rx("(?:ab){6,}").n_states
    for source in ["(?:(?:ab)+){2,3}", "(?:(?:ab)*){0,2}c", "(?:(?:ab){2,}){0,3}", "(?:a{0,}){2,}b"]:
        dfa = rx(source)
        for n in range(9):
            for chars in itertools.product("abc", repeat=n):
                text = "".join(chars)
                assert dfa.matches(text.encode()) == (re.fullmatch(source, text) is not None), (source, text)
    assert rx("(?:a|b){0,4000}").n_states == 4001
    assert rx("(?:(?=a)a){3000}").n_states == 3001  # a guarded item is left to the subset construction


@pytest.mark.parametrize(
    "source,fragment",
    [
        ("a(b", "unterminated"),
        ("(?<=a(?=b))b", "lookahead inside a lookbehind"),
        ("(?<=a$)b", "end anchor"),
        ("(a)\\1", "backreference"),
        ("(?P<x>a)(?P=x)", "backreference"),
        ("(a)?(?(1)b|c)", "conditional"),
        ("(?>a)", "atomic"),
        ("a*+", "possessive"),
        ("[z-a]", "bad character range"),
        ("(?:" * 3000 + ")" * 3000, "nested too deeply"),
    ],
)
def test_bad_regex_raises_grammar_error_with_position(source, fragment):
    term = ir.Terminal(ir.Pattern(source), name="t", span=ir.Span(3, 7))
    with pytest.raises(GrammarError) as info:
        build_dfa(term)
    err = info.value
    assert not isinstance(err, DFATooLarge)
    assert (err.line, err.column) == (3, 7)
    assert fragment in str(err) and "terminal t" in str(err)


def test_unknown_flag_and_bad_ranges():
    with pytest.raises(GrammarError):
        rx("a", "q")
    with pytest.raises(GrammarError):
        regexpr_to_dfa(ir.CharClass(((5, 3),)))
    with pytest.raises(GrammarError):
        regexpr_to_dfa(ir.ByteClass(((0, 256),)))


def test_deep_ir_needs_no_recursion():
    lits = ir.Concat(tuple(ir.Literal(bytes([97 + i % 3])) for i in range(5000)))
    assert regexpr_to_dfa(lits).n_states == 5001
    x: ir.RegExpr = ir.Literal(b"a")
    for _ in range(2000):
        x = ir.Alternation((x, ir.Literal(b"b")))
    d = regexpr_to_dfa(x)
    assert d.matches(b"a") and d.matches(b"b") and d.n_states == 2
    y: ir.RegExpr = ir.Literal(b"a")
    for _ in range(2000):
        y = ir.Repeat(ir.Concat((y, ir.Literal(b""))), 0, 1)
    assert regexpr_to_dfa(y).fingerprint == rx("a?").fingerprint
    assert rx("a" * 5000).n_states == 5001


# ------------------------------------------------------------ performance

JSON_STRING = r'"([^"\\\x00-\x1f]|\\(["\\/bfnrt]|u[0-9a-fA-F]{4}))*"'
JSON_NUMBER = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?"


@pytest.mark.parametrize("source,budget_ms", [(JSON_STRING, 50), (JSON_NUMBER, 20)])
def test_json_regexes_build_fast(source, budget_ms):
    rx(source)  # warm caches unrelated to this regex (numpy, code paths)
    best = float("inf")
    for _ in range(3):
        translate.cache_clear()
        t0 = time.perf_counter()
        dfa = rx(source)
        best = min(best, (time.perf_counter() - t0) * 1000)
    assert best < budget_ms
    assert dfa.matches(b'"a\\u00e9\\n\xc3\xa9"') if source == JSON_STRING else dfa.matches(b"-12.5e+3")


# ---------------------------------------------------- KBNF kinds vs kbnf

KBNF_PREFIX = {K.PLAIN: '#"', K.EARLY_END: '#e"', K.COMPLEMENT: '#ex"', K.SUBSTRINGS: '#substrs"'}
KBNF_ALPHABET = b"abc\n\xc3\xa9\xff"


@functools.lru_cache(maxsize=1)
def _kbnf_vocab():
    kbnf = importlib.import_module("kbnf")
    return kbnf.Vocabulary(
        {i: kbnf.Token(bytes([i])) for i in range(256)}, {i: bytes([i]).decode("latin-1") for i in range(256)}
    )


def _kbnf_engine(term_src: str):
    kbnf = importlib.import_module("kbnf")
    config = kbnf.Config()
    config.engine_config.rejected_token_prefix_cache_enabled = False
    return kbnf.Engine(f'start ::= {term_src} "\\x01";', _kbnf_vocab(), config)


KBNF_CASES = [
    (K.EARLY_END, "ab*"),
    (K.EARLY_END, "a|ab"),
    (K.EARLY_END, "(ab)*"),
    (K.EARLY_END, "a*"),
    (K.EARLY_END, "b*a|bb"),
    (K.EARLY_END, "(a|ab)(c|bcd)"),
    (K.EARLY_END, "[^a]+a"),
    (K.EARLY_END, ".*\n\n"),
    (K.COMPLEMENT, "a"),
    (K.COMPLEMENT, "ab"),
    (K.COMPLEMENT, "a|b|c"),
    (K.COMPLEMENT, "ba|aa"),
    (K.COMPLEMENT, "ba*c"),
    (K.COMPLEMENT, "."),
    (K.COMPLEMENT, "é"),
    (K.COMPLEMENT, "a*"),
    (K.SUBSTRINGS, "AB"),
    (K.SUBSTRINGS, "abcab"),
    (K.SUBSTRINGS, "aé"),
    (K.SUBSTRINGS, ""),
    (K.PLAIN, "a*b?"),
    (K.PLAIN, "[^a]c"),
]


def _assert_agrees_with_kbnf(kind: ir.TerminalKind, source: str, alphabet: bytes, max_len: int) -> None:
    expr = ir.Literal(source.encode()) if kind == K.SUBSTRINGS else ir.Pattern(source)
    dfa = build_dfa(ir.Terminal(expr, kind))
    assert_well_formed(dfa)
    engine = _kbnf_engine(KBNF_PREFIX[kind] + source.replace("\n", "\\n") + '"')
    mismatches = []
    for n in range(max_len + 1):
        for t in itertools.product(alphabet, repeat=n):
            s = bytes(t)
            viable, member = sentinel_status(engine, s)
            state = dfa.step(0, s)
            ours = (state >= 0, state >= 0 and bool(dfa.accepting[state]))
            if dfa.is_empty() and s == b"":
                ours = (True, False)  # kbnf has no empty-language value: "" stays a dead end there
            if ours != (viable, member):
                mismatches.append((s, (viable, member), ours))
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize("kind,source", KBNF_CASES)
def test_kinds_agree_with_kbnf(kind, source):
    alphabet = KBNF_ALPHABET + (b"AB" if kind == K.SUBSTRINGS else b"")
    _assert_agrees_with_kbnf(kind, source, alphabet, 4)


# regexes whose Rust (kbnf) and Python readings coincide
_KBNF_LEAVES = st.sampled_from(["a", "b", "c", ".", "[ab]", "[^a]", "[a-c]", "é", "[^é]", ""])


def _kbnf_extend(children):
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map("".join),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
        st.tuples(children, st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,3}"])).map(
            lambda t: "(?:" + t[0] + ")" + t[1]
        ),
    )


@SETTINGS
@given(st.recursive(_KBNF_LEAVES, _kbnf_extend, max_leaves=6), st.sampled_from([K.PLAIN, K.EARLY_END, K.COMPLEMENT]))
def test_random_kinds_agree_with_kbnf(source, kind):
    _assert_agrees_with_kbnf(kind, source, b"abc\xc3\xa9\xff", 4)


@SETTINGS
@given(st.text("abé", max_size=6))
def test_random_substrings_agree_with_kbnf(text):
    _assert_agrees_with_kbnf(K.SUBSTRINGS, text, "abé".encode(), 4)


@SETTINGS
@given(st.binary(max_size=12).map(lambda b: bytes(x % 3 + 97 for x in b)) | st.text("aé€", max_size=6).map(str.encode))
def test_literal_substrings_matches_generic_factor_automaton(data):
    fast = build_dfa(ir.Terminal(ir.Literal(data), K.SUBSTRINGS))
    generic = build_dfa(ir.Terminal(ir.Concat((ir.Literal(data),)), K.SUBSTRINGS))
    assert fast.fingerprint == generic.fingerprint
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            assert fast.matches(data[i:j])


def test_kind_edge_cases():
    assert build_dfa(ir.Terminal(ir.Pattern(""), K.EARLY_END)).is_empty()
    assert build_dfa(ir.Terminal(ir.Pattern("a?"), K.COMPLEMENT)).is_empty()
    every = build_dfa(ir.Terminal(ir.CharClass(()), K.COMPLEMENT))
    assert every.matches(b"\xff\x00") and not every.nullable and every.n_states == 2
    assert build_dfa(ir.Terminal(ir.Literal(b"abc"), K.SUBSTRINGS)).nullable
    # suffix automaton size: at most 2n - 1 states for a literal of length n >= 2
    assert build_dfa(ir.Terminal(ir.Literal(b"abcbcab" * 3), K.SUBSTRINGS)).n_states <= 2 * 21 - 1
    with pytest.raises(DFATooLarge):
        build_dfa(ir.Terminal(ir.Pattern("a(a|b){12}"), K.COMPLEMENT), max_states=1000)
    with pytest.raises(DFATooLarge):
        build_dfa(ir.Terminal(ir.Literal(b"ab" * 600), K.SUBSTRINGS), max_states=1000)
    t0 = time.perf_counter()
    assert build_dfa(ir.Terminal(ir.Literal(b"a" * 5000), K.SUBSTRINGS)).n_states == 5001
    assert time.perf_counter() - t0 < 5  # linear, not quadratic


def test_dfa_memo_keeps_the_recently_used_within_its_bounds(monkeypatch):
    """The process-wide DFA memos stay within their entry and byte bounds, dropping the least recently used
    first: a lexeme every schema shares (a tag's pattern) stays while one-off lexemes come and go. A DFA is
    held packed (a column per class of bytes); a hit returns the DFA a grammar still holds, else the same
    language unpacked, arrays and fingerprint equal."""
    import gc

    from kbnf_gpu.automata import build

    def packed_bytes(n_states):  # ``x{n-1}``: n states, two classes of bytes (``x`` and the rest)
        return n_states * 2 * 4 + 256

    monkeypatch.setattr(build, "_MEMO_BYTES_LIMIT", packed_bytes(3) + packed_bytes(4) + packed_bytes(3))
    cache: dict = {}
    made = []

    def get(key, n_states):
        def make():
            made.append(key)
            return regexpr_to_dfa(ir.Literal(b"x" * (n_states - 1)))
        return build._memo(cache, 4, key, make)

    shared = get("shared", 3)
    assert shared.n_states == 3
    for i in range(12):
        get(f"once{i}", 1 + i % 4)
        assert get("shared", 3) is shared  # used again: never the oldest; held: the same object
        assert len(cache) <= 4 and sum(x.nbytes for x in cache.values()) <= build._MEMO_BYTES_LIMIT
        assert build._memo_bytes[id(cache)] == sum(x.nbytes for x in cache.values())
    assert made.count("shared") == 1
    get("once0", 1)
    assert made.count("once0") == 2  # long evicted: made anew
    expected = (shared.transitions.copy(), shared.accepting.copy(), shared.fingerprint)
    del shared
    gc.collect()
    again = get("shared", 3)  # no grammar holds it: unpacked from the memo, not made again
    assert made.count("shared") == 1
    assert np.array_equal(again.transitions, expected[0]) and np.array_equal(again.accepting, expected[1])
    assert again.fingerprint == expected[2] == regexpr_to_dfa(ir.Literal(b"xx")).fingerprint
    assert again.matches(b"xx") and not again.matches(b"x")
    # the empty language (a lookahead's body that matches nothing) round-trips too: 0 states, 256 columns
    from kbnf_gpu.automata.dfa import empty_dfa

    nothing = build._Packed.of(empty_dfa()).unpacked()
    assert nothing.transitions.shape == (0, 256) and nothing.fingerprint == empty_dfa().fingerprint
    assert build.complement_bytes(nothing).matches(b"anything")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=6), min_size=2, max_size=12), st.sampled_from([4, 12, 10_000]))
@example(words=[b"\x00", b"\x01\x00\x00"], limit=4)  # the subset construction passes 4 states before minimizing
def test_a_union_of_literals_is_their_minimized_trie(words, limit):
    """An alternation of literals (an enum's words) is built as their trie, minimized: the very DFA the subset
    construction gives (same fingerprint); refused only when that minimal DFA passes ``max_states`` (or, words
    of a trie larger than twice that being left to the subset construction, when it does)."""
    from kbnf_gpu.automata.build import _Context, _determinized, _nfa_limit, regexpr_to_dfa, trie_size
    from kbnf_gpu.automata.dfa import LazyDFA

    nodes = len({w[:i] for w in words for i in range(len(w) + 1)})  # the trie's nodes: the distinct prefixes
    assert trie_size(words) == nodes
    expr = ir.Alternation(tuple(ir.Literal(w) for w in words))
    expected = _determinized(expr, 10_000, _nfa_limit(10_000), _Context("words"))
    try:
        got = regexpr_to_dfa(expr, max_states=limit)
    except DFATooLarge:
        assert expected.n_states > limit or nodes > 2 * limit
        return
    assert got.fingerprint == expected.fingerprint
    for w in set(words) | {w + b"x" for w in words} | {w[:-1] for w in words}:
        q = 0
        for byte in w:
            q = int(got.transitions[q][byte]) if q >= 0 else -1
        assert (q >= 0 and bool(got.accepting[q])) == (w in words), w
    # as a grammar's terminal: made on first use when the trie fits (so the DFA does), what the parser asks
    # before answered from the words, then the same DFA
    lazy = build_dfa(ir.Terminal(expr), max_states=limit)
    assert isinstance(lazy, LazyDFA) == (nodes <= limit)
    if isinstance(lazy, LazyDFA):
        assert (lazy.nullable, lazy.exits_start) == (expected.nullable, expected.has_exit_list[0])
        assert lazy.fingerprint == expected.fingerprint and lazy.built  # (a memo hit may have been built before)


@given(st.text(alphabet="ab\u00e9", max_size=12), st.text(alphabet="ab\u00e9", max_size=12))
def test_common_prefix_length_is_the_longest_shared_prefix(a: str, b: str) -> None:
    from kbnf_gpu.automata.build import common_prefix_length

    n = common_prefix_length(a, b)
    assert a[:n] == b[:n] and (n == min(len(a), len(b)) or a[n] != b[n])
    assert common_prefix_length(a.encode(), b.encode()) == len(os.path.commonprefix([a.encode(), b.encode()]))


@given(st.integers(0, 6), st.integers(0, 5), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_distinct_rows_partitions_as_unique_does(n: int, width: int, values: int, seed: int) -> None:
    """``distinct_rows`` groups rows exactly as ``np.unique(axis=0)`` does; its first rows are each class's first."""
    from kbnf_gpu.automata.dfa import distinct_rows

    a = np.random.default_rng(seed).integers(-1, values, size=(n, width)).astype(np.int32)
    first, inverse = distinct_rows(a)
    assert inverse.shape == (n,)
    same = inverse[:, None] == inverse[None, :]
    assert (same == (a[:, None, :] == a[None, :, :]).all(axis=2)).all()
    assert sorted(first.tolist()) == sorted(int(np.flatnonzero(inverse == c)[0]) for c in set(inverse.tolist()))
    assert (inverse[first] == np.arange(len(first))).all()


def test_general_categories_partition_the_code_points_as_unicodedata_says() -> None:
    """The one category table (the JSON Schema and Rust-regex front ends' ``\\p{..}``): every code point in
    exactly one category, the one ``unicodedata`` gives it (checked on every 89th code point and at each
    run's ends); a one-letter group and ``LC`` are the unions of their members."""
    import unicodedata

    table = charset.general_categories()
    spans = sorted((lo, hi, name) for name, ranges in table.items() for lo, hi in ranges)
    assert spans[0][0] == 0 and spans[-1][1] == 0x10FFFF
    assert all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:]))  # disjoint, no gap
    for lo, hi, name in spans:
        assert unicodedata.category(chr(lo)) == name == unicodedata.category(chr(hi)), (lo, hi, name)
    for lo, hi, name in spans:
        for cp in range(lo + (-lo) % 89, hi + 1, 89):
            assert unicodedata.category(chr(cp)) == name, cp
    assert charset.general_category("L") == charset.union(*(table[n] for n in ("Lu", "Ll", "Lt", "Lm", "Lo")))
    assert charset.general_category("LC") == charset.union(table["Lu"], table["Ll"], table["Lt"])
    assert charset.general_category("Nd") == table["Nd"] and charset.general_category("Xx") == ()


def test_building_a_string_lexeme_leaves_no_reference_cycle():
    """The construction that replaces a string lexeme's labels by their DFAs (``_labels_determinized``)
    leaves no cycle behind: its label DFAs and expression are freed when it returns, not held until a
    garbage collection (compilations pause the collector, so they would pile up for the whole compile)."""
    import gc

    from kbnf_gpu.automata.build import DFALeaf
    from kbnf_gpu.frontends.json_schema import parse_json_schema
    from kbnf_gpu.normalize import normalize

    schema = {"type": "string", "pattern": r"^[a-z\p{N}]+-[0-9]{2}q\.x$"}  # a pattern no other test builds
    gc.collect()
    gc.disable()
    try:
        normalize(parse_json_schema(schema))
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [x for x in gc.garbage if isinstance(x, (DFALeaf, ByteDFA))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not left


# ------------------------------------------------- memo keys (ir.fingerprint)


def _ir_exprs():
    """Small terminal-language expressions over a tiny alphabet, so that equal and near-equal ones both come up."""
    leaves = st.one_of(
        st.binary(max_size=2).map(ir.Literal),
        st.sampled_from([((97, 98),), ((97, 97), (99, 99)), ((0, 0x10FFFF),)]).map(ir.CharClass),
        st.sampled_from([((0, 127),), ((97, 98),)]).map(ir.ByteClass),
        st.sampled_from([("a+", ""), ("a+", "i"), ("[ab]", "")]).map(lambda p: ir.Pattern(*p)),
    )

    def extend(children):
        return st.one_of(
            st.lists(children, min_size=1, max_size=3).map(lambda xs: ir.Concat(tuple(xs))),
            st.lists(children, min_size=1, max_size=3).map(lambda xs: ir.Alternation(tuple(xs))),
            st.tuples(children, st.integers(0, 2), st.sampled_from([None, 2, 3])).map(lambda t: ir.Repeat(*t)),
            st.lists(children, min_size=1, max_size=2).map(
                lambda xs: ir.Automaton(2, tuple((0, x, 1) for x in xs), (1,))),
        )

    return st.recursive(leaves, extend, max_leaves=6)


@SETTINGS
@given(_ir_exprs(), _ir_exprs())
def test_fingerprint_is_equal_exactly_for_equal_expressions(a, b):
    """The DFA memos are keyed by ``ir.fingerprint``: it must tell apart what equality tells apart."""
    fa, fb = ir.fingerprint(a), ir.fingerprint(b)
    assert isinstance(fa, bytes) and len(fa) == 32
    assert (fa == fb) == (a == b)
    copy = pickle.loads(pickle.dumps(a))  # a fresh tree of the same structure: the kept digests are not pickled
    assert "_fingerprint" not in copy.__dict__ and ir.fingerprint(copy) == fa


def test_fingerprint_nests_deep_and_declines_unknown_nodes():
    deep = ir.Literal(b"x")
    for i in range(5000):  # far past the interpreter's recursion limit
        deep = ir.Concat((ir.Literal(b"a"), deep)) if i % 2 else ir.Repeat(deep, 0, 2)
    assert len(ir.fingerprint(deep)) == 32
    assert ir.fingerprint(ir.Concat((ir.Literal(b"a"), object()))) is None


def test_terminal_memo_holds_digests_not_expressions():
    """Equal terminals made apart share one DFA, and the memo keeps no expression alive (a full collection
    would scan every node of thousands of them)."""
    from kbnf_gpu.automata import build

    def make():
        return ir.Terminal(ir.Concat((ir.Literal(b"fp-"), ir.Repeat(ir.CharClass(((48, 57),)), 1, 7))))

    first, second = build_dfa(make()), build_dfa(make())
    assert second is first
    assert all(isinstance(key[0], bytes) for key in build._FLAT_CACHE)


def test_lexeme_made_on_first_use_holds_few_objects_till_then():
    """A server's memo holds a thousand unbuilt lexemes: each must hold a few objects for the garbage collector
    to scan, whatever its number of states (its layout is arrays, not per-state lists of tuples)."""
    import gc
    import types

    from kbnf_gpu.automata.labelled import lazy_labelled_dfa
    from kbnf_gpu.frontends.json_schema._strings import encode

    def tracked_behind(lazy) -> int:
        """Tracked objects its maker's closure holds (what it reads, not the module it reads it from)."""
        seen, stack, n = set(), [cell.cell_contents for cell in lazy._make.__closure__], 0
        while stack:
            obj = stack.pop()
            if id(obj) in seen or isinstance(obj, (types.ModuleType, type, types.FunctionType)):
                continue
            seen.add(id(obj))
            n += gc.is_tracked(obj)
            stack.extend(gc.get_referents(obj))
        return n

    label = encode(ir.CharClass(((0x61, 0x66), (0x3B1, 0x3B5))))
    held = []
    for n in (3, 60):
        edges = [(i, label, i + 1) for i in range(n - 1)]
        lazy = lazy_labelled_dfa(n, [(p, regexpr_to_dfa(lb), q) for p, lb, q in edges], (n - 1,), 10_000)
        held.append(tracked_behind(lazy))
        assert lazy.matches("aβ".encode() * ((n - 1) // 2) + b"a" * ((n - 1) % 2)) and not lazy.matches(b"a" * n)
    assert held[1] == held[0] < 25, held
