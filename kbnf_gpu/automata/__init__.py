"""Terminals -> trimmed, minimized, canonical byte-level DFAs.

``build_dfa`` compiles an ``ir.Terminal`` (its KBNF kind applied, see
``kinds``); ``regexpr_to_dfa`` compiles a bare ``ir.RegExpr``; the ``dfa_*``
combinators build unions, concatenations and repeats of finished DFAs.
"""
from __future__ import annotations

from .build import build_dfa, dfa_concat, dfa_literal, dfa_repeat, dfa_union, regexpr_to_dfa
from .dfa import ByteDFA

__all__ = [
    "ByteDFA",
    "build_dfa",
    "dfa_concat",
    "dfa_literal",
    "dfa_repeat",
    "dfa_union",
    "regexpr_to_dfa",
]
