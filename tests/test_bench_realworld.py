"""``benchmarks/bench_realworld.py`` in a reduced form: correctness only, never time.

A few Kubernetes schemas (through the registry for us, bundled for the
peers), instances sampled from our grammar: every sampled instance must
validate with ``jsonschema`` (so must the bundled schema's verdict agree),
and every engine (ours, xgrammar, llguidance) must compile each schema and
allow every token of every instance, and EOS at its end, in the very masks
the benchmark times (``run_schema``, in-process instead of in a worker).
"""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
bench = importlib.import_module("bench_realworld")
jsonschema = importlib.import_module("jsonschema")

SCHEMAS = ["labelselectorrequirement-meta-v1.json", "objectreference-v1.json", "namespace-v1.json", "affinity-v1.json"]


@pytest.fixture(scope="module")
def corpus():
    return bench.load_corpus(bench.default_corpus())


@pytest.fixture(scope="module")
def cases(corpus):
    schemas, registry = corpus
    out = {}
    for name in SCHEMAS:
        texts, invalid = bench.instances(schemas[name], registry, 2, seed=1)
        out[name] = (schemas[name], texts, invalid)
    return out


def test_corpus_and_bundles(corpus, cases) -> None:
    schemas, registry = corpus
    assert len(schemas) == 863 and "https://kubernetes.io/api/_definitions.json" in registry
    for name, (schema, texts, invalid) in cases.items():
        assert texts and invalid == 0, (name, invalid)  # every sampled text validates
        bundled = bench.bundle(schema, registry)
        assert "_definitions.json" not in json.dumps(bundled)  # self-contained
        plain = jsonschema.Draft202012Validator(bundled)
        for text in texts:
            assert plain.is_valid(json.loads(text)), (name, text)
        assert not plain.is_valid([]) and not bench.make_validator(schema, registry).is_valid([])


def test_respace_keeps_literals() -> None:
    text = '{"a:b":[1,"x, y",{"c":null}],"d":"\\","}'
    spaced = bench.respace(text)
    assert json.loads(spaced) == json.loads(text)
    assert spaced == '{"a:b": [1, "x, y", {"c": null}], "d": "\\","}'


@pytest.mark.parametrize("engine", bench.ENGINES)
def test_every_engine_allows_every_token(engine: str, corpus, cases, llama3_vocab) -> None:
    schemas, registry = corpus
    adapter = bench.ADAPTERS[engine](registry, vocab=llama3_vocab) if engine == "kbnf_gpu" else bench.ADAPTERS[engine](registry)
    for name, (schema, texts, _) in cases.items():
        tokens = [bench.tokenize(t) for t in texts]
        job_schema = schema if engine == "kbnf_gpu" else bench.bundle(schema, registry)
        row = bench.run_schema(adapter, job_schema, tokens)
        assert row["status"] == "compiled", (name, row)
        assert row["token_errors"] == [], (name, row["token_errors"])
        assert len(row["token_us"]) == sum(map(len, tokens)), name


def test_instances_are_sampled_in_a_worker_under_the_timeout(corpus, cases) -> None:
    """The sampler (``jsonschema``'s regexes can backtrack for minutes on a sampled string; a CloudFormation
    schema hung the whole run) runs in its own process: past the timeout the job is a ``timeout``, and the next
    job gets a fresh worker that samples what the in-process call does."""
    schemas, registry = corpus
    name = SCHEMAS[1]
    sampler = bench.Worker("instances", bench.instances_main, registry)
    try:
        assert sampler.run({"schema": schemas[name], "n": 2, "seed": 1}, 0.0)["status"] == "timeout"
        sampled = sampler.run({"schema": schemas[name], "n": 2, "seed": 1}, 300.0)
    finally:
        sampler.close()
    assert sampled["status"] == "sampled", sampled
    assert (sampled["texts"], sampled["invalid"]) == cases[name][1:]
