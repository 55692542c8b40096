"""GBNF front end: exact IR, llama.cpp's lexical rules, error positions, a
print/parse round trip, deep nesting, the corpus (llama.cpp's own grammars
included) and a differential test of the language against xgrammar."""
from __future__ import annotations

import importlib

import random
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data_paths import corpus_cases
from kbnf_gpu import ir
from kbnf_gpu.errors import GrammarError
from kbnf_gpu.frontends import parse_grammar
from kbnf_gpu.frontends.gbnf import parse_gbnf

MAX = 0x10FFFF
ANY = ir.Terminal(ir.CharClass(((0, MAX),)))


def lit(s: str) -> ir.Terminal:
    return ir.Terminal(ir.Literal(s.encode()))


def cls(*ranges: tuple[int, int] | str) -> ir.Terminal:
    rs = tuple((ord(r), ord(r)) if isinstance(r, str) else r for r in ranges)
    return ir.Terminal(ir.CharClass(rs))


def rules(text: str) -> dict[str, ir.Expr]:
    return {r.name: r.body for r in parse_gbnf(text).rules}


def root(text: str) -> ir.Expr:
    return rules(text)["root"]


# ------------------------------------------------------------------ IR shape


def test_grammar_header() -> None:
    g = parse_gbnf('root ::= "a"\n')
    assert g == ir.Grammar((ir.Rule("root", lit("a")),), "root", "gbnf", "eos")
    assert g.rules[0].span == ir.Span(1, 1) and g.rules[0].body.name == '"a"'  # type: ignore[union-attr]
    assert parse_grammar('s ::= "a"', "gbnf", start="s").start == "s"


def test_sequences_alternatives_groups() -> None:
    a, b, c = lit("a"), lit("b"), lit("c")
    assert root('root ::= "a" "b" | "c"') == ir.Choice((ir.Sequence((a, b)), c))
    assert root('root ::= "a""b"') == ir.Sequence((a, b))
    assert root('root ::= ("a" | "b") "c"') == ir.Sequence((ir.Choice((a, b)), c))
    assert root('root ::= ((("a")))') == a
    assert root('root ::= x\nx ::= "a"') == ir.Ref("x")


def test_repetition_operators() -> None:
    a = lit("a")
    assert root('root ::= "a"*') == ir.Repetition(a, 0, None)
    assert root('root ::= "a"+') == ir.Repetition(a, 1, None)
    assert root('root ::= "a"?') == ir.Repetition(a, 0, 1)
    assert root('root ::= "a"{3}') == ir.Repetition(a, 3, 3)
    assert root('root ::= "a"{3,}') == ir.Repetition(a, 3, None)
    assert root('root ::= "a"{2,5}') == ir.Repetition(a, 2, 5)
    assert root('root ::= "a"{0,5}') == ir.Repetition(a, 0, 5)
    assert root('root ::= "a"{ 4}') == ir.Repetition(a, 4, 4)
    assert root('root ::= "a" { 2 , 3 }') == ir.Repetition(a, 2, 3)
    assert root('root ::= "a"{0}') == ir.Repetition(a, 0, 0)
    assert root('root ::= "a" *') == ir.Repetition(a, 0, None)
    # operators stack, innermost first (llama.cpp rewrites the previous symbol each time)
    assert root('root ::= "a"*?') == ir.Repetition(ir.Repetition(a, 0, None), 0, 1)
    assert root('root ::= "a"{2}{3}') == ir.Repetition(ir.Repetition(a, 2, 2), 3, 3)
    # a postfix binds to the last symbol only; a string is one symbol
    assert root('root ::= "x" "ab"+') == ir.Sequence((lit("x"), ir.Repetition(lit("ab"), 1, None)))


def test_empty_alternatives_and_groups() -> None:
    e = ir.EMPTY
    assert root('root ::= | " " | "\\n"') == ir.Choice((e, lit(" "), lit("\n")))
    assert root('root ::= "a" |') == ir.Choice((lit("a"), e))
    assert root("root ::=") == e
    assert root('root ::= ()') == e
    assert root('root ::= "a" ( | "b")') == ir.Sequence((lit("a"), ir.Choice((e, lit("b")))))
    assert root('root ::= ("a" |) "b"') == ir.Sequence((ir.Choice((lit("a"), e)), lit("b")))


