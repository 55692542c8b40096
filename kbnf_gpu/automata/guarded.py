"""Subset construction for NFAs with guarded epsilon edges: anchors and lookarounds.

A *thread* is one NFA state with what it still owes the rest of the input:

* a **mode** after an end anchor was crossed (``$`` may be followed only by
  ``""`` or ``"\\n"``; ``\\Z`` by nothing);
* **obligations** from lookaheads it passed: ``(d, q)``, the lookahead's own
  DFA ``d`` (the suffixes it allows, negation already applied) in state ``q``,
  stepped along with the input. A thread whose obligation dies is dropped; one
  in a state that accepts everything is fulfilled and forgotten; at the end of
  the input every remaining obligation must accept.

Lookbehinds need no threads: their DFAs (``Σ* body``) run from the start of
the input, deterministically, and their states are part of the DFA state (-1
once dead, as after ``(?<=^a)`` can no longer hold); a lookbehind guard is
open when its DFA accepts (or not, when negated).
Start anchors read the *context*: the position is the start, just after a
``"\\n"``, or elsewhere.

A DFA state is ``(lookbehind states, frozenset of threads)``: finite, since
every part is. Regular languages are closed under the Boolean operations
these encode, so the result is exact.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from ..budget import current_budget
from .dfa import StateLimit, byte_classes, distinct_rows
from .nfa import LOOK_BASE, NFA
from .regex import BOL, BOS, EOL, EOLM, EOS

# Modes: what the rest of the input must be after an end anchor was crossed.
# Ordered by strength; meeting two keeps the max.
FREE, LINE, EOL_MODE, END = 0, 1, 2, 3  # any, "" or "\n"..., "" or "\n", ""
_GUARD_MODE = {EOLM: LINE, EOL: EOL_MODE, EOS: END}
# Contexts of a position for start anchors: the start / just after "\n" / elsewhere.
AT_START, AFTER_NL, OTHER = 0, 1, 2


class LookBodies(Protocol):
    """Compiles the bodies of an NFA's lookarounds (``build.py`` provides it)."""

    def ahead(self, index: int, ctx: int, start_lb: dict):
        """The DFA of the suffixes lookahead ``index`` allows at a position of context ``ctx``
        where the lookbehind trackers ``start_lb`` (``Look -> state``) stand; ``None``: no suffix."""

    def ahead_trackers(self, index: int) -> tuple:
        """The lookbehinds inside lookahead ``index`` (through nested lookaheads)."""

    def ahead_ranges(self, index: int) -> set:
        """Byte ranges ``(lo, hi)`` that every DFA ``ahead(index, ...)`` treats as one."""

    def behind(self, look):
        """The DFA of ``Σ* body`` of lookbehind ``look`` (``None``: the body matches nothing)."""


class _Aux:
    """A lookaround DFA restricted to the byte classes: rows of targets, acceptance, universality."""

    __slots__ = ("rows", "accepting", "universal")

    def __init__(self, dfa, reps: np.ndarray) -> None:
        t = dfa.transitions
        self.rows: list[list[int]] = t[:, reps].tolist()
        self.accepting: list[bool] = dfa.accepting.tolist()
        n = dfa.n_states
        full = (t == np.arange(n)[:, None]).all(axis=1) if n else np.zeros(0, dtype=bool)
        self.universal: list[bool] = (full & dfa.accepting).tolist()


def refine_classes(class_of_byte: np.ndarray, tables: list[np.ndarray]) -> np.ndarray:
    """Byte classes that also separate bytes any of ``tables`` (``[n, 256]``) tells apart."""
    keys = [class_of_byte.astype(np.int64)]
    for t in tables:
        if t.shape[0]:
            keys.append(distinct_rows(t.T)[1].astype(np.int64))
    if len(keys) == 1:
        return class_of_byte
    return distinct_rows(np.stack(keys, axis=1))[1]


