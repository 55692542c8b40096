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
  (``1`` followed by k zeros then ``e-k`` is 1 for every k), and tiny values
  as floats print them (``-8.9e-26``) wherever the range reaches 0. Comparison is exact in decimal; a validator
  that parses into binary floats may still round a number with more than ~15
  significant digits onto an exclusive bound.
"""
from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, localcontext
from functools import lru_cache, wraps
from typing import Any, Callable, Optional, TypeVar

from ...errors import GrammarError
from ...ir import Automaton, CharClass, RegExpr, Repeat
from ._rx import EPS, alt, lit, seq

T = TypeVar("T")

MAX_DIGITS = 400
# every bound (at most MAX_DIGITS digits before the point, a float's 17 significant ones), shifted by an exponent
# of the window, and the differences of such, exactly: the default context's 28 digits rounded a decimal's
# largest value (79228162514264337593543950335, 29 digits) in its exponent spellings, which then admitted
# ``79228162514264337593543950336e0``
EXACT = Context(prec=2 * MAX_DIGITS + 64)


def exact(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` computed in the ``EXACT`` decimal context (whatever the caller's)."""
    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> T:
        with localcontext(EXACT):
            return fn(*args, **kwargs)
    return run



def digits(lo: int, hi: int) -> CharClass:
    return CharClass(((0x30 + lo, 0x30 + hi),))


DIGIT = digits(0, 9)
NZ_DIGIT = digits(1, 9)


def _run(n: int) -> Optional[RegExpr]:
    return EPS if n == 0 else (DIGIT if n == 1 else Repeat(DIGIT, n, n))


# free digits past which ``_fixed`` is an automaton (``_free_runs``): as an expression, each digit where a string
# may leave a bound opens its own run of the digits left, and a subset construction meets every (digit where
# it left, digits read) pair (a double's largest bound, 309 digits, ~5,000 free digits: 11,000 subsets for a
# 650-state automaton, 0.5 s per exponent spelled); an int64's bounds (~150) stay expressions, as they were
FIXED_AUTOMATON_RUNS = 256


def _free_runs(lo: str, hi: str) -> int:
    """The free digits ``_fixed``'s expression spells out: at each digit where a string may go above ``lo`` (or
    below ``hi``) and the bound has more than zeros (nines) after it, a run of the digits left."""
    n = len(lo)
    last_lo = max((i for i, c in enumerate(lo) if c != "0"), default=-1)
    last_hi = max((i for i, c in enumerate(hi) if c != "9"), default=-1)
    return (sum(n - 1 - i for i in range(last_lo) if lo[i] != "9")
            + sum(n - 1 - i for i in range(last_hi) if hi[i] != "0"))


def _fixed(lo: str, hi: str) -> Optional[RegExpr]:
    """Digit strings of len(lo) == len(hi) between ``lo`` and ``hi`` (inclusive)."""
    if _free_runs(lo, hi) > FIXED_AUTOMATON_RUNS:
        return fixed_automaton(lo, hi)
    return _fixed_expr(lo, hi)


def _fixed_expr(lo: str, hi: str) -> Optional[RegExpr]:
    """``_fixed`` as an expression. Its parts' bounds are suffixes of ``lo`` and ``hi`` (or all zeros, all
    nines), whose free runs are among the whole's: within ``FIXED_AUTOMATON_RUNS`` once the whole is, so they
    are not counted again at each digit."""
    n = len(lo)
    if n == 0:
        return EPS
    if lo[0] == hi[0]:
        return seq(lit(lo[0]), _fixed_expr(lo[1:], hi[1:]))
    a, b = int(lo[0]), int(hi[0])
    opts: list[Optional[RegExpr]] = []
    if lo[1:] != "0" * (n - 1):
        opts.append(seq(lit(lo[0]), _fixed_expr(lo[1:], "9" * (n - 1))))
        a += 1
    last = None
    if hi[1:] != "9" * (n - 1):
        last = seq(lit(hi[0]), _fixed_expr("0" * (n - 1), hi[1:]))
        b -= 1
    if a <= b:
        opts.append(seq(digits(a, b), _run(n - 1)))
    opts.append(last)
    return alt(*opts)


