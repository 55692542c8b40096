"""``compile_grammar``: grammar text + vocabulary → ``CompiledGrammar``.

A ``CompiledGrammar`` is immutable from the outside: the BNF grammar, its
terminal DFAs, the token tables and the vocabulary. It owns the shared,
memoized runtime pieces (the Earley parser, per-state masks) that every
``Matcher`` of the grammar uses.
"""
from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import asdict
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ..budget import compile_budget
from ..config import CompileConfig
from ..frontends import parse_grammar
from ..normalize import BnfGrammar, NormalizeConfig, normalize
from ..runtime.earley import DEAD, BoundedCache, EarleyParser
from ..runtime.reference_mask import SortedTokens, reference_allowed
from ..errors import OptionError
from ..vocab import Vocabulary


@lru_cache(maxsize=8)
def steppable_token_bytes(vocab: Vocabulary) -> tuple[bytes | None, ...]:
    """Per id, the bytes a grammar steps through; ``None`` for special, empty, hole and padding ids."""
    matrix, lengths = vocab.token_matrix()
    out: list[bytes | None] = [None] * vocab.size
    for i in np.flatnonzero(lengths).tolist():
        out[i] = matrix[i, : lengths[i]].tobytes()
    return tuple(out)


def grammar_hash(source: Any, syntax: str, start: str | None, options: dict) -> str:
    text = source if isinstance(source, str) else json.dumps(source, sort_keys=True)
    if options.get("registry") is not None:  # a JSON Schema registry: its URIs (its documents can be megabytes)
        options = {**options, "registry": sorted(map(str, options["registry"]))}
    blob = json.dumps([text, syntax, start, sorted(options.items(), key=str)], default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class CompiledGrammar:
    """A grammar compiled for one vocabulary; share it between all matchers of that grammar."""

    def __init__(
        self,
        bnf: BnfGrammar,
        vocab: Vocabulary,
        *,
        config: CompileConfig,
        end_mode: str,
        source_hash: str = "",
        tables: Any = None,
    ) -> None:
        if end_mode not in ("eager", "eos"):
            raise ValueError(f"end_mode must be 'eager' or 'eos', not {end_mode!r}")
        self.bnf = bnf
        self.vocab = vocab
        self.config = config
        self.end_mode = end_mode
        self.source_hash = source_hash
        self.parser = EarleyParser(bnf, memo_limit=config.memo_limit)
        self.initial_state = self.parser.initial_state
        self.eos_ids = np.array(vocab.eos_ids, dtype=np.int32)
        self.eos_set = frozenset(int(i) for i in vocab.eos_ids)
        self._token_bytes = steppable_token_bytes(vocab)
        self.words = (vocab.size + 31) // 32
        self.tables = tables
        self.table_key = uuid.uuid4().hex  # names this grammar's rows in a device RowPool
        self.dense_rows = tables.rows if tables is not None else np.zeros((0, self.words), dtype=np.uint32)
        self._token_memo = BoundedCache(config.memo_limit)
        self._mask_cache = BoundedCache(config.mask_cache_limit)
        self._bitset_cache = BoundedCache(config.mask_cache_limit)
        self._ids_cache = BoundedCache(config.mask_cache_limit)
        self._sorted_tokens: SortedTokens | None = None

    # ------------------------------------------------------------- stepping

    def step_token(self, state: int, token_id: int) -> tuple[int, bool]:
        """(state after the token's bytes, whether the grammar completed at a byte boundary inside it)."""
        key = (state, token_id)
        hit = self._token_memo.get(key)
        if hit is not None:
            return hit
        data = self._token_bytes[token_id]
        if data is None:
            result = (DEAD, False)
        else:
            new_state, passed, _ = self.parser.step_bytes(state, data)
            result = (new_state, passed)
        self._token_memo.put(key, result)
        return result

    # ---------------------------------------------------------------- masks

    def reference_allowed_ids(self, state: int) -> np.ndarray:
        """The exact allowed set by walking every token through the parser (slow; the oracle)."""
        if self._sorted_tokens is None:
            self._sorted_tokens = SortedTokens(self.vocab)
        ids = reference_allowed(self.parser, state, self._sorted_tokens)
        return self._with_eos(state, ids)

    def _with_eos(self, state: int, ids: np.ndarray) -> np.ndarray:
        if self.end_mode == "eos" and self.parser.is_accepting(state) and self.eos_ids.size:
            ids = np.union1d(ids, self.eos_ids).astype(np.int32)
        return ids

    def mask_parts(self, state: int) -> tuple[np.ndarray, np.ndarray]:
        """(dense row ids into ``self.tables.rows``, extra token ids) whose union is the allowed set."""
        hit = self._mask_cache.get(state)
        if hit is None:
            if self.tables is not None and self.config.use_tables:
                rows, extras = self.tables.state_mask(self, state)
                hit = (rows, self._with_eos(state, extras))
            else:
                hit = (np.zeros(0, dtype=np.int32), self.reference_allowed_ids(state))
            for array in hit:  # shared by every matcher: nobody may write into it
                array.setflags(write=False)
            self._mask_cache.put(state, hit)
        return hit

    def allowed_bitset(self, state: int) -> np.ndarray:
        """The allowed set as ``uint32[ceil(V/32)]`` words (bit t%32 of word t//32)."""
        hit = self._bitset_cache.get(state)
        if hit is None:
            rows, extras = self.mask_parts(state)
            words = np.zeros(self.words, dtype=np.uint32)
            if rows.size:
                np.bitwise_or.reduce(self.tables.rows[rows], axis=0, out=words)
            if extras.size:
                np.bitwise_or.at(words, extras >> 5, (np.uint32(1) << (extras & 31).astype(np.uint32)))
            hit = words
            hit.setflags(write=False)
            self._bitset_cache.put(state, hit)
        return hit

    def allowed_ids(self, state: int) -> np.ndarray:
        """Sorted int32 ids of the allowed tokens in ``state``."""
        rows, extras = self.mask_parts(state)
        if not rows.size:
            return extras
        hit = self._ids_cache.get(state)
        if hit is None:
            bits = np.unpackbits(self.allowed_bitset(state).view(np.uint8), bitorder="little")
            hit = np.flatnonzero(bits[: self.vocab.size]).astype(np.int32)
            hit.setflags(write=False)
            self._ids_cache.put(state, hit)
        return hit

    # ------------------------------------------------------------ artifact

    def save(self, path) -> int:
        """Write this compiled grammar to one artifact file; returns its size in bytes."""
        from .artifact import save_compiled

        return save_compiled(self, path)

    # ------------------------------------------------------------- summary

    def summary(self) -> dict:
        g = self.bnf
        info = {
            "terminals": len(g.terminals),
            "dfa_states": int(sum(d.n_states for d in g.dfas)),
            "nonterminals": len(g.nonterminals),
            "rules": len(g.rules),
            "end_mode": self.end_mode,
            "vocab_size": self.vocab.size,
        }
        if self.tables is not None:
            info.update(self.tables.summary())
        return info

    def config_dict(self) -> dict:
        return asdict(self.config)


def compile_grammar(
    source: Any,
    vocab: Vocabulary,
    syntax: str = "kbnf",
    start: str | None = None,
    end_mode: str | None = None,
    *,
    config: CompileConfig | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    **options: Any,
) -> CompiledGrammar:
    """Compile ``source`` (text, or a schema for ``json_schema``) for ``vocab``.

    ``end_mode`` is ``"eager"`` (finish as soon as the output is a sentence;
    KBNF's default) or ``"eos"`` (the EOS token ends the output; the default of
    the other syntaxes). ``options`` go to the front end (JSON Schema options).
    ``progress(stage, done, total)`` is called during table building.
    """
    config = config or CompileConfig()
    if not isinstance(config, CompileConfig):
        raise OptionError(f"config must be a CompileConfig, got {type(config).__name__}")
    with compile_budget(config):
        grammar = parse_grammar(source, syntax, start=start, **options)
        bnf = normalize(grammar, config.normalize_config())
        mode = end_mode or grammar.end_mode
        tables = None
        if config.use_tables:
            from .grammar_tables import build_grammar_tables

            tables = build_grammar_tables(bnf, vocab, config=config, progress=progress)
    return CompiledGrammar(
        bnf,
        vocab,
        config=config,
        end_mode=mode,
        source_hash=grammar_hash(source, syntax, start, options),
        tables=tables,
    )
