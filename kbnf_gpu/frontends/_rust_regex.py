"""Rust ``regex``-crate syntax (KBNF's ``#"..."`` terminals) → Python ``re`` syntax.

KBNF hands its regexes to the Rust ``regex`` crate; the IR holds Python ``re``
patterns. Most syntax is shared; this module rewrites what is not:

* ``\\z`` → ``\\Z``; ``\\x{H..}``, ``\\u{..}``, ``\\U{..}`` → fixed-width escapes;
* named groups ``(?P<n>..)`` / ``(?<n>..)`` and plain groups → ``(?:..)``;
* a flag group ``(?i)`` in mid-pattern (Python only allows global flags at the
  start) → scoped ``(?i:..)`` wrappers up to the end of the enclosing group,
  re-opened after each ``|``; flags ``U`` and ``u`` are dropped (no effect on a
  DFA's language);
* stacked repetitions ``a**``, ``a+*``, ``a{2}{3}`` (legal in Rust; errors or
  possessive quantifiers in Python) → ``(?:a*)*`` etc.; ``{ 2 , 3 }`` → ``{2,3}``;
* POSIX classes ``[[:alpha:]]`` (ASCII, also negated) and Unicode general
  categories ``\\pL``, ``\\p{Lu}``, ``\\P{Letter}``, ``\\p{Any}``, ``\\p{ASCII}``
  → explicit code point ranges (from ``unicodedata``);

and rejects, with the offset in the pattern, what has no DFA or no simple
translation: word boundaries (``\\b \\B \\< \\>``; kbnf rejects them too),
look-around, back-references and octal, verbose ``(?x)``, CRLF ``(?R)``,
byte mode ``(?-u)``, nested classes and class set operations (``&&``, ``--``,
``~~``), Unicode scripts and binary properties (``\\p{Greek}``).

``\\d \\w \\s`` are written out as Rust's Unicode classes (``_perl_class``:
Python's ``\\w``/``\\s`` tables differ from Rust's UTS#18 ones);
``unicodedata``'s Unicode version may differ from the crate's.
Multi-line anchors in mid-pattern are rejected later (whole-match semantics).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..automata.charset import general_categories, general_category
from ._scan import MAX_CODE_POINT, complement_ranges, normalize_ranges

__all__ = ["RustRegexError", "rust_to_python"]


class RustRegexError(Exception):
    """An invalid or unsupported Rust regex; ``pos`` indexes the pattern."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


Ranges = tuple[tuple[int, int], ...]

_PY_META = frozenset("\\.^$*+?{}[]()|")
_CLASS_SPECIAL = frozenset("\\]^-[&~|")
_SIMPLE_ESCAPES = {"a": 0x07, "f": 0x0C, "t": 0x09, "n": 0x0A, "r": 0x0D, "v": 0x0B}
_COUNTED = re.compile(r"\{[ \t]*(\d+)[ \t]*(?:(,)[ \t]*(\d+)?[ \t]*)?\}")
_HEXDIGITS = frozenset("0123456789abcdefABCDEF")