def fixed_automaton(lo: str, hi: str) -> Optional[RegExpr]:
    """``_fixed`` as a deterministic automaton: a state per (digits read, still equal to ``lo``'s, still equal to
    ``hi``'s), so the strings that left both bounds share one state per count (at most ``3n + 1`` states)."""
    n = len(lo)
    index: dict[tuple[int, bool, bool], int] = {}
    order: list[tuple[int, bool, bool]] = []

    def state(i: int, low: bool, high: bool) -> int:
        key = (n, False, False) if i == n else (i, low, high)
        if key not in index:
            index[key] = len(order)
            order.append(key)
        return index[key]

    state(0, True, True)
    edges: list[tuple[int, RegExpr, int]] = []
    for i, low, high in order:  # grows while it is walked
        if i == n:
            continue
        p = index[(i, low, high)]
        a, b = int(lo[i]) if low else 0, int(hi[i]) if high else 9
        targets: dict[int, list[int]] = {}
        for d in range(a, b + 1):  # digits with one target are a range: ``a``, ``b`` and those between
            targets.setdefault(state(i + 1, low and d == a, high and d == b), []).append(d)
        edges += [(p, digits(ds[0], ds[-1]), q) for q, ds in targets.items()]
    if (n, False, False) not in index:
        return None
    return Automaton(len(order), tuple(edges), (index[(n, False, False)],))


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


def integer_multiples(lo: Optional[int], hi: Optional[int], k: int) -> Optional[RegExpr]:
    """Canonical JSON integers in ``[lo, hi]`` divisible by ``k`` (``step_digits`` accepts it: the last
    digits decide), by arithmetic on the range (``_int_part``); ``None`` when empty."""
    lows = tuple(low for low, _, _ in _step_tails(Decimal(k)))
    if lo is not None and hi is not None and lo > hi:
        return None
    pos = _int_part(max(lo, 0) if lo is not None else 0, hi, lows) if hi is None or hi >= 0 else None
    neg = None
    if lo is None or lo < 0:
        neg = seq(lit("-"), _int_part(max(1, -hi) if hi is not None else 1, -lo if lo is not None else None, lows))
    return alt(neg, pos)


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


FracBound = Optional[tuple[str, bool]]  # fraction digits x of a bound 0.x and whether it is included


def _plain_magnitude(a: Decimal, a_excl: bool, b: Optional[Decimal], b_excl: bool,
                     step: Optional[Decimal] = None, off_grid: Optional[int] = None) -> Optional[RegExpr]:
    """Non-negative numbers without sign or exponent, a <= v <= b (exclusive per flags): pieces of an
    integer part in a range and a fraction between bounds (None: from 0 / below 1). With ``step``,
    multiples of it: each piece met with each tail of ``step_digits`` by arithmetic on the bounds
    (an automaton product written back as a regex grows exponentially in the digits); with
    ``off_grid`` g, the numbers that are no multiple of 10**g (``_off_grid``)."""
    if b is not None and (a > b or (a == b and (a_excl or b_excl))):
        return None
    ai, af = _split(a)
    low_frac: FracBound = (af, not a_excl)
    pieces: list[tuple[int, Optional[int], FracBound, FracBound]]
    if b is None:
        pieces = [(ai, ai, low_frac, None), (ai + 1, None, None, None)]
    else:
        bi, bf = _split(b)
        high_frac: FracBound = (bf, not b_excl)
        if ai == bi:
            pieces = [(ai, ai, low_frac, high_frac)]
        else:
            pieces = [(ai, ai, low_frac, None), (ai + 1, bi - 1, None, None), (bi, bi, None, high_frac)]
    if off_grid is not None:
        return alt(*(_with_int(ints, frac) for lo, hi, x, y in pieces for ints, frac in _off_grid(lo, hi, x, y, off_grid)))
    if step is None:
        return alt(*(_with_int(_int_part(lo, hi), _fraction(x, y)) for lo, hi, x, y in pieces))
    return alt(*(_with_int(_int_part(lo, hi, lows), frac)
                 for lo, hi, x, y in pieces for frac, lows in _step_pieces(step, x, y).items()))


