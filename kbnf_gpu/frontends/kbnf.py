"""KBNF front end: the ``kbnf`` crate's grammar syntax → ``ir.Grammar``.

Syntax (as the ``kbnf`` 0.4.2 package accepts it, checked against it):

* ``name ::= alternatives ;`` — identifiers ``[A-Za-z_][A-Za-z0-9_]*``; a
  name may be defined several times (one ``ir.Rule`` each: alternatives).
* Alternatives ``a | b``; concatenation by juxtaposition (``"a""b"`` needs no
  space) or with one ``,`` between symbols; grouping ``( )``; optional
  ``[ ]`` or ``x?``; zero or more ``{ }`` or ``x*``; one or more ``x+``
  (one postfix operator per symbol, as in the crate).
* Terminals ``"..."`` / ``'...'`` with JavaScript-style escapes (see
  ``_scan.kbnf_escape``); regexes ``#"..."``, ``#e"..."`` (early end),
  ``#ex"..."`` (complement), ``#substrs"..."`` (substrings of a literal).
  A regex's text is unescaped like a terminal first, then read as Rust
  ``regex`` syntax (so ``#"\\\\d"`` is a digit and ``#"\\d"`` is an error) and
  rewritten to Python syntax (``_rust_regex``).
* Comments ``(* ... *)`` (not nested). The crate allows them only between
  rules; here they may stand wherever whitespace may.

Deliberate differences from the crate, all on grammars it mishandles: an
empty alternative is always an error (the crate silently drops a trailing
``|`` before ``)``, ``]`` or ``}``, so ``("b"|)`` means ``"b"`` there); an
unclosed comment is an error (the crate hangs); ``\\v`` and UTF-16 surrogate
pairs ``\\uD83D\\uDE00`` are accepted.

The IR is faithful: no desugaring, a group adds no node of its own, ``[x]`` is
``Repetition(x, 0, 1)`` and ``{x}`` is ``Repetition(x, 0, None)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from ..caches import memoized
from ..errors import GrammarError
from ._rust_regex import RustRegexError, rust_to_python
from ._scan import DEFAULT_MAX_DEPTH, EscapeError, Source, check_references, describe_char, kbnf_escape, utf8
from .regex import RegexIssue, translate_regex

__all__ = ["parse_kbnf"]

_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_IDENT = _IDENT_START | frozenset("0123456789")
_WS = frozenset(" \t\r\n")
_CLOSER = {"(": ")", "[": "]", "{": "}"}
_POSTFIX = {"?": (0, 1), "*": (0, None), "+": (1, None)}
_REGEX_PREFIXES = (
    ("#substrs", ir.TerminalKind.SUBSTRINGS),
    ("#ex", ir.TerminalKind.COMPLEMENT),
    ("#e", ir.TerminalKind.EARLY_END),
    ("#", ir.TerminalKind.PLAIN),
)
_SYMBOL_START = "a string, a regex, a nonterminal, '(', '[' or '{'"


def _word_start(c: str) -> bool:
    return c in _IDENT or (not c.isascii() and c.isalnum())


def _word_char(c: str) -> bool:
    """Characters scanned as part of a would-be identifier (so ``a-b`` is reported whole)."""
    return c in _IDENT or c == "-" or (not c.isascii() and c.isalnum())


@memoized(1 << 18, lambda rust: len(rust) + 64)
def _python_pattern(rust: str) -> ir.Pattern:
    """Rust regex text → canonical ``ir.Pattern`` (grammars repeat their regexes; cached)."""
    return translate_regex(rust_to_python(rust))


@dataclass
class _Group:
    """An open ``(``, ``[``, ``{`` (or the rule body itself, kind ``""``)."""

    kind: str
    offset: int
    alts: list[tuple[ir.Expr, int]] = field(default_factory=list)
    items: list[ir.Expr] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    postfixed: bool = False
    comma: bool = False


class _Parser:
    def __init__(self, src: Source, max_depth: int) -> None:
        self.src = src
        self.text = src.text
        self.max_depth = max_depth
        self.pos = 1 if self.text.startswith("\ufeff") else 0
        self.last_end = self.pos  # end of the last token, where a missing ';' belongs
        self.rules: list[ir.Rule] = []
        self.refs: list[tuple[str, int, str]] = []
        self.current: str | None = None  # the rule being read, for error messages

    def err(self, message: str, offset: int, expected: str | None = None) -> GrammarError:
        return self.src.error(message, offset, rule=self.current, expected=expected)

    # ------------------------------------------------------------ lexing
    def skip(self) -> None:
        """Whitespace and ``(* comments *)``."""
        t, i, n = self.text, self.pos, len(self.text)
        while i < n:
            if t[i] in _WS:
                i += 1
            elif t.startswith("(*", i):
                k = t.find("*)", i + 2)
                if k < 0:
                    raise self.err("unclosed comment '(*'", i, expected="'*)'")
                i = k + 2
            else:
                break
        self.pos = i

    def word(self) -> str:
        """An identifier at ``pos`` (a run of word-like characters that must be one)."""
        t, i = self.text, self.pos
        j = i
        while j < len(t) and _word_char(t[j]):
            j += 1
        w = t[i:j]
        if not w or w[0] not in _IDENT_START or any(ch not in _IDENT for ch in w):
            raise self.err(f"invalid identifier {w!r}", i, expected="an identifier [A-Za-z_][A-Za-z0-9_]*")
        self.pos = j
        return w

    def quoted(self, qpos: int) -> tuple[list[int], list[int], int]:
        """Decode the quoted text at ``qpos``: code points, their offsets, end offset."""
        t, q = self.text, self.text[qpos]
        cps: list[int] = []
        offs: list[int] = []
        i, n = qpos + 1, len(t)
        while True:
            if i >= n:
                raise self.err("unclosed string", qpos, expected=repr(q))
            c = t[i]
            if c == q:
                return cps, offs, i + 1
            if c == "\\":
                try:
                    cp, j = kbnf_escape(t, i)
                except EscapeError as e:
                    raise self.err(e.message, e.offset) from None
                cps.append(cp)
                offs.append(i)
                i = j
            else:
                cps.append(ord(c))
                offs.append(i)
                i += 1

    def string(self) -> ir.Terminal:
        start = self.pos
        cps, offs, end = self.quoted(start)
        try:
            data = utf8(cps, offs)
        except EscapeError as e:
            raise self.err(e.message, e.offset) from None
        self.pos = end
        return ir.Terminal(ir.Literal(data), name=self.src.snippet(start, end), span=self.src.span(start))

    def regex(self, rule: str) -> ir.Terminal:
        t, start = self.text, self.pos
        for prefix, kind in _REGEX_PREFIXES:
            if t.startswith(prefix, start) and t[start + len(prefix) : start + len(prefix) + 1] in ("'", '"'):
                break
        else:
            raise self.src.error(
                "expected a quoted regex after '#'", start, rule=rule,
                expected="#\"...\", #e\"...\", #ex\"...\" or #substrs\"...\"",
            )  # fmt: skip
        qpos = start + len(prefix)
        cps, offs, end = self.quoted(qpos)
        self.pos = end
        name = self.src.snippet(start, end)
        span = self.src.span(start)
        try:
            if kind is ir.TerminalKind.SUBSTRINGS:
                return ir.Terminal(ir.Literal(utf8(cps, offs)), kind, name=name, span=span)
        except EscapeError as e:
            raise self.src.error(e.message, e.offset, rule=rule) from None
        try:
            expr = _python_pattern("".join(map(chr, cps)))
        except RustRegexError as e:
            at = offs[e.pos] if e.pos < len(offs) else end - 1
            raise self.src.error(f"invalid regex: {e.message}", at, rule=rule) from None
        except RegexIssue as e:
            raise self.src.error(f"unsupported regex: {e.message}", start, rule=rule) from None
        return ir.Terminal(expr, kind, name=name, span=span)

    # ----------------------------------------------------------- parsing
    def parse(self, start: str) -> ir.Grammar:
        while True:
            self.skip()
            if self.pos >= len(self.text):
                break
            self.rule()
        check_references(self.src, {r.name for r in self.rules}, self.refs, start, "nonterminal")
        return ir.Grammar(tuple(self.rules), start, "kbnf", "eager", source=self.text)

    def rule(self) -> None:
        t = self.text
        name_at = self.pos
        if not _word_start(t[name_at]):
            raise self.src.error(f"unexpected {describe_char(t[name_at])}", name_at, expected="a rule name")
        self.current = None
        name = self.word()
        self.current = name
        self.skip()
        if not t.startswith("::=", self.pos):
            raise self.src.error(
                f"expected '::=' after the rule name, found {describe_char(t[self.pos : self.pos + 1])}",
                self.pos, rule=name, expected="'::='",
            )  # fmt: skip
        self.pos += 3
        self.last_end = self.pos
        body = self.body(name)
        self.current = None
        self.rules.append(ir.Rule(name, body, span=self.src.span(name_at)))

    def body(self, rule: str) -> ir.Expr:
        """Alternatives up to the closing ``;`` (an explicit stack, no recursion)."""
        t, src = self.text, self.src
        stack = [_Group("", self.pos)]
        while True:
            self.skip()
            i = self.pos
            c = t[i : i + 1]
            top = stack[-1]
            if c == '"' or c == "'":
                self.add(top, self.string(), 1)
            elif c == "#":
                self.add(top, self.regex(rule), 1)
            elif c and _word_start(c):
                name = self.word()
                after = self.pos
                self.skip()
                if t.startswith("::=", self.pos):
                    raise src.error("missing ';' at the end of the rule", self.last_end, rule=rule, expected="';'")
                self.pos = after
                self.refs.append((name, i, rule))
                self.add(top, ir.Ref(name, span=src.span(i)), 1)
            elif c in ("(", "[", "{"):
                if len(stack) > self.max_depth:
                    raise src.error(f"nesting too deep (more than {self.max_depth} levels)", i, rule=rule)
                stack.append(_Group(c, i))
                self.pos += 1
            elif c in (")", "]", "}"):
                if len(stack) == 1:
                    raise src.error(f"unmatched {c!r}", i, rule=rule)
                closer = _CLOSER[top.kind]
                if c != closer:
                    opened = src.span(top.offset)
                    raise src.error(
                        f"{c!r} does not close {top.kind!r} opened at line {opened.line}, column {opened.column}",
                        i, rule=rule, expected=repr(closer),
                    )  # fmt: skip
                expr, depth = self.close(top, i, rule)
                if top.kind == "[":
                    expr, depth = ir.Repetition(expr, 0, 1), depth + 1
                elif top.kind == "{":
                    expr, depth = ir.Repetition(expr, 0, None), depth + 1
                if depth > self.max_depth:
                    raise src.error(f"nesting too deep (more than {self.max_depth} levels)", top.offset, rule=rule)
                stack.pop()
                self.pos += 1
                self.add(stack[-1], expr, depth)
            elif c in _POSTFIX:
                if not top.items or top.comma:
                    raise src.error(f"{c!r} must follow a symbol", i, rule=rule)
                if top.postfixed:
                    raise src.error(
                        f"a second postfix operator {c!r}: KBNF allows one per symbol (use parentheses)", i, rule=rule
                    )
                lo, hi = _POSTFIX[c]
                top.items[-1] = ir.Repetition(top.items[-1], lo, hi)
                top.depths[-1] += 1
                if top.depths[-1] > self.max_depth:
                    raise src.error(f"nesting too deep (more than {self.max_depth} levels)", i, rule=rule)
                top.postfixed = True
                self.pos += 1
            elif c == "|":
                top.alts.append(self.sequence(top, i, rule))
                self.pos += 1
            elif c == ",":
                if not top.items or top.comma:
                    raise src.error("',' must stand between two symbols", i, rule=rule)
                top.comma = True
                self.pos += 1
            elif c == ";":
                if len(stack) > 1:
                    raise src.error(f"unclosed {top.kind!r}", top.offset, rule=rule, expected=repr(_CLOSER[top.kind]))
                expr, _ = self.close(top, i, rule)
                self.pos += 1
                return expr
            elif c == "":
                if len(stack) > 1:
                    raise src.error(f"unclosed {top.kind!r}", top.offset, rule=rule, expected=repr(_CLOSER[top.kind]))
                raise src.error("missing ';' at the end of the rule", self.last_end, rule=rule, expected="';'")
            else:
                raise src.error(f"unexpected {describe_char(c)}", i, rule=rule, expected=_SYMBOL_START)
            self.last_end = self.pos

    @staticmethod
    def add(group: _Group, expr: ir.Expr, depth: int) -> None:
        group.items.append(expr)
        group.depths.append(depth)
        group.postfixed = False
        group.comma = False

    def sequence(self, group: _Group, at: int, rule: str) -> tuple[ir.Expr, int]:
        """Finish the current alternative of ``group`` (it must not be empty)."""
        if group.comma:
            raise self.src.error("',' must be followed by a symbol", at, rule=rule)
        if not group.items:
            if group.alts or self.text[at] == "|":
                raise self.src.error(
                    "empty alternative (KBNF has none: use [...] or ? for an optional part)", at, rule=rule
                )
            what = "empty group" if group.kind else "empty rule body"
            raise self.src.error(what, at, rule=rule, expected=_SYMBOL_START)
        items, depths = group.items, group.depths
        group.items, group.depths = [], []
        group.postfixed = False
        if len(items) == 1:
            return items[0], depths[0]
        return ir.Sequence(tuple(items)), max(depths) + 1

    def close(self, group: _Group, at: int, rule: str) -> tuple[ir.Expr, int]:
        """The expression of a group (or rule body) ending at ``at``."""
        group.alts.append(self.sequence(group, at, rule))
        if len(group.alts) == 1:
            return group.alts[0]
        return ir.Choice(tuple(e for e, _ in group.alts)), max(d for _, d in group.alts) + 1


def parse_kbnf(text: str, start: str = "start", *, max_depth: int = DEFAULT_MAX_DEPTH) -> ir.Grammar:
    """Read KBNF grammar text into the IR (``end_mode="eager"``, ``syntax="kbnf"``).

    Raises ``GrammarError`` with line, column and rule for every syntax error,
    bad escape or regex, undefined nonterminal, a missing start rule, and for
    nesting deeper than ``max_depth`` IR levels.
    """
    return _Parser(Source(text, "KBNF"), max_depth).parse(start)
