"""``format: regex``: a string that is itself a regular expression, as a context-free grammar.

Which strings are regexes is not a regular language (groups nest), so no
lexeme can hold it; it is a few rules over one-unit lexemes (a character, an
escape, a quantifier, a class range) inside the string's quotes, one Earley
step per unit.

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
from typing import TYPE_CHECKING

from ... import ir
from . import _charset as cs
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


def regex_string(b: "Builder") -> ir.Expr:
    """A JSON string that is a regular expression (see the module): one set of rules per schema."""
    if b.regex_rule is None:
        t = {name: b.term(rx if name == "quote" else encode(rx), f"regex_{name}") for name, rx in units().items()}
        disjunction, alternative, term, atom, klass, body = (
            b.fresh(f"regex_{n}") for n in ("disjunction", "alternative", "term", "atom", "class", "string"))
        ref = ir.Ref
        b.add_rule(disjunction, [ir.Sequence((ref(alternative), ir.Repetition(
            ir.Sequence((t["bar"], ref(alternative))), 0, None)))])
        b.add_rule(alternative, [ir.Repetition(ref(term), 0, None)])
        b.add_rule(term, [t["assertion"], ir.Sequence((t["look"], ref(disjunction), t["close"])),
                          ir.Sequence((ref(atom), ir.Repetition(t["quantifier"], 0, 1)))])
        b.add_rule(atom, [t["char"], t["dot"], t["escape"], ref(klass),
                          ir.Sequence((t["open"], ref(disjunction), t["close"])),
                          ir.Sequence((t["open_group"], ref(disjunction), t["close"]))])
        caret = ir.Repetition(t["caret"], 0, 1)
        hyphen = ir.Repetition(t["hyphen"], 0, 1)
        # a ``^`` first is the negation (``[^]``: any character to ECMA, unterminated to Python), later itself
        more = ir.Repetition(ir.Choice((t["class_item"], t["caret"])), 0, None)
        b.add_rule(klass, [ir.Sequence((t["class_open"], caret, t["hyphen"], t["class_close"])),
                           ir.Sequence((t["class_open"], caret, hyphen, t["class_item"], more, hyphen,
                                        t["class_close"]))])
        b.add_rule(body, [ir.Sequence((t["quote"], ref(disjunction), t["quote"]))])
        b.regex_rule = body
    return ir.Ref(b.regex_rule)
