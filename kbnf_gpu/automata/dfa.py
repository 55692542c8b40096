"""``ByteDFA`` and the NFA -> trimmed, minimal, canonical DFA pipeline.

Pipeline: byte classes (bytes no NFA edge tells apart) -> subset construction
over classes, bounded by ``max_states`` as it goes -> trim (keep states that
are reachable and can reach acceptance) -> Hopcroft minimization -> BFS
renumbering (successors in byte order), so equal languages give identical
arrays.
"""
from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..budget import current_budget
from .nfa import NFA, reached


class StateLimit(Exception):
    """More DFA states than allowed (turned into ``DFATooLarge`` by the caller)."""


@dataclass(frozen=True, eq=False)
class ByteDFA:
    """A trimmed, minimized DFA over bytes in canonical numbering.

    ``transitions[s, b]`` is the next state or -1 (dead); the start state is 0.
    Every state is reachable and can reach an accepting state. The empty
    language has zero states. Arrays are read-only.
    """

    transitions: np.ndarray
    accepting: np.ndarray

    def __post_init__(self) -> None:
        t = np.ascontiguousarray(self.transitions, dtype=np.int32).reshape(-1, 256)
        a = np.ascontiguousarray(self.accepting, dtype=bool).reshape(-1)
        if t is self.transitions:
            t = t.copy()
        if a is self.accepting:
            a = a.copy()
        if t.shape[0] != a.shape[0]:
            raise ValueError("transitions and accepting disagree on the number of states")
        t.setflags(write=False)
        a.setflags(write=False)
        object.__setattr__(self, "transitions", t)
        object.__setattr__(self, "accepting", a)

    @classmethod
    def adopt(cls, transitions: np.ndarray, accepting: np.ndarray) -> "ByteDFA":
        """A DFA over arrays that nothing else holds (int32 ``[n, 256]``, bool ``[n]``), taken without a copy."""
        assert transitions.dtype == np.int32 and transitions.flags.c_contiguous and accepting.dtype == bool
        dfa = object.__new__(cls)
        transitions.setflags(write=False)
        accepting.setflags(write=False)
        object.__setattr__(dfa, "transitions", transitions)
        object.__setattr__(dfa, "accepting", accepting)
        return dfa

    @property
    def n_states(self) -> int:
        return int(self.transitions.shape[0])

    @cached_property
    def fingerprint(self) -> str:
        """sha256 hex of the arrays: a cache key for this language."""
        h = hashlib.sha256()
        h.update(np.int64(self.n_states).tobytes())
        h.update(self.transitions.astype("<i4", copy=False).tobytes())
        h.update(self.accepting.astype(np.uint8).tobytes())
        return h.hexdigest()

    @cached_property
    def accepting_list(self) -> list[bool]:
        """``accepting`` as a Python list (the parser reads it per byte; DFAs are shared by grammars)."""
        return self.accepting.tolist()

    @cached_property
    def has_exit_list(self) -> list[bool]:
        """Per state, whether any byte leads on (a state without one ends its lexeme)."""
        return (self.transitions >= 0).any(axis=1).tolist()

    @property
    def nullable(self) -> bool:
        """Whether the empty string is in the language."""
        return self.n_states > 0 and bool(self.accepting[0])

    def is_empty(self) -> bool:
        return self.n_states == 0

    def step(self, state: int, data: bytes) -> int:
        """The state after ``data`` from ``state``; -1 once dead."""
        if state < 0 or self.n_states == 0:
            return -1
        t = self.transitions
        for b in data:
            state = int(t[state, b])
            if state < 0:
                return -1
        return state

    def matches(self, data: bytes) -> bool:
        """Full match of ``data``."""
        s = self.step(0, data)
        return s >= 0 and bool(self.accepting[s])

    @cached_property
    def edge_runs(self) -> list[list[tuple[int, int, int]]]:
        """Per state, the maximal byte runs ``(lo, hi, target)`` with a live target."""
        t = self.transitions
        n = self.n_states
        runs: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        if n == 0:
            return runs
        rows, cols = np.nonzero(t[:, 1:] != t[:, :-1])
        starts = [[0] for _ in range(n)]
        for r, c in zip(rows.tolist(), (cols + 1).tolist()):
            starts[r].append(c)
        tl = t.tolist()
        for s in range(n):
            row = tl[s]
            st = starts[s]
            out = runs[s]
            for i, lo in enumerate(st):
                tgt = row[lo]
                if tgt >= 0:
                    out.append((lo, (st[i + 1] - 1) if i + 1 < len(st) else 255, tgt))
        return runs

    def __repr__(self) -> str:
        return f"ByteDFA(n_states={self.n_states}, fingerprint={self.fingerprint[:12]})"


