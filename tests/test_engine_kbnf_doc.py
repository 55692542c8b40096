"""The ``kbnf`` crate's documented examples, run through ``kbnf_gpu.Engine``.

The quick example at the top of the crate documentation and its three
"Examples" (initial allowed ids, prompt tokens, reuse after ``reset``), with the
same vocabularies (ids 1..5, id 0 a hole), tokens and expected logits, as
float32 numpy arrays and as torch tensors. The transcription is checked
against the ``kbnf`` package itself too (``impl="kbnf"``), so a wrong
expectation here cannot pass silently for both.
"""
from __future__ import annotations

import importlib

import math

import numpy as np
import pytest
import torch

from conftest import compile_config
from kbnf_gpu import AcceptTokenError, AcceptTokenResult, Engine, TokenRejected, Vocabulary
from kbnf_oracle import quiet_stderr

INF = -math.inf

QUICK_GRAMMAR = 'start ::= "你好" #e"(.|\\n)*\\n\\n";'
QUICK_TOKENS = {1: "你好", 2: "hello", 3: "250", 4: "\n", 5: "\n\n"}
EX_GRAMMAR = 'start ::= #e"(.|\\n)*\\n\\n";'
EX_TOKENS = {1: "a", 2: "hello", 4: "\n", 5: "\n\n"}




class OursAdapter:
    def __init__(self, grammar: str, tokens: dict[int, str], use_tables: bool | None) -> None:
        vocab = Vocabulary({i: s.encode() for i, s in tokens.items()})
        assert vocab.size == 6 and vocab.token_bytes(0) is None
        self.e = Engine(grammar, vocab, compile_config(use_tables))

    def update_logits(self, token, logits):
        return self.e.update_logits(token, logits).name

    def try_accept_new_token(self, token):
        return self.e.try_accept_new_token(token).name

    def allowed(self):
        self.e.compute_allowed_token_ids()
        return list(self.e.allowed_token_ids_from_last_computation())

    def mask_logits(self, logits):
        self.e.mask_logits(logits)

    def reset(self):
        self.e.reset()

    def is_finished(self):
        return self.e.is_finished()


class KbnfAdapter:
    def __init__(self, grammar: str, tokens: dict[int, str], use_tables: bool | None = None) -> None:
        kbnf = importlib.import_module("kbnf")
        vocab = kbnf.Vocabulary({i: kbnf.Token(s.encode()) for i, s in tokens.items()}, dict(tokens))
        config = kbnf.Config()
        config.engine_config.rejected_token_prefix_cache_enabled = False
        with quiet_stderr():
            self.e = kbnf.Engine(grammar, vocab, config)

    def update_logits(self, token, logits):
        out, result = self.e.update_logits(token, logits)
        if out is not logits:  # torch tensors may come back as a new object
            logits.copy_(out) if isinstance(logits, torch.Tensor) else np.copyto(logits, out)
        return str(result).rsplit(".", 1)[-1]

    def try_accept_new_token(self, token):
        return str(self.e.try_accept_new_token(token)).rsplit(".", 1)[-1]

    def allowed(self):
        self.e.compute_allowed_token_ids()
        return list(self.e.get_allowed_token_ids_from_last_computation())

    def mask_logits(self, logits):
        out = self.e.mask_logits(logits)
        if out is not logits:
            logits.copy_(out) if isinstance(logits, torch.Tensor) else np.copyto(logits, out)

    def reset(self):
        self.e.reset()

    def is_finished(self):
        return self.e.is_finished()


IMPLS = {
    "ours-reference": lambda g, t: OursAdapter(g, t, use_tables=False),
    "ours-default": lambda g, t: OursAdapter(g, t, use_tables=None),
    "kbnf": KbnfAdapter,
}


def make_logits(values, kind):
    if kind == "numpy":
        return np.array(values, dtype=np.float32)
    return torch.tensor(values, dtype=torch.float32)


def as_list(logits) -> list[float]:
    return [float(x) for x in (logits.tolist())]


def assert_logits(logits, expected) -> None:
    """Same length, ``-inf`` exactly where expected, other values unchanged."""
    got = as_list(logits)
    assert len(got) == len(expected) == 6
    assert [math.isinf(x) and x < 0 for x in got] == [math.isinf(x) and x < 0 for x in expected], (got, expected)
    assert [x for x in got if not math.isinf(x)] == [x for x in expected if not math.isinf(x)], (got, expected)
    if isinstance(logits, np.ndarray):
        assert logits.dtype == np.float32
    else:
        assert logits.dtype == torch.float32


def greedy_decode(logits) -> int:
    return int(np.argmax(np.array(as_list(logits))))


