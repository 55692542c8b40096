"""JSON Schema front end: IR shape, errors and warnings, regular pieces, and languages.

Language tests run the grammar through ``kbnf_gpu.check`` (Earley parser) and
compare with python ``jsonschema`` (Draft 2020-12 unless the schema says
otherwise, format checking on):

* the corpus (``tests/data/corpus/cases.jsonl``, ``json_schema`` cases);
* ``SCHEMAS`` below: for each, >= 20 valid texts must be complete, known
  invalid values and mutated values that jsonschema rejects must not be, and
  random texts sampled from the grammar itself must validate (soundness).

Property order rule for instances: texts are serialized with the declared
properties first, in schema order (``reorder``); schemas whose instances
cannot be put in one order (``anyOf`` of property sets...) are checked with
``any_order=True``.
"""
from __future__ import annotations

import base64
import importlib
import importlib.util
import itertools
import json
import random
import re
import unicodedata
import warnings
from decimal import Decimal
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from data_paths import corpus_cases
from kbnf_gpu import ir
from kbnf_gpu.automata.build import build_dfa
from kbnf_gpu.errors import GrammarError
from kbnf_gpu.frontends import parse_grammar
from kbnf_gpu.frontends.json_schema import JsonSchemaWarning, _long_strings, parse_json_schema
from kbnf_gpu.frontends.json_schema._pattern import PatternError, pattern_language
from kbnf_gpu.frontends.json_schema._pyre import to_python
from kbnf_gpu.frontends.json_schema._fsm import PathLanguages, canonical_key, intersection_dfa, minimize, paths_dfa
from kbnf_gpu.frontends.json_schema._keys import other_keys
from kbnf_gpu.frontends.json_schema._strings import CHAR, encode, encode_text, quoted
from kbnf_gpu.frontends.json_schema.formats import FORMATS, format_language
from kbnf_gpu.frontends.json_schema.numbers import decimal_range, integer_range, multiple_of_regex
from kbnf_gpu.frontends.json_schema import _rx
from kbnf_gpu.frontends.json_schema._rx import holds_automaton, rep
from kbnf_gpu.frontends.json_schema.sample import sample_texts

jsonschema = importlib.import_module("jsonschema")
FORMAT_CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER

HAVE_HYPOTHESIS_JSONSCHEMA = importlib.util.find_spec("hypothesis_jsonschema") is not None

try:
    from kbnf_gpu.check import check_parser
    from kbnf_gpu.normalize import normalize
    from kbnf_gpu.runtime.earley import EarleyParser

    HAVE_CHECK = True
except ImportError:  # pragma: no cover - the parser is not there yet
    HAVE_CHECK = False

needs_check = pytest.mark.skipif(not HAVE_CHECK, reason="kbnf_gpu.check is not available")


# ------------------------------------------------------------------ helpers


def rx(e: Any) -> re.Pattern[str]:
    return re.compile(to_python(e), re.S)


def validator(schema: Any) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=FORMAT_CHECKER)


class Checker:
    """A grammar with its parser built once; ``status(text)``."""

    def __init__(self, schema: Any, **opts: Any) -> None:
        self.grammar = parse_json_schema(schema, **opts)
        self.parser = EarleyParser(normalize(self.grammar))

    def status(self, text: str) -> str:
        return check_parser(self.parser, text).status

    def complete(self, text: str) -> bool:
        return self.status(text) == "complete"


def _num(v: float) -> str:
    """Positional notation (exponents are only admitted where provably in bounds)."""
    text = format(Decimal(repr(v)), "f")
    return text


def dumps(v: Any, mode: dict, rnd: random.Random | None = None) -> str:
    """json.dumps in the grammar's layout; ``rnd`` sprinkles flexible whitespace."""
    indent = mode.get("indent")
    compact = mode.get("whitespace") == "compact"

    def ws() -> str:
        if rnd is None:
            return ""
        return "".join(rnd.choice(" \t\n\r") for _ in range(rnd.choice([0, 0, 1, 2, 5])))

    def go(v: Any, level: int) -> str:
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            return json.dumps(v)
        if isinstance(v, float):
            return _num(v)
        pair = "[]" if isinstance(v, list) else "{}"
        if not v:
            return pair[0] + ws() + pair[1]
        if isinstance(v, list):
            items = [go(x, level + 1) for x in v]
        else:
            sep = ":" if compact or rnd else ": "
            items = [json.dumps(k) + ws() + sep + ws() + go(x, level + 1) for k, x in v.items()]
        if indent is not None:
            pad = "\n" + " " * (indent * (level + 1))
            return pair[0] + pad + ("," + pad).join(items) + "\n" + " " * (indent * level) + pair[1]
        if rnd is not None:
            return pair[0] + ws() + (ws() + "," + ws()).join(items) + ws() + pair[1]
        return pair[0] + ("," if compact else ", ").join(items) + pair[1]

    return ws() + go(v, 0) + ws()


def reorder(v: Any, schema: Any, root: Any) -> Any:
    """Put object keys in schema order (declared properties first) where the schema says."""
    for _ in range(20):
        if isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#"):
            node = root
            for tok in schema["$ref"][1:].split("/")[1:]:
                node = node[tok.replace("~1", "/").replace("~0", "~")]
            schema = node
        else:
            break
    if not isinstance(schema, dict):
        schema = {}
    if isinstance(v, dict):
        props = schema.get("properties", {})
        keys = [k for k in props if k in v] + [k for k in v if k not in props]
        extra = schema.get("additionalProperties", {})
        return {k: reorder(v[k], props.get(k, extra), root) for k in keys}
    if isinstance(v, list):
        prefix = schema.get("prefixItems") or (schema.get("items") if isinstance(schema.get("items"), list) else [])
        rest = schema.get("items") if isinstance(schema.get("items"), dict) else schema.get("additionalItems", {})
        return [reorder(x, prefix[i] if i < len(prefix) else rest, root) for i, x in enumerate(v)]
    return v


class _Duplicate(Exception):
    pass


def _no_duplicates(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _Duplicate()
    return d


# ------------------------------------------------------------ IR-level tests


def test_grammar_shape_and_terminal_reuse() -> None:
    g = parse_json_schema({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}})
    assert g.syntax == "json_schema" and g.start == "root" and g.end_mode == "eos"
    names = [r.name for r in g.rules]
    assert names[0] == "root" and len(names) == len(set(names))
    bodies = {r.name: r.body for r in g.rules}
    terms: list[ir.Terminal] = []
    refs: set[str] = set()
    stack: list[Any] = list(bodies.values())
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Terminal):
            terms.append(e)
        elif isinstance(e, ir.Ref):
            refs.add(e.name)
        elif isinstance(e, ir.Sequence):
            stack.extend(e.items)
        elif isinstance(e, ir.Choice):
            stack.extend(e.alternatives)
        elif isinstance(e, ir.Repetition):
            stack.append(e.item)
    assert refs <= set(bodies)
    # the two string properties share one terminal object
    strings = [t for t in terms if t.name == "string"]
    assert len(strings) >= 2 and all(t is strings[0] for t in strings)
    # json_object and the syntax dispatcher
    assert parse_grammar({"type": "object"}, "json_object") == parse_json_schema({"type": "object"})
    assert parse_grammar('{"type": "integer"}', "json_schema") == parse_json_schema({"type": "integer"})


def _terminals(g: ir.Grammar) -> list[ir.Terminal]:
    out: list[ir.Terminal] = []
    stack: list[Any] = [r.body for r in g.rules]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Terminal):
            out.append(e)
        else:
            stack.extend(ir.children(e))
    return out


def test_terminals_are_shared_across_schemas() -> None:
    """The pieces every schema uses are the same ``ir.Terminal`` objects in every grammar of the process
    (so the DFA and token-row caches hit): strings, numbers, literals, punctuation, keys, counted strings."""
    one = parse_json_schema({"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"},
                                                              "code": {"type": "string", "minLength": 4, "maxLength": 30}}})
    two = parse_json_schema({"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": ["string", "null"]}, "id": {"type": "string", "minLength": 57, "maxLength": 57},
        "ok": {"type": "boolean"}, "n": {"type": "integer"}}}})
    firsts: dict[Any, ir.Terminal] = {}
    shared = 0
    for t in _terminals(one) + _terminals(two):
        if t in firsts:
            assert t is firsts[t], t.name  # equal languages are one object
            shared += 1
        firsts.setdefault(t, t)
    names = {t.name for t in firsts}
    assert {"string", "integer", "key", "colon", "comma", "lbrace", "rbrace", "string_chunk", "string_tail"} <= names
    keys = [t for t in firsts if t.name == "key"]
    assert ir.Terminal(ir.Literal(b'"name"')) in keys  # a declared key is a literal terminal of its own
    assert shared >= 8
    # counted strings never make a terminal longer than one chunk, whatever the bounds
    from kbnf_gpu.frontends.json_schema._long_strings import STRING_CHUNK

    for lo, hi in ((4, 30), (57, 57), (0, 5000), (100, None), (3, 3)):
        g = parse_json_schema({"type": "string", "minLength": lo, **({"maxLength": hi} if hi is not None else {})})
        for t in _terminals(g):
            if isinstance(t.expr, ir.Repeat) or (isinstance(t.expr, ir.Concat) and any(
                    isinstance(p, ir.Repeat) and p.item == CHAR for p in t.expr.parts)):
                reps = [p for p in ([t.expr] if isinstance(t.expr, ir.Repeat) else t.expr.parts) if isinstance(p, ir.Repeat)]
                assert all(r.min <= STRING_CHUNK and (r.max is None or r.max <= STRING_CHUNK) for r in reps), (lo, hi)


def test_whitespace_modes_ir() -> None:
    def terminal_text(g: ir.Grammar) -> set[int]:
        cps: set[int] = set()
        stack: list[Any] = [r.body for r in g.rules]
        while stack:
            e = stack.pop()
            if isinstance(e, ir.Terminal):
                stack.append(e.expr)
            elif isinstance(e, ir.Literal):
                cps |= set(e.value)
            elif isinstance(e, ir.Sequence):
                stack.extend(e.items)
            elif isinstance(e, ir.Choice):
                stack.extend(e.alternatives)
            elif isinstance(e, (ir.Repetition,)):
                stack.append(e.item)
            elif isinstance(e, ir.Concat):
                stack.extend(e.parts)
            elif isinstance(e, ir.Alternation):
                stack.extend(e.options)
            elif isinstance(e, ir.Repeat):
                stack.append(e.item)
        return cps

    sch = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
    assert not terminal_text(parse_json_schema(sch, whitespace="compact")) & set(b" \n")
    assert b"\n  "[0] in terminal_text(parse_json_schema(sch, indent=2))
    with pytest.raises(GrammarError):
        parse_json_schema(sch, whitespace="pretty")
    with pytest.raises(GrammarError):
        parse_json_schema(sch, indent=-1)


@pytest.mark.parametrize(
    "lo,hi",
    [(-5, 1234567), (None, 5), (-123, None), (None, None), (0, 0), (-1, 1), (456, None), (None, -9999), (15, 300), (1, 900719925474091)],
)
def test_integer_ranges_exact(lo: int | None, hi: int | None) -> None:
    r = rx(integer_range(lo, hi))
    rnd = random.Random(1)
    for n in list(range(-2000, 2000)) + [rnd.randint(-(10**16), 10**16) for _ in range(500)] + [lo or 0, hi or 0]:
        assert bool(r.fullmatch(str(n))) == ((lo is None or n >= lo) and (hi is None or n <= hi)), n
    for s in ["-0", "01", "00", "-01", "", "+1", "1.0"]:
        assert not r.fullmatch(s)


def test_decimal_ranges_sound_and_complete_within_the_exponent_window() -> None:
    rnd = random.Random(2)
    bounds = [Decimal(x) for x in ["0", "1.5", "-1.5", "3.25", "0.05", "-0.05", "12", "-12", "100.001"]]

    def gen() -> str:
        s = rnd.choice(["", "-"]) + rnd.choice(["0", str(rnd.randint(1, 9)), str(rnd.randint(10, 300))])
        if rnd.random() < 0.7:
            s += "." + "".join(rnd.choice("0123456789") for _ in range(rnd.randint(1, 5)))
        if rnd.random() < 0.3:
            s += rnd.choice("eE") + rnd.choice(["", "+", "-"]) + str(rnd.choice([0, 1, 5, 307, 308, 400]))
        return s

    for _ in range(200):
        lo, hi = rnd.choice(bounds + [None]), rnd.choice(bounds + [None])
        le, he = rnd.random() < 0.5, rnd.random() < 0.5
        e = decimal_range(lo, le, hi, he)
        r = rx(e) if e is not None else None
        for _ in range(100):
            s = gen()
            v = Decimal(s)
            fv = float(s)  # soundness in float semantics too (underflow, overflow)
            ok = (lo is None or (v > lo if le else v >= lo)) and (hi is None or (v < hi if he else v <= hi))
            fok = (lo is None or (fv > float(lo) if le else fv >= float(lo))) and (
                hi is None or (fv < float(hi) if he else fv <= float(hi))
            )
            got = bool(r and r.fullmatch(s))
            exponent = int(s.lower().split("e")[1]) if "e" in s.lower() else 0
            if got:
                assert ok and fok, (lo, le, hi, he, s)
            elif ok and abs(exponent) <= 10:  # plain decimals and exponents -10..10 are complete (-0 too)
                raise AssertionError(("spelling missing", lo, le, hi, he, s))


def test_multiple_of_regex() -> None:
    for k in (1, 2, 3, 7, 10, 12, 25):
        r = rx(multiple_of_regex(k))
        for n in range(-300, 300):
            assert bool(r.fullmatch(str(n))) == (n % k == 0), (k, n)
        assert not r.fullmatch("-0") and not r.fullmatch("00")


def test_encode_does_not_recurse_into_deep_expressions() -> None:
    """``encode`` walks an expression without recursion: a counter's optional tail written as a regular
    expression nests as deep as its count (CloudFormation's ``[a-zA-Z0-9-._]{0,299}``: a ``RecursionError``);
    600 deep here, and the lexeme is the counter's."""
    from kbnf_gpu.frontends.json_schema import _charset as cs
    from kbnf_gpu.frontends.json_schema._rx import EPS, cc, lit, seq

    deep = EPS
    for _ in range(600):
        deep = rep(seq(cc(cs.of_chars("ab")), deep), 0, 1)
    dfa = build_dfa(ir.Terminal(quoted(encode(seq(lit("x"), deep)))))
    for n in (0, 1, 599, 600, 601):
        assert dfa.matches(('"x' + "ab"[n % 2] * n + '"').encode()) == (n <= 600), n
    assert not dfa.matches(b'"xc"') and not dfa.matches(b'"x\\u0061"')


def test_string_units_count_code_points() -> None:
    r2 = rx(quoted(rep(CHAR, 2, 2)))
    rnd = random.Random(3)
    pool = ["a", "é", "😀", "\n", '"', "\\", "\u2028", "\x7f", "\uffff", "\U0010ffff", "/"]
    for _ in range(2000):
        s = "".join(rnd.choice(pool) for _ in range(rnd.randint(0, 4)))
        enc = json.dumps(s, ensure_ascii=rnd.random() < 0.5)
        assert bool(r2.fullmatch(enc)) == (len(s) == 2), enc
    for bad in ['"\\uD83D"', '"\\x"', '"\n"', '"""', '"\\uDE00\\uD83D"']:
        assert not rx(quoted(rep(CHAR, 0, None))).fullmatch(bad)
    r = rx(quoted(encode_text("é/😀")))
    assert r.fullmatch(json.dumps("é/😀")) and r.fullmatch(json.dumps("é/😀", ensure_ascii=False))
    assert r.fullmatch('"\\u00E9/\\uD83D\\uDE00"')
    for needless in ('"\\u00E9\\/\\uD83D\\uDE00"', '"\\u00e9\\u002f\\ud83d\\ude00"'):
        assert not r.fullmatch(needless)


def _json_spellings(cp: int) -> set[str]:
    """Every JSON spelling of one code point: raw where JSON allows it, a short escape, ``\\uXXXX`` in either
    case (a surrogate pair above U+FFFF, each half in either case)."""
    out = {"\\u%04x" % cp, "\\u%04X" % cp} if cp <= 0xFFFF else set()
    if cp > 0xFFFF:
        high, low = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
        out = {f"\\u{h}\\u{lo}" for h in ("%04x" % high, "%04X" % high) for lo in ("%04x" % low, "%04X" % low)}
    if cp >= 0x20 and chr(cp) not in '"\\':
        out.add(chr(cp))
    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if chr(cp) in short:
        out.add(short[chr(cp)])
    return out


def _spellings(cp: int) -> set[str]:
    """The spellings a schema's strings allow for one code point (``_strings``): its JSON spellings but the
    needless escapes of printable ASCII (``\\u0061``, ``\\/``), which no serializer writes; so each of
    ``json.dumps``'s, with ``ensure_ascii`` on and off."""
    if 0x20 <= cp < 0x7F:
        return {json.dumps(chr(cp))[1:-1]}
    return _json_spellings(cp)


