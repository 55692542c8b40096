"""``compile_grammar``: grammar text + vocabulary → ``CompiledGrammar``.

A ``CompiledGrammar`` is immutable from the outside: the BNF grammar, its
terminal DFAs, the token tables and the vocabulary. It owns the shared,
memoized runtime pieces (the Earley parser, per-state masks) that every
``Matcher`` of the grammar uses.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ..budget import compile_budget
from ..config import CompileConfig
from ..frontends import parse_grammar
from ..normalize import BnfGrammar, normalize
from ..caches import GenerationalCache
from ..runtime.earley import DEAD, EarleyParser, ParserState
from ..runtime.masks import Mask, MaskBuilder
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


def prepare_vocabulary(vocab: Vocabulary) -> Vocabulary:
    """Build now what every grammar for ``vocab`` shares (its token trie and the trie of its long tokens, token
    bytes and byte order), which the first compile or mask would otherwise pay (~0.35 s for 128k tokens). A
    server calls it at start-up (the integrations do), before its first request and before it freezes its heap."""
    from ..runtime.masks import byte_order
    from .dfa_walk import long_tokens
    from .table_cache import TWIN_TOKEN_BYTES
    from .tables import as_trie

    for rung in TWIN_TOKEN_BYTES:
        long_tokens(as_trie(vocab), rung)
    steppable_token_bytes(vocab)
    byte_order(vocab)
    return vocab


_EMPTY_ROWS = np.zeros(0, dtype=np.int32)
_EMPTY_ROWS.setflags(write=False)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def source_text(source: Any) -> str:
    """The grammar text, or a schema's canonical JSON (what ``grammar_hash`` hashes)."""
    return source if isinstance(source, str) else json.dumps(source, sort_keys=True)


