"""The token vocabulary: token id → bytes, special ids and EOS ids.

A grammar only ever sees bytes, so every tokenizer format is reduced to one
table ``id → bytes``. Conventions (the same for every loader):

* ``size`` is the number of logit columns. Ids may have holes (ids with no
  token) and ids from the last token up to ``size`` are padding (models often
  have more logit columns than tokens). Holes and padding are never allowed.
* ``special_ids`` are never allowed by a grammar. They hold control tokens
  (``<s>``, ``<|eot_id|>``, ``[INST]`` ...), added tokens marked special,
  unknown/unused pieces, and every EOS id: EOS is decided by the matcher, not
  by the grammar. ``token_bytes`` still returns a special token's literal text
  (for display); ``token_matrix`` gives it length 0.
* A *normal* token is non-special with non-empty bytes; only normal tokens
  can be allowed by a grammar.

Token bytes by format:

* Byte-level BPE (GPT-2, Llama-3, Qwen2 ``tokenizer.json``; GPT-2
  ``encoder.json``): each character of a token string stands for one byte via
  the GPT-2 byte↔unicode table. A token string with a character outside that
  table cannot be decoded and is made special (never allowed) rather than
  guessed.
* SentencePiece style (``.model`` files; ``tokenizer.json`` with Metaspace /
  ``Replace("▁", " ")`` / ByteFallback): ``▁`` is a space, ``<0xNN>``
  byte-fallback pieces are the single byte 0xNN. The dummy prefix a
  SentencePiece encoder adds (``"hi"`` → ``"▁hi"``) is part of the token
  bytes: the grammar sees the leading space.
* tiktoken files and Tekken JSON carry raw bytes (base64).
* Added tokens that are not special are their literal content as UTF-8.
* WordPiece (BERT) and BPE with a ``continuing_subword_prefix`` are refused:
  their tokens do not concatenate to the output text.
* Other ``tokenizer.json`` models (plain BPE/WordLevel without byte-level or
  Metaspace components) are read literally as UTF-8; an ``end_of_word_suffix``
  (CLIP's ``</w>``) becomes a trailing space, as its decoder does.

EOS heuristic, when no ``eos_tokens`` are given:

1. ``tokenizer.json`` next to ``generation_config.json`` (``eos_token_id``)
   and/or ``tokenizer_config.json`` (``eos_token``): those ids, and only those.
2. Otherwise the tokens after ``$A`` in a ``TemplateProcessing`` post
   processor (``"$A </s>"``), the ``sep`` of a ``RobertaProcessing``, plus
   every added token whose text is one of ``EOS_NAMES`` (looked up among the
   model's plain tokens only when no added token matches).
"""
from __future__ import annotations

import binascii
import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import VocabularyError
from .caches import lru_get

__all__ = ["Vocabulary", "EOS_NAMES", "VocabularyError"]

EOS_NAMES: tuple[str, ...] = (
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|endoftext|>",
    "<|im_end|>",
    "<|end|>",
    "</s>",
    "<eos>",
    "<end_of_turn>",
    "<|end▁of▁sentence|>",
)

_FINGERPRINT_TAG = b"kbnf-gpu/vocabulary/v1\0"
_METASPACE = "\u2581"
_BYTE_PIECE = re.compile(r"<0[xX]([0-9A-Fa-f]{2})>")
_TIKTOKEN_LINE = re.compile(rb"^[A-Za-z0-9+/=]+ [0-9]+$")
_UNDECODABLE = "\uffff"


