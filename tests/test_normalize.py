"""Normalization: desugaring, cleanup errors, and that fusion never changes a language."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbnf_gpu import ir
from kbnf_gpu.errors import GrammarError
from kbnf_gpu.normalize import NormalizeConfig, normalize
from kbnf_gpu.runtime.earley import DEAD, EarleyParser

NAMES = ["s", "a", "b", "c"]

leaf = st.one_of(
    st.sampled_from([b"x", b"y", b"xy", b""]).map(lambda v: ir.Terminal(ir.Literal(v))),
    st.sampled_from(["x*", "y+", "[xy]", "(xy)?"]).map(lambda p: ir.Terminal(ir.Pattern(p))),
    st.sampled_from(NAMES[1:]).map(ir.Ref),
)


def extend(children):
    return st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda xs: ir.Sequence(tuple(xs))),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: ir.Choice(tuple(xs))),
        st.tuples(children, st.integers(0, 2), st.one_of(st.none(), st.integers(0, 3))).map(
            lambda t: ir.Repetition(t[0], t[1], None if t[2] is None else max(t[1], t[2]))
        ),
    )


exprs = st.recursive(leaf, extend, max_leaves=6)


@st.composite
def grammars(draw):
    rules = []
    for name in NAMES:
        body = draw(exprs)
        # every name gets a terminal alternative so the grammar is productive
        rules.append(ir.Rule(name, ir.Choice((body, ir.Terminal(ir.Literal(b"y"))))))
    return ir.Grammar(rules=tuple(rules), start="s", syntax="test")


def language(grammar: ir.Grammar, fuse: bool, max_len: int = 4) -> dict[bytes, tuple[bool, bool]]:
    parser = EarleyParser(normalize(grammar, NormalizeConfig(fuse=fuse)))
    out = {}
    for n in range(max_len + 1):
        for chars in itertools.product(b"xy", repeat=n):
            w = bytes(chars)
            state, _, _ = parser.step_bytes(parser.initial_state, w)
            out[w] = (state != DEAD, state != DEAD and parser.is_accepting(state))
    return out


@settings(max_examples=80, deadline=None)
@given(grammars())
def test_fusion_never_changes_the_language(grammar):
    assert language(grammar, fuse=True) == language(grammar, fuse=False)


def test_fusion_turns_char_level_rules_into_one_terminal():
    digit = ir.Terminal(ir.CharClass(((ord("0"), ord("9")),)))
    number = ir.Rule("number", ir.Repetition(ir.Ref("digit"), 1, None))
    grammar = ir.Grammar(
        rules=(ir.Rule("root", ir.Sequence((ir.Ref("number"), ir.Terminal(ir.Literal(b";"))))),
               number, ir.Rule("digit", digit)),
        start="root", syntax="test")
    fused = normalize(grammar)
    assert len(fused.terminals) == 1  # "[0-9]+;" became one lexeme
    assert len(normalize(grammar, NormalizeConfig(fuse=False)).terminals) == 2


def test_undefined_reference_names_rule_and_position():
    grammar = ir.Grammar(rules=(ir.Rule("s", ir.Ref("missing", ir.Span(3, 7))),), start="s", syntax="test")
    with pytest.raises(GrammarError) as info:
        normalize(grammar)
    assert info.value.line == 3 and info.value.column == 7 and info.value.rule == "s"
    assert "missing" in str(info.value)


A = ir.Terminal(ir.Literal(b"a"))


@pytest.mark.parametrize("body", [
    ir.Ref("missing", ir.Span(4, 2)),  # a rule that is only the reference
    ir.Sequence((A, ir.Repetition(ir.Ref("missing", ir.Span(4, 2)), 0, 3))),  # inside a helper rule
    ir.Choice((A, ir.Sequence((A, ir.Ref("missing", ir.Span(4, 2)))))),
])
@pytest.mark.parametrize("start", ["s", "nowhere"])
def test_undefined_reference_is_reported_before_other_errors(body: ir.Expr, start: str) -> None:
    """Desugaring stops at the first problem; the undefined reference, wherever it is, is still the error
    reported (before an earlier rule's bad bounds, and before a missing start rule)."""
    grammar = ir.Grammar(rules=(
        ir.Rule("s", ir.Sequence((ir.Repetition(A, 3, 1), ir.Ref("r")))),  # bad bounds, met first
        ir.Rule("r", body),
    ), start=start, syntax="test")
    with pytest.raises(GrammarError) as info:
        normalize(grammar)
    assert "undefined nonterminal 'missing'" in str(info.value)
    assert (info.value.line, info.value.column, info.value.rule) == (4, 2, "r")


def test_unproductive_start_is_an_error():
    grammar = ir.Grammar(rules=(ir.Rule("s", ir.Sequence((ir.Terminal(ir.Literal(b"a")), ir.Ref("s")))),),
                         start="s", syntax="test")
    with pytest.raises(GrammarError, match="unproductive"):
        normalize(grammar)


def test_missing_start_rule_is_an_error():
    grammar = ir.Grammar(rules=(ir.Rule("s", ir.Terminal(ir.Literal(b"a"))),), start="start", syntax="test")
    with pytest.raises(GrammarError, match="start"):
        normalize(grammar)


def test_unreachable_and_unproductive_rules_are_dropped():
    grammar = ir.Grammar(rules=(
        ir.Rule("s", ir.Choice((ir.Terminal(ir.Literal(b"a")), ir.Ref("loop")))),
        ir.Rule("loop", ir.Sequence((ir.Terminal(ir.Literal(b"b")), ir.Ref("loop")))),
        ir.Rule("orphan", ir.Terminal(ir.Literal(b"c"))),
    ), start="s", syntax="test")
    bnf = normalize(grammar, NormalizeConfig(fuse=False))
    assert "orphan" not in bnf.nonterminals and "loop" not in bnf.nonterminals


def test_bounded_repetition_counts():
    grammar = ir.Grammar(rules=(ir.Rule("s", ir.Repetition(ir.Terminal(ir.Literal(b"x")), 2, 4)),),
                         start="s", syntax="test")
    for fuse in (True, False):
        lang = language(grammar, fuse, max_len=5)
        complete = {w for w, (_, c) in lang.items() if c}
        assert complete == {b"xx", b"xxx", b"xxxx"}


def test_linear_self_recursion_fuses_into_one_terminal():
    # GBNF's way of writing a string and a list: s ::= "" | [a-z] s | "\\" "n" s ;  l ::= l "," "x" | "x"
    lit, cls = (lambda v: ir.Terminal(ir.Literal(v))), ir.Terminal(ir.CharClass(((ord("a"), ord("z")),)))
    s_body = ir.Choice((ir.EMPTY, ir.Sequence((cls, ir.Ref("s"))), ir.Sequence((lit(b"\\"), lit(b"n"), ir.Ref("s")))))
    l_body = ir.Choice((ir.Sequence((ir.Ref("l"), lit(b","), lit(b"x"))), lit(b"x")))
    grammar = ir.Grammar(rules=(ir.Rule("root", ir.Sequence((lit(b'"'), ir.Ref("s"), lit(b'"'), lit(b"["), ir.Ref("l"),
                                                             lit(b"]")))),
                                ir.Rule("s", s_body), ir.Rule("l", l_body)), start="root", syntax="test")
    fused = normalize(grammar)
    assert len(fused.terminals) == 1 and len(fused.rules) == 2  # the whole grammar became one lexeme
    parser = EarleyParser(fused)
    for text, ok in ((b'"ab\\nc"[x,x]', True), (b'""[x]', True), (b'"a\\"[x]', False), (b'"a"[x,]', False)):
        state, _, _ = parser.step_bytes(parser.initial_state, text)
        assert (state != DEAD and parser.is_accepting(state)) == ok, text


ITEMS = {  # a regular item of a few states, and its Python regex
    "ab|c": (ir.Choice((ir.Terminal(ir.Literal(b"ab")), ir.Terminal(ir.Literal(b"c")))), "(?:ab|c)"),
    "[ab]c?": (ir.Sequence((ir.Terminal(ir.CharClass(((ord("a"), ord("b")),))),
                            ir.Repetition(ir.Terminal(ir.Literal(b"c")), 0, 1))), "[ab]c?"),
}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(ITEMS)), st.integers(0, 14), st.one_of(st.none(), st.integers(0, 16)),
       st.lists(st.lists(st.sampled_from([b"ab", b"c", b"a", b"b", b"bc", b"ac"]), max_size=34), min_size=1, max_size=8),
       st.sampled_from([8, 20, 40]))
