"""Shared helpers of the hand-written grammar front ends (KBNF, GBNF).

* ``Source``: the grammar text with O(log n) offset → line/column lookup and
  ``GrammarError`` construction (caret excerpt included).
* Escape decoding for quoted strings in both dialects, code point checks and
  UTF-8 encoding of literals.
* ``DepthGuard``-style constants: parsers are iterative, and the IR they build
  is bounded in depth so that the (recursive) ``__eq__``/``__hash__``/``__repr__``
  of the frozen IR dataclasses never hit Python's recursion limit downstream.
"""
from __future__ import annotations

from bisect import bisect_right

from .. import ir
from ..automata import charset
from ..errors import GrammarError

MAX_CODE_POINT = 0x10FFFF

# Deepest IR expression a front end builds. Every nested group adds one or two
# levels (Choice/Sequence), a postfix operator one; the frozen dataclasses of
# ``ir`` compare, hash and print recursively (about 4 Python frames per level
# for ``repr``), so this keeps every later stage far from RecursionError.
DEFAULT_MAX_DEPTH = 150

# Largest bound accepted in ``{m,n}``: the normalizer unrolls bounded repetition.
MAX_REPETITION = 100_000

_HEX = frozenset("0123456789abcdefABCDEF")
_OCT = frozenset("01234567")


class EscapeError(Exception):
    """A bad escape; ``offset`` points into the grammar text."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


class Source:
    """Grammar text plus position bookkeeping."""

    def __init__(self, text: object, syntax: str) -> None:
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError as e:
                raise GrammarError(f"{syntax} grammar is not valid UTF-8 (byte {e.start})") from None
        if not isinstance(text, str):
            raise GrammarError(f"a {syntax} grammar must be a str, got {type(text).__name__}")
        self.text = text
        self.line_starts = [0]
        find = text.find
        i = find("\n")
        while i >= 0:
            self.line_starts.append(i + 1)
            i = find("\n", i + 1)

    def span(self, offset: int) -> ir.Span:
        """1-based line and column of ``offset``."""
        line = bisect_right(self.line_starts, offset)
        return ir.Span(line, offset - self.line_starts[line - 1] + 1)

    def error(
        self, message: str, offset: int, *, rule: str | None = None, expected: str | None = None
    ) -> GrammarError:
        return GrammarError(message, text=self.text, offset=offset, rule=rule, expected=expected)

    def snippet(self, start: int, end: int, limit: int = 60) -> str:
        """Source text of a construct (shortened), used as a terminal's name."""
        s = self.text[start:end]
        return s if len(s) <= limit else s[: limit - 3] + "..."


def describe_char(c: str) -> str:
    """A character for an error message."""
    if c == "":
        return "end of input"
    if c.isprintable() and not c.isspace():
        return repr(c)
    return f"U+{ord(c):04X} {c!r}"


def _hex_run(text: str, pos: int, count: int, esc_offset: int, what: str) -> int:
    digits = text[pos : pos + count]
    if len(digits) != count or not all(ch in _HEX for ch in digits):
        raise EscapeError(f"invalid escape {what}: expected {count} hex digits", esc_offset)
    return int(digits, 16)


def check_code_point(cp: int, offset: int, *, allow_surrogate: bool = False) -> int:
    if cp > MAX_CODE_POINT:
        raise EscapeError(f"code point U+{cp:X} is beyond U+10FFFF", offset)
    if not allow_surrogate and 0xD800 <= cp <= 0xDFFF:
        raise EscapeError(f"lone surrogate U+{cp:04X} cannot be encoded as UTF-8", offset)
    return cp


# KBNF (the kbnf crate unescapes strings JavaScript-style); each maps to a code point.
_KBNF_SIMPLE = {
    "b": 0x08,
    "f": 0x0C,
    "n": 0x0A,
    "r": 0x0D,
    "t": 0x09,
    "v": 0x0B,
    "'": 0x27,
    '"': 0x22,
    "\\": 0x5C,
    "/": 0x2F,
}


