"""Mutation fuzz of the corpus JSON Schemas (issue #13): every mutant compiles or raises a ``KbnfGpuError``.

A mutant is a corpus schema (``tests/data/corpus/cases.jsonl``, ``json_schema`` cases) after 1-4 random
mutations at random places: type confusion (a keyword's value replaced by a value of another JSON type),
extreme numbers (huge, negative, ``inf``/``nan``, tiny fractions), deleted and duplicated keys, new keywords
with wrong or extreme values, lone surrogates and NUL in names and strings. Each mutant goes through the
front end and ``normalize`` (what compiling costs with lazy token tables) under ``CompileConfig`` with a
wall-clock budget, in a worker process with a hard timeout; anything else than success or a library error
(a raw Python exception, a crash, a timeout) is a finding. Even seeds compile with ``strict=True``, odd ones
with ``strict=False``.

    python benchmarks/fuzz_schemas.py --n 100000 --timeout 10 --workers 2

prints a summary table and writes ``benchmarks/out/fuzz_schemas.json`` (counts per outcome, and every
finding with the seed that reproduces it: ``--replay SEED``). ``tests/test_json_schema_fuzz.py`` runs the
same mutator on a bounded number of examples in CI.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import multiprocessing as mp
import random
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "corpus" / "cases.jsonl"

KEYWORDS = (
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "pattern", "format", "items", "prefixItems", "additionalItems", "minItems",
    "maxItems", "uniqueItems", "properties", "patternProperties", "additionalProperties", "propertyNames",
    "required", "minProperties", "maxProperties", "anyOf", "oneOf", "allOf", "not", "if", "then", "else",
    "$ref", "$defs", "definitions", "$id", "$anchor", "$schema", "dependentRequired", "dependentSchemas",
    "contains", "minContains", "unevaluatedProperties", "description",
)
TYPES = ("string", "integer", "number", "object", "array", "boolean", "null")
FORMATS = ("date-time", "date", "time", "email", "uri", "uuid", "ipv4", "hostname", "int32", "int64", "byte",
           "regex", "duration", "unknown-format")
STRINGS = ("", "a", "\x00", "\ud800", "a\udfff", "é😀", "^[a-z]+$", "(?=a)b", "[", "#", "#/$defs/x",
           "http://example.com/s.json", "~1", "a" * 300)


def schema_cases() -> list[Any]:
    """The corpus schemas, parsed."""
    out = []
    for line in CORPUS.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            record = json.loads(line)
            if record["format"] == "json_schema":
                out.append(json.loads(record["grammar"]))
    return out


def random_value(rnd: random.Random, depth: int = 0) -> Any:
    """A JSON-ish value of a random type, often extreme."""
    kind = rnd.randrange(12 if depth < 2 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rnd.choice((True, False))
    if kind == 2:
        return rnd.choice((0, 1, -1, 2, 7, 10**9, 10**18, -(10**30), 10**30, 2**63, 10**400))
    if kind == 3:
        return rnd.choice((0.5, -0.0, 1e-300, 1e308, 1e30, 1e9, math.inf, -math.inf, math.nan, 3.0, 0.1))
    if kind == 4:
        return rnd.choice(STRINGS)
    if kind == 5:
        return rnd.choice(TYPES)
    if kind == 6:
        return rnd.choice(FORMATS)
    if kind == 7:
        return rnd.choice(({}, [], {"type": {}}, {"$ref": "#"}, True, False))
    if kind == 8:
        return [random_value(rnd, depth + 1) for _ in range(rnd.randrange(4))]
    if kind == 9:
        return {rnd.choice(KEYWORDS): random_value(rnd, depth + 1) for _ in range(rnd.randrange(1, 4))}
    if kind == 10:
        return [rnd.choice(TYPES) for _ in range(rnd.randrange(1, 4))]
    return {rnd.choice(STRINGS + ("a", "b")): random_value(rnd, depth + 1) for _ in range(rnd.randrange(1, 3))}


def _containers(node: Any) -> list[Any]:
    """Every dict and list of ``node`` (iteratively)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            out.append(n)
            stack.extend(n.values())
        elif isinstance(n, list):
            out.append(n)
            stack.extend(n)
    return out


def mutate(schema: Any, rnd: random.Random) -> Any:
    """``schema`` after 1-4 random mutations (the input is not changed)."""
    s = copy.deepcopy(schema)
    if not isinstance(s, dict):
        s = {"anyOf": [s]}
    for _ in range(rnd.randrange(1, 5)):
        target = rnd.choice(_containers(s))
        op = rnd.randrange(6)
        if isinstance(target, list):
            if target and op < 2:
                del target[rnd.randrange(len(target))]
            elif target and op < 4:
                target.append(copy.deepcopy(rnd.choice(target)))
            elif target:
                target[rnd.randrange(len(target))] = random_value(rnd)
            else:
                target.append(random_value(rnd))
            continue
        keys = list(target)
        if keys and op == 0:
            del target[rnd.choice(keys)]
        elif keys and op == 1:  # duplicate a member under another (often meaningful) name
            target[rnd.choice(KEYWORDS + STRINGS)] = copy.deepcopy(target[rnd.choice(keys)])
        elif keys and op in (2, 3):  # type confusion / extreme value in place
            target[rnd.choice(keys)] = random_value(rnd)
        else:
            target[rnd.choice(KEYWORDS)] = random_value(rnd)
    return s


