"""JSON Schema across documents: ``registry=`` (a ``referencing.Registry`` or a mapping URI -> schema).

Languages are checked through the Earley parser (``check_parser``) against
python ``jsonschema`` given the same documents (a ``referencing.Registry``):
hand-picked valid and invalid texts, and random texts sampled from the
grammar, which must all validate. Also: relative URIs and ``$id`` base
changes, embedded resources, anchors in another document, recursion through
a second document, a ``$ref`` to a document found nowhere (a ``GrammarError``
naming the URI and the ``$ref``'s location; nothing fetched), draft-7 ``$ref``
siblings per document, annotation-only siblings of ``$ref`` sharing one rule,
``oneOf`` branches that overlap only on ``null``, and the Kubernetes schemas
of ``kubernetes-validate``.
"""
from __future__ import annotations

import importlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from kbnf_gpu.check import check_parser
from kbnf_gpu.errors import GrammarError, KbnfGpuError, OptionError
from kbnf_gpu.frontends.json_schema import JsonSchemaWarning, parse_json_schema
from kbnf_gpu.frontends.json_schema.sample import sample_texts
from kbnf_gpu.normalize import normalize
from kbnf_gpu.runtime.earley import EarleyParser

jsonschema = importlib.import_module("jsonschema")
referencing = importlib.import_module("referencing")
kubernetes_validate = importlib.import_module("kubernetes_validate")


def oracle(schema: Any, docs: dict[str, Any]) -> Any:
    from referencing.jsonschema import DRAFT202012

    reg = referencing.Registry().with_resources(
        (uri, referencing.Resource.from_contents(doc, default_specification=DRAFT202012)) for uri, doc in docs.items()
    )
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, registry=reg, format_checker=cls.FORMAT_CHECKER)


class Lang:
    """A schema's grammar (with its registry) beside ``jsonschema``'s verdict."""

    def __init__(self, schema: Any, docs: dict[str, Any], **opts: Any) -> None:
        self.grammar = parse_json_schema(schema, registry=docs, **opts)
        self.parser = EarleyParser(normalize(self.grammar))
        self.valid = oracle(schema, docs).is_valid

    def complete(self, text: str) -> bool:
        return check_parser(self.parser, text).status == "complete"

    def check(self, good: list[Any], bad: list[Any], samples: int = 40, sort_keys: bool = False) -> None:
        """``good`` values are valid and complete sentences, ``bad`` neither (keys in schema order:
        as written, or sorted for schemas that declare them sorted); sampled texts validate."""
        for v in good:
            assert self.valid(v), v
            assert self.complete(json.dumps(v, sort_keys=sort_keys)), v
        for v in bad:
            assert not self.valid(v), v
            assert not self.complete(json.dumps(v, sort_keys=sort_keys)), v
        for text in sample_texts(self.grammar, samples, seed=7):
            assert self.valid(json.loads(text)), text


ROOT = "https://example.com/schemas/root.json"


def test_relative_refs_and_base_uris() -> None:
    docs = {
        "https://example.com/schemas/item.json": {
            "$defs": {
                "item": {"type": "object", "properties": {"name": {"$ref": "#/$defs/name"},
                                                         "size": {"$ref": "common/size.json"}},
                         "required": ["name"], "additionalProperties": False},
                "name": {"type": "string", "maxLength": 5},
            }
        },
        "https://example.com/schemas/common/size.json": {"type": "integer", "minimum": 0, "maximum": 9},
    }
    schema = {"$id": ROOT, "type": "array", "items": {"$ref": "item.json#/$defs/item"}}
    lang = Lang(schema, docs)
    lang.check(
        good=[[], [{"name": "ab"}], [{"name": "abcde", "size": 9}, {"name": ""}]],
        bad=[[{"size": 1}], [{"name": "abcdef"}], [{"name": "a", "size": 10}], [{"name": "a", "x": 1}], {}],
    )


def test_referencing_registry_equals_mapping() -> None:
    docs = {"https://example.com/schemas/a.json": {"type": "object", "properties": {"x": {"type": "boolean"}},
                                                   "additionalProperties": False}}
    schema = {"$id": ROOT, "properties": {"a": {"$ref": "a.json"}}, "additionalProperties": False}
    registry = referencing.Registry().with_resources(
        (uri, referencing.Resource.from_contents(doc, default_specification=referencing.jsonschema.DRAFT202012))
        for uri, doc in docs.items()
    )
    assert parse_json_schema(schema, registry=registry) == parse_json_schema(schema, registry=docs)
    Lang(schema, docs).check(good=[{}, {"a": {"x": True}}], bad=[{"a": {"x": 1}}, {"a": 1}])


def test_recursion_through_a_second_document() -> None:
    docs = {
        "https://example.com/schemas/node.json": {
            "type": "object",
            "properties": {"value": {"type": "integer"},
                           "children": {"type": "array", "items": {"$ref": "root.json#/$defs/tree"}}},
            "required": ["value"], "additionalProperties": False,
        }
    }
    schema = {"$id": ROOT, "$defs": {"tree": {"$ref": "node.json"}}, "$ref": "#/$defs/tree"}
    lang = Lang(schema, docs)
    lang.check(
        good=[{"value": 1}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]}],
        bad=[{"value": 1, "children": [{}]}, {"children": []}, {"value": 1, "children": [{"value": "x"}]}],
    )


