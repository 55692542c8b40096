"""The Earley parser against a brute-force oracle, plus Leo, nullable and deep-nesting checks."""
from __future__ import annotations

import itertools
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from bnf_oracle import BnfOracle
from kbnf_gpu import ir
from kbnf_gpu.automata import regexpr_to_dfa
from kbnf_gpu.check import check_text
from kbnf_gpu.normalize import BnfGrammar, BnfRule, NormalizeConfig, normalize, nullable_nonterminals
from kbnf_gpu.runtime.earley import DEAD, EarleyParser

TERMINAL_POOL = [
    ir.Literal(b"a"),
    ir.Literal(b"b"),
    ir.Literal(b"ab"),
    ir.Literal(b""),
    ir.Pattern("a*"),
    ir.Pattern("b+"),
    ir.Pattern("[ab]"),
    ir.Pattern("(ab)+b?"),
]
DFAS = [regexpr_to_dfa(e) for e in TERMINAL_POOL]


def make_grammar(rules: list[tuple[int, list[int]]], terminals: list[int], n_nonterminals: int) -> BnfGrammar:
    dfas = tuple(DFAS[t] for t in terminals)
    raw = [(lhs, tuple(rhs)) for lhs, rhs in rules]
    return BnfGrammar(
        nonterminals=tuple(f"N{i}" for i in range(n_nonterminals)),
        terminals=tuple(ir.Terminal(TERMINAL_POOL[t]) for t in terminals),
        dfas=dfas,
        rules=tuple(BnfRule(lhs, tuple(rhs)) for lhs, rhs in rules),
        start=0,
        nullable=nullable_nonterminals(raw, dfas),
    )


@st.composite
def random_grammars(draw):
    n = draw(st.integers(2, 4))
    terminals = draw(st.lists(st.integers(0, len(TERMINAL_POOL) - 1), min_size=1, max_size=4, unique=True))
    symbol = st.one_of(st.integers(1, n - 1), st.integers(0, len(terminals) - 1).map(lambda t: ~t))
    rules = [(0, [1])]
    for nt in range(1, n):
        for rhs in draw(st.lists(st.lists(symbol, max_size=3), min_size=1, max_size=3)):
            rules.append((nt, rhs))
        rules.append((nt, [~draw(st.integers(0, len(terminals) - 1))]))  # keep every nonterminal productive
    return make_grammar(rules, terminals, n)


def assert_agrees(grammar: BnfGrammar, alphabet: bytes = b"ab", max_len: int = 4) -> EarleyParser:
    parser = EarleyParser(grammar)
    oracle = BnfOracle(grammar)
    for n in range(max_len + 1):
        for chars in itertools.product(alphabet, repeat=n):
            w = bytes(chars)
            state, _, _ = parser.step_bytes(parser.initial_state, w)
            got = (state != DEAD, state != DEAD and parser.is_accepting(state))
            assert got == (oracle.viable_prefix(w), oracle.derives(w)), (w, got, grammar.rules)
    return parser


@settings(max_examples=120, deadline=None)
@given(random_grammars())
def test_random_grammars_match_brute_force(grammar):
    assert_agrees(grammar)


def test_right_recursion_state_stays_constant():
    # start ::= "A" start | "A"
    g = make_grammar([(0, [1]), (1, [~0, 1]), (1, [~0])], [0], 2)
    parser = assert_agrees(g, max_len=6)
    state = parser.initial_state
    sizes = set()
    for i in range(10_000):
        state = parser.step_byte(state, ord("a"))
        if i > 10:
            sizes.add(parser.live_items(state))
    assert sizes == {2}
    assert parser.is_accepting(state)
    assert parser.n_states < 10 and parser.n_sets < 10


def test_gbnf_style_optional_right_recursion_is_constant():
    # x ::= "a" x?   (x? desugared to a helper nonterminal)
    grammar = normalize(ir.Grammar(
        rules=(ir.Rule("x", ir.Sequence((ir.Terminal(ir.Literal(b"a")), ir.Repetition(ir.Ref("x"), 0, 1)))),
               ir.Rule("root", ir.Sequence((ir.Ref("x"), ir.Terminal(ir.Literal(b";")))))),
        start="root", syntax="test"), NormalizeConfig(fuse=False))
    parser = EarleyParser(grammar)
    state = parser.initial_state
    for _ in range(3000):
        state = parser.step_byte(state, ord("a"))
    assert parser.n_sets < 20
    assert parser.is_accepting(parser.step_byte(state, ord(";")))


def test_left_recursion_and_nullable():
    g = make_grammar([(0, [1]), (1, [1, ~0]), (1, [2]), (2, []), (2, [~1, 2])], [0, 1], 3)
    assert_agrees(g, max_len=5)


def deep_nesting_grammar() -> ir.Grammar:
    # s ::= "(" s ")" | "x"
    body = ir.Choice((
        ir.Sequence((ir.Terminal(ir.Literal(b"(")), ir.Ref("s"), ir.Terminal(ir.Literal(b")")))),
        ir.Terminal(ir.Literal(b"x")),
    ))
    return ir.Grammar(rules=(ir.Rule("s", body),), start="s", syntax="test")


def test_ten_thousand_deep_nesting_has_no_recursion_error():
    depth = 10_000
    assert depth > sys.getrecursionlimit()
    text = b"(" * depth + b"x" + b")" * depth
    assert check_text(deep_nesting_grammar(), text).status == "complete"
    assert check_text(deep_nesting_grammar(), text[:-1]).status == "prefix"
    result = check_text(deep_nesting_grammar(), text + b")")
    assert result.status == "rejected" and result.offset == len(text)


def test_equal_positions_share_one_state():
    # every element after the first leaves the parser in the same state
    items = ir.Sequence((ir.Terminal(ir.Literal(b"1")), ir.Repetition(ir.Sequence((
        ir.Terminal(ir.Literal(b",")), ir.Terminal(ir.Literal(b"1")))), 0, None)))
    grammar = ir.Grammar(rules=(ir.Rule("l", ir.Sequence((ir.Terminal(ir.Literal(b"[")), items,
                                                          ir.Terminal(ir.Literal(b"]"))))),),
                         start="l", syntax="test")
    parser = EarleyParser(normalize(grammar, NormalizeConfig(fuse=False)))
    a, _, _ = parser.step_bytes(parser.initial_state, b"[1,1,")
    b, _, _ = parser.step_bytes(parser.initial_state, b"[1,1,1,1,1,")
    assert a == b != DEAD
