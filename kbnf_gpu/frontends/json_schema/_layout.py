"""Whitespace modes: the punctuation lexemes and canonical value serialization.

* ``compact``: no whitespace at all (``{"a":1,"b":[1,2]}``).
* ``flexible``: between any two tokens (and before/after the root value) at
  most ``max_whitespace`` characters out of ``[ \\t\\n\\r]``. Each gap belongs to
  exactly one lexeme, so the bound is per gap: an opening bracket, a comma or
  a colon carries the gap after it, a closing bracket, comma or colon carries
  the gap before it (``{`` + gap + ``}`` is one lexeme for empty containers).
* ``indent=N``: exactly ``json.dumps(value, indent=N)`` (item separator
  ``","`` + newline + indentation, key separator ``": "``, empty containers
  ``{}``/``[]``).

Terminals. ``punct`` and ``key`` return ``ir.Terminal`` objects made once per
process for each (layout, piece): every schema compiled with the same options
shares them, so the DFA and token-row caches (keyed by terminal language)
hit, and nothing is rebuilt or rehashed per schema. A declared key is a
literal terminal of its own (``"name"``, built in microseconds and shared by
every object that declares that name) and, in the flexible layout, the colon
with the whitespace around it is one more terminal shared by all keys: a key
fused with ``ws{0,16}:ws{0,16}`` would be a 40-state automaton per key name.
In the compact and indent layouts the separator is a fixed literal, so it is
fused into the key literal (``"name":``): still a literal, one lexeme less.
"""
from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any, Optional

from ... import ir
from ...caches import memoized
from ...errors import GrammarError
from . import _charset as cs
from ._document import MAX_NESTING
from ._rx import EPS, Rx, alt, cc, lit, rep, seq

WS_CHARS = cs.of_chars(" \t\n\r")


def canonical_text(s: str) -> Rx:
    """The string body ``json.dumps`` writes for ``s``: ASCII as with ``ensure_ascii`` (DEL escaped), each
    code point above it raw or escaped (``ensure_ascii`` off or on)."""
    parts: list[Rx] = []
    for run in _ASCII_RUNS.finditer(s):  # a run of ASCII is written one way; a code point above it two ways
        text = run.group()
        parts.append(lit(json.dumps(text)[1:-1]) if text.isascii() else alt(lit(text), lit(json.dumps(text)[1:-1])))
    return seq(*parts)


_ASCII_RUNS = re.compile("[\x00-\x7f]+|[^\x00-\x7f]")


