"""JSON string encodings of decoded-string languages.

Constraints on strings (lengths, patterns, formats, keys, enum values) are
languages over *decoded* code points. ``encode`` maps such a language to the
set of JSON string bodies that decode into it: each code point may be written
raw (if JSON allows it raw), as a short escape (``\\n``...), as ``\\uXXXX``
(hex digits in either case) or, above U+FFFF, as a surrogate-pair escape.
Lone surrogate escapes are never produced, so one decoded code point is one
unit and lengths count exactly as ``len(str)`` does.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

from ...ir import Alternation, Automaton, CharClass, Concat, Literal, RegExpr, Repeat
from . import _charset as cs
from ._rx import EPS, Rx, alt, cc, lit, rep, seq

RAW_ALLOWED: cs.Ranges = cs.subtract(cs.ANY, cs.norm([(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]))
_SHORT = {0x22: '"', 0x5C: "\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
QUOTE = lit('"')


def _hex_digit_class(lo: int, hi: int) -> RegExpr:
    rs = []
    for v in range(lo, hi + 1):
        rs.append((ord("0123456789abcdef"[v]),) * 2)
        if v >= 10:
            rs.append((ord("ABCDEF"[v - 10]),) * 2)
    return CharClass(cs.norm(rs))


def fixed_width(lo: list[int], hi: list[int], base: int, digit: Callable[[int, int], RegExpr]) -> Rx:
    """Digit strings of fixed width between ``lo`` and ``hi`` (inclusive), factored."""
    n = len(lo)
    if n == 0:
        return EPS
    if lo[0] == hi[0]:
        return seq(digit(lo[0], lo[0]), fixed_width(lo[1:], hi[1:], base, digit))
    a, b = lo[0], hi[0]
    full = rep(digit(0, base - 1), n - 1, n - 1) if n > 1 else EPS
    first = last = None
    if any(x != 0 for x in lo[1:]):
        first = seq(digit(a, a), fixed_width(lo[1:], [base - 1] * (n - 1), base, digit))
        a += 1
    if any(x != base - 1 for x in hi[1:]):
        last = seq(digit(b, b), fixed_width([0] * (n - 1), hi[1:], base, digit))
        b -= 1
    mid = seq(digit(a, b), full) if a <= b else None
    return alt(first, mid, last)


def _hex4(ranges: cs.Ranges) -> Rx:
    out: Rx = None
    for a, b in ranges:
        da = [(a >> s) & 15 for s in (12, 8, 4, 0)]
        db = [(b >> s) & 15 for s in (12, 8, 4, 0)]
        out = alt(out, fixed_width(da, db, 16, _hex_digit_class))
    return out


def _pairs(ranges: cs.Ranges) -> Rx:
    """Surrogate-pair escapes for astral code points."""
    out: Rx = None
    u = lit("\\u")
    for a, b in ranges:
        va, vb = a - 0x10000, b - 0x10000
        ha, hb = 0xD800 + (va >> 10), 0xD800 + (vb >> 10)
        la, lb = 0xDC00 + (va & 0x3FF), 0xDC00 + (vb & 0x3FF)
        if ha == hb:
            out = alt(out, seq(u, _hex4(((ha, ha),)), u, _hex4(((la, lb),))))
            continue
        out = alt(out, seq(u, _hex4(((ha, ha),)), u, _hex4(((la, 0xDFFF),))))
        if hb - ha >= 2:
            out = alt(out, seq(u, _hex4(((ha + 1, hb - 1),)), u, _hex4(((0xDC00, 0xDFFF),))))
        out = alt(out, seq(u, _hex4(((hb, hb),)), u, _hex4(((0xDC00, lb),))))
    return out


@lru_cache(maxsize=4096)
def unit(ranges: cs.Ranges) -> Rx:
    """Every JSON encoding of one code point out of ``ranges``."""
    raw = cc(cs.intersect(ranges, RAW_ALLOWED))
    short = [ch for cp, ch in _SHORT.items() if cs.contains(ranges, cp)]
    esc = seq(lit("\\"), cc(cs.of_chars("".join(short)))) if short else None
    bmp = cs.intersect(ranges, ((0, 0xFFFF),))
    uesc = seq(lit("\\u"), _hex4(bmp)) if bmp else None
    astral = cs.intersect(ranges, ((0x10000, cs.MAX_CP),))
    return alt(raw, esc, uesc, _pairs(astral) if astral else None)


CHAR = unit(cs.ANY)


def encode(x: Rx) -> Rx:
    """JSON string bodies (between the quotes) decoding into the language ``x``."""
    if x is None:
        return None
    if isinstance(x, CharClass):
        return unit(cs.norm(x.ranges))
    if isinstance(x, Literal):
        return seq(*(unit(cs.single(ord(c))) for c in x.value.decode("utf-8")))
    if isinstance(x, Concat):
        return seq(*(encode(p) for p in x.parts))
    if isinstance(x, Alternation):
        return alt(*(encode(o) for o in x.options))
    if isinstance(x, Repeat):
        return rep(encode(x.item), x.min, x.max)
    if isinstance(x, Automaton):
        edges = tuple((p, label, q) for p, label, q in ((p, encode(label), q) for p, label, q in x.edges)
                      if label is not None)
        return Automaton(x.n_states, edges, x.accepting)
    raise TypeError(type(x))


def encode_text(s: str) -> Rx:
    """Every JSON string body that decodes to exactly ``s``."""
    return seq(*(unit(cs.single(ord(c))) for c in s))


def quoted(body: Rx) -> Rx:
    return seq(QUOTE, body, QUOTE)


def word(s: str) -> Rx:
    """``s`` as a decoded-level regex (one singleton class per code point)."""
    return seq(*(cc(cs.single(ord(c))) for c in s))