def test_counted_repetition_in_blocks_keeps_the_language(item, lo, extra, words, limit):
    """``x{lo,hi}`` too big to fuse becomes blocks of fused copies; same language as one lexeme per copy."""
    import re

    hi = None if extra is None else lo + extra
    body, pattern = ITEMS[item]
    grammar = ir.Grammar(rules=(
        ir.Rule("s", ir.Sequence((ir.Terminal(ir.Literal(b"<")), ir.Repetition(ir.Ref("x"), lo, hi),
                                  ir.Terminal(ir.Literal(b">"))))),
        ir.Rule("x", body)), start="s", syntax="test")
    blocked = normalize(grammar, NormalizeConfig(fuse=True, fuse_max_states=limit, fuse_max_states_lexemes=limit))
    plain = normalize(grammar, NormalizeConfig(fuse=False))
    if limit > 8:  # fused whole or in blocks of fused copies, never one rule per copy
        assert len(blocked.rules) < 20, len(blocked.rules)
    regex = re.compile(rb"<(?:%s){%d,%s}>" % (pattern.encode(), lo, b"" if hi is None else str(hi).encode()))
    parsers = [EarleyParser(blocked), EarleyParser(plain)]
    for parts in words:
        text = b"<" + b"".join(parts) + b">"
        for end in range(len(text) + 1):
            verdicts = []
            for parser in parsers:
                state, _, _ = parser.step_bytes(parser.initial_state, text[:end])
                verdicts.append((state != DEAD, state != DEAD and parser.is_accepting(state)))
            assert verdicts[0] == verdicts[1], (text[:end], lo, hi)
        assert verdicts[0][1] == bool(regex.fullmatch(text)), (text, lo, hi)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 12)), min_size=2, max_size=4),
       st.lists(st.lists(st.integers(0, 16), min_size=2, max_size=4), min_size=1, max_size=6))