def test_embedded_ids_and_anchors() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "$defs": {
            "a": {"$id": "nested/a.json", "type": "integer", "$defs": {"b": {"$anchor": "bee", "type": "string"}}},
        },
        "type": "object",
        "properties": {"a": {"$ref": "nested/a.json"}, "b": {"$ref": "nested/a.json#bee"},
                       "c": {"$ref": "other.json#cee"}},
        "additionalProperties": False,
    }
    docs = {"https://example.com/other.json": {"$defs": {"c": {"$anchor": "cee", "enum": [1, "one"]}}}}
    Lang(schema, docs).check(good=[{"a": 1, "b": "x", "c": "one"}, {"c": 1}],
                             bad=[{"a": "x"}, {"b": 1}, {"c": 2}])
    # an embedded resource of another document is found by its own URI
    docs2 = {"https://example.com/lib.json": {"$defs": {"z": {"$id": "z.json", "type": "null"}}}}
    Lang({"$id": "https://example.com/r.json", "$ref": "z.json"}, docs2).check(good=[None], bad=[0, "x"])


def test_the_root_dialect_rules_ref_siblings_in_every_document() -> None:
    # as in jsonschema: the validator class (the root's draft) decides, whatever the other document says
    d7 = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"s": {"type": "string"}},
          "$ref": "#/definitions/s", "maxLength": 1}
    d2020 = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"s": {"type": "string"}},
             "$ref": "#/$defs/s", "maxLength": 1}
    uri = "https://example.com/schemas/d.json"
    Lang({"$id": ROOT, "$ref": "d.json", "minLength": 1}, {uri: d7}).check(good=["a"], bad=["ab", 1])
    root7 = {"$schema": "http://json-schema.org/draft-07/schema#", "$id": ROOT, "allOf": [{"$ref": "d.json"}]}
    Lang(root7, {uri: d2020}).check(good=["a", "ab"], bad=[1])


def test_unknown_document_is_a_clear_error_and_never_fetched() -> None:
    schema = {"$id": ROOT, "properties": {"a": {"$ref": "https://example.org/missing.json#/x"}}}
    with pytest.raises(GrammarError) as err:
        parse_json_schema(schema, registry={})
    text = str(err.value)
    assert "https://example.org/missing.json" in text and "'/properties/a/$ref'" in text and "registry" in text
    with pytest.raises(GrammarError, match="no registry"):
        parse_json_schema(schema)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_json_schema(schema, strict=False)
    assert any(issubclass(w.category, JsonSchemaWarning) and "missing.json" in str(w.message) for w in caught)
    # a JSON pointer into a registry document that is not there: the location is named as uri#pointer
    docs = {"https://example.com/schemas/x.json": {"$defs": {"a": {"type": "object", "not": {"format": "email", "required": ["b"]}}}}}
    with pytest.raises(GrammarError) as err:
        parse_json_schema({"$id": ROOT, "$ref": "x.json#/$defs/nope"}, registry=docs)
    assert "x.json#/$defs/nope" in str(err.value)
    with pytest.raises(GrammarError) as err:
        parse_json_schema({"$id": ROOT, "$ref": "x.json#/$defs/a"}, registry=docs)
    assert "'https://example.com/schemas/x.json#/$defs/a/not'" in str(err.value)


def test_bad_registries() -> None:
    with pytest.raises(OptionError, match="registry"):
        parse_json_schema({}, registry=[1, 2])
    for bad in ([1], "{not json", 3):
        with pytest.raises(GrammarError, match="registry's document"):
            parse_json_schema({"$ref": "x.json"}, registry={"x.json": bad})
    # a document given as JSON text
    Lang({"$ref": "x.json"}, {"x.json": {"type": "null"}}).check(good=[None], bad=[1])
    g = parse_json_schema({"$ref": "x.json"}, registry={"x.json": '{"type": "null"}'})
    assert g.rules[1:] == parse_json_schema({"$ref": "x.json"}, registry={"x.json": {"type": "null"}}).rules[1:]


