"""Tiny grammars that used to blow up compilation (issue #13): each compiles, and its masks stay exact.

Before: ``x{0,10000}`` with a recursive ``x`` ran past 120 s (a quadratic
FOLLOW fixpoint); 300 one-character alternatives under ``+`` were not fused
(every terminal pair got tables: 33 s, 1,000: > 300 s); a 2,000-literal chain
took 40 s to fuse; a 2,000-rule right-linear chain spent 10 s in a quadratic
productivity fixpoint.
"""
from __future__ import annotations

import pytest

from kbnf_gpu import Matcher, compile_grammar
from kbnf_gpu.frontends import parse_grammar
from kbnf_gpu.normalize import normalize


def one_char_alternatives(n: int) -> str:
    return "root ::= (" + " | ".join(f'"{chr(0x100 + i)}"' for i in range(n)) + ")+"


@pytest.mark.parametrize("n", [300, 1000])
def test_many_one_character_alternatives_fuse_into_one_terminal(llama3_vocab, n):
    source = one_char_alternatives(n)
    bnf = normalize(parse_grammar(source, "gbnf"))
    assert len(bnf.dfas) == 1 and bnf.dfas[0].n_states <= 8
    compiled = compile_grammar(source, llama3_vocab, "gbnf")
    m = Matcher(compiled)
    m.accept_bytes("ĀāĂ".encode())
    assert m.allowed_token_ids().tolist() == compiled.reference_allowed_ids(m.state).tolist()
    assert m.is_accepting()


def test_enum_of_2000_words_fuses(llama3_vocab):
    words = [f"w{i}" for i in range(2000)]
    source = "root ::= (" + " | ".join(f'"{w}"' for w in words) + ")+"
    bnf = normalize(parse_grammar(source, "gbnf"))
    assert len(bnf.dfas) == 1
    m = Matcher(compile_grammar(source, llama3_vocab, "gbnf"))
    m.accept_bytes(b"w1999w0w17")
    assert m.is_accepting()


def test_chain_of_2000_literals(llama3_vocab):
    parts = [f"{chr(97 + i % 26)}{i}" for i in range(2000)]
    compiled = compile_grammar("root ::= " + " ".join(f'"{p}"' for p in parts), llama3_vocab, "gbnf")
    assert len(compiled.bnf.dfas) <= 2000 // 8  # adjacent literals fused into runs
    m = Matcher(compiled)
    text = "".join(parts).encode()
    m.accept_bytes(text[:-1])
    assert not m.is_accepting()
    assert m.allowed_token_ids().tolist() == compiled.reference_allowed_ids(m.state).tolist()
    m.accept_bytes(text[-1:])
    assert m.is_accepting()


def test_right_linear_chain_of_2000_rules(llama3_vocab):
    source = "root ::= r0\n" + "\n".join(f'r{i} ::= "a" r{i + 1}' for i in range(2000)) + '\nr2000 ::= "b"'
    m = Matcher(compile_grammar(source, llama3_vocab, "gbnf"))
    m.accept_bytes(b"a" * 2000)
    assert m.allowed_token_ids().tolist() == m.compiled.reference_allowed_ids(m.state).tolist()
    m.accept_bytes(b"b")
    assert m.is_accepting()


@pytest.mark.parametrize("eager", [False, True])
def test_long_bounded_repetition_of_a_recursive_rule(llama3_vocab, eager):
    compiled = compile_grammar('root ::= x{0,10000} "b"\nx ::= "(" x ")" | "a"', llama3_vocab, "gbnf", eager=eager)
    m = Matcher(compiled)
    m.accept_bytes(b"((a))a(a)")
    assert m.allowed_token_ids().tolist() == compiled.reference_allowed_ids(m.state).tolist()
    m.accept_bytes(b"b")
    assert m.is_accepting()


@pytest.mark.parametrize("source, limit, config", [
    ('root ::= x{0,100000}\nx ::= "(" x ")" | "a"', "max_rules", {}),
    ('root ::= x{0,3000}\nx ::= "(" x ")" | "a"', "max_expansion", {"max_expansion": 5000}),
    ("root ::= " + " ".join(f"x{i}" for i in range(30)) + "\n"
     + "\n".join(f'x{i} ::= "(" x{i} ")" | "a{i}"' for i in range(30)), "max_terminals", {"max_terminals": 10}),
])
def test_structural_limits_fail_fast_naming_the_limit(source, limit, config):
    from kbnf_gpu import CompileConfig, Vocabulary
    from kbnf_gpu.errors import CompileBudgetExceeded

    with pytest.raises(CompileBudgetExceeded) as info:
        compile_grammar(source, Vocabulary({0: b"a", 1: b"("}), "gbnf", config=CompileConfig(**config))
    assert info.value.limit == limit and "rule '" in str(info.value)
