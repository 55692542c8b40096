"""Walking byte DFAs over a vocabulary: the primitives behind the token tables.

* :func:`walk_all_states` runs a DFA from *every* state at once down the
  token trie, one depth per step, and yields the tokens that stay alive
  (INSIDE) and the places where the DFA accepts strictly inside a token
  (:class:`AcceptEvents`). DFAs whose walks converge (a string body: after a
  byte or two, walks from different states are in the same state again) walk
  as *merged* entries (node, current state, bitset of start states), one per
  distinct (node, state), so the cost follows the trie, not the state count.
  Others (counters such as ``x{0,40}``, which never converge) walk start
  states that most tokens can enter as level blocks ``[every node of a
  depth, states]`` while most cells live and as sparse threads (node, state,
  origin) after; the other states as threads from the start. A subtree is dropped as soon as it is dead for all.
* :func:`state_inside_tokens` and :func:`state_accepts` serve one state
  alone (the few states a grammar reaches): down the trie (:func:`walk_state`),
  or, from a state most tokens enter, by running the DFA over all tokens at
  once, one byte column at a time.
* :func:`chain_literal` / :func:`walk_chain` do the same without a walk for a
  DFA that is a single string (one transition per state): the tokens alive
  from position ``i`` are the prefixes of ``lit[i:]``, found along the trie
  path of ``lit[i:]``.
* :func:`suffixes_alive`, :func:`lexeme_ends` and :func:`lexemes_start_at`
  walk a DFA from its start state over token suffixes, on the trie's flat
  byte array.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..automata.dfa import distinct_rows, expand_ranges, least_twins
from ..caches import lru_get
from .token_sets import ids_to_bits
from .token_trie import TokenTrie


class DFALike(Protocol):
    """What the compiler needs from ``kbnf_gpu.automata.ByteDFA``."""

    transitions: np.ndarray  # int32 [n, 256], -1 dead
    accepting: np.ndarray  # bool [n]

    @property
    def fingerprint(self) -> str: ...


def _expand32(lo: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`expand_ranges` in int32, for trie-sized ranges in the hot loop."""
    owner = np.repeat(np.arange(count.shape[0], dtype=np.int32), count)
    values = np.repeat(lo - np.cumsum(count, dtype=np.int32) + count, count)
    values += np.arange(values.shape[0], dtype=np.int32)
    return owner, values


_MAX_MEMO_CANDIDATES = 1 << 19  # bigger candidate lists are recomputed, not kept


