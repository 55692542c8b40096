"""Terminals -> trimmed, minimized, canonical byte-level DFAs.

``build_dfa`` compiles an ``ir.Terminal`` with its KBNF kind applied;
``regexpr_to_dfa`` compiles a bare ``ir.RegExpr``; the ``dfa_*`` combinators
build unions, concatenations and repeats of finished DFAs.

Modules: ``utf8`` (code points -> UTF-8 byte ranges), ``charset`` (code point
sets, ``re``'s categories and case folding), ``regex`` (Python ``re`` syntax ->
expression tree), ``nfa`` (Thompson construction), ``dfa`` (``ByteDFA``,
determinize, trim, minimize, canonical numbering), ``kinds`` (the exact
meaning of KBNF ``#e``, ``#ex`` and ``#substrs``, as observed in ``kbnf``).
"""
from __future__ import annotations

from .build import build_dfa, dfa_concat, dfa_literal, dfa_literal_union, dfa_repeat, dfa_union, regexpr_to_dfa
from .dfa import ByteDFA

__all__ = [
    "ByteDFA",
    "build_dfa",
    "dfa_concat",
    "dfa_literal",
    "dfa_literal_union",
    "dfa_repeat",
    "dfa_union",
    "regexpr_to_dfa",
]
