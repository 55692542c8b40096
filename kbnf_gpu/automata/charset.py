"""Sets of code points as sorted, disjoint, inclusive ``(lo, hi)`` range tuples.

Also the code point sets of Python ``re``'s ``\\d \\w \\s`` categories and of
case-insensitive matching, both taken from the running ``re`` engine itself so
that they agree with ``re.fullmatch`` exactly.
"""
from __future__ import annotations

import itertools
import operator
import re
import unicodedata
from functools import lru_cache
from typing import Iterable

import numpy as np

from ..caches import memoized
from .utf8 import MAX_CODE_POINT, SURROGATE_HI, SURROGATE_LO

Ranges = tuple[tuple[int, int], ...]

EMPTY: Ranges = ()
ALL: Ranges = ((0, MAX_CODE_POINT),)


def normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort and merge overlapping or adjacent ranges."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def union(*sets: Ranges) -> Ranges:
    return normalize(r for s in sets for r in s)


def complement(ranges: Ranges) -> Ranges:
    """All code points 0..0x10FFFF not in ``ranges`` (which must be normalized)."""
    out = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= MAX_CODE_POINT:
        out.append((nxt, MAX_CODE_POINT))
    return tuple(out)


def difference(a: Ranges, b: Ranges) -> Ranges:
    return intersection(a, complement(b))


def intersection(a: Ranges, b: Ranges) -> Ranges:
    out = []
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


def from_code_points(cps: Iterable[int]) -> Ranges:
    return normalize((c, c) for c in cps)


# ------------------------------------------------ sets taken from ``re``


@lru_cache(maxsize=1)
def _all_chars() -> str:
    """Every code point except surrogates, in order, as one string."""
    cps = np.concatenate(
        [np.arange(SURROGATE_LO, dtype="<u4"), np.arange(SURROGATE_HI + 1, MAX_CODE_POINT + 1, dtype="<u4")]
    )
    return cps.tobytes().decode("utf-32-le")


def _runs_to_ranges(text: str, matches: Iterable[re.Match]) -> Ranges:
    return normalize((ord(text[m.start()]), ord(text[m.end() - 1])) for m in matches)


@lru_cache(maxsize=64)
def category(escape: str, ascii_only: bool) -> Ranges:
    """Code points matched by ``\\d``-style ``escape`` (e.g. ``"\\\\w"``) in Python ``re``."""
    flags = re.ASCII if ascii_only else 0
    text = _all_chars()
    return _runs_to_ranges(text, re.finditer(escape + "+", text, flags))


def _involved_code_points() -> list[int]:
    """Code points whose case-insensitive matching may differ from exact matching.

    A code point outside this set is uncased and no cased code point maps to
    it, so ``re`` matches it under IGNORECASE exactly when it matches it without.
    """
    cps: set[int] = set()
    for c in map(chr, _cased_code_points()):
        cps.add(ord(c))
        for v in (c.lower(), c.upper(), c.casefold(), c.title()):
            if len(v) == 1:
                cps.add(ord(v))
    try:
        from re._casefix import _EXTRA_CASES  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11 keeps it in sre_compile
        _EXTRA_CASES = {}
    for k, vs in _EXTRA_CASES.items():
        cps.add(k)
        cps.update(vs)
    return sorted(c for c in cps if not SURROGATE_LO <= c <= SURROGATE_HI)


def _cased_code_points() -> list[int]:
    """Code points ``re`` considers cased (lower or upper case differs)."""
    try:
        import _sre

        return list(filter(_sre.unicode_iscased, range(MAX_CODE_POINT + 1)))
    except (ImportError, AttributeError):
        return [c for c in range(MAX_CODE_POINT + 1) if chr(c).lower() != chr(c) or chr(c).upper() != chr(c)]


@lru_cache(maxsize=1)
def _involved() -> tuple[str, Ranges]:
    """The case-involved code points, as one string and as ranges (computed once)."""
    cps = _involved_code_points()
    return "".join(map(chr, cps)), from_code_points(cps)


@memoized(1 << 17, lambda exact, item_source, ascii_only: len(exact) + len(item_source) + 16)
def ignorecase(exact: Ranges, item_source: str, ascii_only: bool) -> Ranges:
    """The set ``re`` matches for a one-character item under IGNORECASE.

    ``exact`` is what the item matches without IGNORECASE; ``item_source`` is a
    regex source for the item alone (a literal, ``[^x]`` or a class), which is
    run through ``re`` on every case-involved code point.
    """
    text, involved = _involved()
    flags = re.IGNORECASE | (re.ASCII if ascii_only else 0)
    pattern = re.compile(item_source, flags)
    matched = from_code_points(ord(text[m.start()]) for m in pattern.finditer(text))
    return union(difference(exact, involved), matched)


@lru_cache(maxsize=1)
def general_categories() -> dict[str, Ranges]:
    """Every two-letter Unicode General_Category (``Lu``, ``Nd``, ``Cn``, ...) as ranges, from one pass over
    all code points with Python's ``unicodedata`` (the interpreter's Unicode version). The pass runs in C
    iterators (``map``, ``compress``): a run's boundaries are where a code point's category differs from the
    one before it."""
    names = list(map(unicodedata.category, map(chr, range(MAX_CODE_POINT + 1))))
    starts = [0, *itertools.compress(range(1, MAX_CODE_POINT + 1),
                                     map(operator.ne, names, itertools.islice(names, 1, None)))]
    runs: dict[str, list[tuple[int, int]]] = {}
    for start, end in zip(starts, [*starts[1:], MAX_CODE_POINT + 1]):
        runs.setdefault(names[start], []).append((start, end - 1))
    return {name: tuple(r) for name, r in runs.items()}


@lru_cache(maxsize=64)
def general_category(code: str) -> Ranges:
    """The code points of a General_Category: two letters (``Lu``), one letter for its group (``L``: ``Lu``,
    ``Ll``, ...) or ``LC`` (``Lu``, ``Ll``, ``Lt``); empty for a code no code point has."""
    table = general_categories()
    if code == "LC":
        members = ["Lu", "Ll", "Lt"]
    else:
        members = [name for name in table if name.startswith(code)] if len(code) == 1 else [code]
    return union(*(table.get(name, ()) for name in members))
