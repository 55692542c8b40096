"""Compile time, peak memory and artifact size: kbnf_gpu beside kbnf and xgrammar, same run.

Grammars (Llama-3 vocabulary): a JSON grammar, and a 12-property
JSON-Schema-equivalent grammar (written by hand so every engine gets the same
language). Tokenizer conversion is excluded for all engines: each engine's
vocabulary object (ours: ``Vocabulary`` + token trie + per-id bytes; kbnf: ``kbnf.Vocabulary``;
xgrammar: ``TokenizerInfo``) is built before timing starts.

Each (engine, grammar) runs in a fresh subprocess so peak RSS is its own.
Cold = first compile in the process; warm = the median of later compiles (for
kbnf_gpu the terminal-table cache is then warm; xgrammar's cache is disabled).

    python benchmarks/bench_compile.py [--repeats 5] [--out benchmarks/out/bench_compile.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from kbnf_gpu.grammars import JSON_KBNF


JSON_GBNF = r"""
root ::= ws value ws
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws "}" | "{" ws member ws ("," ws member ws)* "}"
member ::= string ws ":" ws value
array ::= "[" ws "]" | "[" ws value ws ("," ws value ws)* "]"
string ::= "\"" ([^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]))* "\""
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
ws ::= [ \t\n\r]*
"""

PROPS = [("id", "integer"), ("name", "string"), ("email", "string"), ("age", "integer"), ("active", "boolean"),
         ("score", "number"), ("tags", "array"), ("city", "string"), ("country", "string"), ("zip", "string"),
         ("created", "string"), ("rank", "integer")]


def schema_kbnf() -> str:
    kinds = {"integer": "integer", "string": "string", "boolean": "boolean", "number": "number",
             "array": "strarray"}
    members = ' ws "," ws '.join(f'"\\"{name}\\"" ws ":" ws {kinds[kind]}' for name, kind in PROPS)
    return rf"""
start ::= "{{" ws {members} ws "}}";
string ::= "\"" #"([^\"\\\\\u0000-\u001f]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{{4}})*" "\"";
integer ::= #"-?(0|[1-9][0-9]*)";
number ::= #"-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?";
boolean ::= "true" | "false";
strarray ::= "[" ws "]" | "[" ws string ws ("," ws string ws)* "]";
ws ::= #"[ \t\n\r]*";
"""


def schema_gbnf() -> str:
    kinds = {"integer": "integer", "string": "string", "boolean": "boolean", "number": "number",
             "array": "strarray"}
    members = ' ws "," ws '.join(f'"\\"{name}\\"" ws ":" ws {kinds[kind]}' for name, kind in PROPS)
    return rf"""