def test_dot_is_any_code_point() -> None:
    assert root("root ::= .") == ANY
    assert root("root ::= ...") == ir.Sequence((ANY, ANY, ANY))


def test_character_classes() -> None:
    assert root("root ::= [a-z]") == cls((97, 122))
    assert root("root ::= [bdx-z]") == cls("b", "d", (120, 122))
    assert root("root ::= [a-cb-e]") == cls((97, 101))  # merged
    assert root("root ::= [-a]") == cls("-", "a")
    assert root("root ::= [a-]") == cls("-", "a")
    assert root("root ::= [a^]") == cls("^", "a")
    assert root("root ::= [^a]") == cls((0, 96), (98, MAX))
    assert root("root ::= [^\\x00-\\x1f]") == cls((0x20, MAX))
    assert root("root ::= [^]") == ANY
    assert root('root ::= [\\]\\[\\\\"\\-]') == cls('"', "-", (0x5B, 0x5D))
    assert root('root ::= ["]') == cls('"')
    assert root("root ::= [#]") == cls("#")  # not a comment inside a class
    assert root("root ::= [ぁ-ゟ]") == cls((0x3041, 0x309F))
    assert root("root ::= [\\U0001F600-\\U0001F64F]") == cls((0x1F600, 0x1F64F))
    # surrogates are kept in classes (the DFA builder drops them)
    assert root("root ::= [\\uD800-\\uDFFF]") == cls((0xD800, 0xDFFF))


def test_names() -> None:
    g = rules('root ::= -kv a-b 9x A_1\n-kv ::= "k"\na-b ::= "1"\n9x ::= "2"\nA_1 ::= "3"')
    assert g["root"] == ir.Sequence(tuple(ir.Ref(n) for n in ("-kv", "a-b", "9x", "A_1")))
    assert set(g) == {"root", "-kv", "a-b", "9x", "A_1"}


def test_left_recursion_is_kept() -> None:
    assert root('root ::= root "a" | "b"') == ir.Choice((ir.Sequence((ir.Ref("root"), lit("a"))), lit("b")))


# ---------------------------------------------------------- escapes and text

ESCAPES = [
    (r"\x41", "A"), (r"\x80", "\x80"), (r"\xff", "\xff"), (r"\u00e9", "é"), (r"\u00E9", "é"),
    (r"\U0001F600", "😀"), (r"\t", "\t"), (r"\r", "\r"), (r"\n", "\n"), (r"\\", "\\"), (r"\"", '"'),
    (r"\[", "["), (r"\]", "]"), (r"\-", "-"),
]  # fmt: skip
BAD_ESCAPES = [r"\q", r"\b", r"\f", r"\/", r"\'", r"\x4", r"\u00e", r"\U0001F60", r"\xg1", r"\U00110000"]


@pytest.mark.parametrize("esc,meaning", ESCAPES)
def test_escape(esc: str, meaning: str) -> None:
    assert root(f'root ::= "{esc}"') == lit(meaning)
    cp = ord(meaning)
    assert root(f"root ::= [{esc}]") == cls((cp, cp))


@pytest.mark.parametrize("esc", BAD_ESCAPES)
def test_bad_escape(esc: str) -> None:
    for text in (f'root ::= "{esc}"', f"root ::= [{esc}]"):
        with pytest.raises(GrammarError) as e:
            parse_gbnf(text)
        assert (e.value.line, e.value.column, e.value.rule) == (1, 11, "root")


def test_literal_text() -> None:
    assert root('root ::= "a\nb"') == lit("a\nb")  # a raw newline inside a string is text
    assert root('root ::= "a#b"') == lit("a#b")
    assert root('root ::= "你好"') == lit("你好")
    assert root('root ::= ""') == lit("")


# ------------------------------------------------------- comments and lines