_POSIX: dict[str, Ranges] = {
    "alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)),
    "alpha": ((0x41, 0x5A), (0x61, 0x7A)),
    "ascii": ((0x00, 0x7F),),
    "blank": ((0x09, 0x09), (0x20, 0x20)),
    "cntrl": ((0x00, 0x1F), (0x7F, 0x7F)),
    "digit": ((0x30, 0x39),),
    "graph": ((0x21, 0x7E),),
    "lower": ((0x61, 0x7A),),
    "print": ((0x20, 0x7E),),
    "punct": ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    "space": ((0x09, 0x0D), (0x20, 0x20)),
    "upper": ((0x41, 0x5A),),
    "word": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "xdigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}

_GC_LONG = {
    "letter": "L", "casedletter": "LC", "uppercaseletter": "Lu", "lowercaseletter": "Ll",
    "titlecaseletter": "Lt", "modifierletter": "Lm", "otherletter": "Lo",
    "mark": "M", "combiningmark": "M", "nonspacingmark": "Mn", "spacingmark": "Mc", "enclosingmark": "Me",
    "number": "N", "decimalnumber": "Nd", "digit": "Nd", "letternumber": "Nl", "othernumber": "No",
    "punctuation": "P", "connectorpunctuation": "Pc", "dashpunctuation": "Pd", "openpunctuation": "Ps",
    "closepunctuation": "Pe", "initialpunctuation": "Pi", "finalpunctuation": "Pf", "otherpunctuation": "Po",
    "symbol": "S", "mathsymbol": "Sm", "currencysymbol": "Sc", "modifiersymbol": "Sk", "othersymbol": "So",
    "separator": "Z", "spaceseparator": "Zs", "lineseparator": "Zl", "paragraphseparator": "Zp",
    "other": "C", "control": "Cc", "format": "Cf", "surrogate": "Cs", "privateuse": "Co", "unassigned": "Cn",
}  # fmt: skip


# Rust regex's Unicode Perl classes (not Python's): \w is Alphabetic ∪ Mark ∪
# Decimal_Number ∪ Connector_Punctuation ∪ Join_Control; \s is White_Space.
# Alphabetic = L ∪ Nl ∪ Other_Alphabetic; the Other_Alphabetic code points that
# are not marks are the enclosed/squared Latin letters listed here.
_OTHER_ALPHABETIC_SYMBOLS: Ranges = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))
_WHITE_SPACE: Ranges = ((0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                        (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))


@lru_cache(maxsize=4)
def _perl_class(letter: str) -> Ranges:
    r"""The code points of Rust regex's ``\d``, ``\s`` or ``\w`` (lower-case letter)."""
    if letter == "d":
        return general_category("Nd")
    if letter == "s":
        return _WHITE_SPACE
    parts = [general_category(c) for c in ("L", "Nl", "M", "Nd", "Pc")]
    return normalize_ranges([r for p in parts for r in p] + [(0x200C, 0x200D), *_OTHER_ALPHABETIC_SYMBOLS])


def _perl_class_body(c: str) -> str:
    if c in "dD":  # Python's \d is Rust's: Unicode Nd
        return "\\" + c
    ranges = _perl_class(c.lower())
    return _class_body(complement_ranges(ranges) if c.isupper() else ranges)


def _property(name: str) -> Ranges | None:
    """Ranges of a ``\\p{name}`` this translator supports (general categories), else None."""
    key = re.sub(r"[\s_\-]", "", name).lower()
    for prefix in ("generalcategory=", "gc="):
        if key.startswith(prefix):
            key = key[len(prefix) :]
    if key == "any":
        return ((0, MAX_CODE_POINT),)
    if key == "ascii":
        return ((0, 0x7F),)
    if key == "assigned":
        return complement_ranges(general_category("Cn"))
    code = _GC_LONG.get(key)
    if code is None:
        for short in ("L", "LC", "M", "N", "P", "S", "Z", "C"):
            if key == short.lower():
                code = short
        if code is None and len(key) == 2 and key[0] in "lmnpszc":
            code = key[0].upper() + key[1]
            if code not in general_categories():
                code = None
    return None if code is None else general_category(code)


def _escape_cp(cp: int) -> str:
    if cp < 0x100:
        return f"\\x{cp:02x}"
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _lit(cp: int) -> str:
    """A code point as a Python regex atom outside a class."""
    c = chr(cp)
    if c in _PY_META:
        return "\\" + c
    if 0x21 <= cp <= 0x7E:
        return c
    return _escape_cp(cp)


def _class_char(cp: int) -> str:
    """A code point inside a Python character class."""
    if 0x21 <= cp <= 0x7E and chr(cp) not in _CLASS_SPECIAL:
        return chr(cp)
    return _escape_cp(cp)


def _class_body(ranges: Ranges) -> str:
    return "".join(_class_char(a) if a == b else f"{_class_char(a)}-{_class_char(b)}" for a, b in ranges)


@dataclass
class _Frame:
    start: int  # index in the output list where this group's text begins
    pos: int  # offset of its '(' in the pattern
    wraps: list[str] = field(default_factory=list)  # '(?i:' wrappers open in the current branch


class _Translator:
    def __init__(self, src: str) -> None:
        self.src = src
        self.out: list[str] = []
        self.last_atom: int | None = None  # output index where the last atom starts
        self.last_quant: str | None = None  # None, "greedy" or "lazy"

    def fail(self, message: str, pos: int) -> RustRegexError:
        return RustRegexError(message, pos)

    # ----------------------------------------------------------- main loop
    def run(self) -> str:
        s, out = self.src, self.out
        stack = [_Frame(0, 0)]
        i, n = 0, len(s)
        while i < n:
            c = s[i]
            if c == "\\":
                text, i = self.escape(i)
                self.atom(text)
            elif c == "[":
                text, i = self.char_class(i)
                self.atom(text)
            elif c == "(":
                i = self.open_group(i, stack)
            elif c == ")":
                if len(stack) == 1:
                    raise self.fail("unmatched ')'", i)
                frame = stack.pop()
                out.append(")" * len(frame.wraps) + ")")
                self.last_atom, self.last_quant = frame.start, None
                i += 1
            elif c == "|":
                frame = stack[-1]
                out.append(")" * len(frame.wraps) + "|" + "".join(frame.wraps))
                self.last_atom = self.last_quant = None
                i += 1
            elif c in "*+?":
                self.quantifier(c, i)
                i += 1
            elif c == "{":
                m = _COUNTED.match(s, i)
                if m is None:
                    raise self.fail("invalid counted repetition (expected {m}, {m,} or {m,n})", i)
                lo, comma, hi = int(m.group(1)), m.group(2), m.group(3)
                if hi is not None and int(hi) < lo:
                    raise self.fail(f"repetition bounds {{{lo},{hi}}}: the maximum is below the minimum", i)
                text = f"{{{lo}}}" if comma is None else f"{{{lo},{'' if hi is None else int(hi)}}}"
                self.quantifier(text, i)
                i = m.end()
            elif c == ".":
                self.atom(".")
                i += 1
            elif c in "^$":
                self.atom(c)
                i += 1
            else:
                self.atom(_lit(ord(c)))
                i += 1
        if len(stack) > 1:
            raise self.fail("unclosed group '('", stack[-1].pos)
        out.append(")" * len(stack[0].wraps))
        return "".join(out)

    def atom(self, text: str) -> None:
        self.last_atom = len(self.out)
        self.last_quant = None
        self.out.append(text)

    def quantifier(self, q: str, pos: int) -> None:
        if self.last_atom is None:
            raise self.fail(f"repetition operator {q!r} has nothing to repeat", pos)
        if self.last_quant is not None:
            if q == "?" and self.last_quant == "greedy":
                self.out.append("?")  # lazy: same language
                self.last_quant = "lazy"
                return
            self.out.insert(self.last_atom, "(?:")
            self.out.append(")")
        self.out.append(q)
        self.last_quant = "greedy"

    # ------------------------------------------------------------- groups
    def open_group(self, i: int, stack: list[_Frame]) -> int:
        s = self.src
        if not s.startswith("(?", i):
            stack.append(_Frame(len(self.out), i))
            self.out.append("(?:")
            self.last_atom = self.last_quant = None
            return i + 1
        j = i + 2
        if s.startswith("<=", j) or s.startswith("<!", j) or s[j : j + 1] in ("=", "!"):
            raise self.fail("look-around assertions are not supported", i)
        if s.startswith("P<", j) or s.startswith("<", j):
            k = s.find(">", j)
            if k < 0 or k == j + (2 if s[j] == "P" else 1):
                raise self.fail("bad group name", i)
            stack.append(_Frame(len(self.out), i))
            self.out.append("(?:")
            self.last_atom = self.last_quant = None
            return k + 1
        k = j
        while k < len(s) and (s[k].isalpha() or s[k] == "-"):
            k += 1
        end = s[k : k + 1]
        if end not in (":", ")"):
            raise self.fail("unknown group syntax after '(?'", i)
        flags = "" if (end == ":" and k == j) else self.flags(s[j:k], j)
        if end == ":":
            stack.append(_Frame(len(self.out), i))
            self.out.append(f"(?{flags}:" if flags else "(?:")
            self.last_atom = self.last_quant = None
        else:
            if flags:
                opener = f"(?{flags}:"
                self.out.append(opener)
                stack[-1].wraps.append(opener)
            self.last_atom = self.last_quant = None
        return k + 1

    def flags(self, spec: str, pos: int) -> str:
        """Python flag text for a Rust flag spec such as ``i-s`` (``""`` if nothing to keep)."""
        if spec in ("", "-") or spec.count("-") > 1 or spec.endswith("-"):
            raise self.fail(f"bad flag group '(?{spec})'", pos - 2)
        on, off = (spec.split("-") + [""])[:2]
        for neg, letters in ((False, on), (True, off)):
            for f in letters:
                if f == "x":
                    raise self.fail("verbose mode (?x) is not supported", pos - 2)
                if f == "R":
                    raise self.fail("CRLF mode (?R) is not supported", pos - 2)
                if f == "u" and neg:
                    raise self.fail("(?-u) (matching bytes instead of UTF-8) is not supported", pos - 2)
                if f not in "imsUu":
                    raise self.fail(f"unknown regex flag {f!r}", pos - 2)
        keep_on = "".join(f for f in on if f in "ims")
        keep_off = "".join(f for f in off if f in "ims")
        return keep_on + ("-" + keep_off if keep_off else "")

    # ------------------------------------------------------------ escapes
    def escape(self, i: int) -> tuple[str, int]:
        """An escape outside a class: ``(python text, next offset)``."""
        c = self.src[i + 1 : i + 2]
        if c == "":
            raise self.fail("trailing backslash", i)
        if c in "dDsSwW":
            return "[" + _perl_class_body(c) + "]", i + 2
        if c in "pP":
            ranges, negate, j = self.unicode_property(i)
            if negate:  # a negated class stays small (cheap to build)
                return ("[^" + _class_body(ranges) + "]" if ranges else "(?s:.)"), j
            if not ranges:
                raise self.fail("this Unicode class matches nothing", i)
            return "[" + _class_body(ranges) + "]", j
        if c == "A":
            return "\\A", i + 2
        if c == "z":
            return "\\Z", i + 2
        if c in "bB<>":
            raise self.fail(f"word boundary '\\{c}' is not supported", i)
        if c.isdigit():
            raise self.fail("back-references and octal escapes are not supported", i)
        cp, j = self.char_escape(i)
        return _lit(cp), j

    def char_escape(self, i: int) -> tuple[int, int]:
        """An escape that stands for one code point: ``(code point, next offset)``."""
        s = self.src
        c = s[i + 1 : i + 2]
        if c in _SIMPLE_ESCAPES and c:
            return _SIMPLE_ESCAPES[c], i + 2
        if c and c in "xuU":
            if s.startswith("{", i + 2):
                k = s.find("}", i + 3)
                digits = s[i + 3 : k] if k >= 0 else ""
                end = k + 1
            else:
                width = {"x": 2, "u": 4, "U": 8}[c]
                digits = s[i + 2 : i + 2 + width]
                end = i + 2 + width
                if len(digits) != width:
                    digits = ""
            if not digits or len(digits) > 8 or not all(ch in _HEXDIGITS for ch in digits):
                raise self.fail(f"invalid escape '\\{c}': expected hex digits", i)
            cp = int(digits, 16)
            if cp > MAX_CODE_POINT or 0xD800 <= cp <= 0xDFFF:
                raise self.fail(f"escape '\\{c}' is not a Unicode scalar value", i)
            return cp, end
        if c and c.isascii() and not c.isalnum() and c not in "<>":
            return ord(c), i + 2  # escaped punctuation or space: the character itself
        raise self.fail(f"unsupported escape '\\{c}'", i)

    def unicode_property(self, i: int) -> tuple[Ranges, bool, int]:
        """``\\p{..}`` / ``\\P{..}`` at ``i``: (ranges of the property, negated?, next offset)."""
        s = self.src
        negate = s[i + 1] == "P"
        if s.startswith("{", i + 2):
            k = s.find("}", i + 3)
            if k < 0:
                raise self.fail("unclosed '\\p{'", i)
            name, end = s[i + 3 : k], k + 1
            if name.startswith("^"):
                negate, name = not negate, name[1:]
        else:
            name, end = s[i + 2 : i + 3], i + 3
            if not name.isalpha():
                raise self.fail("expected a Unicode class name after '\\p'", i)
        ranges = _property(name)
        if ranges is None:
            raise self.fail(
                f"Unicode property '{name}' is not supported (only general categories such as L, Lu, Nd)", i
            )
        return ranges, negate, end

    # ------------------------------------------------------------ classes
    def char_class(self, i: int) -> tuple[str, int]:
        s, n = self.src, len(self.src)
        j = i + 1
        negated = s.startswith("^", j)
        if negated:
            j += 1
        parts: list[str] = []
        # a class made of one negated item ([[:^alpha:]], [\PL]) is written as a
        # negated class of the item: small, and cheap to build
        single_negated: Ranges | None = None
        first = True
        while True:
            if j >= n:
                raise self.fail("unclosed character class '['", i)
            c = s[j]
            if c == "]" and not first:
                j += 1
                break
            first = False
            if c == "[":
                start = j
                ranges, negate, j = self.posix_class(j)
                if negate and start == i + 1 + negated and s.startswith("]", j):
                    single_negated = ranges
                parts.append(_class_body(complement_ranges(ranges) if negate else ranges))
                continue
            if s.startswith("&&", j) or s.startswith("~~", j) or s.startswith("--", j):
                raise self.fail("character class set operations (&&, --, ~~) are not supported", j)
            if c == "\\":
                e = s[j + 1 : j + 2]
                if e and e in "dDsSwW":
                    parts.append(_perl_class_body(e))
                    j += 2
                    continue
                if e and e in "pP":
                    start = j
                    ranges, negate, j = self.unicode_property(j)
                    if negate and start == i + 1 + negated and s.startswith("]", j):
                        single_negated = ranges
                    parts.append(_class_body(complement_ranges(ranges) if negate else ranges))
                    continue
                if e and e in "bB<>":
                    raise self.fail(f"'\\{e}' is not allowed in a character class", j)
                lo_pos = j
                lo, j = self.char_escape(j)
            else:
                lo_pos, lo = j, ord(c)
                j += 1
            if s.startswith("-", j) and s[j + 1 : j + 2] not in ("]", ""):
                if s.startswith("--", j):
                    raise self.fail("character class set operations (&&, --, ~~) are not supported", j)
                k = j + 1
                if s[k] == "\\":
                    if s[k + 1 : k + 2] in ("d", "D", "s", "S", "w", "W", "p", "P"):
                        raise self.fail("a class range must end with a single character", k)
                    hi, j = self.char_escape(k)
                elif s[k] == "[":
                    raise self.fail("a class range must end with a single character", k)
                else:
                    hi, j = ord(s[k]), k + 1
                if hi < lo:
                    raise self.fail("invalid class range: the end is below the start", lo_pos)
                parts.append(f"{_class_char(lo)}-{_class_char(hi)}")
            else:
                parts.append(_class_char(lo))
        if single_negated is not None:
            # [^X] where X is the item's own (positive) set; a negated class flips back
            body = _class_body(single_negated)
            if not body:
                return ("[^\\x00-\\U0010ffff]" if negated else "(?s:.)"), j
            return "[" + ("" if negated else "^") + body + "]", j
        body = "".join(parts)
        if not body:
            raise self.fail("this character class matches nothing", i)
        return "[" + ("^" if negated else "") + body + "]", j

    def posix_class(self, j: int) -> tuple[Ranges, bool, int]:
        """``[:name:]`` / ``[:^name:]`` at ``j``: (ranges of the class, negated?, next offset)."""
        s = self.src
        if s.startswith("[:", j):
            k = s.find(":]", j + 2)
            if k >= 0:
                name = s[j + 2 : k]
                negate = name.startswith("^")
                ranges = _POSIX.get(name[1:] if negate else name)
                if ranges is not None:
                    return ranges, negate, k + 2
                raise self.fail(f"unknown POSIX class '[:{name}:]'", j)
        raise self.fail("nested character classes are not supported (escape '[' as '\\[')", j)


def rust_to_python(pattern: str) -> str:
    """Rewrite a Rust-syntax regex as an equivalent Python ``re`` pattern.

    Raises ``RustRegexError`` (with the offset into ``pattern``) for invalid or
    unsupported syntax.
    """
    return _Translator(pattern).run()