class LazyDFA(ByteDFA):
    """A ``ByteDFA`` whose arrays are made on first use (``make()``: a finished ``ByteDFA``), for a lexeme known
    to fit its budget before it is built (``labelled.lazy_labelled_dfa``). A per-request grammar reaches few of
    its lexemes per document; compiling then does only the grammar-level work (DESIGN.md, "Lexemes on first
    use"). ``nullable``, ``is_empty`` and ``exits_start`` answer without building. ``held_bytes``: what it
    holds until built (a memo counts it). ``on_built``: called once built (a memo packs it then)."""

    def __init__(self, make: Callable[[], ByteDFA], *, nullable: bool, exits_start: bool, held_bytes: int) -> None:
        object.__setattr__(self, "_make", make)
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_nullable", nullable)
        object.__setattr__(self, "exits_start", exits_start)
        object.__setattr__(self, "held_bytes", held_bytes)
        object.__setattr__(self, "on_built", None)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        # only missing attributes reach here: the arrays before the first build
        if name not in ("transitions", "accepting"):
            raise AttributeError(name)
        self.build()
        return object.__getattribute__(self, name)

    @property
    def built(self) -> bool:
        return "transitions" in self.__dict__

    def build(self) -> None:
        """Make the arrays now (once; threads that ask together wait for one build)."""
        with self._lock:
            if self.built:
                return
            made = self._make()
            object.__setattr__(self, "accepting", made.accepting)
            object.__setattr__(self, "transitions", made.transitions)
            object.__setattr__(self, "_make", None)  # what it held (tries, labels) can go
            hook = self.on_built
        if hook is not None:
            hook(self)

    @property
    def nullable(self) -> bool:
        return self._nullable

    def is_empty(self) -> bool:
        return False  # ``lazy_labelled_dfa`` makes none for the empty language

    def __reduce__(self):  # type: ignore[no-untyped-def]
        # a copy or a pickle is the built DFA (what makes it, a closure, does not pickle)
        self.build()
        return ByteDFA, (self.transitions, self.accepting)

    def __repr__(self) -> str:
        return super().__repr__() if self.built else "LazyDFA(not built)"


EMPTY_TABLE = np.zeros((0, 256), dtype=np.int32)


def empty_dfa() -> ByteDFA:
    return ByteDFA(EMPTY_TABLE, np.zeros(0, dtype=bool))


# -------------------------------------------------------------- byte classes


def distinct_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each distinct row of the 2-d ``a``, and each row's class (equal rows: equal classes):
    ``np.unique`` over the rows as byte strings, 6-20x faster than ``axis=0``. Classes are numbered in the order
    of the rows' bytes, not their values (byte classes are put in a canonical order by ``finalize``)."""
    rows = np.ascontiguousarray(a)
    if rows.shape[1] == 0:
        return np.zeros(min(len(rows), 1), dtype=np.int64), np.zeros(len(rows), dtype=np.int64)
    keys = rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).reshape(-1)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def byte_classes(nfa: NFA, extra: tuple[tuple[int, int], ...] = ()) -> tuple[np.ndarray, dict]:
    """Partition bytes into classes no NFA edge distinguishes.

    Returns ``(class_of_byte[256], ranges)`` where ``ranges`` maps every edge
    range ``(lo, hi)`` to the list of classes it covers.
    """
    distinct = {(lo, hi) for edges in nfa.edges for lo, hi, _ in edges}
    distinct.update(extra)
    rng = sorted(distinct)
    if not rng:
        return np.zeros(256, dtype=np.int64), {}
    bounds = sorted({0, 256} | {lo for lo, _ in rng} | {hi + 1 for _, hi in rng})
    bounds_arr = np.array(bounds)
    n_int = len(bounds) - 1
    lo_idx = np.searchsorted(bounds_arr, [lo for lo, _ in rng])
    hi_idx = np.searchsorted(bounds_arr, [hi + 1 for _, hi in rng])
    cover = np.zeros((len(rng), n_int + 1), dtype=np.int32)
    np.add.at(cover, (np.arange(len(rng)), lo_idx), 1)
    np.add.at(cover, (np.arange(len(rng)), hi_idx), -1)
    member = np.cumsum(cover, axis=1)[:, :n_int].astype(bool)
    _, interval_class = distinct_rows(member.T)
    interval_of_byte = np.searchsorted(bounds_arr, np.arange(256), side="right") - 1
    class_of_byte = interval_class[interval_of_byte]
    covered = {}
    for i, r in enumerate(rng):
        covered[r] = sorted(set(interval_class[lo_idx[i] : hi_idx[i]].tolist()))
    return class_of_byte, covered


