"""KBNF front end: exact IR, escapes and regexes checked against the ``kbnf``
package, error positions, a print/parse round trip, deep nesting, and the
language of the seed doc's examples and of the corpus (via ``check``)."""
from __future__ import annotations

import importlib

import re
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data_paths import SEED_DOC, corpus_cases
from kbnf_gpu import ir
from kbnf_gpu.errors import GrammarError
from kbnf_gpu.frontends import parse_grammar
from kbnf_gpu.frontends._rust_regex import RustRegexError, rust_to_python
from kbnf_gpu.frontends.kbnf import parse_kbnf


P = ir.TerminalKind.PLAIN


def lit(s: str | bytes, kind: ir.TerminalKind = P) -> ir.Terminal:
    return ir.Terminal(ir.Literal(s.encode() if isinstance(s, str) else s), kind)


def body(text: str, name: str = "start") -> ir.Expr:
    bodies = [r.body for r in parse_kbnf(text).rules if r.name == name]
    assert len(bodies) == 1
    return bodies[0]


# ------------------------------------------------------------------ IR shape


def test_grammar_header() -> None:
    g = parse_kbnf('start ::= "a";')
    assert g == ir.Grammar((ir.Rule("start", lit("a")),), "start", "kbnf", "eager")
    assert g.source == 'start ::= "a";'
    assert parse_grammar('s ::= "a";', "kbnf", start="s").start == "s"


def test_operators() -> None:
    a, b, c = lit("a"), lit("b"), lit("c")
    assert body('start ::= "a" "b" | "c";') == ir.Choice((ir.Sequence((a, b)), c))
    assert body('start ::= "a""b";') == ir.Sequence((a, b))
    assert body('start ::= "a" , "b";') == ir.Sequence((a, b))
    assert body('start ::= ("a" | "b") "c";') == ir.Sequence((ir.Choice((a, b)), c))
    assert body('start ::= ((("a")));') == a
    assert body('start ::= ["a"];') == ir.Repetition(a, 0, 1)
    assert body('start ::= {"a"};') == ir.Repetition(a, 0, None)
    assert body('start ::= "a"?;') == ir.Repetition(a, 0, 1)
    assert body('start ::= "a"*;') == ir.Repetition(a, 0, None)
    assert body('start ::= "a"+;') == ir.Repetition(a, 1, None)
    assert body('start ::= ["a" | "b"]+;') == ir.Repetition(ir.Repetition(ir.Choice((a, b)), 0, 1), 1, None)
    assert body('start ::= ("a" "b")* "c";') == ir.Sequence((ir.Repetition(ir.Sequence((a, b)), 0, None), c))
    assert body('start ::= "a" ? "b";') == ir.Sequence((ir.Repetition(a, 0, 1), b))


def test_refs_comments_and_repeated_definitions() -> None:
    g = parse_kbnf(
        "(* head *) start ::= x (* mid *) Y_1;\n"
        "x ::= 'x';\n(* between *)\nY_1 ::= _z;\n_z ::= 'z';\nx ::= \"X\";(* tail *)"
    )
    assert [r.name for r in g.rules] == ["start", "x", "Y_1", "_z", "x"]
    assert g.rules[0].body == ir.Sequence((ir.Ref("x"), ir.Ref("Y_1")))
    assert g.rules[0].body.items[1].span == ir.Span(1, 34)  # type: ignore[union-attr]
    assert g.rules[4].body == lit("X") and g.rules[4].span == ir.Span(6, 1)


def test_terminal_names_and_spans() -> None:
    g = parse_kbnf('start ::=\n  "a" #e"b+"\n  [#substrs\'xy\'];')
    seq = g.rules[0].body
    assert isinstance(seq, ir.Sequence)
    first, second, third = seq.items
    assert isinstance(first, ir.Terminal) and first.name == '"a"' and first.span == ir.Span(2, 3)
    assert isinstance(second, ir.Terminal) and second.name == '#e"b+"' and second.span == ir.Span(2, 7)
    assert isinstance(third, ir.Repetition)
    assert third.item == lit("xy", ir.TerminalKind.SUBSTRINGS)
    assert third.item.span == ir.Span(3, 4)  # type: ignore[union-attr]