def kbnf_escape(text: str, pos: int) -> tuple[int, int]:
    """Decode the KBNF escape at ``text[pos] == '\\\\'``: ``(code point, next offset)``.

    Matches the ``kbnf`` 0.4.2 crate: ``\\b \\f \\n \\r \\t \\' \\" \\\\ \\/``,
    ``\\xHH`` (exactly two digits, a code point, not a byte), ``\\uHHHH``,
    ``\\u{H...}``, and octal ``\\0``..``\\377`` (a first digit 0-3 takes up to
    three digits, 4-7 up to two). Beyond the crate: ``\\v`` (JavaScript's
    vertical tab) and a UTF-16 surrogate pair ``\\uD83D\\uDE00`` as one
    character. Everything else (``\\d``, ``\\a``, a backslash-newline, ...) is
    an error, as it is in the crate.
    """
    c = text[pos + 1 : pos + 2]
    if c == "":
        raise EscapeError("unfinished escape at end of input", pos)
    simple = _KBNF_SIMPLE.get(c)
    if simple is not None:
        return simple, pos + 2
    if c == "x":
        return _hex_run(text, pos + 2, 2, pos, "\\x"), pos + 4
    if c == "u":
        if text.startswith("{", pos + 2):
            close = text.find("}", pos + 3)
            digits = text[pos + 3 : close] if close >= 0 else ""
            if close < 0 or not digits or len(digits) > 8 or not all(ch in _HEX for ch in digits):
                raise EscapeError("invalid escape \\u{...}: expected 1 to 8 hex digits and '}'", pos)
            return check_code_point(int(digits, 16), pos), close + 1
        cp = _hex_run(text, pos + 2, 4, pos, "\\u")
        end = pos + 6
        if 0xD800 <= cp <= 0xDBFF and text.startswith("\\u", end):
            low_digits = text[end + 2 : end + 6]
            if len(low_digits) == 4 and all(ch in _HEX for ch in low_digits):
                low = int(low_digits, 16)
                if 0xDC00 <= low <= 0xDFFF:
                    return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00), end + 6
        return check_code_point(cp, pos), end
    if c in _OCT:
        width = 3 if c in "0123" else 2
        end = pos + 2
        while end < pos + 1 + width and text[end : end + 1] in _OCT:
            end += 1
        return int(text[pos + 1 : end], 8), end
    raise EscapeError(f"invalid escape '\\{c}'", pos)


# GBNF (llama.cpp's parse_char), plus '\-' (newer llama.cpp).
_GBNF_SIMPLE = {"t": 0x09, "r": 0x0D, "n": 0x0A, "\\": 0x5C, '"': 0x22, "[": 0x5B, "]": 0x5D, "-": 0x2D}
_GBNF_HEX = {"x": 2, "u": 4, "U": 8}


def gbnf_escape(text: str, pos: int) -> tuple[int, int]:
    """Decode the GBNF escape at ``text[pos] == '\\\\'``: ``(code point, next offset)``.

    llama.cpp accepts ``\\xHH \\uHHHH \\UHHHHHHHH`` (exact digit counts; the
    value is a code point) and ``\\t \\r \\n \\\\ \\" \\[ \\]``; newer versions
    add ``\\-``. Surrogates are returned as is (the caller decides).
    """
    c = text[pos + 1 : pos + 2]
    if c == "":
        raise EscapeError("unfinished escape at end of input", pos)
    simple = _GBNF_SIMPLE.get(c)
    if simple is not None:
        return simple, pos + 2
    width = _GBNF_HEX.get(c)
    if width is not None:
        cp = _hex_run(text, pos + 2, width, pos, "\\" + c)
        return check_code_point(cp, pos, allow_surrogate=True), pos + 2 + width
    raise EscapeError(f"invalid escape '\\{c}' (GBNF knows \\x \\u \\U \\t \\r \\n \\\\ \\\" \\[ \\] \\-)", pos)


def utf8(code_points: list[int], offsets: list[int]) -> bytes:
    """UTF-8 bytes of a decoded literal; a surrogate is an error at its offset."""
    for cp, off in zip(code_points, offsets):
        if 0xD800 <= cp <= 0xDFFF:
            raise EscapeError(f"lone surrogate U+{cp:04X} cannot be encoded as UTF-8", off)
    return "".join(map(chr, code_points)).encode("utf-8")


# code point range sets: one implementation, the DFA builder's
normalize_ranges = charset.normalize
complement_ranges = charset.complement


def check_references(src: "Source", defined: set[str], refs, start: str, noun: str) -> None:
    """Every referenced name is defined (else an error at the reference) and the start rule exists."""
    for name, offset, rule in refs:
        if name not in defined:
            raise src.error(f"undefined {noun} '{name}'", offset, rule=rule)
    if start not in defined:
        raise GrammarError(f"no rule named '{start}' (the start rule)")