def test_spellings_are_json_dumps_ones_and_escapes_past_printable_ascii() -> None:
    """The oracle itself: each code point's spellings hold ``json.dumps``'s (both ``ensure_ascii`` settings) and
    decode to it; printable ASCII has exactly one, every other code point every JSON spelling."""
    for cp in [*range(0x200), 0x2028, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF]:
        spelled = _spellings(cp)
        assert {json.dumps(chr(cp))[1:-1], json.dumps(chr(cp), ensure_ascii=False)[1:-1]} <= spelled
        assert all(json.loads(f'"{text}"') == chr(cp) for text in spelled)
        assert len(spelled) == 1 if 0x20 <= cp < 0x7F else spelled == _json_spellings(cp)


_NEAR_SURROGATES = st.one_of(st.integers(0, 0x10FFFF), st.integers(0xD7F0, 0xE010), st.integers(0, 64))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_NEAR_SURROGATES, st.sampled_from([0, 1, 7, 0x800, 0x10000, 0x10FFFF])), max_size=8))
def test_norm_is_sorted_merged_ranges_without_surrogates(ranges) -> None:
    """``norm`` (the surrogates cut by bisection from the ranges that overlap them) is the code points of the
    ranges, minus U+D800..U+DFFF, as sorted, disjoint, non-adjacent ranges; a tuple (memoized) and a
    generator give the same."""
    from kbnf_gpu.automata import charset as _base
    from kbnf_gpu.frontends.json_schema import _charset as cs

    ranges = [(a, min(a + n, cs.MAX_CP)) for a, n in ranges]
    points = set()
    for a, b in ranges:
        points.update(range(a, min(b, 0xDFFF + 2) + 1))  # the code points near the surrogates, exactly
    got = cs.norm(r for r in ranges)
    assert got == cs.norm(tuple(ranges))
    assert all(a <= b for a, b in got) and all(b + 1 < c for (_, b), (c, _) in zip(got, got[1:]))
    covered = {c for a, b in got for c in range(a, min(b, 0xDFFF + 2) + 1)}
    assert covered == points - set(range(0xD800, 0xE000))
    assert got == _base.difference(_base.normalize(ranges), cs.SURROGATES)  # the definition, range by range


def test_class_memo_holds_each_class_once() -> None:
    """``norm`` and ``union`` of tuples are memoized: a second call is the same object, equal to what a
    generator of the same ranges gives (the memos' bounds: ``test_front_end_memos_stay_bounded...``)."""
    from kbnf_gpu.frontends.json_schema import _charset as cs

    for k in range(5):
        big = tuple((i * 4 + k, i * 4 + 1 + k) for i in range(150 + k))
        assert cs.norm(big) == cs.norm(list(big)) and cs.norm(big) is cs.norm(big)
        assert cs.union(big, ((k, k),)) == cs.norm([*big, (k, k)])
        assert cs.union(big, ((k, k),)) is cs.union(big, ((k, k),))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(_NEAR_SURROGATES, st.sampled_from([0, 1, 3, 50, 0x800])), max_size=5), max_size=6),
       st.booleans())
def test_alphabet_partitions_code_points_by_the_labels_that_hold_them(label_ranges, repeat) -> None:
    """``_fsm.alphabet``: its symbols are disjoint, cover every scalar value, and each is the code points held
    by exactly the same labels, its pieces listed in order of their first code point; each label is the
    union of its symbols (a label given twice once)."""
    from kbnf_gpu.frontends.json_schema import _charset as cs
    from kbnf_gpu.frontends.json_schema._fsm import alphabet

    labels = [cs.norm(rs) for rs in label_ranges] + ([cs.norm(label_ranges[0])] if repeat and label_ranges else [])
    symbols, of_label = alphabet(labels)
    assert set(of_label) == set(labels)
    assert cs.union(*symbols) == cs.ANY
    for i, a in enumerate(symbols):
        assert a and all(not cs.intersect(a, b) for b in symbols[i + 1:])
    assert [a[0][0] for a in symbols] == sorted(a[0][0] for a in symbols)
    for lab, ids in of_label.items():
        assert ids == sorted(ids) and cs.union(*(symbols[k] for k in ids)) == lab
    probes = {c for a in symbols for lo, hi in a for c in (lo, hi, (lo + hi) // 2)}
    for a in symbols:
        held = {tuple(cs.contains(lab, c) for lab in of_label) for lo, hi in a for c in (lo, hi) if c in probes}
        assert len(held) == 1  # one symbol, one set of labels
    assert len({tuple(cs.contains(lab, a[0][0]) for lab in of_label) for a in symbols}) == len(symbols)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 0x10FFFF), st.integers(0, 2000)), min_size=1, max_size=6), st.data())