def test_comments_everywhere() -> None:
    g = rules(
        "# leading comment\n"
        'root ::= ( # after the paren\n  "a" # after a\n  | "b" # after b\n) # after the group\n'
        "# between rules\n"
        'x ::= "x" # trailing, no newline at the end'
    )
    assert g["root"] == ir.Choice((lit("a"), lit("b")))
    assert g["x"] == lit("x")


def test_newline_rules() -> None:
    g = rules('root ::=\n  "a" |\n  "b" |\n\n  "c"\nnext ::= ("x"\n\n"y")\n')
    assert g["root"] == ir.Choice((lit("a"), lit("b"), lit("c")))
    assert g["next"] == ir.Sequence((lit("x"), lit("y")))
    assert rules('root ::= "a"\r\nx ::= "b"\r\n')["x"] == lit("b")
    assert rules('\n\n  root ::= "a"\n\n\n   x ::= "b"  \n')["x"] == lit("b")
    assert rules('\ufeffroot ::= "a"')["root"] == lit("a")


# -------------------------------------------------------------------- errors

ERRORS = [
    # (grammar, line, column, words in the message)
    ('root ::= "abc', 1, 10, "unclosed string"),
    ('root ::= [abc', 1, 10, "unclosed character class"),
    ('root ::= ("a" | "b"', 1, 10, "unclosed '('"),
    ('root ::= (\n  "a"\n\nfoo ::= "x"', 1, 10, "unclosed '('"),
    ('root ::= "a" )', 1, 14, "unmatched ')'"),
    ('root ::= "a"\nx ::= "\\q"', 2, 8, "invalid escape"),
    ('root := "a"', 1, 6, "expected '::='"),
    ('root "a"', 1, 6, "expected '::='"),
    ('root\n::= "a"', 1, 5, "expected '::='"),
    ('root ::= "a"\n"b"', 2, 1, "unexpected '\"'"),
    ('root ::= "a"\n  | "b"', 2, 3, "unexpected '|'"),
    ('root ::= "a" |\nfoo ::= "b"', 2, 1, "a new rule starts"),
    ("root ::= []", 1, 10, "empty character class"),
    ("root ::= [z-a]", 1, 11, "invalid range"),
    ('root ::= "a"{,3}', 1, 14, "expected an integer"),
    ('root ::= "a"{3,1}', 1, 13, "maximum is below the minimum"),
    ('root ::= "a"{3', 1, 15, "expected '}'"),
    ('root ::= "a"{x}', 1, 14, "expected an integer"),
    ('root ::= "a"{999999999999}', 1, 14, "repetition count"),
    ('root ::= *"a"', 1, 10, "must follow a symbol"),
    ('root ::= ("a" | +)', 1, 17, "must follow a symbol"),
    ("root ::= foo", 1, 10, "undefined rule 'foo'"),
    ('root ::= "a"\nbar ::= "b" baz', 2, 13, "undefined rule"),
    ('root ::= "a"\nbar ::= "b"\n  baz', 3, 6, "expected '::='"),
    ('root ::= "a"\nroot ::= "b"', 2, 1, "defined twice"),
    ('root ::= "a" @', 1, 14, "unexpected '@'"),
    ('root ::= ( "b" ; )', 1, 16, "unexpected ';'"),
    ('root ::= "\\uD800"', 1, 11, "surrogate"),
    ("::= x", 1, 1, "unexpected ':'"),
]


@pytest.mark.parametrize("grammar,line,column,words", ERRORS)
def test_error_position(grammar: str, line: int, column: int, words: str) -> None:
    with pytest.raises(GrammarError) as e:
        parse_gbnf(grammar)
    assert (e.value.line, e.value.column) == (line, column), str(e.value)
    assert words in e.value.reason, str(e.value)
    assert e.value.excerpt is not None and e.value.excerpt.endswith("^")


def test_undefined_reference_names_its_rule() -> None:
    with pytest.raises(GrammarError) as e:
        parse_gbnf('root ::= a\na ::= "x" b')
    assert e.value.rule == "a" and "'b'" in e.value.reason


