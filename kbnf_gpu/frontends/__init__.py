"""Front ends: each grammar language is read into the one IR (``kbnf_gpu.ir.Grammar``).

Nothing downstream knows which syntax a grammar came from.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from ..budget import compile_budget
from ..errors import GrammarError, OptionError
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

        return _call(parse_kbnf, syntax, options, source, start=start or "start")
    if syntax == "gbnf":
        from .gbnf import parse_gbnf

        return _call(parse_gbnf, syntax, options, source, start=start or "root")
    if syntax == "lark":
        from .lark import parse_lark

        return _call(parse_lark, syntax, options, source, start=start or "start")
    if syntax == "regex":
        from .regex import parse_regex

        return _call(parse_regex, syntax, options, source)
    if syntax == "json_schema":
        from .json_schema import parse_json_schema

        return _call(parse_json_schema, syntax, options, source)
    if syntax == "json_object":
        from .json_schema import parse_json_schema

        return _call(parse_json_schema, syntax, options, {"type": "object"})
    raise GrammarError(f"unknown syntax {syntax!r}; expected one of {', '.join(SYNTAXES)}")


def _call(front_end: Callable[..., Grammar], syntax: str, options: dict, *args: Any, **fixed: Any) -> Grammar:
    """``front_end(*args, **fixed, **options)``, after checking that it takes every option (a clear error, not
    a ``TypeError`` from the call)."""
    params = list(inspect.signature(front_end).parameters.values())[len(args):]  # past the source
    takes = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in fixed]
    unknown = sorted(set(options) - set(takes))
    if unknown:
        hint = " (compile limits and budgets go in config=CompileConfig(...))" if any(
            name.startswith(("max_", "time_budget")) for name in unknown) else ""
        raise OptionError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} for "
                          f"syntax {syntax!r}; it takes {', '.join(takes) or 'none'}{hint}")
    return front_end(*args, **fixed, **options)