class Vocabulary:
    """Token id → bytes, special ids and EOS ids; immutable."""

    def __init__(
        self,
        token_bytes: Mapping[int, bytes | None],
        special_ids: Iterable[int] = (),
        eos_ids: Iterable[int] = (),
        size: int | None = None,
    ) -> None:
        tokens = _token_list(token_bytes)
        self._size = _checked_size(size, len(tokens))
        eos = tuple(sorted({_checked_id(i, self._size, "EOS") for i in eos_ids}))
        special = {_checked_id(i, self._size, "special") for i in special_ids}
        self._tokens: list[bytes | None] = tokens
        self._eos_ids = eos
        self._special_ids = frozenset(special.union(eos))
        self._lock = threading.Lock()
        self._matrix: tuple[np.ndarray, np.ndarray] | None = None
        self._normal: np.ndarray | None = None
        self._fingerprint: str | None = None

    # ----------------------------------------------------------------- access
    @property
    def size(self) -> int:
        """Number of logit columns."""
        return self._size

    @property
    def eos_ids(self) -> tuple[int, ...]:
        """EOS token ids, sorted (all of them are also special)."""
        return self._eos_ids

    @property
    def special_ids(self) -> frozenset[int]:
        """Ids a grammar never allows (control tokens, EOS, unknown pieces)."""
        return self._special_ids

    def __len__(self) -> int:
        return self._size

    def token_bytes(self, token_id: int) -> bytes | None:
        """The token's bytes (a special token's literal text); None for holes and padding."""
        if not 0 <= token_id < self._size:
            raise IndexError(f"token id {token_id} outside the vocabulary [0, {self._size})")
        return self._tokens[token_id] if token_id < len(self._tokens) else None

    def items(self) -> Iterator[tuple[int, bytes]]:
        """(id, bytes) for every id that has bytes, specials included, in id order."""
        return ((i, b) for i, b in enumerate(self._tokens) if b is not None)

    def decode_bytes(self, ids: Iterable[int], *, skip_special: bool = True) -> bytes:
        """Concatenated bytes of ``ids``; holes and padding raise VocabularyError."""
        out = []
        for i in ids:
            b = self.token_bytes(int(i))
            if b is None:
                raise VocabularyError(f"token id {i} has no bytes (hole or padding)")
            if not (skip_special and i in self._special_ids):
                out.append(b)
        return b"".join(out)

    # ---------------------------------------------------------------- derived
    @property
    def normal_ids(self) -> np.ndarray:
        """Sorted int32 ids of non-special, non-empty tokens (read-only)."""
        if self._normal is None:
            _, lengths = self.token_matrix()
            normal = np.flatnonzero(lengths > 0).astype(np.int32)
            normal.setflags(write=False)
            self._normal = normal
        return self._normal

    def token_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """(uint8 [size, max_len] zero padded, int32 lengths [size]); read-only, cached.

        Lengths are 0 for specials, holes, padding and empty tokens. ``max_len``
        is the longest normal token (at least 1).
        """
        if self._matrix is None:
            with self._lock:
                if self._matrix is None:
                    self._matrix = self._build_matrix()
        return self._matrix

    def _build_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        normal = [
            b if (b and i not in self._special_ids) else b"" for i, b in enumerate(self._tokens)
        ]
        lengths = np.zeros(self._size, dtype=np.int32)
        lengths[: len(normal)] = np.fromiter(map(len, normal), dtype=np.int32, count=len(normal))
        max_len = max(1, int(lengths.max(initial=0)))
        matrix = np.zeros((self._size, max_len), dtype=np.uint8)
        flat = np.frombuffer(b"".join(normal), dtype=np.uint8)
        if flat.size:
            rows = np.repeat(np.arange(self._size, dtype=np.int64), lengths)
            starts = np.cumsum(lengths, dtype=np.int64) - lengths
            cols = np.arange(flat.size, dtype=np.int64) - np.repeat(starts, lengths)
            matrix[rows, cols] = flat
        matrix.setflags(write=False)
        lengths.setflags(write=False)
        return matrix, lengths

    @property
    def fingerprint(self) -> str:
        """sha256 hex over size, every id's bytes, special ids and EOS ids; cached.

        Holes and padding hash alike (both have no bytes), so two vocabularies
        that behave the same have the same fingerprint.
        """
        if self._fingerprint is None:
            self._fingerprint = self._compute_fingerprint()
        return self._fingerprint

    def _compute_fingerprint(self) -> str:
        lengths = np.full(self._size, -1, dtype="<i8")
        lengths[: len(self._tokens)] = [-1 if b is None else len(b) for b in self._tokens]
        h = hashlib.sha256(_FINGERPRINT_TAG)
        h.update(np.array([self._size, len(self._special_ids), len(self._eos_ids)], dtype="<i8").tobytes())
        h.update(lengths.tobytes())
        h.update(b"".join(b for b in self._tokens if b is not None))
        h.update(np.array(sorted(self._special_ids), dtype="<i8").tobytes())
        h.update(np.array(self._eos_ids, dtype="<i8").tobytes())
        return h.hexdigest()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self is other or self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        n = sum(b is not None for b in self._tokens)
        return (
            f"Vocabulary(size={self._size}, tokens={n}, special={len(self._special_ids)}, "
            f"eos={list(self._eos_ids)})"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- loaders
    @classmethod
    def from_tokenizer_json(
        cls, path: str | os.PathLike[str], *, eos_tokens: Sequence[str] | None = None, size: int | None = None
    ) -> Vocabulary:
        """Load a Hugging Face ``tokenizer.json`` (see the module doc for the rules)."""
        p = Path(path)
        return _cached(
            ("hf", _opt(eos_tokens), size),
            p,
            lambda: _build_hf_json(_read_json(p), str(p), eos_tokens, size, config_dir=p.parent),
        )

    @classmethod
    def from_hf(cls, tokenizer: Any, *, eos_tokens: Sequence[str] | None = None, size: int | None = None) -> Vocabulary:
        """From a ``transformers`` tokenizer (fast or slow) or a ``tokenizers.Tokenizer``.

        Specials: the tokenizer's ``all_special_ids`` and added tokens marked
        special; EOS: ``tokenizer.eos_token_id`` (else the name heuristic);
        size: at least ``max(len(tokenizer), tokenizer.vocab_size)``.
        """
        return _build_from_hf_object(tokenizer, eos_tokens, size)

    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike[str],
        *,
        special_tokens: Mapping[str, int] | None = None,
        eos_tokens: Sequence[str] | None = None,
        size: int | None = None,
    ) -> Vocabulary:
        """Load a tiktoken file (``base64 rank`` lines); ``special_tokens`` maps text → id.

        EOS defaults to the special tokens whose text is in ``EOS_NAMES``.
        """
        p = Path(path)
        specials = dict(special_tokens or {})
        key = ("tiktoken", tuple(sorted(specials.items())), _opt(eos_tokens), size)
        return _cached(key, p, lambda: _build_tiktoken(_read_bytes(p), str(p), specials, eos_tokens, size))

    @classmethod
    def from_sentencepiece(
        cls, path: str | os.PathLike[str], *, eos_tokens: Sequence[str] | None = None, size: int | None = None
    ) -> Vocabulary:
        """Load a SentencePiece ``.model`` (needs the ``sentencepiece`` package)."""
        p = Path(path)
        return _cached(
            ("sentencepiece", _opt(eos_tokens), size),
            p,
            lambda: _build_sentencepiece(_read_bytes(p), str(p), eos_tokens, size),
        )

    @classmethod
    def from_tekken(
        cls, path: str | os.PathLike[str], *, eos_tokens: Sequence[str] | None = None, size: int | None = None
    ) -> Vocabulary:
        """Load a Mistral Tekken JSON (special tokens first, then base64 byte tokens)."""
        p = Path(path)
        return _cached(
            ("tekken", _opt(eos_tokens), size),
            p,
            lambda: _build_tekken(_read_json(p), str(p), eos_tokens, size),
        )

    @classmethod
    def from_encoder_json(
        cls, path: str | os.PathLike[str], *, eos_tokens: Sequence[str] | None = None, size: int | None = None
    ) -> Vocabulary:
        """Load a GPT-2 style ``encoder.json`` (byte-level token string → id).

        Tokens shaped ``<|...|>`` (GPT-2's ``<|endoftext|>``) are special.
        """
        p = Path(path)
        return _cached(
            ("encoder", _opt(eos_tokens), size),
            p,
            lambda: _build_encoder_json(_read_json(p), str(p), eos_tokens, size),
        )

    @classmethod
    def from_name(cls, name: str, *, size: int | None = None) -> Vocabulary:
        """A real tokenizer from an offline package: llama3, gpt2, qwen, mistral, mistral-tekken, ...

        See ``kbnf_gpu.tokenizers`` for every name and file. Cached per file.
        """
        from . import tokenizers as tk

        files = tk.locate(name)
        eos = files.eos_tokens
        if files.kind == tk.HF_JSON:
            return cls.from_tokenizer_json(files.path, eos_tokens=eos, size=size)
        if files.kind == tk.TIKTOKEN:
            return cls.from_tiktoken(files.path, special_tokens=dict(files.special_tokens), eos_tokens=eos, size=size)
        if files.kind == tk.SENTENCEPIECE:
            return cls.from_sentencepiece(files.path, eos_tokens=eos, size=size)
        if files.kind == tk.TEKKEN:
            return cls.from_tekken(files.path, eos_tokens=eos, size=size)
        return cls.from_encoder_json(files.path, eos_tokens=eos, size=size)

    @classmethod
    def from_path(
        cls, path: str | os.PathLike[str], *, eos_tokens: Sequence[str] | None = None, size: int | None = None
    ) -> Vocabulary:
        """Sniff a file (or a folder holding one) and load it.

        JSON: ``tokenizer.json`` (has ``model``), Tekken (``config`` + ``vocab``
        list) or ``encoder.json`` (token → int). Text of ``base64 rank`` lines:
        tiktoken (no special tokens: use ``from_tiktoken`` to add them).
        Anything else is tried as a SentencePiece model.
        """
        p = _pick_file(Path(path))
        kind = _sniff(p)
        loader: Callable[..., Vocabulary] = {
            "hf": cls.from_tokenizer_json,
            "tekken": cls.from_tekken,
            "encoder": cls.from_encoder_json,
            "tiktoken": cls.from_tiktoken,
            "sentencepiece": cls.from_sentencepiece,
        }[kind]
        return loader(p, eos_tokens=eos_tokens, size=size)