def determinize_guarded(
    nfa: NFA,
    start: int,
    accept: int,
    max_states: int,
    bodies: LookBodies | None,
    start_ctx: int = AT_START,
    start_lb: dict | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Subset construction over threads (see the module docstring).

    ``start_ctx`` and ``start_lb`` (lookbehind tracker states) describe the
    position the input starts at: a lookahead body is compiled this way.
    Returns ``(table[n, k], accepting[n], class_of_byte[256])`` like ``dfa.determinize``.
    """
    budget = current_budget()
    looks = nfa.looks
    aheads = [i for i, lk in enumerate(looks) if not lk.behind]
    trackers = list(dict.fromkeys([lk for lk in looks if lk.behind] + [t for i in aheads for t in bodies.ahead_trackers(i)]))
    track_pos = {t: j for j, t in enumerate(trackers)}
    lb = [bodies.behind(t) for t in trackers]
    extra = {(10, 10)}
    for i in aheads:
        extra |= bodies.ahead_ranges(i)
    base, _ = byte_classes(nfa, extra=tuple(sorted(extra)))
    class_of_byte = refine_classes(base, [d.transitions for d in lb if d is not None])
    k = int(class_of_byte.max()) + 1
    reps = np.array([int(np.flatnonzero(class_of_byte == c)[0]) for c in range(k)])
    nl = int(class_of_byte[10])
    covered = {
        (lo, hi): np.unique(class_of_byte[lo : hi + 1]).tolist() for edges in nfa.edges for lo, hi, _ in edges
    }
    succ: list[dict[int, list[int]]] = []
    for edges in nfa.edges:
        d: dict[int, list[int]] = {}
        for lo, hi, t in edges:
            for c in covered[(lo, hi)]:
                d.setdefault(c, []).append(t)
        succ.append(d)

    lb_aux = [_Aux(d, reps) if d is not None else None for d in lb]
    lb_of_look = {i: track_pos[lk] for i, lk in enumerate(looks) if lk.behind}
    negated = [lk.negated for lk in looks]
    ahead_tracks = {i: [track_pos[t] for t in bodies.ahead_trackers(i)] for i in aheads}

    # lookahead DFAs, compiled when first needed: aux[d]; obligation_dfa[(i, ctx, tracker states)] -> d or None
    aux: list[_Aux] = []
    obligation_dfa: dict[tuple, int | None] = {}

    def obligation(i: int, ctx: int, lbvec: tuple) -> int | None:
        key = (i, ctx, tuple(lbvec[j] for j in ahead_tracks[i]))
        if key not in obligation_dfa:
            dfa = bodies.ahead(i, ctx, {trackers[j]: lbvec[j] for j in ahead_tracks[i]})
            if dfa is None or dfa.n_states == 0:
                obligation_dfa[key] = None
            else:
                obligation_dfa[key] = len(aux)
                aux.append(_Aux(dfa, reps))
        return obligation_dfa[key]

    eps, guards = nfa.eps, nfa.guards

    def closure(seeds, ctx: int, lbvec: tuple) -> frozenset:
        seen = set(seeds)
        stack = list(seen)
        while stack:
            s, mode, obls = stack.pop()
            out = [(t, mode, obls) for t in eps[s]]
            for g, t in guards.get(s, ()):
                if g >= LOOK_BASE:
                    i = g - LOOK_BASE
                    j = lb_of_look.get(i)
                    if j is not None:
                        q = lbvec[j]
                        if (q >= 0 and lb_aux[j].accepting[q]) != negated[i]:
                            out.append((t, mode, obls))
                        continue
                    d = obligation(i, ctx, lbvec)
                    if d is None:
                        continue
                    if aux[d].universal[0]:
                        out.append((t, mode, obls))
                    else:
                        out.append((t, mode, obls | {(d, 0)}))
                elif g == BOS:
                    if ctx == AT_START:
                        out.append((t, mode, obls))
                elif g == BOL:
                    if ctx != OTHER:
                        out.append((t, mode, obls))
                else:
                    out.append((t, max(mode, _GUARD_MODE[g]), obls))
            for y in out:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        return frozenset(seen)

    step_memo: dict[tuple[frozenset, int], frozenset | None] = {}

    def step(obls: frozenset, c: int) -> frozenset | None:
        key = (obls, c)
        if key in step_memo:
            return step_memo[key]
        out: set | None = set()
        for d, q in obls:
            a = aux[d]
            r = a.rows[q][c]
            if r < 0:
                out = None
                break
            if not a.universal[r]:
                out.add((d, r))
        res = None if out is None else frozenset(out)
        step_memo[key] = res
        return res

    start_lb = start_lb or {}
    lbvec0 = tuple(-1 if a is None else start_lb.get(t, 0) for t, a in zip(trackers, lb_aux))
    first = (lbvec0, closure([(start, FREE, frozenset())], start_ctx, lbvec0))
    ids = {first: 0}
    order = [first]
    rows: list[list[int]] = []
    closure_memo: dict[tuple, frozenset] = {}
    i = 0
    while i < len(order):
        budget.tick("building a lookaround automaton")
        lbvec, threads = order[i]
        moves: dict[int, set] = {}
        for s, mode, obls in threads:
            for c, ts in succ[s].items():
                if mode == FREE:
                    new_mode = FREE
                elif c == nl and mode in (LINE, EOL_MODE):
                    new_mode = FREE if mode == LINE else END
                else:
                    continue
                new_obls = step(obls, c) if obls else obls
                if new_obls is None:
                    continue
                m = moves.get(c)
                if m is None:
                    m = moves[c] = set()
                m.update((t, new_mode, new_obls) for t in ts)
        row = [-1] * k
        for c, ts in moves.items():
            nxt_lb = tuple(-1 if q < 0 else a.rows[q][c] for a, q in zip(lb_aux, lbvec))
            key = (frozenset(ts), c == nl, nxt_lb)
            closed = closure_memo.get(key)
            if closed is None:
                closed = closure_memo[key] = closure(ts, AFTER_NL if c == nl else OTHER, nxt_lb)
            target = (nxt_lb, closed)
            j = ids.get(target)
            if j is None:
                j = ids[target] = len(order)
                if j >= max_states:
                    raise StateLimit(max_states)
                order.append(target)
            row[c] = j
        rows.append(row)
        i += 1

    def accepts(threads: frozenset) -> bool:
        return any(s == accept and all(aux[d].accepting[q] for d, q in obls) for s, _mode, obls in threads)

    table = np.array(rows, dtype=np.int32).reshape(len(rows), k)
    accepting = np.array([accepts(th) for _, th in order], dtype=bool)
    return table, accepting, class_of_byte