def test_class_spellings_are_every_json_spelling_of_its_code_points(starts, data) -> None:
    """``unit(ranges)``, the spellings of one code point of a class (its ``\\u`` escapes a trie of hex digits,
    astral ones a high surrogate's run then its low trie), against every spelling of code points drawn inside,
    beside and outside the class: accepted exactly when the code point is in it."""
    from kbnf_gpu.frontends.json_schema import _charset as cs
    from kbnf_gpu.frontends.json_schema._strings import unit

    ranges = cs.norm((a, min(a + n, 0x10FFFF)) for a, n in starts)
    assume(ranges)
    r = rx(unit(ranges))
    edges = [c for a, b in ranges for c in (a - 1, a, b, b + 1, (a + b) // 2)]
    probes = edges + data.draw(st.lists(st.integers(0, 0x10FFFF), max_size=8))
    for cp in probes:
        if not 0 <= cp <= 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
            continue
        inside = cs.contains(ranges, cp)
        for text in _spellings(cp):
            assert bool(r.fullmatch(text)) == inside, (ranges, hex(cp), text)


PATTERNS = [
    r"^[a-zA-Z0-9_-]*$", r"^abc?d*efg+(hij)?kl$", r"^A|B|C|D$", r"ab", r"a$", r"(^a|b$)c?", r"x{2}", r"[^a-c]+$",
    r"\d\w\s", r"\D\W\S", r"[^\d\s]", r"^$", r"a?^b", r"a$b?", r"^(\([0-9]{1,3}\))?[0-9]{3}-[0-9]{4}$", r"a{", r"[\]-]",
    # lookarounds by automaton: the approximations swap inside negated ones
    r"^(?:(?!\d).)*$", r"(?<=\w)\s", r"(?<!\.)$", r"^(?:(?=\w)[^_])+$", r"a(?:(?!.*\d)|$)", r"(?<![\s\d])x$",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pattern_under_and_over_approximations(pattern: str) -> None:
    """``under`` implies a Python match (and ECMA), ``over`` is implied by one."""
    rnd = random.Random(4)
    alpha = "abcdxyzABD01 -_\n\"$.é٣\u2028()"
    py = re.compile(pattern)
    under, over = rx(pattern_language(pattern)), rx(pattern_language(pattern, over=True))
    for _ in range(1500):
        s = "".join(rnd.choice(alpha) for _ in range(rnd.randint(0, 7)))
        truth = py.search(s) is not None
        assert not under.fullmatch(s) or truth, s
        assert over.fullmatch(s) or not truth, s


@pytest.mark.parametrize("bad", [r"(?<=a(?=b))c", r"(?<!a$)b", r"\1", r"a*+", r"(?<=\bx)", r"(?i)a", r"x{,3}", r"\p{Script=Latin}", r"\pL", "(a", "a)"])
def test_pattern_unsupported(bad: str) -> None:
    with pytest.raises(PatternError):
        pattern_language(bad)


def test_formats_against_checker() -> None:
    rnd = random.Random(5)
    samples: dict[str, list[str]] = {
        "date": [f"{rnd.randint(0, 9999):04d}-{rnd.randint(0, 13):02d}-{rnd.randint(0, 32):02d}" for _ in range(3000)]
        + ["2000-02-29", "1900-02-29", "2004-02-29", "0000-01-01"],
        "ipv4": [".".join(str(rnd.choice([0, 1, 9, 10, 99, 100, 199, 200, 255, 256])) for _ in range(4)) for _ in range(500)]
        + ["01.1.1.1", "1.1.1"],
        "time": [
            f"{rnd.randint(0, 25):02d}:{rnd.randint(0, 61):02d}:{rnd.randint(0, 61):02d}"
            + rnd.choice(["", ".5"]) + rnd.choice(["Z", "z", "+05:30", "-24:00", ""])
            for _ in range(1000)
        ],
        "uuid": ["12345678-1234-1234-1234-1234567890ab", "ABCDEF01-ABCD-ABCD-ABCD-ABCDEF012345", "not-a-uuid", "12345678123412341234123456789abc"],
        "ipv6": ["::", "::1", "1::", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "1:2:3:4:5:6:1.2.3.4", "1::2:3:4:5:6:7",
                 "1:2:3:4:5:6:7:8:9", "1:::2", "12345::", "fe80::1%eth0", "::1.2.3"],
        "date-time": ["2012-04-23T18:25:43.511Z", "2012-04-23t18:25:43z", "2012-04-23 18:25:43Z", "2012-02-30T00:00:00Z", "2020-01-31T00:00:00+01:00"],
    }
    for _ in range(2000):
        parts = [("%x" % rnd.randint(0, 0xFFFFF))[: rnd.randint(1, 5)] for _ in range(rnd.randint(1, 9))]
        s = ":".join(parts)
        if rnd.random() < 0.5:
            i = rnd.randint(0, len(s))
            s = s[:i] + "::" + s[i:]
        samples["ipv6"].append(s)
    samples["relative-json-pointer"] = ["".join(rnd.choice("019/#~a") for _ in range(rnd.randint(0, 5)))
                                        for _ in range(2000)]
    for fmt, texts in samples.items():
        r = rx(format_language(fmt))
        for s in texts:
            assert bool(r.fullmatch(s)) == FORMAT_CHECKER.conforms(s, fmt), (fmt, s)
    examples = {
        "duration": (["P1Y", "P1Y2M3DT4H5M6S", "PT5M", "P3W", "P1D"], ["P1Y2D", "PT", "P", "P1DT", "1Y"]),
        "email": (["a@b.co", "a.b+c@d-e.f"], ["@b", ".a@b", "a@b..c", "a@-b", "ab"]),
        "idn-email": (["a@b.co", "jörg@müller.de", "用户@例子.广告"], ["@b", ".a@b", "a@b..c", "ab", "a b@c"]),
        "hostname": (["example.com", "a", "xn--h2brj9c8c.in"], ["-a.com", "a..b", "a_b", "a" * 64]),
        "uri": (["http://example.com/a?b#c", "urn:isbn:123", "mailto:a@b.c", "a:"], ["http://a b", "//a", "1a:b", "http://[::1]/"]),
        "json-pointer": (["", "/a/b", "/~0~1"], ["a", "/~2"]),
        "uri-reference": (["", "/a", "../a?b#c", "//h:8/p", "a:b", "#f", "%41"], ["a b", "%zz", ":a", "//[::1]"]),
        "iri": (["http://é.com/ü?q#f", "urn:x"], ["/a", "é:x", "a b"]),
        "iri-reference": (["../ü", "http://é.com/", "?\ue000"], ["a b", "#\ue000"]),
        "uri-template": (["", "a{x}b", "{+x,y:3}", "{#a.b*}", "/p{?q,r}"], ["{", "{}", "{x", "a b", "{x:0}", "%zz"]),
        "relative-json-pointer": (["0", "0#", "12/a/~0", "3", "10#"], ["", "01", "#", "1#/a", "-1"]),
        "byte": (["", "YQ==", "YWI=", "YWJj", "+/9z", "AAAAYQ=="], ["Y", "YQ", "YQ=", "a=b=", "Y===", "YQ==YQ=="]),
    }
    r = rx(format_language("byte"))  # OpenAPI base64: whatever b64decode(validate=True) takes, padded
    for s in ("".join(rnd.choice("AZaz09+/=-") for _ in range(rnd.randint(0, 9))) for _ in range(3000)):
        try:
            ok = len(s) % 4 == 0 and base64.b64decode(s, validate=True) is not None
        except ValueError:
            ok = False
        assert bool(r.fullmatch(s)) == ok, s
    for fmt, (good, bad) in examples.items():
        r = rx(format_language(fmt))
        assert all(r.fullmatch(s) for s in good), fmt
        assert not any(r.fullmatch(s) for s in bad), fmt
    assert set(examples) | set(samples) == set(FORMATS)


# -------------------------------------------------------- errors & warnings

UNSUPPORTED_CASES = [
    ({"properties": {"a": {"not": {"type": "string", "format": "email"}}}}, "/properties/a/not"),
    ({"items": {"if": {"type": "string", "format": "email"}, "then": {}}}, "/items/if"),
    ({"$defs": {"x~/y": {"contains": {"format": "email"}, "maxContains": 2}}, "$ref": "#/$defs/x~0~1y"},
     "/$defs/x~0~1y/contains"),
    ({"type": "array", "unevaluatedItems": False}, "/unevaluatedItems"),
    ({"type": "object", "unevaluatedProperties": {"type": "integer"}}, "/unevaluatedProperties"),
    ({"anyOf": [{"type": "string", "format": "idn-hostname"}]}, "/anyOf/0/format"),
    ({"properties": {"p": {"type": "string", "pattern": "(?<=(?=x)y)z"}}}, "/properties/p/pattern"),
    ({"type": "number", "multipleOf": 0.07}, "/multipleOf"),
    ({"$ref": "other.json#/x"}, "/$ref"),
]


@pytest.mark.parametrize("schema,pointer", UNSUPPORTED_CASES)
def test_unsupported_keyword_errors_and_warnings(schema: Any, pointer: str) -> None:
    with pytest.raises(GrammarError) as err:
        parse_json_schema(schema)
    assert f"'{pointer}'" in str(err.value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = parse_json_schema(schema, strict=False)
    assert isinstance(g, ir.Grammar)
    assert any(issubclass(w.category, JsonSchemaWarning) and pointer in str(w.message) for w in caught)


def test_annotations_and_unknown_keywords_are_ignored() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = parse_json_schema(
            {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://x/y.json", "title": "t",
             "description": "d", "default": 1, "examples": [1], "$comment": "c", "x-vendor": 1, "format": "x-made-up",
             "type": "integer", "then": {}, "deprecated": True, "x-kubernetes-list-type": "atomic", "double": {}}
        )
    assert g == parse_json_schema({"type": "integer"})
    # OpenAPI's formats: integer ranges are bounds, float/double/binary/password annotations
    int32 = {"minimum": -(2**31), "maximum": 2**31 - 1}
    assert parse_json_schema({"type": ["integer", "null"], "format": "int32"}) == parse_json_schema(
        {"type": ["integer", "null"], **int32})
    assert parse_json_schema({"type": "integer", "format": "uint8", "maximum": 300}) == parse_json_schema(
        {"type": "integer", "minimum": 0, "maximum": 255})
    for fmt, kind in (("double", "number"), ("float", "number"), ("binary", "string"), ("password", "string")):
        assert parse_json_schema({"type": kind, "format": fmt}) == parse_json_schema({"type": kind})


def test_unique_items_warns() -> None:
    with pytest.warns(JsonSchemaWarning, match="uniqueItems"):
        parse_json_schema({"type": "array", "uniqueItems": True})


def test_one_of_overlap_warns_only_when_not_disjoint() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_json_schema({"oneOf": [{"type": "string"}, {"type": "integer"}]})
        parse_json_schema({"oneOf": [{"const": 1}, {"enum": [2, 3]}]})
    with pytest.warns(JsonSchemaWarning, match="oneOf"):
        parse_json_schema({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]})


@pytest.mark.parametrize(
    "schema",
    [
        False,
        {"not_a_keyword": 1, "type": "integer", "minimum": 5, "maximum": 2},
        {"type": "object", "required": ["a"], "additionalProperties": False},
        {"enum": []},
        {"type": "string", "const": 1},
        {"allOf": [{"type": "string"}, {"type": "integer"}]},
        {"type": "array", "minItems": 2, "prefixItems": [{}], "items": False},
        {"$ref": "#/$defs/a", "$defs": {"a": False}},
    ],
)
def test_unsatisfiable_root(schema: Any) -> None:
    with pytest.raises(GrammarError, match="unsatisfiable"):
        parse_json_schema(schema)


def test_bad_schemas() -> None:
    for bad in ['{"type": ', "[1]", 3, {"type": "strin"}, {"$ref": "#/nope"}, {"allOf": []}, {"minLength": -1}]:
        with pytest.raises(GrammarError):
            parse_json_schema(bad)


def test_nesting_limit() -> None:
    ok: Any = {"type": "integer"}
    for _ in range(150):
        ok = {"type": "object", "properties": {"a": ok}}
    parse_json_schema(ok)
    deep: Any = {"type": "integer"}
    for _ in range(300):
        deep = {"type": "array", "items": deep}
    with pytest.raises(GrammarError, match="nested"):
        parse_json_schema(deep)


def test_large_enum_and_recursion_build_fast() -> None:
    import time

    t = time.perf_counter()
    parse_json_schema({"enum": ["value_%d" % i for i in range(1000)] + list(range(1000))})
    parse_json_schema({"$defs": {"n": {"type": "object", "properties": {"c": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"})
    assert time.perf_counter() - t < 2.0


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(alphabet="ab\"", min_size=1, max_size=8), max_size=14), st.integers(1, 12))
def test_enum_batches_hold_tries_within_room(texts: list[str], room: int) -> None:
    """Literal enum values go to terminals in batches: each value once, each batch's trie (its texts' distinct
    prefixes) within ``room`` states unless it holds a single value."""
    from kbnf_gpu.frontends.json_schema._builder import _value_batches

    batches = _value_batches([ir.Literal(t.encode()) for t in texts], room, "/enum")
    assert sorted(i for batch in batches for i in batch) == list(range(len(texts)))
    for batch in batches:
        prefixes = {texts[i][:k] for i in batch for k in range(1, len(texts[i]) + 1)}
        assert len(prefixes) <= room or len(batch) == 1, (batch, prefixes)


def test_enum_objects_are_batched_by_their_layout() -> None:
    """Objects as enum values have whitespace between their tokens (up to ``max_whitespace`` each): batches
    count it, so every enum terminal's automaton fits (400 small objects passed ``max_dfa_states`` when
    batches counted their text alone)."""
    grammar = parse_json_schema({"enum": [{"a": i, "b": [i, str(i)]} for i in range(400)]})
    enums = {t for t in _terminals(grammar) if t.name == "enum"}
    assert len(enums) > 1
    assert all(build_dfa(t).n_states <= 10_000 for t in enums)


def test_enum_values_sharing_prefixes_are_one_terminal() -> None:
    """600 values ``"x" * i`` are 180,000 bytes of text but a trie of 1,200 states: one terminal, not the
    ~36 that their lengths summed would cut them into (each with tables the first mask walks)."""
    grammar = parse_json_schema({"anyOf": [{"const": "x" * i} for i in range(600)]})
    enums = list({t for t in _terminals(grammar) if t.name == "enum"})
    assert len(enums) == 1
    dfa = build_dfa(enums[0])
    assert all(dfa.matches(b'"' + b"x" * i + b'"') for i in range(600))
    assert not dfa.matches(b'"' + b"x" * 600 + b'"') and not dfa.matches(b'"xy"')


@given(st.text(alphabet="a\"\\\n\u00e9\u4e2d\U0001f600\x7f", max_size=6))
def test_canonical_text_spells_a_string_as_json_does(text: str) -> None:
    """A string value's body: ASCII as ``json.dumps`` writes it (DEL escaped), each code point above it raw or
    escaped."""
    from kbnf_gpu.automata.build import regexpr_to_dfa
    from kbnf_gpu.frontends.json_schema._layout import canonical_text

    dfa = regexpr_to_dfa(canonical_text(text))
    assert dfa.matches(json.dumps(text)[1:-1].encode())
    assert dfa.matches(json.dumps(text, ensure_ascii=False)[1:-1].encode()) == ("\x7f" not in text)
    body = json.dumps(text)[1:-1]
    if "a" in body:  # another spelling of an ASCII character (its \u escape) is not the canonical one
        assert not dfa.matches(body.replace("a", "\\u0061", 1).encode())


# ------------------------------------------------------------------ corpus


def _corpus_cases() -> list[dict]:
    return corpus_cases("json_schema")


# Valid texts the grammar rejects by design: "-0" is not generated for integers;
# "not-a-uuid" is valid only because draft 7 has no "uuid" format, which we check anyway.
DOCUMENTED_GAPS = {"-0", '["2012-04-23", "not-a-uuid", "18:25:43.511Z", "2012-04-23T18:25:43.511Z"]'}


@needs_check
@pytest.mark.parametrize("case", _corpus_cases(), ids=lambda c: c["id"])
def test_corpus(case: dict) -> None:
    """Accept strings are complete (schema order, else any_order); reject strings never are.

    Corpus strings use arbitrary whitespace: flexible mode with max_whitespace=64.
    Disputed strings are checked against jsonschema's verdict where we claim exactness.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JsonSchemaWarning)
        ordered = Checker(case["grammar"], max_whitespace=64)
        free = Checker(case["grammar"], max_whitespace=64, any_order=True)
    for s in case["accept"]:
        assert ordered.complete(s) or free.complete(s), s
    for s in case["reject"]:
        assert not ordered.complete(s) and not free.complete(s), s
    for s in case.get("prefix_ok", []):
        assert ordered.status(s) == "prefix" or free.status(s) == "prefix", s
    for d in case.get("disputed_strings", []):
        verdict = d["verdicts"].get("jsonschema")
        if verdict == "reject":
            assert not free.complete(d["s"]), d["s"]
        elif verdict == "accept" and d["s"] not in DOCUMENTED_GAPS:
            assert ordered.complete(d["s"]) or free.complete(d["s"]), d["s"]


# -------------------------------------------------------- schema catalogue


def _tree(rnd: random.Random, depth: int = 0) -> dict:
    node: dict = {"value": rnd.randint(-50, 50)}
    if depth < 4 and rnd.random() < 0.7:
        node["children"] = [_tree(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return node


def _nested_list(rnd: random.Random) -> Any:
    v: Any = rnd.randint(-9, 9)
    for _ in range(rnd.randint(0, 6)):
        v = [v] * rnd.randint(1, 2) if rnd.random() < 0.8 else []
    return v


def _linked(rnd: random.Random) -> Any:
    v: Any = None
    for _ in range(rnd.randint(0, 30)):
        v = {"head": rnd.choice(["a", "bc", "", "é"]), "tail": v}
    return v


def _shuffled(rnd: random.Random) -> dict:
    keys = [k for k in "abcde" if k in "ac" or rnd.random() < 0.5]
    rnd.shuffle(keys)
    return {k: rnd.randint(-9, 9) for k in keys}


def _deep(rnd: random.Random) -> Any:
    v: Any = rnd.randint(-(10**6), 10**6)
    for _ in range(50):
        v = {"n": v}
    return v


DEEP: Any = {"type": "integer"}
for _ in range(50):
    DEEP = {"type": "object", "properties": {"n": DEEP}, "required": ["n"], "additionalProperties": False}
DEEP_BAD: Any = 1
for _ in range(49):
    DEEP_BAD = {"n": DEEP_BAD}

FORMAT_VALUES = {
    "date": ["2012-04-23", "2000-02-29", "1999-12-31"],
    "time": ["18:25:43.511Z", "23:59:59+05:30", "00:00:00z"],
    "date-time": ["2012-04-23T18:25:43.511Z", "2020-01-31t00:00:00-01:00"],
    "duration": ["P1Y2M3DT4H5M6S", "PT5M", "P3W"],
    "email": ["a.b@example.com", "x+y@d-e.org"],
    "uuid": ["12345678-1234-1234-1234-1234567890ab", "ABCDEF01-ABCD-ABCD-ABCD-ABCDEF012345"],
    "uri": ["https://example.com/a/b?c=d#e", "urn:isbn:0451450523", "file:///tmp/x"],
    "ipv4": ["192.168.0.1", "255.255.255.255", "0.0.0.0"],
    "ipv6": ["::1", "2001:db8::8a2e:370:7334", "::ffff:10.0.0.1"],
    "hostname": ["example.com", "a-b.c-d.e", "localhost"],
}


def _formats(rnd: random.Random) -> dict:
    return {f: rnd.choice(v) for f, v in FORMAT_VALUES.items() if rnd.random() < 0.7}


# (id, schema, options, invalid values, generator of valid values or None for hypothesis)
Gen = Callable[[random.Random], Any]
SCHEMAS: list[tuple[str, Any, dict, list, Gen | None]] = []


def case(id: str, schema: Any, invalid: list = (), gen: Gen | None = None, **opts: Any) -> None:  # type: ignore[assignment]
    SCHEMAS.append((id, schema, opts, list(invalid), gen))


case("string", {"type": "string"}, [1, None, ["a"]])
case("number", {"type": "number"}, ["1", True, None])
case("integer", {"type": "integer"}, [1.5, "1", True])
case("boolean", {"type": "boolean"}, [0, "true", None])
case("null", {"type": "null"}, [0, False, ""])
case("type-list", {"type": ["string", "null", "integer"]}, [1.5, True, [], {}])
case("int-range", {"type": "integer", "minimum": -5, "maximum": 1234567}, [-6, 1234568, 10**7, -100])
case("int-min", {"type": "integer", "minimum": 456}, [455, 0, -456, 45])
case("int-exclusive-max", {"type": "integer", "exclusiveMaximum": -10}, [-10, -9, 0, 10])
case("int-float-bounds", {"type": "integer", "minimum": 0.5, "maximum": 10.5}, [0, 11, -1])
case("number-range", {"type": "number", "minimum": 1.5, "exclusiveMaximum": 3.25}, [1.49, 3.25, 3.3, 0, -2])
case("number-min0", {"type": "number", "minimum": 0}, [-0.5, -1, -1e5])
case("number-exclusive-min0", {"type": "number", "exclusiveMinimum": 0}, [0, -1, -0.001, 0.0])
case("number-max-negative", {"type": "number", "maximum": -2.5}, [-2.4, 0, 3])
case("multiple-of-enumerated", {"type": "integer", "multipleOf": 7, "minimum": -100, "maximum": 100}, [1, 6, 101, 105, -101])
case("multiple-of-unbounded", {"type": "integer", "multipleOf": 3, "minimum": 10}, [9, 11, 13, 0])
case("string-length", {"type": "string", "minLength": 2, "maxLength": 5}, ["", "a", "abcdef", "éééééé"])
case("string-long-max", {"type": "string", "maxLength": 100}, ["x" * 101, "é" * 101])
case("string-long-min", {"type": "string", "minLength": 40}, ["x" * 39, ""])
case("pattern-anchored", {"type": "string", "pattern": "^[a-z]+[0-9]{2}$"}, ["ab1", "Ab12", "ab123", "12"])
case("pattern-search-length", {"type": "string", "pattern": "ab", "maxLength": 6}, ["a", "abcdefg", "xxxxx"])
case("pattern-alternation", {"type": "string", "pattern": "^A|B|C|D$"}, ["E", "Dx", "xA"])
case("pattern-threaded", {"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "minLength": 5, "maxLength": 64},
     ["abcd", "a-" * 32 + "a", "a--bc", "-abcd"], lambda r: "-".join("xyz"[: r.randint(1, 3)] * r.randint(1, 4) for _ in range(r.randint(2, 8)))[:64].strip("-"))
case("email-max-length", {"type": "string", "format": "email", "maxLength": 40}, ["x" * 40 + "@b.co", "nope"],
     lambda r: "u%d@%s.example" % (r.randint(0, 10**6), "d" * r.randint(1, 20)))
case("pattern-counting-far", {"type": "string", "pattern": "^(ab|cd|ef|gh){1,300}$"}, ["", "abc", "ab" * 301],
     lambda r: "".join(r.choice(["ab", "cd", "ef", "gh"]) for _ in range(r.choice([1, 7, 8, 9, r.randint(1, 300)]))))
case("pattern-counting-past-1000", {"type": "string", "pattern": "^[^\\u0000\\r\\n]{3,1500}$"},
     ["ab", "a" * 1501, "ab\ncd", "abc\u0000"],
     lambda r: "".join(r.choice("aé/\\\"\u2028 ") for _ in range(r.choice([3, 1500, r.randint(3, 1500)]))))
case("pattern-unanchored-counts", {"type": "string", "pattern": "^a.{1,2048}"}, ["a", "ba", ""],
     lambda r: "a" + "".join(r.choice("xé/ ") for _ in range(r.choice([1, 3000, r.randint(1, 40)]))))
case("pattern-min-length", {"type": "string", "pattern": "ab", "minLength": 40}, ["ab" + "x" * 37, "x" * 50],
     lambda r: "x" * r.randint(0, 30) + "ab" + "é" * r.randint(38, 60))
case("pattern-untyped", {"pattern": "^[a-z]*$", "minLength": 2}, ["A", "ab1", "a"])
case(
    "formats",
    {"type": "object", "properties": {f: {"type": "string", "format": f} for f in FORMAT_VALUES}, "additionalProperties": False},
    [{"date": "2023-02-29"}, {"time": "25:00:00Z"}, {"ipv4": "256.1.1.1"}, {"uuid": "xyz"},
     {"date-time": "2020-01-01 00:00:00Z"}, {"ipv6": "1:2"}, {"time": "12:00:00"}],
    _formats,
)
case("enum-mixed", {"enum": ["red", "amber", None, 42, 1.5, ["foo", {"a": 1}], {"k": [True]}]}, ["blue", 43, [], {"k": [False]}, True])
case("const-object", {"const": {"name": "x", "tags": [1, 2, {"z": None}]}}, [{"name": "x"}, {"name": "x", "tags": [1, 2]}, None])
case("enum-large", {"enum": ["value_%d" % i for i in range(1000)]}, ["value_1000", "value", 1])
case("enum-with-type", {"type": "string", "enum": ["a", 1, "bb", None], "maxLength": 1}, [1, None, "bb"])
case(
    "object-required",
    {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
     "required": ["id", "name"], "additionalProperties": False},
    [{}, {"id": 1}, {"id": 1, "name": "a", "x": 1}, {"id": "1", "name": "a"}, {"id": 1, "name": "a", "tags": [1]}],
)
case("additional-schema", {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
     [{"b": "x"}, {"a": 1}, {"a": "x", "b": 1.5}])
case("pattern-properties-closed",
     {"type": "object", "patternProperties": {"^x-": {"type": "integer"}, "^y": {"type": "string"}}, "additionalProperties": False},
     [{"z": 1}, {"x-a": "s"}, {"yy": 1}])
case("pattern-properties-open", {"type": "object", "properties": {"x-fixed": {"type": "string"}}, "patternProperties": {"^x-": {"type": "integer"}}},
     [{"x-a": "s"}, {"x-fixed": "s"}, {"x-fixed": 1}])
case("property-names", {"type": "object", "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 4}}, [{"A": 1}, {"abcde": 1}, {"a1": 2}])
case("min-max-properties", {"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 2, "maxProperties": 3},
     [{}, {"a": 1}, {"a": 1, "b": 2, "c": 3, "d": 4}])
case("array-min-max", {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4}, [[1], [1, 2, 3, 4, 5], [1, "2"]])
case("prefix-items-closed", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": False},
     [[1], ["a", 1, 2], ["a", "b"]], lambda r: ["s%d" % r.randint(0, 99), r.choice([r.randint(-99, 99), r.random() * 100])][: r.randint(0, 2)])
case("prefix-items-rest", {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "boolean"}, "minItems": 2},
     [["a"], ["a", 1], [True, True]], lambda r: [r.choice(["", "x", "yz"])] + [r.random() < 0.5 for _ in range(r.randint(1, 5))])
case("draft7-items-array",
     {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "integer"}, {"type": "string"}], "additionalItems": {"type": "null"}},
     [["a"], [1, 2], [1, "a", 3]])
case("any-of", {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": 10}]}, ["abcd", 9, None])
case(
    "one-of-discriminated",
    {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}}, "required": ["kind", "r"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "number"}, "h": {"type": "number"}}, "required": ["kind", "w", "h"], "additionalProperties": False},
    ]},
    [{"kind": "circle"}, {"kind": "rect", "r": 1}, {"kind": "tri", "r": 1}, {"kind": "circle", "r": -1}],
    any_order=True,
)
case("all-of-objects",
     {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"properties": {"b": {"type": "string"}, "a": {"minimum": 0}}, "required": ["b"]}]},
     [{"a": 1}, {"b": "x"}, {"a": -1, "b": "x"}, {"a": 1, "b": 2}], any_order=True)
case("all-of-numbers", {"allOf": [{"type": ["number", "string"]}, {"type": ["integer", "null"], "minimum": 3}, {"maximum": 9, "exclusiveMinimum": 4}]},
     [4, 10, 5.5, "5", None])
case("all-of-closed", {"allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": {}}, "additionalProperties": False}], "type": "object"},
     [{"a": 1}, {"c": 1}], any_order=True)
case("ref-defs",
     {"$defs": {"pos": {"type": "integer", "minimum": 1}, "pair": {"type": "array", "prefixItems": [{"$ref": "#/$defs/pos"}, {"$ref": "#/$defs/pos"}], "items": False, "minItems": 2}}, "$ref": "#/$defs/pair"},
     [[0, 1], [1], [1, 2, 3]], lambda r: [r.randint(1, 10**6), r.randint(1, 99)])
case("ref-escaped",
     {"definitions": {"a/b": {"type": "string"}, "c~d": {"type": "integer"}, "e%f": {"type": "boolean"}}, "type": "object",
      "properties": {"x": {"$ref": "#/definitions/a~1b"}, "y": {"$ref": "#/definitions/c~0d"}, "z": {"$ref": "#/definitions/e%25f"}}},
     [{"x": 1}, {"y": "1"}, {"z": 1}])
case("ref-anchor", {"$defs": {"s": {"$anchor": "short", "type": "string", "maxLength": 2}}, "type": "array", "items": {"$ref": "#short"}},
     [["abc"], [1]], lambda r: [r.choice(["", "a", "é", "ab"]) for _ in range(r.randint(0, 4))])
case("recursive-tree",
     {"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}},
                         "required": ["value"], "additionalProperties": False}}, "$ref": "#/$defs/node"},
     [{"value": 1, "children": [{}]}, {"children": []}, {"value": 1, "children": [{"value": "x"}]}], _tree)
case("recursive-root", {"type": ["array", "integer"], "items": {"$ref": "#"}}, [["a"], [1, [2, [None]]], "x"], _nested_list)
case("recursive-list",
     {"$defs": {"list": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"head": {"type": "string"}, "tail": {"$ref": "#/$defs/list"}},
                                                       "required": ["head", "tail"], "additionalProperties": False}]}}, "$ref": "#/$defs/list"},
     [{"head": "a"}, {"head": "a", "tail": {"head": 1, "tail": None}}, 1], _linked)
case("deep-nesting", DEEP, [DEEP_BAD, {"n": None}], _deep)
case("true-schema", True, [])
case("empty-schema", {}, [])
case("any-order",
     {"type": "object", "properties": {k: {"type": "integer"} for k in "abcde"}, "required": ["a", "c"], "additionalProperties": False},
     [{"a": 1}, {"a": 1, "c": 2, "f": 3}, {"a": 1, "c": "2"}], _shuffled, any_order=True)
case("compact",
     {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "number"}}, "b": {"type": "object", "additionalProperties": {"type": "boolean"}}}},
     [{"a": [True]}, {"b": {"x": 1}}], whitespace="compact")
case("indent",
     {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"type": "object"}, "c": {"type": ["string", "null"]}}, "required": ["a"]},
     [{"b": {}}, {"a": ["x"]}], indent=2)
case("anyof-with-siblings",
     {"type": "object", "properties": {"common": {"type": "string"}},
      "anyOf": [{"required": ["x"], "properties": {"x": {"type": "integer"}}}, {"required": ["y"], "properties": {"y": {"type": "boolean"}}}]},
     [{"common": "a"}, {"x": "1"}, {"y": 1}], any_order=True)
case("nested-array-objects",
     {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string", "enum": ["a", "b"]}, "v": {"type": ["number", "null"]}}, "required": ["k"]}, "minItems": 1},
     [[], [{"v": 1}], [{"k": "c"}]])
case("required-undeclared", {"type": "object", "required": ["x"], "patternProperties": {"^x$": {"type": "string"}}}, [{}, {"x": 1}])

def _valid_values(schema: Any, gen: Gen | None, n: int) -> list[Any]:
    if gen is not None:
        rnd = random.Random(7)
        return [gen(rnd) for _ in range(n)]
    from hypothesis_jsonschema import from_schema

    out: list[Any] = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(from_schema(schema))
    def collect(v: Any) -> None:
        out.append(v)

    collect()
    return out


def _mutate(v: Any, rnd: random.Random) -> Any:
    """A random small edit somewhere in a JSON value."""
    if isinstance(v, dict) and v and rnd.random() < 0.7:
        k = rnd.choice(list(v))
        w = dict(v)
        r = rnd.random()
        if r < 0.3:
            del w[k]
        elif r < 0.5:
            w[k + "x"] = w[k]
        else:
            w[k] = _mutate(w[k], rnd)
        return w
    if isinstance(v, list) and v and rnd.random() < 0.7:
        i = rnd.randrange(len(v))
        w = list(v)
        r = rnd.random()
        if r < 0.3:
            del w[i]
        elif r < 0.5:
            w.append(w[i])
        else:
            w[i] = _mutate(w[i], rnd)
        return w
    if isinstance(v, bool):
        return rnd.choice([not v, 1, None])
    if isinstance(v, int):
        return rnd.choice([v + 1, v - 1, -v, v * 10, v + 0.5, str(v)])
    if isinstance(v, float):
        return rnd.choice([v + 1, -v, v * 10, int(v)])
    if isinstance(v, str):
        return rnd.choice([v + "a", v[1:], v.upper(), v + "1", 1])
    return rnd.choice([None, 0, "", [], {}, True])


@needs_check
@pytest.mark.parametrize("entry", SCHEMAS, ids=lambda e: e[0])
def test_schema_language(entry: tuple) -> None:
    """Valid texts complete; invalid and mutated-invalid texts not; sampled texts validate."""
    id, schema, opts, invalid, gen = entry
    if gen is None and not HAVE_HYPOTHESIS_JSONSCHEMA:
        pytest.fail("hypothesis-jsonschema is not installed: the test needs it")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JsonSchemaWarning)
        chk = Checker(schema, **opts)
    v = validator(schema)
    flexible = "indent" not in opts and opts.get("whitespace") != "compact"
    values = [x for x in _valid_values(schema, gen, 25) if v.is_valid(x)]
    if not opts.get("any_order"):
        values = [reorder(x, schema, schema) for x in values]
    rnd = random.Random(11)
    texts = {dumps(x, opts) for x in values}
    if flexible:
        texts |= {dumps(x, opts, rnd=rnd) for x in values}
        for _ in range(40):
            if len(texts) >= 20 or not values:
                break
            texts.add(dumps(rnd.choice(values), opts, rnd=rnd))
    assert values and len(texts) >= 20, (id, len(values), len(texts))
    for t in texts:
        assert chk.complete(t), (id, t)
    for x in invalid:
        if v.is_valid(x):  # a format this environment's checker does not check
            continue
        assert not chk.complete(dumps(x, opts)), (id, x)
    for x in values[:10]:
        for _ in range(5):
            y = _mutate(x, rnd)
            if not v.is_valid(y):
                assert not chk.complete(dumps(y, opts)), (id, y)
    if "uniqueItems" in json.dumps(schema):
        return  # documented as unenforced
    for t in sample_texts(chk.grammar, 80, seed=hash(id) & 0xFFFF):
        try:
            value = json.loads(t, object_pairs_hook=_no_duplicates)
        except _Duplicate:
            continue  # duplicate keys: outside what a grammar can exclude (documented)
        assert v.is_valid(value), (id, t)


# --------------------------------------------------- targeted language tests


@needs_check
def test_flexible_whitespace_bound() -> None:
    chk = Checker({"type": "array", "items": {"type": "integer"}}, max_whitespace=3)
    assert chk.complete("[ 1 ,\t2\n]") and chk.complete("   [1]   ")
    assert not chk.complete("[    1]") and not chk.complete("[1,    2]") and not chk.complete("    [1]")
    assert chk.complete("[   1   ,   2   ]")
    assert Checker({"type": "object"}, max_whitespace=3).complete('{   "a"   :   1   }')


@needs_check
def test_indent_is_exactly_json_dumps() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array"}, "b": {"type": "object"}}}
    value = {"a": [1, [2, {}], {"x": [None, "s"]}], "b": {"k": {"z": []}}}
    for n in (0, 1, 2, 4):
        chk = Checker(schema, indent=n)
        assert chk.complete(json.dumps(value, indent=n))
        assert not chk.complete(json.dumps(value, indent=n + 1))
        assert not chk.complete(json.dumps(value))
    compact = Checker(schema, whitespace="compact")
    assert compact.complete(json.dumps(value, separators=(",", ":")))
    assert not compact.complete(json.dumps(value))


@needs_check
def test_any_order_is_exact_and_rejects_duplicates() -> None:
    import itertools

    keys = "abcd"
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in keys}, "required": ["a", "b"], "additionalProperties": False}
    free = Checker(schema, any_order=True, whitespace="compact")
    ordered = Checker(schema, whitespace="compact")
    for r in range(0, 5):
        for combo in itertools.permutations(keys, r):
            text = "{" + ",".join(f'"{k}":1' for k in combo) + "}"
            valid = {"a", "b"} <= set(combo)
            assert free.complete(text) == valid, text
            assert ordered.complete(text) == (valid and list(combo) == sorted(combo)), text
    assert not free.complete('{"a":1,"b":1,"a":2}')
    assert not free.complete('{"a":1,"b":1,"c":1,"c":1}')


@needs_check
def test_additional_keys_cannot_spell_declared_keys() -> None:
    """Declared keys are matched in their json.dumps spellings only; no other spelling
    of a declared key may slip through as an additional key. Additional keys, as every
    string, never escape printable ASCII needlessly (``_strings``): ``"\\u0062"`` is
    refused as ``"\\u0061"`` is."""
    chk = Checker({"type": "object", "properties": {"a": {"type": "integer"}, "é": {"type": "integer"}},
                   "additionalProperties": {"type": "string"}})
    assert chk.complete('{"a": 1}') and chk.complete('{"b": "x"}') and chk.complete('{"\\u00e8": "x"}')
    assert chk.complete('{"é": 1}') and chk.complete('{"\\u00e9": 1}')
    for bad in ['{"\\u0061": "x"}', '{"a": "x"}', '{"\\u00E9": "x"}', '{"\\u00e9": "x"}', '{"é": "x"}',
                '{"\\u0062": "x"}']:
        assert not chk.complete(bad), bad
    chk = Checker({"type": "object", "properties": {"ab": {"type": "integer"}}, "additionalProperties": {"type": "string"}})
    for good in ['{"a": "x"}', '{"abc": "x"}', '{"\\n": "x"}', '{"a\\u00e9": "x"}', '{"a\\"": "x"}']:
        assert chk.complete(good), good
    for bad in ['{"ab": "x"}', '{"\\u0061b": "x"}', '{"a\\u0062": "x"}', '{"\\u0078": "x"}', '{"a\\u0063": "x"}',
                '{"ac\\u0063": "x"}', '{"x\\u0061b": "x"}', '{"a\\/": "x"}']:
        assert not chk.complete(bad), bad


def test_other_keys_brute_force() -> None:
    """Every key the additional-key language accepts decodes to an undeclared key; every undeclared
    key is accepted as json.dumps writes it (both ``ensure_ascii`` settings), over a small alphabet; checked
    on the key lexeme's byte DFA (the automaton reads UTF-8 lead and continuation bytes in states of their own)."""
    rnd = random.Random(3)
    alphabet = 'ab"\\é\n/😀'

    def matches(dfa, text: str) -> bool:
        q = 0
        for byte in text.encode("utf-8"):
            q = int(dfa.transitions[q][byte])
            if q < 0:
                return False
        return bool(dfa.accepting[q])

    for _ in range(60):
        names = tuple(sorted({"".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 3)))
                              for _ in range(rnd.randint(0, 4))}))
        dfa = build_dfa(ir.Terminal(quoted(other_keys(names))))
        for _ in range(300):
            k = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 4)))
            spelled = "".join(rnd.choice([json.dumps(c)[1:-1], "\\u%04x" % ord(c), "\\u%04X" % ord(c)])
                              if ord(c) < 0x10000 else json.dumps(c)[1:-1] for c in k)
            for text in (json.dumps(k), json.dumps(k, ensure_ascii=False), f'"{spelled}"'):
                if matches(dfa, text):
                    assert json.loads(text) not in names, (names, text)
            if k not in names:
                assert matches(dfa, json.dumps(k, ensure_ascii=False)) and matches(dfa, json.dumps(k)), (names, k)


