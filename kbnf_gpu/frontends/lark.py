"""Lark front end: grammars are read by the ``lark`` package's own loader.

``lark.load_grammar`` resolves ``%import``, templates, ``?rule``/``!rule``,
``_rule`` inlining and expands the EBNF operators (``?``, ``*``, ``+``,
``[ ]``, ``~ n..m``) into BNF; this module maps its rules and terminal
definitions into the IR. The language is python-lark's (Earley, dynamic
lexer): tree-shaping options and priorities do not change it; ``%ignore``d
text may appear before the first terminal, between any two and after the last.

The llguidance/xgrammar dialect is read too (``_lark_dialect`` rewrites it for
lark's loader first): ``""`` and other zero-width terminals mean ε, ``-`` may
appear in names, ``x{m,n}`` repeats a rule item, ``\\u{H…}`` in regexes.
Regex terminals follow ``frontends/regex.py``'s flavour (Python ``re`` plus
those escapes; lookarounds and anchors anywhere, exactly). Deep nesting and
many optionals in one rule are hoisted into fresh rules before lark sees them.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import lark
from lark import exceptions as lark_exc
from lark.grammar import Terminal
from lark.lexer import Pattern as LarkPattern
from lark.lexer import PatternRE, PatternStr, TerminalDef, Token
from lark.load_grammar import load_grammar

from .. import ir
from ..errors import GrammarError
from ._lark_dialect import demangle, mangle, rewrite_dialect
from .regex import RegexIssue, has_lazy_quantifier, translate_regex

__all__ = ["parse_lark", "IGNORE_START", "IGNORE_TERMINAL", "IGNORE_RULE"]

IGNORE_START = "__start_ignore"
"""Start rule added when the grammar has ``%ignore``: ``IGN* start``."""
IGNORE_TERMINAL = "__IGNORE"
"""Name of the ``IGN*`` terminal (ignored text between terminals)."""
IGNORE_RULE = "__ignore"
"""``IGN*`` as a rule, used instead when an ignored terminal is a shortest-match one."""


def parse_lark(text: str, start: str = "start") -> ir.Grammar:
    """Read a Lark grammar (python-lark dialect) into the IR."""
    if not isinstance(text, str):
        raise GrammarError(f"a Lark grammar must be a str, got {type(text).__name__}")
    terminals, rules, ignore = _compile(text, start)
    if not any(demangle(str(r.origin.name)) == start for r in rules):
        raise GrammarError(f"start rule {start!r} is not defined")
    return _Builder(text, terminals, [demangle(str(n)) for n in dict.fromkeys(ignore)]).grammar(rules, start)


class _Builder:
    """Maps lark's BNF rules and terminal definitions to IR rules.

    ``%ignore`` (python-lark: ignored text before the first terminal, between
    any two and after the last) becomes ``T IGN*`` for every terminal T plus
    ``IGN* start``. ``IGN*`` is fused into each terminal's regular language
    when possible; a shortest-match terminal (lazy regex, EARLY_END) keeps a
    separate ``IGN*`` terminal after it; a shortest-match *ignored* terminal
    makes ``IGN*`` a rule over the ignored terminals, each with its own kind.
    """

    def __init__(self, text: str, terminals: list[TerminalDef], ignore: list[str]) -> None:
        self.where = _Where(text)
        self.text = text
        self.defs = {demangle(str(t.name)): t for t in terminals}
        self.base = {name: _terminal_expr(t, self.where) for name, t in self.defs.items()}
        self.early = {name for name, t in self.defs.items() if _is_shortest_match(t)}
        self.ignore = ignore
        self.ign: ir.RegExpr | None = None  # IGN* fused into terminals
        self.suffix: ir.Expr | None = None  # IGN* as a symbol of its own
        self.extra: list[ir.Rule] = []
        if ignore and any(n in self.early for n in ignore):
            self.suffix = ir.Ref(IGNORE_RULE)
            options = tuple(self._plain(n) for n in ignore)
            body = ir.Repetition(options[0] if len(options) == 1 else ir.Choice(options), 0, None)
            self.extra.append(ir.Rule(IGNORE_RULE, body))
        elif ignore:
            parts = tuple(self.base[n] for n in ignore)
            self.ign = ir.Repeat(parts[0] if len(parts) == 1 else ir.Alternation(parts), 0, None)
            self.suffix = ir.Terminal(self.ign, name=IGNORE_TERMINAL)
        self.symbols: dict[str, tuple[ir.Expr, ...]] = {}

    def grammar(self, rules: list[Any], start: str) -> ir.Grammar:
        bodies: dict[str, list[ir.Expr]] = {}
        for r in rules:
            items: list[ir.Expr] = []
            for sym in r.expansion:
                if isinstance(sym, Terminal):
                    items.extend(self.terminal(demangle(str(sym.name))))
                else:
                    items.append(ir.Ref(demangle(str(sym.name))))
            alt = items[0] if len(items) == 1 else ir.Sequence(tuple(items))
            bodies.setdefault(demangle(str(r.origin.name)), []).append(alt)
        out = [
            ir.Rule(name, alts[0] if len(alts) == 1 else ir.Choice(tuple(alts)), span=self.where.span(name))
            for name, alts in bodies.items()
        ]
        top = start
        if self.suffix is not None:
            top = IGNORE_START
            out.insert(0, ir.Rule(top, ir.Sequence((self.suffix, ir.Ref(start)))))
        return ir.Grammar(tuple(out + self.extra), top, "lark", "eos", source=self.text)

    def terminal(self, name: str) -> tuple[ir.Expr, ...]:
        """The symbols that stand for terminal ``name`` in a rule."""
        if name not in self.symbols:
            if name not in self.defs:
                raise GrammarError(
                    f"terminal {name} has no definition (%declare is not supported)",
                    **self.where.used(name),
                )
            if self.ign is not None and name not in self.early:
                fused = ir.Concat((self.base[name], self.ign))
                self.symbols[name] = (ir.Terminal(fused, name=name, span=self.where.span(name)),)
            elif self.suffix is not None:
                self.symbols[name] = (self._plain(name), self.suffix)
            else:
                self.symbols[name] = (self._plain(name),)
        return self.symbols[name]

    def _plain(self, name: str) -> ir.Terminal:
        kind = ir.TerminalKind.EARLY_END if name in self.early else ir.TerminalKind.PLAIN
        return ir.Terminal(self.base[name], kind, name=name, span=self.where.span(name))


# ------------------------------------------------------------- loading


def _compile(text: str, start: str) -> tuple[list[TerminalDef], list[Any], list[str]]:
    """lark's loader and EBNF→BNF compiler; lark's errors become GrammarError."""
    rewritten = rewrite_dialect(text)
    try:
        grammar, _files = load_grammar(rewritten, "<grammar>", [], False)
        return grammar.compile([mangle(start)], set())
    except GrammarError:
        raise
    except RecursionError:  # deep nesting inside a terminal definition (rules are hoisted, see _lark_dialect)
        raise GrammarError("a terminal definition is nested too deeply for python-lark's terminal resolver") from None
    except TypeError:  # python-lark 1.3's error reporter itself fails on some syntax errors (a '%d' of a state)
        raise GrammarError("Lark syntax error (python-lark's error reporter failed to locate it)") from None
    except (lark_exc.LarkError, KeyError, AssertionError, OSError, ValueError, IndexError) as e:
        error = _convert(e, rewritten)
        if rewritten != text:
            raise _in_original(error, text, rewritten) from None
        raise error from None


def _in_original(error: GrammarError, text: str, rewritten: str) -> GrammarError:
    """An error found in the dialect rewrite, placed in the grammar as written.

    The rewrite keeps every line where it was (hoisted rules come after the
    last); a column is kept only on a line the rewrite left unchanged.
    """
    lines, new_lines = text.split("\n"), rewritten.split("\n")
    line, column = error.line, error.column
    if line is not None and (line > len(lines) or lines[line - 1] != new_lines[line - 1]):
        column = None
        line = line if line <= len(lines) else None
    return GrammarError(demangle(error.reason), line=line, column=column)


def _convert(e: BaseException, text: str) -> GrammarError:
    """Turn one of lark's exceptions into a GrammarError that says where."""
    if isinstance(e, lark_exc.VisitError) and getattr(e, "rule", None) == "range":
        where = _Where(text)
        return GrammarError("a character range needs one character at each end", **where.at(where.tokens.bad_range()))
    if isinstance(e, lark_exc.VisitError):
        return _convert(e.orig_exc, text)
    if isinstance(e, lark_exc.UnexpectedInput):
        return GrammarError(f"Lark syntax error: {_unexpected(e, text)}", **_at_line_col(text, e.line, e.column))
    if isinstance(e, lark_exc.GrammarError) and len(e.args) >= 2 and isinstance(e.args[1], SyntaxError):
        where = _Where(text)
        tok = where.tokens.literal_containing(str(e.args[0]))
        return GrammarError(f"invalid escape in literal: {e.args[1].msg}", **where.at(tok))
    if isinstance(e, KeyError):
        return GrammarError(f"undefined name {e.args[0]!r}" if e.args else "undefined name")
    if isinstance(e, OSError):
        bundled = {p.stem for p in Path(lark.__file__).parent.joinpath("grammars").glob("*.lark")}
        imports = re.finditer(r"(?m)^[ \t]*%import[ \t]+(\.?[\w.]+?)(?:\.[A-Za-z_]\w*)?[ \t]*(?:->|\(|$)", text)
        m = next((m for m in imports if m.group(1) not in bundled), None)
        where = {"text": text, "offset": m.start(1)} if m else {}
        lib = m.group(1) if m else "?"
        return GrammarError(f"%import: grammar {lib!r} not found (only lark's bundled grammars such as "
                            f"'common' can be imported from a string grammar)", **where)
    msg = str(e.args[0]) if e.args else type(e).__name__
    m = re.search(r"at line (\d+) col(?:umn)? (\d+)", msg)
    if m:
        line, col = int(m.group(1)), int(m.group(2))
        head = msg.split(" at line ")[0].rstrip(", ").strip()
        if not head or head.startswith("Unexpected input"):
            head = f"Lark syntax error: {_unexpected_char(text, line, col)}"
        where = _at_line_col(text, line, col)
        if where and text[where["offset"] : where["offset"] + 1] == "{" and re.match(r"\{\s*\d", text[where["offset"] :]):
            head += " (Lark writes a repetition count as 'x ~ m..n', not 'x{m,n}')"
        return GrammarError(head, **where)
    return GrammarError(msg, **_Where(text).for_message(msg))


