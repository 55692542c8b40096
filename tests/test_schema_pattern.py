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
import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kbnf_gpu.frontends.json_schema._pattern import JAVA_POSIX_CLASSES, PatternError, pattern_language, search
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
# Python's (Java's, PCRE's) \A \Z \z and a leading (?s), which real-world schemas write: what Python reads
PYTHON_SYNTAX = [
    (r"\A[ab1]+\Z", r"\A[ab1]+\Z"),
    (r"\Aa|b\z", r"\Aa|b\Z"),
    (r"(?s)a.b", r"(?s)a.b"),
    (r"(?s)^.\Z", r"(?s)^.\Z"),
    (r"(?s).*", r"(?s).*"),
]


def _texts(max_len: int):
    for n in range(max_len + 1):
        for chars in itertools.product(ALPHABET, repeat=n):
            yield "".join(chars)


@pytest.mark.parametrize("ecma, python", PAIRS + CLASS_PAIRS + PYTHON_SYNTAX)
def test_syntax_means_what_its_dialect_says(ecma: str, python: str) -> None:
    """ECMA-only syntax reads as ECMA-262 does, Python's (``\\A``, ``(?s)``) as Python does: the compiled
    language and ``search`` against the equivalent Python pattern."""
    lang = pattern_language(ecma)
    full = None if lang is None else re.compile(to_python(lang), re.S)
    oracle = re.compile(python)
    for text in _texts(3):
        want = oracle.search(text) is not None
        if (ecma, python) in CLASS_PAIRS:
            assert search(ecma, text) == (re.search(ecma, text) is not None), (ecma, text)
        else:
            assert search(ecma, text) == want, (ecma, text)
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
        (r"^(?=a)*", "quantified"),
        (r"(?<=a(?=b))c", "lookahead inside a lookbehind"),
        (r"x(?<!a$)c", "end anchor"),
        (r"(a)\1", "unsupported escape"),
        (r"\p{Script=Greek}", "unsupported Unicode property 'Script=Greek'"),  # scripts: not in unicodedata
        (r"a[\p{Alpha}]", "unsupported Unicode property 'Alpha'"),  # ECMA-262's Alphabetic, not Java's ASCII
        (r"\p{L", "unsupported Unicode property"),
        (r"\pL", "unsupported escape '\\p'"),
    ],
)
def test_refused_with_offset(pattern: str, words: str) -> None:
    with pytest.raises(PatternError, match=re.escape(words)) as info:
        pattern_language(pattern)
    assert 0 <= info.value.pos < len(pattern)


# Lookarounds the top-level construction cannot place: built by automaton (``_lookaround``).
LOOKAROUNDS = [
    r"^(?:(?!ab).)*$",  # the tempered token real-world schemas use
    r"(?:a(?=b))+",
    r"a|(b(?!c)|d)",
    r"a$(?!b)",
    r"(?<=a)b",
    r"(?<!a)b$",
    r"(?<=^a|ba)c",
    r"(?<=a.*)b$",  # variable width, as ECMA-262 allows
    r"^(?:(?<=a)b|a)*$",
    r"(?:^a|b)+c",
    r"x(?=a(?!b))",
    r"(?<=(?<!a)b)c",
    r"^(?:(?=.*a)(?=.*c).)*$",
]


def _check_by_brute_force(pattern: str, alphabet: str, max_len: int) -> None:
    """``under`` ⊆ what the ``regex`` module finds ⊆ ``over``, equal where the approximations agree."""
    import regex

    langs = [pattern_language(pattern), pattern_language(pattern, over=True)]
    under, over = [None if lang is None else re.compile(to_python(lang), re.S) for lang in langs]
    try:
        python_reads = re.compile(pattern) is not None
    except re.error:  # a variable-width lookbehind
        python_reads = False
    for n in range(max_len + 1):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            want = regex.search(pattern, text) is not None
            got_under = under is not None and under.fullmatch(text) is not None
            got_over = over is not None and over.fullmatch(text) is not None
            assert got_under <= want <= got_over, (pattern, text, got_under, want, got_over)
            if "\n" not in text:  # "$" before a final "\n" is the only reading the two differ on here
                assert got_under == want, (pattern, text)
            # ``search`` is Python's re where re reads the pattern, else the module's own (under) reading
            assert search(pattern, text) == (want if python_reads else got_under), (pattern, text)


@pytest.mark.parametrize("pattern", LOOKAROUNDS)
def test_lookarounds_anywhere_are_exact(pattern: str) -> None:
    _check_by_brute_force(pattern, "abcx\n", 5)


