"""More schema keywords (issue #15 item 5), brute force against ``jsonschema``.

``unevaluatedProperties: false``: every value of a fixed set of objects is complete exactly when
``jsonschema`` says it is valid (``any_order=True``, so member order plays no part), except where only an
``anyOf``/``oneOf`` branch evaluates a member: there the grammar is sound (never accepts an invalid value).
"""
from __future__ import annotations

import itertools
import json
import random
import warnings
from typing import Any

import jsonschema
import pytest

from kbnf_gpu.check import check_parser
from kbnf_gpu.frontends.json_schema import parse_json_schema
from kbnf_gpu.normalize import normalize
from kbnf_gpu.runtime.earley import EarleyParser

VALUES: list[Any] = [
    {}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"c": "s"}, {"a": 1, "c": "s"}, {"x1": 1}, {"x1": "s"},
    {"a": 1, "x1": 2}, {"z": 1}, {"q": 1}, {"a": "s"}, {"a": 1, "b": 2, "c": "s"}, [], 3,
]

EXACT = [
    {"type": "object", "properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False},
    {"type": "object", "allOf": [{"properties": {"a": {"type": "integer"}}}], "properties": {"b": {}},
     "unevaluatedProperties": False},
    {"$defs": {"base": {"properties": {"a": {"type": "integer"}}, "required": ["a"]}}, "$ref": "#/$defs/base",
     "properties": {"c": {"type": "string"}}, "unevaluatedProperties": False},
    # the inner false sees only its own subschema: "b" is unevaluated there
    {"allOf": [{"properties": {"a": {}}, "unevaluatedProperties": False}], "properties": {"b": {}}},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "unevaluatedProperties": False},
    {"type": "object", "properties": {"a": {}}, "patternProperties": {"^x": {}}, "unevaluatedProperties": False},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"},
     "unevaluatedProperties": False},
    {"properties": {"a": {}}, "unevaluatedProperties": True},
    {"properties": {"a": {}}, "required": ["a", "b"], "unevaluatedProperties": False, "type": "object"},
]
SOUND = [
    {"type": "object", "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}],
     "unevaluatedProperties": False},
]


def _check(schema: dict, exact: bool, values: list[Any] = VALUES) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    try:
        parser = EarleyParser(normalize(parse_json_schema(schema, any_order=True)))
    except ValueError as e:
        assert "unsatisfiable" in str(e)
        assert not any(validator.is_valid(v) for v in values)
        return
    for v in values:
        got = check_parser(parser, json.dumps(v)).status == "complete"
        valid = validator.is_valid(v)
        assert got == valid if exact else (valid or not got), (schema, v, got, valid)


@pytest.mark.parametrize("schema", EXACT, ids=[f"exact{i}" for i in range(len(EXACT))])
def test_unevaluated_properties_false_exact(schema: dict) -> None:
    _check(schema, exact=True)


@pytest.mark.parametrize("schema", SOUND, ids=[f"sound{i}" for i in range(len(SOUND))])
def test_unevaluated_properties_false_sound(schema: dict) -> None:
    _check(schema, exact=False)


