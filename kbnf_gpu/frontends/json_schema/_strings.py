"""JSON string encodings of decoded-string languages.

Constraints on strings (lengths, patterns, formats, keys) are languages over
*decoded* code points. ``encode`` maps such a language to the JSON string
bodies that decode into it, each code point spelled as ``json.dumps`` spells
it with ``ensure_ascii`` on or off (:func:`unit`): printable ASCII raw (``"``
and ``\\`` as ``\\"`` and ``\\\\``), a control character as any of its
escapes (``\\n``, ``\\u000a``), DEL and everything past ASCII raw or as
``\\uXXXX`` (hex digits in either case; above U+FFFF a surrogate pair).
Needless escapes of printable ASCII (``\\u0061`` for ``a``, ``\\/``) are not
spellings: no serializer writes them, and allowing them made every position
of a pattern's automaton carry the states of a ``\\u00XX`` escape (its byte
automaton 5-9 times the size: ``^[a-zA-Z0-9_-]{3,32}$`` 323 byte states, 52
without). Lone surrogate escapes are never produced, so one decoded code
point is one unit and lengths count exactly as ``len(str)`` does.
"""
from __future__ import annotations

from ...caches import memoized
from ...ir import Alternation, Automaton, CharClass, Concat, Literal, RegExpr, Repeat
from . import _charset as cs
from ._rx import EPS, Rx, alt, cc, fold, lit, seq, with_parts

