"""Hostile JSON Schemas (issue #13): each is served within the compile budget or refused with a library error
that names its JSON pointer; never a hang, a ``MemoryError``, an ``OverflowError``, a ``UnicodeError`` or a
``TypeError``.

Every case runs the front end and ``normalize`` (what compiling costs once token tables are lazy) under a
``CompileConfig`` with a short wall-clock budget, so a regression to slow shows as ``CompileBudgetExceeded``
instead of a passing test. Served cases with huge counts also check the language at its edges with the Earley
parser (counted repetitions are built by doubling, so their exactness matters).
"""
from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from kbnf_gpu.budget import compile_budget
from kbnf_gpu.check import check_parser
from kbnf_gpu.config import CompileConfig
from kbnf_gpu.errors import CompileBudgetExceeded, GrammarError, KbnfGpuError
from kbnf_gpu.frontends import parse_grammar
from kbnf_gpu.frontends.json_schema import JsonSchemaWarning
from kbnf_gpu.normalize import normalize
from kbnf_gpu.runtime.earley import EarleyParser

CONFIG = CompileConfig(time_budget_s=8.0)
# what the served cases check is their grammar, not their speed (benchmarks time that): a loaded test machine
# must not turn the ~4 s of the slowest into a budget error
SERVED_CONFIG = CompileConfig(time_budget_s=60.0)


def build(schema: Any, front_end_only: bool = False, config: CompileConfig = CONFIG, **opts: Any) -> Any:
    with compile_budget(config):
        g = parse_grammar(schema, "json_schema", **opts)
        return g if front_end_only else normalize(g, config.normalize_config("json_schema"))


def status(bnf: Any, text: str) -> str:
    return check_parser(EarleyParser(bnf), text).status


def ref_fanout(depth: int) -> dict:
    """Each level refers to the next twice: expanded, 2**depth copies; as rules, one per level."""
    defs: dict[str, Any] = {
        f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"},
                            {"type": "object", "properties": {"a": {"$ref": f"#/$defs/d{i + 1}"},
                                                              "b": {"$ref": f"#/$defs/d{i + 1}"}}}]}
        for i in range(depth)
    }
    defs[f"d{depth}"] = {"type": "integer"}
    return {"$ref": "#/$defs/d0", "$defs": defs}


def allof_fanout(depth: int) -> dict:
    defs: dict[str, Any] = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}],
                                      "properties": {f"p{i}": {"type": "integer"}}} for i in range(depth)}
    defs[f"d{depth}"] = {"type": "object"}
    return {"$ref": "#/$defs/d0", "$defs": defs}


def deep(levels: int) -> dict:
    s: dict = {}
    for _ in range(levels):
        s = {"items": s}
    return s