def _unexpected(e: lark_exc.UnexpectedInput, text: str) -> str:
    tok = getattr(e, "token", None)
    if isinstance(tok, Token) and tok.type == "$END":
        return "unexpected end of grammar"
    if isinstance(tok, Token) and tok.type == "_NL":
        return "unexpected end of line"
    if tok is not None:
        return f"unexpected {str(tok)!r}"
    return _unexpected_char(text, e.line, e.column)


def _unexpected_char(text: str, line: int, column: int) -> str:
    lines = text.split("\n")
    if 1 <= line <= len(lines) and 1 <= column <= len(lines[line - 1]):
        return f"unexpected character {lines[line - 1][column - 1]!r}"
    return "unexpected end of grammar"


def _at_line_col(text: str, line: int | None, column: int | None) -> dict[str, Any]:
    if not line or line < 1:
        return {}
    lines = text.split("\n")
    if line > len(lines):  # lark appends a newline before parsing
        return {"text": text, "offset": len(text)}
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + min(max((column or 1) - 1, 0), len(lines[line - 1]))
    return {"text": text, "offset": offset}


# ------------------------------------------------------------- terminals


def _terminal_expr(t: TerminalDef, where: "_Where") -> ir.RegExpr:
    """The regular language of one lark terminal definition."""
    p = t.pattern
    flags = "".join(sorted(p.flags))
    if isinstance(p, PatternStr):
        if not flags:
            try:
                return ir.Literal(p.value.encode("utf-8"))
            except UnicodeEncodeError:
                raise GrammarError(
                    f"terminal {t.name}: the string holds a lone surrogate (not encodable as UTF-8)",
                    **where.pattern(t.name, p),
                ) from None
        source = re.escape(p.value)
    elif isinstance(p, PatternRE):
        source = _rewrite_escaped_inner(p)
    else:  # pragma: no cover - lark has only these two
        raise GrammarError(f"terminal {t.name}: unsupported pattern type {type(p).__name__}")
    try:
        out = translate_regex(source, flags, strip_anchors=False)
    except RegexIssue as e:
        raise GrammarError(f"terminal {t.name}: {e.message}", **where.regex_issue(t.name, p, e)) from None
    return out