# ====================================================================== helpers
def _token_list(token_bytes: Mapping[int, bytes | None]) -> list[bytes | None]:
    """Dense list id → bytes (None for holes), validating ids and values."""
    if not isinstance(token_bytes, Mapping):
        raise VocabularyError(f"token_bytes must be a mapping id → bytes, not {type(token_bytes).__name__}")
    ids = list(token_bytes.keys())
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0:
            raise VocabularyError(f"token id {i!r} is not a non-negative integer")
    tokens: list[bytes | None] = [None] * (int(max(ids)) + 1 if ids else 0)
    for i, b in token_bytes.items():
        if b is not None:
            if isinstance(b, str) or not isinstance(b, (bytes, bytearray, memoryview)):
                raise VocabularyError(f"token {i}: expected bytes, got {type(b).__name__}")
            b = bytes(b)
        tokens[int(i)] = b
    return tokens


def _checked_size(size: int | None, n: int) -> int:
    if size is None:
        return n
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise VocabularyError(f"size must be an integer, got {size!r}")
    if size < n:
        raise VocabularyError(f"size {size} is smaller than the largest token id + 1 ({n})")
    return int(size)


def _checked_id(i: int, size: int, what: str) -> int:
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < size:
        raise VocabularyError(f"{what} id {i!r} outside the vocabulary [0, {size})")
    return int(i)