WORD_BOUNDARIES = [r"\bab", r"a\b", r"\Ba", r"^\w+\b", r"\b", r"\B", r"^\B$", r"x?\b(?:a|é)\b", r"\bé", r"(?!\b)a",
                   r"a\B-?", r"(?:\b\d)+$"]


@pytest.mark.parametrize("pattern", WORD_BOUNDARIES)
def test_word_boundaries_in_both_readings(pattern: str) -> None:
    """``\\b``'s ``\\w`` is ASCII to ECMA-262 (``re.A`` here) and Unicode to Python: ``under`` is what both
    readings accept, ``over`` what either does, and on ASCII text the two agree."""
    under, over = [None if lang is None else re.compile(to_python(lang), re.S)
                   for lang in (pattern_language(pattern), pattern_language(pattern, over=True))]
    for n in range(5):
        for chars in itertools.product("a1 é-", repeat=n):
            text = "".join(chars)
            python = re.search(pattern, text) is not None
            ecma = re.search(pattern, text, re.A) is not None if text else python  # ECMA's \B holds in ""
            got_under = under is not None and under.fullmatch(text) is not None
            got_over = over is not None and over.fullmatch(text) is not None
            assert got_under <= (python and ecma) and got_over >= (python or ecma), (pattern, text)
            if text.isascii() and text:
                assert got_under == got_over == python, (pattern, text)
            assert search(pattern, text) == python


def _look_patterns():
    from hypothesis import strategies as st

    chars = st.sampled_from(["a", "b", ".", "[ab]", "[^a]"])
    behind_body = st.recursive(
        st.one_of(chars, st.just("^")),
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map("".join),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            inner.map(lambda x: f"(?:{x}a)*"),
        ),
        max_leaves=4,
    )
    return st.recursive(
        st.one_of(chars, st.sampled_from(["^", "$"])),
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map("".join),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            st.tuples(inner, st.sampled_from(["*", "?", "{1,2}"])).map(lambda t: f"(?:{t[0]}b){t[1]}"),
            st.tuples(st.sampled_from(["?=", "?!"]), inner).map(lambda t: f"({t[0]}{t[1]})"),
            st.tuples(st.sampled_from(["?<=", "?<!"]), behind_body).map(lambda t: f"({t[0]}{t[1]})"),
        ),
        max_leaves=6,
    )


def test_random_lookaround_patterns_match_the_regex_module() -> None:
    from hypothesis import given, settings

    @settings(max_examples=120, deadline=None)
    @given(_look_patterns())
    def check(pattern: str) -> None:
        _check_by_brute_force(pattern, "abc\n", 4)

    check()


def test_lookaround_patterns_through_the_schema_front_end() -> None:
    import jsonschema

    from kbnf_gpu import check
    from kbnf_gpu.frontends.json_schema import parse_json_schema

    schema = {
        "type": "object",
        "properties": {"slug": {"type": "string", "pattern": "^(?:(?!--)[a-z-])+$"}},
        "patternProperties": {"(?<=^x)-": {"type": "integer"}},
        "additionalProperties": {"type": "boolean"},
    }
    grammar = parse_json_schema(schema, whitespace="compact")
    for text in ['{"slug":"a-b"}', '{"slug":"a--b"}', '{"slug":"-"}', '{"x-a":1}', '{"x-a":true}', '{"y-a":true}',
                 '{"y-a":1}', '{"slug":"ok","xx-":false}', '{"slug":"ok","x-":2}']:
        want = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
        assert (check.check_text(grammar, text).status == "complete") == want, text


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


# ECMA-262 names of General_Category values that the ``regex`` module (the oracle) reads the same way; it reads
# ``digit``, ``punct`` and ``cntrl`` as POSIX classes instead
PROPERTIES = ["L", "Lu", "Ll", "Letter", "LC", "Cased_Letter", "M", "Mn", "N", "Nd", "gc=Nd", "General_Category=P",
              "Pd", "Ps", "S", "Sc", "Sm", "Z", "Zs", "Space_Separator", "C", "Cc", "Cf", "Co", "Any", "ASCII"]


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(PROPERTIES), negated=st.booleans(), in_class=st.booleans(),
       cp=st.one_of(st.integers(0, 0x3FF), st.integers(0x2000, 0x206F), st.integers(0, 0x10FFFF)))