@needs_check
def test_strings_escapes_and_lengths() -> None:
    chk = Checker({"type": "string", "minLength": 2, "maxLength": 2})
    for ok in ['"ab"', '"\\n\\t"', '"\\u00e9\\u00E9"', '"\\ud83d\\ude00a"', '"😀😀"', '"\\"\\\\"', '"/x"',
               '"\\u007f\\u000A"']:
        assert chk.complete(ok), ok
    for bad in ['"a"', '"abc"', '"\\ud83d"', '"a\nb"', '"\\x41b"', '"\\ud83d\\ude00"', '"\\/x"', '"\\u0041b"',
                '"\\u0022x"']:
        assert not chk.complete(bad), bad
    long = Checker({"type": "string", "minLength": 35, "maxLength": 70})
    for n in range(0, 80):
        assert long.complete(json.dumps("é" * n)) == (35 <= n <= 70), n


@needs_check
@settings(max_examples=30, deadline=None)
@given(lo=st.integers(0, 5), width=st.integers(0, 21), strings=st.booleans())
def test_wide_count_ranges_by_binary_digits_are_exact(lo: int, width: int, strings: bool) -> None:
    """A counted range wider than ``LINEAR_COUNT_RANGE`` is written by its binary digits (``Builder.up_to``):
    with the limit patched down to 1, every count from ``lo`` to ``lo + width`` and no other is accepted, for
    array items and for a long string's chunks of ``STRING_CHUNK`` code points."""
    from kbnf_gpu.frontends.json_schema import _builder

    C = _long_strings.STRING_CHUNK
    if strings:  # counts of whole chunks past the first two (shorter strings are one lexeme)
        schema = {"type": "string", "minLength": (lo + 2) * C, "maxLength": (lo + 2 + width) * C}
        texts = {n: json.dumps("x" * n) for n in range(2 * C, (lo + width + 4) * C + 1, C)}
        texts.update({n - 1: json.dumps("é" * (n - 1)) for n in list(texts)})
        low, high = (lo + 2) * C, (lo + 2 + width) * C
    else:
        schema = {"type": "array", "items": {"type": "integer"}, "minItems": lo, "maxItems": lo + width}
        texts = {n: json.dumps([7] * n) for n in range(0, lo + width + 3)}
        low, high = lo, lo + width
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_builder, "LINEAR_COUNT_RANGE", 1)
        chk = Checker(schema)
    for n, text in sorted(texts.items()):
        assert chk.complete(text) == (low <= n <= high), (schema, n)


@needs_check
def test_unicode_class_pattern_with_length_is_exact() -> None:
    """A class of many ranges (``\\p{L}``: each code point may also be a ``\\uXXXX`` escape of any of them) with
    a length limit: its one-lexeme and 16-code-point chunk automata pass ``max_dfa_states``, so shorter chunks
    serve it exactly (the AWS tag key form). They failed in ``normalize`` with only a rule name."""
    import regex

    schema = {"type": "string", "pattern": "^[\\p{L}\\p{N}_]*$", "minLength": 2, "maxLength": 40}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chk = Checker(schema)
    rnd = random.Random(9)
    for _ in range(300):
        text = "".join(rnd.choice("aé\u0436Z5\u0663_- ") for _ in range(rnd.randint(0, 44)))
        want = regex.fullmatch("[\\p{L}\\p{N}_]*", text) is not None and 2 <= len(text) <= 40
        assert chk.complete(json.dumps(text)) == want, text


def test_unanchored_counts_past_1000_are_exact() -> None:
    """An ARN pattern ending in ``.{1,2048}`` unanchored (once refused: a count past 1,000): ``.*`` after it
    reads all but the count's minimum, so the language is exact with no counter."""
    chk = Checker({"type": "string", "pattern": "arn:(aws|aws-cn):acm:[a-z0-9-]+:[0-9]{12}:cert/.{1,2048}"})
    good = ["arn:aws:acm:eu-1:123456789012:cert/x", "é arn:aws-cn:acm:x:000000000000:cert//" + "y" * 3000]
    bad = ["arn:aws:acm:x:123:cert/y", "arn:aws:acm:x:123456789012:cert/", "arn:aws-us:acm:x:123456789012:cert/y"]
    for text in good + bad:
        want = re.search("arn:(aws|aws-cn):acm:[a-z0-9-]+:[0-9]{12}:cert/.{1,2048}", text) is not None
        assert want == (text in good) and chk.complete(json.dumps(text)) == want, text


def test_java_posix_class_with_length_is_exact() -> None:
    """CloudFormation's ``^[\\p{Graph}\\x20]*$`` (Java's printable ASCII) with a length limit, whole strings
    against Java's reading of the class."""
    chk = Checker({"type": "string", "pattern": "^[\\p{Graph}\\x20]*$", "maxLength": 40})
    rnd = random.Random(3)
    for _ in range(200):
        text = "".join(rnd.choice("a~ \t\u00e9\"\\") for _ in range(rnd.randint(0, 44)))
        want = re.fullmatch("[\x20-\x7e]*", text) is not None and len(text) <= 40
        assert chk.complete(json.dumps(text)) == want, text