def test_regex_kinds() -> None:
    assert body('start ::= #"a+";') == ir.Terminal(ir.Pattern("a+"))
    assert body("start ::= #'a+';") == ir.Terminal(ir.Pattern("a+"))
    assert body('start ::= #e"a+";') == ir.Terminal(ir.Pattern("a+"), ir.TerminalKind.EARLY_END)
    assert body('start ::= #ex"a+";') == ir.Terminal(ir.Pattern("a+"), ir.TerminalKind.COMPLEMENT)
    assert body('start ::= #substrs"a+\\n";') == lit("a+\n", ir.TerminalKind.SUBSTRINGS)


def test_empty_string_terminal_is_kept() -> None:
    assert body('start ::= "" "a";') == ir.Sequence((lit(""), lit("a")))


def test_bom_and_crlf() -> None:
    g = parse_kbnf('\ufeffstart ::= "a"\r\n  | "b";\r\n')
    assert g.rules[0].body == ir.Choice((lit("a"), lit("b")))


# ------------------------------------------------------------------- escapes

# (escape text inside "...", the code points it means)
ESCAPES = [
    (r"\n", "\n"), (r"\t", "\t"), (r"\r", "\r"), (r"\b", "\b"), (r"\f", "\f"), (r"\0", "\0"),
    (r"\'", "'"), (r"\"", '"'), (r"\\", "\\"), (r"\/", "/"),
    (r"\x41", "A"), (r"\xAb", "\xab"), (r"\x80", "\x80"), (r"\xff", "\xff"),
    (r"\u0041", "A"), (r"\u00E9", "é"), (r"\u{41}", "A"), (r"\u{1F600}", "😀"), (r"\u{0000041}", "A"),
    (r"\u{10FFFF}", "\U0010ffff"),
    (r"\101", "A"), (r"\12", "\n"), (r"\0123", "\n3"), (r"\08", "\x008"), (r"\377", "\xff"),
    (r"\400", " 0"), (r"\477", "'7"), (r"\7", "\x07"),
]  # fmt: skip
# Beyond the kbnf crate (it rejects these): JavaScript's \v and UTF-16 surrogate pairs.
EXTRA_ESCAPES = [(r"\v", "\v"), (r"\ud83d\ude00", "😀"), (r"\uD83D\uDE00", "😀")]
# (grammar, line, column of the error): the crate rejects all of these too.
BAD_ESCAPES = [r"\d", r"\a", r"\e", r"\q", r"\8", r"\ ", r"\U00000041", r"\x4", r"\xg0", r"\u004",
               r"\u{}", r"\u{110000}", r"\u{D800}", r"\uD800", r"\ude00", r"\u{1F600"]  # fmt: skip


@pytest.mark.parametrize("esc,meaning", ESCAPES + EXTRA_ESCAPES)
def test_string_escape(esc: str, meaning: str) -> None:
    assert body(f'start ::= "{esc}";') == lit(meaning)
    # the same escapes inside single quotes and inside regex and substrings text
    assert body(f"start ::= '{esc}';") == lit(meaning)
    assert body(f'start ::= #substrs"{esc}";') == lit(meaning, ir.TerminalKind.SUBSTRINGS)


def test_quotes_inside_other_quotes() -> None:
    assert body("start ::= 'a\"b';") == lit('a"b')
    assert body('start ::= "a\'b";') == lit("a'b")
    assert body('start ::= "a\nb";') == lit("a\nb")  # a raw newline is allowed


@pytest.mark.parametrize("esc", BAD_ESCAPES)
def test_bad_escape(esc: str) -> None:
    with pytest.raises(GrammarError) as e:
        parse_kbnf(f'start ::= "{esc}";')
    assert (e.value.line, e.value.column) == (1, 12)
    assert e.value.rule == "start"


# ---------------------------------------------------------------- the oracle


@lru_cache(maxsize=1)
def _kbnf_vocab():
    kbnf = importlib.import_module("kbnf")
    tokens = {i: kbnf.Token(bytes([i])) for i in range(256)}
    return kbnf.Vocabulary(tokens, {i: f"<{i}>" for i in range(256)})