def _step_pieces(step: Decimal, x: FracBound, y: FracBound) -> dict[Frac, tuple[str, ...]]:
    """The multiples of ``step`` with a fraction between the bounds: fraction -> the integer parts'
    last digits it goes with. Tails that share their last integer digits and the range of their free
    fraction digits share one fraction (their fixed digits an alternation), and last integer digits
    with one fraction share one integer part: the automaton of the whole stays small."""
    by_low: dict[str, dict[tuple, list[str]]] = {}
    for low, free, fixed in _step_tails(step):
        d = _free_digits(x, y, free, fixed)
        if d is not None:
            by_low.setdefault(low, {}).setdefault((free, *d, bool(fixed)), []).append(fixed)
    out: dict[Frac, list[str]] = {}
    for low, groups in by_low.items():
        eps, rests = False, []
        for (free, d_lo, d_hi, has_fixed), fixed in groups.items():
            e, rest = _step_fraction(free, d_lo, d_hi, tuple(fixed) if has_fixed else ())
            eps, rests = eps or e, rests + [rest]
        out.setdefault((eps, alt(*rests)), []).append(low)
    return {frac: tuple(lows) for frac, lows in out.items()}


def _fraction(x: FracBound, y: FracBound) -> Frac:
    if y is None:
        return (True, Repeat(DIGIT, 1, None)) if x is None else _ge(*x)
    return _le(*y) if x is None else _between(*x, *y)


def _off_grid(lo: int, hi: Optional[int], x: FracBound, y: FracBound, g: int) -> list[tuple[Optional[RegExpr], Frac]]:
    """Numbers with an integer part in [lo, hi] and a fraction between ``x`` and ``y`` that are no multiple
    of 10**g: for g <= 0 a non-zero digit after the first -g fraction digits; for g > 0 a non-zero
    fraction, or a zero one after an integer part with fewer than g trailing zeros."""
    ints = _int_part(lo, hi)
    if g <= 0:
        return [(ints, _beyond(x, y, -g))]
    out = [(ints, _beyond(x, y, 0))]
    zero_fraction = (x is None or (not x[0] and x[1])) and not (y is not None and not y[0] and not y[1])
    if zero_fraction:
        out.append((_int_off_grid(lo, hi, g), (True, Repeat(lit("0"), 1, None))))
    return out


def _beyond(x: FracBound, y: FracBound, h: int) -> Frac:
    """Fractions between the bounds with a non-zero digit after the first ``h``: the first h digits D,
    then a non-zero rest r in (0, 1), with v = (D + r)·10**-h; D at the ends of its range bounds r."""
    scale = 10**h
    low = Decimal("0." + x[0]) * scale if x is not None and x[0] else Decimal(0)
    d_lo, r_digits = _split(low)
    r_lo: FracBound = (r_digits, x[1]) if r_digits and x is not None else ("", False)  # r > 0 always
    if y is None:
        d_hi, r_hi = scale - 1, None
    else:
        high = Decimal("0." + y[0]) * scale if y[0] else Decimal(0)
        d_hi, r_digits = _split(high)
        r_hi = (r_digits, y[1]) if r_digits else None
        if not r_digits:
            d_hi -= 1  # D + r < an integer bound: D below it, any r
    if d_lo > d_hi:
        return False, None

    def d(v: int) -> RegExpr:
        return lit(str(v).zfill(h)) if h else EPS

    def rest(lower: FracBound, upper: FracBound) -> Optional[RegExpr]:
        lower = lower or ("", False)
        return (_ge(*lower) if upper is None else _between(*lower, *upper))[1]

    if d_lo == d_hi:
        return False, seq(d(d_lo), rest(r_lo, r_hi))
    middle = seq(_fixed(str(d_lo + 1).zfill(h), str(d_hi - 1).zfill(h)), NONZERO_DIGITS) if d_hi - d_lo >= 2 else None
    return False, alt(seq(d(d_lo), rest(r_lo, None)), middle, seq(d(d_hi), rest(None, r_hi)))


