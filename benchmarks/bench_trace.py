"""Per-token cost on a serving trace: many *different* documents, a fresh matcher each (issue #11).

A server sees a new document with every request, so the per-state caches only
pay when structure repeats. Per token = accept the token + compute the next
mask; the first mask of a document counts as a step too. Engines, each in the
same run over the same token ids (the Llama-3 tokenizer's own tokenization):

* ours, two paths: ``mask_parts`` (what ``mask_batch`` consumes) and
  ``fill_bitmask`` into a vLLM-style ``int32[1, ceil(V/32)]`` bitmask; each
  path gets its own freshly compiled grammar, so both start cold;
* xgrammar (its builtin JSON grammar for the JSON trace; ``accept_token`` +
  ``fill_next_token_bitmask``);
* llguidance (``consume_token`` + ``fill_next_token_bitmask``).

Parts:

1. ``json``: 200 different JSON documents (nesting depth 1-8, unicode and
   escaped strings, exponent numbers, three layouts) through the JSON grammar,
   a fixed grammar: ours is compiled ``eager`` (every table built at compile
   time, as xgrammar compiles its builtin JSON grammar; compile times printed);
   statistics for the first 20 documents and the last 100, and our parser and
   cache sizes after 20/100/200 documents.
2. ``schemas``: 6 realistic schemas x 50 instances (one with patterns that count: a name,
   a line of text, an IBAN): first 10 and last 25 (per-request
   grammars: ours compiled lazily, so its first instances pay the table walks), and
   each engine's compile time plus its steps over the first 10 instances.
3. ``gbnf``: llama.cpp's ``grammars/*.gbnf`` files and its README name/age
   example (``char{1,100}``) on their corpus sentences.
4. ``corpus``: every grammar of the public corpus (``tests/data/corpus``) on
   its accept strings, ours only, in two modes each from cold tables: ``eager``
   (every table built at compile, a fixed grammar's artifact) and ``lazy`` (the
   default, tables built on first use): per mode, the grammars above 1 ms per
   token, the compile times, and the worst five by per-token mean.
5. ``patterns``: string patterns as real-world schemas write them (passwords
   with lookaheads beside a length bound, an e-mail address with counted
   parts, counters), each pattern the whole schema, compiled cold, on a few
   instances; beside the peers.

    python benchmarks/bench_trace.py [--docs 200] [--instances 50] [--parts json,schemas,gbnf,corpus,patterns]
        [--freeze-startup-heap]   # gc.freeze() after start-up, as vLLM's engine core does
        [--gc-off]                # JSON part: the cyclic collector off while each engine runs
    python benchmarks/bench_trace.py --reduced     # CI: a few documents, correctness only

The JSON part also lists each engine's full garbage collections (generation 2,
ms each): in a Python server they are the per-token maximum. vLLM freezes its
start-up heap (``gc.freeze()``), so a full collection there scans only the
objects made while serving; ``--freeze-startup-heap`` does the same here.
``--gc-off`` turns the collector off while each engine runs the JSON trace
(as a server that collects between batches would): the maximum is then the
engines' own longest step.

``--reduced`` asserts that every engine accepts every token of every document
and that our two paths give the same masks (it times nothing).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_runtime import JSON_LARK  # noqa: E402  (the same JSON language as ours, for llguidance)
from common import llama3_hf  # noqa: E402

Step = Callable[[int], None]

# ------------------------------------------------------------------ documents

WORDS = ("id name value items data type count user email status created tags score price title text "
         "description meta url path size width height color level depth parent child key alpha beta").split()
UNICODE = ["café", "naïve", "日本語", "中文字符", "Ελληνικά", "русский", "emoji 🎉", "ü", "ø å", "العربية", "한국어"]
ESCAPES = ['quote \\" inside', "back\\\\slash", "line\\nbreak", "tab\\t", "\\u00e9t\\u00e9", "\\ud83d\\ude00"]


def _string(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.5:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
    if kind < 0.75:
        return rng.choice(UNICODE) + " " + rng.choice(WORDS)
    return rng.choice(WORDS) + " " + rng.choice(ESCAPES)  # already JSON-escaped: marked for raw insertion


def _number(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.4:
        return str(rng.randint(-10**6, 10**6))
    if kind < 0.7:
        return repr(round(rng.uniform(-1000, 1000), rng.randint(1, 6)))
    mantissa = f"{rng.uniform(1, 10):.{rng.randint(0, 4)}f}".rstrip(".")
    return f"{'-' if rng.random() < 0.3 else ''}{mantissa}{rng.choice('eE')}{rng.choice(['', '+', '-'])}{rng.randint(0, 300)}"


class _Raw:
    """A JSON fragment written as is (escapes and exponent numbers json.dumps would not produce)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _value(rng: random.Random, depth: int) -> object:
    if depth <= 0:
        kind = rng.random()
        if kind < 0.45:
            s = _string(rng)
            return _Raw(json.dumps(s, ensure_ascii=rng.random() < 0.3)) if "\\" not in s else _Raw(f'"{s}"')
        if kind < 0.8:
            return _Raw(_number(rng))
        return rng.choice([True, False, None])
    width = rng.randint(1, 4 if depth <= 2 else 2)  # one child reaches the full depth; the rest stay shallow
    if rng.random() < 0.5:
        return {f"{rng.choice(WORDS)}{i if rng.random() < 0.3 else ''}": _value(rng, depth - 1 if i == 0 else rng.randint(0, 1))
                for i in range(width)}
    return [_value(rng, depth - 1 if i == 0 else rng.randint(0, 1)) for i in range(width)]


