"""Public entry points: terminals and regular expressions -> ``ByteDFA``, and DFA combinators."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import ir
from ..errors import DFATooLarge, GrammarError
from . import kinds
from .dfa import ByteDFA, StateLimit, determinize, finalize
from .nfa import NFA, DFALeaf, InvalidExpr, NFATooLarge, Node
from .regex import Anchor, RegexError, translate

DEFAULT_MAX_STATES = 10_000


def _nfa_limit(max_states: int) -> int:
    # An NFA may legitimately be larger than its DFA (UTF-8 paths, repeat
    # copies), but never unboundedly: this bounds time and memory.
    return max(100_000, 20 * max_states)


class _Context:
    """What is being built, for error messages."""

    def __init__(self, label: str, span: ir.Span | None = None) -> None:
        self.label = label
        self.span = span

    def where(self) -> dict:
        if self.span is None:
            return {}
        return {"line": self.span.line, "column": self.span.column}

    def too_large(self, limit: int, what: str = "DFA") -> DFATooLarge:
        return DFATooLarge(f"{self.label}: {what} exceeds the limit of {limit} states", **self.where())

    def regex_error(self, e: RegexError, pattern: ir.Pattern) -> GrammarError:
        at = f" at offset {e.pos}" if e.pos is not None else ""
        src = pattern.source if len(pattern.source) <= 60 else pattern.source[:57] + "..."
        return GrammarError(f"{self.label}: {e.message}{at} in regex {src!r}", **self.where())

    def error(self, message: str) -> GrammarError:
        return GrammarError(f"{self.label}: {message}", **self.where())


def _contains_anchor(node) -> bool:
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, Anchor):
            return True
        if isinstance(x, ir.Concat):
            stack.extend(x.parts)
        elif isinstance(x, ir.Alternation):
            stack.extend(x.options)
        elif isinstance(x, ir.Repeat):
            stack.append(x.item)
    return False


def _compile(root: Node, max_states: int, ctx: _Context) -> ByteDFA:
    """Any expression tree -> ByteDFA, mapping internal limits to ``DFATooLarge``."""
    nfa_limit = _nfa_limit(max_states)

    def on_pattern(p: ir.Pattern) -> Node:
        try:
            node = translate(p.source, p.flags)
        except RegexError as e:
            raise ctx.regex_error(e, p) from None
        if _contains_anchor(node):
            # anchors refer to the pattern's own extent: determinize it alone
            return DFALeaf(_determinized(node, max_states, nfa_limit, ctx))
        return node

    return _determinized(root, max_states, nfa_limit, ctx, on_pattern)


def _determinized(root: Node, max_states: int, nfa_limit: int, ctx: _Context, on_pattern=None) -> ByteDFA:
    nfa = NFA(nfa_limit)
    try:
        start, accept = nfa.build(root, on_pattern or _no_pattern)
        table, accepting, class_of_byte = determinize(nfa, start, accept, max_states)
    except NFATooLarge:
        raise ctx.too_large(nfa_limit, "NFA") from None
    except StateLimit:
        raise ctx.too_large(max_states) from None
    except InvalidExpr as e:
        raise ctx.error(str(e)) from None
    return finalize(table, accepting, class_of_byte)


def _no_pattern(p: ir.Pattern) -> Node:  # pragma: no cover - patterns never nest inside patterns
    raise AssertionError("unexpected pattern")


def _describe(expr: ir.RegExpr) -> str:
    """A short, non-recursive description of ``expr`` for messages."""
    if isinstance(expr, ir.Pattern):
        src = expr.source if len(expr.source) <= 60 else expr.source[:57] + "..."
        text = f"regex {src!r}"
    elif isinstance(expr, ir.Literal):
        text = f"literal {expr.value!r}"
    else:
        text = type(expr).__name__.lower()
    return text if len(text) <= 80 else text[:77] + "..."


def regexpr_to_dfa(expr: ir.RegExpr, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """The trimmed, minimal byte DFA of ``expr`` (PLAIN semantics)."""
    return _compile(expr, max_states, _Context(_describe(expr)))


def build_dfa(terminal: ir.Terminal, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """The trimmed, minimal byte DFA of a terminal, its KBNF kind applied (see ``kinds``).

    Raises ``DFATooLarge`` past ``max_states`` and ``GrammarError`` for a bad
    or unsupported regex. The empty language is returned, not raised.
    """
    flat = isinstance(terminal.expr, (ir.Pattern, ir.Literal))  # cheap to hash
    if flat:
        key = (terminal.expr, terminal.kind, max_states)
        hit = _FLAT_CACHE.get(key)
        if hit is not None:
            return hit
    dfa = _build_terminal(terminal, max_states)
    if flat:
        if len(_FLAT_CACHE) >= _FLAT_CACHE_SIZE:
            _FLAT_CACHE.clear()
        _FLAT_CACHE[key] = dfa
    return dfa


# Terminals written as one regex or literal recur (every string field of a
# JSON Schema); their DFAs are immutable, so share them.
_FLAT_CACHE: dict[tuple, ByteDFA] = {}
_FLAT_CACHE_SIZE = 1024


def _build_terminal(terminal: ir.Terminal, max_states: int) -> ByteDFA:
    label = f"terminal {terminal.name}" if terminal.name else f"terminal {_describe(terminal.expr)}"
    ctx = _Context(label, terminal.span)
    kind = terminal.kind
    if kind == ir.TerminalKind.SUBSTRINGS and isinstance(terminal.expr, ir.Literal):
        try:
            return kinds.literal_substrings(terminal.expr.value, max_states)
        except StateLimit:
            raise ctx.too_large(max_states) from None
    base = _compile(terminal.expr, max_states, ctx)
    try:
        if kind == ir.TerminalKind.PLAIN:
            return base
        if kind == ir.TerminalKind.EARLY_END:
            return kinds.early_end(base)
        if kind == ir.TerminalKind.COMPLEMENT:
            return kinds.complement(base, max_states, _nfa_limit(max_states))
        if kind == ir.TerminalKind.SUBSTRINGS:
            return kinds.substrings(base, max_states, _nfa_limit(max_states))
    except StateLimit:
        raise ctx.too_large(max_states) from None
    except NFATooLarge:
        raise ctx.too_large(_nfa_limit(max_states), "NFA") from None
    raise GrammarError(f"{label}: unknown terminal kind {kind!r}", **ctx.where())


# ---------------------------------------------------------------- combinators


def dfa_literal(data: bytes) -> ByteDFA:
    """Exactly ``data``."""
    n = len(data)
    t = np.full((n + 1, 256), -1, dtype=np.int32)
    t[np.arange(n), np.frombuffer(bytes(data), dtype=np.uint8)] = np.arange(1, n + 1)
    accepting = np.zeros(n + 1, dtype=bool)
    accepting[n] = True
    return ByteDFA(t, accepting)


def dfa_concat(parts: Sequence[ByteDFA], *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """Concatenation of the parts' languages (no parts: the empty string)."""
    return _compile(ir.Concat(tuple(DFALeaf(p) for p in parts)), max_states, _Context("dfa_concat"))


def dfa_union(options: Sequence[ByteDFA], *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """Union of the options' languages (no options: the empty language)."""
    return _compile(ir.Alternation(tuple(DFALeaf(o) for o in options)), max_states, _Context("dfa_union"))


def dfa_repeat(item: ByteDFA, min: int, max: int | None, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """``item`` repeated ``min`` to ``max`` times (``max=None``: unbounded)."""
    return _compile(ir.Repeat(DFALeaf(item), min, max), max_states, _Context("dfa_repeat"))
