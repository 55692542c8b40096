"""JSON Schema ``pattern`` (ECMA-262) syntax: ``_pattern``'s language against Python equivalents.

Each ECMA-262 pattern is paired with a Python ``re`` pattern written to mean
the same (ECMA-262 search semantics, the ``u`` flag's code points); the pairs
were checked with node's RegExp. Every string over a small alphabet up to a
short length must agree, both in ``search`` and in the compiled language.
"""
from __future__ import annotations

import itertools
import json
import re

import pytest

from kbnf_gpu.frontends.json_schema._pattern import PatternError, pattern_language, search
from kbnf_gpu.frontends.json_schema._pyre import to_python

ALPHABET = ["a", "b", "1", "-", "/", " ", "\x01", "\n", "\U0001F600", "\u0663"]

PAIRS = [
    (r"^\cA\cj?$", r"^\x01\n?\Z"),
    (r"^(?<year>\d{2})-(?<m>\d)$", r"^(?P<year>[0-9]{2})-(?P<m>[0-9])\Z"),
    (r"^\u{1F600}+$", r"^\U0001F600+\Z"),
    (r"^\uD83D\uDE00a?$", r"^\U0001F600a?\Z"),
    (r"^\u0061[\u{62}-\u{63}]$", r"^a[b-c]\Z"),
    (r"^a[^]b$", r"^a[\s\S]b\Z"),
    (r"a[]b|^1", r"^1"),
    (r"b\/|^\ca", r"b/|^\x01"),
]
# ECMA's ASCII \d \w: the compiled language follows them; ``search`` follows Python's re
# here (what python-jsonschema, the validator, does) as the syntax is Python's too.
CLASS_PAIRS = [
    (r"^\/\d+$", r"^/[0-9]+\Z"),
    (r"^[\w-]+\s?$", r"^[A-Za-z0-9_\-]+[ \n]?\Z"),
]


def _texts(max_len: int):
    for n in range(max_len + 1):
        for chars in itertools.product(ALPHABET, repeat=n):
            yield "".join(chars)


@pytest.mark.parametrize("ecma, python", PAIRS + CLASS_PAIRS)
def test_ecma_syntax_means_what_ecma_says(ecma: str, python: str) -> None:
    lang = pattern_language(ecma)
    full = None if lang is None else re.compile(to_python(lang), re.S)
    oracle = re.compile(python)
    for text in _texts(3):
        want = oracle.search(text) is not None
        if (ecma, python) in PAIRS:
            assert search(ecma, text) == want, (ecma, text)
        else:
            assert search(ecma, text) == (re.search(ecma, text) is not None), (ecma, text)
        assert (full is not None and full.fullmatch(text) is not None) == want, (ecma, text)


LOOKAHEADS = [
    r"^(?!foo)[a-z]+$",
    r"^(?=.*\d)(?=.*[a-z]).{3,}$",
    r"^(?!.*\.$)[a-z.]*",
    r"^(?!a|b$)",
    r"^(?!(?:ab)+$)(?=[ab])\w*$|^1",
    # lookaheads anywhere at the top level: the string splits where they stand
    r"(?=a)",
    r"(?!a)",
    r"^a(?!b)",
    r"a(?!b)f",
    r"o(?=.*1)(?!.*ab)[a-z]+",
    r"^(?!a)b|f(?=1)",
    r"(?=(?!a)b)",
    r"ab(?=a)(?=.)a$",
    r"b(?!$)",
]


@pytest.mark.parametrize("pattern", LOOKAHEADS)
def test_top_level_lookaheads_are_exact(pattern: str) -> None:
    # an alphabet where ECMA-262 and Python agree (ASCII, no line terminators): under = over = truth
    langs = [pattern_language(pattern), pattern_language(pattern, over=True)]
    compiled = [None if lang is None else re.compile(to_python(lang), re.S) for lang in langs]
    for n in range(6):
        for chars in itertools.product("ab1.fo", repeat=n):
            text = "".join(chars)
            want = re.search(pattern, text) is not None
            for c in compiled:
                assert (c is not None and c.fullmatch(text) is not None) == want, (pattern, text)
            assert search(pattern, text) == want


@pytest.mark.parametrize(
    "pattern, words",
    [
        (r"\u{110000}", "\\u{...}"),
        (r"\u{}", "\\u{...}"),
        (r"a\uD83", "\\u escape"),
        (r"(?:a(?=b))+", "inside a group"),
        (r"a|(b(?!c)|d)", "inside a group"),
        (r"a$(?!b)", "after '$'"),
        (r"^(?=a)*", "quantified"),
        (r"(?<=a)b", "lookbehind"),
        (r"(a)\1", "unsupported escape"),
    ],
)
def test_refused_with_offset(pattern: str, words: str) -> None:
    with pytest.raises(PatternError, match=re.escape(words)) as info:
        pattern_language(pattern)
    assert 0 <= info.value.pos < len(pattern)


def test_lookahead_pattern_through_the_schema_front_end() -> None:
    import jsonschema

    from kbnf_gpu import check
    from kbnf_gpu.frontends.json_schema import parse_json_schema

    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "pattern": "^(?!foo)[a-z]+$"}},
        "patternProperties": {"^(?!x-)[a-z-]+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    grammar = parse_json_schema(schema, whitespace="compact")
    for text in ['{"name":"bar"}', '{"name":"foobar"}', '{"name":"fo"}', '{"ab":1}', '{"x-a":1}', '{"a-x":2}',
                 '{"name":"ok","x-y":3}', '{"q":"s"}']:
        want = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
        assert (check.check_text(grammar, text).status == "complete") == want, text