def test_keys_too_long_for_one_lexeme_are_left_out_at_their_object() -> None:
    """Mergify's ``propertyNames: {"maxLength": 1024}``: a key lexeme of 1,024 code points passes
    ``max_dfa_states``; the keys are left out with a warning that names the object, not refused later
    with only a terminal's name; the declared members stay."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "propertyNames": {"maxLength": 1024}}
    with pytest.warns(JsonSchemaWarning, match="member keys at '/' are too long or complex for one lexeme"):
        chk = Checker(schema, whitespace="compact")
    assert chk.complete('{"a":1}') and chk.complete("{}") and not chk.complete('{"b":1}')


def test_other_keys_too_many_for_one_lexeme_are_left_out_at_their_object() -> None:
    """Undeclared keys beside names that need escapes at their trie nodes (each such node spells its
    continuations in every escape): past ``max_dfa_states`` the additional members are left out with a warning
    naming the object, not refused later by ``normalize``; the declared members stay, and with room the
    undeclared keys come back."""
    from kbnf_gpu import CompileConfig
    from kbnf_gpu.budget import compile_budget

    rnd = random.Random(5)
    names = sorted({"".join(rnd.choice('ab"é') for _ in range(rnd.randint(2, 4))) for _ in range(10)})
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names},
              "additionalProperties": {"type": "string"}}
    with compile_budget(CompileConfig(max_dfa_states=50)):  # the trie holds half, the automaton does not
        with pytest.warns(JsonSchemaWarning, match=f"member keys at '/' outside the {len(names)} declared names are "
                                                   "too many to describe in one lexeme"):
            chk = Checker(schema, whitespace="compact")
    roomy = Checker(schema, whitespace="compact")
    compact = {"separators": (",", ":")}
    for ok, text in ((True, json.dumps({names[0]: 1}, ensure_ascii=False, **compact)),
                     (True, json.dumps({names[-1]: 2}, **compact)), (False, '{"x":"y"}'),
                     (False, json.dumps({names[0]: "y"}, **compact))):
        assert chk.complete(text) == ok, text
        assert roomy.complete(text) == (ok or text == '{"x":"y"}'), text


_REGEX_FORMAT = None


def _regex_format_checker() -> Checker:
    global _REGEX_FORMAT
    if _REGEX_FORMAT is None:
        _REGEX_FORMAT = Checker({"type": "string", "format": "regex"})
    return _REGEX_FORMAT


REGEXES_BOTH_READ = ["", "a|b|", "^[a-z0-9-]+$", "(?:ab)*?c{2,10}", "\\d{4}-\\d{2}", "[^\\]]", "[-+]?[0-9]*\\.?[0-9]+",
                     "^(?!x-).+$", "a{3}b{3,}c{0,9}d{12,20}", "[\\w.\\-/]+\\b", "\\u00e9|\\x41|\\t", "[a-zA-Z_][a-zA-Z0-9_]*",
                     "(a(b(c)))", "é\\$\\^\\(\\)\\[\\]\\{\\}\\|\\/", "[\\-\\b]", "[^a^]", "[a^]", "[-]", "^\\s*$"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab^$\\.*+?()[]{}|,-0129dxu=!:<>\n", max_size=10))
def test_regex_format_is_what_python_and_ecma_both_read(text: str) -> None:
    """``format: regex`` (a grammar: groups nest): every string it allows compiles with Python's ``re`` (what
    ``jsonschema`` checks it with) and parses as an ECMA-262 pattern (this package's reader); the common
    syntax is allowed, raw and escaped."""
    from kbnf_gpu.frontends.json_schema._pattern import PatternError, parse

    allowed = _regex_format_checker().complete(json.dumps(text))
    respelled = "".join("\\u000A" if c == "\n" else json.dumps(c)[1:-1] for c in text)  # a newline's other escape
    assert allowed == _regex_format_checker().complete(f'"{respelled}"')
    if allowed:
        re.compile(text)
        try:
            parse(text)
        except PatternError as e:
            raise AssertionError(f"{text!r} is no ECMA pattern: {e}") from None


_REGEX_BESIDE: dict = {}
_BESIDE_SCHEMAS = [  # (schema, what the pattern and lengths ask of a text)
    ({"type": "string", "format": "regex", "pattern": "^/.+/$"}, lambda t: re.search("^/.+/$", t)),  # GitLab CI
    ({"type": "string", "format": "regex", "pattern": "a", "minLength": 2, "maxLength": 6},
     lambda t: "a" in t and 2 <= len(t) <= 6),
    ({"type": "string", "format": "regex", "pattern": "^[^()]*$"}, lambda t: "(" not in t and ")" not in t),
]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet="ab/^$\\.*+?()[]{}|,-019", max_size=9),
                 st.text(alphabet="ab/^$\\.*+?()[]{}|,-019", max_size=7).map(lambda s: f"/{s}/")))
def test_regex_format_beside_a_pattern_or_lengths_is_both(text: str) -> None:
    """``format: regex`` beside a pattern or length limits (GitLab CI's ``coverage``: ``^/.+/$``) is the regex
    grammar's product with their automaton: a text is allowed exactly where the regex grammar alone allows it
    and the pattern and lengths do."""
    regex = _regex_format_checker().complete(json.dumps(text))
    for i, (schema, beside) in enumerate(_BESIDE_SCHEMAS):
        if i not in _REGEX_BESIDE:
            _REGEX_BESIDE[i] = Checker(schema)
        assert _REGEX_BESIDE[i].complete(json.dumps(text)) == (regex and bool(beside(text))), (schema, text)


def test_regex_format_beside_a_pattern_or_lengths_every_short_text() -> None:
    """The same, exhaustively: every text of up to 4 characters over the units' first characters."""
    texts = ["".join(t) for k in range(5) for t in itertools.product("a/(|*\\[]", repeat=k)]
    regex = {t: _regex_format_checker().complete(json.dumps(t)) for t in texts}
    assert sum(regex.values()) > 100
    for schema, beside in _BESIDE_SCHEMAS:
        chk = Checker(schema)
        wrong = [t for t in texts if chk.complete(json.dumps(t)) != (regex[t] and bool(beside(t)))]
        assert not wrong, (schema, wrong[:5])


def test_regex_format_beside_a_pattern_serves_gitlab_ci_coverage() -> None:
    """The examples of GitLab CI's ``coverage`` are served, texts that are no regex or miss the slashes not; a
    pattern that no regex can match leaves no string."""
    chk = Checker({"type": "string", "format": "regex", "pattern": "^/.+/$"})
    for good in ["/Code coverage: \\d+\\.\\d+/", "/(\\d+\\.\\d+%) covered/", "/a|b/", "/\\//"]:
        assert chk.complete(json.dumps(good)), good
    for bad in ["Code coverage: \\d+", "/(/", "/a/+", "//", "/a{2,1}/"]:
        assert not chk.complete(json.dumps(bad)), bad
    assert Checker({"type": ["string", "null"], "format": "regex", "pattern": "^[(]$"}).complete("null")
    assert not Checker({"type": ["string", "null"], "format": "regex", "pattern": "^[(]$"}).complete('"("')


def test_regex_format_allows_the_common_syntax() -> None:
    chk = _regex_format_checker()
    for text in REGEXES_BOTH_READ:
        re.compile(text)
        assert chk.complete(json.dumps(text)), text
    for text in ["(", "a{2,1}", "a{,3}", "[]", "[^]", "[z-a]", "\\1", "(?<=a)b", "(?P<n>a)", "\\p{L}", "\\q", "a**",
                 "\\-", "\\01"]:
        assert not chk.complete(json.dumps(text)), text
    with pytest.raises(GrammarError, match="format 'regex' beside this pattern or length is too complex"):
        parse_json_schema({"type": "string", "format": "regex", "maxLength": 100})  # 101 states: too many
    with pytest.raises(GrammarError, match="unsupported format 'regex'"):  # beside another format: not served
        parse_json_schema({"type": "string", "format": "regex", "allOf": [{"format": "email"}]})
    with pytest.raises(GrammarError, match="unsupported format 'regex'"):  # a key beside a $ref: not alone either
        parse_json_schema({"type": "object", "propertyNames": {"format": "regex", "$ref": "#/$defs/short"},
                           "$defs": {"short": {"maxLength": 2}}})


_TREE = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/tree",
         "$dynamicAnchor": "node", "type": "object",
         "properties": {"data": True, "children": {"type": "array", "items": {"$dynamicRef": "#node"}}}}
_STRICT_TREE = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/strict-tree",
                "$dynamicAnchor": "node", "$ref": "tree", "unevaluatedProperties": False}
DYNAMIC_REFS = [
    (_TREE, {}),
    (_STRICT_TREE, {"https://example.com/tree": _TREE}),  # the spec's extensible tree: children strict too
    ({"$defs": {"n": {"$dynamicAnchor": "x", "type": "array", "items": {"$dynamicRef": "#x"}}}, "$ref": "#/$defs/n"}, {}),
    ({"type": "object", "properties": {"a": {"$dynamicRef": "#/$defs/i"}}, "$defs": {"i": {"type": "integer"}}}, {}),
    # enum values checked through the reference (the validator follows it as the grammar does)
    ({"$dynamicAnchor": "n", "type": ["object", "integer"], "maximum": 3, "properties": {"k": {"$dynamicRef": "#n"}},
      "enum": [{"k": 5}, {"k": 1}, {"k": {"k": 9}}, 1, 7]}, {}),
]


@pytest.mark.parametrize("schema,documents", DYNAMIC_REFS, ids=[f"dyn{i}" for i in range(len(DYNAMIC_REFS))])
def test_dynamic_refs_that_the_root_decides(schema: Any, documents: dict) -> None:
    """``$dynamicRef`` where its target does not depend on the evaluation path: the root resource declares
    the anchor (the outermost of every dynamic scope), or the reference is no dynamic anchor (a ``$ref``);
    against ``jsonschema``."""
    import jsonschema
    from referencing import Registry, Resource

    chk = Checker(schema, whitespace="compact", any_order=True, registry=documents)
    registry = Registry().with_resources([(k, Resource.from_contents(v)) for k, v in documents.items()])
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    for text in ['{}', '{"data":1}', '{"children":[]}', '{"children":[{"data":1}]}', '{"children":[{"daat":1}]}',
                 '{"children":[{"children":[{"x":1}]}]}', '[]', '[[]]', '[[1]]', '{"a":1}', '{"a":"s"}', '{"k":5}',
                 '{"k":1}', '{"k":{"k":9}}', '1', '7']:
        assert chk.complete(text) == validator.is_valid(json.loads(text)), text


def test_dynamic_ref_the_path_decides_is_refused_at_its_location() -> None:
    """The 2020-12 metaschema's vocabularies, or a tree reached by ``$ref`` from a root that does not declare
    the anchor: the outermost declaring resource depends on the path, so it is refused where it is written."""
    with pytest.raises(GrammarError, match="'\\$dynamicRef' '#node' lands where the evaluation path decides"):
        parse_json_schema({"$ref": "https://example.com/tree"}, registry={"https://example.com/tree": _TREE})
    with pytest.raises(GrammarError, match="lands where the evaluation path decides"):
        parse_json_schema({"properties": {"s": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}})


@pytest.mark.parametrize("passed", [True, False], ids=["registry", "no-registry"])
def test_the_draft_07_metaschema(passed: bool) -> None:
    """A property that holds a schema (``$ref`` to draft 7's metaschema: ``jsonschema``'s own registry passed,
    or none, when the metaschemas ``jsonschema`` installs serve): its ``pattern`` values and
    ``patternProperties`` keys are regexes (``format: regex``, keys too), checked against ``jsonschema`` with
    its format checker (members in the order the metaschema declares them: with 45 properties, ``any_order``
    frees the order only within blocks of 8)."""
    import jsonschema
    from jsonschema_specifications import REGISTRY

    schema = {"type": "object", "properties": {"s": {"$ref": "http://json-schema.org/draft-07/schema#"}},
              "required": ["s"], "additionalProperties": False}
    chk = Checker(schema, whitespace="compact", any_order=True, **({"registry": REGISTRY} if passed else {}))
    validator = jsonschema.Draft7Validator(schema, registry=REGISTRY, format_checker=jsonschema.FormatChecker())
    for inner in [{}, True, {"pattern": "^a+$", "type": "string"}, {"patternProperties": {"^x-": {}}},
                  {"type": 3}, {"pattern": "("}, {"patternProperties": {"(": {}}}, {"items": [{"enum": [1]}]},
                  {"properties": {"a": {"minLength": -1}}}, {"required": ["a", 1]}, {"$ref": "#/definitions/x"}]:
        text = json.dumps({"s": inner}, separators=(",", ":"))
        assert chk.complete(text) == validator.is_valid({"s": inner}), text


def test_a_pattern_that_asks_nothing_leaves_a_counted_string() -> None:
    """``(?s).*`` (CloudFormation writes it beside ``maxLength``) matches every string: it is dropped, and the
    length limit alone is served by the counted string's shared lexemes, not threaded as a pattern."""
    from kbnf_gpu.frontends.json_schema._fsm import is_universal
    from kbnf_gpu.frontends.json_schema._pattern import pattern_language

    assert is_universal(pattern_language("(?s).*")) and is_universal(pattern_language("x*"))
    assert not is_universal(pattern_language("^.*$")) and not is_universal(pattern_language("a"))
    chk = Checker({"type": "string", "pattern": "(?s).*", "maxLength": 40})
    for text in ["", "a\nb", "\u00e9" * 40, "x" * 41, "\n" * 41, "\U0001f600" * 40]:
        assert chk.complete(json.dumps(text)) == (len(text) <= 40), text
    dot = Checker({"type": "string", "pattern": "^.*$", "maxLength": 40})  # without dotAll: no line breaks
    assert dot.complete(json.dumps("ab")) and not dot.complete(json.dumps("a\nb"))


def test_wide_class_with_a_short_length_is_exact() -> None:
    """Omics' ``^[\\p{L}\\p{M}\\p{Z}\\p{S}\\p{N}\\p{P}]+$`` with ``maxLength: 16``: as one lexeme its byte automaton passes
    the state limit, which the automaton form finds at once (``_fsm.as_expr`` keeps a class past ASCII an
    automaton); the chunks that serve it are exact, against Python's reading, over raw and escaped spellings."""
    from kbnf_gpu.frontends.json_schema._fsm import as_expr, intersection_dfa
    from kbnf_gpu.frontends.json_schema._pattern import pattern_language
    from kbnf_gpu.ir import Automaton

    pattern = "^[\\p{L}\\p{M}\\p{Z}\\p{S}\\p{N}\\p{P}]+$"
    assert isinstance(as_expr(intersection_dfa([pattern_language(pattern)])), Automaton)
    assert not isinstance(as_expr(intersection_dfa([pattern_language("^[a-z]{1,3}$")])), Automaton)
    chk = Checker({"type": "string", "pattern": pattern, "maxLength": 16})
    rnd = random.Random(5)
    for _ in range(60):
        text = "".join(rnd.choice("aZ9 _\u00e9\u4e2d\U0001f600\t\u0000\u200b") for _ in range(rnd.randint(0, 18)))
        want = 1 <= len(text) <= 16 and all(unicodedata.category(c)[0] in "LMZSNP" for c in text)
        for spelled in (json.dumps(text, ensure_ascii=False), json.dumps(text)):
            assert chk.complete(spelled) == want, (text, spelled)


@needs_check
def test_lengths_too_complex_beside_a_pattern_are_what_strict_false_drops() -> None:
    """Where neither one lexeme nor chunks hold a pattern with its length limits, ``strict`` refuses at the
    schema location; ``strict=False`` keeps the pattern (its lexeme fits) and drops the limits it names."""
    schema = {"type": "string", "minLength": 20, "maxLength": 2048, "pattern": "arn:aws(-[^:]+)?:iam::[0-9]{12}:role/.+"}
    with pytest.raises(GrammarError, match="minLength/maxLength beside this pattern/format is too complex"):
        parse_json_schema(schema)
    with pytest.warns(JsonSchemaWarning, match="minLength/maxLength beside this pattern/format"):
        chk = Checker(schema, strict=False)
    assert chk.complete(json.dumps("arn:aws:iam::123456789012:role/" + "r" * 2100))  # past maxLength: dropped
    assert not chk.complete(json.dumps("arn:aws:iam::1234:role/administrator"))  # the pattern holds


def test_huge_length_and_item_limits_are_exact_in_few_rules() -> None:
    """``maxLength: 256000`` (a CloudFormation schema's) and ``maxItems: 10**12`` compile, exactly, and their
    rules grow with the digits of the limit, not with the limit: they were refused as too large to enforce."""
    def rules(schema: dict) -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing is ignored
            return len(normalize(parse_json_schema(schema)).rules)

    for kind in ({"type": "string"}, {"type": "array", "items": {"type": "integer"}}):
        key = "maxLength" if kind["type"] == "string" else "maxItems"
        wide, huge = rules({**kind, key: 256_000}), rules({**kind, key: 10**12})
        assert huge < wide + 500 < 10_000, (kind, wide, huge)
    chk = Checker({"type": "string", "minLength": 1, "maxLength": 20_010})  # 1,250 chunks: binary digits
    for n in (0, 1, 20_010, 20_011):
        assert chk.complete(json.dumps("a" * n)) == (1 <= n <= 20_010), n