class Layout:
    """Punctuation lexemes for one whitespace mode; ``depth`` matters only with ``indent``."""

    def __init__(self, whitespace: str, max_whitespace: int, indent: Optional[int]) -> None:
        if whitespace not in ("flexible", "compact"):
            raise GrammarError(f"whitespace must be 'flexible' or 'compact', got {whitespace!r}")
        if indent is not None and (not isinstance(indent, int) or isinstance(indent, bool) or indent < 0):
            raise GrammarError(f"indent must be a non-negative integer or None, got {indent!r}")
        if not isinstance(max_whitespace, int) or max_whitespace < 0:
            raise GrammarError(f"max_whitespace must be a non-negative integer, got {max_whitespace!r}")
        self.indent = indent
        self.flexible = indent is None and whitespace == "flexible" and max_whitespace > 0
        self.max_whitespace = max_whitespace if self.flexible else 0
        self.ws: Rx = rep(cc(WS_CHARS), 0, max_whitespace) if self.flexible else EPS

    @property
    def options(self) -> tuple[bool, int, Optional[int]]:
        """What the layout's terminals depend on (the key of the process-wide terminal caches)."""
        return self.flexible, self.max_whitespace, self.indent

    def punct(self, piece: str, depth: int = 0) -> ir.Terminal:
        """The shared terminal of a punctuation piece: ``{``, ``}``, ``[``, ``]``, ``{}``, ``[]``, ``,``, ``:``, or ``edge``."""
        return _punct(self.options, piece, depth if self.indent is not None else 0)

    def key(self, name: str) -> tuple[ir.Terminal, ...]:
        """The terminals of a declared key and the colon after it (see the module docstring)."""
        return _key(self.options, name)

    def other_key(self, names: tuple[str, ...]) -> Optional[tuple[ir.Terminal, ...]]:
        """Key terminals for every key outside the sorted ``names`` (see ``_keys``)."""
        return _other_key(self.options, names)

    def key_of(self, body: Rx) -> tuple[ir.Expr, ...]:
        """Key terminals for a quoted key language ``body`` (additional members)."""
        if self.flexible:
            return ir.Terminal(body, name="key"), _punct(self.options, ":", 0)
        return (ir.Terminal(seq(body, self.colon()), name="key"),)

    def key_rule(self, key: ir.Expr) -> tuple[ir.Expr, ...]:
        """The key expressions of a key written by rules (``format: regex``), the colon after it."""
        if self.flexible:
            return key, _punct(self.options, ":", 0)
        return key, ir.Terminal(self.colon(), name="colon")

    def _nl(self, depth: int) -> str:
        return "\n" + " " * ((self.indent or 0) * depth)

    def open(self, bracket: str, depth: int) -> Rx:
        if self.indent is not None:
            return lit(bracket + self._nl(depth + 1))
        return seq(lit(bracket), self.ws)

    def close(self, bracket: str, depth: int) -> Rx:
        if self.indent is not None:
            return lit(self._nl(depth) + bracket)
        return seq(self.ws, lit(bracket))

    def empty(self, pair: str, depth: int) -> Rx:
        if self.flexible:
            return seq(lit(pair[0]), self.ws, lit(pair[1]))
        return lit(pair)

    def comma(self, depth: int) -> Rx:
        if self.indent is not None:
            return lit("," + self._nl(depth + 1))
        return seq(self.ws, lit(","), self.ws)

    def colon(self) -> Rx:
        if self.indent is not None:
            return lit(": ")
        return seq(self.ws, lit(":"), self.ws)

    def edge(self) -> Rx:
        """Whitespace allowed before and after the root value."""
        return self.ws

    # ------------------------------------------------------------ values

    def value(self, v: Any, depth: int, nesting: int = 0) -> Rx:
        """The canonical serialization of a JSON value in this layout."""
        if nesting > MAX_NESTING:
            raise GrammarError("enum/const value nested too deeply")
        if v is None:
            return lit("null")
        if isinstance(v, bool):
            return lit("true" if v else "false")
        if isinstance(v, int):
            return lit(str(v))
        if isinstance(v, float):
            if not math.isfinite(v):
                raise GrammarError(f"enum/const value {v!r} is not valid JSON")
            return lit(json.dumps(v))
        if isinstance(v, str):
            return seq(lit('"'), canonical_text(v), lit('"'))
        if isinstance(v, list):
            if not v:
                return self.empty("[]", depth)
            parts: list[Rx] = [self.open("[", depth)]
            for i, x in enumerate(v):
                if i:
                    parts.append(self.comma(depth))
                parts.append(self.value(x, depth + 1, nesting + 1))
            parts.append(self.close("]", depth))
            return seq(*parts)
        if isinstance(v, dict):
            if not v:
                return self.empty("{}", depth)
            parts = [self.open("{", depth)]
            for i, (k, x) in enumerate(v.items()):
                if i:
                    parts.append(self.comma(depth))
                parts.append(seq(lit('"'), canonical_text(str(k)), lit('"'), self.colon()))
                parts.append(self.value(x, depth + 1, nesting + 1))
            parts.append(self.close("}", depth))
            return seq(*parts)
        raise GrammarError(f"enum/const value {v!r} is not a JSON value")


_PUNCT_NAMES = {"{": "lbrace", "}": "rbrace", "[": "lbracket", "]": "rbracket", "{}": "empty_object",
                "[]": "empty_array", ",": "comma", ":": "colon", "edge": "ws"}


@lru_cache(maxsize=1024)
def _punct(options: tuple[bool, int, Optional[int]], piece: str, depth: int) -> ir.Terminal:
    layout = Layout("flexible" if options[0] else "compact", options[1], options[2])
    if piece in ("{", "["):
        rx = layout.open(piece, depth)
    elif piece in ("}", "]"):
        rx = layout.close(piece, depth)
    elif piece in ("{}", "[]"):
        rx = layout.empty(piece, depth)
    elif piece == ",":
        rx = layout.comma(depth)
    elif piece == ":":
        rx = layout.colon()
    else:
        rx = layout.edge()
    return ir.Terminal(rx, name=_PUNCT_NAMES[piece])


@memoized(1 << 19, lambda options, name: len(name) + 64)
def _key(options: tuple[bool, int, Optional[int]], name: str) -> tuple[ir.Terminal, ...]:
    layout = Layout("flexible" if options[0] else "compact", options[1], options[2])
    quoted_name = seq(lit('"'), canonical_text(name), lit('"'))
    if layout.flexible:
        return ir.Terminal(quoted_name, name="key"), _punct(options, ":", 0)
    return (ir.Terminal(seq(quoted_name, layout.colon()), name="key"),)


# An entry holds about three objects per unit of weight, each scanned by every full collection while held: at
# 1 << 18, 200,000 objects after 138 schemas (two-fifths of the process's); at 1 << 14, 38,000
@memoized(1 << 14, lambda options, names: sum(map(len, names)) + 16 * len(names) + 64)
def _other_key(options: tuple[bool, int, Optional[int]], names: tuple[str, ...]) -> tuple[ir.Terminal, ...]:
    from ._keys import other_keys
    from ._scalars import STRING
    from ._strings import quoted

    layout = Layout("flexible" if options[0] else "compact", options[1], options[2])
    if not names and layout.flexible:
        return STRING, _punct(options, ":", 0)  # every string: the very terminal of string values
    return layout.key_of(STRING.expr if not names else quoted(other_keys(names)))  # type: ignore[return-value]
