"""Terminals of scalar values that recur in every schema, one ``ir.Terminal`` object each per process.

The DFA cache and the token-row cache are keyed by a terminal's language, so
the pieces every schema uses (a JSON string, a number, an integer range,
``true|false``, ``null``, a string of bounded length, a ``format``) are made
once per process and handed out as the same object: no schema rebuilds or
rehashes them, and every grammar that uses them hits the same cached
automaton and token rows. Each scalar type is a terminal of its own (a value
of type ``["integer", "null"]`` is the choice of two terminals, not a third
terminal for their union): the set of distinct terminals across schemas stays
small.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional

from ... import ir
from ._rx import alt, lit, rep, seq
from ._strings import CHAR, encode, quoted
from .formats import format_language
from .numbers import INTEGER, NUMBER, integer_range

STRING = ir.Terminal(quoted(rep(CHAR, 0, None)), name="string")
ANY_NUMBER = ir.Terminal(NUMBER, name="number")
ANY_INTEGER = ir.Terminal(INTEGER, name="integer")
BOOLEAN = ir.Terminal(alt(lit("true"), lit("false")), name="boolean")
NULL = ir.Terminal(lit("null"), name="null")
QUOTE = ir.Terminal(lit('"'), name="quote")


@lru_cache(maxsize=1024)
def integer_terminal(lo: Optional[int], hi: Optional[int]) -> Optional[ir.Terminal]:
    """Canonical integers in ``[lo, hi]`` (None: empty)."""
    if lo is None and hi is None:
        return ANY_INTEGER
    rx = integer_range(lo, hi)
    return None if rx is None else ir.Terminal(rx, name="integer")


@lru_cache(maxsize=1024)
def string_terminal(lo: int, hi: Optional[int]) -> ir.Terminal:
    """A whole JSON string of ``lo`` to ``hi`` code points (only for small bounds: see ``_long_strings``)."""
    if lo == 0 and hi is None:
        return STRING
    return ir.Terminal(quoted(rep(CHAR, lo, hi)), name="string")


@lru_cache(maxsize=1024)
def string_piece(lo: int, hi: Optional[int], closing: bool) -> ir.Terminal:
    """``lo`` to ``hi`` code points of a string body, with the closing quote or not."""
    body = rep(CHAR, lo, hi)
    if closing:
        return ir.Terminal(seq(body, lit('"')), name="string_tail")
    return ir.Terminal(body, name="string_chunk")


@lru_cache(maxsize=64)
def format_terminal(name: str) -> ir.Terminal:
    """A JSON string in a supported ``format``."""
    return ir.Terminal(quoted(encode(format_language(name))), name=name)