@pytest.fixture(params=sorted(IMPLS))
def impl(request):
    return IMPLS[request.param]


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_quick_example(impl, kind):
    engine = impl(QUICK_GRAMMAR, QUICK_TOKENS)
    token = 1  # the prompt token
    logits = make_logits([0.0, 0.0, 0.0, 1.0, 0.0, 0.0], kind)
    assert engine.update_logits(token, logits) == "Ongoing"
    assert_logits(logits, [INF, 0.0, 0.0, 1.0, 0.0, 0.0])

    token = greedy_decode(logits)
    assert token == 3
    logits = make_logits([0.0, 0.0, 0.0, 0.0, 1.0, 0.0], kind)
    assert engine.update_logits(token, logits) == "Ongoing"
    assert_logits(logits, [INF, 0.0, 0.0, 0.0, 1.0, 0.0])

    token = greedy_decode(logits)
    assert token == 4
    logits = make_logits([0.0, 1.0, 0.0, 0.0, 0.0, 0.0], kind)
    assert engine.update_logits(token, logits) == "Ongoing"
    # "\n" then "\n\n" would pass the first "\n\n": #e ends the lexeme there
    assert_logits(logits, [INF, 1.0, 0.0, 0.0, 0.0, INF])

    token = greedy_decode(logits)
    assert token == 1
    logits = make_logits([0.0, 0.0, 0.0, 0.0, 0.0, 1.0], kind)
    assert engine.update_logits(token, logits) == "Ongoing"
    assert_logits(logits, [INF, 0.0, 0.0, 0.0, 0.0, 1.0])

    token = greedy_decode(logits)
    assert token == 5
    logits = make_logits([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], kind)
    assert engine.update_logits(token, logits) == "Finished"
    # a finished engine leaves the logits alone
    assert_logits(logits, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert engine.is_finished()


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_example_initially_allowed_ids(impl, kind):
    engine = impl(EX_GRAMMAR, EX_TOKENS)
    logits = make_logits([0.0] * 6, kind)
    assert engine.allowed() == [1, 2, 4, 5]
    engine.mask_logits(logits)
    assert_logits(logits, [INF, 0.0, 0.0, INF, 0.0, 0.0])


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_example_prompt_tokens(impl, kind):
    engine = impl(EX_GRAMMAR, EX_TOKENS)
    logits = make_logits([0.0] * 6, kind)
    assert engine.try_accept_new_token(2) == "Ongoing"
    assert engine.try_accept_new_token(2) == "Ongoing"
    assert engine.allowed() == [1, 2, 4, 5]
    engine.mask_logits(logits)
    assert_logits(logits, [INF, 0.0, 0.0, INF, 0.0, 0.0])


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_example_reuse_after_reset(impl, kind):
    engine = impl(EX_GRAMMAR, EX_TOKENS)
    logits = make_logits([0.0] * 6, kind)
    assert engine.try_accept_new_token(2) == "Ongoing"
    assert engine.try_accept_new_token(5) == "Finished"
    assert engine.is_finished()
    assert engine.allowed() == []
    engine.reset()
    assert not engine.is_finished()
    assert engine.update_logits(2, logits) == "Ongoing"
    assert_logits(logits, [INF, 0.0, 0.0, INF, 0.0, 0.0])


def test_result_enum_and_errors():
    engine = OursAdapter(EX_GRAMMAR, EX_TOKENS, use_tables=None).e
    assert AcceptTokenResult.Ongoing is not AcceptTokenResult.Finished
    assert engine.try_accept_new_token(2) is AcceptTokenResult.Ongoing
    for bad in (0, 3, 6, -1, 10**9):  # a hole, a hole, past the end, negative, huge
        with pytest.raises(AcceptTokenError):
            engine.try_accept_new_token(bad)
    assert issubclass(AcceptTokenError, TokenRejected)
    assert engine.try_accept_new_token(5) is AcceptTokenResult.Finished
    with pytest.raises(AcceptTokenError):
        engine.try_accept_new_token(2)  # finished: nothing more is accepted
    logits = np.zeros(6, dtype=np.float32)
    before = engine.matcher.state
    with pytest.raises(AcceptTokenError):
        engine.update_logits(1, logits)
    assert engine.matcher.state == before
    assert (logits == 0).all()


def test_clone_is_independent():
    engine = OursAdapter(EX_GRAMMAR, EX_TOKENS, use_tables=None).e
    engine.try_accept_new_token(2)
    other = engine.clone()
    assert other.try_accept_new_token(5) is AcceptTokenResult.Finished
    assert not engine.is_finished()
    engine.compute_allowed_token_ids()
    assert engine.allowed_token_ids_from_last_computation() == [1, 2, 4, 5]
    other.compute_allowed_token_ids()
    assert other.allowed_token_ids_from_last_computation() == []