def test_missing_root() -> None:
    with pytest.raises(GrammarError, match="no rule named 'root'"):
        parse_gbnf('start ::= "a"')
    with pytest.raises(GrammarError, match="no rule named 'root'"):
        parse_gbnf("# only a comment\n")
    assert parse_gbnf('start ::= "a"', start="start").start == "start"


def test_not_text() -> None:
    with pytest.raises(GrammarError):
        parse_gbnf(None)  # type: ignore[arg-type]
    with pytest.raises(GrammarError):
        parse_gbnf(b"root ::= \xff")  # type: ignore[arg-type]


# -------------------------------------------------------------- deep nesting


@pytest.mark.parametrize(
    "grammar",
    [
        "root ::= " + "(" * 10_000 + '"a"' + ")" * 10_000,
        "root ::= " + '("a" ' * 10_000 + ")" * 10_000,
        "root ::= " + '"a"' + "?" * 10_000,
        "root ::= " + "(" * 10_000,
        "root ::= " + "(\n" * 10_000 + '"a"' + ")*" * 10_000,
    ],
)
def test_deep_nesting_is_a_clean_error(grammar: str) -> None:
    with pytest.raises(GrammarError) as e:
        parse_gbnf(grammar)
    assert "nesting too deep" in e.value.reason and e.value.line is not None


def test_moderate_nesting_is_fine_downstream() -> None:
    g = parse_gbnf("root ::= " + '("a" | ' * 60 + '"b"' + ")" * 60)
    assert g == parse_gbnf(g.source) and hash(g) and repr(g)
    check = importlib.import_module("kbnf_gpu.check")
    assert check.check_text(g, "b").status == "complete"


# ------------------------------------------------------ print / parse round trip


def _quote(s: str, in_class: bool = False) -> str:
    out = []
    for ch in s:
        if ch in '"\\[]' or (in_class and ch == "-"):
            out.append("\\" + ch)
        elif in_class and ch == "^":  # GBNF has no \^ escape
            out.append("\\x5e")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) > 0xFFFF:
            out.append(f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out)


def print_gbnf(g: ir.Grammar) -> str:
    """GBNF text for an IR grammar (test helper)."""

    def expr(e: ir.Expr, ctx: str) -> str:
        if isinstance(e, ir.Ref):
            return e.name
        if isinstance(e, ir.Terminal):
            if isinstance(e.expr, ir.Literal):
                return '"' + _quote(e.expr.value.decode()) + '"'
            assert isinstance(e.expr, ir.CharClass)
            q = lambda cp: _quote(chr(cp), in_class=True)  # noqa: E731
            parts = [q(a) if a == b else f"{q(a)}-{q(b)}" for a, b in e.expr.ranges]
            return "[" + "".join(parts) + "]"
        if isinstance(e, ir.Choice):
            text = " | ".join(expr(a, "alt") for a in e.alternatives)
            # a trailing '|' at the end of a line would continue the rule on the next line
            return text if ctx == "top" and e.alternatives[-1] != ir.EMPTY else f"({text})"
        if isinstance(e, ir.Sequence):
            if not e.items:
                return "" if ctx in ("top", "alt") else "()"
            text = " ".join(expr(i, "item") for i in e.items)
            return text if ctx in ("top", "alt") else f"({text})"
        assert isinstance(e, ir.Repetition)
        op = {(0, 1): "?", (0, None): "*", (1, None): "+"}.get((e.min, e.max))
        if op is None:
            op = f"{{{e.min}}}" if e.min == e.max else f"{{{e.min},{'' if e.max is None else e.max}}}"
        return expr(e.item, "atom") + op

    return "\n".join(f"{r.name} ::= {expr(r.body, 'top')}" for r in g.rules)


def _gbnf_terminals() -> st.SearchStrategy[ir.Expr]:
    chars = st.characters(exclude_categories=("Cs",))
    ranges = st.lists(st.tuples(chars, chars).map(lambda t: tuple(sorted(map(ord, t)))), min_size=1, max_size=3)

    def merged(rs: list) -> ir.Terminal:
        from kbnf_gpu.frontends._scan import normalize_ranges

        return ir.Terminal(ir.CharClass(normalize_ranges(rs)))

    return st.one_of(st.text(chars, max_size=4).map(lit), ranges.map(merged), st.just(ANY))


