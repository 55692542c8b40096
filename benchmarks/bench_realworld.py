"""Real-world JSON Schemas: coverage, compile + first mask, per-token cost; ours beside xgrammar and llguidance.

Corpus: a directory of JSON Schemas (default: the Kubernetes resource schemas
shipped in ``kubernetes-validate``, ``v1.37.0-local-strict``: 863 schemas whose
``$ref``s point into ``_definitions.json`` beside them). Every ``*.json`` file
is a document of the registry (under its ``$id``, the path of its ``$id``
and its ``file://`` URI);
files whose name starts with ``_`` are only documents, the others are also
schemas to benchmark. Ours compiles each schema with that registry
(``compile_grammar(schema, vocab, "json_schema", registry=...)``); the peers
take one self-contained document, so they get the schema *bundled*: every
external ``$ref`` target copied into its ``$defs`` (``bundle``), what a user
of theirs would have to do. Every engine runs with its default options
(ours: flexible whitespace, at most 16 characters per gap; xgrammar:
``any_whitespace=True``, ``strict_mode=True``, no compile cache; llguidance:
its defaults) and the Llama-3 vocabulary (128,256 ids).

Each engine runs in its own worker process (tokenizer loaded once, caches
kept across schemas as a server keeps them); the schemas go one at a time,
every engine in turn, each with a timeout: a worker that overruns it is
killed and replaced. Per (engine, schema):

* coverage: ``compiled``, ``refused`` (an error from the engine; ours must be
  a ``KbnfGpuError``: anything else counts as ``crashed``), ``timeout``;
* ``ttfm``: compile + a matcher + its first mask (a bitmask
  ``int32[1, ceil(V/32)]`` for every engine), in ms, p50/p90/p99/max over the
  schemas it compiled, and per schema the ratio ours / peer (on the schemas
  both compiled);
* per token: accept the token, then compute the next bitmask, in µs (p50/p99
  over all tokens of all instances), along instances sampled from the schema:
  the largest of ``8n`` random texts of our grammar for the schema that stay
  under ``MAX_INSTANCE_TOKENS`` tokens (``sample_texts``, compact
  layout, strings without backslash escapes where a character can be written
  raw, as models mostly write them and as llguidance's defaults require; then
  re-spaced like ``json.dumps``: ``", "`` and ``": "``), each
  validated by ``jsonschema`` (Draft 2020-12, the same registry, format
  checking on) and tokenized by the Llama-3 tokenizer. Before each token the
  engine's current mask must allow it, and at the end it must allow EOS; a
  miss is recorded as an error of that engine (``token_rejected``).

``--stage frontend`` times only our front end + normalize (no tables, no
masks): coverage of the front end on the whole corpus in minutes.

    python benchmarks/bench_realworld.py [--corpus DIR] [--engines kbnf_gpu,xgrammar,llguidance]
        [--limit N] [--sample N] [--seed S] [--timeout 60] [--instances 2] [--stage compile|frontend]
        [--out benchmarks/out/bench_realworld.json]

Prints a table and writes JSON (every row, the summary, machine and versions).
"""
from __future__ import annotations

import argparse
import copy
import datetime as dt
import gc
import json
import multiprocessing as mp
import os
import platform
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional
from urllib.parse import unquote, urljoin, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import llama3_hf  # noqa: E402

ENGINES = ("kbnf_gpu", "xgrammar", "llguidance")
V = 128_256
MAX_INSTANCE_TOKENS = 600


# ------------------------------------------------------------------ corpus


def default_corpus() -> Path:
    import kubernetes_validate

    return Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.37.0-local-strict"


