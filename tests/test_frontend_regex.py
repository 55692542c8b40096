"""The regex front end: IR shape, errors with columns, canonical form, language."""
from __future__ import annotations

import re

import pytest
import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from data_paths import corpus_cases
from kbnf_gpu import ir
from kbnf_gpu.automata import regexpr_to_dfa
from kbnf_gpu.errors import DFATooLarge, GrammarError
from kbnf_gpu.frontends import parse_grammar
from kbnf_gpu.frontends.regex import has_lazy_quantifier, parse_regex, translate_regex



def _pattern(g: ir.Grammar) -> ir.Pattern:
    (rule,) = g.rules
    assert isinstance(rule.body, ir.Terminal)
    assert isinstance(rule.body.expr, ir.Pattern)
    return rule.body.expr


# ------------------------------------------------------------------ IR


def test_ir_shape() -> None:
    g = parse_regex("a[bc]+")
    assert g.syntax == "regex" and g.end_mode == "eos" and g.start == "start"
    assert g.source == "a[bc]+"
    assert [r.name for r in g.rules] == ["start"]
    assert _pattern(g) == ir.Pattern("a[bc]+", "")
    assert parse_grammar("a[bc]+", "regex") == g


@pytest.mark.parametrize(
    "pattern, canonical",
    [
        ("^abc$", "abc"),
        (r"\Aab\Z", "ab"),
        ("^", ""),
        ("$", ""),
        ("^$", ""),
        (r"^$|^https://x\.com/", r"(?:|https://x\.com/)"),
        ("(^a|b$)", "[ab]"),
        ("(?:^(?:^a))", "a"),
        ("(?i)^a", "a"),
        ("a{1,3}?", "a{1,3}"),
        ("a+?b??c*?", "a+b?c*"),
        ("[]a]", r"[\]a]"),
        ("x{,2}", "x{0,2}"),
        ("{}", r"\{\}"),
        (r"\u0041\U0001F600\N{GREEK SMALL LETTER ALPHA}", "A😀α"),
        (r"[\u0010-\u006F]", "[\\x10-o]"),
        ("(?x) a b  # comment\n c", "abc"),
        (r"\x00\n\t", r"\x00\x0a\x09"),
        ("(?P<name>ab)(?#note)c", "abc"),
        (r"[\d\w\s\D]", r"[\d\w\s\D]"),
        # anchors and lookarounds stay where they mean something
        ("a^b$c", "a^b$c"),
        ("(?m)a$\n^b", "a(?m:$)\\x0a(?m:^)b"),
        ("^(?=a$)a$", "(?=a$)a"),
        (r"\bfoo\B", r"\bfoo\B"),
        ("(?<=a)b(?<!c)(?!d)", "(?<=a)b(?<!c)(?!d)"),
        # the escapes xgrammar's regexes use where Python raises
        (r"\u{1F600}\u{41}", "😀A"),
        (r"x\cAy\cj", r"x\x01y\x0a"),
        (r"\e", r"\x1b"),
        ("(?<name>ab)+", "(?:ab)+"),
        (r"[\u{41}-\u{5a}\cI]", r"[A-Z\x09]"),
        (r"\\u{2}", r"\\u{2}"),  # an escaped backslash, then "u" twice
    ],
)
def test_canonical_form(pattern: str, canonical: str) -> None:
    assert _pattern(parse_regex(pattern)).source == canonical


@pytest.mark.parametrize(
    "pattern, flags, out",
    [
        ("a.b", "", ("a.b", "")),
        ("a.b", "s", ("a.b", "s")),
        ("ab", "i", ("ab", "i")),
        ("(?i)ab", "", ("ab", "i")),
        ("(?s)a.", "m", ("a.", "s")),
        ("a", "mux", ("a", "")),
        ("(?i:a)B", "", ("(?i:a)B", "")),
        ("(?-i:a)B", "i", ("(?-i:a)B", "i")),
    ],
)
def test_flags(pattern: str, flags: str, out: tuple[str, str]) -> None:
    assert _pattern(parse_regex(pattern, flags)) == ir.Pattern(*out)


def test_lazy_detection() -> None:
    assert has_lazy_quantifier(r'".*?"')
    assert has_lazy_quantifier("(a{2,3}?)|b")
    assert not has_lazy_quantifier("a*b+c?d{2}")


# ------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "pattern, column, words",
    [
        (r"(a)\1", 4, "backreference"),
        ("(?P<x>a)(?P=x)", 9, "backreference"),
        ("(a)?(?(1)b|c)", 5, "conditional"),
        ("(?>ab)", 1, "atomic"),
        ("ab*+", 3, "possessive"),
        ("(a|b", 1, "missing )"),
        ("a)", 2, "unbalanced parenthesis"),
        ("[z-a]", 2, "bad character range"),
        ("ab**", 4, "multiple repeat"),
        (r"x\q", 2, r"bad escape \q"),
        (r"ab\u{110000}", 3, r"\u{...}"),
        (r"\u{}", 1, r"\u{...}"),
        (r"x\c1", 2, r"\c"),
        (r"\u{41}\e(?<1x>a)", 12, "group name"),  # columns count the original text
        ("(?a)\\d", 1, "ASCII"),
    ],
)
def test_errors_have_columns(pattern: str, column: int, words: str) -> None:
    with pytest.raises(GrammarError) as info:
        parse_regex(pattern)
    e = info.value
    assert (e.line, e.column) == (1, column), str(e)
    assert words in str(e)
    assert e.excerpt is not None and e.excerpt.splitlines()[0] == pattern


