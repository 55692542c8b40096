"""Shared, session-scoped fixtures (lazy: nothing is loaded until a test asks for it).

* ``llama3_vocab``: ``Vocabulary.from_name("llama3")`` (128,256 ids, EOS 128001/128009).
* ``json_kbnf``: a JSON grammar written in KBNF (``JSON_KBNF``).
* ``llama3_json``: ``JSON_KBNF`` compiled ONCE for the Llama-3 vocabulary in
  ``eos`` mode; share it, its per-state mask caches make later walks cheap.
* ``llama3_json_eager``: the same grammar in ``eager`` mode (KBNF's default).
* ``compile_config(use_tables=True)``: table-driven masks, or the exact
  reference mask with ``use_tables=False``.

Without a GPU, ``TRITON_INTERPRET=1`` is set here, before any test module is
imported. ``HYPOTHESIS_PROFILE=ci`` makes hypothesis draw the same examples on
every run (``.ci/run`` sets it).
"""
from __future__ import annotations

import os

import pytest
import torch

# Without a GPU the Triton kernels run on CPU tensors under Triton's interpreter, which Triton reads once, when it is
# first imported: set it before any test module imports Triton (vllm's import does), whatever the collection order.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from hypothesis import settings  # noqa: E402

from kbnf_gpu.grammars import JSON_KBNF  # noqa: E402  (the package's JSON grammar)

# HYPOTHESIS_PROFILE=ci (set by .ci/run) draws the same examples on every run, seeded from each test: a CI verdict
# depends on the commit, not on the luck of the draw. Without it, each run draws afresh and keeps exploring.
settings.register_profile("ci", derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def compile_config(use_tables: bool | None = True):
    """``CompileConfig`` with table-driven masks (default; also for ``None``) or the exact reference mask."""
    from kbnf_gpu import CompileConfig

    return CompileConfig() if use_tables is None else CompileConfig(use_tables=use_tables)


@pytest.fixture(scope="session")
def llama3_vocab():
    from kbnf_gpu import Vocabulary

    return Vocabulary.from_name("llama3")


@pytest.fixture(scope="session")
def json_kbnf() -> str:
    return JSON_KBNF


@pytest.fixture(scope="session")
def llama3_json(llama3_vocab):
    """``JSON_KBNF`` compiled once per session for Llama-3, ``end_mode="eos"``."""
    from kbnf_gpu import compile_grammar

    return compile_grammar(JSON_KBNF, llama3_vocab, syntax="kbnf", end_mode="eos", config=compile_config())


@pytest.fixture(scope="session")
def llama3_json_eager(llama3_vocab):
    """``JSON_KBNF`` compiled once per session for Llama-3, ``end_mode="eager"`` (KBNF's default)."""
    from kbnf_gpu import compile_grammar

    return compile_grammar(JSON_KBNF, llama3_vocab, syntax="kbnf", end_mode="eager", config=compile_config())