@needs_check
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^(ab|c)*$", "minLength": 3, "maxLength": 50},
        {"type": "string", "pattern": "^[a-c]+(-[a-c]+)*$", "maxLength": 40},
        {"type": "string", "pattern": "b", "minLength": 35},
    ],
)
def test_threaded_strings_exact(schema: dict) -> None:
    """Pattern plus long length limits: chunked lexemes that track the pattern automaton."""
    chk = Checker(schema)
    v = validator(schema)
    rnd = random.Random(6)
    pieces = ["a", "b", "c", "-", "ab", "é", "\n"]
    for _ in range(400):
        s = "".join(rnd.choice(pieces) for _ in range(rnd.choice([1, 5, 20, 30, 45, 60])))
        got, valid = chk.complete(json.dumps(s)), v.is_valid(s)
        # Python's "$" also matches before a final newline; the grammar follows ECMA-262
        assert got == valid or (valid and s.endswith("\n")), s


@needs_check
def test_a_threaded_string_repeated_in_a_schema_is_made_once() -> None:
    """The same constraints and lengths at many places (QuickSight: 89 copies of one) are threaded once: the
    rules do not grow with the copies, and every place keeps the language (brute force); where threading
    reports a problem (not strict), each place reports its own."""
    string = {"type": "string", "pattern": "^[a-c]+(-[a-c]+)*$", "minLength": 2, "maxLength": 400}

    def schema(n: int) -> dict:
        return {"type": "object", "additionalProperties": False,
                "properties": {f"p{i}": dict(string, description=f"copy {i}") for i in range(n)}}

    one, five = (len(parse_json_schema(schema(n)).rules) for n in (1, 5))
    assert one > 40 and five - one <= 4 * 4, (one, five)  # threaded once; each more member: its object's rules
    chk, v = Checker(schema(3)), validator(schema(3))
    rnd = random.Random(3)
    for _ in range(60):
        doc = {f"p{i}": "".join(rnd.choice(["a", "b", "c", "-", "ab"]) for _ in range(rnd.choice([1, 8, 210])))
               for i in range(3) if rnd.random() < 0.8}
        text = json.dumps(doc, separators=(",", ":"))
        assert chk.complete(text) == v.is_valid(doc), text
    arn = {"type": "string", "pattern": "arn:aws(-[^:]+)?:iam::[0-9]{12}:role/.+", "minLength": 20,
           "maxLength": 2048}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_json_schema({"type": "object", "properties": {"a": arn, "b": dict(arn)}}, strict=False)
    said = [str(w.message) for w in caught if issubclass(w.category, JsonSchemaWarning)]
    assert any("'/properties/a'" in m for m in said) and any("'/properties/b'" in m for m in said), said


@needs_check
@pytest.mark.parametrize(
    "schema, word, pieces, tails",
    [
        ({"pattern": "^x[ab]*-[0-9]{3}$", "minLength": 9, "maxLength": 70}, "x", "ab", ["-123"]),
        ({"pattern": "^(ab|c)+:(d|ef){1,3}$", "minLength": 20, "maxLength": 53}, "", ["ab", "c"],
         [":d", ":efd", ":efefef", ":dd"]),
        ({"pattern": "^[ab]*(-[0-9]{2,5})?$", "maxLength": 35}, "", "ab", ["", "-12", "-1234", "-12345"]),
        ({"pattern": "[ab]+-[0-9]{2}", "minLength": 3, "maxLength": 40}, "", "abc", ["-12"]),  # a search: no finite rest
    ],
)
def test_threaded_rest_past_the_last_loop_is_one_tail(schema: dict, word: str, pieces, tails: list[str],
                                                      monkeypatch) -> None:
    """With ``maxLength``, a state whose rest is finite and cannot reach the bound is one tail lexeme and, the
    lower bound met, one rule for every count (``FREE``); near the bounds the counts stay. Threaded here (one
    lexeme's room lowered), the language stays the pattern's with the lengths, at the bounds and around them."""
    monkeypatch.setattr(_long_strings, "_one_lexeme_states", lambda: 40)
    schema = {"type": "string", **schema}
    chk = Checker(schema)
    names = [r.name for r in chk.grammar.rules if r.name.startswith("string_")]
    assert len(names) > 3  # threaded
    assert any(name.endswith("_free") for name in names) == ("^" in schema["pattern"])
    v = validator(schema)
    rnd = random.Random(11)
    verdicts = set()
    for _ in range(400):
        n, tail = rnd.randrange(0, schema["maxLength"] + 4), rnd.choice(tails)
        body = "".join(rnd.choice(pieces) for _ in range(max(0, n - len(word + tail))))
        s = word + body + tail
        if rnd.random() < 0.2:  # a slip anywhere
            i = rnd.randrange(len(s) + 1)
            s = s[:i] + rnd.choice(["-", "1", "d", ":", "\u00e9"]) + s[i + 1:]
        valid = v.is_valid(s)
        verdicts.add(valid)
        assert chk.complete(json.dumps(s)) == valid, (len(s), s)
    assert verdicts == {True, False}


@needs_check
def test_last_resort_threading_takes_more_boundary_states(monkeypatch) -> None:
    """Where no lexeme holds a pattern (its byte automaton passes ``max_dfa_states``), threading it is the last
    resort before a refusal and may track more boundary states (``MAX_LAST_RESORT_BOUNDARIES``) than where one
    lexeme may still serve (``MAX_THREAD_BOUNDARIES``): CloudFormation's ``...[A-Za-z0-9:_/+=,@.-]{0,1023}$``
    after a loop, 1,024 of them, was refused. Scaled down here (a counter of 60 after a loop, 300 byte states
    to a lexeme), and exact."""
    from kbnf_gpu import CompileConfig
    from kbnf_gpu.budget import compile_budget

    schema = {"type": "string", "pattern": "^x[a-c]*:[a-c]{0,60}$"}
    monkeypatch.setattr(_long_strings, "MAX_THREAD_BOUNDARIES", 10)
    with compile_budget(CompileConfig(max_dfa_states=40)):
        chk = Checker(schema)
        monkeypatch.setattr(_long_strings, "MAX_LAST_RESORT_BOUNDARIES", 10)
        with pytest.raises(GrammarError, match="too complex to enforce exactly"):
            parse_json_schema(schema)
    assert len(chk.grammar.rules) > 10
    compiled = re.compile(schema["pattern"])
    rnd = random.Random(13)
    verdicts = set()
    for _ in range(300):
        s = "x" + "".join(rnd.choice("abc") for _ in range(rnd.randrange(40))) + ":" + "".join(
            rnd.choice("abc") for _ in range(rnd.choice([0, 1, 15, 16, 17, 59, 60, 61, 62])))
        if rnd.random() < 0.1:
            s = s.replace(":", rnd.choice(["", "::", "d"]), 1)
        valid = compiled.search(s) is not None
        verdicts.add(valid)
        assert chk.complete(json.dumps(s)) == valid, s
    assert verdicts == {True, False}


@needs_check
def test_threaded_rest_of_a_class_loop_is_a_counted_repetition(monkeypatch) -> None:
    """With ``maxLength``, a state that only loops on its class (``.+`` at a pattern's end) is a repetition
    of one chunk lexeme counted in the digits of the count, not one rule per count: ``^.+$`` with
    ``maxLength: 204800`` (a CloudFormation schema's) was refused, and is exact at its bounds."""
    def rules(schema: dict) -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing is ignored
            return len(parse_json_schema(schema).rules)

    assert rules({"type": "string", "pattern": "^.+$", "maxLength": 204_800}) < 120
    # with no upper bound, up to the lower one the same (one rule per count of chunks to 10**9 was refused)
    assert rules({"type": "string", "pattern": "^a[b-z]*$", "minLength": 10**9}) < 120
    schema = {"type": "string", "pattern": "^.+$", "maxLength": 20_010}
    chk, v = Checker(schema), validator(schema)
    for s in ("", "a", "a" * 20_010, "a" * 20_011, "é" * 20_009 + "\n", "\n" + "a" * 40):
        assert chk.complete(json.dumps(s)) == (v.is_valid(s) and not s.endswith("\n")), len(s)
    monkeypatch.setattr(_long_strings, "_one_lexeme_states", lambda: 40)
    schema = {"type": "string", "pattern": "^ab?:[a-c]+$", "minLength": 37, "maxLength": 300}
    chk, v = Checker(schema), validator(schema)
    rnd = random.Random(12)
    verdicts = set()
    for _ in range(200):
        s = rnd.choice(["a:", "ab:", "b:"]) + "".join(rnd.choice("abc") for _ in range(rnd.randrange(300)))
        if rnd.random() < 0.1:
            s += rnd.choice(["d", ":", "\u00e9"])
        valid = v.is_valid(s)
        verdicts.add(valid)
        assert chk.complete(json.dumps(s)) == valid, (len(s), s)
    assert verdicts == {True, False}
    for n in (33, 34, 35, 295, 296, 297, 298):  # around the bounds, "ab:" then n of the class
        s = "ab:" + "c" * n
        assert chk.complete(json.dumps(s)) == v.is_valid(s), n
    schema = {"type": "string", "pattern": "^ab?:[a-c]+$", "minLength": 37}
    chk, v = Checker(schema), validator(schema)
    for n in (1, 16, 32, 33, 34, 35, 36, 300):
        for s in ("ab:" + "c" * n, "a:" + "c" * n, "ab:" + "c" * n + "d"):
            assert chk.complete(json.dumps(s)) == v.is_valid(s), (n, s)


@needs_check
@pytest.mark.parametrize(
    "pattern, pieces",
    [
        ("^(ab|c){2,40}$", ["ab", "c", "a"]),
        (r"^.{3,45}$", ["a", "\u00e9", "\n", "\U0001F600", '"']),
        ("^[a-c]{5,40}-?$", ["a", "b", "c", "-"]),
        ("^(a[bc]){4,}$", ["ab", "ac", "a"]),
        ("^x(\u00e9|ab){0,30}y$", ["x", "\u00e9", "ab", "y", "b"]),
    ],
)
def test_far_counting_patterns_in_chunks_exact(pattern: str, pieces: list[str], monkeypatch) -> None:
    """A pattern whose automaton is big is served as chunk lexemes with a rest of fewer than ``STRING_CHUNK``
    code points (``chunked_pattern``). With the threshold lowered every one here is chunked, and its
    language stays the pattern's, at chunk boundaries and across them."""
    monkeypatch.setattr(_long_strings, "BYTE_STATES_PER_STATE", 10**6)
    schema = {"type": "string", "pattern": pattern}
    chk = Checker(schema)
    assert len(chk.grammar.rules) > 2  # chunk rules, not one lexeme
    v = validator(schema)
    rnd = random.Random(8)
    verdicts = set()
    for _ in range(300):
        s = "".join(rnd.choice(pieces) for _ in range(rnd.choice([0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 20, 31, 40, 46])))
        if pattern.startswith("^x") and rnd.random() < 0.7:
            s = "x" + s + "y"
        # Python's "$" also matches before a final newline; the grammar follows ECMA-262
        valid = v.is_valid(s) and not s.endswith("\n")
        verdicts.add(valid)
        assert chk.complete(json.dumps(s, ensure_ascii=False)) == valid, s
        assert chk.complete(json.dumps(s)) == valid, s  # past ASCII, every code point an escape
    assert verdicts == {True, False}



def test_pattern_chunked_only_past_what_max_dfa_states_holds() -> None:
    """Whether a pattern that counts is one lexeme or chunks follows the configured ``max_dfa_states``: a
    password pattern of ~500 code-point states is chunked under the default and one lexeme under a limit
    twice as high; a small counter is one lexeme under both."""
    from kbnf_gpu import CompileConfig
    from kbnf_gpu.budget import compile_budget

    def rules(pattern: str, limit: int) -> int:
        with compile_budget(CompileConfig(max_dfa_states=limit)):
            return len(parse_json_schema({"type": "string", "pattern": pattern}).rules)

    password = "^(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{8,64}$"
    assert rules(password, 10_000) > 10 and rules(password, 20_000) <= 2
    assert rules("^.{10,60}$", 10_000) <= 2 and rules("^.{10,60}$", 20_000) <= 2


@needs_check
def test_ascii_pattern_past_the_estimate_is_one_lexeme_when_it_fits() -> None:
    """An ASCII pattern whose code-point automaton passes ``max_dfa_states / BYTE_STATES_PER_STATE`` is still one
    lexeme when its byte automaton fits (a Secrets Manager ARN: 585 code-point states, built from the
    automaton); one that does not fit (an AWS name of up to 1,000 characters with a 10-character suffix) is
    chunked. Both stay exact around their counts."""
    secret = r"^arn:aws(|-cn|-us-gov):secretsmanager:[a-z0-9-]{1,20}:([0-9]{12}|):secret:[a-zA-Z0-9!/_+=.@-]{1,512}$"
    chk, v = Checker({"type": "string", "pattern": secret}), validator({"type": "string", "pattern": secret})
    assert len(chk.grammar.rules) <= 2  # one lexeme, not chunk rules
    for region in ("", "a", "us-east-1", "r" * 20, "r" * 21):
        for account in ("", "123456789012", "12345678901"):
            for n in (0, 1, 17, 511, 512, 513):
                s = f"arn:aws-cn:secretsmanager:{region}:{account}:secret:" + "a/+=.@-"[: min(n, 7)] + "b" * max(0, n - 7)
                assert chk.complete(json.dumps(s)) == v.is_valid(s), (region, account, n)
    named = r"^[a-zA-Z][a-zA-Z0-9-_]{0,999}-[a-zA-Z0-9]{10}$"
    chk, v = Checker({"type": "string", "pattern": named}), validator({"type": "string", "pattern": named})
    assert len(chk.grammar.rules) > 2  # chunks
    for n in (0, 1, 15, 16, 17, 998, 999, 1000):
        for s in ("a" + "b" * n + "-0123456789", "a" + "-" * n + "-abcdefghij", "a" + "b" * n + "-012345678_"):
            assert chk.complete(json.dumps(s)) == v.is_valid(s), s


def test_far_counting_pattern_compiles_where_one_lexeme_would_not() -> None:
    """``^(ab|cd|ef|gh){1,300}$`` is served in chunks, and the count stays exact (and its letters raw: no
    needless escape)."""
    chk = Checker({"type": "string", "pattern": "^(ab|cd|ef|gh){1,300}$"})
    for n in (0, 1, 7, 8, 9, 16, 150, 299, 300, 301):
        assert chk.complete(json.dumps("cd" * n)) == (1 <= n <= 300), n
    assert chk.complete(json.dumps("ab" * 8 + "ef" * 9))
    assert not chk.complete(json.dumps("ab" * 8 + "ef" * 9).replace("e", "\\u0065", 1))
    assert chk.status(json.dumps("ab" * 8 + "a")[:-1]) == "prefix"
    assert not chk.complete(json.dumps("ab" * 8 + "a"))



_ATOMS = ["a", "b", "[ab]", "[a-c]", "(ab|c)", "(a|bc)"]
_COUNTS = ["", "?", "*", "+", "{1,5}", "{2,9}", "{0,3}", "{3}"]


@st.composite
def small_patterns(draw) -> str:
    """Anchored patterns of one to three counted atoms over a few letters (automata of a few dozen states)."""
    atoms = draw(st.lists(st.tuples(st.sampled_from(_ATOMS), st.sampled_from(_COUNTS)), min_size=1, max_size=3))
    return "^" + "".join(a + c for a, c in atoms) + "$"


@settings(max_examples=80, deadline=None)
@given(small_patterns(), st.integers(0, 7))
def test_within_keeps_every_text_of_at_most_so_many_symbols(pattern: str, most: int) -> None:
    """``within(x, most)`` drops the upper bound of a repetition that reaches past it only in texts longer than
    ``most``: every text of at most ``most`` symbols matches it exactly when it matches ``x`` (all of them over
    the patterns' letters), and ``(a|bc){2,9}`` within 6 keeps no bound."""
    from kbnf_gpu.frontends.json_schema._rx import within

    lang = pattern_language(pattern)
    before, after = rx(lang), rx(within(lang, most))
    for k in range(most + 1):
        for letters in itertools.product("abc", repeat=k):
            text = "".join(letters)
            assert bool(before.fullmatch(text)) == bool(after.fullmatch(text)), (pattern, most, text)
    bounded = [e.max for e in _rx._nodes(within(pattern_language("^(a|bc){2,9}$"), 6)) if isinstance(e, ir.Repeat)]
    assert bounded and all(hi is None for hi in bounded)