def _opt(names: Sequence[str] | None) -> tuple[str, ...] | None:
    if isinstance(names, str):
        raise VocabularyError("eos_tokens must be a sequence of strings, not one string")
    return None if names is None else tuple(names)


# ---------------------------------------------------------------- file cache
_CACHE: OrderedDict[tuple[Any, ...], Vocabulary] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 32


def _cached(options: tuple[Any, ...], path: Path, load: Callable[[], Vocabulary]) -> Vocabulary:
    """Load once per (file identity, options) in this process; the file's mtime and size invalidate."""
    try:
        st = path.stat()
        real = os.path.realpath(path)
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read tokenizer file: {exc.strerror or exc}") from exc
    return lru_get(_CACHE, _CACHE_LOCK, (real, st.st_mtime_ns, st.st_size, options), _CACHE_SIZE, load)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read tokenizer file: {exc.strerror or exc}") from exc


def _read_json(path: Path) -> Any:
    raw = _read_bytes(path)
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise VocabularyError(f"{path}: not valid JSON: {exc}") from exc


def _pick_file(path: Path) -> Path:
    """``path`` itself, or the tokenizer file inside a folder."""
    if not path.is_dir():
        return path
    for name in ("tokenizer.json", "tekken.json", "tokenizer.model", "encoder.json", "vocab.json"):
        if (path / name).is_file():
            return path / name
    for pattern in ("*tekken*.json", "*.tiktoken", "*.model"):
        found = sorted(path.glob(pattern))
        if found:
            return found[0]
    raise VocabularyError(f"{path}: no tokenizer file found in this folder")


def _sniff(path: Path) -> str:
    """Which loader reads ``path``: by content, not by name.

    Binary (control bytes other than whitespace) is SentencePiece protobuf;
    text starting with ``{`` is JSON; ``base64 rank`` lines are tiktoken.
    """
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read tokenizer file: {exc.strerror or exc}") from exc
    if not head.strip():
        raise VocabularyError(f"{path}: empty tokenizer file")
    if any(b < 0x09 or 0x0D < b < 0x20 or b == 0x7F for b in head):
        return "sentencepiece"
    text = head.lstrip(b" \t\r\n")
    if text.startswith(b"\xef\xbb\xbf{") or text.startswith(b"{"):
        return _sniff_json(path, _read_json(path))
    if _TIKTOKEN_LINE.match(text.split(b"\n", 1)[0].rstrip(b"\r")):
        return "tiktoken"
    raise VocabularyError(f"{path}: unrecognized tokenizer file (not JSON, tiktoken lines or a SentencePiece model)")


def _sniff_json(path: Path, data: Any) -> str:
    if isinstance(data, dict):
        if isinstance(data.get("model"), dict):
            return "hf"
        if isinstance(data.get("vocab"), list) and isinstance(data.get("config"), dict):
            return "tekken"
        if data and all(isinstance(v, int) for v in data.values()):
            return "encoder"
    raise VocabularyError(f"{path}: JSON is not a tokenizer.json, Tekken file or encoder.json")


# ============================================================ byte-level table
def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable character map (printable Latin-1 bytes map to themselves)."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(0x100 + shifted)
            shifted += 1
    return table


def _unicode_to_byte_translation() -> dict[int, str]:
    """str.translate table turning a byte-level string into Latin-1 (one char per byte).

    Latin-1 characters outside GPT-2's alphabet map to U+FFFF so that the
    following ``encode("latin-1")`` fails on them, as it does on any other
    character outside the alphabet.
    """
    table: dict[int, str] = {cp: _UNDECODABLE for cp in range(256)}
    for b, ch in _bytes_to_unicode().items():
        table[ord(ch)] = chr(b)
    return table


_BYTE_LEVEL = _unicode_to_byte_translation()


def _byte_level_bytes(piece: str) -> bytes | None:
    """Bytes of a byte-level token string; None if it is not one."""
    try:
        return piece.translate(_BYTE_LEVEL).encode("latin-1")
    except UnicodeEncodeError:
        return None


def _metaspace_bytes(piece: str, byte_fallback: bool, replacement: str = _METASPACE) -> bytes:
    """Bytes of a SentencePiece-style piece: ``▁`` → space, ``<0xNN>`` → that byte."""
    if byte_fallback and len(piece) == 6:
        m = _BYTE_PIECE.fullmatch(piece)
        if m:
            return bytes([int(m.group(1), 16)])
    return piece.replace(replacement, " ").encode("utf-8")