def test_counted_repetitions_of_one_item_share_one_chain(bounds, counts):
    """``x{lo,hi}`` at several bounds: one optional chain for the item, as long as the widest range (a threaded
    string repeats one chunk up to each count it can stop at); each repetition still counts its own range."""
    import re

    x = ir.Terminal(ir.Literal(b"x"))
    parts = [ir.Terminal(ir.Literal(b"<"))]
    for lo, extra in bounds:
        parts += [ir.Repetition(x, lo, lo + extra), ir.Terminal(ir.Literal(b"|"))]
    grammar = ir.Grammar(rules=(ir.Rule("s", ir.Sequence(tuple(parts))),), start="s", syntax="test")
    bnf = normalize(grammar, NormalizeConfig(fuse=False))
    widest = max(extra for _, extra in bounds)
    assert len(bnf.rules) <= 2 + len(bounds) + 2 * widest, len(bnf.rules)  # unshared: 2 * the sum of the ranges
    regex = re.compile(b"<" + b"".join(b"x{%d,%d}\\|" % (lo, lo + extra) for lo, extra in bounds))
    parser = EarleyParser(bnf)
    for ns in counts:
        text = b"<" + b"".join(b"x" * n + b"|" for n in (ns + [0] * 4)[:len(bounds)])
        state, _, _ = parser.step_bytes(parser.initial_state, text)
        assert (state != DEAD and parser.is_accepting(state)) == bool(regex.fullmatch(text)), (text, bounds)