def test_a_repetition_longer_than_the_string_compiles_fast() -> None:
    """SageMaker's ``^https://([.\\-_a-zA-Z0-9]+/?){3,1016}$`` within ``maxLength: 256`` passed the 10 s budget
    (the automaton tracked every count of the ambiguous group); its bound is dropped (``within``) and the
    language is the same."""
    schema = {"type": "string", "maxLength": 40, "pattern": "^https://([.\\-_a-zA-Z0-9]+/?){3,1016}$"}
    chk, v = Checker(schema), validator(schema)
    for s in ["https://a/b/c", "https://abc", "https://ab", "https://a//b", "https://" + "a" * 32, "https://" + "a" * 33,
              "https://a/b/", "http://a/b/c"]:
        assert chk.complete(json.dumps(s)) == v.is_valid(s), s


@needs_check
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(small_patterns(), st.integers(0, 50), st.one_of(st.none(), st.integers(33, 120)), st.data())
def test_threaded_pattern_with_lengths_is_exact(monkeypatch, pattern: str, lo: int, hi, data) -> None:
    """A pattern with ``minLength``/``maxLength``, threaded (one lexeme's room lowered so that every one here
    is): its language is the pattern's strings of ``lo`` to ``hi`` code points, whichever of chunks, one tail
    past the last loop (``FREE``) or a counted class loop serves each state and count. Strings are walks of
    the pattern's automaton (most accepted by it) of lengths around the bounds and the chunk boundaries."""
    assume(hi is not None and lo <= hi or lo > 32)
    monkeypatch.setattr(_long_strings, "_one_lexeme_states", lambda: 4)
    schema = {"type": "string", "pattern": pattern, "minLength": lo, **({} if hi is None else {"maxLength": hi})}
    try:
        chk = Checker(schema)
    except GrammarError:
        return  # too big to thread with so little room: refused, not wrong
    d = intersection_dfa([pattern_language(pattern)])
    compiled = re.compile(pattern)
    lengths = [0, 1, lo - 1, lo, lo + 1, 15, 16, 17, 31, 32, 33] + ([hi - 1, hi, hi + 1] if hi is not None else [90])
    verdicts = set()
    for _ in range(60):
        n, p, s = data.draw(st.sampled_from(lengths)), 0, ""
        while d is not None and p >= 0 and len(s) < n:
            moves = [(sym, t) for sym, t in enumerate(d.trans[p]) if t >= 0]
            if not moves:
                break
            sym, p = moves[data.draw(st.integers(0, len(moves) - 1))]
            s += chr(d.symbols[sym][0][0])
        if data.draw(st.booleans()):
            s += data.draw(st.sampled_from(["", "a", "c", "d"]))
        want = compiled.search(s) is not None and lo <= len(s) <= (len(s) if hi is None else hi)
        verdicts.add(want)
        assert chk.complete(json.dumps(s)) == want, (s, len(s))


@pytest.mark.parametrize("pattern", ["^[a-z]+(-[a-z]+)*$", "^arn:[a-z-]*:[a-z0-9]+:.+$", "^[a-z0-9]+(\\.[a-z0-9]+)*@[a-z]+$",
                                     "^[a-c]{1,20}(\\.[a-c]{1,20})*$", "^x[0-9]{0,30}y?z*$"])
def test_a_plan_too_large_stays_too_large_with_shorter_chunks(monkeypatch, pattern: str) -> None:
    """``_thread_chunks`` stops at the first chunk size whose plan passes ``MAX_THREAD_RULES`` (or its boundary
    states), since shorter chunks meet every (state, count) it does and more: checked here by planning every
    shorter size as well, each of which must fail the same way (bounds and rule limits swept)."""
    monkeypatch.setattr(_long_strings, "_one_lexeme_states", lambda: 4)
    thread = _long_strings._thread
    failed: list[int] = []

    def checked(b, d, lo_, hi_, C, *rest):
        try:
            return thread(b, d, lo_, hi_, C, *rest)
        except _long_strings.TooManyRules:
            failed.append(C)
            for shorter in (c for c in (16, 8, 4, 2, 1) if c < C):
                with pytest.raises(_long_strings.TooManyRules):
                    thread(b, d, lo_, hi_, shorter, *rest)
            raise

    monkeypatch.setattr(_long_strings, "_thread", checked)
    for limit in (2, 6, 20, 60, 200):
        monkeypatch.setattr(_long_strings, "MAX_THREAD_RULES", limit)
        for lo, hi in [(0, 40), (3, 100), (0, 300), (40, None)]:
            before = len(failed)
            try:
                parse_json_schema({"type": "string", "pattern": pattern, "minLength": lo,
                                   **({} if hi is None else {"maxLength": hi})})
            except GrammarError:
                pass
            assert len(failed) - before <= 1  # a failed plan ends the sizes
    assert failed  # the limits were reached


def _walk_symbols(d, p: int, word: tuple[int, ...]) -> int:
    for sym in word:
        p = d.trans[p][sym] if p >= 0 else -1
    return p


@settings(max_examples=60, deadline=None)
@given(small_patterns(), st.integers(1, 3))
def test_chunk_languages_share_a_key_exactly_when_equal(pattern: str, C: int) -> None:
    """``canonical_key`` of the chunk automata ``paths_dfa(d, p, C, C, {q})``: equal exactly when they accept the
    same words of ``C`` symbols (checked by walking ``d`` over every such word), so one chunk lexeme serves every
    automaton position with that language."""
    d = intersection_dfa([pattern_language(pattern)])
    assume(d is not None)
    words = list(itertools.product(range(len(d.symbols)), repeat=C))
    languages: dict[tuple, frozenset] = {}
    for p in range(d.n):
        ends = {w: _walk_symbols(d, p, w) for w in words}
        for q in {q for q in ends.values() if q >= 0}:
            language = frozenset(w for w, end in ends.items() if end == q)
            key = canonical_key(paths_dfa(d, p, C, C, {q}))
            assert languages.setdefault(key, language) == language, (pattern, p, q)
    assert len(set(languages.values())) == len(languages)  # different languages, different keys


@settings(max_examples=60, deadline=None)
@given(small_patterns(), st.data())
def test_path_languages_are_minimal_and_one_node_per_language(pattern: str, data) -> None:
    """``PathLanguages``: over one shared DAG, each ``root(p, lo, hi, targets)`` accepts exactly the words of
    ``lo`` to ``hi`` symbols leading the automaton from ``p`` into ``targets`` (every word up to ``hi + 1``
    symbols walked), its automaton is minimal (``minimize`` merges nothing), and two roots are one node exactly
    when their languages are equal."""
    d = intersection_dfa([pattern_language(pattern)])
    assume(d is not None)
    languages = PathLanguages(d)
    hi_max = 3 if len(d.symbols) <= 4 else 2
    words = [w for n in range(hi_max + 2) for w in itertools.product(range(len(d.symbols)), repeat=n)]
    by_node: dict[int, frozenset] = {}
    for _ in range(12):
        p = data.draw(st.integers(0, d.n - 1))
        hi = data.draw(st.integers(0, hi_max))
        lo = data.draw(st.integers(0, hi))
        targets = set(data.draw(st.lists(st.integers(0, d.n - 1), max_size=3)))
        expected = frozenset(w for w in words if lo <= len(w) <= hi and _walk_symbols(d, p, w) in targets)
        node = languages.root(p, lo, hi, targets)
        automaton = languages.dfa(node)
        if automaton is None:
            assert node == PathLanguages.EMPTY and not expected
            continue
        accepted = frozenset(w for w in words if (q := _walk_symbols(automaton, 0, w)) >= 0 and automaton.accept[q])
        assert accepted == expected, (pattern, p, lo, hi, targets)
        assert minimize(automaton).n == automaton.n
        assert by_node.setdefault(node, expected) == expected
    assert len(set(by_node.values())) == len(by_node)  # different nodes, different languages


@settings(max_examples=40, deadline=None)
@given(small_patterns(), st.data())
def test_exact_roots_are_the_roots_of_every_end_state(pattern: str, data) -> None:
    """``PathLanguages.exact_roots(p, n)``: for every state that exactly ``n`` symbols lead to from ``p``, the
    node ``root(p, n, n, {q})`` gives (the same node, as the DAG is hash-consed), and no other state; asked in
    either order on one DAG."""
    d = intersection_dfa([pattern_language(pattern)])
    assume(d is not None)
    words = {n: list(itertools.product(range(len(d.symbols)), repeat=n)) for n in range(4)}
    languages = PathLanguages(d)
    for _ in range(6):
        p, n = data.draw(st.integers(0, d.n - 1)), data.draw(st.integers(0, 3))
        ends = languages.exact_roots(p, n) if data.draw(st.booleans()) else None
        reached = {q for w in words[n] if (q := _walk_symbols(d, p, w)) >= 0}
        roots = {q: languages.root(p, n, n, {q}) for q in range(d.n)}
        ends = languages.exact_roots(p, n) if ends is None else ends
        assert ends == {q: node for q, node in roots.items() if q in reached}, (pattern, p, n)
        assert all(node != PathLanguages.EMPTY for node in ends.values())


def test_path_language_automata_are_numbered_by_their_language() -> None:
    """``PathLanguages.dfa`` numbers a language's automaton by its language alone, not by the order its nodes
    were made in: the same chunk languages asked in two orders give the same automata (so that equal chunks of
    two patterns are one lexeme in the terminal memo)."""
    d = intersection_dfa([pattern_language("^(a|b[bc]|c[a-c]d)+$")])
    asks = [(p, lo, hi, q) for p in range(d.n) for q in range(d.n) for lo, hi in ((3, 3), (1, 4))]
    forward, backward = PathLanguages(d), PathLanguages(d)
    nodes = {ask: forward.root(ask[0], ask[1], ask[2], {ask[3]}) for ask in asks}
    again = {ask: backward.root(ask[0], ask[1], ask[2], {ask[3]}) for ask in reversed(asks)}
    made = 0
    for ask in asks:
        one, other = forward.dfa(nodes[ask]), backward.dfa(again[ask])
        assert (one is None) == (other is None)
        if one is not None:
            made += 1
            assert (one.trans, one.accept) == (other.trans, other.accept), ask
    assert made > 10


@settings(max_examples=60, deadline=None)
@given(small_patterns())
def test_length_range_of_an_automaton(pattern: str) -> None:
    """``_length_range`` and ``_residual_lengths``: from each state, the fewest and the most code points of an
    accepted string (``None``: unbounded) and the states reached, as walking every length finds them."""
    d = intersection_dfa([pattern_language(pattern)])
    assume(d is not None)
    shortest, longest, reach = _long_strings._residual_lengths(d)
    for start in range(d.n):
        level, accepted, seen = {start}, [], {start}
        for n in range(d.n + 2):
            if any(d.accept[q] for q in level):
                accepted.append(n)
            level = {t for q in level for t in d.trans[q] if t >= 0}
            seen |= level
        assert (shortest[start], longest[start]) == (accepted[0], None if level else accepted[-1])
        if not level:
            assert reach[start] == sum(1 << q for q in seen)
    assert _long_strings._length_range(d) == (shortest[0], longest[0])


@needs_check
@pytest.mark.parametrize("schema, lengths", [
    ({"type": "string", "pattern": "^[a-z]{5,10}$", "maxLength": 1_000_000}, [4, 5, 10, 11]),
    ({"type": "string", "pattern": "^[a-z]{5,100}$", "minLength": 3, "maxLength": 50}, [4, 5, 49, 50, 51, 100]),
    ({"type": "string", "pattern": "^[a-z]{50,60}$", "minLength": 40, "maxLength": 70}, [49, 50, 60, 61]),
    ({"type": "string", "pattern": "^[a-z]{30,60}$", "minLength": 40, "maxLength": 55}, [39, 40, 55, 56]),
])
def test_length_bounds_the_pattern_implies_are_dropped(schema: dict, lengths: list[int]) -> None:
    """Length bounds beside a pattern that bounds the length itself: those it implies anyway are dropped (a
    ``maxLength`` of a million beside ``{5,10}`` was refused as too complex), the others still hold."""
    chk = Checker(schema)
    v = validator(schema)
    for n in lengths:
        assert chk.complete(json.dumps("k" * n)) == v.is_valid("k" * n), n


@needs_check
@pytest.mark.parametrize("additional", [{"type": "integer"}, True])
def test_member_counts_past_the_declared_members_are_exact(additional: Any) -> None:
    """min/maxProperties over declared members then additional ones (counted as one repetition once the
    declared are passed): every object of up to five members against the validator, at each pair of bounds."""
    rnd = random.Random(7)
    docs = []
    for _ in range(120):
        doc: dict = {}
        if rnd.random() < 0.6:
            doc["a"] = rnd.choice([1, "x"])
        for i in range(rnd.randint(0, 4)):
            doc[f"k{i}"] = rnd.choice([2, 3, "y"])
        docs.append(doc)
    docs += [{}, {"a": 1, "k0": 2, "k1": 3, "k2": 2, "k3": 3}, {"k0": 2, "k1": 3, "k2": 2, "k3": 3, "k4": 2}]
    for lo, hi in [(0, 0), (0, 1), (1, 1), (2, 3), (3, None), (1, 4), (5, None), (0, None)]:
        schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": additional,
                  "minProperties": lo, **({} if hi is None else {"maxProperties": hi})}
        chk, v = Checker(schema), validator(schema)
        verdicts = set()
        for doc in docs:
            want = v.is_valid(doc)
            verdicts.add(want)
            assert chk.complete(json.dumps(doc)) == want, (lo, hi, doc)
        assert verdicts == {True, False}, (lo, hi)


@needs_check
def test_format_with_length_bounds_counted_beside_its_automaton() -> None:
    """A format with length bounds is one lexeme when the bounds, counted beside the format automaton's
    states, keep it small (``ipv6`` with ``minLength: 3`` was 735 chunk lexemes, 8 s), and exact at them."""
    ipv6 = Checker({"type": "string", "format": "ipv6", "minLength": 3, "maxLength": 64})
    assert len(ipv6.grammar.rules) <= 2
    assert ipv6.complete('"::1"') and ipv6.complete('"1:2:3:4:5:6:7:8"') and not ipv6.complete('"::"')
    # a bound that cuts the automaton (forms with an IPv4 tail reach 45): 567 states, one lexeme since the
    # automaton reads ASCII (was refused)
    schema = {"type": "string", "format": "ipv6", "minLength": 7, "maxLength": 39}
    ipv6, v = Checker(schema), validator(schema)
    assert len(ipv6.grammar.rules) <= 2
    rnd = random.Random(3)
    texts = ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:1.2.3.4",
             "ffff:ffff:ffff:ffff:ffff:ffff:10.20.3.4", "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", "::1:2:3"]
    for _ in range(300):
        groups = [("%x" % rnd.randint(0, 0xFFFF))[: rnd.randint(1, 4)] for _ in range(rnd.randint(2, 8))]
        if rnd.random() < 0.4:
            groups[-1] = ".".join(str(rnd.randint(0, 255)) for _ in range(4))
        text = ":".join(groups)
        if rnd.random() < 0.3:
            i = rnd.randint(0, len(text))
            text = text[:i] + "::" + text[i:]
        texts.append(text)
    verdicts = set()
    for text in texts:
        want = v.is_valid(text)
        verdicts.add((want, len(text) > 39))
        assert ipv6.complete(json.dumps(text)) == want, text
    assert verdicts >= {(True, False), (False, True)}
    assert not v.is_valid("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255") and FORMAT_CHECKER.conforms(
        "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", "ipv6")  # its length alone rejects it
    email = Checker({"type": "string", "format": "email", "maxLength": 40})
    assert len(email.grammar.rules) <= 2
    assert email.complete(json.dumps("a" * 34 + "@b.com")) and not email.complete(json.dumps("a" * 35 + "@b.com"))


# the byte prefix of each range of ``_fsm._BYTE_FAMILIES``
def _family_prefixes() -> list[list[bytes]]:
    from kbnf_gpu.frontends.json_schema import _fsm

    return [[b"\xc2"], [b"\xe1"], [b"\xf1"], [b"\\u"], [b"\\u0"], [b"\\u00"],
            [b"\\u00" + b"%x" % (ranges[0][0] >> 4) for ranges in _fsm._BYTE_FAMILIES[-1]]]
_WIDE_ATOMS = ["a", "b", ".", "[^a]", "\u00e9", "\u0101", "\u1234", "[\u00e0-\u00ff]", "\u4e2d", "[^\x00-\x7f]",
               "\U0001F600", "\\d", "(a|\u00e9b)"]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_WIDE_ATOMS), st.sampled_from(_COUNTS)), min_size=1, max_size=3),
       st.booleans())
