"""Time the offline token tables (INSIDE / CROSS / HASLEX / DEEP) for a JSON grammar on Llama-3.

    python benchmarks/bench_tables.py [--repeat N]

Prints a table and writes ``benchmarks/out/bench_tables.json``. Every timing
is the best of ``--repeat`` runs; "cold" means the per-DFA walk memo is
cleared first (the vocabulary trie, built once per vocabulary, is kept and
timed on its own). Reference points from the issue: the kbnf crate compiles a
JSON grammar for Llama-3 in 0.39 s, xgrammar in 0.095 s.
"""
from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from kbnf_gpu import ir
from kbnf_gpu.automata import ByteDFA, dfa_literal, regexpr_to_dfa
from kbnf_gpu.compile.dfa_walk import clear_walk_cache
from kbnf_gpu.compile.table_cache import TableCache
from kbnf_gpu.compile.tables import cross_sets, deep_sets, inside_sets, lexeme_splits
from kbnf_gpu.compile.token_trie import TokenTrie
from kbnf_gpu.vocab import Vocabulary

PATTERNS = {
    "string": r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',
    "number": r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
    "ws": r"[ \t\n\r]*",
}
LITERALS = ["{", "}", "[", "]", ",", ":", "true", "false", "null"]
VALUE_START = ["{", "[", "string", "number", "true", "false", "null"]
# which terminal can start right after each one completes, in
#   value ::= object | array | string | number | true | false | null
#   object ::= "{" ws "}" | "{" ws member (ws "," ws member)* ws "}"
#   member ::= string ws ":" ws value;  array likewise;  ws ::= [ \t\n\r]*
FOLLOW = {
    "{": ["ws", "string", "}"],
    "[": ["ws", "]", *VALUE_START],
    "string": ["ws", ":", ",", "}", "]"],
    ":": ["ws", *VALUE_START],
    ",": ["ws", *VALUE_START],
    **{t: ["ws", ",", "}", "]"] for t in ["number", "true", "false", "null", "}", "]"]},
}
FOLLOW["ws"] = sorted({b for bs in FOLLOW.values() for b in bs} - {"ws"})


