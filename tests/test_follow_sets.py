"""Static FOLLOW sets (eager tables) equal a naive fixpoint, and stay linear on long rule chains."""
from __future__ import annotations

from hypothesis import given, settings

from kbnf_gpu.compile.grammar_tables import terminal_follow
from kbnf_gpu.frontends import parse_grammar
from kbnf_gpu.normalize import NormalizeConfig, normalize
from test_runtime_context import grammars


def naive_follow(grammar) -> list[set[int]]:
    """The oracle: FOLLOW by repeated passes over the grammar until nothing changes."""
    n_nt = len(grammar.nonterminals)
    nullable_t = [d.nullable for d in grammar.dfas]
    nullable_nt = grammar.nullable
    first: list[set[int]] = [set() for _ in range(n_nt)]

    def seq_first(rhs: tuple[int, ...]) -> tuple[set[int], bool]:
        out: set[int] = set()
        for s in rhs:
            if s < 0:
                out.add(~s)
                if not nullable_t[~s]:
                    return out, False
            else:
                out |= first[s]
                if s not in nullable_nt:
                    return out, False
        return out, True

    changed = True
    while changed:
        changed = False
        for rule in grammar.rules:
            f, _ = seq_first(rule.rhs)
            if not f <= first[rule.lhs]:
                first[rule.lhs] |= f
                changed = True
    follow_nt: list[set[int]] = [set() for _ in range(n_nt)]
    changed = True
    while changed:
        changed = False
        for rule in grammar.rules:
            for i, s in enumerate(rule.rhs):
                if s < 0:
                    continue
                f, rest_nullable = seq_first(rule.rhs[i + 1 :])
                if rest_nullable:
                    f = f | follow_nt[rule.lhs]
                if not f <= follow_nt[s]:
                    follow_nt[s] |= f
                    changed = True
    follow_t: list[set[int]] = [set() for _ in grammar.terminals]
    for rule in grammar.rules:
        for i, s in enumerate(rule.rhs):
            if s >= 0:
                continue
            f, rest_nullable = seq_first(rule.rhs[i + 1 :])
            if rest_nullable:
                f = f | follow_nt[rule.lhs]
            follow_t[~s] |= f
    return follow_t


@settings(max_examples=150, deadline=None)
@given(grammars())
def test_follow_equals_naive_fixpoint(grammar):
    for fuse in (False, True):
        bnf = normalize(grammar, NormalizeConfig(fuse=fuse))
        assert terminal_follow(bnf) == naive_follow(bnf)


def test_follow_of_a_long_bounded_repetition_of_a_recursive_rule():
    """``x{0,300}`` with a recursive ``x``: hundreds of helper rules (the naive fixpoint needs a pass per rule)."""
    bnf = normalize(parse_grammar('root ::= x{0,300} "b"\nx ::= "(" x ")" | "a"', "gbnf"))
    assert terminal_follow(bnf) == naive_follow(bnf)
