"""``GrammarSpec``: what one request asks for, read from an engine's per-request arguments.

A request names exactly one of ``json_schema``, ``grammar`` (with ``syntax``),
``regex`` or ``artifact``, plus optional ``start``, ``end_mode`` and JSON Schema
options. Engines that can only pass flat string values (vLLM's OpenAI server
``vllm_xargs``) send the same object as JSON text. The spec's ``key`` hashes its
content, so equal requests share one compiled grammar.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import GrammarError, OptionError

if TYPE_CHECKING:  # pragma: no cover
    from ..compile.compiled import CompiledGrammar
    from ..config import CompileConfig
    from ..vocab import Vocabulary

REQUEST_KEY = "kbnf_gpu"
"""The key under which a request's arguments (vLLM ``extra_args`` / ``vllm_xargs``) hold its grammar."""

ARTIFACT_DIR_ENV = "KBNF_GPU_ARTIFACT_DIR"
"""Requests may load artifacts only from this directory (unset: artifacts are refused)."""

_KINDS = ("json_schema", "grammar", "regex", "artifact")
_SYNTAXES = ("kbnf", "gbnf", "lark", "regex")
_SCHEMA_OPTIONS = ("whitespace", "max_whitespace", "indent", "any_order", "strict")
_END_MODES = ("eos", "eager")


@dataclass(frozen=True)
class GrammarSpec:
    """A grammar request, validated: ``syntax`` is a front end's name or ``"artifact"``.

    ``source`` is the grammar text, a schema as JSON text, or an artifact's resolved path.
    """

    syntax: str
    source: str
    start: str | None = None
    end_mode: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    # ------------------------------------------------------------ reading

    @classmethod
    def from_request(cls, value: Any) -> "GrammarSpec":
        """Read ``{"json_schema": …}``, ``{"grammar": …, "syntax": …}``, ``{"regex": …}`` or ``{"artifact": …}``.

        ``value`` may also be that object as JSON text. Raises ``OptionError`` or
        ``GrammarError`` (both ``ValueError``) saying which key is wrong and why.
        """
        if isinstance(value, (str, bytes)):
            try:
                value = json.loads(value)
            except (ValueError, RecursionError) as err:
                raise OptionError(f"{REQUEST_KEY}: the request value is not valid JSON: {err}") from None
        if not isinstance(value, dict):
            raise OptionError(f"{REQUEST_KEY}: expected an object with one of {', '.join(_KINDS)}, "
                              f"got {type(value).__name__}")
        unknown = sorted(set(value) - set(_KINDS) - {"syntax", "start", "end_mode"} - set(_SCHEMA_OPTIONS), key=str)
        if unknown:
            raise OptionError(f"{REQUEST_KEY}: unknown key {unknown[0]!r}")
        kinds = [k for k in _KINDS if k in value]
        if len(kinds) != 1:
            raise OptionError(f"{REQUEST_KEY}: give exactly one of {', '.join(_KINDS)} (got {len(kinds)})")
        kind = kinds[0]
        start = _optional_str(value, "start")
        end_mode = _optional_str(value, "end_mode")
        if end_mode is not None and end_mode not in _END_MODES:
            raise OptionError(f"{REQUEST_KEY}.end_mode: expected one of {', '.join(_END_MODES)}, got {end_mode!r}")
        options = tuple((k, value[k]) for k in _SCHEMA_OPTIONS if k in value)
        if options and kind != "json_schema":
            raise OptionError(f"{REQUEST_KEY}.{options[0][0]}: a JSON Schema option, but the request has no json_schema")
        if "syntax" in value and kind != "grammar":
            raise OptionError(f"{REQUEST_KEY}.syntax: only with 'grammar'")
        if kind == "json_schema":
            return cls("json_schema", _schema_text(value["json_schema"]), start, end_mode, options)
        text = value[kind]
        if not isinstance(text, str):
            raise OptionError(f"{REQUEST_KEY}.{kind}: expected a string, got {type(text).__name__}")
        if kind == "artifact":
            if start is not None or end_mode is not None:
                raise OptionError(f"{REQUEST_KEY}: start and end_mode are fixed when an artifact is compiled")
            return cls("artifact", str(_artifact_path(text)))
        syntax = "regex" if kind == "regex" else _optional_str(value, "syntax") or "kbnf"
        if syntax not in _SYNTAXES:
            raise OptionError(f"{REQUEST_KEY}.syntax: expected one of {', '.join(_SYNTAXES)}, got {syntax!r}")
        return cls(syntax, text, start, end_mode)

    # ------------------------------------------------------------ identity

    @property
    def key(self) -> str:
        """A content hash: equal keys compile to equal grammars (an artifact's key covers its size and mtime)."""
        parts: list[Any] = [self.syntax, self.source, self.start, self.end_mode, [list(o) for o in self.options]]
        if self.syntax == "artifact":
            try:
                st = os.stat(self.source)
                parts.append([st.st_size, st.st_mtime_ns])
            except OSError:
                parts.append(None)
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()

    # ------------------------------------------------------------ work

    def check(self, config: "CompileConfig | None" = None) -> None:
        """Parse and normalize without a vocabulary (cheap): raises the ``GrammarError`` compiling would raise.

        For an artifact, checks that the file exists (its vocabulary is checked on loading).
        """
        if self.syntax == "artifact":
            if not os.path.isfile(self.source):
                raise OptionError(f"{REQUEST_KEY}.artifact: no such file {self.source!r}")
            return
        from ..budget import compile_budget
        from ..config import CompileConfig
        from ..frontends import parse_grammar
        from ..normalize import normalize

        config = config or CompileConfig()
        with compile_budget(config):
            grammar = parse_grammar(self.source, self.syntax, start=self.start, **dict(self.options))
            normalize(grammar, config.normalize_config(self.syntax))

    def compile(self, vocab: "Vocabulary", config: "CompileConfig | None" = None) -> "CompiledGrammar":
        """Compile (or load, for an artifact) for ``vocab``."""
        if self.syntax == "artifact":
            from ..compile.artifact import load_compiled

            return load_compiled(self.source, vocab)
        from ..compile.compiled import compile_grammar

        return compile_grammar(self.source, vocab, self.syntax, start=self.start, end_mode=self.end_mode,
                               config=config, **dict(self.options))


