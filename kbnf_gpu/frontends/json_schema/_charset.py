"""Sets of Unicode scalar values as sorted, disjoint, inclusive ranges (``automata.charset`` minus surrogates).

Surrogates (U+D800..U+DFFF) are never members: a JSON string decodes to
scalar values only (lone ``\\uD800`` escapes are not generated).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from ...automata import charset as _base

Ranges = tuple[tuple[int, int], ...]

MAX_CP = 0x10FFFF
SURROGATES: Ranges = ((0xD800, 0xDFFF),)


def norm(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort, merge and drop surrogates."""
    return _base.difference(_base.normalize(ranges), SURROGATES)


ANY: Ranges = norm([(0, MAX_CP)])
EMPTY: Ranges = ()


def union(*sets: Ranges) -> Ranges:
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


def _from_predicate(pred) -> Ranges:  # type: ignore[no-untyped-def]
    out: list[tuple[int, int]] = []
    start = -1
    for cp in range(MAX_CP + 2):
        ok = cp <= MAX_CP and not (0xD800 <= cp <= 0xDFFF) and pred(chr(cp))
        if ok and start < 0:
            start = cp
        elif not ok and start >= 0:
            out.append((start, cp - 1))
            start = -1
    return norm(out)


@lru_cache(maxsize=None)
def unicode_class(name: str) -> Ranges:
    """Python ``re`` (str pattern) semantics of ``\\d``, ``\\w``, ``\\s``."""
    if name == "d":
        return _from_predicate(str.isdecimal)
    if name == "w":
        return _from_predicate(lambda c: c.isalnum() or c == "_")
    if name == "s":
        return _from_predicate(str.isspace)
    raise KeyError(name)