def kbnf_status(grammar: str, data: bytes) -> str:
    """The kbnf package fed one byte at a time: build-error, rejected, finished or ongoing."""
    kbnf = importlib.import_module("kbnf")
    try:
        engine = kbnf.Engine(grammar, _kbnf_vocab())
    except Exception:  # the binding raises plain exceptions for bad grammars
        return "build-error"
    result = None
    for i, byte in enumerate(data):
        try:
            result = engine.try_accept_new_token(byte)
        except Exception:
            return "rejected"
        if result == kbnf.AcceptTokenResult.Finished and i != len(data) - 1:
            return "finished-early"
    return "finished" if result == kbnf.AcceptTokenResult.Finished else "ongoing"


@pytest.mark.parametrize("esc,meaning", ESCAPES)
def test_escape_matches_kbnf(esc: str, meaning: str) -> None:
    grammar = f'start ::= "{esc}" "\\x01";'
    assert kbnf_status(grammar, meaning.encode() + b"\x01") == "finished"
    assert body(grammar) == ir.Sequence((lit(meaning), lit("\x01")))


@pytest.mark.parametrize("esc", [e for e in BAD_ESCAPES if e != r"\u{1F600"] + [r"\v"])
def test_bad_escape_matches_kbnf(esc: str) -> None:
    assert kbnf_status(f'start ::= "{esc}";', b"A") == "build-error"


# ------------------------------------------------------------------- regexes

# (Rust regex as written inside #"..." in KBNF text, Python pattern it becomes)
REGEX_TRANSLATIONS = [
    (r"[0-9]+", "[0-9]+"),
    (r"\\d{2}", r"[\d]{2}"),
    (r"\\A\\{( |\n)*\\z", r"\{[ \x0a]*"),  # anchors at the ends are whole-match no-ops
    (r"^a$", "a"),
    (r"\\x{41}\\u{e9}", "Aé"),
    (r"(?P<n>a)(?<m>b)", "ab"),
    (r"a(?i)b|c", "(?:a(?i:b)|(?i:c))"),
    (r"a**", "(?:a*)*"),
    (r"a{ 2 , 3 }", "a{2,3}"),
    (r"a+?", "a+"),
    (r"[[:digit:]x]", "[0-9x]"),
    (r"[[:^alpha:]]", "[^A-Za-z]"),
    (r"[^[:^alpha:]]", "[A-Za-z]"),
    (r"[[:^alpha:]0]", "[\\x00-@\\[-`{-\U0010ffff0]"),
    (r"\\pN", None),
    (r"(?u)a", "a"),
    (r"\\#\\~\\ ", "#~ "),
    (r"(?:a|a)", "a(?:|)"),
    (r"a(?:|)", "a(?:|)"),
]


@pytest.mark.parametrize("rust,python", REGEX_TRANSLATIONS)
def test_regex_translation(rust: str, python: str | None) -> None:
    term = body(f'start ::= #"{rust}";')
    assert isinstance(term, ir.Terminal) and isinstance(term.expr, ir.Pattern)
    if python is not None:
        assert term.expr.source == python


@pytest.mark.parametrize(
    "pattern,message",
    [
        (r"\pL", None), (r"\b", "word boundary"), (r"\<", "word boundary"), (r"(?=a)", "look-around"),
        (r"\1", "back-references"), (r"(?x)a", "verbose"), (r"(?-u)a", "(?-u)"), (r"[a[b]]", "nested"),
        (r"[a&&b]", "set operations"), (r"[a--b]", "set operations"), (r"\p{Greek}", "Greek"),
        (r"a{,3}", "counted repetition"), (r"a{3,1}", "maximum is below"), (r"{", "counted repetition"),
        (r"*", "nothing to repeat"), (r"(a", "unclosed group"), (r"a)", "unmatched"), (r"[a-", "unclosed"),
        (r"[z-a]", "invalid class range"), (r"\x{D800}", "scalar"), (r"\e", "unsupported escape"), ("\\", "trailing"),
    ],
)  # fmt: skip
def test_rust_regex_errors(pattern: str, message: str | None) -> None:
    if message is None:  # supported: \pL is the Letter category
        assert re.fullmatch(rust_to_python(pattern), "é")
        return
    with pytest.raises(RustRegexError) as e:
        rust_to_python(pattern)
    assert message in e.value.message


