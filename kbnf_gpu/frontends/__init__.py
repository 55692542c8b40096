"""Front ends: each grammar language is read into the one IR (``kbnf_gpu.ir.Grammar``).

Nothing downstream knows which syntax a grammar came from.
"""
from __future__ import annotations

from typing import Any

from ..budget import compile_budget
from ..errors import GrammarError
from ..ir import Grammar

SYNTAXES = ("kbnf", "gbnf", "lark", "regex", "json_schema", "json_object")


def parse_grammar(source: Any, syntax: str = "kbnf", *, start: str | None = None, **options: Any) -> Grammar:
    """Read ``source`` written in ``syntax`` into the IR.

    ``options`` are passed to the front end (JSON Schema takes whitespace and
    ordering options; the others take none). Runs under the compilation's
    budget (``kbnf_gpu.budget``), or the default limits when called on its own.
    """
    with compile_budget():
        return _parse(source, syntax, start, options)


def _parse(source: Any, syntax: str, start: str | None, options: dict) -> Grammar:
    if syntax == "kbnf":
        from .kbnf import parse_kbnf

        return parse_kbnf(source, start=start or "start", **options)
    if syntax == "gbnf":
        from .gbnf import parse_gbnf

        return parse_gbnf(source, start=start or "root", **options)
    if syntax == "lark":
        from .lark import parse_lark

        return parse_lark(source, start=start or "start", **options)
    if syntax == "regex":
        from .regex import parse_regex

        return parse_regex(source, **options)
    if syntax == "json_schema":
        from .json_schema import parse_json_schema

        return parse_json_schema(source, **options)
    if syntax == "json_object":
        from .json_schema import parse_json_schema

        return parse_json_schema({"type": "object"}, **options)
    raise GrammarError(f"unknown syntax {syntax!r}; expected one of {', '.join(SYNTAXES)}")
