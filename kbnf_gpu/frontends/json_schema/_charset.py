"""Sets of Unicode code points as sorted, disjoint, inclusive ranges.

Surrogates (U+D800..U+DFFF) are never members: a JSON string decodes to
scalar values only (lone ``\\uD800`` escapes are not generated).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable

Ranges = tuple[tuple[int, int], ...]

MAX_CP = 0x10FFFF
SURROGATES: Ranges = ((0xD800, 0xDFFF),)


def norm(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort, merge and drop surrogates."""
    out: list[list[int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    res: list[tuple[int, int]] = []
    for lo, hi in out:
        if lo <= 0xDFFF and hi >= 0xD800:
            if lo < 0xD800:
                res.append((lo, 0xD7FF))
            if hi > 0xDFFF:
                res.append((0xE000, hi))
        else:
            res.append((lo, hi))
    return tuple(res)


ANY: Ranges = norm([(0, MAX_CP)])
EMPTY: Ranges = ()


def union(*sets: Ranges) -> Ranges:
    return norm(r for s in sets for r in s)


def complement(s: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    prev = 0
    for lo, hi in norm(s):
        if lo > prev:
            out.append((prev, lo - 1))
        prev = hi + 1
    if prev <= MAX_CP:
        out.append((prev, MAX_CP))
    return norm(out)


def intersect(a: Ranges, b: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


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
