"""``Matcher``: transactional accepts, rollback/fork/reset, bitmasks, EOS and eager ends, Leo, jump-forward.

The last part is a brute-force differential in ``eos`` mode: hypothesis
writes small KBNF grammars and vocabularies, and an independent oracle that
works on the generated grammar itself (not on our front end or normalizer)
decides the exact allowed set after each prefix.
"""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import compile_config
from kbnf_gpu import Matcher, TokenRejected, Vocabulary, compile_grammar
from kbnf_gpu.runtime import matcher as matcher_module

CONFIGS = [False, True]  # the exact reference mask and the tables


def compile_kbnf(src: str, vocab: Vocabulary, end_mode: str, use_tables: bool | None = None):
    return compile_grammar(src, vocab, syntax="kbnf", end_mode=end_mode, config=compile_config(use_tables))


def snapshot(m: Matcher) -> tuple:
    return (m.state, m.allowed_token_ids().tolist(), m.num_tokens, m.is_finished(), m.is_accepting())


# --------------------------------------------------------- a small grammar
LIST_GRAMMAR = r"""
start ::= value;
value ::= "[" "]" | "[" value ("," value)* "]" | #"[0-9]+" | "\"" #"[a-z]*" "\"";
"""
LIST_TOKENS = [
    b"[", b"]", b",", b"0", b"1", b"12", b"\"", b"a", b"ab", b"\"a", b"],", b"[]", b"\",", b"1]",
    b"[[", b"]]", b"x", b"a\"", b"9,", b"[\"",
]
EOS_ID = len(LIST_TOKENS)  # b"</s>"
SPECIAL_ID = EOS_ID + 1  # b"[" but special: never allowed
PAD_SIZE = 70  # ids past SPECIAL_ID are padding


def list_vocab() -> Vocabulary:
    tokens = {i: b for i, b in enumerate(LIST_TOKENS)}
    tokens[EOS_ID] = b"</s>"
    tokens[SPECIAL_ID] = b"["
    return Vocabulary(tokens, special_ids=(SPECIAL_ID,), eos_ids=(EOS_ID,), size=PAD_SIZE)


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda t: "tables" if t else "reference")
def list_grammar(request):
    return compile_kbnf(LIST_GRAMMAR, list_vocab(), "eos", request.param)


def tid(b: bytes) -> int:
    return LIST_TOKENS.index(b)


# --------------------------------------------- rollback / fork / reset model
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("accept"), st.integers(0, 7), st.integers(0, 1 << 30)),
        st.tuples(st.just("junk"), st.integers(0, 7), st.integers(-3, PAD_SIZE + 3)),
        st.tuples(st.just("bytes"), st.integers(0, 7), st.sampled_from([b"[", b"1,2", b"\"ab\"", b"]", b"[1", b"a"])),
        st.tuples(st.just("rollback"), st.integers(0, 7), st.integers(0, 6)),
        st.tuples(st.just("fork"), st.integers(0, 7)),
        st.tuples(st.just("reset"), st.integers(0, 7)),
    ),
    max_size=40,
)


def replay(compiled, history: list) -> Matcher:
    m = Matcher(compiled)
    for step in history:
        if isinstance(step, bytes):
            m.accept_bytes(step)
        else:
            m.accept_token(step)
    return m


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_any_interleaving_equals_replay(list_grammar, ops):
    compiled = list_grammar
    pool: list[tuple[Matcher, list]] = [(Matcher(compiled), [])]
    for op in ops:
        k = op[1] % len(pool)
        m, hist = pool[k]
        before = snapshot(m)
        if op[0] == "accept":
            allowed = m.allowed_token_ids()
            if allowed.size:
                t = int(allowed[op[2] % allowed.size])
                m.accept_token(t)
                hist = hist + [t]
            else:
                assert m.is_finished() or not m.is_accepting()
        elif op[0] in ("junk", "bytes"):
            try:
                m.accept_token(op[2]) if op[0] == "junk" else m.accept_bytes(op[2])
            except TokenRejected:
                assert snapshot(m) == before
            else:
                hist = hist + [op[2]]
        elif op[0] == "rollback":
            n = op[2]
            if n > len(hist):
                with pytest.raises(ValueError):
                    m.rollback(n)
                assert snapshot(m) == before
            else:
                m.rollback(n)
                hist = hist[: len(hist) - n]
        elif op[0] == "fork":
            pool.append((m.fork(), list(hist)))
        else:
            m.reset()
            hist = []
        pool[k] = (m, hist)
        for other, h in pool:  # every matcher equals the replay of its own history
            assert snapshot(other) == snapshot(replay(compiled, h)), h