def test_deep_nesting_is_a_grammar_error_at_the_deepest_group() -> None:
    with pytest.raises(GrammarError, match="nests groups too deeply") as info:
        parse_regex("x[(]" + "(?:a|" * 3000 + "b" + ")" * 3000)
    assert info.value.column == len("x[(]") + len("(?:a|") * 2999 + 1  # the last "(?:" opened (1-based)


def test_error_line_in_verbose_pattern() -> None:
    with pytest.raises(GrammarError) as info:
        parse_regex("(?x)\n  (a)   # fine\n  c\\1\n")
    assert (info.value.line, info.value.column) == (3, 4)


@pytest.mark.parametrize("flags", ["q", "a", "L"])
def test_bad_flags(flags: str) -> None:
    with pytest.raises(GrammarError, match="flag"):
        parse_regex("a", flags)


def test_not_a_string() -> None:
    with pytest.raises(GrammarError):
        parse_regex(b"abc")  # type: ignore[arg-type]


def test_anchors_kept_without_stripping() -> None:
    assert translate_regex("^ab$", strip_anchors=False).source == "^ab$"
    assert translate_regex("^ab$").source == "ab"


# ------------------------------------------- canonical form = same language

_ATOMS = ["a", "b", "ab", ".", "[ab]", "[^a]", r"\d", r"\W", "[a-c]", r"\.", "(a|b)", "(?:ab|a)", "()", "é",
          "^", "$", r"\A", r"\Z", r"\b", r"\B", "(?=a)", "(?!b)", "(?<=a)", "(?<!\n)"]
_QUANTS = ["", "", "*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "??"]
_BOUNDED_QUANTS = ["", "", "?", "{2}", "{1,2}", "??"]
_UNBOUNDED = re.compile(r"[*+]|\{0,\}")


@st.composite
def _regexes(draw: st.DrawFn, depth: int = 0) -> str:
    """Patterns of atoms and groups, each maybe quantified. A group holding an unbounded quantifier is repeated
    a bounded number of times only: Python's ``re``, the oracle, backtracks exponentially on unbounded
    repetition nested in unbounded repetition (``(?i:(?i:(a|b){0,}.*(?<!\n)*|.)+(?<!\n)*b??)*?`` ran for
    minutes on six characters)."""
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        quants = _QUANTS
        if depth < 2 and draw(st.booleans()):
            inner = draw(_regexes(depth + 1))
            atom = draw(st.sampled_from(["(%s)", "(?:%s)", "(?i:%s)", "(?s:%s)", "(?m:%s)", "(?=%s)", "(?!%s)"])) % inner
            if _UNBOUNDED.search(inner):
                quants = _BOUNDED_QUANTS
        else:
            atom = draw(st.sampled_from(_ATOMS))
        parts.append(atom + draw(st.sampled_from(quants)))
    alt = "".join(parts)
    if draw(st.booleans()):
        alt += "|" + draw(st.sampled_from(_ATOMS))
    return alt


_TEXTS = st.text(alphabet="abcAB.é\n1-", max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_regexes(), st.sampled_from(["", "i", "s", "m"]), st.lists(_TEXTS, min_size=1, max_size=8))
def test_canonical_means_the_same(pattern: str, flags: str, texts: list[str]) -> None:
    try:
        re.compile(pattern)
    except re.error:
        assume(False)  # "^*", "(?<=a)+": Python refuses to repeat a zero-width item
    out = translate_regex(pattern, flags)
    bits = sum(getattr(re, f.upper()) for f in out.flags)
    orig_bits = sum(getattr(re, f.upper()) for f in flags)
    try:
        dfa = regexpr_to_dfa(out)  # the DFA builder reads the canonical form
    except DFATooLarge:
        dfa = None  # read fine; only the state limit stopped the build
    for t in texts + [""]:
        want = re.fullmatch(pattern, t, orig_bits) is not None
        assert (re.fullmatch(out.source, t, bits) is not None) == want, (pattern, out, t)
        if dfa is not None:
            assert dfa.matches(t.encode()) == want, (pattern, out, t)


# ---------------------------------------------------------- language tests


def _checker(g: ir.Grammar):
    """``text -> status`` for one grammar; builds the parser once when check.py allows it."""
    from kbnf_gpu import check

    try:
        from kbnf_gpu.normalize import normalize
        from kbnf_gpu.runtime.earley import EarleyParser

        parser = EarleyParser(normalize(g))
        return lambda s: check.check_parser(parser, s).status
    except (ImportError, AttributeError, TypeError):
        return lambda s: check.check_text(g, s).status


def _cases(fmt: str) -> list[dict]:
    return corpus_cases(fmt)


@pytest.mark.parametrize("case", _cases("regex"), ids=lambda c: c["id"])
def test_corpus(case: dict) -> None:
    """Every regex case, the ECMAScript-escape ones Python's re refuses included."""
    status_of = _checker(parse_regex(case["grammar"]))
    prefix_ok = set(case.get("prefix_ok") or [])
    for s in case["accept"]:
        assert status_of(s) == "complete", s
    for s in case["reject"]:
        status = status_of(s)
        assert status != "complete", s
        if s in prefix_ok:
            assert status == "prefix", s


_DIFF_PATTERNS = [
    "abc",
    "a*b+c?",
    "(ab|cd){1,3}e?",
    "[a-c]+[^a-c]",
    r"\d{2,3}(\.\d+)?",
    "(a|ab)(c|bcd)",
    "(?i)ab[c-e]",
    "a.c",
    "(?s)a.c",
    r"[\w-]+@[\w]+\.(com|org)",
    "x(y|z)*?x",
    "^(a|b)*abb$",
    r"\s*-?\d+\s*",
    "(é|ü)+ß?",
    "(?x) a b | c  # comment",
    r"(?i)k+s?",
    r"\w+\d",
    r"[^\W\d]+",
    r"(?i)[σa-c]+",
    r"(?:(?!ab).)*",
    r"(?=.*\d)(?=.*[a-z])\w{2,}",
    r"\b\w+\b(?: \b\w+)*",
    r"a.*(?<!b)",
    r"(?m)(?:^a|b$\n?)+",
    r"(?:(?<=a+)b|a)+",  # variable-width lookbehind: the ``regex`` module is the oracle
]


@pytest.mark.parametrize("pattern", _DIFF_PATTERNS)
def test_differential_against_python_re(pattern: str) -> None:
    status_of = _checker(parse_regex(pattern))
    alphabet = sorted(set(re.sub(r"\\.|[\[\](){}*+?|^$\-]", "", pattern)) | set("ab1 .@x\né٣KſΣς"))

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.text(alphabet=alphabet, max_size=10))
    def run(text: str) -> None:
        want = regex.fullmatch(pattern, text) is not None
        status = status_of(text)
        assert (status == "complete") == want, (pattern, text, status)

    run()