def test_unicode_categories() -> None:
    letter = re.compile(rust_to_python(r"\p{L}+"))
    assert letter.fullmatch("éΩж") and not letter.fullmatch("é1")
    assert re.fullmatch(rust_to_python(r"[\p{Lu}\d]+"), "AΩ7") and not re.fullmatch(rust_to_python(r"\p{Lu}"), "a")
    assert re.fullmatch(rust_to_python(r"\P{Letter}"), "1") and not re.fullmatch(rust_to_python(r"\PL"), "a")
    assert re.fullmatch(rust_to_python(r"[^\p{Nd}]"), "x") and not re.fullmatch(rust_to_python(r"[^\pN]"), "٣")


def test_regex_error_position_points_into_the_grammar() -> None:
    with pytest.raises(GrammarError) as e:
        parse_kbnf('start ::= "x"\n  #"ab\\\\bc";')
    assert (e.value.line, e.value.column, e.value.rule) == (2, 7, "start")
    with pytest.raises(GrammarError) as e:
        parse_kbnf('start ::= #"a(?=b)";')  # Rust regex has no lookarounds: reported inside the regex
    assert (e.value.line, e.value.column) == (1, 14)


# Regexes whose language kbnf decides: membership of each string must agree.
REGEX_LANGUAGE = [
    (r"\\d+", ["1", "٣٤", "a", ""]),
    (r"\\w+", ["é_1", "-", "ab"]),
    (r"[[:alpha:]]+", ["abc", "é", "a1"]),
    (r"\\pL+", ["éΩ", "1"]),
    (r"\\p{Lu}[a-z]*", ["Abc", "abc", "Ω"]),
    (r"a(?i)b|c", ["aB", "C", "ab", "A"]),
    (r"(?i:ab)c", ["ABc", "abC"]),
    (r"\\A\\{( |\n|\r|\t)*\\z", ["{", "{ \n", " {"]),
    (r"[^a]", ["\n", "b", "a"]),
    (r".", ["\n", "é", "a"]),
    (r"(?s).", ["\n"]),
    (r"a{2,3}", ["a", "aa", "aaa", "aaaa"]),
    (r"a**b", ["b", "aab"]),
    (r"\\x{41}\\u0042\\U00000043", ["ABC", "AB"]),
    (r"[a-c~~b]", ["b"]),
    (r"\\.\\*", [".*", "a*"]),
    (r'"([^\\\\"\u0000-\u001f]|\\\\["\\\\bfnrt]|\\\\u[0-9A-Fa-f]{4})*"', ['"ok"', '"a\\"b"', '"\\x"', '"\\u00e9"']),
]


@pytest.mark.parametrize("pattern,strings", REGEX_LANGUAGE)
def test_regex_language_matches_kbnf(pattern: str, strings: list[str]) -> None:
    check = importlib.import_module("kbnf_gpu.check")
    grammar = f'start ::= #"{pattern}" "\\x01";'
    theirs_build = kbnf_status(grammar, b"")
    try:
        g = parse_kbnf(grammar)
    except GrammarError:
        assert theirs_build == "build-error" or "~~" in pattern  # we refuse class set operations
        return
    for s in strings:
        data = s.encode() + b"\x01"
        theirs = kbnf_status(grammar, data) == "finished"
        ours = check.check_text(g, data).status == "complete"
        assert ours == theirs, (pattern, s)


# ---------------------------------------------------------------- the doc


def _doc_syntax_section() -> str:
    doc = SEED_DOC.read_text(encoding="utf-8")
    return doc[doc.index("§KBNF Grammar") : doc.index("§Performance")]


def _doc_examples() -> list[str]:
    """The grammars of the Rust examples and every ``start ::= ...;`` statement of the syntax section."""
    raw = re.findall(r'r##"(.*?)"##', SEED_DOC.read_text(encoding="utf-8"), re.S)
    return raw + re.findall(r"^start ::=[^\n]*;", _doc_syntax_section(), re.M)


def test_doc_examples_found() -> None:
    assert len(_doc_examples()) >= 30


@pytest.mark.parametrize("grammar", _doc_examples())
def test_doc_example_parses(grammar: str) -> None:
    g = parse_kbnf(grammar)
    assert g.start == "start" and g.end_mode == "eager"


