"""``GrammarBackend`` / ``Grammar`` against the ``Matcher`` and against xgrammar's ``GrammarMatcher``.

Where both libraries mean the same language (a GBNF grammar and a regex both
read alike), every method an engine calls is run on the same token sequences
on both sides, and the bitmasks, verdicts and termination must agree bit for
bit. Token sequences are random walks through the allowed sets (hypothesis).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import xgrammar as xgr
from hypothesis import given, settings
from hypothesis import strategies as st

from integration_support import SCHEMA, greedy_tokens, llama3_hf
from kbnf_gpu import Matcher, TokenRejected, Vocabulary
from kbnf_gpu.integrations.backend import Grammar, GrammarBackend

GBNF = 'root ::= "[" num ("," num)* "]"\nnum ::= [0-9] | [1-9] [0-9]'
REGEX = r"id-[a-c]{1,3}(x|yz)?"


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary.from_hf(llama3_hf())


@pytest.fixture(scope="module")
def qs(vocab) -> list[int]:
    return [t for t in range(vocab.size) if t not in vocab.special_ids and b"Q" in (vocab.token_bytes(t) or b"")]


@pytest.fixture(scope="module")
def backend(vocab) -> GrammarBackend:
    return GrammarBackend(vocab)


@pytest.fixture(scope="module")
def xgr_compiler(vocab):
    info = xgr.TokenizerInfo.from_huggingface(llama3_hf(), vocab_size=vocab.size)
    assert info.stop_token_ids == list(vocab.eos_ids)
    return xgr.GrammarCompiler(info)


@pytest.fixture(scope="module")
def pairs(backend, xgr_compiler):
    """(our compiled grammar, xgrammar's) for each grammar both read alike."""
    return {
        "gbnf": (backend.cache.result(backend.spec_for("grammar", GBNF)), xgr_compiler.compile_grammar(GBNF)),
        "regex": (backend.cache.result(backend.spec_for("regex", REGEX)), xgr_compiler.compile_regex(REGEX)),
    }


def bits(grammar_or_matcher, vocab_size: int) -> torch.Tensor:
    mask = xgr.allocate_token_bitmask(1, vocab_size)
    if isinstance(grammar_or_matcher, Grammar):
        grammar_or_matcher.fill_bitmask(mask, 0)
    else:
        grammar_or_matcher.fill_next_token_bitmask(mask, 0)
    return mask


def ids_of(mask: torch.Tensor, vocab_size: int) -> list[int]:
    unpacked = np.unpackbits(mask[0].numpy().view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(unpacked).tolist()


@pytest.mark.parametrize("name", ["gbnf", "regex"])
@settings(max_examples=20, deadline=None)
@given(choices=st.lists(st.integers(0, 1 << 30), min_size=1, max_size=14),
       back=st.integers(0, 3), probe=st.integers(0, 1 << 30))
def test_same_masks_and_verdicts_as_xgrammar(pairs, vocab, qs, name, choices, back, probe):
    ours_compiled, theirs_compiled = pairs[name]
    ours, theirs = Grammar(ours_compiled), xgr.GrammarMatcher(theirs_compiled)
    ref = Matcher(ours_compiled)
    V = vocab.size
    taken: list[int] = []
    for choice in choices:
        if ours.is_terminated():
            break
        mask = bits(ours, V)
        assert torch.equal(mask, bits(theirs, V)), f"masks differ after {taken}"
        allowed = ids_of(mask, V)
        expect = set(ref.allowed_token_ids().tolist()) if not ref.is_finished() else set()
        assert set(allowed) == expect
        if not allowed:
            break
        token = allowed[choice % len(allowed)]
        # validate_tokens: the longest accepted prefix, and no state change
        rejected = qs[probe % len(qs)]  # a token with a "Q": never in either language
        assert ours.validate_tokens([token, rejected, token])[:1] == [token]
        assert ours.validate_tokens([rejected]) == []
        assert torch.equal(bits(ours, V), mask)
        # accept_tokens is all or nothing (after a stop token the rest is ignored, as vLLM expects)
        if token not in vocab.eos_ids:
            assert not ours.accept_tokens([token, rejected]) and torch.equal(bits(ours, V), mask)
        assert ours.accept_tokens("request-0", [token]) and theirs.accept_token(token)
        if token not in vocab.eos_ids:
            ref.accept_token(token)
        taken.append(token)
        assert ours.is_terminated() == theirs.is_terminated()
    n = min(back, len(taken))
    ours.rollback(n)
    theirs.rollback(n)
    assert ours.num_processed_tokens == len(taken) - n
    assert ours.is_terminated() == theirs.is_terminated()
    if not theirs.is_terminated():  # xgrammar refuses to fill a mask once terminated
        assert torch.equal(bits(ours, V), bits(theirs, V))
    ours.reset()
    theirs.reset()
    assert torch.equal(bits(ours, V), bits(theirs, V)) and not ours.is_terminated()


@pytest.mark.parametrize("name, prefix", [("regex", b""), ("gbnf", b"[1,")])
def test_jump_forward_matches_xgrammar(pairs, name, prefix):
    ours_compiled, theirs_compiled = pairs[name]
    ours, theirs = Grammar(ours_compiled), xgr.GrammarMatcher(theirs_compiled)
    for token in greedy_tokens(ours_compiled, prefix):
        assert ours.accept_tokens([token]) and theirs.accept_token(token)
    jump = ours.jump_forward()
    assert jump.data.decode() == theirs.find_jump_forward_string()
    spelled = b"".join(ours.vocab.token_bytes(t) for t in jump.tokens)
    assert spelled == jump.data[: jump.tokens_bytes] and (jump.data == b"" or jump.tokens)
    assert ours.accept_tokens(list(jump.tokens)), "the forced tokens are allowed in sequence"
    sglang = Grammar(ours_compiled)
    helper = sglang.try_jump_forward(None)
    if name == "regex":
        assert helper == ([*jump.tokens], "id-") and sglang.jump_forward_str_state(helper) == ("id-", -1)


def test_stop_token_override_matches_xgrammar(pairs, vocab, backend):
    ours_compiled, theirs_compiled = pairs["regex"]
    stop = int(vocab.eos_ids[0]) - 8  # another special token stands for the request's stop string
    ours = backend.compile_grammar("regex", REGEX, stop_token_ids={stop})
    theirs = xgr.GrammarMatcher(theirs_compiled, override_stop_tokens=[stop])
    V = vocab.size
    for token in greedy_tokens(ours_compiled, b"id-ab"):
        assert ours.accept_tokens([token]) and theirs.accept_token(token)
    mask = bits(ours, V)
    assert torch.equal(mask, bits(theirs, V))
    allowed = ids_of(mask, V)
    assert stop in allowed and vocab.eos_ids[0] not in allowed
    assert not ours.accept_tokens([vocab.eos_ids[0]])
    assert ours.accept_tokens([stop]) and theirs.accept_token(stop)
    assert ours.is_terminated() and theirs.is_terminated() and ours.finished
    assert ours.accept_tokens([1, 2, 3]), "tokens after the stop token are ignored, as vLLM expects"
    ours.rollback(1)
    assert not ours.is_terminated() and torch.equal(bits(ours, V), mask)


def test_json_schema_against_the_matcher(backend, vocab):
    grammar = backend.compile_grammar("json", json.dumps(SCHEMA))
    document = b'{"name": "Bo", "age": 7, "ok": false}'
    tokens = greedy_tokens(grammar.matcher.compiled, document)
    ref = Matcher(grammar.matcher.compiled)
    for token in tokens:
        assert grammar.allowed_token_ids() == ref.allowed_token_ids().tolist()
        grammar.accept_token(token)
        ref.accept_token(token)
    assert vocab.eos_ids[0] in grammar.allowed_token_ids()
    with pytest.raises(TokenRejected):
        grammar.accept_token(next(t for t in range(vocab.size) if vocab.token_bytes(t) == b"x"))
    grammar.accept_token(vocab.eos_ids[0])
    assert grammar.is_terminated() and grammar.allowed_token_ids() == []


def test_eager_grammar_allows_only_stop_tokens_once_complete(backend, vocab):
    grammar = backend.compile_grammar("kbnf_gpu", {"grammar": 'start ::= "hi";'})
    assert grammar.accept_tokens(greedy_tokens(grammar.matcher.compiled, b"hi"))
    assert grammar.matcher.is_finished() and not grammar.is_terminated()
    assert ids_of(bits(grammar, vocab.size), vocab.size) == list(vocab.eos_ids)
    assert grammar.accept_tokens([vocab.eos_ids[0]]) and grammar.is_terminated()


def test_request_types_cache_and_futures(backend, vocab):
    choice = backend.compile_grammar("choice", json.dumps(["red", "green", "a.b"]))
    texts = {b"red", b"green", b"a.b"}
    first = {vocab.token_bytes(t) for t in choice.allowed_token_ids()}
    assert first and all(any(x.startswith(b) for x in texts) for b in first)
    grammar, ready = backend.get_cached_or_future_value(("json", json.dumps(SCHEMA)))
    grammar = grammar if ready else grammar.result(timeout=60)
    again, ready = backend.get_cached_or_future_value(("json", json.dumps(SCHEMA)))
    assert ready and again is not grammar and again.matcher.compiled is grammar.matcher.compiled
    assert backend.dispatch_ebnf(GBNF).matcher.compiled is backend.compile_grammar("grammar", GBNF).matcher.compiled
    obj = backend.compile_grammar("json_object", "")
    assert {vocab.token_bytes(t) for t in obj.allowed_token_ids()} >= {b"{"}
    with pytest.raises(ValueError, match="unsupported structured-output request type"):
        backend.compile_grammar("structural_tag", "{}")
    with pytest.raises(ValueError, match="line 1"):
        backend.validate_grammar("grammar", 'root ::= "a" (')
    failed, ready = backend.get_cached_or_future_value(("regex", "(unclosed"))
    with pytest.raises(ValueError):
        failed.result(timeout=60) if not ready else None


def test_bitmask_helpers_and_padded_logits(backend, vocab):
    grammar = backend.compile_grammar("regex", "[0-9]+")
    masks = backend.allocate_token_bitmask(3)
    assert masks.shape == (3, (vocab.size + 31) // 32) and bool((masks == -1).all())
    sglang_mask = grammar.allocate_vocab_mask(vocab.size, 2, "cpu")
    grammar.fill_vocab_mask(sglang_mask, 1)
    logits = torch.randn(2, vocab.size + 64)
    original = logits.clone()
    Grammar.apply_vocab_mask(logits, Grammar.move_vocab_mask(sglang_mask, "cpu"))
    allowed = torch.nonzero(logits[1] != float("-inf")).flatten().tolist()
    assert allowed == grammar.allowed_token_ids()
    assert torch.equal(logits[0, : vocab.size], original[0, : vocab.size]), "an all-ones row allows everything"
    assert bool(torch.isinf(logits[:, vocab.size:]).all()), "padded columns are masked"


def test_copy_is_independent(backend, vocab):
    grammar = backend.compile_grammar("regex", "(ab|cd)+")
    twin = grammar.copy()
    assert grammar.accept_tokens(greedy_tokens(grammar.matcher.compiled, b"ab"))
    assert twin.num_processed_tokens == 0 and twin.allowed_token_ids() != grammar.allowed_token_ids()
    with pytest.raises(ValueError, match="cannot roll back"):
        twin.rollback(1)


def test_readme_backend_snippet_runs(capsys):
    from pathlib import Path
    import re

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code = re.search(r"### A structured-output backend.*?```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README backend snippet", "exec"), {})
    first, second = capsys.readouterr().out.splitlines()
    assert first.endswith("True False") and "JumpForward(data=b'" in second