_FAR = [  # (pattern, texts built around its counts)
    ("a{64,70}", ["a" * n for n in (0, 63, 64, 65, 70, 71)] + ["a" * 64 + "b"]),
    ("x(ab){64}c?", ["x" + "ab" * n + c for n in (63, 64, 65) for c in ("", "c", "cc")]),
    (".{0,100}z", ["q" * n + "z" for n in (0, 99, 100, 101)] + ["é" * 100 + "z", "\n" * 3 + "z"]),
    ("(?s).{0,100}z", ["\n" * 3 + "z", "\n" * 101 + "z"]),
    ("(?i)k[a-c]{70,}", ["K" + "aBc" * 23 + c for c in ("", "a", "ab", "x")]),
    (r"(\d{3}-){64,66}\d", ["123-" * n + "9" for n in (63, 64, 66, 67)] + ["123-" * 64 + "٣"]),
    ("b{64}", ["b" * 64, "b" * 63, "b" * 65]),
]


@pytest.mark.parametrize("pattern, texts", _FAR)
def test_far_counts_are_grammar_repetitions_and_exact(pattern: str, texts: list[str]) -> None:
    """A top-level repetition counting 64 or more becomes a grammar ``Repetition`` of its item's lexeme (one
    lexeme's automaton would hold a copy per count); the language stays the regex's."""
    g = parse_regex(pattern)
    body = g.rules[0].body
    assert any(isinstance(x, ir.Repetition) for x in (body, *ir.children(body))), body
    status_of = _checker(g)
    verdicts = set()
    for text in texts:
        want = regex.fullmatch(pattern, text) is not None
        verdicts.add(want)
        assert (status_of(text) == "complete") == want, (pattern, text)
    assert verdicts == {True, False} or pattern.startswith("(?s)")


@pytest.mark.parametrize("pattern", ["a{64}(?=a)a*", r"\ba{70}", "a{70}$\n?", "(?m)a{70}\n^b"])
def test_far_counts_beside_anchors_or_lookarounds_stay_one_lexeme(pattern: str) -> None:
    """An anchor or a lookaround could look across the pieces: such a pattern stays one lexeme."""
    assert isinstance(_pattern(parse_regex(pattern)), ir.Pattern)


def test_far_count_of_any_character_compiles() -> None:
    """``.{0,2000}`` as one lexeme passed ``max_dfa_states`` (a copy of the UTF-8 states per count)."""
    from kbnf_gpu.normalize import normalize

    bnf = normalize(parse_regex(".{0,2000}"))
    assert max(d.n_states for d in bnf.dfas) < 1000
