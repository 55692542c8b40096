"""Artifact files: one compiled grammar for one vocabulary, loadable in milliseconds.

Layout (no pickle; loading never executes anything from the file)::

    b"KBNFGPU\\0" | u64 header length | JSON header | array bytes | sha256 of all before

The header holds the format and package versions, the grammar hash, the
vocabulary fingerprint, the BNF rules, the terminal names, the compile config
and an index of the arrays (name, dtype from a fixed whitelist, shape, offset).
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import fields
from pathlib import Path

import numpy as np

from .. import ir
from ..automata import ByteDFA
from ..errors import ArtifactError
from ..normalize import BnfGrammar, BnfRule
from ..vocab import Vocabulary
from .compiled import CompileConfig, CompiledGrammar
from .grammar_tables import GrammarTables, table_cache
from .tables import as_trie

MAGIC = b"KBNFGPU\0"
FORMAT_VERSION = 1
_DTYPES = {"<i4", "<i8", "<u4", "|u1", "|b1"}


def _package_version() -> str:
    from .. import __version__

    return __version__


def save_compiled(compiled: CompiledGrammar, path: str | os.PathLike[str]) -> int:
    """Write ``compiled`` to ``path`` atomically; returns the file size in bytes."""
    bnf = compiled.bnf
    arrays: dict[str, np.ndarray] = {}
    for t, dfa in enumerate(bnf.dfas):
        arrays[f"dfa{t}_transitions"] = dfa.transitions
        arrays[f"dfa{t}_accepting"] = dfa.accepting
    if compiled.tables is not None:
        # an artifact serves a fixed grammar: every reachable table, not just those computed so far
        arrays.update({f"tables_{k}": v for k, v in compiled.tables.build_all().to_arrays().items()})
    index = []
    chunks = []
    offset = 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array)
        if data.dtype.byteorder == ">":
            data = data.astype(data.dtype.newbyteorder("<"))
        blob = data.tobytes()
        index.append({"name": name, "dtype": data.dtype.str, "shape": list(data.shape), "offset": offset,
                      "nbytes": len(blob)})
        chunks.append(blob)
        offset += len(blob)
    header = {
        "format_version": FORMAT_VERSION,
        "package_version": _package_version(),
        "grammar_hash": compiled.source_hash,
        "vocab_fingerprint": compiled.vocab.fingerprint,
        "vocab_size": compiled.vocab.size,
        "end_mode": compiled.end_mode,
        "config": compiled.config_dict(),
        "nonterminals": list(bnf.nonterminals),
        "terminals": [bnf.terminal_name(t) for t in range(len(bnf.terminals))],
        "rules": [[r.lhs, list(r.rhs)] for r in bnf.rules],
        "nullable": sorted(bnf.nullable),
        "has_tables": compiled.tables is not None,
        "arrays": index,
    }
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    body = MAGIC + struct.pack("<Q", len(head)) + head + b"".join(chunks)
    data = body + hashlib.sha256(body).digest()
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return len(data)


def _fail(path, why: str) -> ArtifactError:
    return ArtifactError(f"cannot load artifact {path}: {why}")


def load_compiled(path: str | os.PathLike[str], vocab: Vocabulary) -> CompiledGrammar:
    """Load an artifact written by ``CompiledGrammar.save`` for ``vocab``.

    Refuses (``ArtifactError``) a file that is not an artifact, is corrupted
    (checksum), comes from a newer format, or was compiled for another vocabulary.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise _fail(path, err.strerror or str(err)) from None
    if len(data) < len(MAGIC) + 8 + 32 or not data.startswith(MAGIC):
        raise _fail(path, "not a kbnf_gpu artifact (bad magic bytes)")
    body, digest = data[:-32], data[-32:]
    if hashlib.sha256(body).digest() != digest:
        raise _fail(path, "checksum mismatch: the file is corrupted or was modified")
    (head_len,) = struct.unpack_from("<Q", body, len(MAGIC))
    start = len(MAGIC) + 8
    try:
        header = json.loads(body[start : start + head_len].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _fail(path, "unreadable header") from None
    if not isinstance(header, dict):
        raise _fail(path, "unreadable header")
    version = header.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise _fail(path, f"format version {version} is newer than this kbnf_gpu supports ({FORMAT_VERSION}); "
                          "upgrade kbnf_gpu or recompile")
    if header.get("vocab_fingerprint") != vocab.fingerprint:
        raise _fail(path, "it was compiled for a different vocabulary (fingerprint mismatch); recompile it "
                          "for this tokenizer")
    payload = memoryview(body)[start + head_len :]
    arrays: dict[str, np.ndarray] = {}
    try:
        for entry in header["arrays"]:
            if entry["dtype"] not in _DTYPES:
                raise _fail(path, f"array {entry['name']!r} has unsupported dtype {entry['dtype']!r}")
            lo, n = int(entry["offset"]), int(entry["nbytes"])
            if lo < 0 or n < 0 or lo + n > len(payload):
                raise _fail(path, f"array {entry['name']!r} lies outside the file")
            array = np.frombuffer(payload[lo : lo + n], dtype=np.dtype(entry["dtype"]))
            arrays[str(entry["name"])] = array.reshape([int(d) for d in entry["shape"]])  # never allocates
        n_terms = len(header["terminals"])
        dfas = tuple(ByteDFA(arrays[f"dfa{t}_transitions"], arrays[f"dfa{t}_accepting"]) for t in range(n_terms))
        bnf = BnfGrammar(
            nonterminals=tuple(header["nonterminals"]),
            terminals=tuple(ir.Terminal(ir.Pattern(f"<artifact:{t}>"), name=name)
                            for t, name in enumerate(header["terminals"])),
            dfas=dfas,
            rules=tuple(BnfRule(int(lhs), tuple(int(s) for s in rhs)) for lhs, rhs in header["rules"]),
            start=0,
            end_mode=header["end_mode"],
            nullable=frozenset(int(n) for n in header["nullable"]),
        )
        _validate(bnf)
        if header["end_mode"] not in ("eos", "eager"):
            raise ValueError(f"unknown end mode {header['end_mode']!r}")
        known = {f.name for f in fields(CompileConfig)} - {"cache_dir"}  # a file never picks where we write
        config = CompileConfig(**{k: v for k, v in header["config"].items() if k in known})
        tables = None
        if header.get("has_tables"):
            tables = GrammarTables.from_arrays(
                bnf, as_trie(vocab), table_cache(config.cache_dir, config.sparse_limit),
                {k[len("tables_"):]: v for k, v in arrays.items() if k.startswith("tables_")})
    except ArtifactError:
        raise
    except (KeyError, ValueError, TypeError, IndexError, AttributeError, OverflowError) as err:
        raise _fail(path, f"malformed contents ({type(err).__name__}: {err})") from None
    return CompiledGrammar(bnf, vocab, config=config, end_mode=header["end_mode"],
                           source_hash=header.get("grammar_hash", ""), tables=tables)


def _validate(bnf: BnfGrammar) -> None:
    """Reject a (checksum-valid but crafted) grammar that would index out of range at run time."""
    n_nt, n_t = len(bnf.nonterminals), len(bnf.terminals)
    if not bnf.rules or bnf.rules[0].lhs != 0:
        raise ValueError("rule 0 must be the augmented start")
    for rule in bnf.rules:
        if not 0 <= rule.lhs < n_nt or any(not (-n_t <= s < n_nt) for s in rule.rhs):
            raise ValueError("a rule refers to a symbol that does not exist")
    for dfa in bnf.dfas:
        if dfa.n_states and (dfa.transitions.max() >= dfa.n_states or dfa.transitions.min() < -1):
            raise ValueError("a DFA transition points outside its states")
