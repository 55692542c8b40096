"""JSON Schema: compile time and per-token cost, kbnf_gpu beside xgrammar and llguidance, same run.

Five schemas (``SCHEMAS``: a small object, a 12-property object, a nested
array of objects, an array of a 1,000-value enum, a recursive tree), each with
a valid instance. Every engine gets the same schema in the same compact layout
(ours ``whitespace="compact"``; xgrammar ``any_whitespace=False,
separators=(",", ":")``; llguidance ``whitespace_flexible=False``) and the same
Llama-3 vocabulary (128,256 ids). Tokenizer conversion is excluded for all
engines: ours builds ``Vocabulary`` plus its token trie and per-id bytes,
xgrammar its ``TokenizerInfo``, llguidance its ``LLTokenizer``, before timing.

Each (engine, schema) runs in a fresh subprocess, which measures (medians of
``--repeats`` runs; the very first compilation in the process is kept too,
``compile_first_s``):

* ``cold``: caches cleared, then compile (ours: the process-wide token-table
  cache ``kbnf_gpu.compile.grammar_tables._DEFAULT_CACHES`` is cleared before
  each run; xgrammar: ``cache_enabled=False``; llguidance: no cache to clear);
* ``warm``: caches cleared, another schema (``WARMUP``, different from all
  five) compiled, then the schema: ours reuses the table cache for shared
  terminals (strings, numbers, punctuation); the peers only get a warm process;
* ``e2e``: a cold compile, a matcher, its first mask and the first pass over
  the instance: serving the first request of a schema never seen.

``compile`` = the engine's compile call (ours ``compile_grammar``; xgrammar
``compile_json_schema``; llguidance ``grammar_from_json_schema`` +
``LLMatcher(...)``: llguidance and xgrammar defer work to the first masks,
which ``e2e`` counts).

Before timing, every worker imports what it needs (torch, and ``numpy.ma``,
which numpy loads lazily on the first ``np.unique``: 0.1 s with torch loaded)
and builds its tokenizer object; each timed block starts with
``gc.collect()`` and ``gc.freeze()``: torch, transformers and the tokenizers
leave ~170,000 objects in the process, and a full collection over them
(0.1-0.2 s on the reference machine) otherwise lands in whichever phase
happens to trigger it (ours allocate Python objects, the peers are native).
``--no-gc-freeze`` measures without the freeze.

Per token, along the instance (tokenized greedily through our mask; the same
ids for every engine), accept the token and compute the next mask: ours
``accept_token`` + ``mask_parts`` (row ids + extra ids, what the GPU kernel
consumes) and, for parity with the peers' CPU bitmasks, ``accept_token`` +
``fill_bitmask``; xgrammar ``accept_token`` + ``fill_next_token_bitmask``;
llguidance ``consume_token`` + ``llguidance.torch.fill_next_token_bitmask``.
``first`` = the first pass right after a cold compile (per-state caches
cold); ``again`` = the median of 3 later passes (caches warm, as in a server
that has seen the schema): ours and xgrammar with fresh matchers of the same
compiled grammar, llguidance with its matcher ``reset()`` (its caches live in
the matcher).

    python benchmarks/bench_schema.py [--out benchmarks/out/bench_schema.json] [--engines kbnf_gpu,xgrammar,llguidance]
"""
from __future__ import annotations

import argparse
import datetime as dt
import gc
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import greedy_tokens, llama3_hf  # noqa: E402

ENGINES = ("kbnf_gpu", "xgrammar", "llguidance")
V = 128_256

PROPS12 = [("id", {"type": "integer"}), ("name", {"type": "string"}), ("email", {"type": "string", "format": "email"}),
           ("age", {"type": "integer", "minimum": 0, "maximum": 150}), ("active", {"type": "boolean"}),
           ("score", {"type": "number"}), ("tags", {"type": "array", "items": {"type": "string"}}),
           ("city", {"type": "string"}), ("country", {"type": "string", "enum": ["FR", "DE", "GB", "US", "JP"]}),
           ("zip", {"type": "string", "maxLength": 10}), ("created", {"type": "string", "format": "date"}),
           ("rank", {"type": ["integer", "null"]})]


def _obj(props: dict, required: list | None = None) -> dict:
    return {"type": "object", "properties": props, "required": list(props) if required is None else required,
            "additionalProperties": False}