# ============================================================ parsed pieces
@dataclass
class _Parsed:
    """What a loader found, before EOS resolution."""

    source: str
    tokens: dict[int, bytes] = field(default_factory=dict)
    specials: set[int] = field(default_factory=set)
    added: dict[str, int] = field(default_factory=dict)  # added/special token text → id
    pieces: Mapping[str, int] = field(default_factory=dict)  # raw token strings → id
    default_eos: set[int] = field(default_factory=set)

    def lookup(self, text: str) -> int | None:
        """Id of a token named by its text: added tokens, raw pieces, then decoded bytes."""
        if text in self.added:
            return self.added[text]
        if text in self.pieces:
            return self.pieces[text]
        want = text.encode("utf-8")
        return next((i for i, b in sorted(self.tokens.items()) if b == want), None)

    def named_eos(self) -> set[int]:
        """Added tokens named in EOS_NAMES; else plain pieces with those names."""
        found = {self.added[n] for n in EOS_NAMES if n in self.added}
        if not found:
            found = {self.pieces[n] for n in EOS_NAMES if n in self.pieces}
        return found

    def build(self, eos_tokens: Sequence[str] | None, size: int | None) -> Vocabulary:
        eos = self.resolve_eos(eos_tokens)
        size = _fit_size(size, self.tokens, self.specials | eos, self.source)
        try:
            return Vocabulary(self.tokens, self.specials, eos, size)
        except VocabularyError as exc:
            raise VocabularyError(f"{self.source}: {exc}") from exc

    def resolve_eos(self, eos_tokens: Sequence[str] | None) -> set[int]:
        if eos_tokens is None:
            return set(self.default_eos)
        out = set()
        for text in _opt(eos_tokens) or ():
            idx = self.lookup(text)
            if idx is None:
                raise VocabularyError(f"{self.source}: EOS token {text!r} is not in the vocabulary")
            out.add(idx)
        return out


def _fit_size(size: int | None, tokens: Mapping[int, bytes], extra: Iterable[int], source: str) -> int:
    need = max([-1, *tokens.keys(), *extra]) + 1
    if size is None:
        return need
    if size < need:
        raise VocabularyError(f"{source}: size {size} is smaller than the largest token id + 1 ({need})")
    return size


# ============================================================ tokenizer.json
def _components(node: Any) -> Iterator[dict[str, Any]]:
    """Every component dict in a (possibly nested ``Sequence``) pipeline node."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            yield cur
            for key in ("pretokenizers", "decoders", "normalizers", "processors"):
                stack.extend(cur.get(key) or [])
        elif isinstance(cur, list):
            stack.extend(cur)


def _types(data: dict[str, Any], *sections: str) -> list[dict[str, Any]]:
    return [c for s in sections for c in _components(data.get(s))]


def _hf_style(data: dict[str, Any]) -> tuple[str, str]:
    """('byte_level' | 'metaspace' | 'literal', metaspace replacement char)."""
    comps = _types(data, "pre_tokenizer", "decoder", "normalizer")
    kinds = {c.get("type") for c in comps}
    if "ByteLevel" in kinds:
        return "byte_level", _METASPACE
    replacement = _METASPACE
    for c in comps:
        if c.get("type") == "Metaspace" and isinstance(c.get("replacement"), str):
            replacement = c["replacement"]
    uses_meta = "Metaspace" in kinds or "ByteFallback" in kinds or any(
        c.get("type") == "Replace" and _METASPACE in json.dumps(c, ensure_ascii=False) for c in comps
    )
    return ("metaspace" if uses_meta else "literal"), replacement


def _hf_model_pieces(model: dict[str, Any], source: str) -> tuple[dict[str, int], set[int]]:
    """(raw piece → id, ids of unknown pieces) from the ``model`` section."""
    mtype = model.get("type")
    vocab = model.get("vocab")
    if mtype == "WordPiece" or model.get("continuing_subword_prefix"):
        raise VocabularyError(
            f"{source}: WordPiece-style tokenizers (continuing-subword prefixes like '##') are not supported: "
            "their tokens do not concatenate to the output text"
        )
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        try:
            pieces = {str(entry[0]): i for i, entry in enumerate(vocab)}
        except (TypeError, IndexError, KeyError) as exc:
            raise VocabularyError(f"{source}: malformed Unigram vocab: {exc}") from exc
        unk = model.get("unk_id")
        return pieces, ({int(unk)} if isinstance(unk, int) else set())
    if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
        raise VocabularyError(f"{source}: model.vocab must map token strings to integer ids")
    unk_token = model.get("unk_token")
    unk = {vocab[unk_token]} if isinstance(unk_token, str) and unk_token in vocab else set()
    return vocab, unk


def _decode_hf_pieces(
    pieces: Mapping[str, int], style: str, replacement: str, byte_fallback: bool, suffix: str
) -> tuple[dict[int, bytes], set[int]]:
    """(id → bytes, ids that could not be decoded)."""
    tokens: dict[int, bytes] = {}
    bad: set[int] = set()
    for piece, idx in pieces.items():
        word_end = bool(suffix) and piece.endswith(suffix)
        core = piece[: -len(suffix)] if word_end else piece
        if style == "byte_level":
            b = _byte_level_bytes(core)
            if b is None:
                bad.add(idx)
                b = piece.encode("utf-8")
                word_end = False
        elif style == "metaspace":
            b = _metaspace_bytes(core, byte_fallback, replacement)
        else:
            m = _BYTE_PIECE.fullmatch(core) if byte_fallback else None
            b = bytes([int(m.group(1), 16)]) if m else core.encode("utf-8")
        tokens[idx] = b + b" " if word_end else b
    return tokens, bad


def _parse_hf_json(data: Any, source: str) -> _Parsed:
    """Tokens and specials of a tokenizer.json, EOS defaults from the file alone."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise VocabularyError(f"{source}: not a tokenizer.json (no 'model' section)")
    model = data["model"]
    pieces, unk = _hf_model_pieces(model, source)
    style, replacement = _hf_style(data)
    byte_fallback = bool(model.get("byte_fallback")) or any(
        c.get("type") == "ByteFallback" for c in _types(data, "decoder")
    )
    suffix = model.get("end_of_word_suffix") or ""
    tokens, bad = _decode_hf_pieces(pieces, style, replacement, byte_fallback, suffix)
    parsed = _Parsed(source, tokens, bad | unk, pieces=pieces)
    _add_hf_added_tokens(parsed, data.get("added_tokens") or [])
    parsed.default_eos = _template_eos(data.get("post_processor"), parsed) | parsed.named_eos()
    return parsed


