"""Sets of Unicode scalar values as sorted, disjoint, inclusive ranges (``automata.charset`` minus surrogates).

Surrogates (U+D800..U+DFFF) are never members: a JSON string decodes to
scalar values only (lone ``\\uD800`` escapes are not generated).
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import lru_cache
from typing import Iterable

import numpy as np

from ...automata import charset as _base
from ...caches import memoized

Ranges = tuple[tuple[int, int], ...]

MAX_CP = 0x10FFFF
SURROGATES: Ranges = ((0xD800, 0xDFFF),)


def norm(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort, merge and drop surrogates."""
    if type(ranges) is tuple:  # a class's ranges, normalized again wherever an automaton is built from it
        return _norm_tuple(ranges)
    return _without_surrogates(_base.normalize(ranges))


# weights in ranges, the key's and the result's (2^17: ~15 MB at most; ``\p{L}`` alone is 650 ranges)
@memoized(1 << 17, lambda ranges: 2 * len(ranges) + 1)
def _norm_tuple(ranges: Ranges) -> Ranges:
    return _without_surrogates(_base.normalize(ranges))


def _without_surrogates(s: Ranges) -> Ranges:
    """Normalized ``s`` minus ``SURROGATES``: only the ranges that overlap them are cut (found by bisection),
    where a difference walks every range (``\\p{L}``'s 650 of them, at each class built from it)."""
    (lo, hi), = SURROGATES
    first = bisect_left(s, lo, key=_end)  # the first range that ends at or past them
    after = bisect_right(s, hi, key=_start)  # the first range that starts past them
    if first >= after:
        return s
    kept = []
    for a, b in s[first:after]:
        if a < lo:
            kept.append((a, lo - 1))
        if b > hi:
            kept.append((hi + 1, b))
    return s[:first] + tuple(kept) + s[after:]


def _start(r: tuple[int, int]) -> int:
    return r[0]


def _end(r: tuple[int, int]) -> int:
    return r[1]


ANY: Ranges = norm([(0, MAX_CP)])
EMPTY: Ranges = ()


def union(*sets: Ranges) -> Ranges:
    if all(type(s) is tuple for s in sets):  # a pattern's class items (``[\p{L}\p{N}_.:/=+\-@]``) recur
        return _union_tuples(sets)
    return norm(r for s in sets for r in s)


@memoized(1 << 17, lambda sets: 2 * sum(map(len, sets)) + 1)
def _union_tuples(sets: tuple[Ranges, ...]) -> Ranges:
    return norm(r for s in sets for r in s)


def complement(s: Ranges) -> Ranges:
    return norm(_base.complement(norm(s)))


def intersect(a: Ranges, b: Ranges) -> Ranges:
    return _base.intersection(norm(a), norm(b))


def subtract(a: Ranges, b: Ranges) -> Ranges:
    return intersect(a, complement(b))


def single(cp: int) -> Ranges:
    return ((cp, cp),)


def of_chars(chars: str) -> Ranges:
    return norm((ord(c), ord(c)) for c in chars)


def contains(s: Ranges, cp: int) -> bool:
    lo, hi = 0, len(s)
    while lo < hi:
        mid = (lo + hi) // 2
        if s[mid][1] < cp:
            lo = mid + 1
        elif s[mid][0] > cp:
            hi = mid
        else:
            return True
    return False


def _matching(regex: str) -> Ranges:
    """The code points Python's ``re`` matches with ``regex`` (one code point), found by one scan in C over all of
    them (a predicate per code point in Python took a third of a second)."""
    code_points = np.arange(MAX_CP + 1, dtype="<u4")
    code_points[0xD800:0xE000] = 0  # not encodable; U+0000 is matched by none of these
    every = code_points.tobytes().decode("utf-32-le")  # at index i, the code point i
    return norm((m.start(), m.end() - 1) for m in re.finditer(f"(?:{regex})+", every))


@lru_cache(maxsize=None)
def unicode_class(name: str) -> Ranges:
    """Python ``re`` (str pattern) semantics of ``\\d``, ``\\w``, ``\\s``."""
    if name not in ("d", "w", "s"):
        raise KeyError(name)
    return _matching("\\" + name)


# ECMA-262's General_Category values (``\\p{L}``, ``\\p{Letter}``, ``\\p{gc=Lu}``): long name -> short name;
# a one-letter name is the union of its two-letter categories (``LC``: Lu, Ll, Lt)
CATEGORY_ALIASES = {
    "Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
    "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Combining_Mark": "M",
    "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd",
    "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P", "punct": "P",
    "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps", "Close_Punctuation": "Pe",
    "Initial_Punctuation": "Pi", "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S",
    "Math_Symbol": "Sm", "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z",
    "Space_Separator": "Zs", "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Other": "C", "Control": "Cc",
    "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co", "Unassigned": "Cn",
}
CATEGORIES = frozenset(CATEGORY_ALIASES.values()) | {
    "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po",
    "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"}


@lru_cache(maxsize=None)
def unicode_category(name: str) -> Ranges:
    """The code points of General_Category ``name`` (a short or long name of ``CATEGORIES``)."""
    short = CATEGORY_ALIASES.get(name, name)
    if short not in CATEGORIES:
        raise KeyError(name)
    return norm(_base.general_category(short))
