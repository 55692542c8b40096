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
survive the exact check (``kbnf_gpu.runtime.masks``).

Many literal followers (the keys an object may start with: thousands in a
real-world schema) are taken together: CROSS and DEEP are unions over the
followers, and a union over followers equals the table of one follower whose
language is their union (a token's rest stays alive in *some* follower iff it
stays alive in the union's trimmed DFA; likewise for a whole lexeme). So one
table of ``t`` against the minimized trie of the literals replaces one table
per key (``follower_tables``): one vocabulary walk instead of thousands.
Likewise many scan pairs of literal terminals with one follower set (the
keys after ``{"``) allow what the trie of their remaining strings allows from
its start (``rest_tables``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import ir
from ..automata.build import literal_trie, repeat_copies
from ..automata.dfa import ByteDFA
from ..budget import Budget, current_budget
from ..errors import DFATooLarge
from ..normalize import BnfGrammar
from ..caches import GenerationalCache
from ..runtime.masks import repeated_terminals
from .dfa_walk import chain_literal, has_heavy_state, walk_width
from .row_store import EMPTY_REF, RowStore
from .tables import prefix_set, rest_cross_set, rest_deep_set
from .table_cache import TableCache
from .token_sets import TokenSet
from .token_trie import TokenTrie

if TYPE_CHECKING:  # pragma: no cover
    from ..vocab import Vocabulary
    from .compiled import CompileConfig

_DEFAULT_CACHES: dict[tuple[str | None, int], TableCache] = {}

GROUP_MIN = 8  # literal followers without pair tables yet, from which on they get one table together
GROUP_TABLES = 1 << 10  # follower-group tables kept per grammar (each is one row reference per state of ``t``)
PER_STATE_MIN = 128  # DFAs from this many states, with a state most tokens enter, get tables state by state
WIDE_WALK = 4.0  # ... and so do those whose states start on more tokens than this many vocabularies
REPEAT_MAX_STATES = 4096  # states of ``X{1,r+1}`` behind a repetition's rows (``repeat_ref``; else none)


class StateRows:
    """A table whose sets are computed state by state, on first read; ``whole()`` computes them all at once.

    A grammar reaches a handful of the states of a 600-state regex. One state
    costs a millisecond or a few (``dfa_walk.state_inside_tokens``/
    ``state_accepts``), where the whole table of a large DFA with states most
    tokens enter costs hundreds, and a parser step never waits for more than
    the states it reaches. Eager compiles and artifacts take ``whole()`` (one
    walk for every state).
    """

    __slots__ = ("_n", "_one", "_whole", "_table")

    def __init__(
        self, n_states: int, one: Callable[[int], TokenSet], whole: Callable[[], Sequence[TokenSet]]
    ) -> None:
        self._n = n_states
        self._one = one
        self._whole = whole
        self._table: Sequence[TokenSet] | None = None

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, q: int) -> TokenSet:
        return self._one(q) if self._table is None else self._table[q]

    def whole(self) -> Sequence[TokenSet]:
        if self._table is None:
            self._table = self._whole()
        return self._table


class LazyRefs:
    """One table's row references, one per DFA state, each added to the store the first time it is read.

    A grammar reaches few states of each terminal (a 50-state string body is
    entered in two or three), so a new grammar stores only those rows instead
    of digesting every state's 16 KB row up front.
    """

    __slots__ = ("_store", "_sets", "_refs")

    def __init__(self, store: RowStore, sets: Sequence[TokenSet] | None = None, refs: np.ndarray | None = None) -> None:
        self._store = store
        self._sets = sets
        self._refs: list[int | None] = [None] * len(sets) if refs is None else [int(r) for r in refs]

    def __len__(self) -> int:
        return len(self._refs)

    def __getitem__(self, q: int) -> int:
        ref = self._refs[q]
        if ref is None:  # a race stores the same set twice: the store keeps one copy and both get its reference
            ref = self._refs[q] = self._store.add(self._sets[q])
        return ref

    def resolved(self) -> np.ndarray:
        """Every state's reference (``int64 [n_states]``), storing the rows not read yet."""
        if isinstance(self._sets, StateRows) and None in self._refs:
            self._sets.whole()  # one walk for every state not read yet
        return np.array([self[q] for q in range(len(self._refs))], dtype=np.int64)


def table_cache(directory: str | None, sparse_limit: int) -> TableCache:
    """The process-wide table cache for a cache directory (``None``: memory only)."""
    key = (directory, sparse_limit)
    cache = _DEFAULT_CACHES.get(key)
    if cache is None:
        cache = _DEFAULT_CACHES[key] = TableCache(directory, sparse_limit=sparse_limit)
    return cache


def _propagate(sets: list[set[int]], edges: dict[int, set[int]]) -> None:
    """Close ``sets`` under ``sets[dst] |= sets[src]`` for every edge ``src -> dst`` (a worklist: each set
    flows on only when it grew, so a chain of n rules costs O(n), not n passes over the grammar)."""
    work = list(edges)
    queued = set(work)
    while work:
        src = work.pop()
        queued.discard(src)
        values = sets[src]
        for dst in edges.get(src, ()):
            target = sets[dst]
            if not values <= target:
                target |= values
                if dst in edges and dst not in queued:
                    queued.add(dst)
                    work.append(dst)


def terminal_follow(grammar: BnfGrammar) -> list[set[int]]:
    """For each terminal, the terminals that can start right after it (static FOLLOW over BNF)."""
    n_nt = len(grammar.nonterminals)
    nullable_t = [d.nullable for d in grammar.dfas]
    nullable_nt = grammar.nullable

    def nullable(sym: int) -> bool:
        return nullable_t[~sym] if sym < 0 else sym in nullable_nt

    first: list[set[int]] = [set() for _ in range(n_nt)]
    first_edges: dict[int, set[int]] = {}  # s -> lhs: FIRST(s) is in FIRST(lhs)
    for rule in grammar.rules:
        for sym in rule.rhs:
            if sym < 0:
                first[rule.lhs].add(~sym)
            else:
                first_edges.setdefault(sym, set()).add(rule.lhs)
            if not nullable(sym):
                break
    _propagate(first, first_edges)

    # FOLLOW: sets indexed by nonterminal, then by terminal (offset n_nt)
    follow: list[set[int]] = [set() for _ in range(n_nt + len(grammar.terminals))]
    follow_edges: dict[int, set[int]] = {}  # lhs -> symbol: FOLLOW(lhs) is in FOLLOW(symbol)
    for rule in grammar.rules:
        rest: set[int] = set()  # FIRST of the suffix after position i, built right to left
        rest_nullable = True
        for sym in reversed(rule.rhs):
            node = sym if sym >= 0 else n_nt + ~sym
            follow[node] |= rest
            if rest_nullable:
                follow_edges.setdefault(rule.lhs, set()).add(node)
            if sym < 0:
                if nullable_t[~sym]:
                    rest = rest | {~sym}
                else:
                    rest, rest_nullable = {~sym}, False
            else:
                if sym in nullable_nt:
                    rest = rest | first[sym]
                else:
                    rest, rest_nullable = set(first[sym]), False
    _propagate(follow, follow_edges)
    return follow[n_nt:]


class GrammarTables:
    """Token tables of one grammar for one vocabulary, computed on first use.

    ``inside_refs(t)`` and ``cross_refs/deep_refs(t, t2)`` are row references
    (one per DFA state of ``t``, stored on first read: ``LazyRefs``) into ``store``. Nothing is
    computed until a parser state needs it, so compiling a grammar does only
    the grammar-level work; the vocabulary walks behind a table are shared by
    every grammar with the same terminal DFAs (``TableCache``, keyed by DFA
    fingerprints); the tables of a large DFA whose states most tokens can
    enter are walked one state at a time (``StateRows``). ``build_all``
    computes everything up front (artifacts).
    """

    group_min = GROUP_MIN

    def __init__(
        self,
        grammar: BnfGrammar,
        trie: TokenTrie,
        cache: TableCache,
        store: RowStore,
        inside: dict[int, LazyRefs] | None = None,
        cross: dict[tuple[int, int], LazyRefs] | None = None,
        deep: dict[tuple[int, int], LazyRefs] | None = None,
    ) -> None:
        self.grammar = grammar
        self.trie = trie
        self.cache = cache
        self.store = store
        self.inside: dict[int, LazyRefs] = dict(inside or {})
        self.cross: dict[tuple[int, int], LazyRefs] = dict(cross or {})
        self.deep: dict[tuple[int, int], LazyRefs] = dict(deep or {})
        self._literals: dict[int, tuple[bytes, dict[int, int], tuple[int, ...]] | None] = {}
        self._same_dfa: dict[int, int] = {}  # terminal -> the first terminal seen with an equal DFA
        self._by_fingerprint: dict[str, int] = {}
        self._groups: GenerationalCache = GenerationalCache(GROUP_TABLES)
        self._state_by_state: dict[str, bool] = {}  # large DFA fingerprint -> tables by state (bounded by its DFAs)
        self._twins: dict[int, np.ndarray | None] = {}  # terminal -> its DFA's short twins (None: small DFA)
        self._repeat_refs: dict[tuple[int, int, int], int] = {}  # (terminal, state, repeats) -> row reference

    @property
    def rows(self) -> np.ndarray:
        """``uint32 [R, W]``: the dense rows computed so far (row references index it)."""
        return self.store.dense_rows()

    def summary(self) -> dict:
        return {
            "dense_rows": int(self.store.dense_count),
            "sparse_lists": self.store.sparse_count,
            "table_bytes": self.store.nbytes(),
            "terminal_tables": len(self.inside),
            "pair_tables": len(self.cross),
        }

    # --------------------------------------------------------------- lookups

    def inside_refs(self, t: int) -> LazyRefs:
        refs = self.inside.get(t)
        if refs is None:
            dfa, cache, trie = self.grammar.dfas[t], self.cache, self.trie
            refs = self.inside[t] = LazyRefs(self.store, self._sets(
                dfa, lambda: cache.inside(dfa, trie), lambda q: cache.inside_state(dfa, q, trie)))
        return refs

    def cross_refs(self, t: int, t2: int) -> LazyRefs:
        refs = self.cross.get((t, t2))
        if refs is None:
            self._pair(t, t2)
            refs = self.cross[(t, t2)]
        return refs

    def deep_refs(self, t: int, t2: int) -> LazyRefs:
        refs = self.deep.get((t, t2))
        if refs is None:
            self._pair(t, t2)
            refs = self.deep[(t, t2)]
        return refs

    @property
    def short_token_bytes(self) -> int:
        """Tokens of at most this many bytes are decided alike by a state and its short twin."""
        return self.cache.short_token_bytes

    def short_twins(self, t: int) -> np.ndarray | None:
        """Each DFA state's short twin (``TableCache.short_twins``) for terminal ``t``'s large DFA, the one
        whose tables go state by state (a counter); ``None`` for a smaller one."""
        if t not in self._twins:
            dfa = self.grammar.dfas[t]
            self._twins[t] = self.cache.short_twins(dfa) if dfa.n_states >= PER_STATE_MIN else None
        return self._twins[t]

    def repeat_ref(self, t: int, q: int, repeats: int) -> int:
        """Row reference of the tokens that, from state ``q`` of terminal ``X = t``, stay alive through the
        rest of this ``X`` and up to ``repeats`` more whole ``X`` (``INSIDE[X{1,repeats+1}]`` at ``q``), for a
        scan pair after which the grammar derives that many more ``X`` in a row (a counted repetition); ``-1``
        when there are none, or ``X`` is not one that ``repeat_copies`` repeats exactly (fewer copies when
        ``X{1,repeats+1}`` would pass ``REPEAT_MAX_STATES``).

        Each such token is a viable prefix wherever the pair is (after its ``X`` the rule derives ``X``
        again), whatever the context: so they are rows, shared by every grammar with this ``X`` and cached
        with its tables, instead of DEEP candidates checked again at every count of every new grammar (a
        ``maxLength`` string's chunks: a token longer than what is left of a chunk completes it and goes on
        into the next)."""
        key = (t, q, repeats)
        ref = self._repeat_refs.get(key)
        if ref is None:
            repeated = self._repeated(t, repeats)
            ref = EMPTY_REF if repeated is None else self.store.add(self.cache.inside_state(repeated, q, self.trie))
            self._repeat_refs[key] = ref
        return ref

    def _repeated(self, t: int, repeats: int) -> ByteDFA | None:
        """``X{1,repeats+1}`` for terminal ``X = t`` (``None``: none that ``repeat_ref`` serves)."""
        dfa = self.grammar.dfas[t]
        # fewer copies where X is large (a copy more than CROSS[X, X] covers, at least)
        repeats = min(repeats, REPEAT_MAX_STATES // max(dfa.n_states, 1) - 1)
        return repeat_copies(dfa, repeats + 1) if repeats >= 2 else None

    def _build_repeats(self, budget: Budget, progress: Callable[[str, int, int], None] | None = None) -> None:
        """Every repeat row the grammar can ask for (``repeated_terminals``): each state of ``X`` with each count
        of copies ahead, as ``build_all`` computes the other tables (state by state: a small ``X{1,r}`` turns
        whole in the table cache, a large one's states share their short twins' walks)."""
        columns = sorted({(self.same_dfa(t), r) for t, r in repeated_terminals(self.grammar)})
        total = sum(self.grammar.dfas[t].n_states for t, _ in columns)
        done = 0
        for t, repeats in columns:
            for q in range(self.grammar.dfas[t].n_states):
                budget.check_time("computing the rows of a counted repetition",
                                  rule=self.grammar.terminals[t].name or None)
                self.repeat_ref(t, q, repeats)
                done += 1
                if progress is not None:
                    progress("repeat rows", done, total)

    def same_dfa(self, t: int) -> int:
        """A representative of the terminals whose DFA equals ``t``'s (tables depend on DFAs only)."""
        rep = self._same_dfa.get(t)
        if rep is None:
            rep = self._same_dfa[t] = self._by_fingerprint.setdefault(self.grammar.dfas[t].fingerprint, t)
        return rep

    def follower_tables(self, t: int, followers: tuple[int, ...]) -> list[tuple[LazyRefs, LazyRefs]]:
        """``(CROSS refs, DEEP refs)`` per state of ``t``, whose unions over the list are the unions over
        ``followers``: one entry per follower, except that literal followers without pair tables yet, when there
        are ``GROUP_MIN`` or more, share one entry (the tables of their union)."""
        missing = tuple(sorted(t2 for t2 in followers if (t, t2) not in self.cross and self._chain(t2) is not None))
        union = self._union_of(missing) if len(missing) >= GROUP_MIN else None
        if union is None:
            return [(self.cross_refs(t, t2), self.deep_refs(t, t2)) for t2 in followers]
        group = self._groups[(t, missing)]
        if group is None:
            group = self._groups.put((t, missing), self._pair_refs(self.grammar.dfas[t], union))
        grouped = set(missing)
        return [group] + [(self.cross_refs(t, t2), self.deep_refs(t, t2)) for t2 in followers if t2 not in grouped]

    def literal_rest(self, t: int, q: int) -> tuple[bytes, ...] | None:
        """The non-empty strings that complete literal terminal ``t`` from its state ``q`` (``None``: ``t`` is
        not a literal)."""
        chain = self._chain(t)
        if chain is None:
            return None
        lit, position, accept_at = chain
        at = position[q]
        return tuple(lit[at:i] for i in accept_at if i > at)

    def rest_tables(self, rests: tuple[bytes, ...], followers: tuple[int, ...]) -> tuple[list[int], list[int]]:
        """Scan pairs of literal terminals taken together (a thousand keys after ``{"``): ``(INSIDE and CROSS
        refs, DEEP refs)`` from the start of the trie of what they can still match, ``rests`` (sorted), followed
        by ``followers``: the union over the pairs of their tables, when all have those followers."""
        key = (rests, followers)
        hit = self._groups[key]
        if hit is None:
            literal = tuple(sorted(t2 for t2 in followers if self._chain(t2) is not None))
            union = self._union_of(literal) if len(literal) >= GROUP_MIN else None
            targets = [self.grammar.dfas[t2] for t2 in followers if union is None or t2 not in literal]
            targets += [union] if union is not None else []
            cache, trie, limit = self.cache, self.trie, self.cache.sparse_limit
            refs = [self.store.add(prefix_set(rests, trie, limit))]
            refs += [self.store.add(rest_cross_set(rests, b, trie, limit)) for b in targets]
            deep = [self.store.add(rest_deep_set(rests, [cache.lexemes(b, trie)], trie, limit)) for b in targets]
            hit = self._groups.put(key, (refs, deep))
        return hit

    def _union_of(self, literal_terminals: tuple[int, ...]) -> ByteDFA | None:
        """The trie of every string the literal terminals match (``None`` if too large)."""
        try:
            return literal_trie(sorted({lit[:i] for t in literal_terminals
                                        for lit, _, accept_at in [self._chain(t)] for i in accept_at}))
        except DFATooLarge:
            return None

    def _chain(self, t: int) -> tuple[bytes, dict[int, int], tuple[int, ...]] | None:
        """``(literal, position of each DFA state, accepting positions)`` if terminal ``t``'s DFA is a chain of
        bytes (a literal, maybe accepting some of its prefixes too), else ``None``."""
        if t not in self._literals:
            dfa = self.grammar.dfas[t]
            expr = self.grammar.terminals[t].expr
            chain = None
            # a literal's DFA states in order, when its edges are exactly the literal's bytes (not so for a
            # ``#substrs"..."`` or ``#ex"..."`` of that literal: more edges)
            if (isinstance(expr, ir.Literal) and dfa.n_states == len(expr.value) + 1
                    and int((np.asarray(dfa.transitions) >= 0).sum()) == len(expr.value)):
                order = np.arange(dfa.n_states)
                if not expr.value or (dfa.transitions[order[:-1], np.frombuffer(expr.value, np.uint8)] == order[1:]).all():
                    chain = (expr.value, order)
            if chain is None:
                chain = chain_literal(dfa)
            if chain is None:
                self._literals[t] = None
            else:
                lit, order = chain
                accept_at = tuple(np.flatnonzero(np.asarray(dfa.accepting)[order]).tolist())
                self._literals[t] = (lit, {int(q): i for i, q in enumerate(order.tolist())}, accept_at)
        return self._literals[t]

    def _pair(self, t: int, t2: int) -> None:
        cross, deep = self._pair_refs(self.grammar.dfas[t], self.grammar.dfas[t2])
        self.deep[(t, t2)] = deep  # deep first: a reader that sees cross also sees deep
        self.cross[(t, t2)] = cross

    def _pair_refs(self, dfa_a: ByteDFA, dfa_b: ByteDFA) -> tuple[LazyRefs, LazyRefs]:
        """``(CROSS[a, b], DEEP[a; b])`` references."""
        cache, trie = self.cache, self.trie
        cross = self._sets(dfa_a, lambda: cache.cross(dfa_a, dfa_b, trie),
                           lambda q: cache.cross_state(dfa_a, q, dfa_b, trie))
        deep = self._sets(dfa_a, lambda: cache.deep(dfa_a, [dfa_b], trie),
                          lambda q: cache.deep_state(dfa_a, q, [dfa_b], trie))
        return LazyRefs(self.store, cross), LazyRefs(self.store, deep)

    def _sets(self, dfa: ByteDFA, whole: Callable[[], Sequence[TokenSet]],
              one: Callable[[int], TokenSet]) -> Sequence[TokenSet]:
        """A table's sets: state by state on first read (``StateRows``) for a large DFA with states most tokens
        enter, or whose states together start on many vocabularies' worth of tokens (``[a-z]{200}``): its
        whole table costs hundreds of milliseconds; else the whole table at once (a small DFA's walk of all its
        states costs about what a few states' own walks do, a large one's without such states tens of
        milliseconds, and either leaves every state cached for later grammars)."""
        if dfa.n_states >= PER_STATE_MIN and self._by_state(dfa):
            return StateRows(dfa.n_states, one, whole)
        return whole()

    def _by_state(self, dfa: ByteDFA) -> bool:
        found = self._state_by_state.get(dfa.fingerprint)
        if found is None:
            found = self._state_by_state[dfa.fingerprint] = chain_literal(dfa) is None and (
                has_heavy_state(self.trie, dfa) or walk_width(self.trie, dfa) > WIDE_WALK)
        return found

    def build_all(self, progress: Callable[[str, int, int], None] | None = None) -> "GrammarTables":
        """Compute every table the grammar can reach: INSIDE per terminal, CROSS/DEEP per static FOLLOW pair,
        and the rows of its counted repetitions (``repeat_ref``)."""
        follow = terminal_follow(self.grammar)
        total = len(self.grammar.dfas) + sum(len(f) for f in follow)
        done = 0
        budget = current_budget()  # an eager compile's (``save`` outside one: a fresh budget, never spent)
        for t in range(len(self.grammar.dfas)):
            budget.check_time("computing token tables", rule=self.grammar.terminals[t].name or None)
            self.inside_refs(t).resolved()
            done += 1
            if progress is not None:
                progress("token tables", done, total)
            for t2 in sorted(follow[t]):
                budget.check_time("computing token tables", rule=self.grammar.terminals[t].name or None)
                self.cross_refs(t, t2).resolved()
                self.deep_refs(t, t2).resolved()
                done += 1
                if progress is not None:
                    progress("token tables", done, total)
        self._build_repeats(budget, progress)
        return self

    # ---------------------------------------------------------- serialization

    def to_arrays(self) -> dict[str, np.ndarray]:
        n_terms = len(self.grammar.dfas)
        inside = [self.inside_refs(t).resolved() for t in range(n_terms)]
        keys = sorted(self.cross)
        cross = [self.cross[k].resolved() for k in keys]
        deep = [self.deep[k].resolved() for k in keys]
        arrays = {f"store_{k}": v for k, v in self.store.to_arrays().items()}  # after resolving: every row is in
        arrays["inside_ptr"] = np.cumsum([0] + [a.size for a in inside]).astype(np.int64)
        arrays["inside_refs"] = _concat(inside)
        arrays["cross_keys"] = np.array(keys, dtype=np.int64).reshape(-1, 2)
        arrays["cross_ptr"] = np.cumsum([0] + [a.size for a in cross]).astype(np.int64)
        arrays["cross_refs"] = _concat(cross)
        arrays["deep_refs"] = _concat(deep)
        repeat_keys = sorted(self._repeat_refs)
        arrays["repeat_keys"] = np.array(repeat_keys, dtype=np.int64).reshape(-1, 3)
        arrays["repeat_refs"] = np.array([self._repeat_refs[k] for k in repeat_keys], dtype=np.int64)
        return arrays

    @classmethod
    def from_arrays(cls, grammar: BnfGrammar, trie: TokenTrie, cache: TableCache,
                    arrays: dict[str, np.ndarray]) -> "GrammarTables":
        store = RowStore.from_arrays({k[len("store_"):]: v for k, v in arrays.items() if k.startswith("store_")})
        if store.vocab_size != trie.vocab_size:
            raise ValueError(f"tables for {store.vocab_size} tokens, vocabulary of {trie.vocab_size}")
        n_states = [d.n_states for d in grammar.dfas]
        ptr = arrays["inside_ptr"]
        _check_ptr(ptr, arrays["inside_refs"].size, n_states, "inside")
        inside = {i: LazyRefs(store, refs=arrays["inside_refs"][ptr[i]:ptr[i + 1]]) for i in range(ptr.size - 1)}
        cptr = arrays["cross_ptr"]
        keys = [(int(a), int(b)) for a, b in arrays["cross_keys"].reshape(-1, 2)]
        if any(not (0 <= a < len(n_states) and 0 <= b < len(n_states)) for a, b in keys):
            raise ValueError("a cross table names a terminal that does not exist")
        _check_ptr(cptr, arrays["cross_refs"].size, [n_states[a] for a, _ in keys], "cross")
        if arrays["deep_refs"].size != arrays["cross_refs"].size:
            raise ValueError("deep and cross tables differ in size")
        # repeat rows: absent from artifacts written before them (then found on first use)
        repeat_keys = arrays.get("repeat_keys", np.zeros((0, 3), dtype=np.int64)).reshape(-1, 3)
        repeat_refs = arrays.get("repeat_refs", np.zeros(0, dtype=np.int64)).reshape(-1)
        if repeat_refs.size != repeat_keys.shape[0] or any(
                not (0 <= t < len(n_states) and 0 <= q < n_states[t] and r >= 2) for t, q, r in repeat_keys.tolist()):
            raise ValueError("a repeat row names a terminal state that does not exist")
        lo, hi = -store.sparse_count, store.dense_count
        for refs in (arrays["inside_refs"], arrays["deep_refs"], arrays["cross_refs"], repeat_refs):
            if refs.size and (refs.min() < lo or refs.max() >= hi):
                raise ValueError("a table reference points outside the stored rows")
        cross = {k: LazyRefs(store, refs=arrays["cross_refs"][cptr[i]:cptr[i + 1]]) for i, k in enumerate(keys)}
        deep = {k: LazyRefs(store, refs=arrays["deep_refs"][cptr[i]:cptr[i + 1]]) for i, k in enumerate(keys)}
        tables = cls(grammar, trie, cache, store, inside, cross, deep)
        for (t, q, r), ref in zip(repeat_keys.tolist(), repeat_refs.tolist()):
            # keyed by the saver's representative of the terminal's DFA: asked first here, it is ours too
            tables._repeat_refs[(tables.same_dfa(t), q, r)] = ref
        return tables


def _check_ptr(ptr: np.ndarray, total: int, sizes: list[int], what: str) -> None:
    """``ptr`` splits ``total`` entries into consecutive tables of exactly ``sizes`` (one row ref per DFA state)."""
    if ptr.ndim != 1 or ptr.size != len(sizes) + 1 or (ptr.size and (ptr[0] != 0 or ptr[-1] != total)) \
            or not np.array_equal(np.diff(ptr), np.asarray(sizes, dtype=np.int64).reshape(-1)):
        raise ValueError(f"malformed {what} table pointers")


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, dtype=np.int64)


def build_grammar_tables(
    grammar: BnfGrammar,
    vocab: "Vocabulary",
    *,
    config: "CompileConfig",
    eager: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    trie: TokenTrie | None = None,
) -> GrammarTables:
    """The grammar's tables: empty and filled on first use, or (``eager``) every reachable table now."""
    from .tables import as_trie

    tables = GrammarTables(grammar, trie or as_trie(vocab), table_cache(config.cache_dir, config.sparse_limit),
                           RowStore(vocab.size, config.sparse_limit))
    return tables.build_all(progress) if eager else tables
