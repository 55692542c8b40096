"""Where llguidance's GBNF import differs from exact CFG semantics, and why (named cases).

llguidance turns non-recursive GBNF rules into greedy lexemes and maps ``.`` to a
regex ``.`` without newline (see the corpus README). GBNF has no lexer: the
language is the plain character-level CFG, which xgrammar and we implement.
"""
from __future__ import annotations

import importlib

import pytest

from kbnf_gpu.check import check_text
from kbnf_gpu.frontends import parse_grammar

llguidance = importlib.import_module("llguidance")

ARITHMETIC = r"""
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
"""
# (grammar, text, why llguidance disagrees)
GREEDY_LEXING_CASES = {
    "arithmetic_newline_after_term": (
        ARITHMETIC, "1+2=3\n",
        "num's trailing ws lexeme greedily swallows the newline that root needs",
    ),
    "dot_matches_newline": (
        'root ::= "<" . ">"', "<\n>",
        "llguidance maps GBNF '.' to a regex '.' that excludes newline; in GBNF it is any character",
    ),
}


@pytest.fixture(scope="module")
def byte_tokenizer():
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    import llguidance.hf
    from kbnf_gpu.tokenizers import locate

    hf = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_file(str(locate("llama3").path)))
    return llguidance.hf.from_tokenizer(hf)


def llguidance_accepts(tokenizer, grammar: str, text: str) -> bool:
    lark = llguidance.gbnf_to_lark.gbnf_to_lark(grammar)
    matcher = llguidance.LLMatcher(tokenizer, llguidance.LLMatcher.grammar_from_lark(lark))
    tokens = tokenizer.tokenize_bytes(text.encode())
    return matcher.validate_tokens(tokens) == len(tokens) and matcher.consume_tokens(tokens) and \
        matcher.is_accepting()


@pytest.mark.parametrize("name", sorted(GREEDY_LEXING_CASES))
def test_llguidance_greedy_lexing_differs_and_we_keep_exact_semantics(name, byte_tokenizer):
    grammar, text, why = GREEDY_LEXING_CASES[name]
    assert check_text(parse_grammar(grammar, "gbnf"), text).complete, why
    assert not llguidance_accepts(byte_tokenizer, grammar, text), f"llguidance now accepts it: drop '{name}'"


@pytest.mark.parametrize("grammar,text", [('root ::= "<" . ">"', "<a>"), ('root ::= [0-9]+ "," [0-9]+', "12,34")])
def test_llguidance_agrees_where_lexing_is_unambiguous(byte_tokenizer, grammar, text):
    assert check_text(parse_grammar(grammar, "gbnf"), text).complete
    assert llguidance_accepts(byte_tokenizer, grammar, text)
