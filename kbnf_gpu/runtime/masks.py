"""From a parser state to its mask: dense table rows to OR, plus a few extra token ids.

A token is allowed in a state iff it is viable from one of the state's scan
pairs ``(item, t, q)``: it stays inside ``t`` (``INSIDE[t][q]``), or it
completes ``t`` and continues inside a terminal ``t2`` the parser expects
next (``CROSS[t, t2][q]`` for ``t2`` in ``E(item)``), or it completes ``t``
and then whole further lexemes (the ``DEEP[t, t2][q]`` candidates: checked
exactly by stepping the parser over their bytes).

What repeats across documents. The rows depend only on the lexical frontier
``(t, q, E(item))``, but a DEEP token like ``"},`` also depends on the
enclosing structure. So masks are computed on the state *truncated* to its
first ``depth`` levels of context (``EarleyParser.truncated``), which is the
same at nesting depth 3 and 7, and cached per truncated state. Parsing from a
truncated state is exact until a completion needs the missing context; then
the verdict for that token is *unknown* and the token is checked on deeper
truncations (``RESOLUTION_STAGES``) and at last on the full state (and if
even the expected-terminal sets need deeper context,
the whole mask is computed on the full state).

What repeats within a lexeme. A counter's positions (``.{1,60}``) are new
lexer states, each a new parser state, but positions far from the bound act
alike on short tokens (*short twins*, ``GrammarTables.short_twins``): a
state's short DEEP candidates are checked once on its twin state, for all of
them, and only its long ones on the state itself.

What repeats within a counted repetition. Where the grammar derives more
copies of a scan pair's lexeme right after it (``repeat_runs``), the tokens
that stay inside those copies are a table row (``GrammarTables.repeat_ref``)
rather than DEEP candidates checked anew at every count.
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..compile.token_sets import unique_sorted
from ..caches import GenerationalCache
from .earley import ANY, DEAD, DEAD_UNKNOWN, EarleyParser, ParserState, rule_positions

if TYPE_CHECKING:  # pragma: no cover
    from ..compile.grammar_tables import GrammarTables
    from ..normalize import BnfGrammar
    from ..vocab import Vocabulary

TRUNCATION_DEPTH = 3
# levels of context beyond the truncation that settle what it left open, tried in turn before the full state (each
# deeper cut repeats across documents less often, but a full state never repeats)
RESOLUTION_STAGES = (2, 6)
_EMPTY = np.zeros(0, dtype=np.int32)
_EMPTY.setflags(write=False)
_INEXACT = object()
_NEVER = 1 << 62


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


class Mask:
    """A state's allowed tokens: the OR of dense table rows ``rows`` plus the token ids ``extras``.

    Shared by every matcher in a state with this mask (read-only arrays); the
    packed bitset and the id list are computed on first use and kept here.
    """

    __slots__ = ("rows", "extras", "bits", "words", "ids", "row_keys", "pool_slots")

    def __init__(self, rows: np.ndarray, extras: np.ndarray) -> None:
        self.rows = rows
        self.extras = extras
        self.bits: np.ndarray | None = None
        self.words: np.ndarray | None = None  # ``bits`` viewed as int32
        self.ids: np.ndarray | None = None
        self.row_keys: tuple[bytes, ...] | None = None  # content digests of ``rows`` (device pool addresses)
        # (pool, its eviction count, slots of ``rows``): valid while that pool has evicted nothing since
        self.pool_slots: tuple | None = None


def _union(*id_lists) -> np.ndarray:
    """Sorted distinct ``int32`` ids of the lists (a sort: numpy's hash-based unique is slower at these sizes)."""
    return unique_sorted(np.concatenate([np.asarray(ids, dtype=np.int32) for ids in id_lists]))


def _split_refs(refs: list[int], deep: list[int]) -> tuple[tuple, tuple, tuple]:
    """Row references -> (dense rows, non-empty sparse lists, non-empty DEEP candidate lists), sorted."""
    return (tuple(sorted({r for r in refs if r >= 0})), tuple(sorted({r for r in refs if r < -1})),
            tuple(sorted({r for r in deep if r != -1})))


class ByteOrder:
    """A vocabulary's tokens in byte order: ``ids[r]`` has rank ``r`` (``rank[id]``), and ``shared[r]`` is how
    many leading bytes it shares with ``ids[r + 1]``. Candidates walked in this order reuse the states of the
    prefix they share with the previous one, and a prefix that died settles every candidate under it.
    ``lengths[id]``: the token's bytes (what decides whether a state's short twin checks it)."""

    __slots__ = ("ids", "rank", "shared", "lengths")

    def __init__(self, vocab: "Vocabulary") -> None:
        matrix, lengths = vocab.token_matrix()
        self.lengths = lengths  # by id (0 for specials)
        keys = [matrix[i, : lengths[i]].tobytes() for i in range(vocab.size)]
        ids = np.array(sorted(range(vocab.size), key=keys.__getitem__), dtype=np.int64)
        rank = np.empty(vocab.size, dtype=np.int64)
        rank[ids] = np.arange(vocab.size)
        shared = np.zeros(vocab.size, dtype=np.int64)  # the last rank shares nothing with what follows it
        step = 4096  # rows compared at a time: the comparison is ``[step, max_len]`` bytes
        for start in range(0, vocab.size - 1, step):
            a, b = ids[start: start + step], ids[start + 1: start + step + 1]
            a = a[: b.size]
            differ = matrix[a] != matrix[b]
            first = np.where(differ.any(axis=1), differ.argmax(axis=1), differ.shape[1])
            shared[start: start + a.size] = np.minimum(first, np.minimum(lengths[a], lengths[b]))
        self.ids, self.rank, self.shared = _frozen(ids), _frozen(rank), _frozen(shared)

    def walk_order(self, candidates: np.ndarray) -> tuple[list[int], list[int]]:
        """(``candidates`` in byte order, how many leading bytes each shares with the one before it: the
        minimum of ``shared`` between their ranks, one ``reduceat`` for all)."""
        ranks = np.sort(self.rank[candidates])
        if not ranks.size:
            return [], []
        between = np.minimum.reduceat(self.shared[: ranks[-1] + 1], ranks)[:-1]
        return self.ids[ranks].tolist(), [0, *between.tolist()]


@lru_cache(maxsize=8)
def byte_order(vocab: "Vocabulary") -> ByteOrder:
    """The vocabulary's :class:`ByteOrder` (built once per vocabulary)."""
    return ByteOrder(vocab)


_RUN_DEPTH = 16  # nonterminals followed down by ``repeat_runs`` (a chain is one per copy: ``REPEATS`` deep)
REPEATS = 5  # whole copies of a repeated lexeme after the current one that its rows cover (``repeat_ref``)


def repeated_terminals(grammar: "BnfGrammar") -> set[tuple[int, int]]:
    """``(terminal, copies)`` for every position of ``grammar`` before a terminal that ``repeat_runs`` finds
    followed by ``copies >= 2`` more of it: the repeat rows a mask can ask for (``GrammarTables.repeat_ref``)."""
    pos_sym, predict = rule_positions(grammar)
    runs = repeat_runs(pos_sym, predict, REPEATS)
    found = set()
    for p, sym in enumerate(pos_sym):
        if sym is not None and sym < 0:
            copies = runs(p)
            if copies >= 2:
                found.add((~sym, copies))
    return found


def repeat_runs(pos_sym: list, predict: list, cap: int) -> "Callable[[int], int]":
    """``runs(p)``: for a parser position ``p`` before a terminal ``X``, how many more ``X`` (at most ``cap``)
    the grammar derives right after that ``X``, one after another: the ``X`` that follow in the rule, then
    what a nonterminal there derives first (a counted repetition's chain ``O_k ::= ε | X O_{k-1}``); 0 for any
    other position. A nonterminal met again while its own count is being taken, or past ``_RUN_DEPTH``
    nonterminals down, counts nothing more (sound: fewer ``X`` than it may derive). Computed per position on
    first use."""
    chains: dict[tuple[int, int], int] = {}
    runs: dict[int, int] = {}

    def run_from(pos: int, x: int, depth: int) -> int:
        count = 0
        while count < cap:
            sym = pos_sym[pos]
            if sym == x:
                count += 1
                pos += 1
            else:
                if sym is not None and sym >= 0 and depth < _RUN_DEPTH:
                    count += chain(sym, x, depth + 1)
                break
        return min(count, cap)

    def chain(nt: int, x: int, depth: int) -> int:
        key = (nt, x)
        found = chains.get(key)
        if found is None:
            chains[key] = 0  # while in progress
            found = max((run_from(start, x, depth) for start in predict[nt]), default=0)
            if depth < _RUN_DEPTH:  # a count cut short by the depth is not the nonterminal's own
                chains[key] = found
            else:
                del chains[key]
        return found

    def runs_at(p: int) -> int:
        found = runs.get(p)
        if found is None:
            sym = pos_sym[p]
            found = runs[p] = run_from(p + 1, sym, 0) if sym is not None and sym < 0 else 0
        return found

    return runs_at


class MaskBuilder:
    """Computes and caches the masks of one compiled grammar (shared by its matchers and threads)."""

    def __init__(
        self,
        parser: EarleyParser,
        tables: "GrammarTables",
        vocab: "Vocabulary",
        token_bytes: tuple[bytes | None, ...],
        *,
        cache_limit: int,
        depth: int = TRUNCATION_DEPTH,
    ) -> None:
        self.parser = parser
        self.tables = tables
        self.vocab = vocab
        self.token_bytes = token_bytes
        self.depth = depth
        self.order = byte_order(vocab)
        self._pair_refs_memo: GenerationalCache = GenerationalCache(cache_limit)
        self._partial_memo: GenerationalCache = GenerationalCache(cache_limit)
        self._resolved_memo: GenerationalCache = GenerationalCache(cache_limit)
        self._extras_memo: GenerationalCache = GenerationalCache(cache_limit)  # a truncated mask's extras + resolved ones
        self._twin_checks: GenerationalCache = GenerationalCache(cache_limit)  # (twin uid, candidates) -> verdicts
        self._runs = repeat_runs(parser.pos_sym, parser.predict, REPEATS)

    def cache_stats(self) -> dict:
        return {"pair_entries": len(self._pair_refs_memo), "truncated_masks": len(self._partial_memo),
                "resolved_masks": len(self._resolved_memo), "resolved_extras": len(self._extras_memo)}

    # ------------------------------------------------------------------ API

    def parts(self, state: ParserState) -> tuple[np.ndarray, np.ndarray]:
        """(dense row ids, extra token ids) whose union is exactly the tokens viable from ``state`` (EOS not included)."""
        truncated = self.parser.truncated(state, self.depth)
        partial = self._partial_memo[truncated]
        if partial is None:
            partial = self._partial_memo.put(truncated, self._partial(truncated))
        if partial is _INEXACT:
            rows, extras, unknown = self._partial(state)
            assert not unknown.size  # a full state needs no context beyond its own
            return rows, extras
        rows, extras, unknown = partial
        if unknown.size:
            alive = self._resolve(state, unknown)
            if alive:
                key = (truncated.uid, tuple(alive))  # the same few candidates live on in many full states
                hit = self._extras_memo[key]
                if hit is None:
                    hit = self._extras_memo.put(key, _frozen(_union(extras, alive)))
                extras = hit
        return rows, extras

    # ------------------------------------------------------------- internals

    def _resolve(self, state: ParserState, unknown: np.ndarray) -> list[int]:
        """The viable ones of the candidates a truncated state left open: checked on deeper truncations in turn
        (cached: they repeat across documents too), then, for what they still leave open, on the full state."""
        alive: list[int] = []
        still = unknown
        for levels in RESOLUTION_STAGES:
            deeper = self.parser.truncated(state, self.depth + levels)
            # what is left open here is a function of the deeper state alone (a shallower cut of it); kept as
            # tuples of ints, which the garbage collector stops scanning (uids are never reused)
            hit = self._resolved_memo[deeper.uid]
            if hit is None:
                found, left = self._check(deeper, still)
                hit = self._resolved_memo.put(deeper.uid, (tuple(found), tuple(left)))
            found, still = hit
            alive.extend(found)
            if not still:
                return alive
        return alive + self._check(state, still)[0]

    def _pair_refs(self, t: int, q: int, expected: tuple[int, ...]) -> tuple[tuple, tuple, tuple]:
        """(dense rows, sparse lists, DEEP candidate lists) of one scan pair followed by ``expected``."""
        key = (t, q, expected)
        hit = self._pair_refs_memo[key]
        if hit is None:
            tables = self.tables
            refs = [int(tables.inside_refs(t)[q])]
            deep = []
            for cross_refs, deep_refs in tables.follower_tables(t, expected):
                refs.append(int(cross_refs[q]))
                deep.append(int(deep_refs[q]))
            hit = self._pair_refs_memo.put(key, _split_refs(refs, deep))
        return hit

    def _rest_refs(self, rests: tuple[bytes, ...], expected: tuple[int, ...]) -> tuple[tuple, tuple, tuple]:
        """``_pair_refs`` of many literal scan pairs with the same followers, at once."""
        key = (rests, expected)
        hit = self._pair_refs_memo[key]
        if hit is None:
            hit = self._pair_refs_memo.put(key, _split_refs(*self.tables.rest_tables(rests, expected)))
        return hit

    def _partial(self, state: ParserState):
        """(rows, extras, unknown) of ``state``; ``_INEXACT`` if an expected-terminal set needs missing context."""
        dense: set[int] = set()
        sparse: set[int] = set()
        deep: set[int] = set()
        expected_after = self.parser.expected_after
        same_dfa = self.tables.same_dfa
        # pairs whose terminals have one DFA (the same punctuation in every branch of a large oneOf) and one state
        # are taken together: the union of their followers gets its tables at once
        followers: dict[tuple[int, int], set[int]] = {}
        repeats: dict[tuple[int, int], int] = {}  # (terminal, state) -> the most copies that follow (``_runs``)
        runs = self._runs
        for p, o, t, q in state.pairs:
            expected, touched = expected_after((p, o))
            if touched:
                return _INEXACT
            column = (same_dfa(t), q)
            found = followers.get(column)
            if found is None:
                found = followers[column] = set()
            found.update(same_dfa(t2) for t2 in expected)
            run = runs(p)
            if run > repeats.get(column, 1):
                repeats[column] = run
        # a repeated lexeme's copies ahead, as rows (before the DEEP checks)
        refs = [_split_refs([self.tables.repeat_ref(t, q, run) for (t, q), run in repeats.items()], [])]
        # many literal scan pairs with one follower set (the keys after '{"'): one table of what they can still match
        literal_rest, group_min = self.tables.literal_rest, self.tables.group_min
        by_followers: dict[tuple[int, ...], list[tuple[int, int, tuple[bytes, ...]]]] = {}
        for (t, q), expected in followers.items():
            rest = literal_rest(t, q) if len(followers) >= group_min else None
            if rest is None:
                refs.append(self._pair_refs(t, q, tuple(sorted(expected))))
            else:
                by_followers.setdefault(tuple(sorted(expected)), []).append((t, q, rest))
        for expected, pairs in by_followers.items():
            if len(pairs) >= group_min:
                refs.append(self._rest_refs(tuple(sorted({r for _, _, rest in pairs for r in rest})), expected))
            else:
                refs.extend(self._pair_refs(t, q, expected) for t, q, _ in pairs)
        for d, s, dp in refs:
            dense.update(d)
            sparse.update(s)
            deep.update(dp)
        store = self.tables.store
        rows = _frozen(np.array(sorted(dense), dtype=np.int32))
        if sparse:
            extras = _union(*(store.get(r).to_ids() for r in sparse))
        else:
            extras = _EMPTY
        unknown = _EMPTY
        if deep:
            cand = _union(*(store.get(r).to_ids() for r in deep))
            if rows.size:
                words = np.bitwise_or.reduce(store.dense_rows()[rows], axis=0)
                covered = (words[cand >> 5] >> (cand & 31).astype(np.uint32)) & 1
                cand = cand[covered == 0]
            if extras.size:
                cand = np.setdiff1d(cand, extras, assume_unique=True)
            alive, maybe = self._check_by_twin(state, cand)
            if alive:
                extras = _union(extras, alive)
            if maybe:
                # over-approximate the missing context: what dies even in any context is dead
                maybe, _ = self._check(self.parser.truncated(state, self.depth, ANY), maybe) if state.pairs else ([], [])
            if maybe:
                unknown = _frozen(np.array(maybe, dtype=np.int32))
        return rows, _frozen(extras) if extras is not _EMPTY else extras, unknown

    def _check_by_twin(self, state: ParserState, cand: np.ndarray) -> tuple[list[int], list[int]]:
        """``_check``, where the verdicts of the short candidates (at most ``short_token_bytes`` bytes) are the
        state's *twin*'s: its pairs' DFA states replaced by their short twins, which act alike on those tokens
        (a counter's positions far from its bound: one twin for them all, its verdicts checked once)."""
        twin = self.parser.with_lexer_states(state, self.tables.short_twins)
        if twin is state:
            return self._check(state, cand)
        short = self.order.lengths[cand] <= self.tables.short_token_bytes
        shared = cand[short]
        key = (twin.uid, shared.tobytes())  # ints and bytes: nothing for the garbage collector to track
        hit = self._twin_checks[key]
        if hit is None:
            found, open_ = self._check(twin, shared)
            hit = self._twin_checks.put(key, (tuple(found), tuple(open_)))
        alive, maybe = self._check(state, cand[~short])
        return alive + list(hit[0]), maybe + list(hit[1])

    def _check(self, state: ParserState, candidates) -> tuple[list[int], list[int]]:
        """Step ``state`` through each candidate's bytes: (viable ids, ids whose verdict needs missing context).

        Candidates are walked in byte order: each one starts from the state
        after the prefix it shares with the previous walk, and one that shares
        a prefix which already died (dead states absorb) takes that verdict
        without a step.
        """
        cand = np.asarray(candidates, dtype=np.int64)
        if not cand.size:
            return [], []
        ordered, shared = self.order.walk_order(cand)
        step = self.parser.step_byte
        memo_get = self.parser.byte_memo_get
        token_bytes = self.token_bytes
        alive: list[int] = []
        unknown: list[int] = []
        path = [state]  # path[i]: the state after the first i bytes of the last walked candidate
        dead_at = _NEVER  # how many of its bytes led to a dead state (``path[-1]``)
        for tid, j in zip(ordered, shared):
            if j >= dead_at:
                if path[-1] is DEAD_UNKNOWN:
                    unknown.append(tid)
                continue
            data = token_bytes[tid]
            if data is None:
                continue
            del path[j + 1:]
            s = path[j]
            for byte in data[j:] if j else data:
                s = memo_get(s.uid << 8 | byte) or step(s, byte)  # the memo's current generation inline
                path.append(s)
                if s is DEAD or s is DEAD_UNKNOWN:
                    break
            if s is DEAD:
                dead_at = len(path) - 1
            elif s is DEAD_UNKNOWN:
                dead_at = len(path) - 1
                unknown.append(tid)
            else:
                dead_at = _NEVER
                alive.append(tid)
        return alive, unknown