root ::= "{{" ws {members} ws "}}"
string ::= "\"" ([^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]))* "\""
integer ::= "-"? ("0" | [1-9] [0-9]*)
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
boolean ::= "true" | "false"
strarray ::= "[" ws "]" | "[" ws string ws ("," ws string ws)* "]"
ws ::= [ \t\n\r]*
"""


GRAMMARS = {"json": (JSON_KBNF, JSON_GBNF), "schema12": (schema_kbnf(), schema_gbnf())}


MEMORY_LIMIT_GB = 8


def _limit_memory() -> None:
    limit = MEMORY_LIMIT_GB * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(engine: str, grammar: str, repeats: int) -> dict:
    kbnf_text, gbnf_text = GRAMMARS[grammar]
    if engine == "kbnf_gpu":
        import kbnf_gpu.frontends.kbnf  # noqa: F401  (imports happen before timing, as for the peers)
        from kbnf_gpu import Vocabulary, compile_grammar, prepare_vocabulary
        from kbnf_gpu.compile.artifact import load_compiled

        # vocabulary preprocessing (the token trie, per-id bytes, byte order), like the peers' tokenizer objects
        vocab = prepare_vocabulary(Vocabulary.from_name("llama3"))

        def compile_once():
            return compile_grammar(kbnf_text, vocab, syntax="kbnf", end_mode="eos")
    elif engine == "kbnf":
        import kbnf

        from kbnf_gpu import Vocabulary

        ours = Vocabulary.from_name("llama3")
        ids = ours.normal_ids.tolist()
        kv = kbnf.Vocabulary({i: kbnf.Token(ours.token_bytes(i)) for i in ids},
                             {i: ours.token_bytes(i).decode("utf-8", "replace") for i in ids})

        def compile_once():
            config = kbnf.Config()
            config.engine_config.rejected_token_prefix_cache_enabled = False
            return kbnf.Engine(kbnf_text, kv, config)
    elif engine == "xgrammar":
        import xgrammar as xgr
        from common import llama3_hf

        info = xgr.TokenizerInfo.from_huggingface(llama3_hf(), vocab_size=128256)
        compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)

        def compile_once():
            return compiler.compile_grammar(gbnf_text)
    else:
        raise ValueError(engine)
    base = rss_mb()
    t0 = time.perf_counter()
    result = compile_once()
    cold = time.perf_counter() - t0
    peak = peak_mb() - base
    warm = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        compile_once()
        warm.append(time.perf_counter() - t0)
    out = {"engine": engine, "grammar": grammar, "cold_s": cold, "warm_s": statistics.median(warm),
           "peak_rss_delta_mb": max(peak, 0.0)}
    if engine == "kbnf_gpu":
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "g.kbnfgpu"
            out["artifact_bytes"] = result.save(path)
            loads = []
            for _ in range(max(repeats, 3)):
                t0 = time.perf_counter()
                load_compiled(path, vocab)
                loads.append(time.perf_counter() - t0)
            out["load_s"] = statistics.median(loads)
        out.update(result.summary())
        # a different grammar compiled after this one: its terminal tables come from the cache
        other = GRAMMARS["schema12" if grammar == "json" else "json"][0]
        t0 = time.perf_counter()
        compile_grammar(other, vocab, syntax="kbnf", end_mode="eos")
        out["other_grammar_after_s"] = time.perf_counter() - t0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--engines", default="kbnf_gpu,kbnf,xgrammar")
    parser.add_argument("--out", default="benchmarks/out/bench_compile.json")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--worker", nargs=2, metavar=("ENGINE", "GRAMMAR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.repeats)))
        return
    rows = []
    failures: list[dict] = []
    for grammar in GRAMMARS:
        for engine in args.engines.split(","):
            try:
                proc = subprocess.run([sys.executable, __file__, "--worker", engine, grammar, "--repeats",
                                       str(args.repeats)], capture_output=True, text=True, timeout=args.timeout,
                                      preexec_fn=_limit_memory)
            except subprocess.TimeoutExpired:
                failures.append({"engine": engine, "grammar": grammar, "error": f"timeout after {args.timeout} s"})
                continue
            if proc.returncode != 0:
                why = proc.stderr.strip().splitlines()[-1:] or [f"killed (exit {proc.returncode})"]
                failures.append({"engine": engine, "grammar": grammar,
                                 "error": f"exit {proc.returncode}: {why[0][:200]} (memory limit {MEMORY_LIMIT_GB} GiB)"})
                continue
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"{'grammar':<10} {'engine':<10} {'cold ms':>9} {'warm ms':>9} {'peak MB':>8} {'vs kbnf':>8} "
          f"{'vs xgr':>7}")
    for grammar in GRAMMARS:
        by = {r["engine"]: r for r in rows if r["grammar"] == grammar}
        for engine, r in by.items():
            ratio_k = r["cold_s"] / by["kbnf"]["cold_s"] if "kbnf" in by else float("nan")
            ratio_x = r["cold_s"] / by["xgrammar"]["cold_s"] if "xgrammar" in by else float("nan")
            print(f"{grammar:<10} {engine:<10} {1e3 * r['cold_s']:>9.1f} {1e3 * r['warm_s']:>9.1f} "
                  f"{r['peak_rss_delta_mb']:>8.1f} {ratio_k:>8.2f} {ratio_x:>7.2f}")
        if "kbnf_gpu" in by:
            r = by["kbnf_gpu"]
            print(f"{'':<10} kbnf_gpu artifact {r['artifact_bytes'] / 1024:.0f} KiB, load {1e3 * r['load_s']:.1f} ms, "
                  f"another grammar after it {1e3 * r['other_grammar_after_s']:.1f} ms")
    for f in failures:
        print(f"{f['grammar']:<10} {f['engine']:<10} FAILED: {f['error']}")
    meta = {"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "command": " ".join(sys.argv)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "rows": rows, "failures": failures}, indent=1))


if __name__ == "__main__":
    main()
