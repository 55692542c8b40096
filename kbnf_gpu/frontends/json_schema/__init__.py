"""JSON Schema front end: a schema becomes an IR grammar of the JSON texts it accepts.

``parse_json_schema(schema, *, whitespace="flexible", max_whitespace=16,
indent=None, any_order=False, strict=True, registry=None) -> ir.Grammar``
(start rule ``root``, ``syntax="json_schema"``, ``end_mode="eos"``). The
``json_object`` syntax is ``parse_json_schema({"type": "object"}, ...)``.

Structure. Every reachable conjunction of subschemas gets one named rule
(``$ref``/``allOf`` are flattened into the conjunction, ``anyOf``/``oneOf``
become one alternative per branch; subschemas of annotations only, such as
the ``description`` beside a ``$ref``, drop out, so every reference to a
definition shares its rule), so recursive schemas are recursive rules and
nothing recurses in Python over the schema. Lexical pieces are terminals,
chosen to be cheap and shared (see ``_layout`` and ``_scalars``): each scalar
type is its own terminal (a string, a number, ``true|false``, ``null``), a
declared key is a literal terminal, the colon with its whitespace is one
terminal shared by every key, ``{``/``[`` carry the whitespace after them, a
counted string is made of a fixed set of chunk terminals; the same piece is
the same ``ir.Terminal`` object in every schema compiled in the process, so
automata and token rows built for one schema serve the next.

Documents (``_document``): ``$ref``s are resolved as ``jsonschema`` resolves
them, across the documents of ``registry`` (a ``referencing.Registry`` or a
mapping URI -> schema): relative URIs against the enclosing ``$id``s, JSON
pointer and anchor fragments, resources embedded by ``$id``. Other documents
are read lazily (only the definitions reached) and never fetched.

Exact (the grammar's language is exactly the valid texts, in the layout and
property order described below):

* types and type lists; ``true``/``{}`` (any value), ``false`` (nothing; a
  ``GrammarError`` if the root is unsatisfiable);
* ``properties``, ``required``, ``additionalProperties``, ``patternProperties``,
  ``propertyNames`` (its choices the union of their branches' names),
  ``minProperties``/``maxProperties`` (keys outside the
  declared names are matched by their *decoded* text, so ``"\\u0061"`` can
  never sneak in as an additional key when ``a`` is declared);
* ``items`` (schema or draft-7 array form with ``additionalItems``),
  ``prefixItems``, ``minItems``/``maxItems``;
* ``minLength``/``maxLength`` in code points (an escape, or a surrogate-pair
  escape, is one code point; lone surrogate escapes are never produced), also
  combined with ``pattern``/``format``: long strings are split into lexemes of
  16 code points, with rules that track the pattern's automaton state, so no
  lexeme's automaton grows with the length limit;
* integer ``minimum``/``maximum``/``exclusive*`` (any bounds, one-sided too),
  integer ``multipleOf`` (enumerated for small ranges, else a mod-k automaton);
* ``multipleOf`` n·10**k on ``number`` where n's prime factors are 2 and 5
  (``0.01``, ``0.5``, ``0.25``, ``5``, ``200``: the last digits decide, at most
  64 combinations of them): plain notation and exponents -10..10 exact, by
  arithmetic on the bounds per combination (``numbers.step_digits``); larger
  exponents are not generated;
* ``$ref`` to ``#``, ``#/$defs/..``, ``#/definitions/..`` (``~0 ~1`` and
  %-escapes), ``#anchor``, ``$id``-relative URIs and other documents of the
  registry, and the official metaschemas where ``jsonschema_specifications``
  (``jsonschema``'s) is installed; draft <= 7 (the root's ``$schema``, as ``jsonschema`` decides)
  ignores siblings of ``$ref`` as the spec says;
* ``allOf`` (a true conjunction, not a merge heuristic), ``anyOf``;
* ``not`` of one ``type``, ``const``, ``enum``, single-name ``required`` or
  ``pattern`` (annotations and unknown keywords aside, as outside ``not``),
  and of what ``_merge.negation`` writes out as the schema of the values
  that fail: a bound (``minimum``, ``maxLength``, ``minItems``...: the values
  of its type beyond it), ``properties`` of one name (``true`` there asserts
  nothing), ``contains`` (the arrays whose items all fail it), ``not``, and
  by De Morgan conjunctions of
  those, ``anyOf`` and ``allOf``; negated numbers cut the range into gaps
  around them, a negated ``integer`` next to ``number`` leaves the numbers
  whose value is no integer (both with every spelling as for bounds; the
  latter one lexeme per exponent, not with ``multipleOf``); a negated
  object/array value is refused (``strict``); a negated value or pattern
  beside a length limit past 32 is taken into the string's automaton and
  threaded with the lengths as a pattern is;
* ``dependentRequired``, ``dependentSchemas``, ``dependencies`` (three
  disjoint branches per name: not an object, an object without the name, an
  object with it and what it brings);
* ``if``/``then``/``else`` where the ``if`` can be negated (as for ``not``;
  ``properties`` of one name with ``required`` is the discriminator pattern):
  two disjoint branches;
  any ``if`` without ``then`` (``if`` or ``else``);
* ``contains`` with ``minContains``, and ``maxContains`` where the
  ``contains`` schema can be negated (as for ``not``), with ``prefixItems``,
  ``minItems``/``maxItems`` and up to 4 ``contains`` on one array (an
  automaton over the elements: position × count per ``contains``, at most
  4,096 states);
* ``unevaluatedProperties: false`` (members evaluated by the subschema, its
  ``$ref``s and ``allOf``s; members only an ``anyOf``/``oneOf`` branch
  evaluates are refused: sound, not complete there).

Approximate, but sound (every accepted text is valid):

* strings, keys included, are spelled as ``json.dumps`` spells them (with
  ``ensure_ascii`` on or off), character by character: printable ASCII raw
  (``"`` and ``\\`` as ``\\"``, ``\\\\``), a control character in any of its
  escapes (``\\n``, ``\\u000a``), DEL and everything past ASCII raw or as
  ``\\uXXXX`` in either case; a needless escape of printable ASCII
  (``\\u0061``, ``\\/``) is rejected (``_strings``: no serializer writes one,
  and admitting them made a pattern's automaton 5-9 times larger);
* strings with ``pattern``/``format``: the regex is
  applied to the decoded string with ``re.search`` semantics (see
  ``_pattern``: ``\\d`` ASCII, ``$`` only at the very end, ``.`` excluding all
  line terminators; lookaheads and lookbehinds exact anywhere, except a
  lookahead or ``$`` inside a lookbehind; ``\\b`` in both readings of its
  ``\\w``, ECMA's ASCII and Python's Unicode one; backreferences are refused);
* ``format``: see ``formats`` (e.g. the 253-character hostname limit is not
  enforced); OpenAPI's ``int8``...``int64``/``uint8``...``uint64`` bound
  integers and ``byte`` is base64 (``jsonschema`` checks neither);
  ``regex`` is a grammar of the syntax ECMA-262 and Python's ``re`` share
  (``_regex_format``: groups, classes, lookaheads, quantifiers; no
  backreferences, named groups or lookbehinds), beside a ``pattern`` or
  length limits its product with their automaton (at most 12 states:
  GitLab CI's ``^/.+/$``), never beside another format or a ``not``;
* member keys that no lexeme of ``max_dfa_states`` holds
  (``propertyNames: {"maxLength": 1024}``) are left out with a warning;
* ``enum``/``const`` values and declared keys are written as ``json.dumps``
  writes them (with ``ensure_ascii`` on or off); other escapings of the same
  text are rejected; numbers in their ``json.dumps`` form;
* ``type: integer`` is plain integers (no ``1.0``, no ``-0``); number bounds
  are exact in plain decimal notation, for every spelling of zero (``-0.0``)
  and for exponents from -10 to 10 (``1e-9``, ``1E+2``, ``0.5e1``); larger
  exponents only where they provably stay in range (``numbers``); a number
  with an integer ``multipleOf`` that has a prime factor other than 2 and 5
  (3, 12) is written as an integer; ``multipleOf`` k on an integer range is
  exact when k = 2**a * 5**b (the last digits), on 0 and whole half-lines for
  k <= 1000 (one rule per residue), on other ranges for k <= 12, else refused
  (``strict``) or dropped with a warning;
* ``any_order=True`` is exact for up to 8 declared properties; beyond, order
  is free within consecutive blocks of 8 (a warning says so). Additional
  members come after the declared ones in schema order, and anywhere with
  ``any_order``;
* ``indent=N``: a subschema is laid out at no more than 16 distinct depths
  (recursion deeper than that cannot open more containers).

Not sound (warned): ``oneOf`` is treated as ``anyOf`` unless its branches are
provably disjoint (types, const/enum values, or a required discriminator
property), after ``null``/booleans that several branches accept outright are
dropped from all of them (exact: such a value can match no single branch); ``uniqueItems`` is not enforced; JSON objects with a repeated
*additional* key (which a parser collapses) can slip past
``minProperties``. Declared keys can never repeat.

Hostile input (#13): counted repetitions (``minLength``, ``minItems``) of any
size cost O(log n) rules (doubling); the combinations of ``anyOf``/``oneOf``
branches of a subschema are limited by ``CompileConfig.max_schema_branches``,
one enum/const value by ``max_dfa_states`` (values are cut into several
terminals past half of it), the whole build by ``time_budget_s``; lone
surrogates in names or values, non-finite numbers and keywords of the wrong
type are ``GrammarError``s with the JSON pointer (``error.pointer``).

Unsupported keywords (other ``not`` and ``if`` forms, ``maxContains`` of a ``contains`` that cannot be negated, ``unevaluatedItems``,
``unevaluatedProperties`` other than ``false``,
a ``$dynamicRef`` whose target the evaluation path decides (one is served where
the root resource declares its ``$dynamicAnchor``, or it lands on no dynamic
anchor), ``$recursiveRef``, a non-integer ``multipleOf`` with a prime factor other than
2 and 5 (``0.3``), a ``$ref`` to a document not in
the registry, the
``idn-hostname`` format, ``regex`` beside other string keywords, unsupported regex syntax) raise
``GrammarError`` naming the keyword and its JSON pointer
(``"unsupported keyword 'not' at '/properties/a/not'"``); with
``strict=False`` they are ignored with a ``JsonSchemaWarning``. Unknown
keywords and annotations (``title``, ``description``, ``default``,
``examples``, ``$comment``, ``$schema``, ``$id``...) are ignored, as
validators do.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import localcontext
from typing import Optional, Union

from ...budget import compile_budget
from ...errors import GrammarError
from ...ir import Grammar
from ._builder import Builder
from ._document import Document, JsonSchemaWarning, check_registry
from ._layout import Layout
from .numbers import EXACT

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
    registry: Optional[Mapping] = None,
) -> Grammar:
    """Read a JSON Schema (text, dict or boolean) into a grammar of the JSON texts it accepts.

    * ``whitespace``: ``"flexible"`` (default; at most ``max_whitespace``
      characters of ``[ \\t\\n\\r]`` in each gap between tokens and around the
      root value) or ``"compact"`` (none).
    * ``indent``: when set, exactly the layout of ``json.dumps(v, indent=indent)``
      (overrides ``whitespace``).
    * ``any_order``: declared properties in any order (each at most once);
      by default they come in schema order, optional ones skippable.
    * ``registry``: the other documents ``$ref`` may point into, as a
      ``referencing.Registry`` or a mapping URI -> schema (nothing is ever
      fetched; a ``$ref`` to a document found nowhere raises ``GrammarError``).
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
    registry = check_registry(registry)
    if not isinstance(schema, (dict, bool)):
        raise GrammarError(f"a schema must be an object or a boolean, got {type(schema).__name__}")
    with compile_budget(), localcontext(EXACT):  # the caller's budget, or the default limits on its own
        doc = Document(schema, strict, registry)
        layout = Layout(whitespace, max_whitespace, indent)
        grammar = Builder(doc, layout, any_order).build()
    if source:
        grammar = Grammar(grammar.rules, grammar.start, grammar.syntax, grammar.end_mode, source)
    return grammar
