"""Micro-benchmark of ``build_dfa`` on the terminals a JSON Schema compile makes.

Prints a table (terminal, DFA states, median ms over repeats) and writes JSON
(``--out``). The flat-terminal cache is cleared before each build, so every
build is measured from scratch. Usage::

    python benchmarks/bench_automata.py [--repeat 5] [--out bench_automata.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from kbnf_gpu import ir
from kbnf_gpu.automata import build, build_dfa

# (name, expression): literal keys, key + whitespace + colon, counted strings, formats, numbers
_WS = ir.Repeat(ir.CharClass(((9, 10), (13, 13), (32, 32))), 0, 16)
_CHAR = ir.Pattern(r'[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}')
TERMINALS = [
    ("literal key", ir.Literal(b'"customer_identifier"')),
    ("key ws colon ws", ir.Concat((ir.Literal(b'"name"'), _WS, ir.Literal(b":"), _WS))),
    ("20 literal keys", ir.Alternation(tuple(ir.Literal(f'"field_{i}_{"x" * (i % 7)}"'.encode()) for i in range(20)))),
    ('string "CHAR{4,30}"', ir.Concat((ir.Literal(b'"'), ir.Repeat(_CHAR, 4, 30), ir.Literal(b'"')))),
    ("string CHAR*", ir.Concat((ir.Literal(b'"'), ir.Repeat(_CHAR, 0, None), ir.Literal(b'"')))),
    ("number", ir.Pattern(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")),
    ("date-time", ir.Pattern(r'"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})"')),
    ("email-ish", ir.Pattern(r'"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,63}\.[A-Za-z]{2,10}"')),
]


def measure(repeat: int) -> list[dict]:
    rows = []
    for name, expr in TERMINALS:
        times, states = [], 0
        for _ in range(repeat):
            build._FLAT_CACHE.clear()
            t0 = time.perf_counter()
            dfa = build_dfa(ir.Terminal(expr, name=name))
            times.append((time.perf_counter() - t0) * 1000)
            states = dfa.n_states
        rows.append({"terminal": name, "states": states, "median_ms": round(statistics.median(times), 3)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="bench_automata.json")
    args = ap.parse_args()
    rows = measure(args.repeat)
    print(f"{'terminal':<24}{'states':>8}{'median ms':>12}")
    for r in rows:
        print(f"{r['terminal']:<24}{r['states']:>8}{r['median_ms']:>12.3f}")
    print(f"{'total':<24}{'':>8}{sum(r['median_ms'] for r in rows):>12.3f}")
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
