"""Exact regular languages for JSON numbers in a range.

Everything here is ASCII, so code-point ``CharClass`` ranges equal bytes.

* ``integer_range(lo, hi)``: the canonical integers ``n`` with ``lo <= n <= hi``
  (either bound may be ``None``): no leading zeros, no ``-0``, no fraction,
  no exponent.
* ``decimal_range(lo, lo_excl, hi, hi_excl)``: JSON numbers in the range.
  Plain decimal notation (``12``, ``-0.50``) is exact, and so is every
  spelling with an exponent from -10 to 10 (``1e-9``, ``1E+2``, ``0.5e1``,
  ``5E-001``: for each exponent, the mantissas are a plain range), and every
  spelling of zero (``-0``, ``-0.0``, ``0e5``). Beyond that window an
  exponent is admitted only where it provably stays inside the bounds (see
  ``magnitude_range``), e.g. everything for ``minimum: 0``: not every
  spelling with a large exponent can be matched by a regular language
  (``1`` followed by k zeros then ``e-k`` is 1 for every k). Comparison is exact in decimal; a validator
  that parses into binary floats may still round a number with more than ~15
  significant digits onto an exclusive bound.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Optional

from ...errors import GrammarError
from ...ir import CharClass, RegExpr, Repeat
from ._rx import EPS, alt, lit, seq

MAX_DIGITS = 400



def digits(lo: int, hi: int) -> CharClass:
    return CharClass(((0x30 + lo, 0x30 + hi),))


DIGIT = digits(0, 9)
NZ_DIGIT = digits(1, 9)


def _run(n: int) -> Optional[RegExpr]:
    return EPS if n == 0 else (DIGIT if n == 1 else Repeat(DIGIT, n, n))


def _fixed(lo: str, hi: str) -> Optional[RegExpr]:
    """Digit strings of len(lo) == len(hi) between ``lo`` and ``hi`` (inclusive)."""
    n = len(lo)
    if n == 0:
        return EPS
    if lo[0] == hi[0]:
        return seq(lit(lo[0]), _fixed(lo[1:], hi[1:]))
    a, b = int(lo[0]), int(hi[0])
    opts: list[Optional[RegExpr]] = []
    if lo[1:] != "0" * (n - 1):
        opts.append(seq(lit(lo[0]), _fixed(lo[1:], "9" * (n - 1))))
        a += 1
    last = None
    if hi[1:] != "9" * (n - 1):
        last = seq(lit(hi[0]), _fixed("0" * (n - 1), hi[1:]))
        b -= 1
    if a <= b:
        opts.append(seq(digits(a, b), _run(n - 1)))
    opts.append(last)
    return alt(*opts)


def natural_range(a: int, b: Optional[int]) -> Optional[RegExpr]:
    """Canonical naturals (``0`` or no leading zero) in ``[a, b]``."""
    if a < 0:
        a = 0
    if b is not None and a > b:
        return None
    sa = str(a)
    la = len(sa)
    if la > MAX_DIGITS or (b is not None and len(str(b)) > MAX_DIGITS):
        raise GrammarError(f"integer bound has more than {MAX_DIGITS} digits")
    if b is None:
        return alt(_fixed(sa, "9" * la), seq(NZ_DIGIT, Repeat(DIGIT, la, None)))
    sb = str(b)
    lb = len(sb)
    if la == lb:
        return _fixed(sa, sb)
    opts = [_fixed(sa, "9" * la)]
    if lb - la >= 2:
        opts.append(seq(NZ_DIGIT, Repeat(DIGIT, la, lb - 2)))
    opts.append(_fixed("1" + "0" * (lb - 1), sb))
    return alt(*opts)


def integer_range(lo: Optional[int], hi: Optional[int]) -> Optional[RegExpr]:
    """Canonical JSON integers in ``[lo, hi]``; ``None`` when empty."""
    if lo is not None and hi is not None and lo > hi:
        return None
    pos = None
    if hi is None or hi >= 0:
        pos = natural_range(max(lo, 0) if lo is not None else 0, hi)
    neg = None
    if lo is None or lo < 0:
        mag_lo = max(1, -hi) if hi is not None else 1
        neg = seq(lit("-"), natural_range(mag_lo, -lo if lo is not None else None))
    return alt(neg, pos)


# ----------------------------------------------------------- fractions
# A fraction constraint is a pair (eps, rest): eps says "no fraction part"
# is allowed (value 0), rest is the language of non-empty digit strings f
# with 0.f in the range (None: none).

Frac = tuple[bool, Optional[RegExpr]]
ANY_DIGITS = Repeat(DIGIT, 0, None)
NONZERO_DIGITS = seq(ANY_DIGITS, NZ_DIGIT, ANY_DIGITS)


def _opt(eps: bool, rest: Optional[RegExpr]) -> Optional[RegExpr]:
    """The language {""} (if eps) | rest, as a regex."""
    if rest is None:
        return EPS if eps else None
    return Repeat(rest, 0, 1) if eps else rest


def _prefixed(d: str, inner: Frac) -> Optional[RegExpr]:
    return seq(lit(d), _opt(*inner))


def _ge(x: str, incl: bool) -> Frac:
    """0.f >= 0.x (or >)."""
    if not x:
        return (True, Repeat(DIGIT, 1, None)) if incl else (False, NONZERO_DIGITS)
    d = int(x[0])
    higher = seq(digits(d + 1, 9), ANY_DIGITS) if d < 9 else None
    return False, alt(higher, _prefixed(x[0], _ge(x[1:], incl)))


def _le(y: str, incl: bool) -> Frac:
    """0.f <= 0.y (or <)."""
    if not y:
        return (True, Repeat(lit("0"), 1, None)) if incl else (False, None)
    d = int(y[0])
    lower = seq(digits(0, d - 1), ANY_DIGITS) if d > 0 else None
    return True, alt(lower, _prefixed(y[0], _le(y[1:], incl)))


def _between(x: str, xi: bool, y: str, yi: bool) -> Frac:
    """0.x <= 0.f <= 0.y with the given inclusivity (x <= y)."""
    if not x:
        if xi:
            return _le(y, yi)
        if not y:
            return False, None
        d = int(y[0])
        opts: list[Optional[RegExpr]] = [seq(lit("0"), NONZERO_DIGITS) if d > 0 else None]
        if d > 1:
            opts.append(seq(digits(1, d - 1), ANY_DIGITS))
        if d > 0:
            opts.append(_prefixed(y[0], _le(y[1:], yi)))
        else:
            opts.append(_prefixed("0", _between("", False, y[1:], yi)))
        return False, alt(*opts)
    if x[0] == y[0]:
        return False, _prefixed(x[0], _between(x[1:], xi, y[1:], yi))
    a, b = int(x[0]), int(y[0])
    mid = seq(digits(a + 1, b - 1), ANY_DIGITS) if b - a >= 2 else None
    return False, alt(_prefixed(x[0], _ge(x[1:], xi)), mid, _prefixed(y[0], _le(y[1:], yi)))


def _split(v: Decimal) -> tuple[int, str]:
    """Integer part and normalized fraction digits of a non-negative decimal."""
    ip = int(v)
    frac = v - ip
    if frac == 0:
        return ip, ""
    s = format(frac, "f")
    return ip, s.split(".")[1].rstrip("0")


def _with_int(ip: Optional[RegExpr], frac: Frac) -> Optional[RegExpr]:
    eps, rest = frac
    return alt(ip if eps else None, seq(ip, lit("."), rest) if rest is not None else None)


_E = CharClass(((0x45, 0x45), (0x65, 0x65)))
EXPONENT = seq(_E, Repeat(CharClass(((0x2B, 0x2B), (0x2D, 0x2D))), 0, 1), Repeat(DIGIT, 1, None))
POS_EXPONENT = seq(_E, Repeat(lit("+"), 0, 1), Repeat(DIGIT, 1, None))
NONPOS_EXPONENT = seq(_E, alt(seq(lit("-"), Repeat(DIGIT, 1, None)), seq(Repeat(lit("+"), 0, 1), Repeat(lit("0"), 1, None))))
NZ_MANTISSA = seq(NZ_DIGIT, Repeat(DIGIT, 0, None), Repeat(seq(lit("."), Repeat(DIGIT, 1, None)), 0, 1))


def _plain_magnitude(a: Decimal, a_excl: bool, b: Optional[Decimal], b_excl: bool) -> Optional[RegExpr]:
    """Non-negative numbers without sign or exponent, a <= v <= b (exclusive per flags)."""
    if b is not None and (a > b or (a == b and (a_excl or b_excl))):
        return None
    ai, af = _split(a)
    any_frac: Frac = (True, Repeat(DIGIT, 1, None))
    if b is None:
        return alt(
            _with_int(lit(str(ai)), _ge(af, not a_excl)),
            _with_int(natural_range(ai + 1, None), any_frac),
        )
    bi, bf = _split(b)
    if ai == bi:
        return _with_int(lit(str(ai)), _between(af, not a_excl, bf, not b_excl))
    mid = natural_range(ai + 1, bi - 1) if bi - ai >= 2 else None
    return alt(
        _with_int(lit(str(ai)), _ge(af, not a_excl)),
        _with_int(mid, any_frac) if mid is not None else None,
        _with_int(lit(str(bi)), _le(bf, not b_excl)),
    )


def magnitude_range(a: Decimal, a_excl: bool, b: Optional[Decimal], b_excl: bool) -> Optional[RegExpr]:
    """Non-negative JSON numbers (no sign) with a <= v <= b (exclusive per flags).

    Exponents are added only where they cannot cross a bound: ``e >= 0`` when
    there is no upper bound (the value is at least its mantissa), ``e <= 0``
    when the lower bound is an inclusive 0 (the value is at most its mantissa),
    and for an exclusive 0 lower bound negative exponents down to -307 after a
    mantissa with a non-zero leading digit (no float underflow to 0.0).
    """
    plain = _plain_magnitude(a, a_excl, b, b_excl)
    if plain is None:
        return None
    exp: Optional[RegExpr] = None
    if b is None:
        exp = seq(plain, POS_EXPONENT)
        if a == 0 and not a_excl:
            exp = seq(plain, EXPONENT)
        elif a == 0:
            exp = alt(exp, seq(NZ_MANTISSA, NEG_EXPONENT_307))
    elif a == 0 and not a_excl:
        exp = seq(plain, NONPOS_EXPONENT)
    return alt(plain, exp)


def decimal_range(
    lo: Optional[Decimal], lo_excl: bool, hi: Optional[Decimal], hi_excl: bool
) -> Optional[RegExpr]:
    """JSON numbers v with lo <= v <= hi (see the module docstring for exactness)."""
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_excl or hi_excl))):
        return None
    for v in (lo, hi):
        if v is not None and (not v.is_finite() or v.adjusted() > MAX_DIGITS):
            raise GrammarError(f"number bound {v} is too large")
    windowed = []
    for e in range(-EXPONENT_WINDOW, EXPONENT_WINDOW + 1):
        mantissas = _signed_range(None if lo is None else lo.scaleb(-e), lo_excl,
                                  None if hi is None else hi.scaleb(-e), hi_excl, _plain_magnitude)
        if mantissas is not None:
            windowed.append(seq(mantissas, exponent_spelling(e)))
    zero_fits = (lo is None or lo < 0 or (lo == 0 and not lo_excl)) and (hi is None or hi > 0 or (hi == 0 and not hi_excl))
    return alt(_signed_range(lo, lo_excl, hi, hi_excl, magnitude_range), *windowed, ZERO if zero_fits else None)


def _signed_range(lo: Optional[Decimal], lo_excl: bool, hi: Optional[Decimal], hi_excl: bool,
                  magnitude) -> Optional[RegExpr]:
    """Signed numbers in the range from unsigned ones (``magnitude``), ``-0`` left out (see ``ZERO``)."""
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_excl or hi_excl))):
        return None
    pos = None
    if hi is None or hi > 0 or (hi == 0 and not hi_excl):
        if lo is None or lo < 0:
            pos = magnitude(Decimal(0), False, hi, hi_excl)
        else:
            pos = magnitude(lo, lo_excl, hi, hi_excl)
    neg = None
    if lo is None or lo < 0:
        if hi is None or hi >= 0:
            m = magnitude(Decimal(0), True, -lo if lo is not None else None, lo_excl)
        else:
            m = magnitude(-hi, hi_excl, -lo if lo is not None else None, lo_excl)
        neg = seq(lit("-"), m)
    return alt(neg, pos)


def exponent_spelling(e: int) -> RegExpr:
    """Every JSON spelling of the exponent part for ``e`` (``e5``, ``E+005``; ``e0``, ``E-00`` for 0)."""
    zeros = Repeat(lit("0"), 0, None)
    if e == 0:
        return seq(_E, Repeat(CharClass(((0x2B, 0x2B), (0x2D, 0x2D))), 0, 1), Repeat(lit("0"), 1, None))
    sign = lit("-") if e < 0 else Repeat(lit("+"), 0, 1)
    return seq(_E, sign, zeros, lit(str(abs(e))))


EXPONENT_WINDOW = 10  # exponents -10..10 are exact under any bounds (each a plain range of mantissas)
ZERO = seq(Repeat(lit("-"), 0, 1), lit("0"), Repeat(seq(lit("."), Repeat(lit("0"), 1, None)), 0, 1),
           Repeat(EXPONENT, 0, 1))  # every spelling of zero, -0 and 0e7 included
NEG_EXPONENT_307 = seq(_E, lit("-"), Repeat(lit("0"), 0, None), natural_range(0, 307))
NUMBER: RegExpr = seq(
    Repeat(lit("-"), 0, 1),
    natural_range(0, None),
    Repeat(seq(lit("."), Repeat(DIGIT, 1, None)), 0, 1),
    Repeat(EXPONENT, 0, 1),
)  # type: ignore[assignment]
INTEGER: RegExpr = integer_range(None, None)  # type: ignore[assignment]


def multiple_of_regex(k: int) -> Optional[RegExpr]:
    """Canonical JSON integers divisible by ``k`` (a mod-k automaton, minimized)."""
    from ._fsm import DFA, minimize, to_regex

    symbols = [((0x30 + d, 0x30 + d),) for d in range(10)] + [((0x2D, 0x2D),)]
    n = 3 + k
    trans = [[-1] * 11 for _ in range(n)]
    for d in range(10):
        trans[0][d] = 2 if d == 0 else 3 + d % k
        if d:
            trans[1][d] = 3 + d % k
        for r in range(k):
            trans[3 + r][d] = 3 + (10 * r + d) % k
    trans[0][10] = 1
    accept = [False, False, True, True] + [False] * (k - 1)
    return to_regex(minimize(DFA(symbols, trans, accept)))