def _gbnf_exprs(names: list[str]) -> st.SearchStrategy[ir.Expr]:
    bounds = st.sampled_from([(0, 1), (0, None), (1, None), (2, 2), (0, 3), (2, None), (1, 4)])
    return st.recursive(
        st.one_of(_gbnf_terminals(), st.sampled_from(names).map(ir.Ref)),
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: ir.Sequence(tuple(xs))),
            st.lists(st.one_of(inner, st.just(ir.EMPTY)), min_size=2, max_size=3).map(
                lambda xs: ir.Choice(tuple(xs))
            ),
            st.builds(lambda x, b: ir.Repetition(x, *b), inner, bounds),
        ),
        max_leaves=8,
    )


@st.composite
def gbnf_grammars(draw) -> ir.Grammar:
    names = ["root"] + draw(st.lists(st.sampled_from(["a", "-kv", "x-1", "9z", "B_c"]), unique=True, max_size=3))
    exprs = _gbnf_exprs(names)
    rs = [ir.Rule(n, draw(exprs)) for n in names]
    return ir.Grammar(tuple(draw(st.permutations(rs))), "root", "gbnf", "eos")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gbnf_grammars())
def test_print_parse_round_trip(g: ir.Grammar) -> None:
    text = print_gbnf(g)
    assert parse_gbnf(text) == g, text


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(list('root ::=|()[]{}?*+,"#^-\\.\nxa1') + ["\\x4", "{2,3}", "::="]), max_size=30).map(
        "".join
    )
)
def test_fuzz_only_grammar_errors(text: str) -> None:
    try:
        parse_gbnf(text)
    except GrammarError as e:
        assert e.line is None or e.line >= 1


# -------------------------------------------------------------------- corpus


def _corpus() -> list[dict]:
    return corpus_cases()


def _gbnf_cases() -> list:
    return [pytest.param(c, id=c["id"]) for c in _corpus() if c["format"] == "gbnf"]


def _llamacpp_files() -> list:
    return [
        pytest.param(c["grammar"], id=c["id"])
        for c in _corpus()
        if c["id"].startswith("llamacpp-") and "grammars/" in c["source"] and c["format"] == "gbnf"
    ]


def test_corpus_present() -> None:
    assert len(_gbnf_cases()) == 134
    assert len(_llamacpp_files()) >= 8


@pytest.mark.parametrize("grammar", _llamacpp_files())
def test_llamacpp_grammar_files_parse(grammar: str) -> None:
    g = parse_gbnf(grammar)
    assert g.start == "root" and len(g.rules) >= 1


@lru_cache(maxsize=None)
def _parser(grammar: str):
    from kbnf_gpu.normalize import normalize
    from kbnf_gpu.runtime.earley import EarleyParser

    return EarleyParser(normalize(parse_gbnf(grammar)))


def _status(grammar: str, s: str) -> str:
    check = importlib.import_module("kbnf_gpu.check")
    return check.check_parser(_parser(grammar), s).status


@pytest.mark.parametrize("case", _gbnf_cases())
def test_corpus(case: dict) -> None:
    """Every accept string is complete, every reject is not, every prefix_ok is a viable prefix."""
    prefix = set(case.get("prefix_ok") or [])
    for s in case["accept"]:
        assert _status(case["grammar"], s) == "complete", s
    for s in case["reject"]:
        status = _status(case["grammar"], s)
        assert status != "complete" and (s not in prefix or status == "prefix"), (s, status)


# -------------------------------------------------- differential vs xgrammar