# common.lark's _STRING_ESC_INNER (in ESCAPED_STRING): ``.*?(?<!\\)(\\\\)*?`` right
# after a quote: "the text does not end in an odd run of backslashes".
_ESC_INNER = re.compile(r"""(?<=["'])\.\*\?\(\?<!\\\\\)\(\\\\\\\\\)\*\?""")


def _rewrite_escaped_inner(p: PatternRE) -> str:
    """Replace the lookbehind idiom of ``_STRING_ESC_INNER`` by its regular equivalent.

    After a quote the lookbehind only says "the char before the trailing
    ``(\\\\)*`` run is not a backslash", i.e. ``(?:.*?[^\\\n])??(?:\\\\)*?``
    (``[^\\]`` under the ``s`` flag). Same language, no lookaround.
    """
    dotall = "s" in p.flags or "(?s" in p.value
    last = "[^\\\\]" if dotall else "[^\\\\\\n]"
    return _ESC_INNER.sub(lambda _m: "(?:.*?" + last + ")??(?:\\\\\\\\)*?", p.value)


def _is_shortest_match(t: TerminalDef) -> bool:
    """python-lark's lexer takes a lazy regex's first (shortest) match: ``.*?"`` stops at the first quote."""
    p = t.pattern
    if not isinstance(p, PatternRE):
        return False
    try:
        return has_lazy_quantifier(_rewrite_escaped_inner(p), "".join(sorted(p.flags)))
    except Exception:
        return False