def grammar_hash(source: Any, syntax: str, start: str | None, options: dict) -> str:
    text = source_text(source)
    if options.get("registry") is not None:  # a JSON Schema registry: its URIs (its documents can be megabytes)
        options = {**options, "registry": sorted(map(str, options["registry"]))}
    blob = json.dumps([text, syntax, start, sorted(options.items(), key=str)], default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class CompiledGrammar:
    """A grammar compiled for one vocabulary; share it between all matchers (and threads) of that grammar.

    It owns the shared runtime pieces: the Earley parser, the token tables
    (filled on first use unless built eagerly), and the mask builder. Every
    cache behind them is bounded (``cache_stats()`` shows their sizes).
    """

    def __init__(
        self,
        bnf: BnfGrammar,
        vocab: Vocabulary,
        *,
        config: CompileConfig,
        end_mode: str,
        source_hash: str | Callable[[], str] = "",
        tables: Any = None,
    ) -> None:
        if end_mode not in ("eager", "eos"):
            raise OptionError(f"end_mode must be 'eager' or 'eos', not {end_mode!r}")
        self.bnf = bnf
        self.vocab = vocab
        self.config = config
        self.end_mode = end_mode
        self._source_hash = source_hash
        self.parser = EarleyParser(bnf, memo_limit=config.memo_limit)
        self.initial_state = self.parser.initial_state
        self.eos_ids = _frozen(np.array(sorted(set(int(i) for i in vocab.eos_ids)), dtype=np.int32))
        self.eos_set = frozenset(int(i) for i in vocab.eos_ids)
        self._token_bytes = steppable_token_bytes(vocab)
        self.words = (vocab.size + 31) // 32
        self.tables = tables
        self._token_memo = GenerationalCache(config.memo_limit)
        self._token_span = max(1, vocab.size, len(self._token_bytes))  # token memo key: state uid * span + id
        # Masks interned by content: thousands of parser states share a few hundred distinct masks, and each
        # Mask keeps its packed bitset (V/8 bytes) once computed; one Mask per state held ~700 MB per 1,000
        # JSON documents.
        self._mask_intern = GenerationalCache(config.mask_cache_limit)
        self._masks = (MaskBuilder(self.parser, tables, vocab, self._token_bytes, cache_limit=config.mask_cache_limit)
                       if tables is not None and config.use_tables else None)
        self._sorted_tokens: SortedTokens | None = None

    @property
    def source_hash(self) -> str:
        """sha256 of the source and options (an artifact's ``grammar_hash``); computed on first use, because
        hashing a large registry's URIs costs more than compiling a small schema."""
        if callable(self._source_hash):
            self._source_hash = self._source_hash()
        return self._source_hash

    @property
    def dense_rows(self) -> np.ndarray:
        """``uint32 [R, W]``: the table rows computed so far (``mask_parts`` row ids index it)."""
        if self.tables is None:
            return np.zeros((0, self.words), dtype=np.uint32)
        return self.tables.rows

    def cache_stats(self) -> dict:
        """Sizes of the shared runtime caches (all bounded; Earley sets are freed when no state holds them)."""
        stats = self.parser.cache_stats()
        stats["token_steps"] = len(self._token_memo)
        stats["distinct_masks"] = len(self._mask_intern)
        if self._masks is not None:
            stats.update(self._masks.cache_stats())
        if self.tables is not None:
            stats.update(self.tables.summary())
        return stats

    # ------------------------------------------------------------- stepping

    def step_token(self, state: ParserState, token_id: int) -> tuple[ParserState, bool]:
        """(state after the token's bytes, whether the grammar completed at a byte boundary inside it).
        ``token_id`` must be a vocabulary id, ``0 <= token_id < V`` (``Matcher`` turns others into
        ``TokenRejected``; here they are a ``ValueError``: the memo key below is unique only for those ids)."""
        if not 0 <= token_id < self._token_span:
            raise ValueError(f"token id {token_id!r} is outside the vocabulary (size {self.vocab.size})")
        key = state.uid * self._token_span + token_id  # an int key: no tuple for the garbage collector to track
        hit = self._token_memo[key]
        if hit is None:
            data = self._token_bytes[token_id]
            after, passed = (DEAD, False) if data is None else self.parser.step_token(state, data)
            # the memo keeps the state alone when nothing completed inside (most tokens): one tracked tuple fewer
            # per entry for the garbage collector to scan
            hit = self._token_memo.put(key, (after, True) if passed else after)
        return hit if type(hit) is tuple else (hit, False)

    # ---------------------------------------------------------------- masks

    def reference_allowed_ids(self, state: ParserState) -> np.ndarray:
        """The exact allowed set by walking every token through the parser (slow; the oracle)."""
        if self._sorted_tokens is None:
            self._sorted_tokens = SortedTokens(self.vocab)
        ids = reference_allowed(self.parser, state, self._sorted_tokens)
        return self._with_eos(state, ids)

    def _with_eos(self, state: ParserState, ids: np.ndarray) -> np.ndarray:
        if self.end_mode == "eos" and state.accepting and self.eos_ids.size:
            ids = np.union1d(ids, self.eos_ids).astype(np.int32)
        return ids

    def mask(self, state: ParserState) -> Mask:
        """The state's mask (computed once per state, shared by every matcher in it)."""
        mask = state.mask
        if mask is None:
            if self._masks is not None:
                rows, extras = self._masks.parts(state)
            else:
                rows, extras = _EMPTY_ROWS, self.reference_allowed_ids(state)
            if self.end_mode == "eos" and state.accepting:
                extras = self._with_eos(state, extras)
            key = (rows.tobytes(), extras.tobytes())
            mask = self._mask_intern[key]
            if mask is None:
                mask = self._mask_intern.put(key, Mask(rows, _frozen(extras)))
            state.mask = mask
        return mask

    def mask_parts(self, state: ParserState) -> tuple[np.ndarray, np.ndarray]:
        """(dense row ids into ``dense_rows``, extra token ids) whose union is the allowed set (read-only arrays)."""
        mask = self.mask(state)
        return mask.rows, mask.extras

    def row_keys(self, mask: Mask) -> tuple[bytes, ...]:
        """Content digests of the mask's dense rows (their addresses in a device ``RowPool``)."""
        keys = mask.row_keys
        if keys is None:
            row_key = self.tables.store.row_key
            keys = mask.row_keys = tuple(row_key(r) for r in mask.rows.tolist())
        return keys

    def allowed_bitset(self, state: ParserState) -> np.ndarray:
        """The allowed set as read-only ``uint32[ceil(V/32)]`` words (bit t%32 of word t//32)."""
        return self._packed(state).bits

    def bitmask_words(self, state: ParserState) -> np.ndarray:
        """``allowed_bitset`` as read-only ``int32`` words (the same memory), as vLLM-style bitmasks hold them."""
        return self._packed(state).words

    def _packed(self, state: ParserState) -> Mask:
        """The state's mask with its packed bitset (computed once per mask, shared by every state with it)."""
        mask = self.mask(state)
        if mask.bits is None:
            bits = np.zeros(self.words, dtype=np.uint32)
            if mask.rows.size:
                np.bitwise_or.reduce(self.dense_rows[mask.rows], axis=0, out=bits)
            extras = mask.extras
            if extras.size:
                np.bitwise_or.at(bits, extras >> 5, (np.uint32(1) << (extras & 31).astype(np.uint32)))
            bits = _frozen(bits)
            mask.words = bits.view(np.int32)  # before ``bits``: another thread that sees ``bits`` reads it
            mask.bits = bits
        return mask

    def allowed_ids(self, state: ParserState) -> np.ndarray:
        """Sorted read-only int32 ids of the allowed tokens in ``state``."""
        mask = self.mask(state)
        if not mask.rows.size:
            return mask.extras
        ids = mask.ids
        if ids is None:
            bits = np.unpackbits(self.allowed_bitset(state).view(np.uint8), bitorder="little")
            ids = mask.ids = _frozen(np.flatnonzero(bits[: self.vocab.size]).astype(np.int32))
        return ids

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
    eager: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    **options: Any,
) -> CompiledGrammar:
    """Compile ``source`` (text, or a schema for ``json_schema``) for ``vocab``.

    ``end_mode`` is ``"eager"`` (finish as soon as the output is a sentence;
    KBNF's default) or ``"eos"`` (the EOS token ends the output; the default of
    the other syntaxes). ``options`` go to the front end (JSON Schema options).

    Two kinds of user, one design. By default only the grammar-level work is
    done here (front end, BNF, terminal DFAs, the parser's start) and the first
    mask, all under ``config.time_budget_s``: any other token table row is
    computed the first time a matcher reaches its terminal and shared from then
    on, so a per-request JSON Schema is ready in milliseconds.
    ``eager=True`` computes every reachable table now, for a fixed grammar
    that is compiled once and saved as an artifact (``save`` does it anyway);
    ``progress(stage, done, total)`` is called while it runs.
    """
    config = config or CompileConfig()
    if not isinstance(config, CompileConfig):
        raise OptionError(f"config must be a CompileConfig, got {type(config).__name__}")
    with compile_budget(config):
        grammar = parse_grammar(source, syntax, start=start, **options)
        bnf = normalize(grammar, config.normalize_config(syntax))
        mode = end_mode or grammar.end_mode
        del grammar  # freed now, not traced by the collection that resumes when the budget closes
        tables = None
        if config.use_tables:
            from .grammar_tables import build_grammar_tables

            tables = build_grammar_tables(bnf, vocab, config=config, eager=eager, progress=progress)
        text = source_text(source)  # as compiled, even if the caller mutates the schema later
        compiled = CompiledGrammar(
            bnf,
            vocab,
            config=config,
            end_mode=mode,
            source_hash=lambda: grammar_hash(text, syntax, start, options),
            tables=tables,
        )
        if compiled.tables is not None:
            # the first mask under the same budget: the table rows it needs are work moved out of compiling
            # (lazy tables), and a grammar whose first mask would take long fails here, fast, with a clear
            # error, not in the serving loop (200 patterns in a oneOf: 0.6 s to compile, then a 4 s first mask)
            compiled.mask(compiled.initial_state)
        return compiled