@dataclass(frozen=True, eq=False)
class AcceptEvents:
    """Trie nodes where a DFA started in state ``q`` accepts, with tokens continuing past them.

    Event ``e`` is trie node ``node[e]`` at depth ``depth[e]`` (``k`` bytes in);
    the states ``q`` it holds for are ``states[ptr[e]:ptr[e + 1]]``. Only
    nodes that some longer token passes through are kept.
    """

    depth: np.ndarray  # int32 [E]
    node: np.ndarray  # int32 [E]
    ptr: np.ndarray  # int64 [E + 1]
    states: np.ndarray  # int32 [nnz]
    _candidates: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_pairs(cls, trie: TokenTrie, node: np.ndarray, state: np.ndarray) -> "AcceptEvents":
        """Group distinct (node, state) pairs into events, ordered by node."""
        n_state = int(state.max(initial=0)) + 1
        order = np.argsort(node.astype(np.int64) * n_state + state, kind="stable")
        node, state = node[order], state[order].astype(np.int32)
        new = np.ones(node.shape[0], dtype=bool)
        new[1:] = node[1:] != node[:-1]
        starts = np.flatnonzero(new)
        ptr = np.append(starts, node.shape[0]).astype(np.int64)
        node = node[starts].astype(np.int32)
        return cls(trie.node_depth[node], node, ptr, state)

    @property
    def count(self) -> int:
        return int(self.depth.shape[0])

    def candidates(self, trie: TokenTrie, min_rest: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(event, row) for every token that passes an event node with ``>= min_rest`` bytes left.

        Memoized per trie (every CROSS table of a terminal reuses them).
        """
        key = (trie.fingerprint, min_rest)
        cached = self._candidates.get(key)
        if cached is None:
            cached = self._find_candidates(trie, min_rest)
            if cached[1].size <= _MAX_MEMO_CANDIDATES:
                self._candidates[key] = cached
        return cached

    def _find_candidates(self, trie: TokenTrie, min_rest: int) -> tuple[np.ndarray, np.ndarray]:
        nterm = trie.node_nterm[self.node]
        ev, rows = expand_ranges(trie.node_lo[self.node] + nterm, trie.node_size[self.node] - nterm)
        if min_rest > 1:
            ok = trie.row_len[rows] >= self.depth[ev] + min_rest
            ev, rows = ev[ok], rows[ok]
        ev, rows = ev.astype(np.int32), rows.astype(np.int32)
        for arr in (ev, rows):
            arr.setflags(write=False)
        return ev, rows

    def suffix_candidates(self, trie: TokenTrie) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(event, row, ptr)`` of :meth:`candidates` ordered by the first byte after
        the event: those with byte ``c`` are ``[ptr[c], ptr[c + 1])``. A CROSS
        table then only looks at suffixes whose first byte the next DFA takes."""
        key = (trie.fingerprint, "by_byte")
        cached = self._candidates.get(key)
        if cached is None:
            ev, rows = self.candidates(trie, 1)
            first = trie.flat[trie.row_start[rows] + self.depth[ev]]
            order = np.argsort(first, kind="stable")
            ptr = np.zeros(257, dtype=np.int64)
            np.cumsum(np.bincount(first, minlength=256), out=ptr[1:])
            cached = (ev[order], rows[order], ptr)
            for arr in cached:
                arr.setflags(write=False)
            if rows.size <= _MAX_MEMO_CANDIDATES:
                self._candidates[key] = cached
        return cached

    def expand_states(self, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into ``events``, state) for every state of each listed event."""
        owner, idx = expand_ranges(self.ptr[events], self.ptr[events + 1] - self.ptr[events])
        return owner, self.states[idx]


@dataclass(frozen=True, eq=False)
class WalkResult:
    """INSIDE as (state, token) pairs plus, for states walked in blocks, packed token bitsets."""

    inside_states: np.ndarray  # int64 [m]: state q of each INSIDE pair
    inside_tokens: np.ndarray  # int64 [m]: token id of each INSIDE pair
    events: AcceptEvents
    # (states [h], uint32 [h, ceil(V / 32)]): the INSIDE bitsets of those states
    inside_bits: tuple[tuple[np.ndarray, np.ndarray], ...] = ()


def _padded(dfa: DFALike) -> tuple[np.ndarray, np.ndarray]:
    """Flat transition table with a trailing dead row, so index -1 stays dead (memoized: the walks of one
    state at a time each need it)."""
    def build() -> tuple[np.ndarray, np.ndarray]:
        trans = np.asarray(dfa.transitions, dtype=np.int32)
        return (_frozen(np.concatenate([trans.ravel(), np.full(256, -1, dtype=np.int32)])),
                _frozen(np.append(np.asarray(dfa.accepting, dtype=bool), False)))

    return lru_get(_padded_tables, _lock, dfa.fingerprint, _WALK_CACHE_SIZE, build)


_LEVEL_CHUNK = 128  # origin states per level walk (bounds its [nodes, origins] blocks)
_HEAVY_SHARE = 0.2  # an origin is "heavy" if its first byte fits this share of tokens
# Costs of the walks, in units of one sparse thread (node, origin) step, to
# choose between merging and level blocks + threads (measured on Llama-3).
_MERGE_ENTRY_COST = 1.0  # one merged (node, state) entry, plus:
_MERGE_WORD_COST = 0.15  # each 64-origin word of its bitset
_LEVEL_CELL_COST = 0.15  # one cell of a level block [nodes, origins]
_LEVEL_SPARSE = 4  # level walks go on as threads once under 1/this of their cells live
_NODE_SCAN = 2  # merged walks scan the next depth's nodes if entries have > 1/this of them as children
_MERGE_CHUNK = 1024  # origins per merged walk (bounds its bitsets to 16 words)
_SMALL_WALK = 1 << 14  # merged walks with at most these many entries give INSIDE as pairs
_MERGE_PROBE_DEPTH = 3  # merging stops at the first of these depths where it costs more
_MERGE_MIN_COST = 16384  # or where the other way costs less than this by then (a small walk:
# per-depth overheads dominate), pro rata of the trie nodes at earlier depths
_MERGE: bool | None = None  # tests: True always merges, False never (None: by cost)


def walk_all_states(trie: TokenTrie, dfa: DFALike, inside: bool = True) -> WalkResult:
    """Walk ``dfa`` from every state at once down the trie.

    First as merged entries (:func:`_walk_merged`); if, over the first
    :data:`_MERGE_PROBE_DEPTH` bytes, that costs more than the other way
    would, the walk starts over: origins that
    most tokens can start from (``[^"]`` inside a string, the count states
    of ``x{0,40}``) as level blocks (:func:`_walk_levels`), the rest (escape
    and UTF-8 continuation states, the state before an opening quote) as
    sparse threads.
    """
    flat_t, acc = _padded(dfa)
    heavy = _heavy(trie, np.asarray(dfa.transitions))
    if _MERGE is not False:
        merged = _walk_all_merged(trie, flat_t, acc, heavy, inside)
        if merged is not None:
            return merged
    in_q, in_t, ev_n, ev_q = _walk_threads(trie, flat_t, acc, np.flatnonzero(~heavy).astype(np.int32), inside)
    nodes, states, blocks = [ev_n], [ev_q], []
    heavy_origins = np.flatnonzero(heavy).astype(np.int32)
    for lo in range(0, heavy_origins.shape[0], _LEVEL_CHUNK):
        origins = heavy_origins[lo : lo + _LEVEL_CHUNK]
        bits, node, state = _walk_levels(trie, flat_t, acc, origins, inside)
        nodes.append(node)
        states.append(state)
        if inside:
            blocks.append((origins, bits))
    events = AcceptEvents.from_pairs(trie, np.concatenate(nodes), np.concatenate(states))
    return WalkResult(in_q.astype(np.int64), in_t.astype(np.int64), events, tuple(blocks))


def _heavy(trie: TokenTrie, transitions: np.ndarray) -> np.ndarray:
    """``bool [n]``: do the bytes each state takes first start more than ``_HEAVY_SHARE`` of the tokens?"""
    if trie.rows == 0:
        return np.zeros(transitions.shape[0], dtype=bool)
    return (transitions >= 0) @ _rows_by_first_byte(trie) > _HEAVY_SHARE * trie.rows


def _rows_by_first_byte(trie: TokenTrie) -> np.ndarray:
    """``float [256]``: how many rows start with each byte (memoized per trie)."""
    def build() -> np.ndarray:
        first = slice(trie.first_child[0], trie.first_child[0] + trie.n_children[0])
        rows = np.zeros(256, dtype=np.float64)
        rows[trie.node_byte[first]] = trie.node_size[first]
        return _frozen(rows)

    return lru_get(_first_byte_rows, _lock, trie.fingerprint, _TRIE_CACHE_SIZE, build)


def _walk_threads(
    trie: TokenTrie, flat_t: np.ndarray, acc: np.ndarray, origins: np.ndarray, inside: bool,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sparse threads (node, state, origin), one depth per step: from the root in each of ``origins``, or
    from the threads ``start = (node, state)`` (``origins`` then gives each one's origin).

    Returns INSIDE (origin, token) pairs and event (node, origin) pairs found below the start.
    """
    nodes: list[np.ndarray] = []
    states: list[np.ndarray] = []
    froms: list[np.ndarray] = []
    if start is None:
        state, origin = origins.copy(), origins
        first = np.full(origins.shape[0], trie.first_child[0], dtype=np.int32)  # children of each thread's node
        count = np.full(origins.shape[0], trie.n_children[0], dtype=np.int32)
    else:
        state, origin = start[1], origins
        first, count = trie.first_child[start[0]], trie.n_children[start[0]]
    while origin.size:
        owner, node = _expand32(first, count)
        nxt = flat_t[state[owner] * 256 + trie.node_byte[node]]
        live = np.flatnonzero(nxt >= 0)
        if live.size == 0:
            break
        node, state, origin = node[live], nxt[live], origin[owner[live]]
        nodes.append(node)
        states.append(state)
        froms.append(origin)
        if node.shape[0] <= _FEW_THREADS and int(trie.node_size[node].sum()) <= _FEW_ROWS:
            # the deep, narrow end of long tokens: one Python pass beats a level of array calls per byte
            for x, out in zip(_walk_few(trie, flat_t, node, state, origin), (nodes, states, froms)):
                out.append(x)
            break
        first, count = trie.first_child[node], trie.n_children[node]
    node, state, origin = (_cat(x) for x in (nodes, states, froms))
    in_q, in_t = _inside_pairs(trie, node, origin) if inside else (_EMPTY, _EMPTY)
    hit = np.flatnonzero(acc[state] & trie.node_passes[node])
    return in_q, in_t, node[hit], origin[hit]


# threads whose nodes prefix this few tokens in all are walked to their ends in Python (each level of array calls
# costs ~15 us; a long token's last bytes are levels of one or two threads)
_FEW_THREADS = 16
_FEW_ROWS = 24


def _walk_few(
    trie: TokenTrie, flat_t: np.ndarray, node: np.ndarray, state: np.ndarray, origin: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (node, state, origin) threads below the given ones, depth first (what ``_walk_threads``'s later levels
    would find, in another order)."""
    first_child, n_children, node_byte = trie.first_child, trie.n_children, trie.node_byte
    out_node: list[int] = []
    out_state: list[int] = []
    out_origin: list[int] = []
    stack = list(zip(node.tolist(), state.tolist(), origin.tolist()))
    while stack:
        n, q, o = stack.pop()
        first = int(first_child[n])
        row = q * 256
        for child in range(first, first + int(n_children[n])):
            nxt = int(flat_t[row + int(node_byte[child])])
            if nxt >= 0:
                out_node.append(child)
                out_state.append(nxt)
                out_origin.append(o)
                stack.append((child, nxt, o))
    return (np.array(out_node, dtype=np.int32), np.array(out_state, dtype=np.int32),
            np.array(out_origin, dtype=origin.dtype))


def _walk_levels(
    trie: TokenTrie, flat_t: np.ndarray, acc: np.ndarray, origins: np.ndarray, inside: bool
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """All of ``origins`` at once on ``[nodes of one depth, origins]`` state blocks, then as threads.

    While most cells live (a string body, ``[a-z]*``), every node of a depth
    takes its parent's states in one gather: no per-node child expansion, no
    compaction. Once under 1/:data:`_LEVEL_SPARSE` of the cells live, the
    live ones go on as sparse threads (:func:`_walk_threads`).

    Returns INSIDE as ``uint32 [len(origins), ceil(V / 32)]`` bitsets (these
    states admit many tokens, so bitsets beat pair lists; None without
    ``inside``) and the event (node, origin) pairs.
    """
    table = np.where(flat_t >= 0, flat_t * 256, -256).astype(np.int32)  # pre-multiplied; dead = -256
    acc256 = np.zeros(table.shape[0], dtype=bool)
    acc256[::256] = acc
    h = origins.shape[0]
    parent, end_ptr, end_local, end_tokens, passes = _levels(trie)
    by_token = np.zeros((trie.vocab_size if inside else 0, -(-h // 8)), dtype=np.uint8)  # bit i: origin i
    ev_n: list[np.ndarray] = []
    ev_q: list[np.ndarray] = []
    block = (origins * 256)[None, :]  # the root's states
    for depth in range(1, trie.max_len + 1):
        lo, hi = int(trie.depth_start[depth]), int(trie.depth_start[depth + 1])
        block = np.take(table, block[parent[lo:hi]] + trie.node_byte[lo:hi, None], mode="wrap")  # -256 + b: dead
        alive = block >= 0
        n_live = int(np.count_nonzero(alive))
        if not n_live:
            break
        if inside:
            ends = end_local[end_ptr[depth]:end_ptr[depth + 1]]
            _put_rows(by_token, end_tokens[end_ptr[depth]:end_ptr[depth + 1]],
                      np.packbits(alive[ends], axis=1, bitorder="little"))
        passing = passes[depth]  # nodes some token goes on from (most deep nodes end their token)
        i, j = np.nonzero(np.take(acc256, block[passing], mode="wrap"))
        i = passing[i]
        ev_n.append(i.astype(np.int32) + np.int32(lo))
        ev_q.append(origins[j])
        if n_live * _LEVEL_SPARSE < alive.size and depth < trie.max_len:
            i, j = np.nonzero(alive)
            node = i.astype(np.int32) + np.int32(lo)
            in_q, in_t, n, q = _walk_threads(trie, flat_t, acc, j, inside, (node, block[i, j] // 256))
            if inside and in_t.size:
                np.bitwise_or.at(by_token, (in_t, in_q >> 3), np.left_shift(1, in_q & 7).astype(np.uint8))
            ev_n.append(n)
            ev_q.append(origins[q])
            break
    if not inside:
        return None, _cat(ev_n), _cat(ev_q)
    return _rows_of_token_bits(by_token, h), _cat(ev_n), _cat(ev_q)


def _levels(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """What :func:`_walk_levels` reads per depth (memoized per trie): each node's parent numbered within its
    depth, ``int32 [N]``; the tokens ending at each depth, ``end_local[end_ptr[d]:end_ptr[d + 1]]`` (their
    nodes, numbered within depth ``d``) with ``end_tokens`` (their ids), one entry per token; and per depth
    the nodes (numbered within it) that some token passes through."""
    def build() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
        depth = trie.node_depth
        first = trie.depth_start[np.maximum(depth - 1, 0)]
        parent = ((trie.child_key >> 8) - first).astype(np.int32)
        parent[0] = 0
        ends, rows = _token_ends(trie)
        end_ptr = np.searchsorted(ends, trie.depth_start).astype(np.int64)
        end_local = (ends - trie.depth_start[trie.node_depth[ends]]).astype(np.int32)
        passes = [_frozen(np.flatnonzero(trie.node_passes[int(trie.depth_start[d]):int(trie.depth_start[d + 1])]))
                  for d in range(trie.max_len + 1)]
        return (*(_frozen(x) for x in (parent, end_ptr, end_local, trie.row_ids[rows].astype(np.int64))), passes)

    return lru_get(_level_cache, _lock, trie.fingerprint, _TRIE_CACHE_SIZE, build)


def _walk_all_merged(
    trie: TokenTrie, flat_t: np.ndarray, acc: np.ndarray, heavy: np.ndarray, inside: bool
) -> WalkResult | None:
    """:func:`_walk_merged` from every state, :data:`_MERGE_CHUNK` origins per walk
    (bounds the bitsets); None if merging costs more (unless ``_MERGE`` forces it)."""
    n = heavy.shape[0]
    pairs_q, pairs_t, ev_n, ev_q, blocks = [], [], [], [], []
    for lo in range(0, max(n, 1), _MERGE_CHUNK):
        origins = np.arange(lo, min(n, lo + _MERGE_CHUNK), dtype=np.int32)
        part = _walk_merged(trie, flat_t, acc, origins, inside, None if _MERGE else heavy[origins])
        if part is None:
            return None
        in_q, in_t, bits, node, origin = part
        pairs_q.append(in_q)
        pairs_t.append(in_t)
        ev_n.append(node)
        ev_q.append(origin)
        if bits is not None:
            blocks.append((origins, bits))
    events = AcceptEvents.from_pairs(trie, _cat(ev_n), _cat(ev_q))
    in_q, in_t = _cat(pairs_q).astype(np.int64), _cat(pairs_t).astype(np.int64)
    return WalkResult(in_q, in_t, events, tuple(blocks))


def _walk_merged(
    trie: TokenTrie,
    flat_t: np.ndarray,
    acc: np.ndarray,
    origins: np.ndarray,
    inside: bool,
    heavy: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray] | None:
    """All of ``origins`` as entries (node, state, origin bitset), merged per (node, state).

    Walks from different origins that meet in one state at one node go on as
    one entry whose ``uint64`` bitset (bit ``i`` = ``origins[i]``) is the OR
    of theirs, so a converging DFA costs about one entry per trie node
    whatever its state count. Within a depth the entries are sorted by
    (node, state); a node's tokens collect the OR of its entries' bitsets.

    Returns INSIDE as (origin, token) pairs when the walk was small (then the
    pairs are few and bitsets would cost more), else as ``uint32 [len(origins),
    ceil(V / 32)]`` bitsets (None without ``inside``); then the event (node,
    origin) pairs.

    Given ``heavy`` (bool per origin: would walk in level blocks), it gives up and
    returns None as soon as, up to depth :data:`_MERGE_PROBE_DEPTH`, its
    entries cost more than level blocks of the heavy origins plus threads of
    the others (walks that do not converge, such as the count states of
    ``x{0,40}``), or those cost less than :data:`_MERGE_MIN_COST` pro rata (a
    small walk, where the merged walk's overheads dominate). Depth 1 is
    judged from the transition table before walking.
    """
    h = origins.shape[0]
    words = max(1, (h + 63) // 64)
    stride = flat_t.shape[0] // 256  # > every state, the dead row included
    if heavy is not None:
        entry_cost = _MERGE_ENTRY_COST + _MERGE_WORD_COST * words
        level_cost = _LEVEL_CELL_COST * int(np.count_nonzero(heavy))
        # _MERGE_MIN_COST by the probe depth, in proportion to the nodes up to each depth
        small_walk = _MERGE_MIN_COST / max(1, int(trie.depth_start[min(_MERGE_PROBE_DEPTH, trie.max_len) + 1]) - 1)
        # depth 1 from the transition table alone: a small or non-converging walk stops here
        first = trie.node_byte[trie.first_child[0] : trie.first_child[0] + trie.n_children[0]]
        step = flat_t[:-256].reshape(-1, 256)[origins][:, first]  # [h, root children]
        alive = step >= 0
        step = np.sort(np.where(alive, step, -1), axis=0)
        n_entries = np.count_nonzero((step[1:] != step[:-1]) & (step[1:] >= 0)) + np.count_nonzero(step[:1] >= 0)
        other1 = level_cost * np.count_nonzero(alive.any(axis=0)) + np.count_nonzero(alive[~heavy])
        if entry_cost * n_entries > other1 or other1 < small_walk * first.shape[0]:
            return None
    dead = np.int32(stride - 1)
    node_bits = np.zeros((trie.node_byte.shape[0] if inside else 0, words), dtype="<u8")  # OR per node
    ev_n: list[np.ndarray] = []
    ev_b: list[np.ndarray] = []
    col = np.arange(h)
    bits = np.zeros((h, words), dtype="<u8")
    bits[col, col >> 6] = np.left_shift(np.uint64(1), (col & 63).astype(np.uint64))
    state, node = origins.astype(np.int32), np.zeros(h, dtype=np.int32)
    if heavy is not None:
        light = np.zeros((1, words), dtype="<u8")  # bitset of the origins that walk as threads
        thread = col[~heavy]
        np.bitwise_or.at(light[0], thread >> 6, np.left_shift(np.uint64(1), (thread & 63).astype(np.uint64)))
    cost_merged = cost_other = 0.0
    reached: list[np.ndarray] = []  # each depth's entry nodes, while the walk is small
    n_reached = 0
    multi = h > 1  # may a node hold several entries? (the root holds them all)
    depth = 0
    while depth < trie.max_len:
        # the entries' children: by entry (few entries) or by node of the next depth (many)
        lo, hi = int(trie.depth_start[depth + 1]), int(trie.depth_start[depth + 2])
        base = int(trie.depth_start[depth])
        if _NODE_SCAN * int(trie.n_children[node].sum(dtype=np.int64)) < hi - lo:
            owner, child = _expand32(trie.first_child[node], trie.n_children[node])
        elif not multi:
            parent = (trie.child_key[lo:hi] >> 8).astype(np.int32) - base
            slot = np.full(lo - base, node.shape[0], dtype=np.int32)
            slot[node - base] = np.arange(node.shape[0], dtype=np.int32)
            owner = slot[parent]  # len(node), past the end, where the parent has no entry
            state = np.append(state, dead)
            child = np.arange(lo, hi, dtype=np.int32)
        else:
            parent = (trie.child_key[lo:hi] >> 8).astype(np.int32) - base
            count = np.bincount(node - base, minlength=lo - base).astype(np.int32)
            start = np.cumsum(count, dtype=np.int32) - count
            at, owner = _expand32(start[parent], count[parent])
            child = at + np.int32(lo)
        nxt = flat_t[state[owner] * 256 + trie.node_byte[child]]
        live = np.flatnonzero(nxt >= 0)
        if live.size == 0:
            break
        owner, child, nxt = owner[live], child[live], nxt[live]
        heads = None  # where each node's entries start, if some node has several
        if not multi:  # one entry per node stays so, in node order
            bits, node, state = np.take(bits, owner, axis=0), child, nxt
        else:
            key = child.astype(np.int64) * stride + nxt
            if (key[1:] > key[:-1]).all():  # one entry per (node, state) already, in order
                bits, node, state = np.take(bits, owner, axis=0), child, nxt
            else:  # nearly sorted (runs per parent entry): a stable sort is fast
                order = np.argsort(key, kind="stable")
                key = key[order]
                new = np.empty(key.shape[0], dtype=bool)
                new[0] = True
                np.not_equal(key[1:], key[:-1], out=new[1:])
                starts = np.flatnonzero(new)
                bits = _or_groups(np.take(bits, owner[order], axis=0), starts)
                order = order[starts]
                node, state = child[order], nxt[order]
            first = np.empty(node.shape[0], dtype=bool)
            first[0] = True
            np.not_equal(node[1:], node[:-1], out=first[1:])
            heads = np.flatnonzero(first)
            if heads.shape[0] == node.shape[0]:
                heads, multi = None, False
        depth += 1
        if heavy is not None and depth <= _MERGE_PROBE_DEPTH:
            cost_merged += entry_cost * node.shape[0]
            n_nodes = node.shape[0] if heads is None else heads.shape[0]
            cost_other += level_cost * n_nodes + int(np.bitwise_count(bits & light).sum())
            if cost_merged > cost_other or cost_other < small_walk * (trie.depth_start[depth + 1] - 1):
                return None
        if inside:
            n_reached += node.shape[0]
            if n_reached <= _SMALL_WALK:
                reached.append(node if heads is None else node[heads])
            if heads is None:
                _put_rows(node_bits, node, bits)
            else:
                _put_rows(node_bits, node[heads], _or_groups(bits, heads))
        hit = np.flatnonzero(acc[state])
        if hit.size:
            hit = hit[trie.node_passes[node[hit]]]
            ev_n.append(node[hit])
            ev_b.append(np.take(bits, hit, axis=0))
    ev_node, ev_origin = _EMPTY, _EMPTY
    if ev_n:
        held = np.unpackbits(np.concatenate(ev_b).view(np.uint8), axis=1, count=h, bitorder="little")
        i, j = np.nonzero(held)
        ev_node, ev_origin = np.concatenate(ev_n)[i], origins[j]
    if not inside:
        return _EMPTY, _EMPTY, None, ev_node, ev_origin
    if n_reached <= _SMALL_WALK:  # few nodes reached: INSIDE as (origin, token) pairs
        ends = _cat(reached)
        ends = ends[trie.node_nterm[ends] > 0]
        held = np.unpackbits(np.take(node_bits, ends, axis=0).view(np.uint8), axis=1, count=h, bitorder="little")
        i, j = np.nonzero(held)
        in_q, in_t = _inside_pairs(trie, ends[i], origins[j])
        return in_q, in_t, None, ev_node, ev_origin
    by_token = np.zeros((trie.vocab_size, words), dtype="<u8")
    _put_rows(by_token, trie.row_ids, np.take(node_bits, _row_end_nodes(trie), axis=0))
    return _EMPTY, _EMPTY, _rows_of_token_bits(by_token.view(np.uint8), h), ev_node, ev_origin


def _or_groups(bits: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """OR of the rows of ``bits`` in each group ``[heads[i], heads[i + 1])`` (``heads[0] == 0``).

    ``reduceat`` over the few groups of several rows only: most are single.
    """
    out = np.take(bits, heads, axis=0)
    size = np.diff(heads, append=bits.shape[0]).astype(np.int32)
    big = np.flatnonzero(size > 1)
    if big.size:
        _, rows = _expand32(heads[big].astype(np.int32), size[big])
        starts = np.cumsum(size[big]) - size[big]
        out[big] = np.bitwise_or.reduceat(np.take(bits, rows, axis=0), starts, axis=0)
    return out


def _put_rows(dst: np.ndarray, idx: np.ndarray, src: np.ndarray) -> None:
    """``dst[idx] = src`` for C-contiguous 2-D arrays, moving rows as single items (faster)."""
    row = np.dtype((np.void, dst.shape[1] * dst.itemsize))
    np.put(dst.view(row).reshape(-1), idx, np.ascontiguousarray(src).view(row).reshape(-1))


_row_ends: "OrderedDict[str, np.ndarray]" = OrderedDict()


def _row_end_nodes(trie: TokenTrie) -> np.ndarray:
    """``int32 [R]``: the trie node where each row's token ends (memoized per trie)."""
    def build() -> np.ndarray:
        nodes, rows = _token_ends(trie)
        ends = np.zeros(trie.rows, dtype=np.int32)
        ends[rows] = nodes
        return _frozen(ends)

    return lru_get(_row_ends, _lock, trie.fingerprint, 4, build)


def _token_ends(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray]:
    """``(node, row)`` of every token's end node, in node order (a node holds several with duplicate tokens)."""
    nodes = np.flatnonzero(trie.node_nterm).astype(np.int32)
    owner, rows = _expand32(trie.node_lo[nodes], trie.node_nterm[nodes])
    return nodes[owner], rows


def _rows_of_token_bits(by_token: np.ndarray, h: int) -> np.ndarray:
    """Transpose token-major bits to per-origin bitsets.

    ``by_token`` is ``uint8 [V, >= ceil(h / 8)]`` with origin ``i`` at bit
    ``i % 8`` of byte ``i // 8``; returns ``uint32 [h, ceil(V / 32)]`` (token
    ``t`` at bit ``t % 32`` of word ``t // 32``), one bit plane at a time.
    """
    v = by_token.shape[0]
    n_bytes = (h + 7) // 8
    planes = np.ascontiguousarray(by_token[:, :n_bytes].T)  # [n_bytes, V]
    out = np.zeros((n_bytes * 8, ((v + 31) // 32) * 4), dtype=np.uint8)
    width = (v + 7) // 8
    bit = np.empty_like(planes)
    for k in range(8):
        np.right_shift(planes, k, out=bit)
        np.bitwise_and(bit, 1, out=bit)
        out[k::8, :width] = np.packbits(bit.view(bool), axis=1, bitorder="little")
    return out[:h].view("<u4").astype(np.uint32, copy=False)


_EMPTY = np.zeros(0, dtype=np.int32)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else _EMPTY


def _inside_pairs(trie: TokenTrie, node: np.ndarray, origin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(origin, token id) for every token ending at one of the (node, origin) places reached alive."""
    nterm = trie.node_nterm[node]
    has = np.flatnonzero(nterm)
    if trie.max_nterm <= 1:
        return origin[has], trie.row_ids[trie.node_lo[node[has]]]
    owner, rows = _expand32(trie.node_lo[node[has]], nterm[has])
    return origin[has][owner], trie.row_ids[rows]


def chain_literal(dfa: DFALike) -> tuple[bytes, np.ndarray] | None:
    """``(lit, order)`` if ``dfa`` is a chain ``order[0] = 0 -lit[0]-> order[1] -lit[1]-> ...``.

    A chain has exactly one live transition per state except the last, which
    has none, and visits every state once. Accepting states may lie anywhere.
    """
    trans = np.asarray(dfa.transitions)
    n = trans.shape[0]
    live = trans >= 0
    per_state = live.sum(axis=1)
    if n == 0 or (per_state > 1).any() or int(per_state.sum()) != n - 1:
        return None
    byte_of = live.argmax(axis=1)
    order = np.empty(n, dtype=np.int64)
    lit = bytearray()
    s = 0
    for i in range(n):
        order[i] = s
        if i == n - 1:
            break
        if per_state[s] != 1:
            return None
        b = int(byte_of[s])
        lit.append(b)
        s = int(trans[s, b])
    if per_state[s] != 0 or np.unique(order).size != n:
        return None
    return bytes(lit), order


def walk_chain(trie: TokenTrie, dfa: DFALike, chain: tuple[bytes, np.ndarray]) -> WalkResult:
    """:func:`walk_all_states` for a chain DFA, by following trie paths of ``lit[i:]``."""
    lit, order = chain
    n = order.shape[0]
    chain_acc = np.asarray(dfa.accepting, dtype=bool)[order]
    paths = trie.path_nodes([lit[i:] for i in range(n)])  # [n, max_len]
    i, d = np.nonzero(paths >= 0)  # the DFA in state order[i] is alive after d + 1 bytes
    node, origin = paths[i, d], order[i].astype(np.int32)
    in_q, in_t = _inside_pairs(trie, node, origin)
    hit = np.flatnonzero(chain_acc[i + d + 1] & trie.node_passes[node])
    events = AcceptEvents.from_pairs(trie, node[hit], origin[hit])
    return WalkResult(in_q.astype(np.int64), in_t.astype(np.int64), events)


def first_bytes(dfa: DFALike) -> np.ndarray:
    """Bytes the DFA takes from its start state."""
    return np.flatnonzero(takes_first(dfa))


def takes_first(dfa: DFALike) -> np.ndarray:
    """``bool [256]``: does the DFA take this byte from its start state?"""
    trans = np.asarray(dfa.transitions)
    return trans[0] >= 0 if trans.shape[0] else np.zeros(256, dtype=bool)


def suffixes_alive(
    trie: TokenTrie, dfa: DFALike, rows: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """``bool``: does ``dfa`` stay alive from its start over ``token(row)[offset:]`` (non-empty)?"""
    flat_t, _ = _padded(dfa)
    pos = trie.row_start[rows] + offsets
    end = trie.row_start[rows] + trie.row_len[rows]
    out = np.zeros(pos.shape[0], dtype=bool)
    idx = np.arange(pos.shape[0])
    state = np.zeros(pos.shape[0], dtype=np.int32)
    flat = trie.flat
    while idx.size:
        state = flat_t[state * 256 + flat[pos]]
        pos = pos + 1
        alive = state >= 0
        done = alive & (pos == end)
        out[idx[done]] = True
        keep = alive & ~done
        idx, state, pos, end = idx[keep], state[keep], pos[keep], end[keep]
    return out


def lexeme_ends(trie: TokenTrie, dfa: DFALike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, k, flat position) where a non-empty lexeme of ``dfa`` starts at byte
    ``k`` of the row's token and ends strictly before the token's end; sorted."""
    origin = _lexeme_origins(trie, dfa)
    hits = np.sort(origin[_lexeme_found(trie, dfa, origin)])
    rows = trie.flat_row[hits].astype(np.int64)
    return rows, hits - trie.row_start[rows], hits


def lexemes_start_at(trie: TokenTrie, dfa: DFALike, positions: np.ndarray) -> np.ndarray:
    """``bool`` per flat position: does a non-empty lexeme of ``dfa`` start there and end strictly before its
    token's end (:func:`lexeme_ends`, asked at these positions alone)?"""
    positions = np.asarray(positions, dtype=np.int64)
    rows = trie.flat_row[positions]
    asked = np.flatnonzero(takes_first(dfa)[trie.flat[positions]]
                           & (positions <= trie.row_start[rows] + trie.row_len[rows] - 2))
    out = np.zeros(positions.shape[0], dtype=bool)
    out[asked[_lexeme_found(trie, dfa, positions[asked])]] = True
    return out


def lexeme_start_count(trie: TokenTrie, dfa: DFALike) -> int:
    """How many flat positions :func:`lexeme_ends` walks from (at least 2 bytes left, a first byte the DFA
    takes): its cost, read off the trie's index of positions by byte."""
    first = first_bytes(dfa)
    return int((trie.split_ptr[first + 1] - trie.split_ptr[first]).sum())


def _lexeme_origins(trie: TokenTrie, dfa: DFALike) -> np.ndarray:
    """Flat positions with at least 2 bytes left whose byte ``dfa`` takes first (int64)."""
    first = first_bytes(dfa)
    _, origin = expand_ranges(trie.split_ptr[first], trie.split_ptr[first + 1] - trie.split_ptr[first])
    return trie.split_pos[origin].astype(np.int64)


def _lexeme_found(trie: TokenTrie, dfa: DFALike, origin: np.ndarray) -> np.ndarray:
    """``bool`` per origin (flat positions with at least 2 bytes left): does the DFA, run from its start there,
    accept before the token's last byte?"""
    flat_t, acc = _padded(dfa)
    flat = trie.flat
    rows = trie.flat_row[origin]
    end = trie.row_start[rows] + trie.row_len[rows]
    found = np.zeros(origin.shape[0], dtype=bool)
    idx = np.arange(origin.shape[0])
    state = np.zeros(origin.shape[0], dtype=np.int32)
    pos = origin.copy()
    while idx.size:
        state = flat_t[state * 256 + flat[pos]]
        pos = pos + 1
        hit = acc[state]  # pos < end holds for every candidate still here
        found[idx[hit]] = True
        keep = ~hit & (state >= 0) & (pos < end - 1)
        idx, state, pos, end = idx[keep], state[keep], pos[keep], end[keep]
    return found


_WALK_CACHE_SIZE = 64
_STATE_WALK_CACHE_SIZE = 8  # one state's walks, kept while its CROSS/DEEP tables follow its INSIDE
_STATE_WALK_MAX = 1 << 18  # ids and accept positions kept per walk (at most ~6 MB); bigger ones are not kept
_events: "OrderedDict[tuple[str, str], AcceptEvents]" = OrderedDict()
_state_walks: "OrderedDict[tuple[str, str, int], tuple[np.ndarray, np.ndarray, np.ndarray]]" = OrderedDict()
_TRIE_CACHE_SIZE = 8  # vocabularies whose row orders and first-byte counts are kept
_by_length: "OrderedDict[str, tuple[np.ndarray, list[np.ndarray], list[int]]]" = OrderedDict()
_first_byte_rows: "OrderedDict[str, np.ndarray]" = OrderedDict()
_first_two_bytes_rows: "OrderedDict[str, tuple[np.ndarray, np.ndarray]]" = OrderedDict()
_level_cache: "OrderedDict[str, tuple[np.ndarray, ...]]" = OrderedDict()
_padded_tables: "OrderedDict[str, tuple[np.ndarray, np.ndarray]]" = OrderedDict()
_twins: "OrderedDict[tuple[str, tuple[int, ...]], tuple[np.ndarray, ...]]" = OrderedDict()
_long_tries: "OrderedDict[tuple[str, int], tuple[TokenTrie, np.ndarray]]" = OrderedDict()
_lock = threading.Lock()


def walk(trie: TokenTrie, dfa: DFALike, inside: bool = True) -> WalkResult:
    """INSIDE pairs and accept events of ``dfa``, by the chain fast path when it applies."""
    chain = chain_literal(dfa)
    result = walk_chain(trie, dfa, chain) if chain else walk_all_states(trie, dfa, inside)
    key = (dfa.fingerprint, trie.fingerprint)
    with _lock:
        _events[key] = result.events
        _events.move_to_end(key)
        while len(_events) > _WALK_CACHE_SIZE:
            _events.popitem(last=False)
    return result


def accept_events(trie: TokenTrie, dfa: DFALike) -> AcceptEvents:
    """Accept events of ``dfa``, memoized on the DFA and vocabulary fingerprints."""
    key = (dfa.fingerprint, trie.fingerprint)
    with _lock:
        events = _events.get(key)
        if events is not None:
            _events.move_to_end(key)
            return events
    return walk(trie, dfa, inside=False).events


def walk_state(trie: TokenTrie, dfa: DFALike, q: int, inside: bool = True) -> WalkResult:
    """:func:`walk_all_states` from the one state ``q`` alone (numbered 0 in the result), down the trie."""
    flat_t, acc = _padded(dfa)
    in_q, in_t, ev_n, ev_q = _walk_threads(trie, flat_t, acc, np.array([q], dtype=np.int32), inside)
    events = AcceptEvents.from_pairs(trie, ev_n, np.zeros_like(ev_q))
    return WalkResult(np.zeros(in_q.shape[0], dtype=np.int64), in_t.astype(np.int64), events)


def state_inside_tokens(trie: TokenTrie, dfa: DFALike, q: int) -> np.ndarray:
    """``INSIDE[dfa][q]`` as token ids (maybe repeated)."""
    return _state_walk(trie, dfa, q)[0]


def state_accepts(trie: TokenTrie, dfa: DFALike, q: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, k)`` of every token that ``dfa``, started in ``q``, accepts strictly inside: after its first
    ``k`` bytes, ``1 <= k < len``. What CROSS and DEEP of one state start from."""
    _, rows, k = _state_walk(trie, dfa, q)
    return rows, k


def _state_walk(trie: TokenTrie, dfa: DFALike, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(INSIDE token ids, accept rows, accept k)`` of ``q`` alone, memoized: a state's INSIDE set and its
    CROSS/DEEP sets with every follower come from one walk. From a heavy state (a string body, which most
    tokens enter) the DFA runs over all tokens at once, one byte column at a time (a few ms for 128k tokens,
    where walking the trie node by node costs several times that); from any other, down the trie."""
    return lru_get(_state_walks, _lock, (dfa.fingerprint, trie.fingerprint, q), _STATE_WALK_CACHE_SIZE,
                   lambda: _walk_one_state(trie, dfa, q),
                   keep=lambda found: found[0].size + found[1].size <= _STATE_WALK_MAX)


def _walk_one_state(trie: TokenTrie, dfa: DFALike, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if _heavy(trie, np.asarray(dfa.transitions)[q:q + 1])[0]:
        _, acc = _padded(dfa)
        order, _, longer = _longest_first(trie)
        ended, rows, ks = [], [], []
        for k, idx, state in _columns(trie, dfa, q):
            if idx.shape[0] <= _FEW_ROWS:  # the last columns hold a few long rows: each run to its end
                tail_ended, tail_rows, tail_ks = _rows_to_their_ends(trie, dfa, order, k, idx, state)
                ended.append(tail_ended)
                rows.append(tail_rows)
                ks.append(tail_ks)
                break
            going_on = np.searchsorted(idx, _more_than(longer, k))
            ended.append(idx[going_on:][state[going_on:] >= 0])
            hit_rows = order[idx[np.flatnonzero(np.take(acc, state[:going_on], mode="wrap"))]]  # acc[-1]: dead
            rows.append(hit_rows)
            ks.append(np.full(hit_rows.shape[0], k, dtype=np.int64))
        return (trie.row_ids[order[_cat(ended)]].astype(np.int64), _cat(rows).astype(np.int64),
                _cat(ks).astype(np.int64))
    result = walk_state(trie, dfa, q)
    ev, rows = result.events.candidates(trie, 1)
    return result.inside_tokens, rows.astype(np.int64), result.events.depth[ev].astype(np.int64)


def _rows_to_their_ends(
    trie: TokenTrie, dfa: DFALike, order: np.ndarray, k: int, idx: np.ndarray, state: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What ``_walk_one_state``'s column loop finds from column ``k`` on, for the rows ``idx`` (in
    ``_longest_first`` order) in ``state`` after ``k`` bytes, one row at a time in Python: (the rows that end
    alive, as ``idx`` entries; the trie rows accepting strictly inside; after how many bytes)."""
    flat_t, acc = _padded(dfa)
    ended: list[int] = []
    hit_rows: list[int] = []
    hit_ks: list[int] = []
    for i, s in zip(idx.tolist(), state.tolist()):
        row = int(order[i])
        start, length = int(trie.row_start[row]), int(trie.row_len[row])
        j = k
        while s >= 0:
            if j == length:
                ended.append(i)
                break
            if acc[s]:
                hit_rows.append(row)
                hit_ks.append(j)
            s = int(flat_t[s * 256 + int(trie.flat[start + j])])
            j += 1
    return (np.array(ended, dtype=np.int64), np.array(hit_rows, dtype=np.int64),
            np.array(hit_ks, dtype=np.int64))


def short_twins(dfa: DFALike, horizons: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """For each of ``horizons`` (ascending), ``int32 [n]``: for each state, the least state that acts as it does
    on every string of at most that many bytes (dies after the same prefixes, accepts after the same ones):
    Moore's refinement stopped after that many rounds, one refinement for all. A counter's positions far from
    its bound are twins, and a token that short cannot tell them apart (memoized per DFA)."""
    def build() -> tuple[np.ndarray, ...]:
        trans = np.asarray(dfa.transitions)
        first, _ = distinct_rows(trans.T)  # bytes every state treats alike: one column kept
        return tuple(_frozen(twins.astype(np.int32))
                     for twins in least_twins(trans[:, np.sort(first)], np.asarray(dfa.accepting), horizons))

    return lru_get(_twins, _lock, (dfa.fingerprint, horizons), _WALK_CACHE_SIZE, build)


def long_tokens(trie: TokenTrie, min_len: int) -> tuple[TokenTrie, np.ndarray]:
    """The trie of ``trie``'s tokens longer than ``min_len`` bytes (:meth:`TokenTrie.longer_than`) and their
    ``uint32`` bitset (memoized per vocabulary)."""
    def build() -> tuple[TokenTrie, np.ndarray]:
        longer = trie.longer_than(min_len)
        return longer, _frozen(ids_to_bits(longer.row_ids, trie.vocab_size))

    return lru_get(_long_tries, _lock, (trie.fingerprint, min_len), _TRIE_CACHE_SIZE, build)


def has_heavy_state(trie: TokenTrie, dfa: DFALike) -> bool:
    """Does the DFA have a state whose first bytes start a large share of the tokens (a string body)? Each
    such state costs a walk of the whole table a walk of most of the trie."""
    return bool(_heavy(trie, np.asarray(dfa.transitions)).any())


def walk_width(trie: TokenTrie, dfa: DFALike) -> float:
    """How many tokens the DFA can start on, summed over its states, in vocabularies: a token counts for a
    state if the DFA takes its first two bytes (its byte, for a one-byte token) from there. What a walk from
    every state costs as threads, in walks of the whole trie (Llama-3): ``[a-z]{200}`` 29, where no state alone
    starts on a fifth of the tokens; case-insensitive ``(ab){2,300}`` 0.7 (its walks die after a byte or two,
    though 600 states take ``a`` or ``b``: 14 by the first byte alone); a 300-state date-time pattern 0.2."""
    if trie.rows == 0:
        return 0.0
    one_byte, two_bytes = _rows_by_first_bytes(trie)
    trans = np.asarray(dfa.transitions)
    live = (trans >= 0).astype(np.float32)  # [n, 256]
    ahead = np.vstack([live @ two_bytes.T, np.zeros((1, 256), np.float32)])  # [state, b1]: rows b1 b2.. it takes b2 of
    after_first = ahead[trans, np.arange(256)]  # trans == -1 reads the zero row
    return float((live @ one_byte).sum() + after_first.sum()) / trie.rows


def _rows_by_first_bytes(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray]:
    """``float32 [256]`` one-byte rows by byte and ``float32 [256, 256]`` longer rows by their first two bytes
    (memoized per trie)."""
    def build() -> tuple[np.ndarray, np.ndarray]:
        one = trie.row_len == 1
        one_byte = np.bincount(trie.flat[trie.row_start[one]], minlength=256).astype(np.float32)
        start = trie.row_start[~one]
        pairs = trie.flat[start].astype(np.int64) * 256 + trie.flat[start + 1]
        two_bytes = np.bincount(pairs, minlength=65536).astype(np.float32).reshape(256, 256)
        return _frozen(one_byte), _frozen(two_bytes)

    return lru_get(_first_two_bytes_rows, _lock, trie.fingerprint, _TRIE_CACHE_SIZE, build)


def _more_than(longer: list[int], k: int) -> int:
    """How many rows have more than ``k`` bytes (they come first in ``_longest_first`` order)."""
    return longer[k] if k < len(longer) else 0


def _columns(trie: TokenTrie, dfa: DFALike, q: int):
    """The DFA run from ``q`` over every row at once, one byte column at a time. After byte ``k`` yields
    ``(k, idx, state)``: the rows with at least ``k`` bytes that may still be alive (indices in
    ``_longest_first`` order, ascending) and their states after those bytes (-1: dead). Rows run as one
    contiguous block while most are alive (a string body); once most are dead, only the live ones go on.
    States are ``int32`` and each column's bytes a contiguous array: the walk is bound by memory traffic."""
    flat_t, _ = _padded(dfa)
    _, columns, longer = _longest_first(trie)
    n = _more_than(longer, 0)
    every = np.arange(n, dtype=np.int64)
    state = np.full(n, q, dtype=np.int32)
    idx = None  # None: the rows are the first ``n`` (a block); else the live ones
    for k in range(1, len(longer) + 1):
        column = columns[k - 1]
        if idx is None:
            block = state[:n]
            block *= 256
            block += column[:n]
            np.take(flat_t, block, out=block, mode="wrap")  # wrap: -1 * 256 + b reads the dead row
            live = np.count_nonzero(block >= 0)
            if live * 4 < n:
                idx = np.flatnonzero(block >= 0)
                state = block[idx]
                yield k, idx, state
            else:
                yield k, every[:n], block
        else:
            state = flat_t[state * 256 + column[idx]]
            alive = np.flatnonzero(state >= 0)
            idx, state = idx[alive], state[alive]
            yield k, idx, state
        n = _more_than(longer, k)  # the rows that have a next byte
        if idx is not None:
            going_on = np.searchsorted(idx, n)
            if not going_on:
                return
            idx, state = idx[:going_on], state[:going_on]


def _longest_first(trie: TokenTrie) -> tuple[np.ndarray, list[np.ndarray], list[int]]:
    """Rows longest first; per byte position ``j``, the ``j``-th bytes of the rows that have one (in that
    order, contiguous); and per ``j`` how many rows have more than ``j`` bytes."""
    def build() -> tuple[np.ndarray, list[np.ndarray], list[int]]:
        order = np.argsort(-trie.row_len, kind="stable")
        per_length = np.bincount(trie.row_len, minlength=trie.max_len + 1)
        longer = [n for n in per_length[::-1].cumsum()[::-1][1:].tolist() if n]
        starts = trie.row_start[order]
        columns = [_frozen(trie.flat[starts[:n] + j]) for j, n in enumerate(longer)]
        return order, columns, longer

    return lru_get(_by_length, _lock, trie.fingerprint, _TRIE_CACHE_SIZE, build)


def clear_walk_cache() -> None:
    """Forget memoized accept events and one-state walks (benchmarks time cold walks with it)."""
    with _lock:
        _events.clear()
        _state_walks.clear()
        _twins.clear()