def test_byte_states_at_least_is_a_lower_bound(atoms: list[tuple[str, str]], anchored: bool) -> None:
    """``byte_states_at_least``: never more than the states of the minimal byte automaton of the string lexeme
    written from the automaton (every code point in its spellings, ``_strings``), over patterns that read
    ASCII, Latin, CJK and astral code points, anchored or searched for."""
    from kbnf_gpu.frontends.json_schema import _charset as cs
    from kbnf_gpu.frontends.json_schema import _fsm
    from kbnf_gpu.frontends.json_schema._fsm import automaton_expr, byte_states_at_least

    body = "".join(a + c for a, c in atoms)
    d = intersection_dfa([pattern_language(f"^{body}$" if anchored else body)])
    assume(d is not None)
    lexeme = build_dfa(ir.Terminal(quoted(encode(automaton_expr(d))), name="string"))
    assert byte_states_at_least(d, 0) <= lexeme.n_states, (body, lexeme.n_states)
    assert byte_states_at_least(d, 10 ** 9) == d.n  # not worked out where it cannot pass the limit
    # the argument itself: the lexeme's state at each code-point state (reached by escapes), then the state after
    # each family's prefix; per family, as many distinct states as distinct moves over its ranges, and no state
    # in two families or at a code-point end
    def spelled(cp: int) -> bytes:
        return json.dumps(chr(cp))[1:-1].encode()

    at = {0: lexeme.step(0, b'"')}
    order = [0]
    for q in order:  # breadth first
        for sym, t in enumerate(d.trans[q]):
            if t >= 0 and t not in at:
                at[t] = lexeme.step(at[q], spelled(d.symbols[sym][0][0]))
                order.append(t)
    assert len(set(at.values())) == d.n and -1 not in at.values()
    seen = set(at.values())
    for family, prefixes in zip(_fsm._BYTE_FAMILIES, _family_prefixes(), strict=True):
        most, states = 0, set()
        for ranges, prefix in zip(family, prefixes):
            after = {lexeme.step(at[q], prefix) for q in range(d.n)} - {-1}
            columns = [i for i, sym in enumerate(d.symbols) if cs.intersect(sym, ranges)]
            moves = {tuple(d.trans[q][i] for i in columns) for q in range(d.n)}
            most = max(most, len(after))
            assert len(after) >= len(moves - {(-1,) * len(columns)}), (body, prefix)
            states |= after
        assert not states & seen, (body, family)
        seen |= states


@needs_check
def test_a_string_automaton_too_big_in_bytes_is_refused_before_its_bytes_are_spelled(monkeypatch) -> None:
    """``allOf`` of 11 patterns ``.*x.*``: a 2,048-state automaton, each state with its own moves in every
    family of byte states, so at least 16,000 byte states: refused without building the lexeme (which took
    seconds), with the place named; with 4 of the patterns the lexeme is built and exact."""
    from kbnf_gpu.frontends.json_schema import _builder

    built = []
    fits = _builder.Builder.fits
    monkeypatch.setattr(_builder.Builder, "fits", lambda self, term: built.append(term) or fits(self, term))
    patterns = [{"type": "string", "pattern": f".*{chr(97 + i)}.*"} for i in range(11)]
    with pytest.raises(GrammarError, match="too complex"):
        parse_json_schema({"type": "object", "properties": {"s": {"allOf": patterns}}})
    big = [t for t in built if t is not None and any(isinstance(x, ir.Automaton) and x.n_states >= 2048
                                                     for x in getattr(t.expr, "parts", ()))]
    assert not big
    chk = Checker({"allOf": patterns[:4]})
    assert chk.complete(json.dumps("xdcxbay")) and not chk.complete(json.dumps("abc"))


@settings(max_examples=60, deadline=None)
@given(small_patterns(), st.integers(0, 5))
def test_futures_of_an_automaton(pattern: str, n: int) -> None:
    """``_futures``: from each state, the states reached after exactly ``n`` code points (memoized across
    states), as stepping the set of states ``n`` times finds them."""
    d = intersection_dfa([pattern_language(pattern)])
    assume(d is not None)
    futures = _long_strings._futures(d, n)
    for start in range(d.n):
        level = {start}
        for _ in range(n):
            level = {t for q in level for t in d.trans[q] if t >= 0}
        assert futures(start) == sum(1 << q for q in level), start


@needs_check
def test_a_threaded_string_with_too_many_successor_links_is_refused(monkeypatch) -> None:
    """A threaded string's plan is bounded in its successor links too (``MAX_THREAD_LINKS``), not only in its
    rules: a search for any of many words links each state to most others (600 time zone names: 7 million links
    and 5 s before the lexemes refused it). Under the bound it is threaded, exactly; past it, refused with the
    place named."""
    schema = {"type": "object", "properties": {"tag": {"type": "string", "format": "hostname", "maxLength": 40}}}
    chk = Checker(schema)
    assert chk.complete(json.dumps({"tag": "a" * 19 + "." + "b" * 20}))
    assert not chk.complete(json.dumps({"tag": "a" * 41})) and not chk.complete(json.dumps({"tag": "a..b"}))
    monkeypatch.setattr(_long_strings, "MAX_THREAD_LINKS", 20)
    with pytest.raises(GrammarError, match="/properties/tag"):
        parse_json_schema(schema)


@needs_check
def test_threaded_string_lexemes_are_bounded_in_all(monkeypatch) -> None:
    """The chunk and tail lexemes of one threaded string stay under ``MAX_THREAD_STATES`` automaton states in
    all, or shorter chunks are tried: ``format: hostname`` with ``maxLength: 40`` is threaded in chunks of 8
    code points (in chunks of 16 it made ~90 lexemes, compiling twice as long), and exactly. Chunks of 16 are
    refused before any of their expressions is written (their automata are counted first)."""
    sizes = []
    written = []  # the chunk and tail languages written as expressions
    thread = _long_strings._thread
    automaton_expr = _long_strings.automaton_expr

    def recording(b, d, lo, hi, C, *rest):
        before = len(written)
        try:
            result = thread(b, d, lo, hi, C, *rest)
        except _long_strings.TooLarge:
            assert len(written) == before, C
            raise
        sizes.append(C)
        return result

    monkeypatch.setattr(_long_strings, "_thread", recording)
    monkeypatch.setattr(_long_strings, "automaton_expr",
                        lambda language: written.append(language) or automaton_expr(language))
    schema = {"type": "string", "format": "hostname", "maxLength": 40}
    chk = Checker(schema)
    assert written
    monkeypatch.setattr(_long_strings, "MAX_THREAD_STATES", 10**6)
    parse_json_schema(schema)
    assert sizes == [8, 16]
    for text, ok in [("a" * 40, True), ("a" * 41, False), ("a" * 19 + "." + "b" * 20, True), ("a.b-c", True),
                     ("-a", False), ("a..b", False)]:
        assert chk.complete(json.dumps(text)) == ok, text

@needs_check
def test_format_with_a_length_too_long_to_thread_is_refused_before_chunk_work(monkeypatch) -> None:
    """``format: uri`` with ``maxLength: 2048``: chunks of 8 code points would need a rule per (automaton
    state, chunks so far) past ``MAX_THREAD_RULES``, which the states at each boundary show before any chunk is
    written, and shorter chunks are not tried (they would need more); the schema is refused with an error that
    names the place and the keywords, and
    ``strict=False`` keeps the format alone (its lexeme fits; the length bound is what the error names)."""
    attempts: dict[int, int] = {}
    written = []
    thread = _long_strings._thread
    automaton_expr = _long_strings.automaton_expr

    def recording(b, d, lo, hi, C, *rest):
        before = len(written)
        try:
            return thread(b, d, lo, hi, C, *rest)
        finally:
            attempts[C] = len(written) - before

    monkeypatch.setattr(_long_strings, "_thread", recording)
    monkeypatch.setattr(_long_strings, "automaton_expr",
                        lambda language: written.append(language) or automaton_expr(language))
    schema = {"type": "object", "properties": {"home": {"type": "string", "format": "uri", "maxLength": 2048}}}
    with pytest.raises(GrammarError, match=r"maxLength.*too complex.*/properties/home"):
        parse_json_schema(schema)
    assert set(attempts) == {16, 8} and attempts[8] == 0, attempts
    with pytest.warns(JsonSchemaWarning, match="too complex"):
        loose = Checker(schema, strict=False)
    assert loose.complete(json.dumps({"home": "http://e.com/" + "a" * 2100}))  # past maxLength: dropped
    assert not loose.complete(json.dumps({"home": "x" * 10}))  # not a URI: the format holds


@needs_check
def test_pattern_too_big_for_chunks_is_one_lexeme_without_chunk_work(monkeypatch) -> None:
    """An e-mail pattern that counts far on both sides: its chunk lexemes would pass ``MAX_THREAD_TERMINALS``,
    which the states at chunk boundaries show before any chunk is written (no ``paths_dfa``); it is served as
    one lexeme, exactly."""
    calls = []
    monkeypatch.setattr(_long_strings, "paths_dfa", lambda *a: calls.append(a))
    monkeypatch.setattr(_long_strings.PathLanguages, "root", lambda *a: calls.append(a))
    monkeypatch.setattr(_long_strings.PathLanguages, "exact_roots", lambda *a: calls.append(a))
    schema = {"type": "string", "pattern": r"^[a-z0-9._%+-]{1,64}@[a-z0-9.-]{1,255}\.[a-z]{2,}$"}
    chk = Checker(schema)
    assert not calls and len(chk.grammar.rules) <= 2
    v = validator(schema)
    verdicts = set()
    for text in ["john.doe@example.com", "a@b.co", "a" * 64 + "@b.co", "a" * 65 + "@b.co", "a@" + "b" * 255 + ".co",
                 "a@" + "b" * 256 + ".co", "a@" + "b" * 252 + ".c.d", "a@b.c", "@b.co", "a@b.co.uk", "A@b.co"]:
        verdicts.add(v.is_valid(text))
        assert chk.complete(json.dumps(text)) == v.is_valid(text), text
    assert verdicts == {True, False}


@needs_check
@pytest.mark.parametrize(
    "pattern, pieces",
    [
        ("^(?=.*[A-Z]).{2,6}$", ["a", "A", "1", " ", "\u00e9"]),
        ("(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{8}", ["a", "A", "1", "!", "\u00e9"]),
        ("^(?=.*\\d)(?!.*\\s)[a-z\\d ]{2,5}$", ["a", "1", " ", "z", "A"]),
        ("^(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{8,64}$", ["a", "A", "1", "!", "\u00e9", "xx"]),
        ("(?<=a{20})b", ["a", "b", "aaaa", "x"]),
    ],
)
def test_lookaheads_beside_counts_are_automata_and_exact(pattern: str, pieces: list[str]) -> None:
    """Lookaheads beside a length bound have no small regular expression (the orders of the lookaheads times
    the counter); the front end keeps such a language as its automaton (``ir.Automaton``), and the terminals
    built from it accept exactly the pattern's strings, raw or written with escapes. The grammar's samples
    are valid strings."""
    schema = {"type": "string", "pattern": pattern}
    chk = Checker(schema)
    assert any(holds_automaton(t.expr) for r in chk.grammar.rules for t in _expr_terminals(r.body))
    v = validator(schema)
    rnd = random.Random(11)
    verdicts = set()
    for _ in range(250):
        s = "".join(rnd.choice(pieces) for _ in range(rnd.choice([1, 2, 3, 5, 6, 7, 8, 9, 12, 21, 22, 30, 64, 70])))
        valid = v.is_valid(s)
        verdicts.add(valid)
        assert chk.complete(json.dumps(s, ensure_ascii=False)) == valid, s
        assert chk.complete(json.dumps(s)) == valid, s
    assert verdicts == {True, False}
    for text in sample_texts(parse_grammar(schema, "json_schema", whitespace="compact"), 20, seed=4):
        assert v.is_valid(json.loads(text)), text


def _expr_terminals(e: Any) -> list:
    """The terminals of a grammar expression."""
    return [e] if isinstance(e, ir.Terminal) else [t for x in ir.children(e) for t in _expr_terminals(x)]

@needs_check
def test_numbers_details() -> None:
    chk = Checker({"type": "integer"})
    assert not chk.complete("-0") and not chk.complete("1.0") and chk.complete("-12")
    pos = Checker({"type": "number", "minimum": 0})
    assert pos.complete("1e400") and pos.complete("0.0") and pos.complete("2E-5") and not pos.complete("-1e-5")
    strict = Checker({"type": "number", "exclusiveMinimum": 0})
    assert strict.complete("1e-300") and not strict.complete("1e-400") and not strict.complete("0e5")
    assert not strict.complete("0.000") and strict.complete("0.001")


@needs_check
def test_json_object_syntax() -> None:
    g = parse_grammar({}, "json_object", whitespace="compact")
    p = EarleyParser(normalize(g))
    assert check_parser(p, '{"a":[1,{"b":null}]}').status == "complete"
    assert check_parser(p, "[1]").status == "rejected"


@needs_check
def test_ref_forms() -> None:
    by_id = Checker({"$id": "https://example.com/s.json", "$defs": {"n": {"type": "integer"}}, "type": "array",
                     "items": {"$ref": "https://example.com/s.json#/$defs/n"}})
    assert by_id.complete("[1, 2]") and not by_id.complete('["a"]')
    draft7 = Checker({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"s": {"type": "string"}},
                      "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}}})
    assert draft7.complete('{"a": "long"}')  # draft 7: siblings of $ref are ignored
    modern = Checker({"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 1}}})
    assert not modern.complete('{"a": "long"}') and modern.complete('{"a": "l"}')


@needs_check
def test_strict_false_keeps_the_rest() -> None:
    with pytest.warns(JsonSchemaWarning, match="pattern"):
        chk = Checker({"type": "string", "pattern": "(?<=a(?=b))b", "maxLength": 2}, strict=False)
    assert chk.complete('"zz"') and not chk.complete('"zzz"')
    counted = {"type": "array", "contains": {"type": "integer"}, "minContains": 100}
    with pytest.raises(GrammarError, match="minContains"):
        parse_json_schema(counted)
    with pytest.warns(JsonSchemaWarning, match="minContains"):
        parse_json_schema(counted, strict=False)


@needs_check
def test_property_counts_with_any_order() -> None:
    schema = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "minProperties": 2, "maxProperties": 3}
    chk = Checker(schema, any_order=True, whitespace="compact")
    assert chk.complete('{"c":1,"a":2}') and chk.complete('{"x":1,"b":2,"y":3}')
    assert not chk.complete('{"c":1}') and not chk.complete('{"x":1,"b":2,"y":3,"a":4}')
    assert not chk.complete("{}")


def test_a_lone_pattern_past_the_code_point_automaton_limit_is_one_lexeme_as_written(monkeypatch) -> None:
    """A string is built from its code-point automaton (``Builder._whole_string``); a lone pattern whose
    automaton passes that automaton's own limit (``_fsm.MAX_STATES``, patched small here) is written as the
    pattern itself, exactly, not refused or loosened."""
    from kbnf_gpu.frontends.json_schema import _fsm

    monkeypatch.setattr(_fsm, "MAX_STATES", 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JsonSchemaWarning)  # nothing loosened
        chk = Checker({"type": "string", "pattern": "^[a-c]{0,8}$"})
    for n in range(11):
        assert chk.complete(json.dumps("b" * n)) == (n <= 8), n
    assert not chk.complete('"abd"') and chk.complete('"abc"') and not chk.complete('"a\\u0062c"')


def test_threaded_states_alike_within_the_rest_share_a_rule(monkeypatch) -> None:
    """With ``maxLength``, the rule of (state, count) reads at most what is left; states that accept the same
    strings that short are one rule (``_bounded_twins``): labels of up to 20 letters, where 8 letters are left
    of a 40-letter limit, are alike at every position up to 11. Fewer rules, and the strings around the limit
    (a label that would pass its 20 within the last chunk among them) are judged as the pattern judges them."""
    monkeypatch.setattr(_long_strings, "_one_lexeme_states", lambda: 4)
    schema = {"type": "string", "pattern": "^[a-z]{1,20}(\\.[a-z]{1,20})*$", "maxLength": 40}

    def rules() -> int:
        return len(parse_json_schema(schema).rules)

    shared = rules()
    with monkeypatch.context() as m:
        m.setattr(_long_strings, "_bounded_twins",
                  lambda d, hi, C: lambda rest: list(range(d.n)))  # every state its own rule
        alone = rules()
        # the refinement stopped early (10 rounds: the rests of 24 and 40 not refined) merges only the last
        m.undo()
        m.setattr(_long_strings, "TWIN_REFINEMENT", 10 * intersection_dfa([pattern_language(schema["pattern"])]).n)
        capped = rules()
        capped_checker = Checker(schema)
    assert shared < capped < alone, (shared, capped, alone)
    compiled = re.compile(schema["pattern"])
    for chk in (Checker(schema), capped_checker):
        rnd = random.Random(5)
        verdicts = []
        for _ in range(400):
            labels = ["abcdefghijklmnopqrstuvw"[:rnd.randint(0, 22)] for _ in range(rnd.randint(1, 5))]
            text = ".".join(labels)[:rnd.randint(28, 42)]
            want = compiled.search(text) is not None and len(text) <= 40
            verdicts.append(want)
            assert chk.complete(json.dumps(text)) == want, (text, len(text))
        assert 50 < sum(verdicts) < 350