# ------------------------------------------------------------- positions


class _Where:
    """Positions in the grammar text, for error messages and spans.

    Token positions come from lark's own grammar parser, run lazily (only on
    the error path); definition spans come from a cheap line scan.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._tokens: _Tokens | None = None
        self._spans: dict[str, ir.Span] | None = None

    @property
    def tokens(self) -> "_Tokens":
        if self._tokens is None:
            self._tokens = _Tokens(self.text)
        return self._tokens

    def span(self, name: str) -> ir.Span | None:
        if self._spans is None:
            self._spans = _definition_spans(self.text)
        return self._spans.get(name)

    def at(self, tok: Token | None, delta: int = 0) -> dict[str, Any]:
        if tok is None or tok.start_pos is None:
            return {}
        return {"text": self.text, "offset": tok.start_pos + delta}

    def used(self, name: str) -> dict[str, Any]:
        return self.at(self.tokens.usage(name) or self.tokens.definition(name))

    def pattern(self, name: str, p: LarkPattern) -> dict[str, Any]:
        tok = self.tokens.literal_for(p, name)
        return self.at(tok or self.tokens.definition(name) or self.tokens.usage(name))

    def regex_issue(self, name: str, p: LarkPattern, issue: RegexIssue) -> dict[str, Any]:
        """The literal that raises ``issue``; inside it when the offset maps."""
        for tok, lp in self.tokens.literals_of(name):
            if not isinstance(lp, PatternRE) and not lp.flags:
                continue
            source = lp.value if isinstance(lp, PatternRE) else re.escape(lp.value)
            try:
                translate_regex(source, "".join(sorted(lp.flags)), strip_anchors=False)
            except RegexIssue as e:
                if e.message != issue.message:
                    continue
                inner = tok.value[1 : tok.value.rfind(tok.value[0], 1)]
                if isinstance(lp, PatternRE) and e.offset is not None and inner == lp.value:
                    return self.at(tok, 1 + e.offset)
                return self.at(tok)
        return self.pattern(name, p)

    def for_message(self, msg: str) -> dict[str, Any]:
        """Find the construct one of lark's position-less error messages names."""
        t = self.tokens
        m = re.search(r"(?:Rule|Terminal) '([^']+)' used but not defined", msg) or re.search(
            r"used but not defined: (\S+)", msg
        )
        if m:
            return self.used(m.group(1))
        m = re.search(r"'([^']+)' defined more than once", msg) or re.search(r"defined twice: .*?\b(\w+) :", msg)
        if m:
            defs = t.definitions(m.group(1))
            return self.at(defs[1] if len(defs) > 1 else (defs[0] if defs else None))
        m = re.search(r"Empty terminals are not allowed \((.*)\)\s*$", msg, re.S)
        if m:
            return self.at(t.literal_text(m.group(1)))
        m = re.search(r"Bad Range for .*\((-?\d+)\.\.(-?\d+) isn't allowed\)", msg)
        if m:
            return self.at(t.range_op(int(m.group(1)), int(m.group(2))))
        m = re.search(r"Wrong number of template arguments used for (\S+)", msg)
        if m:
            return self.at(t.usage(m.group(1)))
        m = re.search(r"Rules aren't allowed inside terminals \((?:NonTerminal\(')?(\w+)'?\)? in (\w+)\)", msg)
        if m:
            return self.at(t.usage(m.group(1), owner=m.group(2)) or t.usage(m.group(1)))
        pattern = r"'([A-Za-z_][\w{}]*)'|\(([A-Za-z_]\w*)\)|\b(?:for|in|rule|template) ([A-Za-z_]\w*)"
        for name in re.findall(pattern, msg, re.I):
            name = next(n for n in name if n)
            tok = t.definition(name) or t.usage(name)
            if tok is not None:
                return self.at(tok)
        return {}