# (id, schema (a dict, or JSON text for non-finite numbers), error class, pointer, CompileConfig limit or None)
REFUSED = [
    ("allof-anyof-cross-product",
     {"allOf": [{"anyOf": [{"type": "object", "required": [f"x{i}_{j}"]} for j in range(4)]} for i in range(20)]},
     CompileBudgetExceeded, "/allOf/0/anyOf", "max_schema_branches"),
    ("anyof-10000-objects",
     {"anyOf": [{"type": "object", "properties": {f"k{i}": {"type": "integer"}}, "required": [f"k{i}"]}
                for i in range(10_000)]},
     CompileBudgetExceeded, "/anyOf", "max_schema_branches"),
    ("const-100KB", {"const": "x" * 100_000}, CompileBudgetExceeded, "/const", "max_dfa_states"),
    ("enum-value-100KB", {"enum": [1, "ab" * 50_000]}, CompileBudgetExceeded, "/enum", "max_dfa_states"),
    ("minimum-minus-infinity", '{"type": "number", "minimum": -1e999}', GrammarError, "/minimum", None),
    ("maximum-infinity-integer", '{"type": "integer", "maximum": 1e999}', GrammarError, "/maximum", None),
    ("exclusive-minimum-nan", '{"exclusiveMinimum": NaN}', GrammarError, "/exclusiveMinimum", None),
    ("multipleof-infinity", '{"multipleOf": 1e999}', GrammarError, "/multipleOf", None),
    ("const-nan-under-minimum", '{"const": NaN, "format": true, "minimum": 0.5}', GrammarError, "/const", None),
    ("enum-nested-infinity", '{"enum": [[1e999]], "items": {"minimum": 0}}', GrammarError, "/enum", None),
    ("surrogate-property-name", {"type": "object", "properties": {"a\ud800": {}}, "required": ["a\ud800"]},
     GrammarError, "/", None),
    ("surrogate-const", {"const": "a\udc00"}, GrammarError, "/const", None),
    ("surrogate-enum", {"enum": ["ok", "\ud800"]}, GrammarError, "/enum", None),
    ("surrogate-nested-const", {"const": {"k": ["\ud800"]}}, GrammarError, "/const", None),
    ("type-is-an-object", {"oneOf": [{"type": {}}, {}]}, GrammarError, "/oneOf/0/type", None),
    ("type-is-a-number", {"type": 3}, GrammarError, "/type", None),
    ("multipleof-97-from-456", {"type": "integer", "minimum": 456, "multipleOf": 456}, GrammarError, "/multipleOf",
     None),
    ("multipleof-tiny", {"type": "number", "multipleOf": 1e-300}, GrammarError, "/multipleOf", None),
    ("nesting-5000", deep(5000), GrammarError, "/items/items", None),
    ("minlength-negative", {"type": "string", "minLength": -1}, GrammarError, "/minLength", None),
    ("required-not-strings", {"type": "object", "required": [1, {}]}, GrammarError, "/required", None),
    ("properties-a-list", {"type": "object", "properties": [{}]}, GrammarError, "/properties", None),
    ("anyof-empty", {"anyOf": []}, GrammarError, "/anyOf", None),
    # lookarounds whose automaton (subsets of obligations) or regular expression grows past its bound
    ("pattern-six-lookaheads-repeated", {"type": "string", "pattern": "(?:(?=.*a)(?=.*b)(?=.*c)(?=.*d)(?=.*e)(?=.*f).)+"},
     GrammarError, "/pattern", None),
    ("pattern-repeat-past-5000", {"type": "string", "pattern": "^a{1,5001}$"}, GrammarError, "/pattern", None),
    ("pattern-nested-repeats", {"type": "string", "pattern": "^(a{1000}){1000}$"}, GrammarError, "/", None),
    # a loop before ``.+`` counted to 2**31: one rule per count of chunks, refused at the plan's bound (its
    # rests' twins were once refined for every one of the 134 million counts, past any budget)
    ("pattern-loop-maxlength-2**31", {"type": "string", "pattern": "^arn:[a-z-]*:.+$", "maxLength": 2**31 - 1},
     GrammarError, "/", None),
    ("multipleof-four-thousand-tails", {"type": "number", "multipleOf": 0.0032}, GrammarError, "/multipleOf", None),
    ("not-integer-with-multipleof", {"type": "number", "multipleOf": 0.5, "not": {"type": "integer"}}, GrammarError,
     "/multipleOf", None),
]