NOT_VALUES: list[Any] = [None, True, False, 0, 1.5, "", "a", "b", "ab", "x", "xc", "abc", "abcd", [], [1], {},
                         {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, 1, 3, -2, 2.5, 20]
NOT_EXACT = [
    {"not": {"type": "string"}},
    {"not": {"type": ["object", "array", "number"]}},
    {"type": "string", "not": {"const": "a"}},
    {"not": {"enum": ["a", "b", None, True], "description": "annotations do not count"}},
    {"type": "object", "not": {"required": ["a"]}},
    {"not": {"required": ["a"]}},
    {"not": {"pattern": "b"}},
    {"type": "object", "properties": {"b": {"type": "integer"}}, "not": {"required": ["a"]}},
    {"type": "string", "not": {"pattern": "^x"}},
    {"enum": ["a", "b", "xc", 1], "not": {"pattern": "^x"}},
    {"type": "string", "maxLength": 3, "not": {"enum": ["", "ab"]}},
    {"type": "string", "pattern": "b", "not": {"const": "ab"}},
    {"not": {"required": []}},
    {"not": True},
    {"not": False},
    # numbers: the range cut into gaps around the values
    {"type": "number", "not": {"const": 1.5}},
    {"type": "integer", "not": {"enum": [0, 3, 2.5]}},
    {"not": {"enum": [1, "a", None]}, "minimum": 0},
    {"type": "number", "multipleOf": 0.5, "maximum": 2.5, "not": {"enum": [1.5, 2.5]}},
    {"not": {"type": "integer"}},
    {"type": "number", "minimum": -2, "exclusiveMaximum": 2.5, "not": {"type": "integer"}},
    # written out as the schema of what fails: bounds, and by De Morgan conjunctions, anyOf, allOf
    {"not": {"type": "string", "minLength": 2}},
    {"not": {"minimum": 2}},
    {"not": {"maxItems": 0, "type": "array"}},
    {"not": {"not": {"type": "string", "maxLength": 1}}},
    {"type": "object", "not": {"required": ["a", "b"]}},
    {"not": {"properties": {"a": {"type": "integer"}, "b": {"const": 2}}, "required": ["a"]}},
    {"not": {"anyOf": [{"type": "string"}, {"exclusiveMaximum": 2}]}},
    {"not": {"allOf": [{"required": ["a"]}, {"maxProperties": 1}]}},
    {"not": {"minProperties": 0}},
    # GitHub Actions' composite steps: a property that may be anything asserts nothing; unknown keywords
    # (CircleCI's markdownDescription) are annotations inside 'not' as outside it; a property that may not be
    {"type": "object", "oneOf": [{"required": ["a"]}, {"not": {"properties": {"a": True}, "required": ["a"]}}]},
    {"not": {"markdownDescription": "x", "allOf": [{"required": ["a"]}, {"required": ["b"]}]}},
    {"not": {"properties": {"a": False}}},
    {"not": {"properties": {"b": {"description": "only annotations"}}}},
    {"not": {"properties": {"a": {"not": {"const": 1}}}, "x-unknown": {"type": "string"}}},
    {"not": {"x-unknown": 1}},
    # an array fails 'contains' when no item matches: its negation is 'items' of the item's negation
    {"not": {"contains": {"const": 1}}},
    {"not": {"contains": True}},
    {"not": {"contains": False}},
    {"not": {"contains": {"type": "string", "maxLength": 1}}},
]


@pytest.mark.parametrize("schema", NOT_EXACT, ids=[f"not{i}" for i in range(len(NOT_EXACT))])
def test_not_exact(schema: dict) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    try:
        parser = EarleyParser(normalize(parse_json_schema(schema, any_order=True)))
    except ValueError as e:
        assert "unsatisfiable" in str(e) and not any(validator.is_valid(v) for v in NOT_VALUES)
        return
    for v in NOT_VALUES:
        got = check_parser(parser, json.dumps(v)).status == "complete"
        assert got == validator.is_valid(v), (schema, v, got)


def test_not_beside_a_long_length_limit_is_exact() -> None:
    """Buildkite's step keys: a class, at most 100 code points, not a UUID and not holding ``{{matrix``: the
    negations are taken into the string's automaton, threaded with the length as a pattern is (once
    refused: a length past 32 beside ``not``); strings at and around the limit, against ``jsonschema``."""
    schema = {"type": "string", "maxLength": 100, "pattern": "^[a-zA-Z0-9_\\-:${}]+$",
              "not": {"anyOf": [{"pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"},
                                {"pattern": "\\{\\{matrix"}]}}
    validator = jsonschema.Draft202012Validator(schema)
    parser = EarleyParser(normalize(parse_json_schema(schema)))
    uuid = "0123abcd-0123-4567-89ab-0123456789ab"
    rnd = random.Random(7)
    texts = [uuid, uuid + "x", "x" + uuid, "a{{matrix}}", "{{matri", "a" * 100, "a" * 101, "a" * 99 + "é",
             "b" * 91 + "{{matrix", "b" * 92 + "{{matrix", "", "{}"]
    texts += ["".join(rnd.choice("ab-{}m0") for _ in range(rnd.choice([5, 30, 99, 100, 101]))) for _ in range(60)]
    for text in texts:
        got = check_parser(parser, json.dumps(text)).status == "complete"
        assert got == validator.is_valid(text), (text, got)


@pytest.mark.parametrize(
    "schema,pointer",
    [
        ({"not": {"type": "string", "format": "email"}}, "/not"),
        ({"not": {"items": {"type": "string"}}}, "/not"),
        ({"type": "number", "multipleOf": 0.5, "not": {"type": "integer"}}, "/multipleOf"),
        ({"type": "object", "not": {"const": {"a": 3}}}, "/not/const"),
    ],
)
def test_not_unsupported_forms_are_refused_with_the_pointer(schema: dict, pointer: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_json_schema(schema)
    assert info.value.pointer == pointer, str(info.value)


DEP_VALUES: list[Any] = [None, 1, "s", [], {}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"b": "x"}, {"a": 1, "b": "x"},
                         {"c": 1}, {"a": 1, "c": 1}, {"a": 1, "b": 2, "c": 3}, {"b": 1, "c": 2}]
DEPENDENCIES = [
    {"dependentRequired": {"a": ["b"]}},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}, "c": {}},
     "dependentRequired": {"a": ["b"], "c": ["a"]}},
    {"type": "object", "dependentSchemas": {"a": {"properties": {"b": {"type": "integer"}}, "required": ["b"]}}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"], "b": {"required": ["c"]}}},
    {"dependentSchemas": {"a": False}},
    {"$defs": {"s": {"required": ["c"]}}, "dependentSchemas": {"b": {"$ref": "#/$defs/s"}}},
]