def _dump(value: object, layout: int, indent: int = 0) -> str:
    """Serialize with one of three layouts: compact, ", "/": " separators, 2-space indentation."""
    sep, colon = ((",", ":"), (", ", ": "), (",", ": "))[layout]
    pad = "\n" + "  " * (indent + 1) if layout == 2 else ""
    end = "\n" + "  " * indent if layout == 2 else ""
    if isinstance(value, _Raw):
        return value.text
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{" + sep.join(pad + json.dumps(k, ensure_ascii=False) + colon + _dump(v, layout, indent + 1)
                              for k, v in value.items()) + end + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[" + sep.join(pad + _dump(v, layout, indent + 1) for v in value) + end + "]"
    return json.dumps(value)


def json_documents(n: int, seed: int = 0) -> list[str]:
    """``n`` different JSON documents, depth cycling 1..8; each is checked with ``json.loads``."""
    rng = random.Random(seed)
    docs: list[str] = []
    seen: set[str] = set()
    while len(docs) < n:
        depth = 1 + len(docs) % 8
        text = _dump(_value(rng, depth), rng.randrange(3))
        if text in seen:
            continue
        json.loads(text)
        seen.add(text)
        docs.append(text)
    return docs


# -------------------------------------------------------------------- schemas


def _user(rng: random.Random) -> dict:
    out = {"id": rng.randint(1, 10**6), "name": rng.choice(["Ada", "Alan Turing", "Grace", "Edsger W. D."]),
           "email": f"{rng.choice(WORDS)}{rng.randint(1, 99)}@example.com",
           "role": rng.choice(["admin", "editor", "viewer"]), "age": rng.randint(0, 150)}
    if rng.random() < 0.7:
        out["tags"] = [rng.choice(WORDS) for _ in range(rng.randint(0, 5))]
    if rng.random() < 0.6:
        out["address"] = {"city": rng.choice(UNICODE), "zip": f"{rng.randint(0, 99999):05d}"}
    return out


def _product(rng: random.Random) -> dict:
    return {"sku": f"{rng.choice('ABCDEFGH')}{rng.choice('XYZ')}-{rng.randint(1000, 9999)}",
            "title": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))),
            "price": round(rng.uniform(0, 5000), 2), "in_stock": rng.random() < 0.5,
            "variants": [{"color": rng.choice(["red", "green", "blue", "black"]), "size": rng.choice(["S", "M", "L"]),
                          "quantity": rng.randint(0, 500)} for _ in range(rng.randint(1, 4))]}


def _tool_call(rng: random.Random) -> dict:
    name = rng.choice(["get_weather", "search", "send_email"])
    if name == "get_weather":
        args = {"city": rng.choice(UNICODE + WORDS), "unit": rng.choice(["celsius", "fahrenheit"])}
    elif name == "search":
        args = {"query": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))), "limit": rng.randint(1, 50)}
    else:
        args = {"to": f"{rng.choice(WORDS)}@example.org", "subject": rng.choice(WORDS), "body": _string(rng).replace("\\", "")}
    return {"name": name, "arguments": args}


def _event(rng: random.Random) -> dict:
    return {"event": rng.choice(["login", "logout", "purchase", "error"]),
            "timestamp": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
                         f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
            "severity": rng.randint(0, 7),
            "details": {rng.choice(WORDS): rng.choice(WORDS) for _ in range(rng.randint(0, 4))},
            "stack": [f"{rng.choice(WORDS)}.py:{rng.randint(1, 999)}" for _ in range(rng.randint(0, 3))]}


