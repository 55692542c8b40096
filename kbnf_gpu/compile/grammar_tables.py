"""A grammar's token tables, and how a parser state becomes a mask from them.

For every terminal ``t`` and DFA state ``q`` (see ``tables``):

* ``INSIDE[t][q]``: tokens that keep ``t`` alive;
* ``CROSS[t, t2][q]``: tokens that complete ``t`` and continue inside ``t2``,
  for the terminals ``t2`` that can follow ``t`` in the grammar (static FOLLOW);
* ``DEEP[t, t2][q]``: candidates that complete ``t`` and then a whole lexeme
  of the follower ``t2``: checked exactly by stepping the parser.

At run time a scan pair ``(item, t, q)`` allows ``INSIDE[t][q]``, plus
``CROSS[t, t2][q]`` for the terminals ``t2`` the parser actually expects after
the item's terminal, plus the ``DEEP[t, t2][q]`` candidates (same ``t2``) that
survive the exact check.
A state's mask is the union over its pairs: a tuple of dense row ids and a
short array of extra token ids.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from ..normalize import BnfGrammar
from ..runtime.earley import DEAD
from .row_store import RowStore, is_dense_ref
from .table_cache import TableCache
from .token_trie import TokenTrie

if TYPE_CHECKING:  # pragma: no cover
    from ..vocab import Vocabulary
    from .compiled import CompileConfig, CompiledGrammar

_DEFAULT_CACHES: dict[tuple[str | None, int], TableCache] = {}


def table_cache(directory: str | None, sparse_limit: int) -> TableCache:
    """The process-wide table cache for a cache directory (``None``: memory only)."""
    key = (directory, sparse_limit)
    cache = _DEFAULT_CACHES.get(key)
    if cache is None:
        cache = _DEFAULT_CACHES[key] = TableCache(directory, sparse_limit=sparse_limit)
    return cache


def terminal_follow(grammar: BnfGrammar) -> list[set[int]]:
    """For each terminal, the terminals that can start right after it (static FOLLOW over BNF)."""
    n_nt = len(grammar.nonterminals)
    nullable_t = [d.nullable for d in grammar.dfas]
    nullable_nt = grammar.nullable
    first: list[set[int]] = [set() for _ in range(n_nt)]

    def seq_first(rhs: tuple[int, ...]) -> tuple[set[int], bool]:
        out: set[int] = set()
        for s in rhs:
            if s < 0:
                out.add(~s)
                if not nullable_t[~s]:
                    return out, False
            else:
                out |= first[s]
                if s not in nullable_nt:
                    return out, False
        return out, True

    changed = True
    while changed:
        changed = False
        for rule in grammar.rules:
            f, _ = seq_first(rule.rhs)
            if not f <= first[rule.lhs]:
                first[rule.lhs] |= f
                changed = True
    follow_nt: list[set[int]] = [set() for _ in range(n_nt)]
    changed = True
    while changed:
        changed = False
        for rule in grammar.rules:
            for i, s in enumerate(rule.rhs):
                if s < 0:
                    continue
                f, rest_nullable = seq_first(rule.rhs[i + 1 :])
                if rest_nullable:
                    f = f | follow_nt[rule.lhs]
                if not f <= follow_nt[s]:
                    follow_nt[s] |= f
                    changed = True
    follow_t: list[set[int]] = [set() for _ in grammar.terminals]
    for rule in grammar.rules:
        for i, s in enumerate(rule.rhs):
            if s >= 0:
                continue
            f, rest_nullable = seq_first(rule.rhs[i + 1 :])
            if rest_nullable:
                f = f | follow_nt[rule.lhs]
            follow_t[~s] |= f
    return follow_t


class GrammarTables:
    """Token tables of one grammar for one vocabulary, plus the per-pair mask cache."""

    def __init__(
        self,
        store: RowStore,
        inside: list[np.ndarray],
        cross: dict[tuple[int, int], np.ndarray],
        deep: dict[tuple[int, int], np.ndarray],
    ) -> None:
        self.store = store
        self.rows = store.dense_rows()
        self.inside = inside
        self.cross = cross
        self.deep = deep
        self._pair_cache: dict[tuple, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {}
        self._follow_cache: dict[tuple, tuple[int, ...]] = {}

    def summary(self) -> dict:
        return {
            "dense_rows": int(self.rows.shape[0]),
            "sparse_lists": self.store.sparse_count,
            "table_bytes": self.store.nbytes(),
        }

    # ---------------------------------------------------------------- runtime

    def _expected_after(self, compiled: "CompiledGrammar", item: tuple) -> tuple[int, ...]:
        """Terminals the parser expects right after ``item``'s terminal completes."""
        hit = self._follow_cache.get(item)
        if hit is None:
            parser = compiled.parser
            rule, dot, origin = item
            _, scans, _ = parser._build_set(((rule, dot + 1, origin),))
            hit = tuple(sorted({t for _, t in scans if parser.has_exit[t][0]}))
            self._follow_cache[item] = hit
        return hit

    def _pair_refs(self, compiled: "CompiledGrammar", item: tuple, t: int, q: int):
        key = (item, t, q)
        hit = self._pair_cache.get(key)
        if hit is None:
            refs = [int(self.inside[t][q])]
            deep = []
            for t2 in self._expected_after(compiled, item):
                refs.append(int(self.cross[(t, t2)][q]))
                deep.append(int(self.deep[(t, t2)][q]))
            dense = tuple(r for r in refs if is_dense_ref(r))
            sparse = tuple(r for r in refs if not is_dense_ref(r) and r != -1)
            hit = (dense, sparse, tuple(r for r in deep if r != -1))
            if len(self._pair_cache) > 1 << 16:
                self._pair_cache.clear()
            self._pair_cache[key] = hit
        return hit

    def state_mask(self, compiled: "CompiledGrammar", state: int) -> tuple[np.ndarray, np.ndarray]:
        """(dense row ids, extra token ids) whose union is exactly the tokens allowed in ``state``."""
        dense: set[int] = set()
        sparse: set[int] = set()
        deep: set[int] = set()
        for item, t, q in compiled.parser.state_pairs[state]:
            d, s, dp = self._pair_refs(compiled, item, t, q)
            dense.update(d)
            sparse.update(s)
            deep.update(dp)
        store = self.store
        parts = [store.get(r).to_ids() for r in sparse]
        candidates = [store.get(r).to_ids() for r in deep]
        extras = np.unique(np.concatenate(parts)).astype(np.int32) if parts else np.zeros(0, np.int32)
        rows = np.array(sorted(dense), dtype=np.int32)
        if candidates:
            cand = np.unique(np.concatenate(candidates))
            if rows.size:
                words = np.bitwise_or.reduce(self.rows[rows], axis=0)
                covered = (words[cand >> 5] >> (cand & 31).astype(np.uint32)) & 1
                cand = cand[covered == 0]
            cand = np.setdiff1d(cand, extras, assume_unique=True)
            step = compiled.step_token
            ok = [int(tid) for tid in cand if step(state, int(tid))[0] != DEAD]
            if ok:
                extras = np.union1d(extras, np.array(ok, dtype=np.int32)).astype(np.int32)
        return rows, extras

    # ---------------------------------------------------------- serialization

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"store_{k}": v for k, v in self.store.to_arrays().items()}
        arrays["inside_ptr"] = np.cumsum([0] + [a.size for a in self.inside]).astype(np.int64)
        arrays["inside_refs"] = _concat([a for a in self.inside])
        keys = sorted(self.cross)
        arrays["cross_keys"] = np.array(keys, dtype=np.int64).reshape(-1, 2)
        arrays["cross_ptr"] = np.cumsum([0] + [self.cross[k].size for k in keys]).astype(np.int64)
        arrays["cross_refs"] = _concat([self.cross[k] for k in keys])
        arrays["deep_refs"] = _concat([self.deep[k] for k in keys])
        return arrays

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "GrammarTables":
        store = RowStore.from_arrays({k[len("store_"):]: v for k, v in arrays.items() if k.startswith("store_")})
        ptr = arrays["inside_ptr"]
        inside = [arrays["inside_refs"][ptr[i]:ptr[i + 1]] for i in range(ptr.size - 1)]
        cptr = arrays["cross_ptr"]
        keys = [(int(a), int(b)) for a, b in arrays["cross_keys"].reshape(-1, 2)]
        cross = {k: arrays["cross_refs"][cptr[i]:cptr[i + 1]] for i, k in enumerate(keys)}
        deep = {k: arrays["deep_refs"][cptr[i]:cptr[i + 1]] for i, k in enumerate(keys)}
        lo, hi = -store.sparse_count, store.dense_count
        for refs in (arrays["inside_refs"], arrays["deep_refs"], arrays["cross_refs"]):
            if refs.size and (refs.min() < lo or refs.max() >= hi):
                raise ValueError("a table reference points outside the stored rows")
        return cls(store, inside, cross, deep)


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, dtype=np.int64)