RAW_ALLOWED: cs.Ranges = cs.subtract(cs.ANY, cs.norm([(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]))
_SHORT = {0x22: '"', 0x5C: "\\", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
U_ESCAPED: cs.Ranges = cs.norm([(0, 0x1F), (0x7F, cs.MAX_CP)])  # the code points spelled also as ``\uXXXX``
QUOTE = lit('"')


_HEX = "0123456789abcdef"
_Segments = tuple[tuple[int, int, RegExpr], ...]  # sorted, disjoint ``(lo, hi, what follows)``


def _hex_digits(values: tuple[int, ...]) -> RegExpr:
    """One hex digit out of ``values``, in either case."""
    chars = "".join(_HEX[v] + (_HEX[v].upper() if v >= 10 else "") for v in values)
    return CharClass(cs.of_chars(chars))


@memoized(1 << 17, lambda segments, width: len(segments) + 16)
def _hex_trie(segments: _Segments, width: int) -> Rx:
    """``width`` hex digits spelling a value of a segment, then that segment's continuation.

    Written as a trie: the options at each digit read disjoint digits (digits
    whose rests are alike share one option), so the automaton is deterministic
    as written and its subset construction stays as small as the trie. A union
    of one spelling per range instead (``\\p{L}`` has 648 ranges) made the
    subset construction track hundreds of options at every digit.
    """
    if width == 0:
        return segments[0][2]
    step = 16 ** (width - 1)
    rests: dict[int, list[tuple[int, int, RegExpr]]] = {}
    for lo, hi, then in segments:
        for d in range(lo // step, hi // step + 1):
            base = d * step
            rests.setdefault(d, []).append((max(lo, base) - base, min(hi, base + step - 1) - base, then))
    digits_of: dict[_Segments, list[int]] = {}
    for d, rest in rests.items():
        digits_of.setdefault(tuple(rest), []).append(d)
    return alt(*(seq(_hex_digits(tuple(ds)), _hex_trie(rest, width - 1)) for rest, ds in digits_of.items()))


def _u_escapes(ranges: cs.Ranges) -> Rx:
    """Every ``\\uXXXX`` spelling of a code point of ``ranges``."""
    digits = _u_digits(ranges)
    return None if digits is None else seq(lit("\\u"), digits)


def _u_digits(ranges: cs.Ranges) -> Rx:
    """What follows ``\\u`` in the ``\\uXXXX`` spellings of the code points of ``ranges``: astral ones as a
    surrogate pair, whose low half follows its high half in the same trie. Only those of ``U_ESCAPED``
    have one."""
    ranges = cs.intersect(ranges, U_ESCAPED)
    segments: list[tuple[int, int, RegExpr]] = [(a, b, EPS) for a, b in cs.intersect(ranges, ((0, 0xFFFF),))]
    highs: list[list] = []  # [first high, last high, its lows' ranges], ascending; a run of highs shares its lows
    for a, b in cs.intersect(ranges, ((0x10000, cs.MAX_CP),)):
        (ha, la), (hb, lb) = divmod(a - 0x10000, 0x400), divmod(b - 0x10000, 0x400)
        runs = [(ha, ha, ((la, lb),))] if ha == hb else [(ha, ha, ((la, 0x3FF),)), (ha + 1, hb - 1, ((0, 0x3FF),)),
                                                           (hb, hb, ((0, lb),))]
        for first, last, lows in runs:
            if first > last:
                continue
            if highs and highs[-1][1] == first:  # a high shared with the range before: its lows join
                before = highs.pop()
                if before[0] < first:
                    highs.append([before[0], first - 1, before[2]])
                highs.append([first, first, before[2] + lows])
                first += 1
            if first <= last:
                highs.append([first, last, lows])
    tails: dict[tuple, RegExpr] = {}
    for first, last, lows in highs:
        then = tails.get(lows)
        if then is None:
            then = tails[lows] = seq(lit("\\u"), _hex_trie(tuple((0xDC00 + a, 0xDC00 + b, EPS) for a, b in lows), 4))
        if segments and segments[-1][1] == 0xD800 + first - 1 and segments[-1][2] is then:
            segments[-1] = (segments[-1][0], 0xD800 + last, then)  # one segment per run: the trie groups alike
        else:
            segments.append((0xD800 + first, 0xD800 + last, then))
    if not segments:
        return None
    return _hex_trie(tuple(segments), 4)


def escaped(ranges: cs.Ranges) -> Rx:
    """The escaped spellings (``\\n``, ``\\"``, ``\\uXXXX``) of one code point out of ``ranges``, without
    their leading backslash: what follows a backslash that several states share."""
    short = "".join(ch for cp, ch in _SHORT.items() if cs.contains(ranges, cp))
    digits = _u_digits(ranges)
    return alt(cc(cs.of_chars(short)) if short else None, None if digits is None else seq(lit("u"), digits))


@memoized(1 << 17, lambda ranges: len(ranges) + 16)  # a class's ranges: its spellings' size
def unit(ranges: cs.Ranges) -> Rx:
    """Every spelling of one code point out of ``ranges`` (see the module docstring)."""
    raw = cc(cs.intersect(ranges, RAW_ALLOWED))
    short = [ch for cp, ch in _SHORT.items() if cs.contains(ranges, cp)]
    esc = seq(lit("\\"), cc(cs.of_chars("".join(short)))) if short else None
    return alt(raw, esc, _u_escapes(ranges))


CHAR = unit(cs.ANY)


def encode(x: Rx) -> Rx:
    """JSON string bodies (between the quotes) decoding into the language ``x`` (``fold``: without recursion)."""
    return None if x is None else fold(x, _encoded)


def _encoded(x: RegExpr, parts: list[Rx]) -> Rx:
    """``encode`` of ``x`` given its parts' encodings."""
    if isinstance(x, CharClass):
        return _encode_class(x)
    if isinstance(x, Literal):
        return encode_text(x.value.decode("utf-8"))
    if isinstance(x, (Concat, Alternation, Repeat, Automaton)):
        return with_parts(x, parts)
    raise TypeError(type(x))


@memoized(1 << 17, lambda x: len(x.ranges) + 16)
def _encode_class(x: CharClass) -> Rx:
    return unit(cs.norm(x.ranges))


def encode_text(s: str) -> Rx:
    """Every JSON string body that decodes to exactly ``s``."""
    return seq(*(unit(cs.single(ord(c))) for c in s))


def quoted(body: Rx) -> Rx:
    return seq(QUOTE, body, QUOTE)


def word(s: str) -> Rx:
    """``s`` as a decoded-level regex (one singleton class per code point)."""
    return seq(*(cc(cs.single(ord(c))) for c in s))