@pytest.mark.parametrize("schema", DEPENDENCIES, ids=[f"dep{i}" for i in range(len(DEPENDENCIES))])
def test_dependencies_exact(schema: dict) -> None:
    """dependentRequired/dependentSchemas/dependencies: three disjoint branches per name (not an object; an
    object without the name; with it and what it brings)."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    parser = EarleyParser(normalize(parse_json_schema(schema, any_order=True)))
    for v in DEP_VALUES:
        got = check_parser(parser, json.dumps(v)).status == "complete"
        assert got == validator.is_valid(v), (schema, v, got)


def test_dependency_values_of_the_wrong_type_are_refused() -> None:
    for schema, pointer in [({"dependentRequired": {"a": "b"}}, "/dependentRequired/a"),
                            ({"dependentSchemas": {"a": ["b"]}}, "/dependentSchemas/a"),
                            ({"dependentRequired": ["a"]}, "/dependentRequired")]:
        with pytest.raises(ValueError) as info:
            parse_json_schema(schema)
        assert info.value.pointer == pointer, str(info.value)


CONTAINS_VALUES: list[Any] = [None, 1, "s", [], [1], ["a"], ["ab"], [1, "a"], ["a", 1], [1, 2], ["a", 1, "b", 2],
                              [[1]], [True, "ab", 1], [1, 1, 1]]
CONTAINS = [
    {"contains": {"type": "integer"}},
    {"type": "array", "items": {"type": ["integer", "string"]}, "contains": {"type": "integer"}, "minContains": 2},
    {"contains": {"const": 1}, "minContains": 0},
    {"type": "array", "contains": {"type": "string", "minLength": 2}},
    {"items": {"type": "string"}, "contains": {"type": "integer"}},
]


MAX_CONTAINS = [
    {"contains": {"type": "string"}, "maxContains": 2},
    {"contains": {"type": "string"}, "minContains": 2, "maxContains": 3},
    {"contains": {"type": "string"}, "minContains": 0, "maxContains": 0},
    {"type": "array", "items": {"type": ["integer", "string"]}, "contains": {"const": "a"}, "maxContains": 1},
    {"contains": {"type": "string"}, "minContains": 3, "maxContains": 2},
    {"items": {"type": "string"}, "contains": {"type": "string"}, "maxContains": 1},
]
ELEMENTS = [1, "a", None]
MAX_CONTAINS_VALUES: list[Any] = [None, "s", 5] + [list(t) for n in range(5) for t in itertools.product(ELEMENTS, repeat=n)]


# with the length bounds, prefixItems and several contains: every array of up to 4 elements
COUNTED_CONTAINS = [
    {"contains": {"type": "string"}, "minItems": 2},
    {"contains": {"type": "string"}, "minContains": 2, "maxItems": 3},
    {"contains": {"type": "null"}, "maxContains": 1, "minItems": 1, "maxItems": 3},
    {"prefixItems": [{"type": "integer"}], "contains": {"type": "integer"}, "minContains": 2},
    {"prefixItems": [{"type": "string"}, {"type": "null"}], "items": {"type": "integer"}, "contains": {"type": "string"},
     "maxContains": 1},
    {"prefixItems": [{}, {}, {}], "items": False, "contains": {"type": "null"}},
    {"allOf": [{"contains": {"type": "string"}}, {"contains": {"type": "null"}, "maxContains": 1}]},
    {"allOf": [{"contains": {"type": "string"}, "minContains": 2}, {"contains": {"type": "null"}}], "maxItems": 3},
    {"contains": {"const": "a"}, "minContains": 0, "maxContains": 1, "minItems": 3},
    {"contains": {"type": "string"}, "minItems": 3, "maxItems": 2},
    {"contains": {"type": "string", "minLength": 1}, "maxContains": 1},
]


ALL_CONTAINS = CONTAINS + MAX_CONTAINS + COUNTED_CONTAINS


@pytest.mark.parametrize("schema", ALL_CONTAINS, ids=[f"contains{i}" for i in range(len(ALL_CONTAINS))])
def test_contains_exact(schema: dict) -> None:
    """An automaton over the elements: position × count per ``contains`` (X∧C counted; with ``maxContains``
    the others are X∧¬C); every array of up to 4 elements."""
    validator = jsonschema.Draft202012Validator(schema)
    parser = EarleyParser(normalize(parse_json_schema(schema)))
    for v in CONTAINS_VALUES + MAX_CONTAINS_VALUES:
        got = check_parser(parser, json.dumps(v)).status == "complete"
        assert got == validator.is_valid(v), (schema, v, got)


def test_contains_unsupported_forms() -> None:
    for schema in ({"contains": {"items": {"type": "string"}}, "maxContains": 2},
                   {"contains": {"const": [1]}, "maxContains": 1},  # its negation fails: named by the user's pointer
                   {"contains": {"type": "string"}, "minContains": 5, "minItems": 2000}):
        with pytest.raises(ValueError) as info:
            parse_json_schema(schema)
        assert info.value.pointer == "/contains", str(info.value)


IF_VALUES: list[Any] = [None, True, 3, 4, "s", "st", [], {}, {"kind": "x"}, {"kind": "x", "a": 1},
                        {"kind": "y", "b": 1}, {"kind": "y", "a": 1}, {"a": 1}, {"b": 1}, {"kind": 1, "b": 2},
                        [{"a": 1}], [{"a": 1}, {}], [{}, {}], [{"a": 2}, 1]]
IFS = [
    {"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}},
    {"type": "object", "properties": {"kind": {"type": "string"}, "a": {}, "b": {}},
     "if": {"properties": {"kind": {"const": "x"}}, "required": ["kind"]}, "then": {"required": ["a"]},
     "else": {"required": ["b"]}},
    {"type": "object", "if": {"properties": {"kind": {"const": "x"}}}, "then": {"required": ["a"]}},
    {"if": {"required": ["a"]}, "else": {"const": 3}},
    {"if": True, "then": {"type": "null"}},
    {"if": False, "then": {"type": "null"}, "else": {"type": "boolean"}},
    {"then": {"type": "null"}},
    # an 'if' no negation can write: without 'then' it is 'if' or 'else', without both nothing
    {"if": {"type": "object", "minProperties": 2}, "else": {"type": "string", "maxLength": 1}},
    {"if": {"type": "object", "minProperties": 2}},
    # and with 'then', once the negation of the 'if' is written out
    {"if": {"type": "object", "minProperties": 2}, "then": {"required": ["a"]}, "else": {"type": ["string", "null"]}},
    {"if": {"minimum": 4}, "then": {"multipleOf": 2}, "else": {"type": "string", "maxLength": 1}},
    # Read the Docs' install list: one entry when an entry is the "uv" method
    {"type": "array", "if": {"contains": {"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"]}},
     "then": {"maxItems": 1}},
]


@pytest.mark.parametrize("schema", IFS, ids=[f"if{i}" for i in range(len(IFS))])
def test_if_then_else_exact(schema: dict) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    parser = EarleyParser(normalize(parse_json_schema(schema, any_order=True)))
    for v in IF_VALUES:
        got = check_parser(parser, json.dumps(v)).status == "complete"
        assert got == validator.is_valid(v), (schema, v, got)


def test_if_that_cannot_be_negated_is_refused() -> None:
    for schema in ({"if": {"items": {"type": "string"}}, "then": {"required": ["a"]}},
                   {"if": {"const": [1]}, "then": {"minimum": 3}}):  # a negation that fails while expanded
        with pytest.raises(ValueError) as info:
            parse_json_schema(schema)
        assert info.value.pointer == "/if", str(info.value)


NAMES_VALUES: list[Any] = [{}, {"a": 1}, {"ab": 1}, {"x-1": 2}, {"b": 1, "ab": 2}, {"abc": 1}, {"x-": 1}, {"zz": 1},
                           {"a": 1, "x-2": 3}, {"": 0}]
PROPERTY_NAMES = [
    {"type": "object", "propertyNames": {"anyOf": [{"maxLength": 1}, {"pattern": "^x-"}]}},
    {"type": "object", "propertyNames": {"oneOf": [{"enum": ["a", "ab"]}, {"pattern": "^x-[0-9]+$"}]}},
    {"type": "object", "propertyNames": {"not": {"maxLength": 1}}},
    {"type": "object", "propertyNames": {"if": {"minLength": 2}, "then": {"pattern": "^x"}, "else": {"const": "a"}}},
]


@pytest.mark.parametrize("schema", PROPERTY_NAMES, ids=[f"names{i}" for i in range(len(PROPERTY_NAMES))])
def test_property_names_with_choices_exact(schema: dict) -> None:
    """``propertyNames`` whose schema branches (anyOf, oneOf, if, a written-out not): the union of the
    branches' name languages."""
    validator = jsonschema.Draft202012Validator(schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a oneOf whose branches are not provably disjoint says so
        parser = EarleyParser(normalize(parse_json_schema(schema, any_order=True)))
    for v in NAMES_VALUES:
        got = check_parser(parser, json.dumps(v)).status == "complete"
        assert got == validator.is_valid(v), (schema, v, got)


ENUM_VALUES: list[Any] = ["a", "b", "c", "ab", "x@1", "x@2", "y@1", 1, 2, True, None, [], {}, "A", 0, "x@3"]
ENUM_CHOICES = [
    {"anyOf": [{"enum": ["a", "b"]}, {"const": "c"}, {"enum": ["b", 1], "description": "annotations aside"}]},
    {"oneOf": [{"enum": ["a", "b"]}, {"const": "b"}, {"enum": [1, "c"]}, {"const": 1.0}]},  # 1 == 1.0: in two
    {"oneOf": [{"const": "a"}, {"const": "a"}]},  # every value in two branches: nothing
    {"anyOf": [{"enum": []}, {"enum": []}]},
    # a pattern beside a choice of names (azure-pipelines' tasks): one enum, validated against the pattern
    {"type": "string", "pattern": "^x@", "anyOf": [{"enum": ["x@1", "y@1"]}, {"const": "x@2"}, {"const": "ab"}]},
    {"allOf": [{"anyOf": [{"pattern": "^x"}, {"pattern": "^y"}]}, {"oneOf": [{"const": "x@1"}, {"const": "y@1"},
                                                                            {"const": "c"}]}]},
    # not a choice of enums (a branch with another keyword): distributed as before
    {"anyOf": [{"enum": ["a", "b"]}, {"type": "integer"}]},
    {"not": {"anyOf": [{"const": "a"}, {"const": 2}]}, "type": ["string", "integer"]},
]


@pytest.mark.parametrize("schema", ENUM_CHOICES, ids=[f"enums{i}" for i in range(len(ENUM_CHOICES))])
def test_choices_of_enums_exact(schema: dict) -> None:
    """An ``anyOf``/``oneOf`` whose branches are all ``enum``/``const`` is one enum (``oneOf``: the values of
    exactly one branch), brute force against ``jsonschema``."""
    _check(schema, True, ENUM_VALUES)


def test_a_pattern_beside_many_enum_branches_is_one_rule_not_one_per_branch() -> None:
    """A conjunction of a pattern and an ``anyOf`` of ``n`` consts was ``n`` rules (each validating its value
    against the pattern, most of them empty); as one enum it is one terminal, and it needs no
    ``max_schema_branches`` room (a product of two such choices would pass it)."""
    names = [f"task{i}@1" for i in range(300)]
    schema = {"type": "object", "additionalProperties": False, "required": ["a", "b"], "properties": {
        "a": {"pattern": "^task1", "anyOf": [{"const": n} for n in names]},
        "b": {"allOf": [{"anyOf": [{"const": n} for n in names]}, {"anyOf": [{"enum": [n]} for n in names]}]}}}
    grammar = parse_json_schema(schema)
    assert len(grammar.rules) < 40, len(grammar.rules)
    parser = EarleyParser(normalize(grammar))
    validator = jsonschema.Draft202012Validator(schema)
    for a, b in (("task1@1", "task7@1"), ("task12@1", "task299@1"), ("task2@1", "task7@1"), ("task1@1", "x")):
        text = json.dumps({"a": a, "b": b}, separators=(",", ":"))
        assert (check_parser(parser, text).status == "complete") == validator.is_valid({"a": a, "b": b}), text


VALIDATED = [  # (schema, the keywords skipped): checked keywords beside annotations, nested and referenced
    ({"type": "string", "pattern": "^a", "description": "x", "maxLength": 3, "ignoreCase": "value"}, frozenset()),
    ({"enum": ["a", "ab", 1, None], "pattern": "b$", "title": "t"}, frozenset({"enum"})),
    ({"anyOf": [{"minLength": 2}, {"type": "integer", "minimum": 3}], "examples": [1]}, frozenset()),
    ({"$defs": {"s": {"type": "string", "maxLength": 1}}, "allOf": [{"$ref": "#/$defs/s"}], "not": {"const": "b"}},
     frozenset()),
    ({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}, "default": {}},
     frozenset({"type"})),
    ({"type": "array", "items": {"enum": [1, 2]}, "maxItems": 2, "deprecated": True}, frozenset()),
]
VALUES = ["a", "ab", "abc", "abcd", "b", "", 1, 3, 2.0, None, True, {"a": 1}, {"a": "x"}, {}, [1, 2], [1, 3], [1, 1, 2]]


