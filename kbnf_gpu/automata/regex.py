"""Python ``re`` syntax -> regular expression tree (``ir`` nodes plus anchors).

The pattern is parsed by the standard library's own ``re`` parser, so the
syntax, the escapes, the inline flags, ``\\d \\w \\s`` and case-insensitive
matching mean exactly what they mean to ``re.fullmatch``. (``interegular``
treats ``\\d \\w \\s`` as ASCII-only and folds case with ``str.lower/upper``
only, which disagrees with ``re`` on non-ASCII text.)

Supported: literals, classes, ``.``, alternation, groups, greedy and lazy
repeats (same language under full match), inline and scoped flags ``i s m x a
u``, the anchors ``^ $ \\A \\Z`` anywhere (they become guarded epsilon
edges, see ``Anchor``), lookarounds ``(?=…) (?!…) (?<=…) (?<!…)`` (``Look``:
compiled exactly, see ``dfa.py``) and word boundaries ``\\b \\B`` (written as
lookarounds over ``\\w``). Anchors and lookarounds see the pattern's own
extent: the string the pattern is matched against, whole. Rejected with
``RegexError``: backreferences, conditionals, atomic groups and possessive
repeats (no finite automaton, or none that is worth it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import ir
from ..caches import memoized
from . import charset as cs

try:  # Python >= 3.11
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]


class RegexError(Exception):
    """A pattern that cannot be compiled; ``pos`` is an offset into its source."""

    def __init__(self, message: str, pos: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


# Anchor kinds. BOS/BOL guard on the position before, the EO* kinds constrain
# what may follow (see nfa.py for the mode lattice).
BOS, BOL, EOS, EOL, EOLM = range(5)


@dataclass(frozen=True)
class Anchor:
    """A zero-width assertion: ``\\A``/``^`` (BOS, BOL with ``m``), ``\\Z`` (EOS), ``$`` (EOL, EOLM with ``m``)."""

    kind: int


@dataclass(frozen=True)
class Look:
    """A lookaround: at this position the rest of the string (``behind=False``)
    starts with a match of ``body``, or the text so far (``behind=True``) ends
    with one; ``negated`` flips the answer. ``body`` is a regex tree
    (``ir`` nodes, ``Anchor`` and ``Look``)."""

    body: object
    behind: bool
    negated: bool


_FLAG_BITS = {
    "i": re.IGNORECASE,
    "s": re.DOTALL,
    "m": re.MULTILINE,
    "x": re.VERBOSE,
    "u": re.UNICODE,
    "a": re.ASCII,
}

_CATEGORY_ESCAPES = {
    _c.CATEGORY_DIGIT: r"\d",
    _c.CATEGORY_NOT_DIGIT: r"\D",
    _c.CATEGORY_SPACE: r"\s",
    _c.CATEGORY_NOT_SPACE: r"\S",
    _c.CATEGORY_WORD: r"\w",
    _c.CATEGORY_NOT_WORD: r"\W",
}

_TYPE_FLAGS = re.ASCII | re.LOCALE | re.UNICODE
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT}

# op -> (message, source snippets to locate it by)
_UNSUPPORTED = {
    _c.GROUPREF: ("backreferences are not supported (no finite automaton matches them)", ("(?P=", "\\")),
    _c.GROUPREF_EXISTS: ("conditional groups are not supported", ("(?(",)),
}
if hasattr(_c, "ATOMIC_GROUP"):  # Python >= 3.11
    _UNSUPPORTED[_c.ATOMIC_GROUP] = ("atomic groups are not supported", ("(?>",))
    _UNSUPPORTED[_c.POSSESSIVE_REPEAT] = ("possessive repeats are not supported", ("*+", "++", "?+", "}+"))


def _combine_flags(flags: int, add: int, remove: int) -> int:
    if add & _TYPE_FLAGS:
        flags &= ~_TYPE_FLAGS
    return (flags | add) & ~remove


def _find(source: str, needles: tuple[str, ...]) -> int | None:
    found = [i for i in (source.find(n) for n in needles) if i >= 0]
    return min(found) if found else None


def _char_source(cp: int) -> str:
    return "\\U%08x" % cp


def _class_source(items: list, negated: bool) -> str:
    parts = []
    for op, av in items:
        if op is _c.LITERAL:
            parts.append(_char_source(av))
        elif op is _c.RANGE:
            parts.append(_char_source(av[0]) + "-" + _char_source(av[1]))
        elif op is _c.CATEGORY:
            parts.append(_CATEGORY_ESCAPES[av])
    return "[" + ("^" if negated else "") + "".join(parts) + "]"


def _class(items: list, flags: int) -> ir.CharClass:
    ascii_only = bool(flags & re.ASCII)
    negated = False
    sets = []
    for op, av in items:
        if op is _c.NEGATE:
            negated = True
        elif op is _c.LITERAL:
            sets.append(((av, av),))
        elif op is _c.RANGE:
            sets.append(((av[0], av[1]),))
        elif op is _c.CATEGORY:
            if av not in _CATEGORY_ESCAPES:
                raise RegexError(f"unsupported character category {av}")
            sets.append(cs.category(_CATEGORY_ESCAPES[av], ascii_only))
        else:  # pragma: no cover - the parser emits nothing else in a class
            raise RegexError(f"unsupported item {op} in a character class")
    exact = cs.union(*sets)
    if negated:
        exact = cs.complement(exact)
    if flags & re.IGNORECASE:
        exact = cs.ignorecase(exact, _class_source([i for i in items if i[0] is not _c.NEGATE], negated), ascii_only)
    return ir.CharClass(exact)


def _literal(cp: int, flags: int, negated: bool) -> ir.RegExpr:
    if flags & re.IGNORECASE:
        exact = ((cp, cp),)
        source = _char_source(cp)
        if negated:
            exact = cs.complement(exact)
            source = "[^" + source + "]"
        return ir.CharClass(cs.ignorecase(exact, source, bool(flags & re.ASCII)))
    if negated:
        return ir.CharClass(cs.complement(((cp, cp),)))
    if cs.SURROGATE_LO <= cp <= cs.SURROGATE_HI:
        return ir.CharClass(())  # no UTF-8 encoding: matches nothing
    return ir.Literal(chr(cp).encode("utf-8"))


_DOT = cs.complement(((10, 10),))


def _anchor(av, flags: int, source: str):
    multiline = bool(flags & re.MULTILINE)
    if av is _c.AT_BEGINNING_STRING:
        return Anchor(BOS)
    if av is _c.AT_BEGINNING:
        return Anchor(BOL if multiline else BOS)
    if av is _c.AT_END_STRING:
        return Anchor(EOS)
    if av is _c.AT_END:
        return Anchor(EOLM if multiline else EOL)
    if av in (_c.AT_BOUNDARY, _c.AT_NON_BOUNDARY):
        return word_boundary(ir.CharClass(cs.category(r"\w", bool(flags & re.ASCII))), av is _c.AT_BOUNDARY, False)
    raise RegexError(f"unsupported assertion {av}", _find(source, ("\\b", "\\B")))


def word_boundary(word: ir.RegExpr, boundary: bool, empty_is_boundary_free: bool,
                  anything: ir.RegExpr = ir.CharClass(cs.ALL)) -> ir.RegExpr:
    """``\\b`` (``boundary``) or ``\\B`` as lookarounds over the word characters ``word`` (one
    character of ``anything``).

    Python's ``\\B`` never matches in the empty string; ECMA's does
    (``empty_is_boundary_free``).
    """
    before, after = Look(word, True, False), Look(word, False, False)
    not_before, not_after = Look(word, True, True), Look(word, False, True)
    if boundary:
        return ir.Alternation((ir.Concat((before, not_after)), ir.Concat((not_before, after))))
    if empty_is_boundary_free:
        return ir.Alternation((ir.Concat((before, after)), ir.Concat((not_before, not_after))))
    nonempty = ir.Alternation((Look(anything, True, False), Look(anything, False, False)))
    return ir.Alternation((ir.Concat((before, after)), ir.Concat((not_before, not_after, nonempty))))


def _concat(parts: list) -> ir.RegExpr:
    merged: list = []
    run: list[bytes] = []  # adjacent literals, joined once
    for p in parts:
        if isinstance(p, ir.Literal):
            run.append(p.value)
            continue
        if run:
            merged.append(ir.Literal(b"".join(run)))
            run = []
        merged.append(p)
    if run:
        merged.append(ir.Literal(b"".join(run)))
    if len(merged) == 1:
        return merged[0]
    return ir.Concat(tuple(merged))


def parse_flags(flags: str) -> int:
    bits = 0
    for f in flags:
        if f not in _FLAG_BITS:
            raise RegexError(f"unknown regex flag {f!r}")
        bits |= _FLAG_BITS[f]
    return bits


@memoized(1 << 18, lambda source, flags="": len(source) + 64)  # a pattern's text: its tree's size
def translate(source: str, flags: str = "") -> ir.RegExpr | Anchor:
    """Parse a Python-``re`` pattern into a tree of ``ir`` nodes and ``Anchor``s.

    Raises ``RegexError`` for invalid or unsupported syntax.
    """
    bits = parse_flags(flags)
    try:
        parsed = _sre_parse.parse(source, bits)
    except re.error as e:
        raise RegexError(e.msg, e.pos) from None
    except RecursionError:
        raise RegexError("regex is nested too deeply") from None
    except (ValueError, OverflowError, TypeError) as e:
        raise RegexError(str(e)) from None
    return _translate(list(parsed), parsed.state.flags, source)


def _translate(items: list, flags: int, source: str):
    # Explicit stack: ("seq", items, flags) expands a sequence, ("build", fn, n)
    # pops n results and pushes fn(results).
    results: list = []
    stack: list = [("seq", items, flags)]
    while stack:
        task = stack.pop()
        if task[0] == "build":
            _, fn, n = task
            args = results[len(results) - n :] if n else []
            del results[len(results) - n :]
            results.append(fn(args))
            continue
        _, seq, fl = task
        seq = list(seq)
        stack.append(("build", _concat, len(seq)))
        for op, av in reversed(seq):
            _push_item(op, av, fl, source, stack, results)
    (root,) = results
    return root


def _push_item(op, av, flags: int, source: str, stack: list, results: list) -> None:
    """Schedule one parsed item: leaves go through a no-argument build task."""
    if op is _c.LITERAL or op is _c.NOT_LITERAL:
        node = _literal(av, flags, op is _c.NOT_LITERAL)
        stack.append(("build", lambda _a, n=node: n, 0))
    elif op is _c.ANY:
        node = ir.CharClass(cs.ALL if flags & re.DOTALL else _DOT)
        stack.append(("build", lambda _a, n=node: n, 0))
    elif op is _c.IN:
        node = _class(av, flags)
        stack.append(("build", lambda _a, n=node: n, 0))
    elif op is _c.CATEGORY:
        node = _class([(op, av)], flags)
        stack.append(("build", lambda _a, n=node: n, 0))
    elif op is _c.AT:
        node = _anchor(av, flags, source)
        stack.append(("build", lambda _a, n=node: n, 0))
    elif op is _c.BRANCH:
        options = av[1]
        stack.append(("build", lambda a: ir.Alternation(tuple(a)), len(options)))
        for sub in reversed(options):
            stack.append(("seq", sub, flags))
    elif op is _c.SUBPATTERN:
        _group, add, remove, sub = av
        stack.append(("seq", sub, _combine_flags(flags, add, remove)))
    elif op in _REPEATS:
        lo, hi, sub = av
        hi = None if hi is _c.MAXREPEAT or hi == _c.MAXREPEAT else hi
        stack.append(("build", lambda a, lo=lo, hi=hi: ir.Repeat(a[0], lo, hi), 1))
        stack.append(("seq", sub, flags))
    elif op is _c.ASSERT or op is _c.ASSERT_NOT:
        direction, sub = av
        behind, negated = direction < 0, op is _c.ASSERT_NOT
        stack.append(("build", lambda a, b=behind, n=negated: Look(a[0], b, n), 1))
        stack.append(("seq", sub, flags))
    elif op in _UNSUPPORTED:
        what, needles = _UNSUPPORTED[op]
        raise RegexError(what, _find(source, needles))
    else:
        raise RegexError(f"unsupported regex construct {op}")