def _successors(nfa: NFA, covered: dict) -> list[dict[int, list[int]]]:
    succ: list[dict[int, list[int]]] = []
    for edges in nfa.edges:
        d: dict[int, list[int]] = {}
        for lo, hi, t in edges:
            for c in covered[(lo, hi)]:
                lst = d.get(c)
                if lst is None:
                    d[c] = [t]
                else:
                    lst.append(t)
        succ.append(d)
    return succ


# ---------------------------------------------------------- determinization


def determinize(nfa: NFA, start: int, accept: int, max_states: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Subset construction. Returns ``(table[n, k], accepting[n], class_of_byte[256])``.

    Raises ``StateLimit`` as soon as more than ``max_states`` states exist.
    NFAs with guards (anchors, lookarounds) go to ``guarded.determinize_guarded``.
    """
    assert not nfa.guards, "guarded NFAs are determinized by guarded.determinize_guarded"
    class_of_byte, covered = byte_classes(nfa)
    k = int(class_of_byte.max()) + 1
    succ = _successors(nfa, covered)
    eps = nfa.eps
    # a subset keeps only the states that read a byte, and the accepting one: the rest (empty moves between
    # them) change neither its moves nor whether it accepts, and left in they made subsets several times larger
    # to hash and walk, and told apart subsets that are one state (a number range's NFA: 40% of the time)
    kept = [bool(d) for d in succ]
    kept[accept] = True

    def closure(seeds) -> frozenset:
        return frozenset(s for s in reached(seeds, eps) if kept[s])

    first = closure([start])
    ids = {first: 0}
    sets = [first]
    rows: list[list[int]] = []
    cache: dict[frozenset, frozenset] = {}
    budget = current_budget()
    i = 0
    while i < len(sets):
        budget.tick("determinizing a terminal")
        moves: dict[int, list[int]] = {}
        for s in sets[i]:
            d = succ[s]
            if d:
                for c, ts in d.items():
                    m = moves.get(c)
                    if m is None:
                        moves[c] = list(ts)
                    else:
                        m.extend(ts)
        row = [-1] * k
        for c, ts in moves.items():
            key = frozenset(ts)
            target = cache.get(key)
            if target is None:
                target = cache[key] = closure(key)
            j = ids.get(target)
            if j is None:
                j = ids[target] = len(sets)
                if j >= max_states:
                    raise StateLimit(max_states)
                sets.append(target)
            row[c] = j
        rows.append(row)
        i += 1
    table = np.array(rows, dtype=np.int32).reshape(len(rows), k)
    accepting = np.array([accept in s for s in sets], dtype=bool)
    return table, accepting, class_of_byte


# ------------------------------------------------- trim, minimize, canonical


def _live_states(table: np.ndarray, accepting: np.ndarray, start: int) -> np.ndarray:
    """Mask of states reachable from ``start`` that can reach an accepting state."""
    n, k = table.shape
    src = np.repeat(np.arange(n), k)
    dst = table.reshape(-1)
    ok = dst >= 0
    src, dst = src[ok], dst[ok]
    reach = np.zeros(n, dtype=bool)
    reach[start] = True
    _flood(reach, src, dst, n)
    coreach = accepting & reach
    _flood(coreach, dst, src, n, within=reach)
    return reach & coreach


def _flood(mark: np.ndarray, src: np.ndarray, dst: np.ndarray, n: int, within: np.ndarray | None = None) -> None:
    """Mark everything reachable from marked states along ``src -> dst`` edges."""
    order = np.argsort(src, kind="stable")
    dst_sorted = dst[order].tolist()
    bounds = np.searchsorted(src[order], np.arange(n + 1)).tolist()
    allowed = within.tolist() if within is not None else None
    seen = mark.tolist()
    stack = [i for i, m in enumerate(seen) if m]
    while stack:
        s = stack.pop()
        for t in dst_sorted[bounds[s] : bounds[s + 1]]:
            if not seen[t] and (allowed is None or allowed[t]):
                seen[t] = True
                stack.append(t)
    mark[:] = seen


_MOORE_ROUNDS = 24


def moore_classes(
    table: np.ndarray, accepting: np.ndarray, rounds: int, initial: np.ndarray | None = None
) -> tuple[np.ndarray, bool]:
    """Moore's refinement of the states of ``table`` (``[n, k]``, -1 dead) for at most ``rounds`` rounds:
    ``int64 [n + 1]`` class labels (the last row is the dead state, in a class of its own), equal after
    round ``r`` iff the states act alike on every string of at most ``r`` symbols (die after the same
    prefixes, accept after the same ones); and whether the labels became stable (the coarsest equivalence).
    Each round is one ``unique`` over the rows of (label, successors' labels), compared as blobs of bytes.
    ``initial``: labels to refine instead of acceptance alone (coarser than the equivalence, finer than
    acceptance: :func:`height_classes`)."""
    (labels, stable), = moore_snapshots(table, accepting, (rounds,), initial)
    return labels, stable


def least_twins(table: np.ndarray, accepting: np.ndarray, rounds: tuple[int, ...]) -> list[np.ndarray]:
    """For each of ``rounds`` (ascending): per state, the least state that accepts the same strings of at most
    that many symbols (:func:`moore_snapshots`; once the refinement is stable, one array for every later round)."""
    n = table.shape[0]
    out: list[np.ndarray] = []
    seen = twins = None
    for labels, _ in moore_snapshots(table, accepting, rounds):
        if labels is not seen:
            block = labels[:n]
            least = np.full(int(block.max(initial=-1)) + 1, n, dtype=np.int64)
            np.minimum.at(least, block, np.arange(n))
            seen, twins = labels, least[block]
        out.append(twins)
    return out


def moore_snapshots(
    table: np.ndarray, accepting: np.ndarray, rounds: tuple[int, ...], initial: np.ndarray | None = None
) -> list[tuple[np.ndarray, bool]]:
    """:func:`moore_classes` after each of ``rounds`` (ascending) rounds, from one refinement."""
    n, k = table.shape
    sink = n  # explicit dead state, distinguishable from every live one
    T = np.vstack([np.where(table < 0, sink, table), np.full((1, k), sink, dtype=table.dtype)])
    first = np.asarray(accepting).astype(np.int64) if initial is None else np.asarray(initial, dtype=np.int64)
    labels = np.append(first, int(first.max(initial=-1)) + 1)
    count = len(set(labels.tolist()))
    out: list[tuple[np.ndarray, bool]] = []
    done = 0
    for goal in rounds:
        while done < goal:
            labels = _row_classes(np.column_stack([labels, np.take(labels, T)]))
            new_count = int(labels.max()) + 1
            done += 1
            if new_count == count:  # stable: every later round gives the same classes
                return out + [(labels, True)] * (len(rounds) - len(out))
            count = new_count
        out.append((labels, False))
    return out


def _row_classes(sig: np.ndarray) -> np.ndarray:
    """An id per row of ``sig`` (``[n, m]`` int64), equal for equal rows, ``0 .. distinct - 1`` (in no meaningful
    order). Each row is keyed by one int first (a product with random weights, wrapping) and the keys are checked
    against the rows: sorting n ints instead of n rows of m; a collision, as good as impossible, only costs the
    exact way."""
    if sig.shape[1] <= len(_ROW_WEIGHTS):
        keys = sig @ _ROW_WEIGHTS[:sig.shape[1]]
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        if (np.take(sig, first[inverse], axis=0) == sig).all():  # (``take``: 30x faster than fancy indexing)
            return inverse
    return distinct_rows(np.ascontiguousarray(sig, dtype=np.int64))[1]


_ROW_WEIGHTS = np.random.default_rng(1).integers(1, 1 << 62, size=258, dtype=np.int64)


def expand_ranges(lo: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[lo[i], lo[i] + count[i])``: (owner i, value) of every element (int64)."""
    count = np.asarray(count, dtype=np.int64)
    owner = np.repeat(np.arange(count.shape[0], dtype=np.int64), count)
    values = np.repeat(np.asarray(lo, dtype=np.int64) - np.cumsum(count) + count, count)
    values += np.arange(values.shape[0], dtype=np.int64)
    return owner, values


_WIDE_WAVE = 8  # states of one height classed by one ``unique`` over their rows (fewer: one by one, in a dict)


def height_classes(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Labels for the states of the trimmed ``table`` (``[n, k]``, -1 dead): exact classes of the states with no
    loop ahead (a finite language), and for the others (an infinite language: never equivalent to the first)
    their acceptance. The first are classed height by height (the longest string they accept; a wave: the
    states whose successors are all classed), each after all its successors: two are equivalent iff they
    accept alike and move alike into equivalent states, so a state's class is the key (acceptance, its row of
    successors' classes), and equivalent states have one height (Revuz's algorithm). A wide wave (a trie of
    many code points: hundreds of states per height) is classed by one ``unique`` over its rows, a narrow one
    (a counter's chain) state by state."""
    n = table.shape[0]
    sources, symbols = np.nonzero(table >= 0)
    targets = table[sources, symbols]
    by_target = np.argsort(targets, kind="stable")
    preds = sources[by_target]  # each state's predecessors together (one per move into it)
    pred_bounds = np.searchsorted(targets[by_target], np.arange(n + 1))
    preds_l, pred_bounds_l = preds.tolist(), pred_bounds.tolist()
    waiting = np.bincount(sources, minlength=n)  # moves into states not classed yet
    labels = np.full(n + 1, -1, dtype=np.int64)  # [n]: the dead state, where -1 in the table points
    accept = np.asarray(accepting, dtype=np.int64)
    accept_l = accept.tolist()
    wave = np.flatnonzero(waiting == 0).tolist()
    count = 0
    while wave:
        if len(wave) < _WIDE_WAVE:
            ids: dict[tuple, int] = {}
            later = []
            for s in wave:
                labels[s] = count + ids.setdefault((accept_l[s], labels[table[s]].tobytes()), len(ids))
                for p in preds_l[pred_bounds_l[s]:pred_bounds_l[s + 1]]:
                    waiting[p] -= 1
                    if not waiting[p]:
                        later.append(p)
            count += len(ids)
            wave = later
            continue
        at = np.array(wave)
        inverse = distinct_rows(np.column_stack((accept[at], labels[table[at]])))[1]
        labels[at] = count + inverse
        count += int(inverse.max()) + 1
        into = preds[expand_ranges(pred_bounds[at], pred_bounds[at + 1] - pred_bounds[at])[1]]
        np.subtract.at(waiting, into, 1)
        wave = np.unique(into[waiting[into] == 0]).tolist()
    return np.where(labels[:n] >= 0, labels[:n], count + accept)


def minimal_classes(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Block id per state of the coarsest equivalence (all states live).

    The states with no loop ahead are classed exactly first, in one pass
    (:func:`height_classes`: a trie, a counted ``[0-9]{36}``); Moore rounds on
    numpy refine the rest (:func:`moore_classes`); usually a few suffice.
    Deep chains before a loop (``x{0,1000}y*``) would need one round per
    state, so past ``_MOORE_ROUNDS`` Hopcroft finishes the refinement from
    the partition reached.
    """
    n, k = table.shape
    labels, stable = moore_classes(table, accepting, _MOORE_ROUNDS, height_classes(table, accepting))
    if stable:
        return labels[:n]
    T = np.vstack([np.where(table < 0, n, table), np.full((1, k), n, dtype=table.dtype)])
    return np.array(_hopcroft(T, labels.tolist())[:n], dtype=np.int64)


def _hopcroft(T: np.ndarray, labels: list[int]) -> list[int]:
    """Hopcroft refinement of the partition ``labels`` of the complete table ``T``."""
    N, k = T.shape
    # the predecessors of each state, all symbols together (``(symbol, state)`` pairs, grouped by symbol): a
    # splitter's members are read once, not once per symbol (a trie state has one or two of its k)
    flat = T.reshape(-1)
    by_target = np.lexsort((np.arange(flat.size) % k, flat))
    pred_state = (by_target // k).tolist()
    pred_symbol = (by_target % k).tolist()
    bounds = np.searchsorted(flat[by_target], np.arange(N + 1)).tolist()
    groups: dict[int, set[int]] = {}
    for s, lab in enumerate(labels):
        groups.setdefault(lab, set()).add(s)
    blocks = list(groups.values())
    block_of = [0] * N
    for i, members in enumerate(blocks):
        for s in members:
            block_of[s] = i
    work = list(range(len(blocks)))
    budget = current_budget()
    while work:
        budget.tick("minimizing a terminal's DFA")
        a = work.pop()
        by_symbol: dict[int, list[int]] = {}
        for t in blocks[a]:
            for i in range(bounds[t], bounds[t + 1]):
                c = pred_symbol[i]
                found = by_symbol.get(c)
                if found is None:
                    by_symbol[c] = [pred_state[i]]
                else:
                    found.append(pred_state[i])
        for c in sorted(by_symbol):
            hit: dict[int, list[int]] = {}
            for s in by_symbol[c]:
                b = block_of[s]
                lst = hit.get(b)
                if lst is None:
                    hit[b] = [s]
                else:
                    lst.append(s)
            for b, members in hit.items():
                block = blocks[b]
                if len(members) == len(block):
                    continue
                moved = set(members)
                if len(moved) * 2 > len(block):
                    moved = block - moved
                block -= moved
                z = len(blocks)
                blocks.append(moved)
                for s in moved:
                    block_of[s] = z
                # the new block is the smaller half: enough unless b still waits
                work.append(z)
    return block_of


def finalize(table: np.ndarray, accepting: np.ndarray, class_of_byte: np.ndarray, start: int = 0,
             trimmed: bool = False) -> ByteDFA:
    """Trim, minimize and canonically renumber a class-compressed DFA (``trimmed``: the caller knows every
    state is reachable and reaches acceptance)."""
    n = table.shape[0]
    if n == 0:
        return empty_dfa()
    if not trimmed:
        live = _live_states(table, accepting, start)
        if not live[start]:
            return empty_dfa()
        old = np.flatnonzero(live)
        remap = np.full(n + 1, -1, dtype=np.int64)
        remap[old] = np.arange(len(old))
        table = remap[table[old]]  # -1 (dead) indexes remap[-1] == -1
        accepting = accepting[old]
        start = int(remap[start])
    block = minimal_classes(table, accepting)
    n_blocks = int(block.max()) + 1
    rep = np.zeros(n_blocks, dtype=np.int64)
    rep[block] = np.arange(len(block))
    qtable = np.where(table[rep] >= 0, block[np.maximum(table[rep], 0)], -1)
    qaccept = accepting[rep]
    return _canonical(qtable, qaccept, int(block[start]), class_of_byte)


def _canonical(table: np.ndarray, accepting: np.ndarray, start: int, class_of_byte: np.ndarray) -> ByteDFA:
    n, k = table.shape
    first_byte = np.full(k, 256)
    np.minimum.at(first_byte, class_of_byte, np.arange(256))
    class_order = np.array([c for c in np.argsort(first_byte, kind="stable") if first_byte[c] < 256], dtype=np.int64)
    # breadth first, a level at a time: the successors of a level, row by row in byte order, first sightings kept
    # (the order a queue visiting one state at a time finds them in)
    ordered = table[:, class_order]
    seen = np.zeros(n, dtype=bool)
    seen[start] = True
    levels = [np.array([start], dtype=np.int64)]
    while True:
        found = ordered[levels[-1]].reshape(-1)
        found = found[found >= 0]
        found = found[~seen[found]]
        if not found.size:
            break
        _, first = np.unique(found, return_index=True)
        level = found[np.sort(first)]
        seen[level] = True
        levels.append(level)
    perm = np.concatenate(levels)
    inv = np.full(n + 1, -1, dtype=np.int64)
    inv[perm] = np.arange(len(perm))
    ctable = inv[table[perm]]
    transitions = ctable[:, class_of_byte].astype(np.int32)
    return ByteDFA(transitions, accepting[perm])


def from_table(transitions: np.ndarray, accepting: np.ndarray, start: int = 0) -> ByteDFA:
    """Trim/minimize/canonicalize an arbitrary 256-column table (-1 = dead)."""
    transitions = np.asarray(transitions, dtype=np.int64).reshape(-1, 256)
    accepting = np.asarray(accepting, dtype=bool)
    if transitions.shape[0] == 0:
        return empty_dfa()
    table, class_of_byte = byte_columns(transitions)
    return finalize(table, accepting, class_of_byte, start)


def byte_columns(transitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 256-column table as ``(table[n, k], class_of_byte[256])``: one column per class of bytes with equal
    columns, ``table[:, class_of_byte]`` being the full table again."""
    if transitions.shape[0] == 0:  # no states: one class (a key of no bytes would make none)
        return np.zeros((0, 1), dtype=transitions.dtype), np.zeros(256, dtype=np.int64)
    first, class_of_byte = distinct_rows(transitions.T)
    return transitions[:, first], class_of_byte