@pytest.mark.parametrize("schema,error,pointer,limit", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_hostile_schema_is_refused_clearly(schema: Any, error: type, pointer: str, limit: Any) -> None:
    with pytest.raises(error) as info:
        build(schema)
    e = info.value
    assert e.pointer is not None and e.pointer.startswith(pointer), (e.pointer, str(e))
    assert f"'{e.pointer}'" in str(e) or len(e.pointer) > 80  # long pointers are shortened in the message
    if limit is not None:
        assert e.limit == limit, str(e)


# (id, schema, texts that are complete, texts that are not)
SERVED = [
    ("minlength-1e9", {"type": "string", "minLength": 10**9}, [], ['"abc"', '""']),
    ("maxlength-1e9", {"type": "string", "maxLength": 10**9}, ['""', '"abc"'], ['"abc', '3']),
    ("maxitems-1e9", {"type": "array", "maxItems": 10**9}, ["[]", '[1, "a"]'], ["[1,", "{}"]),
    ("min-max-length-wide", {"type": "string", "minLength": 3, "maxLength": 10**30}, ['"abc"'], ['"ab"']),
    ("minlength-1e9-float", {"type": "string", "minLength": 1e9}, [], ['"abc"']),
    ("min-max-length-1e9", {"type": "string", "minLength": 10**9, "maxLength": 10**9 + 5}, [], ['"abc"']),
    ("minlength-1e18", {"type": "string", "minLength": 10**18}, [], ['"abc"']),
    ("minlength-1e30", {"type": "string", "minLength": 1e30}, [], ['"abc"']),
    # a class loop counted to its lower bound in the digits of the count (once refused: a rule per count)
    ("minlength-1e30-pattern", {"type": "string", "minLength": 10**30, "pattern": "^[a-c]+$"}, [],
     ['"a"', '"abc"', '"d"']),
    ("minitems-1e9", {"type": "array", "minItems": 10**9}, [], ["[]", "[1, 2]"]),
    # additional members counted in the digits of their count (a state per count was refused)
    ("minproperties-1e9", {"type": "object", "minProperties": 10**9, "properties": {"a": {}}}, [],
     ['{}', '{"a": 1}', '{"a": 1, "b": 2}']),
    ("maxproperties-2**31", {"type": "object", "maxProperties": 2**31 - 1, "properties": {"a": {"type": "integer"}}},
     ['{}', '{"a": 1}', '{"b": "x", "c": [1]}', '{"a": 1, "b": 2, "c": 3}'], ['{"a": "x"}', '{"a": 1,}']),
    ("min-max-items-1e9", {"type": "array", "minItems": 10**9, "maxItems": 10**9}, [], ["[1]"]),
    ("minitems-1e30", {"type": "array", "minItems": 1e30, "items": {"type": "integer"}}, [], ["[1]"]),
    ("ref-fanout-30", ref_fanout(30), ["1", '{"a": {"b": 2}}'], ['{"a": "x"}']),
    ("allof-fanout-30", allof_fanout(30), ['{"p0": 1, "p29": 2}'], ['{"p3": "x"}']),
    ("const-and-format-object", {"const": "foo", "format": {}}, ['"foo"'], ['"bar"']),
    ("minimum-1e308", {"type": "integer", "minimum": 1e308}, ["1" + "0" * 308], ["5"]),
    ("enum-10000", {"enum": [f"value{i}" for i in range(10_000)]}, ['"value0"', '"value9999"'],
     ['"value10000"', '"value"']),
    ("long-declared-name",  # found by the fuzz: keys outside a 400-character name nested that deep
     {"type": "object", "properties": {"a" * 400: {"type": "integer"}, "b": {}}, "required": ["b"]},
     ['{"b": 1}', '{"' + "a" * 400 + '": 1, "b": 2}'], ['{"b": 1, "c": 2}']),
    # values checked against multipleOf exactly: a decimal remainder raised DivisionImpossible (a raw
    # decimal.InvalidOperation) past its context's digits (28 by default: 10**30 already)
    ("enum-huge-multiple-of", {"enum": [10**1000, 14, 7 * 10**1000, 10**30], "multipleOf": 7},
     ["14", str(7 * 10**1000)], [str(10**1000), str(10**30)]),
    ("ref-cycle", {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
     ["1", '"x"'], []),
    # a regular expression for it passes its bound, its automaton (kept as one) does not
    ("pattern-long-lookbehind", {"type": "string", "pattern": "(?<=a{300})b"},
     ['"' + "a" * 300 + 'b"', '"x' + "a" * 301 + 'bc"', '"\\u00e9' + "a" * 300 + 'b"'],
     ['"' + "a" * 299 + 'b"', '"b"', '"' + "a" * 150 + "x" + "a" * 150 + 'b"', '"' + "a" * 299 + "\\u0061b" + '"']),
    # a searched counter: its automaton (each code point past ASCII also an escape) passes max_dfa_states; threaded
    # as the last resort (1,200 states at chunk boundaries, a few chunk lexemes), within the compile budget
    ("pattern-searched-counter", {"type": "string", "pattern": "arn:[a-z]{2,1200}:.{1,2048}"},
     ['"arn:ab:c"', '"xarn:' + "a" * 1200 + ':z tail"', '"arn:aa:\\u00e9"', '"arn:a:arn:bc:d"'],
     ['"arn:a:c"', '"arn:ab:"', '"arn:' + "a" * 1201 + ':c"', '"ARN:ab:c"']),
    # found in CloudFormation's EMR Serverless ImageUri: a threaded chunk's language, written as a regular
    # expression, nested as deep as its ``{0,299}`` and its JSON encoding recursed past Python's stack
    ("pattern-counted-tail-nests-deep", {"type": "string", "minLength": 1, "maxLength": 1024, "pattern":
                                         "^([a-z0-9]+[a-z0-9-.]*)\\/((?:[a-z0-9]+(?:[._-][a-z0-9]+)*\\/)*[a-z0-9]+"
                                         "(?:[._-][a-z0-9]+)*)(?:\\:([a-zA-Z0-9_][a-zA-Z0-9-._]{0,299})|"
                                         "@(sha256:[0-9a-f]{64}))$"},
     ['"registry.io/team/repo:latest"', '"a/b@sha256:' + "0" * 64 + '"', '"a/b:' + "x" * 300 + '"'],
     ['"a/b:' + "x" * 301 + '"', '"A/b:1"', '"a/b@sha256:' + "0" * 63 + '"', '"a/b"']),
    ("pattern-lookaheads-counted", {"type": "string", "pattern": "^(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{8,64}$"},
     ['"aA1!aaaa"', '"' + "x" * 60 + 'A1!x"', '"A1!bb\\u00e9bb"'],
     ['"aA1!aaa"', '"' + "x" * 61 + 'A1!x"', '"aA1aaaaa"', '"aa1!aaaa"', '"\\u00411!bbbbb"']),
]


@pytest.mark.parametrize("schema,good,bad", [c[1:] for c in SERVED], ids=[c[0] for c in SERVED])
def test_hostile_but_legal_schema_is_served(schema: Any, good: list[str], bad: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JsonSchemaWarning)
        bnf = build(schema, config=SERVED_CONFIG)
    for text in good:
        assert status(bnf, text) == "complete", text
    for text in bad:
        assert status(bnf, text) != "complete", text
    if "minLength" in schema:
        assert status(bnf, '"abc') == "prefix"  # far from done, but on the way


@pytest.mark.parametrize("bound", [{"minimum": 1e-300}, {"exclusiveMinimum": 5e-324}])
def test_tiny_number_bounds_are_served_deep_in_a_call_stack(bound: dict) -> None:
    """A bound of hundreds of fraction digits nests its expression ~650 levels deep; compiled again 300 frames
    down a caller's stack (a server's), its memo lookups compare it with the equal expression of the first
    compile without recursion (a ``RecursionError`` at 150 frames before)."""
    def at_depth(n: int) -> Any:
        return build({"type": "number", **bound}, config=SERVED_CONFIG) if n == 0 else at_depth(n - 1)

    at_depth(0)
    bnf = at_depth(300)
    for text in ["0.5", "1", "0." + "0" * 299 + "1", "2e5"]:
        assert status(bnf, text) == "complete", text
    for text in ["0", "-1", "0." + "0" * 330 + "1", "-0.5"]:
        assert status(bnf, text) != "complete", text


@pytest.mark.parametrize("lo,hi", [(600, 610), (1000, 1000), (513, None)])
def test_long_counted_strings_are_exact(lo: int, hi: Any) -> None:
    """Counts past ``SMALL_COUNT`` chunks are built by doubling: the length bounds stay exact."""
    schema = {"type": "string", "minLength": lo, **({} if hi is None else {"maxLength": hi})}
    bnf = build(schema)
    top = (hi if hi is not None else lo) + 20
    for n in sorted({lo - 17, lo - 16, lo - 1, lo, lo + 1, lo + 15, lo + 16, (hi or lo) - 1, hi or lo,
                     (hi or lo) + 1, (hi or lo) + 16, top}):
        ok = n >= lo and (hi is None or n <= hi)
        assert (status(bnf, json.dumps("é" * (n - 3) + "a\\n")) == "complete") == ok, n


@pytest.mark.parametrize("lo,hi", [(40, 43), (70, 70), (33, None)])
def test_long_counted_arrays_are_exact(lo: int, hi: Any) -> None:
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": lo,
              **({} if hi is None else {"maxItems": hi})}
    bnf = build(schema)
    for n in range(max(0, lo - 3), (hi if hi is not None else lo) + 4):
        ok = n >= lo and (hi is None or n <= hi)
        assert (status(bnf, json.dumps(list(range(n)))) == "complete") == ok, n


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {f"k{i}": {"type": "integer"} for i in range(2_000)}},
        {"type": "object", "required": [f"k{i}" for i in range(10_000)]},
        {"oneOf": [{"type": "object", "properties": {"kind": {"const": f"v{i}"}, "x": {"type": "string"}},
                    "required": ["kind"]} for i in range(1_000)]},
    ],
    ids=["optional-2000", "required-10000", "oneof-1000-discriminated"],
)
def test_big_objects_front_end_is_bounded(schema: dict) -> None:
    """The front end serves these within the budget (the downstream cost of thousands of key terminals is the
    table side's: under the default budget it either finishes or raises ``CompileBudgetExceeded``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JsonSchemaWarning)
        g = build(schema, front_end_only=True)
    assert len(g.rules) > 1000


def test_lone_surrogates_are_dropped_with_a_warning_when_not_strict() -> None:
    with pytest.warns(JsonSchemaWarning, match="lone surrogate"):
        bnf = build({"enum": ["ok", "\ud800"]}, strict=False)
    assert status(bnf, '"ok"') == "complete"
    with pytest.warns(JsonSchemaWarning, match="lone surrogate"):
        bnf = build({"type": "object", "properties": {"a\ud800": {}, "b": {"type": "integer"}}}, strict=False)
    assert status(bnf, '{"b": 1}') == "complete"


def test_every_refusal_is_a_library_error() -> None:
    """The error family: every refusal above is a ``KbnfGpuError`` (and a ``ValueError``, as before)."""
    assert issubclass(CompileBudgetExceeded, KbnfGpuError) and issubclass(GrammarError, ValueError)