SCHEMAS: dict[str, tuple[dict, Any]] = {
    "small-object": (
        _obj({"name": {"type": "string"}, "age": {"type": "integer"}}),
        {"name": "Ada Lovelace", "age": 36},
    ),
    "object-12": (
        _obj(dict(PROPS12)),
        {"id": 12345, "name": "Ada Lovelace", "email": "ada@example.com", "age": 36, "active": True,
         "score": 97.25, "tags": ["math", "poetry", "engines"], "city": "London", "country": "GB",
         "zip": "SW1A 1AA", "created": "1843-07-10", "rank": None},
    ),
    "nested-array-objects": (
        {"type": "array", "items": _obj({"id": {"type": "integer"}, "label": {"type": "string"},
                                         "values": {"type": "array", "items": {"type": "number"}},
                                         "meta": _obj({"ok": {"type": "boolean"}, "note": {"type": ["string", "null"]}})},
                                        ["id", "label"])},
        [{"id": i, "label": f"item {i}", "values": [i * 1.5, -i, 0.25],
          "meta": {"ok": i % 2 == 0, "note": None if i % 3 else f"n{i}"}} for i in range(8)],
    ),
    "enum-large": (
        {"type": "array", "items": {"enum": ["value_%d" % i for i in range(1000)]}},
        ["value_%d" % (i * 37 % 1000) for i in range(25)],
    ),
    "recursive-tree": (
        {"$defs": {"node": _obj({"value": {"type": "integer"},
                                 "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, ["value"])},
         "$ref": "#/$defs/node"},
        {"value": 1, "children": [{"value": 2, "children": [{"value": 4}, {"value": 5, "children": []}]},
                                  {"value": 3, "children": [{"value": 6, "children": [{"value": 7}]}]}]},
    ),
}
# compiled first in "warm" runs: a different schema sharing the usual terminals
WARMUP = _obj({"title": {"type": "string"}, "count": {"type": "integer"}, "ratio": {"type": "number"},
               "flag": {"type": "boolean"}, "items": {"type": "array", "items": {"type": "string"}}})


def instance_text(name: str) -> bytes:
    return json.dumps(SCHEMAS[name][1], separators=(",", ":"), ensure_ascii=False).encode()


# ------------------------------------------------------------------ workers


def _settle(freeze: bool) -> None:
    """Right before timing: collect, and (by default) freeze the setup's objects out of the cyclic GC."""
    gc.collect()
    if freeze:
        gc.freeze()


class Ours:
    def __init__(self) -> None:
        from kbnf_gpu import Matcher, Vocabulary, compile_grammar
        from kbnf_gpu.compile import grammar_tables
        from kbnf_gpu.compile.compiled import steppable_token_bytes
        from kbnf_gpu.compile.tables import as_trie

        importlib.import_module("kbnf_gpu.frontends.json_schema")
        self.vocab = Vocabulary.from_name("llama3")
        as_trie(self.vocab)  # vocabulary preprocessing = the peers' tokenizer objects (excluded)
        steppable_token_bytes(self.vocab)
        self._compile, self._matcher, self._caches = compile_grammar, Matcher, grammar_tables._DEFAULT_CACHES

    def clear(self) -> None:
        self._caches.clear()

    def compile(self, schema):
        return self._compile(schema, self.vocab, syntax="json_schema", whitespace="compact")

    def matcher(self, compiled):
        return self._matcher(compiled)

    def mask(self, m) -> None:
        m.mask_parts()

    def accept(self, m, t: int) -> None:
        m.accept_token(t)


class OursBitmask(Ours):
    def __init__(self) -> None:
        import torch

        super().__init__()
        self.bitmask = torch.zeros((1, (V + 31) // 32), dtype=torch.int32)

    def mask(self, m) -> None:
        m.fill_bitmask(self.bitmask)


class Xgrammar:
    def __init__(self) -> None:
        import xgrammar as xgr

        from kbnf_gpu import Vocabulary

        self.xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(llama3_hf(), vocab_size=V,
                                                  stop_token_ids=list(Vocabulary.from_name("llama3").eos_ids))
        self.compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        self.bitmask = xgr.allocate_token_bitmask(1, V)

    def clear(self) -> None:
        pass  # cache_enabled=False

    def compile(self, schema):
        return self.compiler.compile_json_schema(schema, any_whitespace=False, separators=(",", ":"),
                                                 strict_mode=True)

    def matcher(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def mask(self, m) -> None:
        m.fill_next_token_bitmask(self.bitmask)

    def accept(self, m, t: int) -> None:
        assert m.accept_token(t)


class Llguidance:
    def __init__(self) -> None:
        import llguidance
        import llguidance.hf
        import llguidance.torch

        from kbnf_gpu import Vocabulary

        self.llg = llguidance
        self.tok = llguidance.hf.from_tokenizer(llama3_hf(), n_vocab=V, eos_token=list(Vocabulary.from_name("llama3").eos_ids))
        self.bitmask = llguidance.torch.allocate_token_bitmask(1, V)

    def clear(self) -> None:
        pass

    def compile(self, schema):
        grammar = self.llg.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
        m = self.llg.LLMatcher(self.tok, grammar, log_level=0)
        assert not m.is_error(), m.get_error()
        return m

    def matcher(self, compiled):
        compiled.reset()  # the matcher is the compiled grammar; its caches live in it
        return compiled

    def mask(self, m) -> None:
        self.llg.torch.fill_next_token_bitmask(m, self.bitmask, 0)

    def accept(self, m, t: int) -> None:
        assert m.consume_token(t), m.get_error()


ADAPTERS = {"kbnf_gpu": Ours, "xgrammar": Xgrammar, "llguidance": Llguidance}


def _pass(a, m, tokens: list[int]) -> float:
    """Accept each token and compute the next mask; seconds in all."""
    t0 = time.perf_counter()
    for t in tokens:
        a.accept(m, t)
        a.mask(m)
    return time.perf_counter() - t0


def worker(engine: str, name: str, tokens: list[int], freeze: bool = True, repeats: int = 5) -> dict:
    """Every measurement of one (engine, schema); run in a fresh process."""
    import numpy.ma  # noqa: F401  (see the module docstring)
    import torch  # noqa: F401

    schema = SCHEMAS[name][0]
    a = ADAPTERS[engine]()
    n = len(tokens)
    cold, warm, ttfm, first, e2e = [], [], [], [], []
    for _ in range(repeats):
        a.clear()
        _settle(freeze)
        t0 = time.perf_counter()
        compiled = a.compile(schema)
        t1 = time.perf_counter()
        m = a.matcher(compiled)
        a.mask(m)
        t2 = time.perf_counter()
        first.append(_pass(a, m, tokens) / n * 1e6)
        e2e.append(time.perf_counter() - t0)
        cold.append(t1 - t0)
        ttfm.append(t2 - t0)
    for _ in range(repeats):
        a.clear()
        a.compile(WARMUP)
        _settle(freeze)
        t0 = time.perf_counter()
        a.compile(schema)
        warm.append(time.perf_counter() - t0)
    again = []
    for _ in range(3):
        m = a.matcher(compiled)
        a.mask(m)
        again.append(_pass(a, m, tokens) / n * 1e6)
    med = statistics.median
    out: dict[str, Any] = {
        "engine": engine, "schema": name, "tokens": n, "repeats": repeats, "gc_freeze": freeze,
        "compile_first_s": cold[0], "compile_s": med(cold), "warm_s": med(warm), "ttfm_s": med(ttfm),
        "e2e_s": med(e2e), "first_us": med(first), "again_us": med(again),
    }
    if engine == "kbnf_gpu":
        b = OursBitmask()
        b.clear()
        c = b.compile(schema)
        b.mask(b.matcher(c))
        _pass(b, b.matcher(c), tokens)
        out["bitmask_again_us"] = med(_pass(b, b.matcher(c), tokens) / n * 1e6 for _ in range(3))
        out["summary"] = {k: v for k, v in compiled.summary().items() if isinstance(v, (int, float, str))}
    gc.unfreeze()  # let the interpreter's shutdown collect normally
    return out


# --------------------------------------------------------------------- main


def machine() -> dict:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": cpu, "cpus": os.cpu_count(), "python": platform.python_version()}


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("kbnf-gpu", "xgrammar", "llguidance", "numpy", "torch"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def token_paths() -> dict[str, list[int]]:
    from kbnf_gpu import Vocabulary, compile_grammar

    vocab = Vocabulary.from_name("llama3")
    return {name: greedy_tokens(vocab, compile_grammar(schema, vocab, syntax="json_schema", whitespace="compact"),
                          instance_text(name))
            for name, (schema, _) in SCHEMAS.items()}


def run_worker(engine: str, name: str, tokens: list[int], freeze: bool, repeats: int) -> dict:
    payload = json.dumps({"engine": engine, "schema": name, "tokens": tokens, "freeze": freeze, "repeats": repeats})
    proc = subprocess.run([sys.executable, __file__, "--worker"], input=payload, capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        return {"engine": engine, "schema": name, "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt(x: float | None, scale: float = 1.0) -> str:
    return "-" if x is None else f"{x * scale:.1f}"


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.3g}" if a and b else "-"


def print_table(rows: list[dict], engines: list[str]) -> None:
    by = {(r["engine"], r["schema"]): r for r in rows}
    peers = [e for e in engines if e != "kbnf_gpu"]
    ours_in = "kbnf_gpu" in engines
    short = {"kbnf_gpu": "ours", "xgrammar": "xgr", "llguidance": "llg"}

    def get(e: str, name: str, key: str) -> float | None:
        return by.get((e, name), {}).get(key)

    print("\ncompile, ms (medians; cold: caches cleared; warm: after another schema; e2e: cold compile + matcher"
          " + first mask + first pass over the instance); ratios = ours / peer, < 1: ours faster")
    head = f"{'schema':<22}"
    for e in engines:
        head += f"{short[e] + ' cold':>10}{'warm':>8}{'e2e':>8}"
    if ours_in:
        for e in peers:
            head += f"{'cold/' + short[e]:>10}{'e2e/' + short[e]:>9}"
    print(head)
    for name in SCHEMAS:
        line = f"{name:<22}"
        for e in engines:
            line += (f"{fmt(get(e, name, 'compile_s'), 1e3):>10}{fmt(get(e, name, 'warm_s'), 1e3):>8}"
                     f"{fmt(get(e, name, 'e2e_s'), 1e3):>8}")
        if ours_in:
            for e in peers:
                line += (f"{ratio(get('kbnf_gpu', name, 'compile_s'), get(e, name, 'compile_s')):>10}"
                         f"{ratio(get('kbnf_gpu', name, 'e2e_s'), get(e, name, 'e2e_s')):>9}")
        print(line)
    print("\nper token, us: accept + next mask (first: first pass after a cold compile; again: caches warm;"
          " ours: row ids for the GPU kernel, and a CPU bitmask like the peers); ratios = ours bitmask / peer again")
    head = f"{'schema':<22}{'tokens':>7}"
    for e in engines:
        head += f"{short[e] + ' first':>11}{'again':>7}" + (f"{'bitmask':>8}" if e == "kbnf_gpu" else "")
    if ours_in:
        head += "".join(f"{'vs ' + short[e]:>8}" for e in peers)
    print(head)
    for name in SCHEMAS:
        line = f"{name:<22}{get(engines[0], name, 'tokens') or 0:>7}"
        for e in engines:
            line += f"{fmt(get(e, name, 'first_us')):>11}{fmt(get(e, name, 'again_us')):>7}"
            if e == "kbnf_gpu":
                line += f"{fmt(get(e, name, 'bitmask_again_us')):>8}"
        if ours_in:
            for e in peers:
                line += f"{ratio(get('kbnf_gpu', name, 'bitmask_again_us'), get(e, name, 'again_us')):>8}"
        print(line)
    for r in rows:
        if "error" in r:
            print("error:", r["engine"], r["schema"], r["error"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--repeats", type=int, default=5, help="runs per measurement (medians)")
    parser.add_argument("--no-gc-freeze", action="store_true",
                        help="leave the setup's objects (torch, tokenizers) in the cyclic GC while timing")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "out" / "bench_schema.json"))
    args = parser.parse_args()
    if args.worker:
        job = json.loads(sys.stdin.read())
        print(json.dumps(worker(job["engine"], job["schema"], job["tokens"], job.get("freeze", True),
                                job.get("repeats", 5))))
        return
    engines = [e for e in args.engines.split(",") if e]
    started = time.perf_counter()
    load_before = os.getloadavg()
    paths = token_paths()
    rows = []
    for name in SCHEMAS:
        for engine in engines:
            r = run_worker(engine, name, paths[name], not args.no_gc_freeze, args.repeats)
            rows.append(r)
            print(f"  {engine:<11} {name:<22} "
                  + (f"cold {r['compile_s'] * 1e3:7.1f} ms  warm {r['warm_s'] * 1e3:7.1f} ms  "
                     f"first {r['first_us']:8.1f} us  again {r['again_us']:7.1f} us" if "error" not in r
                     else f"error {r['error']}"), flush=True)
    print_table(rows, engines)
    print(f"load average (1 min) before/after: {load_before[0]:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
    result = {
        "meta": {
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(),
            "versions": versions(),
            "command": " ".join(["python"] + sys.argv),
            "vocabulary": "llama3 (128,256 ids)",
            "layout": "compact",
            "repeats": args.repeats,
            "gc_freeze": not args.no_gc_freeze,
            "wall_s": round(time.perf_counter() - started, 1),
            # other processes on the machine (the 1-minute load average, before and after)
            "loadavg_1m": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        },
        "schemas": {name: {"schema": s, "instance_bytes": len(instance_text(name)), "tokens": len(paths[name])}
                    for name, (s, _) in SCHEMAS.items()},
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