# (name, GBNF text, xgrammar text if it needs '.' -> [^] or empty alternatives -> "",
#  accepted strings, rejected strings, alphabet for random strings)
DIFF = [
    ("arith", r'''root ::= (expr "=" ws num "\n")+
expr ::= term (op term)*
term ::= num | "(" ws expr ")" ws
op   ::= [-+*/] ws
num  ::= [0-9]+ ws
ws   ::= [ \t\n]*''', None,
     ["1+2=3\n", "(1 + 2) * 3 = 9\n", "1=1\n2=2\n", "1+2=3\n\n", "( 4 )=4\n"], ["1+2=3", "1+=3\n", "=3\n", ""],
     "12+*()= \n"),
    ("json", r'''root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n\r]*''', None,
     ['{"a": [1, 2.5e3, true, null]}', "[]", ' "x\\u00e9" ', "-0.5", '{"k":{"n":[]}}'],
     ['{"a" 1}', "[1,]", "01", '"\\x"', "tru"], '{}[]",:1 -.ae\\u0tn'),
    ("c-like", r'''root   ::= func+
func   ::= type " " ident "(" params? ")" " "? block "\n"?
type   ::= "int" | "void" | "char"
ident  ::= [a-zA-Z_] [a-zA-Z0-9_]*
params ::= type " " ident ("," " "? type " " ident)*
block  ::= "{" stmt* "}"
stmt   ::= (type " " ident " = " expr ";") | ("return " expr ";") | ("if (" expr ") " block) | (ident " = " expr ";")
expr   ::= atom (" " [-+*<] " " atom)*
atom   ::= ident | [0-9]+ | "(" expr ")"''', None,
     ["int main(){return 0;}", "void f(int a, char b) {if (a < b) {a = b;}}\n", "int g(){int x = (1 + 2);}"],
     ["int main(){return 0}", "main(){}", "int (){}"], "intmaf(){}; r=0<b"),
    ("chess", r'''root   ::= "1. " move " " move "\n" (num ". " move " " move "\n")*
num    ::= [1-9] [0-9]?
move   ::= (pawn | piece | castle) [+#]?
pawn   ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
piece  ::= [NBRQK] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle ::= "O-O" ("-O")?''', None,
     ["1. e4 e5\n2. Nf3 Nc6\n", "1. O-O O-O-O\n", "1. exd5 Qxd5+\n", "1. e8=Q Kxe8#\n"],
     ["1. e9 e5\n", "2. e4 e5\n", "1. e4\n"], "12. e4d5Nfx+#O-\n"),
    ("list", r'''root ::= item+
item ::= "- " [^\n]+ "\n"''', None, ["- a\n- bc d\n", "- -\n"], ["- \n", "-a\n", "- a", ""], "- ab\n"),
    ("dash-names", r'''root ::= "{" -kv ("," -kv)* "}"
-kv ::= key ":" val-1
key ::= [a-z]+
val-1 ::= [0-9]+ | "\"" [a-z]* "\""''', None, ['{a:1,b:"x"}', "{ab:12}"], ["{a:1,}", "{:1}", "{}"], '{}a:1,"x'),
    ("dot", r'''root ::= "<" . . ">" | "[" .+ "]"''', r'''root ::= "<" [^] [^] ">" | "[" [^]+ "]"''',
     ["<\n\n>", "<ab>", "[x\ny]", "[]]", "<é😀>"], ["<a>", "[]", "<abc>"], "<>[]a\n"),
    ("empty-alternatives", r'''root ::= "x" opt "y" tail
opt  ::= | "a" | "bb"
tail ::= "z" tail |''', r'''root ::= "x" opt "y" tail
opt  ::= "" | "a" | "bb"
tail ::= "z" tail | ""''', ["xy", "xay", "xbbyzz"], ["xby", "xyy", "x"], "xyabz"),
    ("bounds", r'''root ::= [ab]{2,4} "-" "c"{3} "-" "d"{1,} "-" "e"{0,2} "-" ("fg"){ 2 }''', None,
     ["ab-ccc-d--fgfg", "abab-ccc-ddd-ee-fgfg"], ["a-ccc-d--fgfg", "ab-cc-d--fgfg", "ab-ccc--", "ababa-ccc-d--fgfg"],
     "abcdefg-"),
    ("left-recursion", r'''root   ::= root "+" term | term
term   ::= term "*" factor | factor
factor ::= [0-9] | "(" root ")"''', None, ["1+2*3", "(1+2)*3", "((1))"], ["1+", "+1", "1**2", "(1"], "12+*()"),
    ("unicode-classes", r'''root ::= [α-ω]+ " " [^a-z\n]* "\n"''', None, ["αβ XYZ\n", "ω \n", "α 😀\n"],
     ["a \n", "αβ abc\n", "αβ\n"], "αβωa XZ\n"),
    ("escapes", r'''root ::= "\x41\u00e9\U0001F600" [\x00-\x1f] "\t\n\\\"" [\[\]\\]''', None,
     ['Aé😀\x01\t\n\\"]', 'Aé😀\x1f\t\n\\"\\'], ['Aé😀 \t\n\\"]', "A"], 'Aé😀\x01\t\n\\"[]'),
    ("comments", '''# top comment
root ::= ( "a" # first
  ( # open
    "b" | # alt
    "c"
  )* # star
  "d" ) # end
# last''', None, ["ad", "abcbd"], ["a", "abd ", "d"], "abcd"),
    ("continuation", 'root ::= "one" |\n  "two" |\n\n  "three"', None, ["two", "three"], ["four", "onetwo"], "onetwhr"),
    ("balanced", 'root ::= "(" root ")" root |', 'root ::= "(" root ")" root | ""', ["", "()", "(())()"],
     ["(()", ")(", "())"], "()"),
    ("palindromes", 'root ::= "a" root "a" | "b" root "b" | "a" | "b" | "c"', None, ["aba", "abcba", "c"],
     ["ab", "abca", ""], "abc"),
    ("email", r'''root   ::= local "@" domain
local  ::= [a-z0-9._]+
domain ::= label ("." label)+
label  ::= [a-z0-9] [a-z0-9-]*''', None, ["a.b@x.org", "x_1@a-b.c.d"], ["a@b", "@x.org", "a@.org"], "ab@.-_1"),
    ("datetime", r'''root ::= date ("T" time)?
date ::= [0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" [0-3] [0-9]
time ::= [0-2] [0-9] ":" [0-5] [0-9] (":" [0-5] [0-9])?''', None,
     ["2024-02-29", "1999-12-31T23:59", "2000-01-01T00:00:00"], ["2024-13-01", "2024-1-01", "2024-01-01T"],
     "0129-T:3"),
    ("ipv4", r'''root  ::= octet ("." octet){3}
octet ::= [0-9]{1,3}''', None, ["1.22.255.0", "000.1.2.3"], ["1.2.3", "1.2.3.4.5", "1234.1.1.1"], "0129."),
    ("csv", r'''root  ::= row ("\n" row)* "\n"?
row   ::= field ("," field)*
field ::= [^,\n"]* | "\"" ([^"] | "\"\"")* "\""''', None, ['a,b\n"c,d",e', "", '""""', "x,,y\n"],
     ['"a', 'a"b'], 'ab,"\n'),
    ("nullable", 'root ::= a b c\na ::= "x"?\nb ::= ("y" | )\nc ::= "z"*',
     'root ::= a b c\na ::= "x"?\nb ::= ("y" | "")\nc ::= "z"*',
     ["", "x", "yzz", "xyz"], ["yx", "zy"], "xyz"),
    ("ambiguous", 'root ::= x x\nx ::= "a"*', None, ["", "a", "aaaa"], ["b"], "ab"),
    ("group-star", 'root ::= ("ab" | "a")* "b"', None, ["b", "ab", "aabb", "abab"], ["", "ba", "abba"], "ab"),
    ("key-value", r'''root ::= pair (";" " "? pair)*
pair ::= [a-z]+ " "? "=" " "? [0-9a-z]+''', None, ["a=1", "ab = c; d=2"], ["a=", "=1", "a=1;"], "ab=1; "),
    ("quoted", r'''root ::= "\"" ([^"\\] | "\\" ["\\/bfnrt])* "\""''', None, ['""', '"a\\"b"', '"\\\\"'],
     ['"', '"\\x"', 'a""'], 'a"\\xbn'),
    ("numbers", r'''root ::= ("0x" [0-9a-fA-F]+ | "0b" [01]+ | [1-9] [0-9]*) ("," " "? root)?''', None,
     ["0x1F", "0b101, 12,0xa"], ["0x", "0b2", "012", "1,"], "0x1Fb2a, "),
    ("boolean", r'''root ::= or
or   ::= and (" or " and)*
and  ::= not (" and " not)*
not  ::= "not " not | atom
atom ::= "true" | "false" | "(" or ")"''', None, ["true", "not (true or false) and true"],
     ["true or", "(true", "not"], "truefalsnod ()"),
    ("markdown", r'''root ::= line+
line ::= ("  "* "- " | "# ") [a-z ]+ "\n"''', None, ["# title\n- a\n  - b c\n"], ["- a", "-a\n", "   - a\n"],
     "#- ab\n"),
    ("xml", r'''root    ::= element
element ::= "<" name ">" content "</" name ">" | "<" name "/>"
content ::= (element | [^<>]+)*
name    ::= [a-z]+''', None, ["<a>x<b/>y</a>", "<a/>", "<a></b>"], ["<a>", "<a>x</a", "<>"], "<>/abx"),
    ("nested-groups", r'''root ::= ((("a" | "b") "c")+ | "d")? "e"''', None, ["e", "ace", "acbce", "de"],
     ["ae", "dde", "ac"], "abcde"),
    ("right-recursion", r'''root ::= item root | item
item ::= [a-c] ","''', None, ["a,", "a,b,c,a,"], ["", "a", "a,,", "d,"], "abcd,"),
    ("cjk", r'''root ::= [ぁ-ゟ]+ ("、" [ァ-ヿ]+)*''', None, ["ひらがな", "あ、カタカナ"],
     ["", "あ、", "カ"],
     "あひ、カタa"),
    ("wide-bounds", r'''root ::= [a-c]{0,50} "x"''', None, ["x", "abcx", "a" * 50 + "x"], ["a" * 51 + "x", "ab"],
     "abcx"),
]  # fmt: skip


