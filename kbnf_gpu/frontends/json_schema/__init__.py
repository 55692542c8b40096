"""JSON Schema front end: a schema becomes an IR grammar of its valid JSON texts.

``parse_json_schema(schema, whitespace=..., max_whitespace=..., indent=...,
any_order=..., strict=...)``; see ``parse_json_schema`` for the options and the
module docs of ``numbers``, ``formats``, ``_pattern``, ``_strings``,
``_layout`` and ``_objects`` for what is exact and what is approximated.
"""
from __future__ import annotations

import json
from typing import Any, Optional, Union

from ...errors import GrammarError
from ...ir import Grammar
from ._builder import Builder
from ._document import JsonSchemaWarning, Document
from ._layout import Layout

DEFAULT_MAX_WHITESPACE = 16

__all__ = ["DEFAULT_MAX_WHITESPACE", "JsonSchemaWarning", "parse_json_schema"]


def parse_json_schema(
    schema: Union[str, bytes, dict, bool],
    *,
    whitespace: str = "flexible",
    max_whitespace: int = DEFAULT_MAX_WHITESPACE,
    indent: Optional[int] = None,
    any_order: bool = False,
    strict: bool = True,
) -> Grammar:
    """Read a JSON Schema (text, dict or boolean) into a grammar of the JSON texts it accepts.

    * ``whitespace``: ``"flexible"`` (default; at most ``max_whitespace``
      characters of ``[ \\t\\n\\r]`` in each gap between tokens and around the
      root value) or ``"compact"`` (none).
    * ``indent``: when set, exactly the layout of ``json.dumps(v, indent=indent)``
      (overrides ``whitespace``).
    * ``any_order``: declared properties in any order (each at most once);
      by default they come in schema order, optional ones skippable.
    * ``strict``: unsupported keywords raise ``GrammarError`` naming the
      keyword and its JSON pointer; with ``strict=False`` they are ignored with
      a ``JsonSchemaWarning``.

    The start rule is ``root``; ``end_mode`` is ``"eos"``.
    """
    if isinstance(schema, (bytes, bytearray)):
        schema = schema.decode("utf-8")
    source = schema if isinstance(schema, str) else ""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except (ValueError, RecursionError) as e:
            raise GrammarError(f"the schema is not valid JSON: {e}") from None
    if not isinstance(schema, (dict, bool)):
        raise GrammarError(f"a schema must be an object or a boolean, got {type(schema).__name__}")
    doc = Document(schema, strict)
    layout = Layout(whitespace, max_whitespace, indent)
    grammar = Builder(doc, layout, any_order).build()
    if source:
        grammar = Grammar(grammar.rules, grammar.start, grammar.syntax, grammar.end_mode, source)
    return grammar