def _add_hf_added_tokens(parsed: _Parsed, added: Any) -> None:
    if not isinstance(added, list):
        raise VocabularyError(f"{parsed.source}: 'added_tokens' must be a list")
    for tok in added:
        try:
            idx, content = int(tok["id"]), str(tok["content"])
        except (TypeError, KeyError, ValueError) as exc:
            raise VocabularyError(f"{parsed.source}: malformed added token {tok!r}") from exc
        parsed.tokens[idx] = content.encode("utf-8")
        parsed.added[content] = idx
        if tok.get("special"):
            parsed.specials.add(idx)
        else:
            parsed.specials.discard(idx)


def _template_eos(post: Any, parsed: _Parsed) -> set[int]:
    """Tokens a post-processor appends after the text: ``$A </s>``, RoBERTa's ``sep``."""
    out: set[int] = set()
    for comp in _components(post):
        kind = comp.get("type")
        if kind == "TemplateProcessing":
            out |= _after_sequence(comp.get("single") or [], comp.get("special_tokens") or {}, parsed)
        elif kind == "RobertaProcessing" and isinstance(comp.get("sep"), list) and len(comp["sep"]) == 2:
            out.add(int(comp["sep"][1]))
    return out


def _after_sequence(single: list[Any], specials: dict[str, Any], parsed: _Parsed) -> set[int]:
    out: set[int] = set()
    seen_text = False
    for item in single:
        if not isinstance(item, dict):
            continue
        if "Sequence" in item:
            seen_text = True
        elif "SpecialToken" in item and seen_text:
            name = item["SpecialToken"].get("id")
            ids = (specials.get(name) or {}).get("ids")
            if ids:
                out.update(int(i) for i in ids)
            elif name in parsed.added:
                out.add(parsed.added[name])
    return out


def _config_eos(config_dir: Path | None, parsed: _Parsed) -> set[int]:
    """EOS ids from generation_config.json / tokenizer_config.json next to the file."""
    if config_dir is None:
        return set()
    out: set[int] = set()
    gen = _optional_json(config_dir / "generation_config.json")
    ids = gen.get("eos_token_id") if isinstance(gen, dict) else None
    if isinstance(ids, int):
        out.add(ids)
    elif isinstance(ids, list):
        out.update(int(i) for i in ids if isinstance(i, int))
    cfg = _optional_json(config_dir / "tokenizer_config.json")
    eos = cfg.get("eos_token") if isinstance(cfg, dict) else None
    if isinstance(eos, dict):
        eos = eos.get("content")
    if isinstance(eos, str):
        idx = parsed.lookup(eos)
        if idx is not None:
            out.add(idx)
    return out