def _config(rng: random.Random) -> dict:
    def container() -> dict:
        c = {"name": rng.choice(WORDS), "image": f"{rng.choice(WORDS)}:{rng.randint(1, 9)}.{rng.randint(0, 9)}"}
        if rng.random() < 0.5:
            c["ports"] = [{"containerPort": rng.randint(1, 65535), "protocol": rng.choice(["TCP", "UDP"])}
                          for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.5:
            c["env"] = [{"name": rng.choice(WORDS).upper(), "value": rng.choice(WORDS)} for _ in range(rng.randint(1, 3))]
        return c
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": rng.choice(WORDS), "labels": {rng.choice(WORDS): rng.choice(WORDS)}},
            "spec": {"replicas": rng.randint(1, 10), "containers": [container() for _ in range(rng.randint(1, 3))]}}


def _account(rng: random.Random) -> dict:
    name_chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
    out = {"username": "".join(rng.choice(name_chars) for _ in range(rng.randint(3, 32))),
           "display_name": " ".join(rng.choice(WORDS + UNICODE) for _ in range(rng.randint(1, 5)))[:60],
           "iban": rng.choice(["DE", "GB", "FR", "NL"]) + f"{rng.randint(10, 99)}"
                   + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(rng.randint(11, 30)))}
    if rng.random() < 0.6:
        out["bio"] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 25)))[:160]
    return out


SCHEMAS: dict[str, tuple[dict, Callable[[random.Random], dict]]] = {
    "user": ({"type": "object", "properties": {
        "id": {"type": "integer", "minimum": 1}, "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "email": {"type": "string", "pattern": "^[a-z0-9]+@[a-z]+\\.[a-z]+$"},
        "role": {"enum": ["admin", "editor", "viewer"]}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
        "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["city", "zip"], "additionalProperties": False}},
        "required": ["id", "name", "email", "role", "age"], "additionalProperties": False}, _user),
    "product": ({"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{4}$"}, "title": {"type": "string"},
        "price": {"type": "number", "minimum": 0}, "in_stock": {"type": "boolean"},
        "variants": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
            "color": {"enum": ["red", "green", "blue", "black"]}, "size": {"enum": ["S", "M", "L"]},
            "quantity": {"type": "integer", "minimum": 0}}, "required": ["color", "size", "quantity"],
            "additionalProperties": False}}},
        "required": ["sku", "title", "price", "in_stock", "variants"], "additionalProperties": False}, _product),
    "tool_call": ({"type": "object", "properties": {
        "name": {"enum": ["get_weather", "search", "send_email"]},
        "arguments": {"anyOf": [
            {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
             "required": ["city", "unit"], "additionalProperties": False},
            {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
             "required": ["query", "limit"], "additionalProperties": False},
            {"type": "object", "properties": {"to": {"type": "string"}, "subject": {"type": "string"},
                                              "body": {"type": "string"}},
             "required": ["to", "subject", "body"], "additionalProperties": False}]}},
        "required": ["name", "arguments"], "additionalProperties": False}, _tool_call),
    "event": ({"type": "object", "properties": {
        "event": {"enum": ["login", "logout", "purchase", "error"]},
        "timestamp": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"},
        "severity": {"type": "integer", "minimum": 0, "maximum": 7},
        "details": {"type": "object", "additionalProperties": {"type": "string"}},
        "stack": {"type": "array", "items": {"type": "string"}}},
        "required": ["event", "timestamp", "severity", "details", "stack"], "additionalProperties": False}, _event),
    "deployment": ({"type": "object", "properties": {
        "apiVersion": {"const": "apps/v1"}, "kind": {"const": "Deployment"},
        "metadata": {"type": "object", "properties": {
            "name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}},
            "required": ["name"], "additionalProperties": False},
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 0},
            "containers": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "image": {"type": "string"},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "containerPort": {"type": "integer", "minimum": 1, "maximum": 65535},
                    "protocol": {"enum": ["TCP", "UDP", "SCTP"]}}, "required": ["containerPort"],
                    "additionalProperties": False}},
                "env": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "value": {"type": "string"}}, "required": ["name"],
                    "additionalProperties": False}}},
                "required": ["name", "image"], "additionalProperties": False}}},
            "required": ["replicas", "containers"], "additionalProperties": False}},
        "required": ["apiVersion", "kind", "metadata", "spec"], "additionalProperties": False}, _config),
    # patterns that count (a name, a line of text, an IBAN) and a long maxLength
    "account": ({"type": "object", "properties": {
        "username": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{3,32}$"},
        "display_name": {"type": "string", "pattern": "^.{1,60}$"},
        "iban": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$"},
        "bio": {"type": "string", "maxLength": 160}},
        "required": ["username", "display_name", "iban"], "additionalProperties": False}, _account),
}


def schema_instances(name: str, n: int, seed: int = 1) -> list[str]:
    """``n`` instances of schema ``name`` (keys in schema order), each validated with ``jsonschema``."""
    import jsonschema

    schema, make = SCHEMAS[name]
    rng = random.Random(seed)
    validator = jsonschema.Draft202012Validator(schema)
    out = []
    for _ in range(n):
        value = make(rng)
        validator.validate(value)
        out.append(json.dumps(value, ensure_ascii=False))
    return out


