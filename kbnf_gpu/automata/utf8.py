"""Code point ranges -> UTF-8 byte-range sequences.

A sequence is a tuple of inclusive byte ranges, one per encoded byte; the
strings it matches are exactly the UTF-8 encodings of the code points of
one sub-range. Surrogates (D800-DFFF) have no UTF-8 encoding and are dropped.
"""
from __future__ import annotations

from ..caches import memoized

MAX_CODE_POINT = 0x10FFFF
SURROGATE_LO, SURROGATE_HI = 0xD800, 0xDFFF

ByteSeq = tuple[tuple[int, int], ...]

# the largest code point encoded with 1, 2, 3 bytes
_LENGTH_LIMITS = (0x7F, 0x7FF, 0xFFFF)


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8")


def _drop_surrogates(ranges: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    out = []
    for lo, hi in ranges:
        lo, hi = max(lo, 0), min(hi, MAX_CODE_POINT)
        if lo > hi:
            continue
        if hi < SURROGATE_LO or lo > SURROGATE_HI:
            out.append((lo, hi))
            continue
        if lo < SURROGATE_LO:
            out.append((lo, SURROGATE_LO - 1))
        if hi > SURROGATE_HI:
            out.append((SURROGATE_HI + 1, hi))
    return out


@memoized(1 << 17, lambda ranges: len(ranges) + 16)
def utf8_sequences(ranges: tuple[tuple[int, int], ...]) -> tuple[ByteSeq, ...]:
    """UTF-8 byte-range sequences for sorted, disjoint code point ``ranges``.

    The result is ordered by code point; its sequences match disjoint sets of
    byte strings whose union is the UTF-8 encoding of ``ranges``.
    """
    out: list[ByteSeq] = []
    stack = list(reversed(_drop_surrogates(ranges)))
    while stack:
        lo, hi = stack.pop()
        split = False
        for limit in _LENGTH_LIMITS:
            if lo <= limit < hi:
                stack.append((limit + 1, hi))
                stack.append((lo, limit))
                split = True
                break
        if split:
            continue
        if hi <= 0x7F:
            out.append(((lo, hi),))
            continue
        n = len(_encode(lo))
        for i in range(1, n):
            mask = (1 << (6 * i)) - 1
            if lo & ~mask != hi & ~mask:
                if lo & mask:
                    stack.append(((lo | mask) + 1, hi))
                    stack.append((lo, lo | mask))
                    split = True
                    break
                if hi & mask != mask:
                    stack.append((hi & ~mask, hi))
                    stack.append((lo, (hi & ~mask) - 1))
                    split = True
                    break
        if split:
            continue
        out.append(tuple(zip(_encode(lo), _encode(hi))))
    return tuple(out)