def _optional_json(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _build_hf_json(
    data: Any, source: str, eos_tokens: Sequence[str] | None, size: int | None, config_dir: Path | None
) -> Vocabulary:
    parsed = _parse_hf_json(data, source)
    from_config = _config_eos(config_dir, parsed)
    if from_config:
        parsed.default_eos = from_config
    return parsed.build(eos_tokens, size)


# ============================================================ transformers objects
def _build_from_hf_object(tok: Any, eos_tokens: Sequence[str] | None, size: int | None) -> Vocabulary:
    source = f"<{type(tok).__name__}>"
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None and callable(getattr(tok, "to_str", None)):
        backend = tok  # a raw tokenizers.Tokenizer
    if backend is not None:
        parsed = _parse_hf_json(json.loads(backend.to_str()), source)
    else:
        parsed = _parse_slow(tok, source)
    _merge_hf_specials(tok, parsed)
    eos_id = getattr(tok, "eos_token_id", None)
    if isinstance(eos_id, int):
        parsed.default_eos = {eos_id}
    if size is None:
        need = _fit_size(None, parsed.tokens, parsed.specials | parsed.default_eos, source)
        size = max(_int_attr(tok, "__len__"), _int_attr(tok, "vocab_size"), need)
    return parsed.build(eos_tokens, size)


def _int_attr(tok: Any, name: str) -> int:
    try:
        value = len(tok) if name == "__len__" else getattr(tok, name, 0)
        return int(value or 0)
    except (TypeError, ValueError, NotImplementedError):
        return 0


def _merge_hf_specials(tok: Any, parsed: _Parsed) -> None:
    """Apply a transformers object's ``all_special_ids`` and added tokens.

    An added token's bytes are its literal content; it is special if marked
    so or listed in ``all_special_ids``, normal otherwise.
    """
    listed = {i for i in getattr(tok, "all_special_ids", None) or () if isinstance(i, int) and i >= 0}
    parsed.specials |= listed
    decoder = getattr(tok, "added_tokens_decoder", None) or {}
    for idx, added in decoder.items():
        idx = int(idx)
        content = str(getattr(added, "content", added))
        parsed.added[content] = idx
        parsed.tokens[idx] = content.encode("utf-8")
        if getattr(added, "special", False) or idx in listed:
            parsed.specials.add(idx)
        else:
            parsed.specials.discard(idx)


def _parse_slow(tok: Any, source: str) -> _Parsed:
    """A Python-backend tokenizer: byte-level (has ``byte_decoder``) or SentencePiece (``sp_model``)."""
    n = max(_int_attr(tok, "__len__"), _int_attr(tok, "vocab_size"))
    pieces = tok.convert_ids_to_tokens(list(range(n)))
    parsed = _Parsed(source, pieces={p: i for i, p in enumerate(pieces) if isinstance(p, str)})
    byte_decoder = getattr(tok, "byte_decoder", None)
    sp = getattr(tok, "sp_model", None)
    if isinstance(byte_decoder, dict):
        for i, p in enumerate(pieces):
            if isinstance(p, str):
                _add_slow_byte_level(parsed, i, p, byte_decoder)
    elif sp is not None:
        for i, p in enumerate(pieces):
            if isinstance(p, str):
                parsed.tokens[i] = _metaspace_bytes(p, True)
                if _sp_is_special(sp, p):
                    parsed.specials.add(i)
    else:
        raise VocabularyError(
            f"{source}: unsupported slow tokenizer (neither byte-level nor SentencePiece); "
            "use its fast version or build a Vocabulary from an id → bytes mapping"
        )
    parsed.default_eos = parsed.named_eos()
    return parsed


def _add_slow_byte_level(parsed: _Parsed, idx: int, piece: str, byte_decoder: Mapping[str, int]) -> None:
    try:
        parsed.tokens[idx] = bytes(byte_decoder[ch] for ch in piece)
    except (KeyError, ValueError):
        parsed.tokens[idx] = piece.encode("utf-8")
        parsed.specials.add(idx)


def _sp_is_special(sp: Any, piece: str) -> bool:
    """Control, unknown or unused SentencePiece piece (text never encodes to it)."""
    sp_id = sp.piece_to_id(piece)
    if sp.id_to_piece(sp_id) != piece:
        return True
    return bool(sp.is_control(sp_id) or sp.is_unknown(sp_id) or sp.is_unused(sp_id))


# ============================================================ tiktoken
def _build_tiktoken(
    raw: bytes, source: str, specials: Mapping[str, int], eos_tokens: Sequence[str] | None, size: int | None
) -> Vocabulary:
    tokens = _parse_tiktoken_lines(raw, source)
    parsed = _Parsed(source, tokens)
    for text, idx in specials.items():
        if not isinstance(idx, int) or idx < 0:
            raise VocabularyError(f"{source}: special token {text!r} has invalid id {idx!r}")
        if idx in tokens and tokens[idx] != text.encode("utf-8"):
            raise VocabularyError(f"{source}: special token {text!r} id {idx} collides with a ranked token")
        parsed.tokens[idx] = text.encode("utf-8")
        parsed.specials.add(idx)
        parsed.added[text] = idx
    parsed.default_eos = {parsed.added[n] for n in EOS_NAMES if n in parsed.added}
    return parsed.build(eos_tokens, size)


def _parse_tiktoken_lines(raw: bytes, source: str) -> dict[int, bytes]:
    tokens: dict[int, bytes] = {}
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError("expected 'base64 rank'")
            token, rank = binascii.a2b_base64(parts[0], strict_mode=True), int(parts[1])
        except (ValueError, binascii.Error) as exc:
            raise VocabularyError(f"{source}: line {lineno}: not a tiktoken 'base64 rank' line ({exc})") from exc
        if rank in tokens:
            raise VocabularyError(f"{source}: line {lineno}: rank {rank} appears twice")
        tokens[rank] = token
    if not tokens:
        raise VocabularyError(f"{source}: no tokens in tiktoken file")
    return tokens


# ============================================================ SentencePiece
def _build_sentencepiece(raw: bytes, source: str, eos_tokens: Sequence[str] | None, size: int | None) -> Vocabulary:
    try:
        import sentencepiece as spm
    except ImportError as exc:
        raise VocabularyError(
            f"{source}: loading a SentencePiece model needs the 'sentencepiece' package: pip install sentencepiece"
        ) from exc
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(raw)
    except (RuntimeError, OSError, TypeError) as exc:
        raise VocabularyError(f"{source}: not a SentencePiece model: {exc}") from exc
    parsed = _Parsed(source)
    pieces: dict[str, int] = {}
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        pieces[piece] = i
        if sp.is_byte(i):
            parsed.tokens[i] = _metaspace_bytes(piece, True)
            continue
        parsed.tokens[i] = piece.replace(_METASPACE, " ").encode("utf-8")
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            parsed.specials.add(i)
            parsed.added[piece] = i
    parsed.pieces = pieces
    parsed.default_eos = {sp.eos_id()} if sp.eos_id() >= 0 else set()
    return parsed.build(eos_tokens, size)


# ============================================================ Tekken
# Special tokens of Tekken files older than v7 that do not list them.
_TEKKEN_LEGACY_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)  # fmt: skip


