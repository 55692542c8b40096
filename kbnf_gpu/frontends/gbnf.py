"""GBNF front end: llama.cpp's grammar syntax → ``ir.Grammar``.

Follows llama.cpp's ``grammar-parser`` rules:

* ``name ::= alternatives`` — names ``[a-zA-Z0-9-]+`` (may start with ``-`` or
  a digit, e.g. ``-kv``); ``_`` is accepted too, as xgrammar and llguidance do.
* A rule ends at a newline, except inside ``( )`` and right after ``|`` or
  ``::=`` (there newlines are plain space). ``#`` comments run to the end of
  the line, anywhere spaces may stand (mid-rule, inside groups).
* Symbols: ``"..."`` strings, ``[...]`` / ``[^...]`` character classes
  (``a-z`` ranges; a ``-`` first or last is literal), ``.`` (ANY code point,
  newline included), rule names, ``( )`` groups. Escapes (strings and classes
  alike): ``\\xHH \\uHHHH \\UHHHHHHHH \\t \\r \\n \\\\ \\" \\[ \\] \\-``; values are
  code points (``\\x80`` is U+0080, not a byte).
* Postfix ``* + ? {m} {m,} {m,n}`` (spaces allowed inside the braces,
  ``{,n}`` is an error); operators stack: ``x{2}*`` is ``(x{2})*``.
* Empty alternatives (``ws ::= | " "``) and empty groups ``()`` are the empty
  string. Left recursion is fine (llama.cpp refuses it; its language is clear).
* Matching is per code point: a class is an ``ir.CharClass`` of code point
  ranges, a negated class is stored complemented over 0..0x10FFFF.

Decisions where llama.cpp is silent or accidental: a rule defined twice is an
error (llama.cpp keeps the last definition, xgrammar refuses it); ``[]`` is an
error (it matches nothing); ``[^]`` is any code point (as in xgrammar);
reversed ranges ``[z-a]`` and bounds ``{3,1}`` are errors; a surrogate escape
is an error in a string (it has no UTF-8 form) and is dropped from classes by
the DFA builder.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from ..errors import GrammarError
from ._scan import (
    DEFAULT_MAX_DEPTH,
    MAX_CODE_POINT,
    MAX_REPETITION,
    EscapeError,
    Source,
    check_references,
    complement_ranges,
    describe_char,
    gbnf_escape,
    normalize_ranges,
    utf8,
)

__all__ = ["parse_gbnf"]

_NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_DIGITS = frozenset("0123456789")
_POSTFIX = {"*": (0, None), "+": (1, None), "?": (0, 1)}
_ANY = ir.CharClass(((0, MAX_CODE_POINT),))
_SYMBOL_START = "a string, a character class, '.', a rule name or '('"


@dataclass
class _Group:
    """An open ``(`` (or the rule body itself, ``offset=None``)."""

    offset: int | None
    alts: list[tuple[ir.Expr, int]] = field(default_factory=list)
    items: list[ir.Expr] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)


class _Parser:
    def __init__(self, src: Source, max_depth: int) -> None:
        self.src = src
        self.text = src.text
        self.max_depth = max_depth
        self.pos = 1 if self.text.startswith("\ufeff") else 0
        self.rules: list[ir.Rule] = []
        self.first_def: dict[str, int] = {}
        self.refs: list[tuple[str, int, str]] = []
        self.current: str | None = None  # the rule being read, for error messages

    def err(self, message: str, offset: int, expected: str | None = None) -> GrammarError:
        return self.src.error(message, offset, rule=self.current, expected=expected)

    # ------------------------------------------------------------ lexing
    def space(self, newline_ok: bool) -> None:
        """llama.cpp's ``parse_space``: blanks, ``#`` comments, newlines if allowed."""
        t, i, n = self.text, self.pos, len(self.text)
        while i < n:
            c = t[i]
            if c == " " or c == "\t" or (newline_ok and (c == "\n" or c == "\r")):
                i += 1
            elif c == "#":
                while i < n and t[i] != "\n" and t[i] != "\r":
                    i += 1
            else:
                break
        self.pos = i

    def name(self) -> str:
        t, i = self.text, self.pos
        j = i
        while j < len(t) and t[j] in _NAME:
            j += 1
        self.pos = j
        return t[i:j]

    def char(self, i: int) -> tuple[int, int]:
        """One (possibly escaped) character at ``i``: ``(code point, next offset)``."""
        t = self.text
        if t[i] == "\\":
            try:
                return gbnf_escape(t, i)
            except EscapeError as e:
                raise self.err(e.message, e.offset) from None
        return ord(t[i]), i + 1

    def string(self) -> ir.Terminal:
        t, start = self.text, self.pos
        cps: list[int] = []
        offs: list[int] = []
        i, n = start + 1, len(t)
        while True:
            if i >= n:
                raise self.err("unclosed string", start, expected="'\"'")
            if t[i] == '"':
                break
            offs.append(i)
            cp, i = self.char(i)
            cps.append(cp)
        try:
            data = utf8(cps, offs)
        except EscapeError as e:
            raise self.err(e.message, e.offset) from None
        self.pos = i + 1
        return ir.Terminal(ir.Literal(data), name=self.src.snippet(start, i + 1), span=self.src.span(start))

    def char_class(self) -> ir.Terminal:
        t, start = self.text, self.pos
        n = len(t)
        i = start + 1
        negated = t.startswith("^", i)
        if negated:
            i += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if i >= n:
                raise self.err("unclosed character class", start, expected="']'")
            if t[i] == "]":
                break
            lo_at = i
            lo, i = self.char(i)
            hi = lo
            if t.startswith("-", i) and i + 1 < n and t[i + 1] != "]":
                hi, i = self.char(i + 1)
                if hi < lo:
                    raise self.err(f"invalid range in character class: U+{hi:04X} is below U+{lo:04X}", lo_at)
            ranges.append((lo, hi))
        end = i + 1
        if not ranges and not negated:
            raise self.err("empty character class '[]' matches nothing", start)
        merged = normalize_ranges(ranges)
        if negated:
            merged = complement_ranges(merged)
        self.pos = end
        return ir.Terminal(ir.CharClass(merged), name=self.src.snippet(start, end), span=self.src.span(start))

    def integer(self, rule: str) -> int:
        t, i = self.text, self.pos
        j = i
        while j < len(t) and t[j] in _DIGITS:
            j += 1
        if j == i:
            raise self.src.error(
                f"expected an integer, found {describe_char(t[i : i + 1])}", i, rule=rule, expected="a number"
            )
        value = int(t[i:j]) if j - i < 10 else MAX_REPETITION + 1
        if value > MAX_REPETITION:
            raise self.src.error(f"repetition count above {MAX_REPETITION}", i, rule=rule)
        self.pos = j
        return value

    # ----------------------------------------------------------- parsing
    def parse(self, start: str) -> ir.Grammar:
        self.space(True)
        while self.pos < len(self.text):
            self.rule()
        check_references(self.src, set(self.first_def), self.refs, start, "rule")
        return ir.Grammar(tuple(self.rules), start, "gbnf", "eos", source=self.text)

    def rule(self) -> None:
        t, src = self.text, self.src
        name_at = self.pos
        name = self.name()
        self.current = None
        if not name:
            hint = ""
            if t[name_at] in '|"[(.*+?{':
                hint = " (a rule continues on the next line only inside '(...)' or after a trailing '|')"
            raise src.error(f"unexpected {describe_char(t[name_at])}{hint}", name_at, expected="a rule name")
        self.space(False)
        if not t.startswith("::=", self.pos):
            raise src.error(
                f"expected '::=' after the rule name, found {describe_char(t[self.pos : self.pos + 1])}",
                self.pos, rule=name, expected="'::='",
            )  # fmt: skip
        if name in self.first_def:
            first = src.span(self.first_def[name])
            message = f"rule '{name}' is defined twice (first at line {first.line}, column {first.column})"
            raise src.error(message, name_at, rule=name)
        self.first_def[name] = name_at
        self.current = name
        self.pos += 3
        self.space(True)
        body = self.body(name)
        c = t[self.pos : self.pos + 1]
        if c == "\r":
            self.pos += 2 if t.startswith("\n", self.pos + 1) else 1
        elif c == "\n":
            self.pos += 1
        elif c:
            expected = "a newline or the end of the grammar"
            if c == ")":
                raise src.error("unmatched ')'", self.pos, rule=name)
            raise src.error(f"unexpected {describe_char(c)}", self.pos, rule=name, expected=expected)
        self.current = None
        self.space(True)
        self.rules.append(ir.Rule(name, body, span=src.span(name_at)))

    def body(self, rule: str) -> ir.Expr:
        """Alternatives of one rule (an explicit stack of open groups, no recursion)."""
        t, src = self.text, self.src
        stack = [_Group(None)]
        while True:
            nested = len(stack) > 1
            top = stack[-1]
            i = self.pos
            c = t[i : i + 1]
            if c == '"':
                self.add(top, self.string(), 1)
            elif c == "[":
                self.add(top, self.char_class(), 1)
            elif c == ".":
                self.add(top, ir.Terminal(_ANY, name=".", span=src.span(i)), 1)
                self.pos += 1
            elif c and c in _NAME:
                name = self.name()
                self.new_rule_check(i, stack, rule)
                self.refs.append((name, i, rule))
                self.add(top, ir.Ref(name, span=src.span(i)), 1)
            elif c == "(":
                if len(stack) > self.max_depth:
                    raise src.error(f"nesting too deep (more than {self.max_depth} levels)", i, rule=rule)
                stack.append(_Group(i))
                self.pos += 1
                self.space(True)
                continue
            elif c == ")" and nested:
                expr, depth = self.close(top)
                if depth > self.max_depth:
                    raise src.error(f"nesting too deep (more than {self.max_depth} levels)", top.offset, rule=rule)
                stack.pop()
                self.pos += 1
                self.add(stack[-1], expr, depth)
                nested = len(stack) > 1
            elif c in _POSTFIX:
                lo, hi = _POSTFIX[c]
                self.pos += 1
                self.repeat(top, lo, hi, i, rule)
            elif c == "{":
                self.pos += 1
                self.space(nested)
                lo = self.integer(rule)
                self.space(nested)
                hi: int | None = lo
                if t.startswith(",", self.pos):
                    self.pos += 1
                    self.space(nested)
                    hi = self.integer(rule) if t[self.pos : self.pos + 1] in _DIGITS else None
                    self.space(nested)
                if not t.startswith("}", self.pos):
                    found = describe_char(t[self.pos : self.pos + 1])
                    raise src.error(f"expected '}}', found {found}", self.pos, rule=rule, expected="'}' or ','")
                if hi is not None and hi < lo:
                    raise src.error(f"repetition bounds {{{lo},{hi}}}: the maximum is below the minimum", i, rule=rule)
                self.pos += 1
                self.repeat(top, lo, hi, i, rule)
            elif c == "|":
                top.alts.append(self.sequence(top))
                self.pos += 1
                self.space(True)
                continue
            else:
                if not nested:
                    expr, _ = self.close(top)
                    return expr
                if c == "":
                    raise src.error("unclosed '('", top.offset, rule=rule, expected="')'")
                raise src.error(f"unexpected {describe_char(c)}", i, rule=rule, expected=f"{_SYMBOL_START} or ')'")
            self.space(nested)

    def new_rule_check(self, at: int, stack: list[_Group], rule: str) -> None:
        """A name followed by ``::=`` inside a rule body: report the real cause."""
        t, j = self.text, self.pos
        while j < len(t) and t[j] in " \t":
            j += 1
        if not t.startswith("::=", j):
            return
        if len(stack) > 1:
            raise self.src.error("unclosed '('", stack[-1].offset, rule=rule, expected="')'")
        raise self.src.error(
            "a new rule starts where rule '" + rule + "' continues (after '::=' or a trailing '|')", at, rule=rule
        )

    def repeat(self, group: _Group, lo: int, hi: int | None, at: int, rule: str) -> None:
        if not group.items:
            raise self.src.error(
                f"{self.text[at]!r} must follow a symbol", at, rule=rule, expected=_SYMBOL_START
            )
        group.items[-1] = ir.Repetition(group.items[-1], lo, hi)
        group.depths[-1] += 1
        if group.depths[-1] > self.max_depth:
            raise self.src.error(f"nesting too deep (more than {self.max_depth} levels)", at, rule=rule)

    @staticmethod
    def add(group: _Group, expr: ir.Expr, depth: int) -> None:
        group.items.append(expr)
        group.depths.append(depth)

    @staticmethod
    def sequence(group: _Group) -> tuple[ir.Expr, int]:
        items, depths = group.items, group.depths
        group.items, group.depths = [], []
        if not items:
            return ir.EMPTY, 1
        if len(items) == 1:
            return items[0], depths[0]
        return ir.Sequence(tuple(items)), max(depths) + 1

    def close(self, group: _Group) -> tuple[ir.Expr, int]:
        group.alts.append(self.sequence(group))
        if len(group.alts) == 1:
            return group.alts[0]
        return ir.Choice(tuple(e for e, _ in group.alts)), max(d for _, d in group.alts) + 1


def parse_gbnf(text: str, start: str = "root", *, max_depth: int = DEFAULT_MAX_DEPTH) -> ir.Grammar:
    """Read GBNF (llama.cpp) grammar text into the IR (``end_mode="eos"``, ``syntax="gbnf"``).

    Raises ``GrammarError`` with line, column and rule for syntax errors, bad
    escapes, duplicate or undefined rules, a missing start rule, and nesting
    deeper than ``max_depth`` IR levels.
    """
    return _Parser(Source(text, "GBNF"), max_depth).parse(start)
