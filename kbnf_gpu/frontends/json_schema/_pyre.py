"""Render an IR regular expression as a Python ``re`` pattern (for checks and debugging).

The rendering is over code points: ``Literal`` bytes are decoded as UTF-8.
"""
from __future__ import annotations

from ...ir import Alternation, Automaton, ByteClass, CharClass, Concat, Literal, Pattern, RegExpr, Repeat


def _cp(c: int) -> str:
    return "\\U%08x" % c


def to_python(expr: RegExpr) -> str:
    """A Python regex string with the same language (no anchors added)."""
    out: list[str] = []
    stack: list[object] = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, str):
            out.append(e)
        elif isinstance(e, Literal):
            out.append("".join(_cp(ord(ch)) for ch in e.value.decode("utf-8")))
        elif isinstance(e, CharClass):
            if not e.ranges:
                out.append("(?!)")
            else:
                out.append("[" + "".join(_cp(a) if a == b else _cp(a) + "-" + _cp(b) for a, b in e.ranges) + "]")
        elif isinstance(e, ByteClass):
            raise ValueError("byte classes have no code-point rendering")
        elif isinstance(e, Pattern):
            out.append("(?:" + e.source + ")")
        elif isinstance(e, Concat):
            stack.append(")")
            stack.extend(reversed(e.parts))
            out.append("(?:")
        elif isinstance(e, Alternation):
            stack.append(")")
            for i, o in reversed(list(enumerate(e.options))):
                stack.append(o)
                if i:
                    stack.append("|")
            out.append("(?:")
        elif isinstance(e, Repeat):
            hi = "" if e.max is None else str(e.max)
            stack.append(")){%d,%s}" % (e.min, hi))
            stack.append(e.item)
            out.append("(?:(?:")
        elif isinstance(e, Automaton):  # as a regular expression (for checks: may be large)
            from ._fsm import automaton_regex

            stack.append(automaton_regex(e, limit=1 << 20))
        else:  # pragma: no cover
            raise TypeError(type(e))
    return "".join(out)