@pytest.mark.parametrize("schema,skip", VALIDATED, ids=[f"v{i}" for i in range(len(VALIDATED))])
def test_enum_validator_agrees_with_jsonschema(schema: dict, skip: frozenset) -> None:
    """The validator that filters enum/const values (``_validate.Validator``) against ``jsonschema``, each value
    checked twice (the second time from its memo of the keywords to check at each place), and the whole list
    at once (``valid_values``: keyword by keyword over the values left, order kept)."""
    from kbnf_gpu.frontends.json_schema._document import Document
    from kbnf_gpu.frontends.json_schema._validate import Validator

    validator = Validator(Document(schema, strict=False))
    oracle = jsonschema.Draft202012Validator({k: v for k, v in schema.items() if k not in skip})
    for value in VALUES * 2:
        assert validator.valid(value, "", skip) == oracle.is_valid(value), value
    assert validator.valid_values(VALUES, "", skip) == [v for v in VALUES if oracle.is_valid(v)]
    assert validator.valid_values(VALUES[::-1], "", skip) == [v for v in VALUES[::-1] if oracle.is_valid(v)]


def test_enum_values_with_a_lone_surrogate_are_refused_or_left_out() -> None:
    """A value the grammar cannot write (a lone surrogate, in a string, a key or an item) is an error naming
    its place, or with ``strict=False`` dropped with a warning; the others stay (numbers, non-ASCII text)."""
    from kbnf_gpu.errors import GrammarError
    from kbnf_gpu.frontends.json_schema import JsonSchemaWarning

    lone = ["\ud800", ["\udc00"], {"\ud83d": 1}]
    kept = ["a", 1.5, None, "é", ["b"], {"k": "ü"}]
    schema = {"enum": [kept[0], *lone, *kept[1:]]}
    with pytest.raises(GrammarError, match="lone surrogate.*'/enum'"):
        parse_json_schema(schema)
    with pytest.warns(JsonSchemaWarning, match="lone surrogate"):
        parser = EarleyParser(normalize(parse_json_schema(schema, strict=False)))
    for v in kept + lone:
        assert (check_parser(parser, json.dumps(v)).status == "complete") == (v in kept), v


def test_enum_validator_checks_every_keyword_it_handles() -> None:
    """``Validator`` visits only the keywords in ``_CHECKED`` (the rest are annotations to it): every keyword
    its code compares against must be there, or a new one would be silently skipped."""
    import inspect
    import re

    from kbnf_gpu.frontends.json_schema import _validate

    source = inspect.getsource(_validate.Validator)
    handled = set(re.findall(r'kw == "([^"]+)"', source))
    for group in re.findall(r"kw in \(([^)]*)\)", source):
        handled.update(re.findall(r'"([^"]+)"', group))
    assert len(handled) > 25 and handled <= _validate._CHECKED, handled - _validate._CHECKED
