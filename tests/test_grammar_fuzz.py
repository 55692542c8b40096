"""Mutated corpus grammars in every text syntax: compiled or a library error, never a crash or a hang (#13)."""
from __future__ import annotations

import pytest

from grammar_fuzz import SYNTAXES, inputs, run_one

PER_SYNTAX = 1000  # CI: 4,000 inputs; benchmarks/fuzz_grammars.py runs 100,000
BUDGET_S = 1.0


@pytest.mark.parametrize("syntax", SYNTAXES)
def test_mutated_grammars_compile_or_raise_library_errors(syntax):
    outcomes = {"ok": 0, "error": 0}
    slow = []
    for i, text in enumerate(inputs(syntax, PER_SYNTAX, seed=17)):
        try:
            outcome, seconds = run_one(text, syntax, BUDGET_S)
        except Exception as err:  # noqa: BLE001 - the failure under test
            raise AssertionError(f"input {i} raised {type(err).__name__}: {err}\n{text!r}") from err
        outcomes[outcome] += 1
        if seconds > 5 * BUDGET_S:
            slow.append((round(seconds, 1), text[:200]))
    assert not slow, slow  # a budget that did not stop the work
    assert outcomes["ok"] and outcomes["error"], outcomes  # the mutations reach both outcomes