def test_doc_statements_and_comments_as_one_grammar() -> None:
    """The syntax section's statements and ``(* comments *)`` in document order form one grammar."""
    pieces = re.findall(r"\(\*.*?\*\)|^start ::=[^\n]*;", _doc_syntax_section(), re.M | re.S)
    assert sum(p.startswith("(*") for p in pieces) >= 15
    g = parse_kbnf("\n".join(pieces))
    assert len(g.rules) == sum(p.startswith("start") for p in pieces)


DOC_LANGUAGE = [
    ('start ::= "A" ["B"];', ["A", "AB"], ["B", "ABB"]),
    ('start ::= "A"? "B";', ["B", "AB"], ["A", "AAB"]),
    ('start ::= ("{"start"}")?;', ["", "{}", "{{}}"], ["{", "{}}", "}{"]),
    ('start ::= {"A"|"C"} "B";', ["B", "ACAB"], ["A", "BB"]),
    ('start ::= ("A"|"B")+ "C";', ["AC", "ABBAC"], ["C", "ACC"]),
    ('start ::= ("A"|"B") "C";', ["AC", "BC"], ["ABC", "C"]),
    ('start ::= #".*A";', ["A", "xyzA", "AA"], ["", "Ax", "\nA"]),
    ('start ::= #substrs"AB" \'\\n\';', ["\n", "A\n", "B\n", "AB\n"], ["BA\n", "AA\n"]),
    ('start ::= "A";\nstart ::= "B";', ["A", "B"], ["AB", ""]),
    ('start ::= "你好" #e"(.|\\n)*\\n\\n";', ["你好a\n\n", "你好\n\n"], ["你好a\n\nb\n\n", "你好"]),
]


@pytest.mark.parametrize("grammar,accept,reject", DOC_LANGUAGE)
def test_doc_example_language(grammar: str, accept: list[str], reject: list[str]) -> None:
    check = importlib.import_module("kbnf_gpu.check")
    g = parse_kbnf(grammar)
    for s in accept:
        assert check.check_text(g, s).status == "complete", s
    for s in reject:
        assert check.check_text(g, s).status != "complete", s


# -------------------------------------------------------------------- errors

ERRORS = [
    # (grammar, line, column, words in the message)
    ('start ::= "abc;', 1, 11, "unclosed string"),
    ("start ::= 'abc", 1, 11, "unclosed string"),
    ('start ::= ("a" | "b";', 1, 11, "unclosed '('"),
    ('start ::= "x"\n  ["a"\n;', 2, 3, "unclosed '['"),
    ('start ::= {"a"];', 1, 15, "does not close '{'"),
    ('start ::= "a" );', 1, 15, "unmatched ')'"),
    ('start ::= "a";\nb ::= "\\q";', 2, 8, "invalid escape"),
    ('start := "a";', 1, 7, "expected '::='"),
    ('start "a";', 1, 7, "expected '::='"),
    ('start ::= "a"', 1, 14, "missing ';'"),
    ('start ::= "a" (* c *)\nfoo ::= "b";', 1, 14, "missing ';'"),
    ('start ::= "a" | ;', 1, 17, "empty alternative"),
    ('start ::= | "a";', 1, 11, "empty alternative"),
    ('start ::= ("a" |);', 1, 17, "empty alternative"),
    ('start ::= ;', 1, 11, "empty rule body"),
    ('start ::= "a" ();', 1, 16, "empty group"),
    ('1start ::= "a";', 1, 1, "invalid identifier"),
    ('start ::= a-b;', 1, 11, "invalid identifier"),
    ('start ::= "a";\näb ::= "x";', 2, 1, "invalid identifier"),
    ('start ::= foo;', 1, 11, "undefined nonterminal 'foo'"),
    ('start ::= "a";\nbar ::= "b"\n  baz;', 3, 3, "undefined nonterminal 'baz'"),
    ('start ::= #"(a";', 1, 13, "unclosed group"),
    ('start ::= #"[a-";', 1, 13, "unclosed character class"),
    ('start ::= #x"a";', 1, 11, "quoted regex"),
    ('start ::= "a"?*;', 1, 15, "second postfix"),
    ('start ::= *"a";', 1, 11, "must follow a symbol"),
    ('start ::= "a" (* comment', 1, 15, "unclosed comment"),
    ('start ::= "a",;', 1, 15, "','"),
    ('start ::= "a" @;', 1, 15, "unexpected '@'"),
    ('start ::= "\\uD800";', 1, 12, "surrogate"),
]