def test_annotation_siblings_of_ref_share_one_rule() -> None:
    node = {"type": "object", "properties": {"v": {"type": "integer"}}, "additionalProperties": False}
    schema = {
        "$defs": {"n": node},
        "type": "object",
        "properties": {f"p{i}": {"$ref": "#/$defs/n", "description": f"field {i}", "x-kubernetes-list-type": "map"}
                       for i in range(5)},
        "additionalProperties": False,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = parse_json_schema(schema)
    # one value rule (so one object's member rules) for the five references, not one per referencing site
    assert sum(r.name.endswith("_obj_a0") for r in g.rules) == 2  # the root object and n


def test_one_of_overlapping_only_on_null_is_exact() -> None:
    schema = {"oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exact: no "treated as anyOf" warning
        lang = Lang(schema, {})
    lang.check(good=["a", 3], bad=[None, 1.5, True])
    both = {"oneOf": [{"type": ["boolean", "null"]}, {"type": ["boolean", "null", "string"]}]}
    Lang(both, {}).check(good=["x"], bad=[None, True, False])
    # a branch that takes some nulls only (enum) keeps the warning
    with pytest.warns(JsonSchemaWarning, match="oneOf"):
        parse_json_schema({"oneOf": [{"type": ["string", "null"]}, {"enum": [None, 1]}]})


# -------------------------------------------------------------- Kubernetes


K8S = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.37.0-local-strict"


@pytest.fixture(scope="module")
def k8s_docs() -> dict[str, Any]:
    defs = json.loads((K8S / "_definitions.json").read_text())
    return {defs["$id"]: defs}


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                                     "resources": {"limits": {"cpu": "500m", "memory": 128}}}]},
        },
    },
}


def test_kubernetes_deployment(k8s_docs: dict[str, Any]) -> None:
    schema = json.loads((K8S / "deployment-apps-v1.json").read_text())
    lang = Lang(schema, k8s_docs)
    lang.check(good=[DEPLOYMENT, {"spec": None}],
               bad=[{}, {"kind": "Pod"}, {"spec": {"replicas": 2**31}}, {"metadata": {"name": 1}},
                    {"spec": {"paused": "yes"}}],
               samples=20, sort_keys=True)
    # Kubernetes declares keys sorted; a gap holds at most 16 whitespace characters (max_whitespace)
    assert lang.complete(json.dumps(DEPLOYMENT, indent=1, sort_keys=True))
    assert not lang.complete(json.dumps(DEPLOYMENT, indent=2, sort_keys=True))  # depth 8: a 17-character gap


@pytest.mark.parametrize("name", ["affinity-v1.json", "service-v1.json", "persistentvolumeclaim-v1.json",
                                  "cronjob-batch-v1.json", "customresourcedefinition-apiextensions-v1.json"])
def test_kubernetes_schemas_sampled(name: str, k8s_docs: dict[str, Any]) -> None:
    schema = json.loads((K8S / name).read_text())
    Lang(schema, k8s_docs).check(good=[], bad=[[], "x"], samples=15)


def test_kubernetes_unsatisfiable_schema_is_refused_clearly(k8s_docs: dict[str, Any]) -> None:
    # "type": "object" beside a oneOf of string and integer: nothing is valid
    schema = json.loads((K8S / "intorstring-util-intstr.json").read_text())
    with pytest.raises(KbnfGpuError, match="unsatisfiable"):
        parse_json_schema(schema, registry=k8s_docs)


def test_source_hash_is_of_the_schema_as_compiled() -> None:
    """The artifact's ``grammar_hash`` is computed on first use (hashing a registry's URIs costs more than a
    small schema's compile), but of the schema as it was compiled, even if the caller mutates it later."""
    from kbnf_gpu import Vocabulary, compile_grammar
    from kbnf_gpu.compile.compiled import grammar_hash

    vocab = Vocabulary({i: bytes([b]) for i, b in enumerate(b'{}[]":,0123456789abc ')}, eos_ids=[21], size=22)
    registry = {"https://example.com/item": {"type": "integer"}}
    schema = {"type": "array", "items": {"$ref": "https://example.com/item"}}
    compiled = compile_grammar(schema, vocab, "json_schema", registry=registry)
    want = grammar_hash(json.dumps(schema, sort_keys=True), "json_schema", None, {"registry": registry})
    schema["items"] = {"type": "string"}
    assert compiled.source_hash == want == grammar_hash(
        {"type": "array", "items": {"$ref": "https://example.com/item"}}, "json_schema", None, {"registry": registry})
    assert compiled.source_hash != grammar_hash(schema, "json_schema", None, {"registry": registry})


def test_unknown_front_end_options_are_named() -> None:
    """An option the front end does not take is an ``OptionError`` naming it and the options it does take
    (a compile budget passed as a front-end option is pointed to ``CompileConfig``), not a ``TypeError``
    from the call; options it takes, by keyword, still reach it."""
    from kbnf_gpu.frontends import parse_grammar

    with pytest.raises(OptionError, match=r"'time_budget_s' for syntax 'json_schema'.*registry.*CompileConfig"):
        parse_grammar({"type": "string"}, "json_schema", time_budget_s=5)
    with pytest.raises(OptionError, match=r"'indent', 'strict' for syntax 'lark'; it takes none"):
        parse_grammar('start: "a"', "lark", strict=True, indent=2)
    with pytest.raises(OptionError, match=r"'whitespace' for syntax 'regex'; it takes flags"):
        parse_grammar("a+", "regex", whitespace="compact")
    assert parse_grammar("A+", "regex", flags="i") != parse_grammar("A+", "regex")
    assert parse_grammar({"type": "object"}, "json_object", whitespace="compact") == parse_grammar(
        {}, "json_object", whitespace="compact")
