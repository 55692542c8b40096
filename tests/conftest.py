"""Shared, session-scoped fixtures (lazy: nothing is loaded until a test asks for it).

* ``llama3_vocab``: ``Vocabulary.from_name("llama3")`` (128,256 ids, EOS 128001/128009).
* ``json_kbnf``: a JSON grammar written in KBNF (``JSON_KBNF``).
* ``llama3_json``: ``JSON_KBNF`` compiled ONCE for the Llama-3 vocabulary in
  ``eos`` mode; share it, its per-state mask caches make later walks cheap.
* ``llama3_json_eager``: the same grammar in ``eager`` mode (KBNF's default).
* ``compile_config()``: the ``CompileConfig`` the matcher tests use: the
  default (table-driven masks) once ``kbnf_gpu.compile.grammar_tables``
  exists, else the exact reference mask (``use_tables=False``).
"""
from __future__ import annotations

import importlib.util

import pytest

# A JSON grammar in KBNF. Strings hold any code point but '"', '\\' and the C0
# controls, or an escape; numbers are RFC 8259 numbers; whitespace is the four
# JSON whitespace characters and may surround the top-level value.
JSON_KBNF = r"""
start ::= ws value ws;
value ::= object | array | string | number | "true" | "false" | "null";
object ::= "{" ws "}" | "{" ws member ws ("," ws member ws)* "}";
member ::= string ws ":" ws value;
array ::= "[" ws "]" | "[" ws value ws ("," ws value ws)* "]";
string ::= "\"" #"([^\"\\\\\u0000-\u001f]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})*" "\"";
number ::= #"-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?";
ws ::= #"[ \t\n\r]*";
"""


def tables_available() -> bool:
    """Has the lead's table-driven mask (``grammar_tables``) landed?"""
    try:
        return importlib.util.find_spec("kbnf_gpu.compile.grammar_tables") is not None
    except ImportError:  # pragma: no cover
        return False


def compile_config(use_tables: bool | None = None):
    """``CompileConfig`` with tables when available (or as asked), else the exact reference mask."""
    from kbnf_gpu import CompileConfig

    if use_tables is None:
        use_tables = tables_available()
    return CompileConfig(use_tables=bool(use_tables))


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