def test_long_counted_repetition_of_a_char_rule_is_a_few_block_lexemes():
    """llama.cpp's ``char{1,100}``: a handful of block terminals, not a hundred one-character lexemes."""
    char = ir.Choice((ir.Terminal(ir.CharClass(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)))),
                      ir.Sequence((ir.Terminal(ir.Literal(b"\\")), ir.Terminal(ir.Literal(b"u")),
                                   ir.Repetition(ir.Terminal(ir.CharClass(((ord("0"), ord("9")),))), 4, 4)))))
    grammar = ir.Grammar(rules=(
        ir.Rule("s", ir.Sequence((ir.Terminal(ir.Literal(b'"')), ir.Repetition(ir.Ref("char"), 1, 100),
                                  ir.Terminal(ir.Literal(b'"'))))),
        ir.Rule("char", char)), start="s", syntax="test")
    bnf = normalize(grammar)
    assert len(bnf.rules) < 20 and len(bnf.terminals) <= 6
    parser = EarleyParser(bnf)
    for n, ok in ((1, True), (100, True), (101, False), (0, False)):
        state, _, _ = parser.step_bytes(parser.initial_state, b'"' + b"a\\u0123" * (n // 2) + b"b" * (n % 2) + b'"')
        assert (state != DEAD and parser.is_accepting(state)) is ok, n


def test_composite_nodes_keep_their_hash_but_never_pickle_it():
    """Composite IR nodes cache their hash (memo keys hash whole subtrees); it must equal the structural hash,
    leave equality alone, and not travel in a pickle (string hashes differ between processes)."""
    import copy
    import pickle

    leaf = ir.Repeat(ir.Concat((ir.Literal(b"ab"), ir.CharClass(((97, 99),)))), 1, 3)
    term = ir.Terminal(leaf, name="x")
    body = ir.Choice((ir.Sequence((term, ir.Ref("r"))), ir.Repetition(term, 0, None)))
    first = hash(body)
    assert "_hash" in body.__dict__ and hash(body) == first
    twin = ir.Choice((ir.Sequence((ir.Terminal(leaf, name="other"), ir.Ref("r"))), ir.Repetition(term, 0, None)))
    assert twin == body and hash(twin) == first  # names do not compare, so they do not hash
    assert ir.Terminal(ir.Repeat(leaf.item, 1, 4)) != term
    back = pickle.loads(pickle.dumps(body))
    assert "_hash" not in back.__dict__ and back == body and hash(back) == first
    assert "_hash" not in copy.deepcopy(term).__dict__


def test_normalize_on_its_own_runs_under_one_budget(monkeypatch):
    """Called outside a compilation, ``normalize`` opens one budget for its whole run, so its time budget
    holds (a budget per step would restart the clock and the tick count at every terminal: never expiring)."""
    from kbnf_gpu import budget
    from kbnf_gpu.config import CompileConfig
    from kbnf_gpu.errors import CompileBudgetExceeded

    words = [ir.Terminal(ir.Literal(f"w{i}".encode())) for i in range(600)]  # 600 terminals: ticks past 256
    grammar = ir.Grammar(rules=(ir.Rule("s", ir.Choice(tuple(words))),), start="s", syntax="test")
    assert len(normalize(grammar, NormalizeConfig(fuse=False)).terminals) == 600
    monkeypatch.setattr(budget, "_DEFAULT_CONFIG", CompileConfig(time_budget_s=1e-9))
    with pytest.raises(CompileBudgetExceeded, match="time_budget_s"):
        normalize(grammar, NormalizeConfig(fuse=False))


def _refs_recursive(expr: ir.Expr) -> list[str]:
    if isinstance(expr, ir.Ref):
        return [expr.name]
    return [name for child in ir.children(expr) for name in _refs_recursive(child)]


@given(exprs)
def test_references_are_every_ref_in_the_tree(expr: ir.Expr) -> None:
    assert sorted(r.name for r in ir.references(expr)) == sorted(_refs_recursive(expr))


def test_references_of_a_deep_tree_need_no_recursion() -> None:
    expr: ir.Expr = ir.Ref("x")
    for _ in range(50_000):
        expr = ir.Sequence((ir.Terminal(ir.Literal(b"a")), ir.Repetition(ir.Choice((expr, ir.Ref("y"))), 0, 1)))
    assert sum(1 for _ in ir.references(expr)) == 50_001


def _derives(expr: ir.Expr, productive: set[str]) -> bool:
    """Brute force: does ``expr`` derive some text, given the rules known productive?"""
    if isinstance(expr, ir.Terminal):
        return True
    if isinstance(expr, ir.Ref):
        return expr.name in productive
    if isinstance(expr, ir.Choice):
        return any(_derives(x, productive) for x in expr.alternatives)
    if isinstance(expr, ir.Sequence):
        return all(_derives(x, productive) for x in expr.items)
    return expr.min == 0 or _derives(expr.item, productive)


def _fixpoint(step) -> set:
    found: set = set()
    while True:
        more = step(found)
        if more <= found:
            return found
        found |= more


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(-3, 5), max_size=3)), max_size=14),
       st.sets(st.integers(0, 2), max_size=1))