class _Tokens:
    """Definitions, uses and literals of a grammar, with their tokens."""

    def __init__(self, text: str) -> None:
        self.defs: dict[str, list[Token]] = {}
        self.uses: list[tuple[str | None, Token]] = []
        self.literals: list[tuple[str | None, Token]] = []
        self.ranges: list[tuple[Token, tuple[int, ...]]] = []
        self.char_ranges: list[tuple[Token, Token]] = []
        try:
            from lark.load_grammar import _get_parser

            tree = _get_parser().parse(text + "\n", "start")
        except Exception:  # a grammar lark cannot parse: no positions
            return
        for stmt in tree.children:
            self._statement(stmt)

    def _statement(self, stmt: Any) -> None:
        if getattr(stmt, "data", None) in ("override", "extend") and stmt.children:
            stmt = stmt.children[0]
        data = getattr(stmt, "data", None)
        owner: Token | None = None
        if data in ("rule", "term"):
            owner = next((c for c in stmt.children if isinstance(c, Token) and c.type in ("RULE", "TERMINAL")), None)
            if owner is not None:
                self.defs.setdefault(str(owner), []).append(owner)
        for tok in stmt.scan_values(lambda v: isinstance(v, Token)):
            if tok is owner:
                continue
            if tok.type in ("STRING", "REGEXP"):
                self.literals.append((owner and str(owner), tok))
            elif tok.type in ("RULE", "TERMINAL"):
                if data == "import":
                    self.defs.setdefault(str(tok), []).append(tok)
                else:
                    self.uses.append((owner and str(owner), tok))
        for rng in stmt.find_data("range"):
            ends = [c for c in rng.children if isinstance(c, Token)]
            if len(ends) == 2:
                self.char_ranges.append((ends[0], ends[1]))
        for expr in stmt.find_data("expr"):
            kids = expr.children
            ops = [c for c in kids if isinstance(c, Token) and c.type in ("TILDE", "OP")]
            nums = tuple(int(c) for c in kids if isinstance(c, Token) and c.type == "NUMBER")
            if ops and ops[0] == "~":
                self.ranges.append((ops[0], nums))

    def definition(self, name: str) -> Token | None:
        defs = self.defs.get(name)
        return defs[0] if defs else None

    def definitions(self, name: str) -> list[Token]:
        return self.defs.get(name, [])

    def usage(self, name: str, owner: str | None = None) -> Token | None:
        return next((t for o, t in self.uses if str(t) == name and (owner is None or o == owner)), None)

    def literals_of(self, name: str) -> list[tuple[Token, LarkPattern]]:
        """Literal tokens with their lark patterns, ``name``'s own first."""
        out = []
        for owner, tok in sorted(self.literals, key=lambda ot: ot[0] != name):
            lp = _lark_pattern(tok)
            if lp is not None:
                out.append((tok, lp))
        return out

    def literal_for(self, p: LarkPattern, name: str) -> Token | None:
        return next((tok for tok, lp in self.literals_of(name) if lp == p), None)

    def literal_text(self, raw: str) -> Token | None:
        return next((tok for _, tok in self.literals if tok.value == raw), None)

    def literal_containing(self, inner: str) -> Token | None:
        return next((tok for _, tok in self.literals if inner in tok.value), None)

    def bad_range(self) -> Token | None:
        """The first ``"a".."z"`` whose ends are not single characters."""
        for first, last in self.char_ranges:
            try:
                from lark.load_grammar import eval_escaping

                if len(eval_escaping(first[1:-1])) != 1 or len(eval_escaping(last[1:-1])) != 1:
                    return first
            except Exception:
                return first
        return None

    def range_op(self, lo: int, hi: int) -> Token | None:
        return next((tok for tok, nums in self.ranges if nums[:2] == (lo, hi)), None)


def _lark_pattern(tok: Token) -> LarkPattern | None:
    try:
        from lark.load_grammar import _literal_to_pattern

        return _literal_to_pattern(tok)
    except Exception:
        return None


_DEF_LINE = re.compile(r"(?m)^[ \t]*[?!]?([_A-Za-z][_A-Za-z0-9]*(?:-[_A-Za-z0-9]+)*)[ \t]*(?:\{[^}\n]*\})?[ \t]*(?:\.[ \t]*-?\d+)?[ \t]*:")


def _definition_spans(text: str) -> dict[str, ir.Span]:
    """Where each rule or terminal is first defined (a cheap line scan, no tokenizing)."""
    spans: dict[str, ir.Span] = {}
    line, last = 1, 0
    for m in _DEF_LINE.finditer(text):
        offset = m.start(1)
        line += text.count("\n", last, offset)
        last = offset
        if m.group(1) not in spans:
            spans[m.group(1)] = ir.Span(line, offset - (text.rfind("\n", 0, offset) + 1) + 1)
    return spans
