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
"""
from __future__ import annotations

import json
import math
from typing import Any, Optional

from ...errors import GrammarError
from . import _charset as cs
from ._document import MAX_NESTING
from ._rx import EPS, Rx, alt, cc, lit, rep, seq

WS_CHARS = cs.of_chars(" \t\n\r")


def canonical_text(s: str) -> Rx:
    """The string body ``json.dumps`` writes for ``s`` (with ``ensure_ascii`` on or off)."""
    parts: list[Rx] = []
    for c in s:
        cp = ord(c)
        if cp < 0x80:
            parts.append(lit(json.dumps(c)[1:-1]))
        else:
            parts.append(alt(lit(c), lit(json.dumps(c)[1:-1])))
    return seq(*parts)


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
        self.flexible = indent is None and whitespace == "flexible"
        self.ws: Rx = rep(cc(WS_CHARS), 0, max_whitespace) if self.flexible and max_whitespace else EPS

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