def test_productive_nonterminals_match_a_fixpoint(rules, empty_terms):
    """``normalize._productive`` (a rule of terminals alone settles its left side at once) against the
    definition: a nonterminal is productive when one of its rules has only productive nonterminals and no
    terminal of the empty language."""
    from kbnf_gpu.normalize import _productive

    flat = [(lhs, tuple(rhs)) for lhs, rhs in rules]
    empty = {~t for t in empty_terms}
    want = _fixpoint(lambda p: {lhs for lhs, rhs in flat
                                if empty.isdisjoint(rhs) and all(s < 0 or s in p for s in rhs)})
    assert _productive(flat, set(empty_terms)) == want


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), exprs, min_size=1, max_size=5))
def test_schema_prune_productive_rules_match_a_fixpoint(rules):
    """The JSON Schema front end's ``_prune._productive`` (a body with an alternative of terminals alone settles
    its rule at once) against the definition, on random rule bodies."""
    from kbnf_gpu.frontends.json_schema._prune import _productive

    want = _fixpoint(lambda p: {name for name, body in rules.items() if _derives(body, p)})
    assert _productive(rules) == want


def test_deep_expressions_hash_and_compare_without_recursion() -> None:
    """Expressions nested thousands of levels deep (a number bound's digits nest its expression) hash and compare
    with an explicit stack: equal exactly when built alike, whatever Python's recursion limit."""
    def nested(depth: int, leaf: bytes) -> ir.RegExpr:
        x: ir.RegExpr = ir.Literal(leaf)
        for _ in range(depth):
            x = ir.Alternation((ir.Literal(b"q"), ir.Concat((ir.Literal(b"p"), ir.Repeat(x, 0, 1)))))
        return x

    a, b, c = nested(5000, b"z"), nested(5000, b"z"), nested(5000, b"y")
    assert hash(a) == hash(b) and a == b and a != c
    assert ir.Terminal(a, name="one") == ir.Terminal(b, name="two")  # names are not compared
    assert nested(3, b"z") != nested(4, b"z") and ir.Concat(()) != ir.Alternation(())


def test_a_choice_of_many_literals_is_fused_by_its_trie() -> None:
    """3,000 keywords in a loop: their parts' states sum to ~21,000, past what a union is tried from, but their
    trie has ~6,000 nodes and their union 8 states: one terminal (unfused, each keyword was a terminal that any
    other can follow, and the first mask met 3,000 x 3,000 pairs: 13 s)."""
    from kbnf_gpu.frontends import parse_grammar

    bnf = normalize(parse_grammar("root ::= (" + " | ".join(f'"kw{i}x"' for i in range(3000)) + ")+", "gbnf"))
    assert len(bnf.terminals) == 1
    dfa = bnf.dfas[0]
    assert dfa.n_states <= 16 and dfa.matches(b"kw0xkw2999x") and not dfa.matches(b"kw3000x")


def test_a_union_of_literals_fuses_up_to_a_lexemes_limit() -> None:
    """A choice of literals fuses while its trie fits ``max_dfa_states`` (past the limits of other fusions, which
    a union of literals never grows past: its DFA is its trie minimized), and no literal of it gets its own
    terminal. 5,000 keywords ``word<i>`` (a trie of ~5,100 nodes) and 1,500 random words (a minimal DFA of
    thousands of states) in a loop: one terminal each (unfused, 5,000 keywords made 5,000 x 5,000 follower pairs
    in the first mask: 18 s). Past the limit they stay literals."""
    import random

    from kbnf_gpu.config import CompileConfig
    from kbnf_gpu.frontends import parse_grammar

    rng = random.Random(7)
    for words in ([f"word{i}" for i in range(5000)],
                  sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8)) for _ in range(1500)})):
        bnf = normalize(parse_grammar("root ::= (" + " | ".join(f'"{w}"' for w in words) + ")+", "gbnf"))
        assert len(bnf.terminals) == 1
        dfa = bnf.dfas[0]
        assert all(dfa.matches(w.encode()) for w in words[::7])
        assert not dfa.matches(words[0].encode()[:-1]) and not dfa.matches(b"zzzzzzzzz")
    small = CompileConfig(max_dfa_states=2_000).normalize_config()
    bnf = normalize(parse_grammar("root ::= (" + " | ".join(f'"{w}"' for w in words) + ")+", "gbnf"), small)
    assert len(bnf.terminals) == len(words)
