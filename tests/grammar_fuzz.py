"""Mutation fuzzing of grammar texts (issue #13), shared by the CI test and ``benchmarks/fuzz_grammars.py``.

An input is a corpus grammar (GBNF, Lark, regex, KBNF) with a few random
edits: delete, duplicate or swap a span, splice in a span of another grammar
of the same syntax, or insert a hostile piece (deep nesting, huge bounds,
surrogates, NUL). ``run_one`` compiles it the way a server would (front end,
normalization, parser set-up, one step) under a small time budget. The only
acceptable outcomes: it compiles, or it raises a ``KbnfGpuError``.
"""
from __future__ import annotations

import random
import time

from data_paths import corpus_cases

SYNTAXES = ("gbnf", "lark", "regex", "kbnf")
HOSTILE = ["(" * 300, ")" * 50, "{0,1000000}", "{99999999999999999999}", "*" * 20, "+?" * 10, "\\", "\x00",
           "\ud800", "[^\\x00-\\U0010ffff]", "|" * 50, '"' * 7, "::=", ":", "->", "#", "x{2,1}", "(?<=a)",
           "\\p{L}", "&", "~", "%import common.WS", "%ignore", "\n" * 3, " " * 5, "é", "🎉", "a" * 200]


def seeds(syntax: str) -> list[str]:
    return [c["grammar"] for c in corpus_cases(syntax)]


def mutate(text: str, rng: random.Random, donors: list[str]) -> str:
    """``text`` with 1-3 random edits (mostly one: more edits mostly give syntax errors)."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        n = len(text)
        i, j = sorted(rng.randrange(n + 1) for _ in range(2))
        op = rng.randrange(6)
        if op == 0:
            text = text[:i] + text[j:]
        elif op == 1:
            text = text[:j] + text[i:j] + text[j:]
        elif op == 2 and n:
            k, m = sorted(rng.randrange(n + 1) for _ in range(2))
            a, b = sorted([(i, j), (k, m)])
            if a[1] <= b[0]:
                text = text[:a[0]] + text[b[0]:b[1]] + text[a[1]:b[0]] + text[a[0]:a[1]] + text[b[1]:]
        elif op == 3:
            donor = rng.choice(donors)
            k, m = sorted(rng.randrange(len(donor) + 1) for _ in range(2))
            text = text[:i] + donor[k:m] + text[i:]
        else:
            text = text[:i] + rng.choice(HOSTILE) + text[i:]
    return text


def inputs(syntax: str, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    pool = seeds(syntax)
    return [mutate(rng.choice(pool), rng, pool) for _ in range(n)]


def run_one(text: str, syntax: str, time_budget_s: float = 1.0) -> tuple[str, float]:
    """``("ok" | "error", seconds)``; any exception that is not a ``KbnfGpuError`` propagates."""
    from kbnf_gpu import CompileConfig
    from kbnf_gpu.budget import compile_budget
    from kbnf_gpu.errors import KbnfGpuError
    from kbnf_gpu.frontends import parse_grammar
    from kbnf_gpu.normalize import normalize
    from kbnf_gpu.runtime.earley import EarleyParser

    config = CompileConfig(time_budget_s=time_budget_s)
    t0 = time.perf_counter()
    try:
        with compile_budget(config):
            bnf = normalize(parse_grammar(text, syntax), config.normalize_config(syntax))
        parser = EarleyParser(bnf)
        parser.step_bytes(parser.initial_state, b'{"a": 1}')
        outcome = "ok"
    except KbnfGpuError:
        outcome = "error"
    return outcome, time.perf_counter() - t0
