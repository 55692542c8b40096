"""Hostile and oversized inputs beside the corpora: compile + first mask of each, or how it is refused.

Each case is a schema or grammar text a user or an attacker can send: thousands of keywords, alternatives
or characters, deep nesting, huge counts, many overlapping patterns. Default options, Llama-3 vocabulary,
one warm process, a hard timeout per case (SIGALRM). ``compile_grammar`` computes the first mask itself
(under the compile's budget), so "compile" includes it and "first mask" is the matcher reading it back.
Issue #10 asks that nothing take above 1 s: a case either compiles and masks within it or is refused fast
with a clear error. Prints a table, writes JSON.

    python benchmarks/probe_hostile.py [--timeout 30] [--only SUBSTRING] [--out PATH]
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import re
import signal
import sys
import time
import zoneinfo
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _nested_objects(n: int) -> dict:
    s: dict = {"type": "string"}
    for _ in range(n):
        s = {"type": "object", "properties": {"a": s}, "required": ["a"]}
    return s


def _if_chain(n: int) -> dict:
    s: dict = {"type": "string"}
    for i in range(n):
        s = {"if": {"properties": {"k": {"const": i}}}, "then": {"properties": {"v": s}},
             "else": {"properties": {"w": {"type": "integer"}}}}
    return s


def _ref_chain(n: int) -> dict:
    defs: dict = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(n)}
    defs[f"d{n}"] = {"type": "integer"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def _allof_diamond(n: int) -> dict:
    defs: dict = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
                  for i in range(n)}
    defs[f"d{n}"] = {"type": "integer", "minimum": 0}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def _anyof_nest(n: int) -> dict:
    s: dict = {"type": "integer"}
    for i in range(n):
        s = {"anyOf": [s, {"type": "string", "maxLength": i + 1}]}
    return s


def cases() -> list[tuple[str, str, Any]]:
    """(name, syntax, source) of every probe."""
    words = [f"word{i}" for i in range(5000)]
    rng = random.Random(0)
    random_words = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
                           for _ in range(1000)})
    zones = "(" + "|".join(re.escape(z) for z in sorted(zoneinfo.available_timezones())) + ")"
    text = "abcdefghij" * 500
    gbnf_words = " | ".join(f'"{w}"' for w in words)
    return [
        # JSON Schema: sizes
        ("schema: objects nested 2,000 deep", "json_schema", _nested_objects(2000)),
        ("schema: 5,000 required properties", "json_schema",
         {"type": "object", "properties": {f"k{i}": {"type": "integer"} for i in range(5000)},
          "required": [f"k{i}" for i in range(5000)]}),
        ("schema: enum of 50,000 strings", "json_schema", {"enum": [f"value_{i}" for i in range(50000)]}),
        ("schema: anyOf 2,000 consts 'x' * i", "json_schema", {"anyOf": [{"const": "x" * i} for i in range(2000)]}),
        ("schema: enum of 1,000 objects", "json_schema", {"enum": [{"a": i, "b": [i, str(i)]} for i in range(1000)]}),
        ("schema: if chain 60 deep", "json_schema", _if_chain(60)),
        ("schema: 200 oneOf patterns ^a{i}.*$", "json_schema",
         {"oneOf": [{"type": "string", "pattern": f"^{'a' * i}.*$"} for i in range(200)]}),
        ("schema: allOf 8 patterns .*x.*", "json_schema",
         {"allOf": [{"type": "string", "pattern": f".*{chr(97 + i)}.*"} for i in range(8)]}),
        ("schema: allOf 12 patterns .*x.*", "json_schema",
         {"allOf": [{"type": "string", "pattern": f".*{chr(97 + i)}.*"} for i in range(12)]}),
        ("schema: pattern of 5,000 plain characters", "json_schema", {"type": "string", "pattern": f"^{text}$"}),
        ("schema: pattern of 5,000 words", "json_schema", {"type": "string", "pattern": "^(" + "|".join(words) + ")$"}),
        ("schema: pattern of 5,000 words in a loop", "json_schema",
         {"type": "string", "pattern": "^(" + "|".join(words) + ")+$"}),
        ("schema: pattern searching for 5,000 words", "json_schema",
         {"type": "string", "pattern": "(" + "|".join(words) + ")"}),
        ("schema: pattern of 600 time zones", "json_schema", {"type": "string", "pattern": f"^{zones}$"}),
        ("schema: pattern searching for 600 time zones", "json_schema", {"type": "string", "pattern": zones}),
        ("schema: pattern (a{1000}){1000}", "json_schema", {"type": "string", "pattern": "^(a{1000}){1000}$"}),
        ("schema: pattern ((a|a)*)*b", "json_schema", {"type": "string", "pattern": "^((a|a)*)*b$"}),
        ("schema: lookahead with {1,253}", "json_schema", {"type": "string", "pattern": "^(?!.*--)[a-z-]{1,253}$"}),
        ("schema: date-time maxLength 10,000", "json_schema",
         {"type": "string", "format": "date-time", "maxLength": 10000}),
        ("schema: minLength 10^9", "json_schema", {"type": "string", "minLength": 10 ** 9}),
        ("schema: maxItems 10^9", "json_schema", {"type": "array", "items": {"type": "integer"}, "maxItems": 10 ** 9}),
        ("schema: a double's range", "json_schema",
         {"type": "number", "minimum": -1.7976931348623157e308, "maximum": 1.7976931348623157e308}),
        ("schema: 2,000 properties", "json_schema",
         {"type": "object", "properties": {w: {"type": "integer"} for w in words[:2000]}}),
        ("schema: $ref chain 1,000 long", "json_schema", _ref_chain(1000)),
        ("schema: allOf diamond 30 deep", "json_schema", _allof_diamond(30)),
        ("schema: $ref cycle", "json_schema",
         {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        ("schema: anyOf nested 60 deep", "json_schema", _anyof_nest(60)),
        ("schema: 300 patternProperties", "json_schema",
         {"type": "object", "patternProperties": {f"^p{i}_[a-z]+$": {"type": "integer"} for i in range(300)}}),
        ("schema: 1,000 prefixItems", "json_schema", {"type": "array", "prefixItems": [{"type": "integer"}] * 1000}),
        ("schema: const object of 10,000 keys", "json_schema", {"const": {f"k{i}": i for i in range(10000)}}),
        ("schema: 200 dependentSchemas", "json_schema",
         {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(200)},
          "dependentSchemas": {f"p{i}": {"required": [f"p{i + 1}"]} for i in range(199)}}),
        ("schema: 300 required in any order", "json_schema",
         {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(300)},
          "required": [f"p{i}" for i in range(300)], "additionalProperties": False}),
        ("schema: oneOf 50 tagged objects", "json_schema",
         {"oneOf": [{"type": "object", "properties": {"kind": {"const": f"k{i}"}, f"v{i}": {"type": "string"}},
                     "required": ["kind"]} for i in range(50)]}),
        ("schema: minProperties 50 maxProperties 60", "json_schema",
         {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 50, "maxProperties": 60}),
        ("schema: not anyOf 50 consts", "json_schema",
         {"not": {"anyOf": [{"const": f"v{i}"} for i in range(50)]}, "type": "string"}),
        ("schema: multipleOf 7919 over 10^12", "json_schema",
         {"type": "integer", "multipleOf": 7919, "minimum": -10 ** 12, "maximum": 10 ** 12}),
        ("schema: minLength 900,000 maxLength 10^6", "json_schema",
         {"type": "string", "minLength": 900000, "maxLength": 1000000}),
        # grammar texts
        ("gbnf: 5,000 keywords", "gbnf", f"root ::= {gbnf_words}"),
        ("gbnf: 5,000 keywords in a loop", "gbnf", f"root ::= ({gbnf_words})+"),
        ("gbnf: 1,000 random words in a loop", "gbnf",
         "root ::= (" + " | ".join(f'"{w}"' for w in random_words) + ")+"),
        ("gbnf: 3,000 classes in a row", "gbnf", "root ::= " + " ".join(["[a-z]"] * 3000)),
        ("gbnf: x{0,100000}", "gbnf", 'root ::= x{0,100000}\nx ::= "a"'),
        ("gbnf: ambiguous s ::= s s | a", "gbnf", 'root ::= s\ns ::= s s | "a"'),
        ("gbnf: (a | b){1000}{1000}", "gbnf", 'root ::= ("a" | "b"){1000}{1000}'),
        ("gbnf: groups nested 3,000 deep", "gbnf", "root ::= " + "(" * 3000 + '"a"' + ")" * 3000),
        ("gbnf: [a-z]{1,100000}", "gbnf", "root ::= [a-z]{1,100000}"),
        ("gbnf: 40 doubling rules", "gbnf",
         "root ::= x0\n" + "\n".join(f'x{i} ::= x{i + 1} x{i + 1} | "a"' for i in range(40)) + '\nx40 ::= "b"'),
        ("lark: 5,000 keywords", "lark", "start: " + " | ".join(f'"{w}"' for w in words)),
        ("kbnf: 5,000 keywords", "kbnf", "start ::= " + " | ".join(f"'{w}'" for w in words) + ";"),
        ("regex: 5,000 words", "regex", "(" + "|".join(words) + ")"),
        ("regex: 5,000 plain characters", "regex", text),
        ("regex: (.*a){30}", "regex", "(.*a){30}"),
        ("regex: [\\s\\S]{0,2000}x[\\s\\S]{0,2000}", "regex", "[\\s\\S]{0,2000}x[\\s\\S]{0,2000}"),
    ]


class HardTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise HardTimeout()


def probe(vocab, syntax: str, source: Any, timeout: float) -> dict:
    from kbnf_gpu import Matcher, compile_grammar

    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    try:
        compiled = compile_grammar(source, vocab, syntax=syntax)
        out["compile_ms"] = (time.perf_counter() - t0) * 1e3
        t1 = time.perf_counter()
        Matcher(compiled).mask_parts()
        out.update(first_mask_ms=(time.perf_counter() - t1) * 1e3, outcome="compiled")
    except HardTimeout:
        out.update(outcome="timeout")
    except Exception as err:  # noqa: BLE001 - a refusal is an outcome here
        out.update(outcome="refused", error=f"{type(err).__name__}: {err}"[:200])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    out["total_ms"] = (time.perf_counter() - t0) * 1e3
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timeout", type=float, default=30.0, help="hard limit per case, seconds")
    ap.add_argument("--only", default="", help="run the cases whose name holds this text")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "probe_hostile.json")
    args = ap.parse_args(argv)

    import warnings

    from kbnf_gpu import Vocabulary, compile_grammar, prepare_vocabulary

    warnings.simplefilter("ignore")  # non-strict notes are not what is measured
    vocab = prepare_vocabulary(Vocabulary.from_name("llama3"))
    compile_grammar({"type": "string"}, vocab, syntax="json_schema")  # first-call costs out of the first case
    rows = []
    print(f"{'case':46s} {'compile ms':>10s} {'first mask':>10s} {'total ms':>9s}  outcome")
    for name, syntax, source in cases():
        if args.only not in name:
            continue
        r = {"case": name, "syntax": syntax, **probe(vocab, syntax, source, args.timeout)}
        rows.append(r)
        fmt = lambda k: f"{r[k]:10.0f}" if k in r else f"{'-':>10s}"  # noqa: E731
        print(f"{name:46s} {fmt('compile_ms')} {fmt('first_mask_ms')} {r['total_ms']:9.0f}  {r['outcome']}"
              + (f" ({r['error'][:70]})" if "error" in r else ""), flush=True)
    over = [r["case"] for r in rows if r["total_ms"] > 1000]
    print(f"\n{len(rows)} cases; above 1 s: {len(over)}" + (f" ({'; '.join(over)})" if over else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": platform.platform(), "python": platform.python_version(),
                                    "date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