def _build_tekken(data: Any, source: str, eos_tokens: Sequence[str] | None, size: int | None) -> Vocabulary:
    """Ids ``0 .. num_special-1`` are special; token of rank r has id ``r + num_special``.

    As Mistral's Tekkenizer does, the vocabulary is cut to ``default_vocab_size``
    ids in all, and missing special slots are filled with ``<SPECIAL_i>``.
    """
    try:
        config, vocab = data["config"], data["vocab"]
        num_special = int(config["default_num_special_tokens"])
        total = int(config.get("default_vocab_size") or (len(vocab) + num_special))
    except (TypeError, KeyError, ValueError) as exc:
        raise VocabularyError(f"{source}: not a Tekken file (needs config and vocab): {exc}") from exc
    parsed = _Parsed(source)
    for rank, text in enumerate(_tekken_special_names(data.get("special_tokens"), num_special, source)):
        parsed.tokens[rank] = text.encode("utf-8")
        parsed.specials.add(rank)
        parsed.added[text] = rank
    for entry in vocab[: max(0, total - num_special)]:
        try:
            rank, token = int(entry["rank"]), binascii.a2b_base64(entry["token_bytes"], strict_mode=True)
        except (TypeError, KeyError, ValueError, binascii.Error) as exc:
            raise VocabularyError(f"{source}: malformed Tekken vocab entry {entry!r}") from exc
        parsed.tokens[rank + num_special] = token
    parsed.default_eos = {parsed.added["</s>"]} if "</s>" in parsed.added else set()
    return parsed.build(eos_tokens, size or total)


def _tekken_special_names(listed: Any, num_special: int, source: str) -> list[str]:
    names = [f"<SPECIAL_{i}>" for i in range(num_special)]
    if listed is None:
        listed = [{"rank": i, "token_str": s} for i, s in enumerate(_TEKKEN_LEGACY_SPECIALS)]
    try:
        for item in listed:
            rank = int(item["rank"])
            if not 0 <= rank < num_special:
                raise ValueError(f"rank {rank} outside [0, {num_special})")
            names[rank] = str(item["token_str"])
    except (TypeError, KeyError, ValueError) as exc:
        raise VocabularyError(f"{source}: malformed Tekken special tokens: {exc}") from exc
    return names


# ============================================================ encoder.json
_GPT2_SPECIAL = re.compile(r"<\|[^|]*\|>")


def _build_encoder_json(data: Any, source: str, eos_tokens: Sequence[str] | None, size: int | None) -> Vocabulary:
    if not isinstance(data, dict) or not all(isinstance(v, int) for v in data.values()):
        raise VocabularyError(f"{source}: encoder.json must map token strings to integer ids")
    tokens, bad = _decode_hf_pieces(data, "byte_level", _METASPACE, False, "")
    parsed = _Parsed(source, tokens, bad, pieces=data)
    for piece, idx in data.items():
        if _GPT2_SPECIAL.fullmatch(piece):
            parsed.tokens[idx] = piece.encode("utf-8")
            parsed.specials.add(idx)
            parsed.added[piece] = idx
    parsed.default_eos = parsed.named_eos()
    return parsed.build(eos_tokens, size)
