"""An automaton whose edges read labels (``ir.Automaton``) as a byte DFA, without a subset construction.

A JSON Schema string's automaton runs over code points, and each edge's label
is the spellings of a class of code points (UTF-8, or a JSON escape). The
classes leaving one state are disjoint and a spelling is never a prefix of
another, so the labels of a state read together as one small deterministic
trie of bytes (a product of the labels' DFAs alone), whose leaves are the roots
of the next states' tries. The whole DFA is then those tries side by side:
linear in the automaton, where the subset construction over the automaton's
NFA tracks every label's spellings in every subset (a counted string's
hundred chunk lexemes: seconds). A state whose labels overlap, or where one
spelling is a prefix of another, gets ``None``: the caller determinizes the
automaton as before. Either way the result is the language's minimal DFA.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..budget import current_budget
from .dfa import ByteDFA, LazyDFA, StateLimit, distinct_rows, empty_dfa, finalize
from .nfa import reached, well_formed

_LEAF = -2  # a trie entry ``_LEAF - i``: label ``i`` has read one whole spelling (its next state's root)
_TRIE_CACHE: dict[tuple[str, ...], tuple | None] = {}  # the labels' fingerprints -> their trie and byte classes
_TRIE_CACHE_SIZE = 512
_TRIE_CACHE_ROWS = 1 << 13  # trie rows the cache may hold in all (a row is 1 KB: 8 MB); past either, it is emptied
_trie_rows = 0


def labelled_dfa(
    n_states: int, edges: Sequence[tuple[int, ByteDFA, int]], accepting: Sequence[int], max_states: int
) -> ByteDFA | None:
    """The minimal DFA of the automaton with ``edges`` ``(p, label's DFA, q)`` (start 0), or ``None`` where its
    labels do not make deterministic tries (see the module); raises ``StateLimit`` where the tries together
    pass ``max_states``."""
    layout = _layout(n_states, edges, accepting, max_states)
    return None if layout is None else _assembled(layout)


def lazy_labelled_dfa(
    n_states: int, edges: Sequence[tuple[int, ByteDFA, int]], accepting: Sequence[int], max_states: int
) -> ByteDFA | None:
    """``labelled_dfa``, its tries laid out and counted against ``max_states`` now (so it fails, or not, where
    ``labelled_dfa`` would) and the DFA made on first use (``LazyDFA``): the table and its minimization are
    most of the work, and most of a per-request schema's strings are never reached."""
    layout = _layout(n_states, edges, accepting, max_states)
    if layout is None:
        return None
    if not layout.start_live:
        return empty_dfa()
    return LazyDFA(lambda: _assembled(layout), nullable=layout.start_accepts, exits_start=layout.exits_start,
                   held_bytes=sum(trie.nbytes for trie in {id(t): t for t in layout.tries}.values()))


@dataclass(frozen=True, eq=False)
class _Layout:
    """The tries of the states reachable from the start (start first), laid end to end, before the table.

    Arrays and lists of arrays: a lexeme made on first use holds its layout until then, and a server's memo
    holds a thousand such lexemes; per-state lists of tuples made them the most objects a full collection
    scanned (180,000 after 138 schemas)."""

    tries: list[np.ndarray]  # per state, its trie
    roots: list[np.ndarray]  # per state, the first row of each edge's target (where the trie's leaves lead)
    starts: np.ndarray  # per state, its trie's first row
    final: np.ndarray  # the first rows of the accepting states
    classes: list[np.ndarray]  # each distinct trie's byte classes
    total: int
    trimmed: bool  # every state reaches an accepting one
    start_live: bool  # the start does
    start_accepts: bool
    exits_start: bool  # an edge leaves the start for a state that reaches an accepting one


def _layout(
    n_states: int, edges: Sequence[tuple[int, ByteDFA, int]], accepting: Sequence[int], max_states: int
) -> _Layout | None:
    if not well_formed(n_states, edges, accepting):
        return None  # the subset construction's path says what is wrong
    leaving: list[list[tuple[ByteDFA, int]]] = [[] for _ in range(n_states)]
    for p, label, q in edges:
        if label.n_states == 0:
            continue  # the empty class: no edge
        if label.accepting[0]:
            return None  # a label that reads nothing: an empty move, not a trie
        leaving[p].append((label, q))
    budget = current_budget()
    tries: list[np.ndarray] = []
    classes: dict[int, np.ndarray] = {}  # id(trie) -> its byte classes
    order = [0]
    seen = {0}
    offset: dict[int, int] = {}
    total = 0
    for p in order:
        budget.tick("building a string's automaton")
        found = _trie(tuple(label for label, _ in leaving[p]))
        if found is None:
            return None
        tries.append(found[0])
        classes[id(found[0])] = found[1]
        offset[p] = total
        total += len(found[0])
        if total > max_states:
            # counted before minimization, which merges only what tries share (a loop's states reading the same
            # labels into the same states); the subset construction would reach the limit far slower, and
            # minimizing tens of thousands of trie states costs seconds (a counted ``\S{1,256}``)
            raise StateLimit(max_states)
        for _, q in leaving[p]:
            if q not in seen:
                seen.add(q)
                order.append(q)
    live = _co_reachable(order, leaving, accepting)
    return _Layout(tries, [np.array([offset[q] for _, q in leaving[p]] or [0], dtype=np.int64) for p in order],
                   np.array([offset[p] for p in order], dtype=np.int64),
                   np.array([offset[q] for q in accepting if q in offset], dtype=np.int64), list(classes.values()),
                   total, len(live) == len(order), 0 in live, 0 in accepting, any(q in live for _, q in leaving[0]))


def _assembled(layout: _Layout) -> ByteDFA:
    """The tries side by side as one table, minimized."""
    # bytes that every trie reads alike share a column (a trie's rows map to the table's row by row)
    first_byte, class_of_byte = distinct_rows(np.stack(layout.classes).T)
    table = np.empty((layout.total, len(first_byte)), dtype=np.int64)
    for trie, roots, start in zip(layout.tries, layout.roots, layout.starts.tolist()):
        trie = trie[:, first_byte]
        table[start:start + len(trie)] = np.where(trie >= 0, trie + start, np.where(trie == -1, -1, roots[
            np.maximum(_LEAF - trie, 0)]))
    final = np.zeros(layout.total, dtype=bool)
    final[layout.final] = True
    # a trie's every state leads to a leaf (each label's DFA is trimmed), so where every state reached reaches
    # an accepting one, so does every byte state: no trimming
    return finalize(table, final, class_of_byte, trimmed=layout.trimmed)


def _co_reachable(states: list[int], leaving: list[list[tuple[ByteDFA, int]]], accepting: Sequence[int]) -> set[int]:
    """The ``states`` (closed under ``leaving``'s moves) from which one of ``accepting`` is reached."""
    into: dict[int, list[int]] = {q: [] for q in states}
    for p in states:
        for _, q in leaving[p]:
            into[q].append(p)
    return reached((q for q in accepting if q in into), into)


Labelled = tuple[int, Sequence[tuple[int, ByteDFA, int]], Sequence[int]]  # (states, edges, accepting states)


def chained(parts: Sequence[Labelled]) -> Labelled | None:
    """The concatenation of labelled automata as one (a string's quotes around its automaton): each part's
    accepting states take the start edges of the next part, and of the parts after it while their start states
    accept (an optional part: ``maxLength`` without ``minLength``), in place of the empty moves between them;
    they accept where every part after theirs accepts the empty string. States are numbered part after part.
    ``None`` where a part is malformed."""
    offsets = []
    total = 0
    for n, edges, accepting in parts:
        if not well_formed(n, edges, accepting):
            return None
        offsets.append(total)
        total += n
    starts = [[(label, q + base) for p, label, q in edges if p == 0] for (_, edges, _), base in zip(parts, offsets)]
    out: list[tuple[int, ByteDFA, int]] = []
    final: list[int] = []
    for i, ((_, edges, accepting), base) in enumerate(zip(parts, offsets)):
        out.extend((p + base, label, q + base) for p, label, q in edges)
        following: list[tuple[ByteDFA, int]] = []
        j = i + 1
        while j < len(parts):
            following += starts[j]
            if 0 not in parts[j][2]:
                break
            j += 1
        out.extend((a + base, label, q) for a in accepting for label, q in following)
        if j == len(parts):
            final.extend(a + base for a in accepting)
    return total, out, tuple(final)


def _trie(labels: tuple[ByteDFA, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """The deterministic trie of ``labels`` read together: rows of 256 entries, a state (>= 0, the root 0), dead
    (-1) or ``_LEAF - i`` where label ``i`` ends; and for each byte the id of its column (bytes with equal
    columns: equal ids). ``None`` where two labels end together or one ends where another (or itself) goes on."""
    key = tuple(label.fingerprint for label in labels)
    if key in _TRIE_CACHE:
        return _TRIE_CACHE[key]
    global _trie_rows
    trie = _built_trie(labels)
    found = None if trie is None else (trie, distinct_rows(trie.T)[1])
    rows = 0 if trie is None else len(trie)
    if len(_TRIE_CACHE) >= _TRIE_CACHE_SIZE or _trie_rows + rows > _TRIE_CACHE_ROWS:
        _TRIE_CACHE.clear()
        _trie_rows = 0
    _TRIE_CACHE[key] = found
    _trie_rows += rows
    return found


def _built_trie(labels: tuple[ByteDFA, ...]) -> np.ndarray | None:
    return _one_label_trie(labels[0]) if len(labels) == 1 else _product_trie(labels)


def _product_trie(labels: tuple[ByteDFA, ...]) -> np.ndarray | None:
    """The trie of ``labels`` read together, one product state at a time."""
    exits = [(label.transitions >= 0).any(axis=1) for label in labels]
    start = tuple((i, 0) for i in range(len(labels)))
    index = {start: 0}
    queue = [start]
    rows = []
    for at in queue:  # a product state: ``(label, its state)`` of each label still alive (past a few bytes: one)
        current_budget().tick("building a string's automaton")
        if not at:
            rows.append(np.full(256, -1, dtype=np.int32))
            continue
        moves = np.stack([labels[i].transitions[q] for i, q in at]).astype(np.int64)
        columns, inverse = _distinct_columns(moves)
        targets = np.empty(len(columns), dtype=np.int64)
        for c, column in enumerate(columns):
            live = [(i, q) for (i, _), q in zip(at, column) if q >= 0]
            if not live:
                targets[c] = -1
                continue
            ended = [(i, q) for i, q in live if labels[i].accepting[q]]
            if ended:
                i, q = ended[0]
                if len(live) > 1 or exits[i][q]:
                    return None  # two spellings end together, or one goes on past another's end
                targets[c] = _LEAF - i
                continue
            state = tuple(live)
            found = index.get(state)
            if found is None:
                found = index[state] = len(index)
                queue.append(state)
            targets[c] = found
        rows.append(targets[inverse.reshape(-1)])
    return np.array(rows, dtype=np.int32).reshape(-1, 256)


def _one_label_trie(label: ByteDFA) -> np.ndarray | None:
    """``_product_trie`` of a state reading one label, the same array: the label's own table, its accepting
    states made leaves, its other states numbered as the product walk finds them (each row's targets in
    ascending order), in a few array operations instead of a product state at a time (a spelled ``\\p{L}``:
    800 states, 35 -> 2 ms; the second corpus's 510 such tries, 0.36 -> 0.08 s)."""
    table = label.transitions
    accepting = label.accepting
    if (accepting & (table >= 0).any(axis=1)).any():
        return None  # a spelling goes on past another's end
    ordered = np.sort(table, axis=1)
    distinct = np.ones(ordered.shape, dtype=bool)
    distinct[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    inner = distinct & (ordered >= 0)
    inner[inner] = ~accepting[ordered[inner]]  # the targets that are trie states, not leaves
    rows, cols = np.nonzero(inner)
    bounds = np.searchsorted(rows, np.arange(table.shape[0] + 1)).tolist()
    targets = ordered[rows, cols].tolist()
    index = {0: 0}
    order = [0]
    for q in order:
        for r in targets[bounds[q]:bounds[q + 1]]:
            if r not in index:
                index[r] = len(order)
                order.append(r)
    remap = np.full(table.shape[0] + 1, -1, dtype=np.int64)  # [-1]: dead stays dead
    remap[:-1][accepting] = _LEAF
    remap[order] = np.arange(len(order))
    return remap[table[order]].astype(np.int32)


def _distinct_columns(moves: np.ndarray) -> tuple[list[list[int]], np.ndarray]:
    """The distinct columns of ``moves`` (as lists) and each byte's column among them."""
    if len(moves) == 1:
        values, inverse = np.unique(moves[0], return_inverse=True)
        return [[v] for v in values.tolist()], inverse
    # columns keyed by one int each (a product with random weights, wrapping), then checked: a collision is as
    # good as impossible, and would only cost the exact way
    keys = (moves + 1).T @ _WEIGHTS[:len(moves)] if len(moves) <= len(_WEIGHTS) else None
    if keys is not None:
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        if np.array_equal(moves[:, first][:, inverse], moves):
            return moves[:, first].T.tolist(), inverse
    first, inverse = distinct_rows(moves.T)
    return moves[:, first].T.tolist(), inverse


_WEIGHTS = np.random.default_rng(0).integers(1, 1 << 62, size=64, dtype=np.int64)