def load_corpus(directory: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(schemas by file name, registry URI -> document)``."""
    schemas: dict[str, Any] = {}
    registry: dict[str, Any] = {}
    for path in sorted(directory.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        registry[path.resolve().as_uri()] = doc
        if isinstance(doc, dict) and isinstance(doc.get("$id"), str):
            uri = doc["$id"].split("#")[0]
            registry.setdefault(uri, doc)
            # also by the path alone: a schema without a base URI (Kubernetes' all.json) refers to it so
            registry.setdefault(urlparse(uri).path, doc)
        if not path.name.startswith("_"):
            schemas[path.name] = doc
    return schemas, registry


def _pointer(doc: Any, pointer: str) -> Any:
    for raw in pointer.split("/")[1:]:
        tok = unquote(raw).replace("~1", "/").replace("~0", "~")
        doc = doc[int(tok)] if isinstance(doc, list) else doc[tok]
    return doc


def bundle(schema: Any, registry: dict[str, Any]) -> Any:
    """``schema`` with every ``$ref`` into another document copied into ``$defs`` (for one-document engines).

    Handles ``$ref``s whose fragment is empty or a JSON pointer, resolved
    against the root's ``$id`` and each copied document's own ``$id``; other
    refs are left as they are (the engine then refuses or resolves them).
    """
    if not isinstance(schema, dict):
        return schema
    root = copy.deepcopy(schema)
    root_uri = root.get("$id", "").split("#")[0] if isinstance(root.get("$id"), str) else ""
    defs = root.setdefault("$defs", {})
    names: dict[tuple[str, str], str] = {}
    work: list[tuple[Any, str]] = [(root, root_uri)]
    while work:
        node, base = work.pop()
        if isinstance(node, list):
            work.extend((x, base) for x in node)
            continue
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            uri, _, frag = (urljoin(base, ref) if base else ref).partition("#")
            if uri != root_uri and uri in registry and (frag == "" or frag.startswith("/")):
                key = (uri, frag)
                if key not in names:
                    names[key] = f"ext{len(names)}_" + re.sub(r"[^A-Za-z0-9_.-]", "_", frag.rsplit("/", 1)[-1])
                    target = copy.deepcopy(_pointer(registry[uri], frag))
                    if isinstance(target, dict):
                        target.pop("$id", None)
                        target.pop("$schema", None)
                    defs[names[key]] = target
                    work.append((target, uri))
                node["$ref"] = f"#/$defs/{names[key]}"
        elif isinstance(ref, str) and base != root_uri:
            # a local ref inside a copied document: local to that document
            key = (base, unquote(ref[1:]))
            if key not in names and (key[1] == "" or key[1].startswith("/")):
                names[key] = f"ext{len(names)}_" + re.sub(r"[^A-Za-z0-9_.-]", "_", key[1].rsplit("/", 1)[-1])
                target = copy.deepcopy(_pointer(registry[base], key[1]))
                if isinstance(target, dict):
                    target.pop("$id", None)
                defs[names[key]] = target
                work.append((target, base))
            if key in names:
                node["$ref"] = f"#/$defs/{names[key]}"
        for k, v in node.items():
            if k != "$ref":
                work.append((v, base))
    if not defs:
        del root["$defs"]
    return root


# --------------------------------------------------------------- instances


def respace(text: str) -> str:
    """A compact JSON text with ``json.dumps``' separators (``", "``, ``": "``); literals kept verbatim."""
    out = []
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[,:]|[^",:]+', text):
        tok = m.group(0)
        out.append(tok + " " if tok in (",", ":") else tok)
    return "".join(out)


_REGISTRIES: dict[int, Any] = {}


def make_validator(schema: Any, registry: dict[str, Any]):
    """A ``jsonschema`` validator for ``schema`` with the documents of ``registry`` (format checking on)."""
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    reg = _REGISTRIES.get(id(registry))
    if reg is None:
        reg = Registry().with_resources(
            (uri, Resource.from_contents(doc, default_specification=DRAFT202012)) for uri, doc in registry.items()
        )
        _REGISTRIES.clear()
        _REGISTRIES[id(registry)] = reg
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, registry=reg, format_checker=cls.FORMAT_CHECKER)


def instances(schema: Any, registry: dict[str, Any], n: int, seed: int) -> tuple[list[str], int]:
    """Up to ``n`` valid instances (texts) and the number of sampled texts ``jsonschema`` rejected."""
    import warnings

    from kbnf_gpu.frontends.json_schema import parse_json_schema
    from kbnf_gpu.frontends.json_schema.sample import sample_texts

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grammar = parse_json_schema(schema, whitespace="compact", registry=registry, strict=False)
    check = make_validator(schema, registry)
    tokenizer = _tokenizer()
    fits: list[tuple[int, str]] = []
    invalid = 0
    for depth in (6, 4, 2, 1, 0):
        for text in sample_texts(grammar, 8 * n, seed=seed, max_depth=depth, escapes=False):
            if not check.is_valid(json.loads(text)):
                invalid += 1
                continue
            text = respace(text)
            size = len(tokenizer.encode(text, add_special_tokens=False).ids)
            if size <= MAX_INSTANCE_TOKENS:
                fits.append((size, text))
        if len(fits) >= n:
            break
    fits.sort(key=lambda f: -f[0])  # the largest that fit: a document, not "{}"
    return [text for _, text in fits[:n]], invalid


_TOKENIZER: list = []


def _tokenizer():
    if not _TOKENIZER:
        from tokenizers import Tokenizer

        from kbnf_gpu.tokenizers import locate

        _TOKENIZER.append(Tokenizer.from_file(str(locate("llama3").path)))
    return _TOKENIZER[0]


def tokenize(text: str) -> list[int]:
    return _tokenizer().encode(text, add_special_tokens=False).ids


# ------------------------------------------------------------------ engines


def _eos_ids() -> list[int]:
    from kbnf_gpu import Vocabulary

    return list(Vocabulary.from_name("llama3").eos_ids)


class Ours:
    """``compile_grammar`` with the corpus registry; masks with ``fill_bitmask``."""

    name = "kbnf_gpu"

    def __init__(self, registry: dict[str, Any], stage: str = "compile", vocab: Any = None) -> None:
        import torch

        from kbnf_gpu import Matcher, Vocabulary, compile_grammar, prepare_vocabulary
        from kbnf_gpu.errors import KbnfGpuError
        from kbnf_gpu.frontends.json_schema import parse_json_schema
        from kbnf_gpu.normalize import normalize

        self.registry, self.stage = registry, stage
        self.library_error = KbnfGpuError
        self._parse, self._normalize = parse_json_schema, normalize
        self._compile, self._matcher = compile_grammar, Matcher
        self.eos = _eos_ids()
        if stage == "compile":
            # vocabulary preprocessing = the peers' tokenizer objects (excluded)
            self.vocab = prepare_vocabulary(vocab or Vocabulary.from_name("llama3"))
        self.bitmask = torch.zeros((1, (V + 31) // 32), dtype=torch.int32)

    def compile(self, schema: Any) -> Any:
        if self.stage == "frontend":
            return self._normalize(self._parse(schema, registry=self.registry))
        return self._compile(schema, self.vocab, syntax="json_schema", registry=self.registry)

    def matcher(self, compiled: Any) -> Any:
        return self._matcher(compiled)

    def mask(self, m: Any) -> None:
        m.fill_bitmask(self.bitmask)

    def accept(self, m: Any, t: int) -> bool:
        m.accept_token(t)
        return True


class Xgrammar:
    name = "xgrammar"
    library_error = Exception

    def __init__(self, registry: dict[str, Any], stage: str = "compile") -> None:
        import xgrammar as xgr

        self.xgr = xgr
        self.eos = _eos_ids()
        info = xgr.TokenizerInfo.from_huggingface(llama3_hf(), vocab_size=V, stop_token_ids=self.eos)
        self.compiler = xgr.GrammarCompiler(info, cache_enabled=False)
        self.bitmask = xgr.allocate_token_bitmask(1, V)

    def compile(self, schema: Any) -> Any:
        return self.compiler.compile_json_schema(json.dumps(schema))

    def matcher(self, compiled: Any) -> Any:
        return self.xgr.GrammarMatcher(compiled)

    def mask(self, m: Any) -> None:
        m.fill_next_token_bitmask(self.bitmask)

    def accept(self, m: Any, t: int) -> bool:
        return bool(m.accept_token(t))


class Llguidance:
    name = "llguidance"
    library_error = Exception

    def __init__(self, registry: dict[str, Any], stage: str = "compile") -> None:
        import llguidance
        import llguidance.hf
        import llguidance.torch

        self.llg = llguidance
        self.eos = _eos_ids()
        self.tok = llguidance.hf.from_tokenizer(llama3_hf(), n_vocab=V, eos_token=self.eos)
        self.bitmask = llguidance.torch.allocate_token_bitmask(1, V)

    def compile(self, schema: Any) -> Any:
        grammar = self.llg.LLMatcher.grammar_from_json_schema(schema)
        m = self.llg.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        return m

    def matcher(self, compiled: Any) -> Any:
        compiled.reset()  # the matcher is the compiled grammar
        return compiled

    def mask(self, m: Any) -> None:
        self.llg.torch.fill_next_token_bitmask(m, self.bitmask, 0)

    def accept(self, m: Any, t: int) -> bool:
        return bool(m.consume_token(t))


ADAPTERS = {"kbnf_gpu": Ours, "xgrammar": Xgrammar, "llguidance": Llguidance}
# compiled by every worker before the corpus (untimed), unlike any corpus schema
WARMUP = {"type": "object", "properties": {"warm": {"type": "string"}, "up": {"type": "array", "items": {"type": "number"}}},
          "required": ["warm"], "additionalProperties": False}


def _allowed(bitmask: Any, t: int) -> bool:
    return bool((int(bitmask[0, t // 32]) >> (t % 32)) & 1)


def run_schema(a: Any, schema: Any, token_lists: list[list[int]]) -> dict:
    """Compile, first mask, and the per-token pass over each instance (one engine, one schema)."""
    gc.collect()
    t0 = time.perf_counter()
    try:
        compiled = a.compile(schema)
        if getattr(a, "stage", "compile") == "frontend":
            return {"status": "compiled", "ttfm_ms": (time.perf_counter() - t0) * 1e3}
        m = a.matcher(compiled)
        a.mask(m)
    except Exception as e:  # noqa: BLE001 - every failure is recorded, library errors apart
        status = "refused" if isinstance(e, a.library_error) else "crashed"
        return {"status": status, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    ttfm = (time.perf_counter() - t0) * 1e3
    per_token: list[float] = []
    errors: list[str] = []
    for k, tokens in enumerate(token_lists):
        m = a.matcher(compiled)
        a.mask(m)
        for i, t in enumerate(tokens):
            if not _allowed(a.bitmask, t):
                errors.append(f"instance {k}: token {i} ({t}) not in the mask")
                break
            s = time.perf_counter()
            ok = a.accept(m, t)
            a.mask(m)
            per_token.append((time.perf_counter() - s) * 1e6)
            if not ok:
                errors.append(f"instance {k}: token {i} ({t}) rejected by accept")
                break
        else:
            if not any(_allowed(a.bitmask, e) for e in a.eos):
                errors.append(f"instance {k}: EOS not allowed at the end")
    return {"status": "compiled", "ttfm_ms": ttfm, "token_us": per_token, "token_errors": errors}


def worker_main(engine: str, registry: dict[str, Any], stage: str, conn: Any) -> None:
    """A worker process: build the engine once, then answer one schema job after another."""
    import numpy.ma  # noqa: F401  (numpy loads it lazily on the first np.unique: keep it out of the timings)

    a = ADAPTERS[engine](registry, stage)
    run_schema(a, WARMUP, [])  # first-call costs (imports, lazy initialisation) out of the first schema's time
    conn.send("ready")
    gc.collect()
    gc.freeze()  # the tokenizer's and torch's objects stay out of the collector's way
    while True:
        job = conn.recv()
        if job is None:
            conn.close()
            os._exit(0)  # no interpreter teardown (extension modules print leak reports there)
        conn.send(run_schema(a, job["schema"], job["tokens"]))


def instances_main(registry: dict[str, Any], conn: Any) -> None:
    """The instance sampler's worker process: sampling and ``jsonschema``'s checks have no time bound of their own
    (Python's ``re`` can backtrack for minutes on a sampled string), so they run under the same timeout."""
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            conn.close()
            os._exit(0)
        try:
            texts, invalid = instances(job["schema"], registry, job["n"], job["seed"])
            conn.send({"status": "sampled", "texts": texts, "invalid": invalid})
        except Exception as e:  # noqa: BLE001 - no instances for a schema we cannot read
            conn.send({"status": "refused", "error": f"{type(e).__name__}: {str(e)[:120]}"})


class Worker:
    """One worker process (an engine's, or the instance sampler's); ``run`` answers a job or reports a
    timeout/crash (and restarts)."""

    def __init__(self, name: str, target: Any, *args: Any) -> None:
        self.name, self.target, self.args = name, target, args
        self.proc: Optional[Any] = None
        self.conn: Optional[Any] = None

    def start(self) -> None:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=self.target, args=(*self.args, child), daemon=True)
        self.proc.start()
        if not parent.poll(600) or parent.recv() != "ready":
            raise RuntimeError(f"the {self.name} worker did not start")
        self.conn = parent

    def run(self, job: dict, timeout: float) -> dict:
        if self.proc is None or not self.proc.is_alive():
            self.start()
        assert self.conn is not None
        self.conn.send(job)
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except EOFError:
                pass
            self.stop()
            return {"status": "crashed", "error": "the worker process died"}
        self.stop()
        return {"status": "timeout", "error": f"more than {timeout:g} s"}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
        self.proc = self.conn = None

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive() and self.conn is not None:
            self.conn.send(None)
            self.proc.join(10)
        self.stop()


# -------------------------------------------------------------------- report


def pct(xs: list[float], q: float) -> Optional[float]:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100 * len(xs)))]


def summarize(rows: list[dict], engines: list[str]) -> dict:
    out: dict[str, Any] = {}
    by = {(r["schema"], r["engine"]): r for r in rows}
    names = sorted({r["schema"] for r in rows})
    for e in engines:
        mine = [by[(n, e)] for n in names if (n, e) in by]
        ttfm = [r["ttfm_ms"] for r in mine if r["status"] == "compiled"]
        toks = [t for r in mine for t in r.get("token_us", ())]
        s: dict[str, Any] = {
            "schemas": len(mine),
            **{k: sum(r["status"] == k for r in mine) for k in ("compiled", "refused", "timeout", "crashed")},
            "ttfm_ms": {f"p{q}": pct(ttfm, q) for q in (50, 90, 99)} | {"max": max(ttfm, default=None)},
            "token_us": {"p50": pct(toks, 50), "p99": pct(toks, 99), "mean": statistics.fmean(toks) if toks else None,
                         "tokens": len(toks)},
            "token_errors": sum(len(r.get("token_errors", ())) for r in mine),
        }
        s["coverage"] = s["compiled"] / len(mine) if mine else None
        if e != "kbnf_gpu":
            ratios = [by[(n, "kbnf_gpu")]["ttfm_ms"] / by[(n, e)]["ttfm_ms"] for n in names
                      if (n, e) in by and (n, "kbnf_gpu") in by and by[(n, e)]["status"] == "compiled"
                      and by[(n, "kbnf_gpu")]["status"] == "compiled" and by[(n, e)]["ttfm_ms"] > 0]
            s["ours_over_peer_ttfm"] = {"schemas": len(ratios), "p50": pct(ratios, 50), "p90": pct(ratios, 90)}
        out[e] = s
    return out


def print_table(summary: dict, stage: str) -> None:
    def f(x: Optional[float], spec: str = ".1f") -> str:
        return "-" if x is None else format(x, spec)

    what = "front end + normalize" if stage == "frontend" else "compile + first mask"
    print(f"\n{'engine':<11}{'schemas':>8}{'compiled':>9}{'refused':>8}{'timeout':>8}{'crashed':>8}"
          f"   {what}, ms: {'p50':>7}{'p90':>8}{'p99':>8}{'max':>9}    per token, us: {'p50':>7}{'p99':>8}"
          f"{'tokens':>8}{'errors':>7}")
    for e, s in summary.items():
        t, k = s["ttfm_ms"], s["token_us"]
        print(f"{e:<11}{s['schemas']:>8}{s['compiled']:>9}{s['refused']:>8}{s['timeout']:>8}{s['crashed']:>8}"
              f"   {'':>{len(what) + 6}}{f(t['p50']):>7}{f(t['p90']):>8}{f(t['p99']):>8}{f(t['max']):>9}"
              f"    {'':>15}{f(k['p50']):>7}{f(k['p99']):>8}{k['tokens']:>8}{s['token_errors']:>7}")
    for e, s in summary.items():
        r = s.get("ours_over_peer_ttfm")
        if r:
            print(f"ours / {e}: per-schema ratio of {what} on {r['schemas']} schemas both compiled:"
                  f" p50 {f(r['p50'], '.3g')}, p90 {f(r['p90'], '.3g')}")


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
    for pkg in ("kbnf-gpu", "xgrammar", "llguidance", "kubernetes-validate", "jsonschema", "numpy", "torch"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=None, help="a directory of *.json schemas (default: Kubernetes)")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--limit", type=int, default=None, help="the first N schemas (by file name)")
    parser.add_argument("--sample", type=int, default=None, help="N schemas drawn at random (--seed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per (engine, schema)")
    parser.add_argument("--instances", type=int, default=2, help="sampled instances per schema")
    parser.add_argument("--stage", choices=("compile", "frontend"), default="compile")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "out" / "bench_realworld.json"))
    args = parser.parse_args()
    engines = [e for e in args.engines.split(",") if e]
    if args.stage == "frontend":
        engines = ["kbnf_gpu"]
    corpus = Path(args.corpus) if args.corpus else default_corpus()
    schemas, registry = load_corpus(corpus)
    names = sorted(schemas)
    if args.sample is not None:
        names = sorted(random.Random(args.seed).sample(names, min(args.sample, len(names))))
    if args.limit is not None:
        names = names[: args.limit]
    started = time.perf_counter()
    workers = {e: Worker(e, worker_main, e, registry, args.stage) for e in engines}
    sampler = Worker("instances", instances_main, registry)
    rows: list[dict] = []
    try:
        for i, name in enumerate(names):
            schema = schemas[name]
            texts: list[str] = []
            invalid = 0
            if args.stage == "compile" and args.instances:
                sampled = sampler.run({"schema": schema, "n": args.instances, "seed": args.seed}, args.timeout)
                if sampled["status"] == "sampled":
                    texts, invalid = sampled["texts"], sampled["invalid"]
                else:
                    print(f"  {name}: no instances ({sampled['status']}: {sampled['error']})")
            tokens = [tokenize(t) for t in texts]
            bundled = bundle(schema, registry)
            for e in engines:
                job = {"schema": schema if e == "kbnf_gpu" else bundled, "tokens": tokens}
                r = workers[e].run(job, args.timeout)
                r.update(schema=name, engine=e, instances=len(texts), invalid_instances=invalid)
                rows.append(r)
            line = "  ".join(
                f"{r['engine']} {r['status']}" + (f" {r['ttfm_ms']:.0f} ms" if r["status"] == "compiled" else "")
                for r in rows[-len(engines):]
            )
            print(f"[{i + 1}/{len(names)}] {name}: {line}" + (f"  ({invalid} sampled texts invalid)" if invalid else ""),
                  flush=True)
    finally:
        for w in (*workers.values(), sampler):
            w.close()
    summary = summarize(rows, engines)
    print_table(summary, args.stage)
    for r in rows:
        if r["status"] in ("crashed", "timeout") or r.get("token_errors"):
            print(f"  {r['engine']} {r['schema']}: {r['status']} {r.get('error', '')} {r.get('token_errors', '')}")
    result = {
        "meta": {
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(),
            "versions": versions(),
            "command": " ".join(["python"] + sys.argv),
            "corpus": str(corpus),
            "stage": args.stage,
            "timeout_s": args.timeout,
            "wall_s": round(time.perf_counter() - started, 1),
        },
        "summary": summary,
        "rows": [{k: v for k, v in r.items() if k != "token_us"} | {"tokens": len(r.get("token_us", ()))} for r in rows],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