def test_unicode_property_escapes_match_the_regex_module(name: str, negated: bool, in_class: bool, cp: int) -> None:
    """``\\p{…}`` and ``\\P{…}`` (real-world schemas write ``^[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*$``): the compiled
    language and ``search`` agree with the ``regex`` module on code points assigned in this interpreter's
    Unicode version (a newer version may assign more)."""
    import regex

    text = chr(cp)
    assume(not 0xD800 <= cp <= 0xDFFF and unicodedata.category(text) != "Cn")
    escape = ("\\P" if negated else "\\p") + "{" + name + "}"
    pattern = f"^[{escape}_]$" if in_class else f"^(?:{escape}|_)$"
    want = regex.search(pattern, text) is not None
    compiled = re.compile(to_python(pattern_language(pattern)), re.S)
    assert (compiled.fullmatch(text) is not None) == want, (pattern, hex(cp))
    assert search(pattern, text) == want, (pattern, hex(cp))


@pytest.mark.parametrize("name", sorted(JAVA_POSIX_CLASSES))
def test_java_posix_classes_are_read_as_java_reads_them(name: str) -> None:
    """``\\p{Graph}`` and the other POSIX classes of ``java.util.regex`` (CloudFormation's schemas write
    ``^[\\p{Graph}\\x20]*$``), a syntax error to ECMA-262: Java's US-ASCII classes, checked against the
    ``regex`` module's POSIX classes in ASCII mode, negated too."""
    import regex

    oracle = regex.compile(f"(?a)[[:{name.lower()}:]]")
    pattern, negated = f"^[\\p{{{name}}}]$", f"^\\P{{{name}}}$"
    compiled = re.compile(to_python(pattern_language(pattern)), re.S)
    compiled_negated = re.compile(to_python(pattern_language(negated)), re.S)
    for cp in [*range(0x180), 0x2028, 0xFF10, 0x1F600]:
        want = oracle.fullmatch(chr(cp)) is not None
        assert (compiled.fullmatch(chr(cp)) is not None) == want == search(pattern, chr(cp)), (name, hex(cp))
        assert (compiled_negated.fullmatch(chr(cp)) is None) == want, (name, hex(cp))


def test_identity_escape_of_an_underscore() -> None:
    """``\\_`` is ``_`` to Python's ``re`` and to ECMA-262 without the ``u`` flag (schemas write
    ``^[a-zA-Z0-9\\-\\_]{2,50}$``)."""
    pattern = r"^[a-z\-\_]+\_x$"
    compiled = re.compile(to_python(pattern_language(pattern)), re.S)
    for text in ("a_x", "a-b__x", "_x", "ax", "a_", "a_y"):
        assert (compiled.fullmatch(text) is not None) == (re.search(pattern, text) is not None), text
        assert search(pattern, text) == (re.search(pattern, text) is not None), text


def _anchored_patterns():
    """Patterns of characters, anchors, groups and alternations (no lookarounds): what the piecewise
    construction (``_pieces``) builds, with runs of plain items between anchors and alternatives sharing
    their leading items (the two it joins or factors at once)."""
    word = st.text(alphabet="ab", min_size=1, max_size=3)
    return st.recursive(
        st.one_of(word, st.sampled_from(["^", "$", "a?", "[ab]"])),
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=4).map("".join),
            st.lists(inner, min_size=2, max_size=4).map(lambda xs: "(?:" + "|".join(xs) + ")"),
            st.tuples(inner, st.sampled_from(["*", "?", "{2}"])).map(lambda t: f"(?:{t[0]}){t[1]}"),
        ),
        max_leaves=8,
    )


@settings(max_examples=150, deadline=None)
@given(_anchored_patterns())
def test_anchors_alternatives_and_runs_match_the_regex_module(pattern: str) -> None:
    _check_by_brute_force(pattern, "ab\n", 4)


def test_long_plain_runs_and_wide_alternations_keep_their_language() -> None:
    """5,000 plain characters, and 5,000 words that share their leading letters, are joined and factored at
    once (one at a time, the first copied and hashed its growing body at each character, the second rebuilt
    its alternation at each word, and its automaton carried all 5,000 words through every state: 8 s, and
    past the time budget)."""
    from kbnf_gpu.frontends.json_schema._fsm import intersection_dfa

    def matches(pattern: str, text: str) -> bool:
        d = intersection_dfa([pattern_language(pattern)])
        q = 0
        for c in text:
            row = d.trans[q]
            q = next((row[i] for i, sym in enumerate(d.symbols) if any(a <= ord(c) <= b for a, b in sym)), -1)
            if q < 0:
                return False
        return d.accept[q]

    text = "abcdefghij" * 500
    assert matches("^" + text + "$", text)
    assert not matches("^" + text + "$", text[:-1] + "x") and not matches("^" + text + "$", text + "a")
    words = "|".join(f"word{i}" for i in range(5000))
    assert matches(f"^({words})+$", "word17word4999word0")
    assert not matches(f"^({words})+$", "word5000") and not matches(f"^({words})+$", "word")
    assert matches(f"({words})", "xx word123 yy") and not matches(f"({words})", "wordx")