def mutant(seed: int, cases: list[Any]) -> Any:
    rnd = random.Random(seed)
    return mutate(rnd.choice(cases), rnd)


def compile_ir(schema: Any, time_budget_s: float, strict: bool = True) -> str:
    """Front end + normalize under a budget: ``"ok"`` or the library error's class name (others propagate)."""
    from kbnf_gpu.budget import compile_budget
    from kbnf_gpu.config import CompileConfig
    from kbnf_gpu.errors import KbnfGpuError
    from kbnf_gpu.frontends import parse_grammar
    from kbnf_gpu.normalize import normalize

    config = CompileConfig(time_budget_s=time_budget_s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with compile_budget(config):
                normalize(parse_grammar(schema, "json_schema", strict=strict), config.normalize_config("json_schema"))
        except KbnfGpuError as e:
            return type(e).__name__
    return "ok"


def _worker(jobs: "mp.Queue", results: "mp.Queue", budget: float) -> None:
    sys.path.insert(0, str(ROOT))
    cases = schema_cases()
    while True:
        seed = jobs.get()
        if seed is None:
            return
        results.put(("start", seed, ""))
        try:
            outcome = compile_ir(mutant(seed, cases), budget, strict=seed % 2 == 0)
            results.put(("done", seed, outcome))
        except BaseException as e:  # noqa: BLE001 - a finding, reported with its seed
            results.put(("done", seed, f"RAW {type(e).__name__}: {str(e)[:200]}"))


def run(n: int, first_seed: int, workers: int, timeout: float, budget: float) -> dict:
    """Run ``n`` mutants (seeds ``first_seed``...) in ``workers`` processes; a worker stuck past ``timeout``
    seconds on one mutant is killed, the mutant recorded as a hang, and a new worker started."""
    ctx = mp.get_context("spawn")
    results: "mp.Queue" = ctx.Queue()
    counts: Counter = Counter()
    findings: list[dict] = []
    seeds = iter(range(first_seed, first_seed + n))
    pool: dict[int, dict] = {}

    def start() -> None:
        jobs = ctx.Queue()
        p = ctx.Process(target=_worker, args=(jobs, results, budget), daemon=True)
        p.start()
        pool[p.pid] = {"proc": p, "jobs": jobs, "seed": None, "since": None}

    def feed(w: dict) -> bool:
        seed = next(seeds, None)
        w["seed"], w["since"] = seed, None
        w["jobs"].put(seed)
        return seed is not None

    for _ in range(workers):
        start()
    active = {pid: feed(w) for pid, w in pool.items()}
    started = time.monotonic()
    done = 0
    while any(active.values()):
        try:
            kind, seed, outcome = results.get(timeout=0.5)
        except Exception:  # queue.Empty
            kind = None
        if kind is not None:
            w = next((w for w in pool.values() if w["seed"] == seed), None)
            if w is None:
                continue
            if kind == "start":
                w["since"] = time.monotonic()
                continue
            done += 1
            counts["raw" if outcome.startswith("RAW") else outcome] += 1
            if outcome.startswith("RAW"):
                findings.append({"seed": seed, "outcome": outcome})
                print(f"  finding: seed {seed}: {outcome}", flush=True)
            pid = w["proc"].pid
            active[pid] = feed(w)
            if done % 1000 == 0:
                print(f"{done:,} mutants, {time.monotonic() - started:.0f} s, findings {len(findings)}", flush=True)
        now = time.monotonic()
        for pid, w in list(pool.items()):
            dead = not w["proc"].is_alive() and active.get(pid)
            stuck = w["since"] is not None and now - w["since"] > timeout
            if stuck or dead:
                w["proc"].kill()
                w["proc"].join()
                done += 1
                kind = "timeout" if stuck else "crash"
                counts[kind] += 1
                findings.append({"seed": w["seed"], "outcome": kind})
                print(f"  finding: seed {w['seed']}: {kind}", flush=True)
                del pool[pid], active[pid]
                start()
                new = max(pool)
                active[new] = feed(pool[new])
    for w in pool.values():
        w["proc"].kill()
    return {"n": n, "first_seed": first_seed, "timeout_s": timeout, "time_budget_s": budget,
            "seconds": round(time.monotonic() - started, 1), "counts": dict(counts), "findings": findings}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=10.0, help="hard per-mutant timeout (s)")
    ap.add_argument("--budget", type=float, default=5.0, help="CompileConfig.time_budget_s per mutant")
    ap.add_argument("--replay", type=int, help="print and compile one mutant in this process")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "fuzz_schemas.json"))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.replay is not None:
        schema = mutant(args.replay, schema_cases())
        print(json.dumps(schema, default=str)[:2000])
        print(compile_ir(schema, args.budget, strict=args.replay % 2 == 0))
        return
    report = run(args.n, args.seed, args.workers, args.timeout, args.budget)
    print(f"{'outcome':<28}{'count':>10}")
    for k, v in sorted(report["counts"].items(), key=lambda kv: -kv[1]):
        print(f"{k:<28}{v:>10,}")
    print(f"findings (raw exceptions, crashes, timeouts): {len(report['findings'])} in {report['seconds']} s")
    for f in report["findings"][:20]:
        print(f"  seed {f['seed']}: {f['outcome']}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