@pytest.mark.parametrize("use_tables", CONFIGS)
def test_returned_arrays_cannot_corrupt_shared_caches(use_tables):
    """``allowed_token_ids`` may return a cached array: it must be read-only (or a copy)."""
    list_grammar = compile_kbnf(LIST_GRAMMAR, list_vocab(), "eos", use_tables)  # private: this test may corrupt it
    m = Matcher(list_grammar)
    first = m.allowed_token_ids()
    expected = first.tolist()
    try:
        first[0] = 99
    except ValueError:
        pass  # read-only: fine
    assert Matcher(list_grammar).allowed_token_ids().tolist() == expected
    assert m.allowed_token_ids().tolist() == expected
    bitmask = torch.zeros((1, 3), dtype=torch.int32)
    m.fill_bitmask(bitmask)
    assert decode_bitmask_row(bitmask[0], list_grammar.vocab.size) == expected


def test_fork_is_independent(list_grammar):
    m = Matcher(list_grammar)
    m.accept_token(tid(b"["))
    f = m.fork()
    f.accept_token(tid(b"1]"))
    assert f.is_accepting() and not m.is_accepting()
    assert m.num_tokens == 1 and f.num_tokens == 2
    m.rollback(1)
    assert f.num_tokens == 2 and f.is_accepting()
    f.accept_token(EOS_ID)
    assert f.is_finished() and not m.is_finished()


# ------------------------------------------------------------- rejections
def _rejection_cases():
    return {
        "disallowed": lambda: tid(b"]"),
        "out_of_range": lambda: PAD_SIZE,
        "huge": lambda: 1 << 40,
        "negative": lambda: -1,
        "special": lambda: SPECIAL_ID,
        "padding": lambda: PAD_SIZE - 1,
        "eos_not_accepting": lambda: EOS_ID,
        "not_an_int": lambda: "0",
        "float": lambda: 1.0,
        "numpy_out_of_range": lambda: np.int64(PAD_SIZE),
    }


def test_numpy_and_python_token_ids_step_alike(list_grammar):
    a, b = Matcher(list_grammar), Matcher(list_grammar)
    for t in (b"[", b"1", b"]"):
        a.accept_token(tid(t))
        b.accept_token(np.int32(tid(t)))
        assert a.allowed_token_ids().tolist() == b.allowed_token_ids().tolist()
    assert a.is_accepting() and b.is_accepting()


def test_compiled_step_token_refuses_ids_outside_the_vocabulary(list_grammar):
    """Its memo key (state uid * span + id) is unique only for vocabulary ids: others raise, never alias."""
    state = Matcher(list_grammar).state
    for bad in (-1, list_grammar.vocab.size + 10**6):
        with pytest.raises(ValueError, match="outside the vocabulary"):
            list_grammar.step_token(state, bad)
    after, _ = list_grammar.step_token(state, tid(b"["))
    assert after is not state


@pytest.mark.parametrize("case", sorted(_rejection_cases()))
@pytest.mark.parametrize("prefix", [[], [b"[", b"1"], [b"[", b"\"a"]])
def test_rejected_token_leaves_state_unchanged(list_grammar, case, prefix):
    m = Matcher(list_grammar)
    for b in prefix:
        m.accept_token(tid(b))
    token = _rejection_cases()[case]()
    if case == "disallowed" and prefix:
        token = tid(b"[]")  # "[" + "1" + "[]" and "[" + "\"a" + "[]" are dead
    before = snapshot(m)
    assert type(token) is not int or token not in set(before[1])
    assert not m.is_token_allowed(token)
    with pytest.raises(TokenRejected):
        m.accept_token(token)
    assert snapshot(m) == before
    # the special token's bytes ("[") are allowed as a normal token here
    if case == "special" and not prefix:
        assert tid(b"[") in before[1]


def test_accept_tokens_all_or_nothing(list_grammar):
    m = Matcher(list_grammar)
    before = snapshot(m)
    with pytest.raises(TokenRejected):
        m.accept_tokens([tid(b"["), tid(b"1"), tid(b"[[")])
    assert snapshot(m) == before
    m.accept_tokens([tid(b"["), tid(b"1"), tid(b"]")])
    assert m.num_tokens == 3 and m.is_accepting()


