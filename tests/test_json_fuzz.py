"""Soundness fuzz: random walks over a KBNF JSON grammar with the Llama-3 vocabulary.

2,000 seeded walks (until EOS or 200 tokens), ``end_mode="eos"``. Every step
checks:

* the walk is never stuck: a non-finished matcher always allows some token;
* EOS is allowed exactly when the output so far is a JSON document
  (``json.loads`` accepts it); so every finished output passes ``json.loads``.

A third of the walks choose uniformly among the allowed tokens. Uniform walks
mostly end as a scalar plus whitespace, or stay inside one long string (nearly
every Llama-3 token is string content), so the other walks, still choosing
only among the allowed tokens, are biased: with probability 1/2 (2/3 for the
last third, whose first token must open an object or array) they pick among
the allowed tokens that hold a structural byte (``"{}[],:``) or EOS, so they
close strings, nest and finish non-trivial documents.

The compiled grammar is the session fixture ``llama3_json``: every state's
mask is computed once and shared by all walks.
"""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from kbnf_gpu import Matcher

N_WALKS = 2000
MAX_TOKENS = 200
SEED = 20240611


def parses(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return True


@pytest.mark.slow
def test_random_walks_are_sound(llama3_json):
    compiled = llama3_json
    vocab = compiled.vocab
    assert compiled.end_mode == "eos"
    eos_ids = np.array(vocab.eos_ids, dtype=np.int32)
    assert eos_ids.size
    matrix, lengths = vocab.token_matrix()
    structural_bytes = np.frombuffer(b'"{}[],:', dtype=np.uint8)
    cols = np.arange(matrix.shape[1])[None, :] < lengths[:, None]
    structural = (np.isin(matrix, structural_bytes) & cols).any(axis=1)
    structural[eos_ids] = True
    opens = np.zeros(vocab.size, dtype=bool)
    opens[:] = (matrix[:, 0] == ord("{")) | (matrix[:, 0] == ord("["))
    opens &= lengths > 0
    token_bytes = [vocab.token_bytes(i) for i in range(vocab.size)]

    rng = np.random.default_rng(SEED)
    allowed_of: dict[int, np.ndarray] = {}
    structural_of: dict[int, np.ndarray] = {}
    finished = 0
    finished_nested = 0
    longest = 0
    start = time.perf_counter()
    for walk in range(N_WALKS):
        policy = walk % 3  # 0 uniform, 1 structural 1/2, 2 container first + structural 2/3
        bias = (0.0, 0.5, 2 / 3)[policy]
        m = Matcher(compiled)
        out = bytearray()
        for step in range(MAX_TOKENS):
            state = m.state
            allowed = allowed_of.get(state)
            if allowed is None:
                allowed = m.allowed_token_ids()
                allowed_of[state] = allowed
            assert allowed.size, f"walk {walk} stuck after {bytes(out)!r}"
            accepting = m.is_accepting()
            assert bool(np.isin(eos_ids, allowed).all()) == accepting == parses(bytes(out)), (walk, bytes(out))
            if policy == 2 and step == 0:
                pick = allowed[opens[allowed]]
                assert pick.size
            elif rng.random() < bias:
                pick = structural_of.get(state)
                if pick is None:
                    pick = allowed[structural[allowed]]
                    structural_of[state] = pick
                if not pick.size:
                    pick = allowed
            else:
                pick = allowed
            t = int(pick[rng.integers(pick.size)])
            m.accept_token(t)
            if t in vocab.eos_ids:
                assert m.is_finished()
                assert m.allowed_token_ids().size == 0
                doc = json.loads(out.decode("utf-8"))
                finished += 1
                finished_nested += isinstance(doc, (list, dict)) and len(doc) > 0
                break
            out += token_bytes[t]
        longest = max(longest, len(out))
    elapsed = time.perf_counter() - start
    print(f"{N_WALKS} walks: {finished} finished ({finished_nested} non-empty containers), "
          f"{len(allowed_of)} states, longest {longest} bytes, {elapsed:.1f}s")
    # the fuzz must actually reach the end of documents, nested ones included
    assert finished >= N_WALKS // 4
    assert finished_nested >= N_WALKS // 10


@pytest.mark.slow
def test_fixture_grammar_is_shared(llama3_json, request):
    assert request.getfixturevalue("llama3_json") is llama3_json
    m = Matcher(llama3_json)
    m.accept_bytes(b'{"a": [1, "x"]}')
    assert m.is_accepting()