def _optional_str(value: dict, key: str) -> str | None:
    item = value.get(key)
    if item is not None and not isinstance(item, str):
        raise OptionError(f"{REQUEST_KEY}.{key}: expected a string, got {type(item).__name__}")
    return item


def _schema_text(schema: Any) -> str:
    """The schema as compact JSON text (key order kept: it is the order properties are generated in)."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except (ValueError, RecursionError) as err:
            raise GrammarError(f"the schema is not valid JSON: {err}", pointer="") from None
    if not isinstance(schema, (dict, bool)):
        raise GrammarError(f"a schema must be an object or a boolean, got {type(schema).__name__}", pointer="")
    try:
        return json.dumps(schema, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError, RecursionError) as err:
        raise GrammarError(f"the schema is not JSON data: {err}", pointer="") from None


def _artifact_path(name: str) -> Path:
    """``name`` resolved inside ``$KBNF_GPU_ARTIFACT_DIR``; a request may not read files elsewhere."""
    root = os.environ.get(ARTIFACT_DIR_ENV)
    if not root:
        raise OptionError(f"{REQUEST_KEY}.artifact: the server allows no artifacts (set {ARTIFACT_DIR_ENV} "
                          "to the directory that holds them)")
    base = Path(root).resolve()
    path = (base / name).resolve()
    if base not in path.parents:
        raise OptionError(f"{REQUEST_KEY}.artifact: {name!r} is outside {ARTIFACT_DIR_ENV}")
    return path