@lru_cache(maxsize=1)
def _xgr_compiler():
    xgr = importlib.import_module("xgrammar")
    return xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)


def xgrammar_statuses(text: str, strings: list[str]) -> list[str]:
    """xgrammar's verdict per string: complete, prefix or rejected."""
    xgr = importlib.import_module("xgrammar")
    compiled = _xgr_compiler().compile_grammar(xgr.Grammar.from_ebnf(text, root_rule_name="root"))
    out = []
    for s in strings:
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        if not matcher.accept_string(s):
            out.append("rejected")
        else:
            out.append("complete" if matcher.is_terminated() else "prefix")
    return out


def _probe_strings(name: str, accept: list[str], reject: list[str], alphabet: str) -> list[str]:
    """The labelled strings, their one-edit neighbours, and random strings over the alphabet."""
    rng = random.Random(name)
    out = list(accept) + list(reject)
    for s in accept:
        for i in range(len(s) + 1):
            out.append(s[:i])  # every prefix of a sentence
            if i < len(s):
                out.append(s[:i] + s[i + 1 :])
                out.append(s[:i] + rng.choice(alphabet) + s[i + 1 :])
            out.append(s[:i] + rng.choice(alphabet) + s[i:])
    out += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10))) for _ in range(60)]
    return list(dict.fromkeys(out))


def test_enough_differential_grammars() -> None:
    assert len(DIFF) >= 30


@pytest.mark.parametrize("name,text,xgr_text,accept,reject,alphabet", DIFF, ids=[d[0] for d in DIFF])
def test_language_matches_xgrammar(
    name: str, text: str, xgr_text: str | None, accept: list[str], reject: list[str], alphabet: str
) -> None:
    for s in accept:
        assert _status(text, s) == "complete", s
    for s in reject:
        assert _status(text, s) != "complete", s
    probes = _probe_strings(name, accept, reject, alphabet)
    theirs = xgrammar_statuses(xgr_text or text, probes)
    mismatches = [(s, _status(text, s), t) for s, t in zip(probes, theirs) if _status(text, s) != t]
    assert not mismatches, mismatches[:10]