def _int_off_grid(lo: int, hi: Optional[int], g: int) -> Optional[RegExpr]:
    """Canonical naturals in [lo, hi] that are no multiple of 10**g (g > 0): below 10**g, or
    m·10**g + r with r in [1, 10**g - 1] written with g digits."""
    unit = 10**g
    if hi is None:  # the numbers with the digits of lo, then the longer ones: fewer than g trailing zeros
        n = len(str(max(lo, 1)))
        longer = [seq(NZ_DIGIT, Repeat(DIGIT, max(0, n - 1 - j), None), NZ_DIGIT, Repeat(lit("0"), j, j))
                  for j in range(g)]  # written so that an automaton need not guess where the last g digits start
        longer += [seq(NZ_DIGIT, Repeat(lit("0"), j, j)) for j in range(n, g)]  # one non-zero digit, j zeros
        return alt(_int_off_grid(lo, 10**n - 1, g), *longer)

    def tail(r_lo: int, r_hi: int) -> Optional[RegExpr]:
        return _fixed(str(r_lo).zfill(g), str(r_hi).zfill(g)) if r_lo <= r_hi else None

    options: list[Optional[RegExpr]] = []
    if max(lo, 1) <= min(hi, unit - 1):
        options.append(natural_range(max(lo, 1), min(hi, unit - 1)))
    m_lo, m_hi = max(1, lo // unit), hi // unit
    if m_lo == m_hi:
        options.append(seq(lit(str(m_lo)), tail(max(1, lo - m_lo * unit), min(unit - 1, hi - m_lo * unit))))
    elif m_lo < m_hi:
        options.append(seq(lit(str(m_lo)), tail(max(1, lo - m_lo * unit), unit - 1)))
        for a, b in _by_length(m_lo + 1, m_hi - 1):  # m of one length at a time: the tail starts at a known digit
            options.append(seq(_fixed(str(a), str(b)), tail(1, unit - 1)))
        options.append(seq(lit(str(m_hi)), tail(1, hi - m_hi * unit)))
    return alt(*options)


def _by_length(a: int, b: int) -> list[tuple[int, int]]:
    """[a, b] (naturals, a >= 1) split into ranges of numbers with the same count of digits."""
    out = []
    while a <= b:
        top = min(b, 10 ** len(str(a)) - 1)
        out.append((a, top))
        a = top + 1
    return out


def _int_part(lo: int, hi: Optional[int], lows: tuple[str, ...] = ("",)) -> Optional[RegExpr]:
    """Canonical naturals n in [lo, hi] whose last L digits are one of ``lows`` (all of length L):
    n = m·10**L + low, one range of m shared by every low and, at the ends, the few m only some allow."""
    if hi is not None and lo > hi:
        return None
    if lows == ("",):
        return lit(str(lo)) if lo == hi else natural_range(lo, hi)
    unit = 10 ** len(lows[0])
    ranges = {}
    for low in lows:
        rem = int(low)
        m_lo = max(0, -((rem - lo) // unit))  # ceil((lo - rem) / unit)
        m_hi = None if hi is None else (hi - rem) // unit
        if m_hi is None or m_lo <= m_hi:
            ranges[low] = (m_lo, m_hi)
    if not ranges:
        return None
    shared_lo = max(max(m_lo for m_lo, _ in ranges.values()), 1)
    shared_hi = None if hi is None else min(m_hi for _, m_hi in ranges.values())
    options: list[Optional[RegExpr]] = []
    if shared_hi is None or shared_lo <= shared_hi:
        options.append(seq(natural_range(shared_lo, shared_hi), alt(*(lit(low) for low in ranges))))
    for low, (m_lo, m_hi) in ranges.items():
        if m_lo == 0:
            options.append(lit(low.lstrip("0") or "0"))  # m = 0: the low digits are the number
        ends = [(max(m_lo, 1), shared_lo - 1)]
        if shared_hi is not None:
            ends.append((max(m_lo, 1, shared_hi + 1), m_hi))
        options += [seq(natural_range(a, b), lit(low)) for a, b in ends if a <= b]
    return alt(*options)


def magnitude_range(a: Decimal, a_excl: bool, b: Optional[Decimal], b_excl: bool) -> Optional[RegExpr]:
    """Non-negative JSON numbers (no sign) with a <= v <= b (exclusive per flags).

    Exponents are added only where they cannot cross a bound: ``e >= 0`` when
    there is no upper bound (the value is at least its mantissa), ``e <= 0``
    when the lower bound is an inclusive 0 (the value is at most its mantissa),
    and for an exclusive 0 lower bound negative exponents down to -307 after a
    mantissa with a non-zero leading digit (no float underflow to 0.0). Under
    an upper bound, a 0 lower bound also admits the tiny values as binary
    floats print them (``8.9e-26``, ``-8.9e-26`` for the negative side of a
    range around 0): one non-zero digit before the point and an exponent from
    -11 to -307, below ``10**-10``.
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
    elif a == 0:
        if not a_excl:
            exp = seq(plain, NONPOS_EXPONENT)
        if b >= BELOW_WINDOW:
            exp = alt(exp, seq(ONE_DIGIT_MANTISSA, NEG_EXPONENT_PAST_WINDOW))
    return alt(plain, exp)


def decimal_range(
    lo: Optional[Decimal], lo_excl: bool, hi: Optional[Decimal], hi_excl: bool, step: Optional[Decimal] = None,
    fractional: bool = False,
) -> Optional[RegExpr]:
    """``decimal_range_parts`` as one regular expression."""
    return alt(*decimal_range_parts(lo, lo_excl, hi, hi_excl, step, fractional))


@exact
def decimal_range_parts(
    lo: Optional[Decimal], lo_excl: bool, hi: Optional[Decimal], hi_excl: bool, step: Optional[Decimal] = None,
    fractional: bool = False,
) -> list[RegExpr]:
    """JSON numbers v with lo <= v <= hi (see the module docstring for exactness); with ``step`` (which
    ``step_digits`` must accept) its multiples, with ``fractional`` the values that are no integer (not
    both): exact in plain notation and for exponents in the window, where each exponent's mantissas
    are a plain range met with the multiples of ``step`` (or the non-multiples of 1) shifted by it;
    larger exponents are not generated. The parts: no exponent, each exponent of the window, zero
    (a caller may make them separate lexemes where one automaton of them all would be large)."""
    assert step is None or not fractional
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_excl or hi_excl))):
        return []
    for v in (lo, hi):
        if v is not None and (not v.is_finite() or v.adjusted() > MAX_DIGITS):
            raise GrammarError(f"number bound {v} is too large")
    windowed = []
    for e in range(-EXPONENT_WINDOW, EXPONENT_WINDOW + 1):
        shifted = None if step is None else step.scaleb(-e)
        mantissas = _signed_range(None if lo is None else lo.scaleb(-e), lo_excl,
                                  None if hi is None else hi.scaleb(-e), hi_excl,
                                  lambda *bounds: _plain_magnitude(*bounds, shifted, -e if fractional else None))
        if mantissas is not None:
            windowed.append(seq(mantissas, exponent_spelling(e)))
    zero_fits = (lo is None or lo < 0 or (lo == 0 and not lo_excl)) and (hi is None or hi > 0 or (hi == 0 and not hi_excl))
    if step is None and not fractional:
        plain = _signed_range(lo, lo_excl, hi, hi_excl, magnitude_range)
    else:
        plain = _signed_range(lo, lo_excl, hi, hi_excl,
                              lambda *bounds: _plain_magnitude(*bounds, step, 0 if fractional else None))
    return [part for part in (plain, *windowed, ZERO if zero_fits and not fractional else None) if part is not None]


MAX_STEP_EXPONENT = 60  # a step's power of ten: each exponent's mantissas spell out that many digits
MAX_STEP_TAILS = 64  # a step P·10**g needs the 10**c / P multiples of P below 10**c (P | 10**c) spelled out


@exact
def integer_and_exponent(v: Decimal) -> tuple[int, int]:
    """``(n, e)`` with ``v == n * 10**e`` and ``n`` not a multiple of 10 (``v`` > 0, finite)."""
    _, digits, exp = v.normalize().as_tuple()
    return int("".join(map(str, digits))), int(exp)


def power_of_ten_exponent(n: int) -> Optional[int]:
    """The least c with ``n | 10**c`` (the last c digits decide divisibility by n); None when n has a
    prime factor other than 2 and 5."""
    count = {2: 0, 5: 0}
    for p in count:
        while n % p == 0:
            n //= p
            count[p] += 1
    return max(count.values()) if n == 1 else None


@exact
def step_digits(step: Decimal) -> Optional[tuple[int, int, int]]:
    """``(P, g, c)`` with ``step == P * 10**g``, ``P`` not a multiple of 10, ``c`` the least with
    ``P | 10**c``: a step whose multiples the last digits decide. None when ``P`` has a prime factor
    other than 2 and 5, needs more than ``MAX_STEP_TAILS`` tails or a power beyond ``MAX_STEP_EXPONENT``."""
    if not step.is_finite() or step <= 0:
        return None
    p, exp = integer_and_exponent(step)
    c = power_of_ten_exponent(p)
    if c is None or 10**c // p > MAX_STEP_TAILS or abs(exp) > MAX_STEP_EXPONENT:
        return None
    return p, exp, c


@lru_cache(maxsize=256)
@exact
def _step_tails(step: Decimal) -> tuple[tuple[str, int, str], ...]:
    """The plain multiples of ``step`` (``step_digits`` accepts it), one tail at a time: the digits at
    weights ``10**g`` to ``10**(g+c-1)`` spell one of the multiples of ``P`` below ``10**c``, every
    digit below weight ``10**g`` is 0, the rest are free. Per tail: the integer part's last digits,
    the fraction's count of free digits and the fixed digits after them (then only zeros)."""
    found = step_digits(step)
    assert found is not None, step
    p, g, c = found
    out = []
    for tail in range(0, 10**c, p):
        fixed = str(tail).zfill(c) if c else ""
        digit = {g + c - 1 - i: fixed[i] for i in range(c)}  # weight -> digit
        low = "".join(digit.get(w, "0") for w in range(max(0, g + c) - 1, -1, -1))
        free = max(0, -(g + c))
        fixed_fraction = "".join(digit.get(-j, "0") for j in range(free + 1, max(0, -g) + 1)).rstrip("0")
        out.append((low, free, fixed_fraction))
    return tuple(out)


def _free_digits(x: FracBound, y: FracBound, free: int, fixed: str) -> Optional[tuple[int, int]]:
    """The range of D for fractions f between the bounds that are ``free`` digits D, then ``fixed``,
    then zeros (None: empty)."""
    scale = Decimal(10) ** free
    phi = Decimal("0." + fixed) if fixed else Decimal(0)  # what ``fixed`` adds to D, in units of 10**-free
    d_lo, d_hi = 0, 10**free - 1
    if x is not None and x[0]:
        bound = Decimal("0." + x[0]) * scale - phi
        d_lo = max(d_lo, int(bound.to_integral_value(ROUND_CEILING)) if x[1] else int(bound.to_integral_value(ROUND_FLOOR)) + 1)
    elif x is not None and not x[1] and not fixed:
        d_lo = max(d_lo, 1)  # above an exclusive 0: D = 0 is 0 itself
    if y is not None:
        bound = Decimal("0." + y[0]) * scale - phi if y[0] else -phi
        d_hi = min(d_hi, int(bound.to_integral_value(ROUND_FLOOR)) if y[1] else int(bound.to_integral_value(ROUND_CEILING)) - 1)
    return None if d_lo > d_hi else (d_lo, d_hi)


def _step_fraction(free: int, d_lo: int, d_hi: int, fixed: tuple[str, ...]) -> Frac:
    """``free`` digits D in [d_lo, d_hi], then one of ``fixed``, then zeros; with no ``fixed``, D's
    trailing zeros may be left out (then the fraction may be empty)."""
    zeros = Repeat(lit("0"), 0, None)
    if fixed:
        free_digits = _fixed(str(d_lo).zfill(free), str(d_hi).zfill(free)) if free else EPS
        return False, seq(free_digits, alt(*(lit(f) for f in fixed)), zeros)
    options: list[Optional[RegExpr]] = []
    for n in range(1, free + 1):  # D written with n digits: D = E·10**(free-n)
        unit = 10 ** (free - n)
        e_lo, e_hi = -(-d_lo // unit), d_hi // unit
        if e_lo <= e_hi:
            options.append(_fixed(str(e_lo).zfill(n), str(e_hi).zfill(n)))
    rest = seq(alt(*options), zeros) if options else None
    if d_lo == 0:
        rest = alt(rest, Repeat(lit("0"), 1, None))
    return d_lo == 0, rest


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
NEG_EXPONENT_PAST_WINDOW = seq(_E, lit("-"), Repeat(lit("0"), 0, None), natural_range(EXPONENT_WINDOW + 1, 307))
ONE_DIGIT_MANTISSA = seq(NZ_DIGIT, Repeat(seq(lit("."), Repeat(DIGIT, 1, None)), 0, 1))  # in [1, 10)
BELOW_WINDOW = Decimal(10) ** -EXPONENT_WINDOW  # ONE_DIGIT_MANTISSA past the window stays below it
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