def test_accept_bytes_all_or_nothing(list_grammar):
    m = Matcher(list_grammar)
    m.accept_token(tid(b"["))
    before = snapshot(m)
    for bad in (b"1,]", b"1,2x", b"\xff", b"]]"):
        with pytest.raises(TokenRejected):
            m.accept_bytes(bad)
        assert snapshot(m) == before
    m.accept_bytes(b"12,\"ab\"")  # one step, ending where no token boundary is
    assert m.num_tokens == 2
    by_parts = replay(list_grammar, [tid(b"["), b"1", b"2", tid(b","), tid(b"\"a"), b"b\""])
    assert m.state == by_parts.state
    assert m.allowed_token_ids().tolist() == by_parts.allowed_token_ids().tolist()
    m.rollback(1)
    assert snapshot(m) == before


# --------------------------------------------------------------- bitmask
def decode_bitmask_row(row: torch.Tensor, size: int) -> list[int]:
    words = row.numpy().astype(np.int32).view(np.uint32)
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")
    assert not bits[size:].any(), "bits set past the vocabulary"
    return np.flatnonzero(bits[:size]).tolist()


@pytest.mark.parametrize("numpy_view", [True, False], ids=["numpy-view", "torch-copy"])
@pytest.mark.parametrize("extra_words", [0, 2])
def test_fill_bitmask_layout(list_grammar, extra_words, numpy_view, monkeypatch):
    if not numpy_view:  # the path a tensor numpy cannot view takes (a GPU bitmask)
        monkeypatch.setattr(matcher_module, "_numpy_rows", lambda bitmask: None)
    size = list_grammar.vocab.size
    width = (size + 31) // 32 + extra_words
    matchers = [Matcher(list_grammar) for _ in range(4)]
    matchers[1].accept_token(tid(b"["))
    matchers[2].accept_tokens([tid(b"["), tid(b"1")])
    matchers[3].accept_tokens([tid(b"1")])
    matchers[3].accept_token(EOS_ID)  # finished: an all-zero row
    bitmask = torch.full((6, width), -7, dtype=torch.int32)
    rows = [5, 0, 3, 1]
    for again in (False, True):  # again: every mask's words are cached (a server's step; the short path)
        if again:
            bitmask.fill_(-7)
        for m, r in zip(matchers, rows):
            m.fill_bitmask(bitmask, r)
        for m, r in zip(matchers, rows):
            assert decode_bitmask_row(bitmask[r], size) == m.allowed_token_ids().tolist()
            assert (bitmask[r, (size + 31) // 32 :] == 0).all()
        assert (bitmask[[2, 4]] == -7).all(), "rows not named by index were written"
    assert decode_bitmask_row(bitmask[1], size) == []
    # default index 0 and the bit layout of a single known token
    one = torch.zeros((1, width), dtype=torch.int32)
    Matcher(list_grammar).fill_bitmask(one)
    t = tid(b"[")
    assert int(one[0, t // 32]) >> (t % 32) & 1 == 1


def test_fill_bitmask_follows_a_reused_bitmask_whose_memory_changes(list_grammar):
    """The numpy view of the last bitmask is kept between calls: a tensor given new memory (``set_``) or another
    tensor (a slice of the same memory too) is written where it lives now, and nothing else is."""
    size = list_grammar.vocab.size
    width = (size + 31) // 32
    m = Matcher(list_grammar)
    expected = m.allowed_token_ids().tolist()
    bitmask = torch.zeros((2, width), dtype=torch.int32)
    m.fill_bitmask(bitmask, 0)
    m.fill_bitmask(bitmask, 1)  # through the kept view
    assert decode_bitmask_row(bitmask[1], size) == expected
    before = bitmask[:]  # another tensor object on the same memory
    before.fill_(-5)
    bitmask.set_(torch.full((3, width), -7, dtype=torch.int32))  # the same tensor object, new memory
    m.fill_bitmask(bitmask, 1)
    assert decode_bitmask_row(bitmask[1], size) == expected and (bitmask[[0, 2]] == -7).all()
    assert (before == -5).all(), "written into the memory the tensor had before"
    m.fill_bitmask(bitmask[1:], 1)  # a slice: row 2 of the whole
    assert decode_bitmask_row(bitmask[2], size) == expected and (bitmask[0] == -7).all()
    pointer = bitmask.data_ptr()
    bitmask.resize_(1, width)  # the same memory, one row now: row 1 is no longer there
    assert bitmask.data_ptr() == pointer
    with pytest.raises(IndexError):
        m.fill_bitmask(bitmask, 1)


def test_fill_bitmask_sign_bit_and_high_ids():
    # allowed tokens at ids 0, 31, 63 and 64 (bit 31 is the int32 sign bit)
    tokens = {i: bytes([0x41 + i % 26]) * 2 for i in range(66)}
    tokens.update({0: b"w", 31: b"x", 63: b"y", 64: b"z"})
    vocab = Vocabulary(tokens)
    for use_tables in CONFIGS:
        compiled = compile_kbnf('start ::= #"[wxyz]+" ";";', vocab, "eos", use_tables)
        m = Matcher(compiled)
        assert m.allowed_token_ids().tolist() == [0, 31, 63, 64]
        bitmask = torch.zeros((2, 3), dtype=torch.int32)
        m.fill_bitmask(bitmask, 1)
        assert int(bitmask[1, 0]) == (1 | -(1 << 31))
        assert int(bitmask[1, 1]) == -(1 << 31)
        assert int(bitmask[1, 2]) == 1
        assert decode_bitmask_row(bitmask[1], vocab.size) == [0, 31, 63, 64]


# ------------------------------------------------------------------- EOS
def test_eos_allowed_iff_accepting(list_grammar):
    m = Matcher(list_grammar)
    for tokens in ([], [b"["], [b"[", b"1"], [b"[", b"1]"], [b"12"], [b"\"a"], [b"\"a", b"a\""]):
        m.reset()
        for b in tokens:
            m.accept_token(tid(b))
        allowed = set(m.allowed_token_ids().tolist())
        assert (EOS_ID in allowed) == m.is_accepting()
        assert SPECIAL_ID not in allowed
        assert not m.is_finished()
    # a complete number can still continue: digits and EOS both allowed
    m.reset()
    m.accept_token(tid(b"1"))
    assert {EOS_ID, tid(b"0"), tid(b"12")} <= set(m.allowed_token_ids().tolist())


def test_eos_finishes_then_nothing(list_grammar):
    m = Matcher(list_grammar)
    m.accept_tokens([tid(b"["), tid(b"1]")])
    n = m.num_tokens
    m.accept_token(EOS_ID)
    assert m.is_finished() and m.num_tokens == n + 1
    assert m.allowed_token_ids().tolist() == []
    for t in range(-1, PAD_SIZE + 1):
        assert not m.is_token_allowed(t)
        with pytest.raises(TokenRejected):
            m.accept_token(t)
        assert m.is_finished()
    with pytest.raises(TokenRejected):
        m.accept_bytes(b"1")
    bitmask = torch.full((1, 3), -1, dtype=torch.int32)
    m.fill_bitmask(bitmask)
    assert (bitmask == 0).all()
    assert m.find_jump_forward_bytes() == b""
    m.rollback(1)  # un-finish
    assert not m.is_finished() and EOS_ID in m.allowed_token_ids().tolist()


def test_several_eos_ids():
    vocab = Vocabulary({0: b"a", 1: b"<eot>", 2: b"<eos>", 3: b"b"}, eos_ids=(1, 2))
    for use_tables in CONFIGS:
        compiled = compile_kbnf('start ::= "a" "b"?;', vocab, "eos", use_tables)
        m = Matcher(compiled)
        assert m.allowed_token_ids().tolist() == [0]
        m.accept_token(0)
        assert m.allowed_token_ids().tolist() == [1, 2, 3]
        f = m.fork()
        f.accept_token(2)
        assert f.is_finished()
        m.accept_token(3)
        assert m.allowed_token_ids().tolist() == [1, 2]
        m.accept_token(1)
        assert m.is_finished()


# ------------------------------------------------------------- eager mode
EAGER_TOKENS = {0: b"a", 1: b"ab", 2: b"abc", 3: b"abcd", 4: b"b", 5: b"c", 6: b"<eos>", 7: b"bc"}


@pytest.mark.parametrize("use_tables", CONFIGS)
def test_eager_finish_semantics(use_tables):
    vocab = Vocabulary(EAGER_TOKENS, eos_ids=(6,))
    compiled = compile_kbnf('start ::= "a" | "abc";', vocab, None, use_tables)
    assert compiled.end_mode == "eager"  # KBNF's default
    m = Matcher(compiled)
    assert m.allowed_token_ids().tolist() == [0, 1, 2]  # not "abcd", never EOS
    f = m.fork()
    f.accept_token(1)  # "ab" passes the sentence "a" inside the token: finished
    assert f.is_finished()
    assert f.allowed_token_ids().tolist() == []
    f = m.fork()
    f.accept_token(0)
    assert f.is_finished()
    with pytest.raises(TokenRejected):
        f.accept_token(7)  # "bc" would complete "abc", but the matcher has finished
    f = m.fork()
    f.accept_token(2)
    assert f.is_finished()
    with pytest.raises(TokenRejected):
        m.accept_token(6)  # EOS is never allowed in eager mode
    # eager mode never offers EOS, even where the output is a sentence
    compiled = compile_kbnf('start ::= "ab" "c"?;', vocab, "eager", use_tables)
    m = Matcher(compiled)
    m.accept_token(0)
    assert m.allowed_token_ids().tolist() == [4, 7]
    assert not m.is_finished()
    m.accept_token(7)  # "a" + "bc": completed at "ab" inside the token
    assert m.is_finished()


# ------------------------------------------------------------------- Leo
@pytest.mark.parametrize(
    "grammar",
    ['start ::= "A" start | "A";', 'start ::= start "A" | "A";', 'start ::= "A" start?;', 'start ::= "A"+;'],
)
def test_ten_thousand_tokens_constant_state(grammar):
    vocab = Vocabulary({0: b"A", 1: b"<eos>"}, eos_ids=(1,))
    compiled = compile_kbnf(grammar, vocab, "eos")
    m = Matcher(compiled)
    m.accept_token(0)
    m.accept_token(0)
    live = compiled.parser.live_items(m.state)
    states = set()
    for _ in range(10_000):
        m.accept_token(0)
        assert compiled.parser.live_items(m.state) == live
        states.add(m.state)
        assert m.allowed_token_ids().tolist() == [0, 1]
    assert len(states) <= 2
    assert m.num_tokens == 10_002
    m.accept_token(1)
    assert m.is_finished()


# ---------------------------------------------------------- jump-forward
def test_find_jump_forward_bytes():
    vocab = Vocabulary({0: b"h", 1: b"hello", 2: b" ", 3: b"w", 4: b"t", 5: b"!", 6: b"<eos>"}, eos_ids=(6,))
    compiled = compile_kbnf('start ::= "hello" " " ("world" | "there" | "wide") "!";', vocab, "eos")
    m = Matcher(compiled)
    assert m.find_jump_forward_bytes() == b"hello "
    assert m.find_jump_forward_bytes(limit=3) == b"hel"
    m.accept_bytes(b"hello ")
    assert m.find_jump_forward_bytes() == b""  # w or t
    m.accept_token(3)
    assert m.find_jump_forward_bytes() == b""  # orld or ide
    m.accept_bytes(b"o")
    assert m.find_jump_forward_bytes() == b"rld!"
    state = m.state
    assert m.num_tokens == 3  # the query does not move the matcher
    assert m.state == state
    m.accept_bytes(b"rld!")
    assert m.is_accepting() and m.find_jump_forward_bytes() == b""


def test_jump_forward_through_nonterminals_and_utf8():
    vocab = Vocabulary({0: b"x", 1: b"<eos>"}, eos_ids=(1,))
    src = 'start ::= open body close; open ::= "<" "你"; body ::= "x"+; close ::= "好>";'
    m = Matcher(compile_kbnf(src, vocab, "eos"))
    assert m.find_jump_forward_bytes() == "<你x".encode()  # body must start with x
    m.accept_bytes("<你x".encode())
    assert m.find_jump_forward_bytes() == b""  # more x or the close
    m.accept_bytes("好"[:1].encode()[:1])
    assert m.find_jump_forward_bytes() == "好>".encode()[1:]


# ======================================= eos-mode brute-force differential
# Terminal pool: (KBNF text, full-match regex, prefix regex) over the alphabet
# a, b, c. The prefix regex matches exactly the prefixes of the terminal's
# strings; both are written by hand from the KBNF semantics.
POOL = [
    ('"a"', r"a", r"a?"),
    ('"b"', r"b", r"b?"),
    ('"ab"', r"ab", r"(ab?)?"),
    ('"ca"', r"ca", r"(ca?)?"),
    ("'bb'", r"bb", r"b{0,2}"),
    ('#"[bc]"', r"[bc]", r"[bc]?"),
    ('#"a{1,2}"', r"a{1,2}", r"a{0,2}"),
    ('#"a+"', r"a+", r"a*"),
    ('#"b*c"', r"b*c", r"b*c?"),
    ('#"(ab)+"', r"(ab)+", r"(ab)*a?"),
    ('#e"[ab]*b"', r"a*b", r"a*b?"),
    ('#substrs"abc"', r"(a|b|c|ab|bc|abc)?", r"(a|b|c|ab|bc|abc)?"),
    ('#ex"b"', r"[^b]+", r"[^b]*"),
]
POOL_RE = [(re.compile(full), re.compile(prefix)) for _, full, prefix in POOL]
FINITE_POOL = [i for i, (k, _, _) in enumerate(POOL) if not any(s in k for s in ("+", "*", "#e", "#ex"))]


class Term:
    def __init__(self, i):
        self.i = i


class Ref:
    def __init__(self, name):
        self.name = name


class Node:
    """kind: seq, alt, opt, star, plus."""

    def __init__(self, kind, items, style=0):
        self.kind, self.items, self.style = kind, items, style


def render(e) -> str:
    if isinstance(e, Term):
        return POOL[e.i][0]
    if isinstance(e, Ref):
        return e.name
    inner = (" | " if e.kind == "alt" else " ").join(render(x) for x in e.items)
    if e.kind in ("seq", "alt"):
        return f"({inner})"
    if e.kind == "opt":
        return f"[{inner}]" if e.style else f"({inner})?"
    if e.kind == "star":
        return f"{{{inner}}}" if e.style else f"({inner})*"
    return f"({inner})+"


NT_NAMES = ["start", "n1", "n2"]


@st.composite
def grammars(draw, finite=False):
    """{name: [alternatives]} where an alternative is a list of expressions.

    ``finite``: no references to the same or earlier rules, no repetition, finite
    terminals: the language is finite and can be enumerated.
    """
    n = draw(st.integers(1, 3))
    pool = FINITE_POOL if finite else list(range(len(POOL)))
    term = st.sampled_from(pool).map(Term)

    def refs(k):
        names = NT_NAMES[k + 1 : n] if finite else NT_NAMES[:n]
        return [Ref(x) for x in names]

    rules = {}
    for k in range(n):
        leaf = st.one_of(term, st.sampled_from(refs(k))) if refs(k) else term
        kinds = ["seq", "alt", "opt"] if finite else ["seq", "alt", "opt", "star", "plus"]
        expr = st.recursive(
            leaf,
            lambda inner: st.builds(
                Node, st.sampled_from(kinds), st.lists(inner, min_size=1, max_size=2), st.integers(0, 1)
            ),
            max_leaves=4,
        )
        alts = draw(st.lists(st.lists(expr, min_size=1, max_size=3), min_size=0, max_size=2))
        alts.append([Term(draw(st.sampled_from(pool)))])  # every rule is productive
        rules[NT_NAMES[k]] = alts
    return rules


def grammar_text(rules) -> str:
    return "\n".join(f"{name} ::= " + " | ".join(" ".join(render(x) for x in alt) for alt in alts) + ";" for name, alts in rules.items())


class Oracle:
    """Exact membership and viable-prefix tests by dynamic programming over positions.

    Works on the generated rule structure: EBNF nodes become helper rules,
    terminals use the pool's hand-written regexes.
    """

    def __init__(self, rules) -> None:
        self.rules: dict[str, list[tuple]] = {}
        self.counter = itertools.count()
        for name, alts in rules.items():
            self.rules[name] = [tuple(self._sym(x) for x in alt) for alt in alts]
        self.terms = sorted({sym[1] for alts in self.rules.values() for alt in alts for sym in alt if sym[0] == "t"})

    def _sym(self, e):
        if isinstance(e, Term):
            return ("t", e.i)
        if isinstance(e, Ref):
            return ("n", e.name)
        name = f"_h{next(self.counter)}"
        syms = tuple(self._sym(x) for x in e.items)
        if e.kind == "seq":
            self.rules[name] = [syms]
        elif e.kind == "alt":
            self.rules[name] = [(s,) for s in syms]
        else:
            body = f"_h{next(self.counter)}"
            self.rules[body] = [syms]
            me = ("n", name)
            if e.kind == "opt":
                self.rules[name] = [(), (("n", body),)]
            elif e.kind == "star":
                self.rules[name] = [(), (me, ("n", body))]
            else:
                self.rules[name] = [(("n", body),), (me, ("n", body))]
        return ("n", name)

    def analyze(self, w: bytes):
        """(does start derive w, is w a prefix of a sentence)."""
        s = w.decode("latin-1")
        n = len(s)
        ends: dict = {}
        pref: dict = {}
        for i in self.terms:
            full_re, prefix_re = POOL_RE[i]
            ends[("t", i)] = [{j for j in range(a, n + 1) if full_re.fullmatch(s, a, j)} for a in range(n + 1)]
            pref[("t", i)] = {a for a in range(n + 1) if prefix_re.fullmatch(s, a)}
        for name in self.rules:
            ends[("n", name)] = [set() for _ in range(n + 1)]
            pref[("n", name)] = set()
        changed = True
        while changed:
            changed = False
            for name, alts in self.rules.items():
                me_ends = ends[("n", name)]
                me_pref = pref[("n", name)]
                for a in range(n + 1):
                    for alt in alts:
                        cur = {a}
                        viable = False
                        for sym in alt:
                            if not viable and any(e in pref[sym] for e in cur):
                                viable = True
                            cur = set().union(*(ends[sym][e] for e in cur)) if cur else set()
                            if not cur:
                                break
                        if n in cur:
                            viable = True
                        if viable and a not in me_pref:
                            me_pref.add(a)
                            changed = True
                        if not cur <= me_ends[a]:
                            me_ends[a] |= cur
                            changed = True
        return n in ends[("n", "start")][0], 0 in pref[("n", "start")]


def enumerate_language(rules, limit: int = 5000) -> set[str] | None:
    """Every sentence of a finite grammar (None when there are more than ``limit``)."""
    term_lang = {
        i: {"".join(p) for k in range(4) for p in itertools.product("abc", repeat=k) if re.fullmatch(full, "".join(p))}
        for i, (_, full, _) in enumerate(POOL)
    }
    memo: dict[str, set[str]] = {}

    def cat(xs, ys):
        out = {x + y for x in xs for y in ys}
        if len(out) > limit:
            raise OverflowError
        return out

    def lang(e) -> set[str]:
        if isinstance(e, Term):
            return term_lang[e.i]
        if isinstance(e, Ref):
            if e.name not in memo:
                memo[e.name] = set().union(*(seq(alt) for alt in rules[e.name]))
            return memo[e.name]
        if e.kind == "seq":
            return seq(e.items)
        inner = set().union(*(lang(x) for x in e.items)) if e.kind == "alt" else seq(e.items)
        if e.kind == "alt":
            return inner
        assert e.kind == "opt"
        return inner | {""}

    def seq(items) -> set[str]:
        out = {""}
        for x in items:
            out = cat(out, lang(x))
        return out

    try:
        return lang(Ref("start"))
    except OverflowError:
        return None


ALL_TOKENS = [bytes(p) for k in (1, 2, 3) for p in itertools.product(b"abc", repeat=k)]


def token_sets():
    return st.lists(st.sampled_from(ALL_TOKENS), min_size=3, max_size=9, unique=True)


def oracle_allowed(oracle, w: bytes, toks: list[bytes], eos: int) -> tuple[set[int], bool]:
    derives, _ = oracle.analyze(w)
    allowed = {i for i, t in enumerate(toks) if oracle.analyze(w + t)[1]}
    if derives:
        allowed.add(eos)
    return allowed, derives


def check_walk(rules, toks, data, finite_lang=None) -> None:
    src = grammar_text(rules)
    eos = len(toks)
    special = eos + 1
    tokens = {i: t for i, t in enumerate(toks)}
    tokens[eos] = b"</s>"
    tokens[special] = toks[0]  # same bytes as token 0, but special
    vocab = Vocabulary(tokens, special_ids=(special,), eos_ids=(eos,))
    matchers = [Matcher(compile_kbnf(src, vocab, "eos", use_tables)) for use_tables in CONFIGS]
    oracle = Oracle(rules)
    w = b""
    for _ in range(4):
        expected, derives = oracle_allowed(oracle, w, toks, eos)
        if finite_lang is not None:
            prefixes = {s[:k] for s in finite_lang for k in range(len(s) + 1)}
            by_enum = {i for i, t in enumerate(toks) if (w + t).decode() in prefixes}
            if w.decode() in finite_lang:
                by_enum.add(eos)
            assert by_enum == expected, "oracle self-check (DP vs enumeration)"
        for m in matchers:
            assert set(m.allowed_token_ids().tolist()) == expected, (src, w)
            assert m.is_accepting() == derives, (src, w)
        if not expected:
            break
        t = data.draw(st.sampled_from(sorted(expected)))
        for m in matchers:
            m.accept_token(t)
        if t == eos:
            assert all(m.is_finished() and m.allowed_token_ids().size == 0 for m in matchers)
            break
        w += toks[t]


@settings(max_examples=250, deadline=None)
@given(rules=grammars(), toks=token_sets(), data=st.data())
def test_eos_mode_brute_force(rules, toks, data):
    check_walk(rules, toks, data)


@settings(max_examples=120, deadline=None)
@given(rules=grammars(finite=True), toks=token_sets(), data=st.data())
def test_eos_mode_brute_force_finite_enumeration(rules, toks, data):
    lang = enumerate_language(rules)
    if lang is not None:
        check_walk(rules, toks, data, finite_lang=lang)


def test_substrings_terminal_is_not_read_as_its_literal():
    """``#substrs"abc"`` has the DFA states of ``"abc"`` and more edges (``b``, ``c``, ``bc`` from the start). With
    8 or more scan pairs the tables group literal pairs by what they can still match; reading this terminal as
    the literal lost ``c`` after ``aa`` (a hypothesis find)."""
    src = (
        'start ::= (start) #substrs"abc" (n2) | "a";\n'
        'n1 ::= "a";\n'
        'n2 ::= "b" | (start)? ("ab")? | "ab";\n'
    )
    tokens = {0: b"a", 1: b"b", 2: b"c", 3: b"</s>"}
    vocab = Vocabulary(tokens, special_ids=(3,), eos_ids=(3,))
    tables, reference = (Matcher(compile_kbnf(src, vocab, "eos", use_tables)) for use_tables in (True, False))
    for token in (0, 0):
        assert tables.allowed_token_ids().tolist() == reference.allowed_token_ids().tolist()
        tables.accept_token(token)
        reference.accept_token(token)
    assert reference.allowed_token_ids().tolist() == [0, 1, 2, 3]
    assert tables.allowed_token_ids().tolist() == [0, 1, 2, 3]


def test_oracle_sanity():
    rules = {"start": [[Term(2), Node("star", [Term(0)])], [Term(1)]]}  # "ab" ("a")* | "b"
    o = Oracle(rules)
    assert o.analyze(b"ab") == (True, True)
    assert o.analyze(b"aba") == (True, True)
    assert o.analyze(b"a") == (False, True)
    assert o.analyze(b"ba") == (False, False)
    assert enumerate_language({"start": [[Term(2), Node("opt", [Term(0)])]]}) == {"ab", "aba"}


def test_fill_bitmask_refuses_a_row_too_narrow_for_the_vocabulary(list_grammar):
    m = Matcher(list_grammar)
    words = (list_grammar.vocab.size + 31) // 32
    with pytest.raises(ValueError, match="int32 words"):
        m.fill_bitmask(torch.zeros((1, words - 1), dtype=torch.int32))
    wide = torch.full((1, words + 2), -1, dtype=torch.int32)
    m.fill_bitmask(wide)
    assert wide[0, words:].eq(0).all()  # words past the vocabulary are cleared
    assert decode_bitmask_row(wide[0], list_grammar.vocab.size) == m.allowed_token_ids().tolist()


def test_engine_masks_one_row_2d_logits(list_grammar):
    from kbnf_gpu import Engine

    engine = Engine(list_grammar)
    engine.compute_allowed_token_ids()
    logits = np.zeros((1, list_grammar.vocab.size), dtype=np.float32)
    engine.mask_logits(logits)
    assert np.flatnonzero(np.isfinite(logits[0])).tolist() == engine.allowed_token_ids_from_last_computation()
    with pytest.raises(ValueError):
        engine.mask_logits(np.zeros((2, list_grammar.vocab.size), dtype=np.float32))
