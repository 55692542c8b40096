"""Mutation fuzz of the corpus JSON Schemas in CI (issue #13), bounded: every mutant either compiles (front end
and ``normalize``) or raises a ``KbnfGpuError``, under a wall-clock budget.

The mutator is ``benchmarks/fuzz_schemas.py`` (type confusion, extreme numbers, deleted and duplicated keys,
wrong value types, lone surrogates); hypothesis draws the corpus schema and the mutation seed, so a failure
shrinks to a small seed and reproduces with ``python benchmarks/fuzz_schemas.py --replay SEED``. The 100,000
mutant run with a hard per-input timeout is the benchmark script itself.
"""
from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
fuzz = importlib.import_module("fuzz_schemas")

CASES = fuzz.schema_cases()


def test_corpus_schemas_are_there() -> None:
    assert len(CASES) >= 50


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(index=st.integers(0, len(CASES) - 1), seed=st.integers(0, 2**32 - 1), strict=st.booleans())
def test_mutated_corpus_schemas_compile_or_raise_a_library_error(index: int, seed: int, strict: bool) -> None:
    schema = fuzz.mutate(CASES[index], random.Random(seed))
    outcome = fuzz.compile_ir(schema, time_budget_s=5.0, strict=strict)  # anything but a KbnfGpuError propagates
    assert outcome == "ok" or outcome.endswith(("Error", "Exceeded", "Large")), outcome


def test_mutator_changes_schemas() -> None:
    rnd = random.Random(3)
    changed = sum(fuzz.mutate(CASES[i % len(CASES)], rnd) != CASES[i % len(CASES)] for i in range(50))
    assert changed >= 40