@pytest.mark.parametrize("grammar,line,column,words", ERRORS)
def test_error_position(grammar: str, line: int, column: int, words: str) -> None:
    with pytest.raises(GrammarError) as e:
        parse_kbnf(grammar)
    assert (e.value.line, e.value.column) == (line, column), str(e.value)
    assert words in e.value.reason
    assert e.value.excerpt is not None and e.value.excerpt.endswith("^")


def test_undefined_reference_names_its_rule() -> None:
    with pytest.raises(GrammarError) as e:
        parse_kbnf('start ::= a;\na ::= "x" b;')
    assert e.value.rule == "a" and "'b'" in e.value.reason


def test_missing_start_rule() -> None:
    with pytest.raises(GrammarError, match="no rule named 'start'"):
        parse_kbnf('begin ::= "a";')
    with pytest.raises(GrammarError, match="no rule named 'start'"):
        parse_kbnf("(* nothing *)")
    assert parse_kbnf('begin ::= "a";', start="begin").start == "begin"


def test_not_text() -> None:
    with pytest.raises(GrammarError):
        parse_kbnf(42)  # type: ignore[arg-type]
    assert parse_kbnf(b'start ::= "a";').rules[0].body == lit("a")


# Grammars the crate accepts although they are errors here (see kbnf.py's docstring).
KBNF_QUIRKS = {'start ::= ("a" |);'}


@pytest.mark.parametrize("grammar", [e[0] for e in ERRORS if e[0] not in KBNF_QUIRKS and "(* comment" not in e[0]])
def test_kbnf_rejects_our_errors_too(grammar: str) -> None:
    """Every other error case above is refused by the kbnf crate too (it hangs on an unclosed comment)."""
    assert kbnf_status(grammar, b"a") == "build-error"


# -------------------------------------------------------------- deep nesting


@pytest.mark.parametrize(
    "grammar",
    [
        "start ::= " + "(" * 10_000 + '"a"' + ")" * 10_000 + ";",
        "start ::= " + '("a" ' * 10_000 + '"b"' + ")" * 10_000 + ";",
        "start ::= " + '["a" | ' * 10_000 + '"b"' + "]" * 10_000 + ";",
        "start ::= " + "{" * 10_000 + ";",
        "start ::= " + "(" * 10_000,
    ],
)
def test_deep_nesting_is_a_clean_error(grammar: str) -> None:
    with pytest.raises(GrammarError) as e:
        parse_kbnf(grammar)
    assert "nesting too deep" in e.value.reason and e.value.line == 1


def test_moderate_nesting_is_fine_downstream() -> None:
    depth = 60
    g = parse_kbnf("start ::= " + '("a" | ' * depth + '"b"' + ")" * depth + ";")
    assert g == parse_kbnf(g.source) and hash(g) == hash(parse_kbnf(g.source)) and repr(g)
    check = importlib.import_module("kbnf_gpu.check")
    assert check.check_text(g, "b").status == "complete"
    assert parse_kbnf("start ::= " + "(" * 500 + '"a"' + ")" * 500 + ";", max_depth=600).rules[0].body == lit("a")


# ------------------------------------------------------ print / parse round trip