def build_grammar_tables(
    grammar: BnfGrammar,
    vocab: "Vocabulary",
    *,
    config: "CompileConfig",
    progress: Callable[[str, int, int], None] | None = None,
    trie: TokenTrie | None = None,
) -> GrammarTables:
    """Compute (or fetch from the cache) every table the grammar needs."""
    from .tables import as_trie

    cache = table_cache(config.cache_dir, config.sparse_limit)
    trie = trie or as_trie(vocab)
    follow = terminal_follow(grammar)
    dfas = grammar.dfas
    store = RowStore(vocab.size, config.sparse_limit)
    total = len(dfas) + sum(len(f) for f in follow)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress("token tables", done, total)

    inside: list[np.ndarray] = []
    cross: dict[tuple[int, int], np.ndarray] = {}
    deep: dict[tuple[int, int], np.ndarray] = {}
    for t, dfa in enumerate(dfas):
        inside.append(np.array(store.add_all(cache.inside(dfa, trie)), dtype=np.int64))
        tick()
        for t2 in sorted(follow[t]):
            cross[(t, t2)] = np.array(store.add_all(cache.cross(dfa, dfas[t2], trie)), dtype=np.int64)
            deep[(t, t2)] = np.array(store.add_all(cache.deep(dfa, [dfas[t2]], trie)), dtype=np.int64)
            tick()
    return GrammarTables(store, inside, cross, deep)