# ------------------------------------------------------------------- engines


class Ours:
    """Our matcher on one of two paths: ``"parts"`` (mask_batch's input) or ``"bitmask"`` (fill_bitmask)."""

    def __init__(self, compiled, path: str) -> None:
        import torch

        self.compiled = compiled
        self.path = path
        self.bitmask = torch.zeros((1, (compiled.vocab.size + 31) // 32), dtype=torch.int32)

    def start(self) -> Callable[[], None]:
        from kbnf_gpu import Matcher

        m = self.matcher = Matcher(self.compiled)
        return m.mask_parts if self.path == "parts" else lambda: m.fill_bitmask(self.bitmask, 0)

    def accept(self, token: int) -> None:
        self.matcher.accept_token(token)

    def finish(self) -> None:
        assert self.matcher.is_accepting(), "document not complete"


class Xgrammar:
    def __init__(self, compiled, vocab_size: int, eos: int) -> None:
        import xgrammar as xgr

        self.compiled = compiled
        self.eos = eos
        self.bitmask = xgr.allocate_token_bitmask(1, vocab_size)

    def start(self) -> Callable[[], None]:
        import xgrammar as xgr

        m = self.matcher = xgr.GrammarMatcher(self.compiled)
        return lambda: m.fill_next_token_bitmask(self.bitmask)

    def accept(self, token: int) -> None:
        if not self.matcher.accept_token(token):
            raise AssertionError(f"xgrammar rejected token {token}")

    def finish(self) -> None:
        assert self.matcher.accept_token(self.eos), "document not complete"


class Llguidance:
    def __init__(self, tokenizer, grammar: str) -> None:
        import llguidance.torch

        self.tokenizer = tokenizer
        self.grammar = grammar
        self.bitmask = llguidance.torch.allocate_token_bitmask(1, tokenizer.vocab_size)

    def start(self) -> Callable[[], None]:
        import llguidance
        import llguidance.torch

        m = self.matcher = llguidance.LLMatcher(self.tokenizer, self.grammar)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return lambda: llguidance.torch.fill_next_token_bitmask(m, self.bitmask, 0)

    def accept(self, token: int) -> None:
        if not self.matcher.consume_token(token):
            raise AssertionError(f"llguidance rejected token {token}: {self.matcher.get_error()}")

    def finish(self) -> None:
        assert self.matcher.is_accepting(), "document not complete"


def run_trace(engine, documents: list[list[int]]) -> list[list[float]]:
    """Per document, the seconds of each step: the first mask, then accept + next mask per token."""
    out = []
    clock = time.perf_counter
    for tokens in documents:
        times = []
        t0 = clock()
        mask = engine.start()
        mask()
        times.append(clock() - t0)
        for t in tokens:
            t0 = clock()
            engine.accept(t)
            mask()
            times.append(clock() - t0)
        engine.finish()
        out.append(times)
    return out


class FullCollections:
    """The garbage collector's full (generation 2) collections while the block runs, in ms each."""

    def __enter__(self) -> "FullCollections":
        self.pauses: list[float] = []
        self._start = 0.0
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.pauses.append((time.perf_counter() - self._start) * 1e3)


def stats_us(per_doc: list[list[float]]) -> dict:
    flat = np.array([t for doc in per_doc for t in doc]) * 1e6
    if not flat.size:
        return {}
    return {"mean": float(flat.mean()), "p50": float(np.percentile(flat, 50)), "p90": float(np.percentile(flat, 90)),
            "p99": float(np.percentile(flat, 99)), "max": float(flat.max()), "steps": int(flat.size)}


# --------------------------------------------------------------------- parts


class Context:
    def __init__(self, args) -> None:
        from kbnf_gpu import Vocabulary, prepare_vocabulary

        self.args = args
        # vocabulary preprocessing at start-up, as a server does (the peers' tokenizer objects likewise)
        self.vocab = prepare_vocabulary(Vocabulary.from_name("llama3"))
        self.hf = llama3_hf()
        self._xgr_info = None
        self._llg_tok = None

    def tokens(self, text: str) -> list[int]:
        return self.hf.encode(text, add_special_tokens=False)

    def xgr_compiler(self):
        import xgrammar as xgr

        if self._xgr_info is None:
            self._xgr_info = xgr.TokenizerInfo.from_huggingface(self.hf, vocab_size=self.vocab.size)
        return xgr.GrammarCompiler(self._xgr_info, max_threads=1, cache_enabled=False)

    def llg_tokenizer(self):
        import llguidance.hf

        if self._llg_tok is None:
            self._llg_tok = llguidance.hf.from_tokenizer(self.hf)
        return self._llg_tok


def _timed(make: Callable):
    """``make()``, with its milliseconds on the result (``compile_ms``)."""
    t0 = time.perf_counter()
    engine = make()
    engine.compile_ms = (time.perf_counter() - t0) * 1e3
    return engine


def _peers(ctx: Context, xgr_compile: Callable, llg_grammar: Callable) -> dict:
    import llguidance.torch  # noqa: F401  (imports are start-up, not compile time)

    engines = {}
    try:
        compiler = ctx.xgr_compiler()
        engines["xgrammar"] = _timed(lambda: Xgrammar(xgr_compile(compiler), ctx.vocab.size,
                                                      int(ctx.vocab.eos_ids[0])))
    except Exception as e:  # noqa: BLE001 - a peer that cannot take the grammar is reported, not fatal
        engines["xgrammar"] = repr(e)
    try:
        tokenizer = ctx.llg_tokenizer()
        engines["llguidance"] = _timed(lambda: Llguidance(tokenizer, llg_grammar()))
    except Exception as e:  # noqa: BLE001
        engines["llguidance"] = repr(e)
    return engines


def _ours(ctx: Context, source, syntax: str, **options) -> dict:
    from kbnf_gpu import compile_grammar

    return {f"ours {path}": _timed(lambda: Ours(compile_grammar(source, ctx.vocab, syntax=syntax, **options), path))
            for path in ("parts", "bitmask")}


def cache_sizes(compiled) -> dict:
    stats = getattr(compiled, "cache_stats", None)
    if stats is not None:
        return stats()
    return {"parser_states": compiled.parser.n_states, "earley_sets": compiled.parser.n_sets}


def part_json(ctx: Context) -> dict:
    import llguidance

    from kbnf_gpu.grammars import JSON_KBNF

    docs = json_documents(ctx.args.docs)
    token_docs = [ctx.tokens(d) for d in docs]
    # a fixed grammar: compiled with every table up front (``eager``), as xgrammar compiles its builtin JSON grammar
    engines = _ours(ctx, JSON_KBNF, "kbnf", end_mode="eos", eager=True)
    engines.update(_peers(ctx, lambda c: c.compile_builtin_json_grammar(),
                          lambda: llguidance.LLMatcher.grammar_from_lark(JSON_LARK)))
    result: dict = {"documents": len(docs), "tokens": sum(map(len, token_docs)), "engines": {}}
    first, last = min(20, len(docs)), min(100, len(docs) // 2)
    for name in list(engines):
        engine = engines.pop(name)  # each engine's caches die before the next runs (a full collection scans them)
        if isinstance(engine, str):
            result["engines"][name] = {"error": engine}
            continue
        checkpoints = {}
        per_doc: list[list[float]] = []
        gc.collect()
        if ctx.args.gc_off:
            gc.disable()
        with FullCollections() as full:
            for i, tokens in enumerate(token_docs, 1):
                per_doc += run_trace(engine, [tokens])
                if isinstance(engine, Ours) and i in (20, 100, 200, len(token_docs)):
                    checkpoints[i] = cache_sizes(engine.compiled)
        if ctx.args.gc_off:
            gc.enable()
        result["engines"][name] = {"first": stats_us(per_doc[:first]), "last": stats_us(per_doc[-last:]),
                                   "all": stats_us(per_doc), "caches": checkpoints, "compile_ms": engine.compile_ms,
                                   "full_collections_ms": [round(ms, 1) for ms in full.pauses]}
    return result


def _schema_engines(ctx: Context, schema: dict) -> dict:
    """Our two paths and the peers, each having compiled ``schema`` (an engine that refused it: its error)."""
    import llguidance

    try:
        engines = _ours(ctx, schema, "json_schema")
    except Exception as e:  # noqa: BLE001 - a schema we refuse is reported beside the peers
        engines = {"ours parts": f"{type(e).__name__}: {e}"}
    engines.update(_peers(ctx, lambda c: c.compile_json_schema(json.dumps(schema)),
                          lambda: llguidance.LLMatcher.grammar_from_json_schema(
                              schema, defaults={"whitespace_flexible": True})))
    return engines


def part_schemas(ctx: Context) -> dict:
    out = {}
    for name, (schema, _) in SCHEMAS.items():
        instances = schema_instances(name, ctx.args.instances)
        token_docs = [ctx.tokens(d) for d in instances]
        out[name] = _rows(_schema_engines(ctx, schema), token_docs, lambda engine, per_doc: {
            "first": stats_us(per_doc[:10]), "last": stats_us(per_doc[-25:]), "all": stats_us(per_doc),
            "compile_ms": engine.compile_ms,
            "compile_and_first_ms": engine.compile_ms + 1e3 * sum(map(sum, per_doc[:10]))})
    return out


def _rows(engines: dict, token_docs: list[list[int]], row: Callable[[object, list], dict]) -> dict:
    """Per engine, ``row(engine, its step times per document)``, or its error: a grammar it refused, or a token
    of an instance it rejected (reported, not fatal)."""
    rows = {}
    for name, engine in engines.items():
        if isinstance(engine, str):
            rows[name] = {"error": engine[:200]}
            continue
        try:
            rows[name] = row(engine, run_trace(engine, token_docs))
        except Exception as e:  # noqa: BLE001
            rows[name] = {"error": f"{type(e).__name__}: {str(e)[:150]}"}
    return rows


# string patterns as real-world schemas write them, each the whole schema ({"type": "string", "pattern": ...})
PATTERNS = {
    "password 3 lookaheads {8,64}": "^(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{8,64}$",
    "password 3 lookaheads {8,32}": "^(?=.*[a-z])(?=.*[A-Z])(?=.*\\d).{8,32}$",
    "password 4 lookaheads {8,}": "^(?=.*[a-z])(?=.*[A-Z])(?=.*\\d)(?=.*[@$!%*?&])[A-Za-z\\d@$!%*?&]{8,}$",
    "password unanchored": "(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{8,64}",
    "e-mail counted": "^[a-z0-9._%+-]{1,64}@[a-z0-9.-]{1,255}\\.[a-z]{2,}$",
    "display name": "^.{10,60}$",
    "username": "^[a-zA-Z0-9_-]{1,64}$",
    "pairs counted far": "^(ab|cd|ef|gh){1,300}$",
    "IBAN": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$",
}


def part_patterns(ctx: Context) -> dict:
    """Each pattern alone: compile, then its instances (our grammar's samples that ``jsonschema`` accepts;
    the same token ids for every engine), cold: per-request grammars."""
    import jsonschema

    from kbnf_gpu.frontends import parse_grammar
    from kbnf_gpu.frontends.json_schema.sample import sample_texts

    out = {}
    for name, pattern in PATTERNS.items():
        schema = {"type": "string", "pattern": pattern}
        try:
            texts = sample_texts(parse_grammar(schema, "json_schema", whitespace="compact"), 40, seed=5,
                                 escapes=False)
        except Exception as e:  # noqa: BLE001 - a pattern our front end refuses: listed, not timed
            out[name] = {"ours": {"error": f"{type(e).__name__}: {str(e)[:120]}"}}
            continue
        texts = [t for t in dict.fromkeys(texts) if jsonschema.Draft202012Validator(schema).is_valid(json.loads(t))]
        token_docs = [ctx.tokens(t) for t in texts[: min(ctx.args.instances, 6)]]
        out[name] = _rows(_schema_engines(ctx, schema), token_docs, lambda engine, per_doc: {
            **stats_us(per_doc), "compile_ms": engine.compile_ms,
            "compile_and_steps_ms": engine.compile_ms + 1e3 * sum(map(sum, per_doc))})
    return out


def _gbnf_cases() -> list[dict]:
    from data_paths import corpus_cases

    return [c for c in corpus_cases("gbnf") if c["id"].startswith("llamacpp-")
            and ("grammars/" in c["source"] and "README" not in c["source"] or c["id"] == "llamacpp-readme-name-age-array")]


def part_gbnf(ctx: Context) -> dict:
    import llguidance
    from llguidance.gbnf_to_lark import gbnf_to_lark

    out = {}
    for case in _gbnf_cases():
        sentences = [s for s in case["accept"] if s][:3]
        token_docs = [ctx.tokens(s) for s in sentences]
        engines = _ours(ctx, case["grammar"], "gbnf")
        engines.update(_peers(ctx, lambda c: c.compile_grammar(case["grammar"]),
                              lambda: llguidance.LLMatcher.grammar_from_lark(gbnf_to_lark(case["grammar"]))))
        out[case["id"]] = _rows(engines, token_docs, lambda engine, per_doc: stats_us(per_doc))
    return out


def _cold_tables() -> None:
    """Forget every token table this process built (the corpus's two modes each start cold)."""
    from kbnf_gpu.compile.dfa_walk import clear_walk_cache
    from kbnf_gpu.compile.grammar_tables import _DEFAULT_CACHES

    for cache in _DEFAULT_CACHES.values():
        cache.clear()
    clear_walk_cache()


def part_corpus(ctx: Context) -> dict:
    """Each grammar in two modes, each pass over the corpus starting with cold tables: ``eager`` (every
    table built at compile: a fixed grammar's artifact, as a product serves its output format) and ``lazy``
    (the default: tables built on first use, as a per-request grammar is served)."""
    from data_paths import corpus_cases

    from kbnf_gpu import compile_grammar

    out: dict = {}
    for mode in ("eager", "lazy"):
        _cold_tables()
        for case in corpus_cases():
            sentences = [s for s in case["accept"] if s and len(s.encode()) <= 2000][:2]
            if not sentences:
                continue
            source = json.loads(case["grammar"]) if case["format"] == "json_schema" else case["grammar"]
            row = out.setdefault(case["id"], {})
            try:
                engine = _timed(lambda: Ours(compile_grammar(source, ctx.vocab, syntax=case["format"],
                                                             eager=mode == "eager"), "parts"))
            except Exception as e:  # noqa: BLE001 - grammars we refuse are #15's business; listed, not timed
                row[mode] = {"error": f"{type(e).__name__}: {str(e)[:120]}"}
                continue
            try:
                row[mode] = stats_us(run_trace(engine, [ctx.tokens(s) for s in sentences]))
                row[mode]["compile_ms"] = engine.compile_ms
            except Exception as e:  # noqa: BLE001
                row[mode] = {"error": f"{type(e).__name__}: {str(e)[:120]}"}
    return out


# ---------------------------------------------------------------------- main


def _fmt_stats(s: dict) -> str:
    if not s:
        return "-"
    if "error" in s:
        return "error: " + s["error"][:60]
    return f"{s['mean']:8.1f} {s['p50']:7.1f} {s['p90']:7.1f} {s['p99']:8.1f} {s['max']:9.1f}"


def print_report(results: dict) -> None:
    head = f"{'engine':<16} {'mean':>8} {'p50':>7} {'p90':>7} {'p99':>8} {'max':>9}"
    if "json" in results:
        r = results["json"]
        print(f"\nJSON trace: {r['documents']} different documents, {r['tokens']} tokens, µs per token "
              "(accept + next mask)")
        for window in ("first", "last"):
            print(f"-- {window} {'20' if window == 'first' else '100'} documents\n{head}")
            for name, e in r["engines"].items():
                print(f"{name:<16} {_fmt_stats(e.get(window, e))}")
        for name, e in r["engines"].items():
            for n, sizes in e.get("caches", {}).items():
                print(f"{name} after {n} documents: {sizes}")
        print("compile, ms: " + ", ".join(f"{name} {e['compile_ms']:.1f}" for name, e in r["engines"].items()
                                          if "compile_ms" in e))
        for name, e in r["engines"].items():
            if "full_collections_ms" in e:
                print(f"{name}: full garbage collections during its trace (ms): {e['full_collections_ms']}")
    if "schemas" in results:
        print("\nSchemas: µs per token; first 10 instances / last 25; then ms: compile, compile + the first 10"
              " instances' steps (ours: tables are built lazily, on the first instances; our second path"
              " reuses the tables the first built, as a server's next grammar does)")
        for schema, rows in results["schemas"].items():
            print(f"-- {schema}\n{head}")
            for name, e in rows.items():
                total = (f"   |   {e['compile_ms']:7.1f} {e['compile_and_first_ms']:8.1f}"
                         if "compile_and_first_ms" in e else "")
                print(f"{name:<16} {_fmt_stats(e.get('first', e))}   |   last 25: {_fmt_stats(e.get('last', {}))}"
                      f"{total}")
    if "patterns" in results:
        print("\nString patterns alone, cold: ms to compile, then µs per step over the instances, and ms of compile"
              " and every step")
        for case, rows in results["patterns"].items():
            print(f"-- {case}: {PATTERNS[case]}\n{'engine':<16} {'compile':>9} {'mean':>8} {'p50':>7} {'p90':>7} "
                  f"{'p99':>8} {'max':>9} {'total':>9}")
            for name, e in rows.items():
                if "error" in e:
                    print(f"{name:<16} error: {e['error'][:100]}")
                else:
                    print(f"{name:<16} {e['compile_ms']:9.1f} {_fmt_stats(e)} {e['compile_and_steps_ms']:9.1f}")
    if "gbnf" in results:
        print("\nllama.cpp GBNF grammars on their sentences: µs per token")
        for case, rows in results["gbnf"].items():
            print(f"-- {case}\n{head}")
            for name, e in rows.items():
                print(f"{name:<16} {_fmt_stats(e)}")
    if "corpus" in results:
        for mode in ("eager", "lazy"):
            timed = {k: v[mode] for k, v in results["corpus"].items() if "mean" in v.get(mode, {})}
            worst = sorted(timed.items(), key=lambda kv: -kv[1]["mean"])[:5]
            over = [k for k, v in timed.items() if v["mean"] > 1000]
            compile_ms = np.array([v["compile_ms"] for v in timed.values()])
            print(f"\nCorpus, {mode} tables: {len(timed)} grammars timed, {len(results['corpus']) - len(timed)} "
                  f"not; {len(over)} above 1 ms per token; compile ms p50 {np.percentile(compile_ms, 50):.1f}, "
                  f"p99 {np.percentile(compile_ms, 99):.1f}, max {compile_ms.max():.1f}. Worst five by mean "
                  f"(parts path), µs per token:\n{'case':<56} {'mean':>8} {'p50':>7} {'p90':>7} {'p99':>8} "
                  f"{'max':>9} {'compile ms':>11}")
            for case, s in worst:
                print(f"{case:<56} {_fmt_stats(s)} {s['compile_ms']:11.1f}")


def reduced(ctx: Context) -> None:
    """CI form: every engine accepts every token; both of our paths give the same masks as the reference."""
    import torch

    from kbnf_gpu import Matcher, compile_grammar
    from kbnf_gpu.grammars import JSON_KBNF

    docs = json_documents(6, seed=7)
    compiled = compile_grammar(JSON_KBNF, ctx.vocab, syntax="kbnf", end_mode="eos")
    bitmask = torch.zeros((1, (ctx.vocab.size + 31) // 32), dtype=torch.int32)
    for doc in docs:
        m = Matcher(compiled)
        for t in ctx.tokens(doc) + [None]:
            ids = m.allowed_token_ids()
            m.fill_bitmask(bitmask, 0)
            bits = np.unpackbits(bitmask[0].numpy().view(np.uint8), bitorder="little")[: ctx.vocab.size]
            assert np.array_equal(np.flatnonzero(bits), ids), "fill_bitmask disagrees with allowed_token_ids"
            if t is not None:
                assert t in set(ids.tolist()), f"a valid token {t} is masked out in {doc!r}"
                m.accept_token(t)
        assert m.is_accepting()
    for name in SCHEMAS:
        for inst in schema_instances(name, 2):
            m = Matcher(compile_grammar(SCHEMAS[name][0], ctx.vocab, syntax="json_schema"))
            m.accept_tokens(ctx.tokens(inst))
            assert m.is_accepting(), (name, inst)
    for name in ("password 3 lookaheads {8,32}", "password unanchored"):
        schema = {"type": "string", "pattern": PATTERNS[name]}
        compiled = compile_grammar(schema, ctx.vocab, syntax="json_schema")
        for inst in ['"Passw0rd!"', '"' + "x" * 20 + 'A1!"']:
            m = Matcher(compiled)
            m.accept_tokens(ctx.tokens(inst))
            assert m.is_accepting(), (name, inst)
    print("reduced trace: OK")


def start_up(ctx: Context) -> None:
    """What a server does before it serves, then ``gc.freeze()`` as vLLM does: each engine compiles and runs
    a small grammar unrelated to the trace's (so every module it loads lazily is loaded and its per-vocabulary
    structures are built, while no table of the trace's grammars is warm)."""
    import llguidance

    from kbnf_gpu import compile_grammar

    tokens = ctx.tokens("abc")
    engines = [Ours(compile_grammar("[a-z]+", ctx.vocab, syntax="regex"), path) for path in ("parts", "bitmask")]
    engines.append(Xgrammar(ctx.xgr_compiler().compile_regex("[a-z]+"), ctx.vocab.size, int(ctx.vocab.eos_ids[0])))
    engines.append(Llguidance(ctx.llg_tokenizer(), llguidance.LLMatcher.grammar_from_regex("[a-z]+")))
    for engine in engines:
        run_trace(engine, [tokens])
    del engines
    gc.collect()
    gc.freeze()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--instances", type=int, default=50)
    parser.add_argument("--parts", default="json,schemas,gbnf,corpus,patterns")
    parser.add_argument("--reduced", action="store_true", help="CI: a few documents, correctness only")
    parser.add_argument("--out", default=str(HERE / "out" / "bench_trace.json"))
    parser.add_argument("--gc-off", action="store_true",
                        help="JSON part: the cyclic garbage collector off while each engine runs (the maximum is then "
                             "the engine's own longest step)")
    parser.add_argument("--freeze-startup-heap", action="store_true",
                        help="gc.freeze() after start-up, as vLLM's engine core does (vllm.utils.gc_utils.freeze_gc_heap): "
                             "full collections then scan only what the run created")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    ctx = Context(args)
    if args.reduced:
        reduced(ctx)
        return
    if args.freeze_startup_heap:
        start_up(ctx)
    results: dict = {}
    for part in args.parts.split(","):
        results[part] = {"json": part_json, "schemas": part_schemas, "gbnf": part_gbnf, "corpus": part_corpus,
                         "patterns": part_patterns}[part](ctx)
        print_report({part: results[part]})
    results["meta"] = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.platform(), "cpus": os.cpu_count(),
                       "python": platform.python_version(), "command": " ".join(sys.argv),
                       "load_average": os.getloadavg()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, default=str))
    print(f"\nwrote {args.out}; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