def _kbnf_quote(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_KIND_PREFIX = {
    ir.TerminalKind.PLAIN: "#",
    ir.TerminalKind.EARLY_END: "#e",
    ir.TerminalKind.COMPLEMENT: "#ex",
    ir.TerminalKind.SUBSTRINGS: "#substrs",
}


def print_kbnf(g: ir.Grammar, brackets: bool = False) -> str:
    """KBNF text for an IR grammar (test helper; iterative depth is small here)."""

    def expr(e: ir.Expr, ctx: str) -> str:
        if isinstance(e, ir.Ref):
            return e.name
        if isinstance(e, ir.Terminal):
            if isinstance(e.expr, ir.Pattern):
                return _KIND_PREFIX[e.kind] + _kbnf_quote(e.expr.source)
            assert isinstance(e.expr, ir.Literal)
            text = _kbnf_quote(e.expr.value.decode())
            return text if e.kind is P else _KIND_PREFIX[e.kind] + text
        if isinstance(e, ir.Choice):
            text = " | ".join(expr(a, "alt") for a in e.alternatives)
            return text if ctx == "top" else f"({text})"
        if isinstance(e, ir.Sequence):
            text = " ".join(expr(i, "item") for i in e.items)
            return text if ctx in ("top", "alt") else f"({text})"
        assert isinstance(e, ir.Repetition)
        if brackets and (e.min, e.max) in ((0, 1), (0, None)):
            inner = expr(e.item, "top")
            return f"[{inner}]" if e.max == 1 else f"{{{inner}}}"
        op = {(0, 1): "?", (0, None): "*", (1, None): "+"}[(e.min, e.max)]
        text = expr(e.item, "atom") + op
        return f"({text})" if ctx == "atom" else text

    return "\n".join(f"{r.name} ::= {expr(r.body, 'top')};" for r in g.rules)


_RX_ATOMS = ["a", "b", "[a-c]", "[^x]", ".", "\\\\d", "é", "\\n", "(?i:ab)", "[[:digit:]]", "\\\\x{41}"]


def _regex_sources() -> st.SearchStrategy[str]:
    return st.recursive(
        st.sampled_from(_RX_ATOMS),
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map("".join),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(" + "|".join(xs) + ")"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}"])).map(lambda t: f"({t[0]}){t[1]}"),
        ),
        max_leaves=5,
    )


@lru_cache(maxsize=None)
def _canonical_regex(source: str, kind: ir.TerminalKind) -> ir.Terminal:
    term = body(f"start ::= {_KIND_PREFIX[kind]}\"{source}\";")
    assert isinstance(term, ir.Terminal)
    return term


NAMES = ["start", "a", "b_1", "_x", "Rule9"]


def _terminals() -> st.SearchStrategy[ir.Expr]:
    text = st.text(st.characters(exclude_categories=("Cs",)), max_size=4)
    return st.one_of(
        text.map(lambda s: lit(s)),
        text.map(lambda s: lit(s, ir.TerminalKind.SUBSTRINGS)),
        st.builds(
            _canonical_regex,
            _regex_sources(),
            st.sampled_from([P, ir.TerminalKind.EARLY_END, ir.TerminalKind.COMPLEMENT]),
        ),
    )


def _exprs(names: list[str]) -> st.SearchStrategy[ir.Expr]:
    leaves = st.one_of(_terminals(), st.sampled_from(names).map(ir.Ref))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: ir.Sequence(tuple(xs))),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: ir.Choice(tuple(xs))),
            st.builds(lambda x, b: ir.Repetition(x, *b), inner, st.sampled_from([(0, 1), (0, None), (1, None)])),
        ),
        max_leaves=8,
    )


@st.composite
def kbnf_grammars(draw) -> ir.Grammar:
    names = ["start"] + draw(st.lists(st.sampled_from(NAMES[1:]), unique=True, max_size=3))
    exprs = _exprs(names)
    rules = [ir.Rule(n, draw(exprs)) for n in names]
    rules += [ir.Rule(draw(st.sampled_from(names)), draw(exprs)) for _ in range(draw(st.integers(0, 2)))]
    return ir.Grammar(tuple(draw(st.permutations(rules))), "start", "kbnf", "eager")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kbnf_grammars(), st.booleans())
def test_print_parse_round_trip(g: ir.Grammar, brackets: bool) -> None:
    text = print_kbnf(g, brackets)
    assert parse_kbnf(text) == g, text


def _escaped_char(ch: str, quote: str, style: int) -> str:
    cp = ord(ch)
    if ch in (quote, "\\"):
        return "\\" + ch
    if style == 1:
        return f"\\u{{{cp:x}}}"
    if style == 2 and cp < 0x100:
        return f"\\x{cp:02x}"
    if style == 3 and cp < 0x10000:
        return f"\\u{cp:04X}"
    if style == 4 and cp < 0o400 and cp >= 0o100:  # three octal digits, unambiguous
        return f"\\{cp:o}"
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, ch) if style == 5 else ch