def best_of(repeat: int, fn: Callable[[], object], cold: bool = True) -> float:
    best = float("inf")
    for _ in range(repeat):
        if cold:
            clear_walk_cache()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def json_tables(dfas: dict[str, ByteDFA], trie: TokenTrie, pairs: dict[str, list[str]]) -> dict:
    inside = {k: inside_sets(d, trie) for k, d in dfas.items()}
    splits = {k: lexeme_splits(d, trie) for k, d in dfas.items()}
    cross = {(a, b): cross_sets(dfas[a], dfas[b], trie) for a, bs in pairs.items() for b in bs}
    deep = {a: deep_sets(dfas[a], [splits[b] for b in bs], trie) for a, bs in pairs.items()}
    return {"inside": inside, "cross": cross, "splits": splits, "deep": deep}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "bench_tables.json")
    args = ap.parse_args()
    r = args.repeat

    t = time.perf_counter()
    vocab = Vocabulary.from_name("llama3")
    matrix, lengths = vocab.token_matrix()
    t_vocab = time.perf_counter() - t
    t_trie = best_of(r, lambda: TokenTrie.from_vocab(vocab), cold=False)
    trie = TokenTrie.from_vocab(vocab)

    dfas = {k: regexpr_to_dfa(ir.Pattern(p)) for k, p in PATTERNS.items()}
    dfas.update({lit: dfa_literal(lit.encode()) for lit in LITERALS})
    all_pairs = {a: list(dfas) for a in dfas}
    n_pairs = sum(map(len, FOLLOW.values()))

    rows: list[tuple[str, float, str]] = []

    def row(name: str, seconds: float, note: str = "") -> None:
        rows.append((name, seconds, note))

    row("vocabulary load (Vocabulary.from_name, once)", t_vocab, f"V={vocab.size}")
    row("token trie build (once per vocabulary)", t_trie, f"{trie.rows} tokens, {trie.node_count} nodes, max_len {trie.max_len}")
    for name in ["string", "number", "ws", "{", ",", "true"]:
        d = dfas[name]
        sets = inside_sets(d, trie)
        row(f"INSIDE {name}", best_of(r, lambda d=d: inside_sets(d, trie)), f"{d.n_states} states, {sum(s.count for s in sets)} (state, token) pairs")
    for a, b in [("string", ","), ("string", ":"), ("number", ","), ("ws", "string"), ("ws", "number"), (",", "ws"), ("{", "string")]:
        sets = cross_sets(dfas[a], dfas[b], trie)
        row(f"CROSS {a} -> {b} (incl. walk of {a})", best_of(r, lambda a=a, b=b: cross_sets(dfas[a], dfas[b], trie)), f"{sum(s.count for s in sets)} pairs")
    for name in ["string", "ws", ","]:
        sp = lexeme_splits(dfas[name], trie)
        row(f"HASLEX {name}", best_of(r, lambda n=name: lexeme_splits(dfas[n], trie)), f"{sp.count} (token, k)")
    sp_all = [lexeme_splits(d, trie) for d in dfas.values()]
    for name in ["string", "ws"]:
        row(f"DEEP {name} (B = all 12)", best_of(r, lambda n=name: deep_sets(dfas[n], sp_all, trie)))

    for name, pattern in [("string maxLength 40", r'"(?:[^"\\]|\\.){0,40}"'), ("free text .{0,40}", r".{0,40}")]:
        d = regexpr_to_dfa(ir.Pattern(pattern))
        sets = inside_sets(d, trie)
        row(f"INSIDE {name}", best_of(max(2, r // 3), lambda d=d: inside_sets(d, trie)), f"{d.n_states} states, {sum(s.is_dense for s in sets)} dense sets")

    t_json = best_of(r, lambda: json_tables(dfas, trie, FOLLOW))
    tables = json_tables(dfas, trie, FOLLOW)
    sets = [s for v in tables["inside"].values() for s in v] + [s for v in tables["cross"].values() for s in v]
    sets += [s for v in tables["deep"].values() for s in v]
    dense = sum(s.is_dense for s in sets)
    row(
        "JSON grammar: all tables (cold)",
        t_json,
        f"12 terminals, {n_pairs} CROSS pairs; {len(sets)} sets, {dense} dense",
    )
    row("JSON grammar: all tables + trie build", t_json + t_trie, "first grammar for a new vocabulary")
    row("JSON, every pair (144 CROSS)", best_of(r, lambda: json_tables(dfas, trie, all_pairs)))

    cache = TableCache()
    def cached_run(c: TableCache) -> None:
        for a, bs in FOLLOW.items():
            c.inside(dfas[a], vocab)
            c.deep(dfas[a], [dfas[b] for b in bs], vocab)
            for b in bs:
                c.cross(dfas[a], dfas[b], vocab)
    cached_run(cache)
    row("JSON via TableCache, memory hit", best_of(r, lambda: cached_run(cache), cold=False))
    with tempfile.TemporaryDirectory() as tmp:
        cached_run(TableCache(tmp))
        row("JSON via TableCache, disk hit", best_of(r, lambda: cached_run(TableCache(tmp)), cold=False))

    width = max(len(n) for n, _, _ in rows)
    print(f"Llama-3 ({vocab.size} tokens), best of {r}; {platform.processor() or platform.machine()}")
    print(f"{'what'.ljust(width)}  {'ms':>9}  note")
    for name, sec, note in rows:
        print(f"{name.ljust(width)}  {sec * 1e3:9.2f}  {note}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "vocabulary": "llama3",
        "vocab_size": vocab.size,
        "repeat": r,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "reference_seconds": {"kbnf_crate": 0.39, "xgrammar": 0.095},
        "results": [{"name": n, "seconds": s, "note": note} for n, s, note in rows],
    }
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
