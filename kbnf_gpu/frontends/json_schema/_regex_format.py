"""``format: regex``: a string that is itself a regular expression, as a context-free grammar.

Which strings are regexes is not a regular language (groups nest), so no
lexeme can hold it; it is a few rules over one-unit lexemes (a character, an
escape, a quantifier, a class range) inside the string's quotes, one Earley
step per unit. Beside a ``pattern`` or length limits (GitLab CI's
``coverage``: a regex written between slashes, ``^/.+/$``) the rules are
crossed with the automaton of those (Bar-Hillel's construction): a context-
free language meets a regular one in a context-free language, whose rules
are the grammar's per pair of automaton states (where a rule's text starts
and ends), each unit lexeme cut to the texts between them.

JSON Schema means ECMA-262 syntax (with the ``u`` flag, as for ``pattern``)
and Python's ``jsonschema`` checks the format with ``re.compile``; as for
patterns that the two dialects read differently, a string is allowed only
where both accept it. The core syntax both share, and no more:

* alternatives ``|``, groups ``(...)`` and ``(?:...)``, lookaheads ``(?=...)``
  and ``(?!...)`` (not quantified), the assertions ``^ $ \\b \\B``;
* ``.``, any character but ``^ $ \\ . * + ? ( ) [ ] { } |`` as itself, the
  escapes ``\\d \\D \\w \\W \\s \\S \\t \\n \\r \\f \\v``, ``\\xHH``, ``\\uHHHH``
  and those of the syntax characters and ``/``;
* quantifiers ``* + ?``, ``{n}``, ``{n,}``, ``{n,m}`` (at most 4 digits, no
  leading zero, and ``n <= m`` evident: ``m`` longer, or both one digit, or the
  first digit of ``n`` smaller), each lazy or not;
* classes ``[...]``/``[^...]`` of characters (not ``\\ ] [ -``, nor ``^``
  first), the escapes above (``\\b`` and ``\\-`` too), ranges of two ASCII
  letters or digits in order, and ``-`` first or last.

Left out, valid in one dialect only or not provably valid by a grammar:
backreferences, named groups, lookbehinds, inline flags, ``\\p{..}``,
``\\cX``, ``\\0`` (ECMA refuses it before a digit), other letter escapes,
``{,n}``, possessive quantifiers, ranges with an escape at either end, and an
empty class.
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Optional

from ... import ir
from . import _charset as cs
from ._fsm import DFA, alphabet, as_expr, intersection_dfa, minimize
from ._rx import Rx, alt, cc, lit, rep, seq
from ._strings import encode

if TYPE_CHECKING:
    from ._builder import Builder

SYNTAX = "^$\\.*+?()[]{}|"
_HEX = cs.of_chars("0123456789abcdefABCDEF")
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # in code point order
MAX_COUNT_DIGITS = 4


def _escapes(letters: str) -> Rx:
    """``\\`` and one of ``letters``, ``\\xHH``, ``\\uHHHH``, or an escaped syntax character or ``/``."""
    hex_digit = cc(_HEX)
    return seq(lit("\\"), alt(cc(cs.of_chars(letters + SYNTAX + "/")), seq(lit("x"), rep(hex_digit, 2, 2)),
                             seq(lit("u"), rep(hex_digit, 4, 4))))


def _number(digits: int) -> Rx:
    """A count of exactly ``digits`` digits, no leading zero (``0`` alone for one digit)."""
    if digits == 1:
        return cc(cs.of_chars("0123456789"))
    return seq(cc(cs.of_chars("123456789")), rep(cc(cs.of_chars("0123456789")), digits - 1, digits - 1))


def _bounded_pairs() -> Rx:
    """``n,m`` with ``n <= m`` evident from the digits (see the module)."""
    digit = cc(cs.of_chars("0123456789"))
    options: list[Rx] = []
    for a in range(10):  # one digit each: every ordered pair
        options.append(seq(lit(f"{a},"), cc(cs.norm([(ord(str(a)), ord("9"))]))))
    for k in range(1, MAX_COUNT_DIGITS + 1):
        for longer in range(k + 1, MAX_COUNT_DIGITS + 1):
            options.append(seq(_number(k), lit(","), _number(longer)))
        if k > 1:  # as long: the first digit of n smaller
            for a in range(1, 9):
                options.append(seq(lit(str(a)), rep(digit, k - 1, k - 1), lit(","),
                                   cc(cs.norm([(ord(str(a + 1)), ord("9"))])), rep(digit, k - 1, k - 1)))
    return alt(*options)


@lru_cache(maxsize=None)
def units() -> dict[str, Rx]:
    """The decoded-string language of each lexeme of the grammar (JSON spelling comes after)."""
    count = alt(*(_number(k) for k in range(1, MAX_COUNT_DIGITS + 1)))
    quantifier = seq(alt(cc(cs.of_chars("*+?")), seq(lit("{"), count, lit("}")), seq(lit("{"), count, lit(",}")),
                         seq(lit("{"), _bounded_pairs(), lit("}"))), rep(lit("?"), 0, 1))
    ranges = alt(*(seq(lit(a), lit("-"), cc(cs.of_chars(_ALNUM[i:]))) for i, a in enumerate(_ALNUM)))
    class_item = alt(cc(cs.subtract(cs.ANY, cs.of_chars("\\][-^"))), _escapes("dDwWsStnrfvb-"), ranges)
    return {
        "bar": lit("|"), "open": lit("("), "open_group": lit("(?:"), "close": lit(")"),
        "look": alt(lit("(?="), lit("(?!")), "assertion": alt(cc(cs.of_chars("^$")), lit("\\b"), lit("\\B")),
        "char": cc(cs.subtract(cs.ANY, cs.of_chars(SYNTAX))), "dot": lit("."), "escape": _escapes("dDwWsStnrfv"),
        "quantifier": quantifier, "class_open": lit("["), "class_close": lit("]"), "caret": lit("^"),
        "hyphen": lit("-"), "class_item": class_item, "quote": lit('"'),
    }


# The grammar over the units, rules of at most two symbols (a name of ``units()`` or a rule's): a regular
# expression is a disjunction of alternatives of terms, each an assertion, a lookahead, or an atom with at most
# one quantifier; a class is ``[``, an optional ``^`` (negation), then ``-`` alone or items (``-`` first and last
# optional, a ``^`` after the first item itself)
GRAMMAR: dict[str, tuple[tuple[str, ...], ...]] = {
    "disjunction": (("alternative",), ("disjunction", "or_alternative")),
    "or_alternative": (("bar", "alternative"),),
    "alternative": ((), ("alternative", "term")),
    "term": (("assertion",), ("look_body", "close"), ("atom",), ("atom", "quantifier")),
    "look_body": (("look", "disjunction"),),
    "atom": (("char",), ("dot",), ("escape",), ("class",), ("open_body", "close"), ("group_body", "close")),
    "open_body": (("open", "disjunction"),),
    "group_body": (("open_group", "disjunction"),),
    "class": (("class_start", "hyphen_close"), ("class_items", "hyphen_close"), ("class_items", "class_close")),
    "hyphen_close": (("hyphen", "class_close"),),
    "class_start": (("class_open",), ("class_open", "caret")),
    "class_items": (("class_start", "class_item"), ("class_start", "hyphen_item"), ("class_items", "class_item"),
                    ("class_items", "caret")),
    "hyphen_item": (("hyphen", "class_item"),),
}
START = "disjunction"
# code-point automaton states beside ``format: regex`` (a pattern, length limits) that the grammar is crossed
# with: its rules grow with their cube (``^/.+/$``, GitLab CI's ``coverage``: 4 states)
MAX_PRODUCT_STATES = 12


def regex_string(b: "Builder", d: Optional[DFA] = None) -> Optional[ir.Expr]:
    """A JSON string that is a regular expression (see the module), and whose text ``d`` accepts (a pattern,
    length limits: ``None`` for any; ``None`` back when no regex is such a text). Beside ``d`` the grammar is its
    product with ``d`` (Bar-Hillel): a rule per (rule, state where it starts, state where it ends) that derives
    a text, each unit lexeme cut to the texts leading ``d`` from one state to the other. Without ``d``, one set
    of rules per schema."""
    if d is None and b.regex_rule is not None:
        return ir.Ref(b.regex_rule)
    n = 1 if d is None else d.n
    pieces: dict[tuple[str, int, int], ir.Terminal] = {}  # (unit, from, to) -> its lexeme
    for name, rx in units().items():
        if name == "quote":
            continue
        for p in range(n):
            for q, cut in ([(0, rx)] if d is None else _cut(d, p, name)):
                pieces[(name, p, q)] = b.term(encode(cut), f"regex_{name}")
    derives = _derivations(n, {(name, p, q) for name, p, q in pieces})
    finals = [0] if d is None else [q for q in range(n) if d.accept[q] and (START, 0, q) in derives]
    if not finals:
        return None
    refs: dict[tuple[str, int, int], ir.Ref] = {}

    def ref(rule: str, p: int, q: int) -> ir.Ref:
        key = (rule, p, q)
        if key not in refs:
            refs[key] = ir.Ref(b.fresh(f"regex_{rule}" if d is None else f"regex_{rule}_{p}_{q}"))
            todo.append(key)
        return refs[key]

    def symbol(name: str, p: int, q: int) -> ir.Expr:
        return pieces[(name, p, q)] if name in units() else ref(name, p, q)

    todo: list[tuple[str, int, int]] = []
    quote = b.term(units()["quote"], "regex_quote")
    starts = [ref(START, 0, q) for q in finals]
    body = ir.Sequence((quote, starts[0] if len(starts) == 1 else ir.Choice(tuple(starts)), quote))
    while todo:
        rule, p, q = todo.pop()
        options: list[ir.Expr] = []
        for rhs in GRAMMAR[rule]:
            if not rhs:
                if p == q:
                    options.append(ir.EMPTY)
            elif len(rhs) == 1:
                if (rhs[0], p, q) in derives:
                    options.append(symbol(rhs[0], p, q))
            else:
                options.extend(ir.Sequence((symbol(rhs[0], p, m), symbol(rhs[1], m, q))) for m in range(n)
                               if (rhs[0], p, m) in derives and (rhs[1], m, q) in derives)
        b.add_rule(refs[(rule, p, q)].name, options)
    name = b.fresh("regex_string")
    b.add_rule(name, [body])
    if d is None:
        b.regex_rule = name
    return ir.Ref(name)


def _cut(d: DFA, p: int, name: str) -> list[tuple[int, Rx]]:
    """``(q, the texts of unit name leading d from p to q)`` for each ``q`` some text of the unit leads to: the
    product of the unit's automaton with ``d`` from ``p``, walked once, then minimized per ``q``."""
    u = _unit_dfas()[name]
    symbols, of_label = alphabet([*u.symbols, *d.symbols])
    column_u, column_d = [-1] * len(symbols), [-1] * len(symbols)
    for column, dfa in ((column_u, u), (column_d, d)):
        for s, ranges in enumerate(dfa.symbols):
            for j in of_label[ranges]:
                column[j] = s
    index = {(0, p): 0}
    order = [(0, p)]
    trans: list[list[int]] = []
    for x, y in order:  # grows while it is walked
        row = []
        for cu, cd in zip(column_u, column_d):
            x2 = u.trans[x][cu] if cu >= 0 else -1
            y2 = d.trans[y][cd] if cd >= 0 and x2 >= 0 else -1
            if y2 < 0:
                row.append(-1)
                continue
            if (x2, y2) not in index:
                index[(x2, y2)] = len(order)
                order.append((x2, y2))
            row.append(index[(x2, y2)])
        trans.append(row)
    out = []
    for q in sorted({y for x, y in order if u.accept[x]}):
        found = minimize(DFA(symbols, trans, [u.accept[x] and y == q for x, y in order]))
        if found is not None:
            out.append((q, as_expr(found)))
    return out


@lru_cache(maxsize=None)
def _unit_dfas() -> dict[str, DFA]:
    """The minimal automaton of each unit's decoded texts (over its own symbols)."""
    return {name: intersection_dfa([rx]) for name, rx in units().items()}


def _derivations(n: int, units_at: set[tuple[str, int, int]]) -> set[tuple[str, int, int]]:
    """Every ``(rule or unit, p, q)`` that derives a text leading the automaton from ``p`` to ``q``: the units
    given, and the rules' closure over them (a fixpoint, ``n`` states)."""
    found = set(units_at)
    changed = True
    while changed:
        changed = False
        for rule, alternatives in GRAMMAR.items():
            for rhs in alternatives:
                if not rhs:
                    new = {(rule, p, p) for p in range(n)}
                elif len(rhs) == 1:
                    new = {(rule, p, q) for name, p, q in found if name == rhs[0]}
                else:
                    ends: dict[int, list[int]] = {}
                    for name, m, q in found:
                        if name == rhs[1]:
                            ends.setdefault(m, []).append(q)
                    new = {(rule, p, q) for name, p, m in found if name == rhs[0] for q in ends.get(m, ())}
                if not new <= found:
                    found |= new
                    changed = True
    return found