_RX_SOURCES = _regex_sources()
_SHORT_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=4)
_QUOTES = st.sampled_from(['"', "'"])
_STYLES = st.integers(0, 5)
_SPACE = st.sampled_from([" ", "  ", "\n", "\t", " (* c *) ", "(*x*)", "\r\n "])
_ITEM_SEP = st.sampled_from([" ", "\n", " (* c *) ", " , ", ","])


@st.composite
def kbnf_texts(draw) -> str:
    """Random KBNF grammar text: every construct, quote style, escape form, comment and spacing."""
    names = ["start"] + draw(st.lists(st.sampled_from(NAMES[1:]), unique=True, max_size=3))
    space, item_sep = _SPACE, _ITEM_SEP

    def quoted(text: str) -> str:
        q = draw(_QUOTES)
        return q + "".join(_escaped_char(ch, q, draw(_STYLES)) for ch in text) + q

    def atom() -> str:
        kind = draw(st.integers(0, 3))
        if kind == 0:
            return quoted(draw(_SHORT_TEXT))
        if kind == 1:
            # _regex_sources() is written for inside "..." already: undo that one level of escaping
            source = draw(_RX_SOURCES).replace("\\\\", "\\")
            return draw(st.sampled_from(["#", "#e", "#ex"])) + quoted(source)
        if kind == 2:
            return "#substrs" + quoted(draw(st.text(max_size=3)))
        return draw(st.sampled_from(names))

    def expr(depth: int) -> str:
        kind = draw(st.integers(0, 4 if depth < 2 else 0))
        if kind == 0:
            return atom()
        parts = [expr(depth + 1) for _ in range(draw(st.integers(2, 3)))]
        if kind == 1:  # a sequence, bare or grouped
            text = "".join(p + draw(item_sep) for p in parts[:-1]) + parts[-1]
            return text if draw(st.booleans()) else f"({text})"
        if kind == 2:  # alternatives in a group
            return "(" + draw(st.sampled_from([" | ", "|", "\n| "])).join(parts) + ")"
        if kind == 3:  # brackets
            opener = draw(st.sampled_from(["[", "{"]))
            return opener + draw(space) + " ".join(parts) + draw(space) + {"[": "]", "{": "}"}[opener]
        return "(" + " | ".join(parts) + ")" + draw(st.sampled_from(["?", "*", "+", " ?"]))

    rules = [(n, expr(0)) for n in names]
    rules += [(draw(st.sampled_from(names)), expr(0)) for _ in range(draw(st.integers(0, 2)))]
    return "".join(f"{n}{draw(space)}::={draw(space)}{e}{draw(space)};{draw(space)}" for n, e in rules)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kbnf_texts())
def test_random_texts_parse_and_round_trip(text: str) -> None:
    g = parse_kbnf(text)
    assert parse_kbnf(print_kbnf(g)) == g
    assert parse_kbnf(print_kbnf(g, brackets=True)) == g


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(list("start ::=;|()[]{}?*+,\"'#e\\n\t") + ["start ::= ", "(*", "*)", "#ex", "#substrs", "a"]),
        max_size=30,
    ).map("".join)
)
def test_fuzz_only_grammar_errors(text: str) -> None:
    """Any text gives a grammar or a GrammarError; a grammar survives print/parse."""
    try:
        g = parse_kbnf(text)
    except GrammarError as e:
        assert e.line is None or e.line >= 1
        return
    assert parse_kbnf(print_kbnf(g)) == g


# -------------------------------------------------------------------- corpus


def _corpus_cases() -> list:
    return [pytest.param(c, id=c["id"]) for c in corpus_cases("kbnf")]


def test_corpus_present() -> None:
    assert len(_corpus_cases()) == 18


@pytest.mark.parametrize("case", _corpus_cases())
def test_corpus(case: dict) -> None:
    """Every accept string is complete (eos sense), every reject is not, every prefix_ok is a prefix."""
    check = importlib.import_module("kbnf_gpu.check")
    from kbnf_gpu.normalize import normalize
    from kbnf_gpu.runtime.earley import EarleyParser

    parser = EarleyParser(normalize(parse_kbnf(case["grammar"])))
    prefix = set(case.get("prefix_ok") or [])
    for s in case["accept"]:
        assert check.check_parser(parser, s).status == "complete", s
    for s in case["reject"]:
        status = check.check_parser(parser, s).status
        assert status == ("prefix" if s in prefix else status) and status != "complete", (s, status)
