"""Byte-level NFA and its Thompson-style construction from a regular expression tree.

States are integers; each has epsilon edges, byte-range edges ``(lo, hi, target)``
and, for regex anchors and lookarounds only, guarded epsilon edges
``(guard, target)``: ``guard`` is an anchor kind, or ``LOOK_BASE + i`` for the
lookaround ``looks[i]`` (whose body is compiled apart, see ``dfa.py``).
Every sub-expression becomes a *fragment*: one entry and one exit state, its
states numbered contiguously, so a bounded repeat copies it by offsetting.
Construction uses an explicit stack: depth of the tree does not matter.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence, Union

import numpy as np

from .. import ir
from ..budget import current_budget
from .regex import Anchor, Look
from .utf8 import utf8_sequences

Fragment = tuple[int, int]

CONTINUATION = (0x80, 0xBF)


class NFATooLarge(Exception):
    """The NFA grew past its state limit (turned into ``DFATooLarge`` by the caller)."""


class WordTooLong(Exception):
    """Every word is at least ``dfa_limit`` bytes long: no DFA within the limit exists."""


class InvalidExpr(Exception):
    """A malformed expression node (turned into ``GrammarError`` by the caller)."""


@dataclass(frozen=True, eq=False)
class DFALeaf:
    """A finished DFA used as a leaf of an expression (``dfa`` is a ``ByteDFA``)."""

    dfa: object


Node = Union[ir.RegExpr, Anchor, Look, DFALeaf]

LOOK_BASE = 16
"""Guards ``>= LOOK_BASE`` are lookarounds; smaller ones are anchor kinds."""


class NFA:
    def __init__(self, max_states: int, dfa_limit: int | None = None) -> None:
        self.dfa_limit = dfa_limit
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[int, int, int]]] = []
        self.guards: dict[int, list[tuple[int, int]]] = {}
        self.looks: list[Look] = []
        self._look_ids: dict[Look, int] = {}
        self.max_states = max_states

    @property
    def n(self) -> int:
        return len(self.eps)

    def new_state(self) -> int:
        if len(self.eps) >= self.max_states:
            raise NFATooLarge(self.max_states)
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def shortest_accepted(self, start: int, accept: int) -> int | None:
        """Fewest bytes on a path from ``start`` to ``accept`` (0-1 BFS; guards count as ε)."""
        dist = {start: 0}
        queue = deque([(0, start)])
        while queue:
            d, s = queue.popleft()
            if d > dist[s]:
                continue  # a stale entry
            if s == accept:
                return d
            for t in self.eps[s] + [t for _, t in self.guards.get(s, ())]:
                if dist.get(t, d + 1) > d:
                    dist[t] = d
                    queue.appendleft((d, t))
            for _, _, t in self.edges[s]:
                if dist.get(t, d + 2) > d + 1:
                    dist[t] = d + 1
                    queue.append((d + 1, t))
        return None

    def _acyclic(self, a: int, b: int) -> bool:
        """Whether the closed fragment of states ``a..b-1`` has no cycle (iterative DFS)."""
        color = [0] * (b - a)  # 0 new, 1 on the stack, 2 done
        for root in range(a, b):
            if color[root - a]:
                continue
            stack = [(root, iter(self._succ(root)))]
            color[root - a] = 1
            while stack:
                s, it = stack[-1]
                t = next(it, None)
                if t is None:
                    color[s - a] = 2
                    stack.pop()
                elif color[t - a] == 1:
                    return False
                elif color[t - a] == 0:
                    color[t - a] = 1
                    stack.append((t, iter(self._succ(t))))
        return True

    def _succ(self, s: int) -> list[int]:
        return self.eps[s] + [t for _, _, t in self.edges[s]]

    def copy_range(self, a: int, b: int) -> int:
        """Append a copy of states ``a..b-1`` (a closed fragment); returns the offset."""
        if len(self.eps) + (b - a) > self.max_states:
            raise NFATooLarge(self.max_states)
        off = len(self.eps) - a
        eps, edges = self.eps, self.edges
        for s in range(a, b):
            eps.append([t + off for t in eps[s]])
            edges.append([(lo, hi, t + off) for lo, hi, t in edges[s]])
            g = self.guards.get(s)
            if g:
                self.guards[s + off] = [(k, t + off) for k, t in g]
        return off

    # ---------------------------------------------------------- leaves

    def epsilon(self) -> Fragment:
        s = self.new_state()
        return s, s

    def nothing(self) -> Fragment:
        return self.new_state(), self.new_state()

    def literal(self, data: bytes) -> Fragment:
        s = cur = self.new_state()
        for b in data:
            nxt = self.new_state()
            self.edges[cur].append((b, b, nxt))
            cur = nxt
        return s, cur

    def byte_ranges(self, ranges) -> Fragment:
        s, e = self.new_state(), self.new_state()
        for lo, hi in ranges:
            self.edges[s].append((lo, hi, e))
        return s, e

    def code_points(self, ranges: tuple[tuple[int, int], ...]) -> Fragment:
        """UTF-8 encodings of code points in ``ranges``; shares prefixes and continuation tails."""
        s, e = self.new_state(), self.new_state()
        tails = [e]  # tails[j]: exactly j continuation bytes lead to e
        trie: dict[tuple[int, int, int], int] = {}
        done: set[tuple[int, int, int, int]] = set()
        for seq in utf8_sequences(ranges):
            j = 0
            while j < len(seq) - 1 and seq[len(seq) - 1 - j] == CONTINUATION:
                j += 1
            while len(tails) <= j:
                t = self.new_state()
                self.edges[t].append((CONTINUATION[0], CONTINUATION[1], tails[-1]))
                tails.append(t)
            cur = s
            head = seq[: len(seq) - j]
            for lo, hi in head[:-1]:
                key = (cur, lo, hi)
                nxt = trie.get(key)
                if nxt is None:
                    nxt = trie[key] = self.new_state()
                    self.edges[cur].append((lo, hi, nxt))
                cur = nxt
            lo, hi = head[-1]
            if (cur, lo, hi, j) not in done:
                done.add((cur, lo, hi, j))
                self.edges[cur].append((lo, hi, tails[j]))
        return s, e

    def anchor(self, kind: int) -> Fragment:
        s, e = self.new_state(), self.new_state()
        self.guards.setdefault(s, []).append((kind, e))
        return s, e

    def look(self, look: Look) -> Fragment:
        i = self._look_ids.get(look)
        if i is None:
            i = self._look_ids[look] = len(self.looks)
            self.looks.append(look)
        return self.anchor(LOOK_BASE + i)

    def dfa(self, dfa, *, all_initial: bool = False, all_final: bool = False) -> Fragment:
        """Splice a ``ByteDFA`` in; optionally every state is an entry / an exit."""
        n = dfa.n_states
        s = self.new_state()
        if len(self.eps) + n + 1 > self.max_states:
            raise NFATooLarge(self.max_states)
        base = len(self.eps)
        for _ in range(n):
            self.eps.append([])
            self.edges.append([])
        e = self.new_state()
        if n:
            self.eps[s].extend(range(base, base + n) if all_initial else [base])
        for i in range(n) if all_final else np.flatnonzero(dfa.accepting).tolist():
            self.eps[base + i].append(e)
        for state, runs in enumerate(dfa.edge_runs):
            self.edges[base + state] = [(lo, hi, base + t) for lo, hi, t in runs]
        return s, e

    # ------------------------------------------------------ combinators

    def link(self, a: int, b: int) -> None:
        self.eps[a].append(b)

    def repeat(self, frag: Fragment, mark: int, lo: int, hi: int | None) -> Fragment:
        """``frag`` (states ``mark..n-1``) repeated ``lo..hi`` times, linear in ``hi``."""
        end_mark = self.n
        fs, fe = frag
        copies_needed = (hi if hi is not None else max(lo, 1)) - 1

        def copy() -> Fragment:
            off = self.copy_range(mark, end_mark)
            return fs + off, fe + off

        if hi == 0:
            return self.epsilon()
        # estimate before copying: the copies' states, and the words' length
        if self.n + (end_mark - mark) * copies_needed > self.max_states:
            raise NFATooLarge(self.max_states)
        if self.dfa_limit is not None and (hi or lo) > 1 and not any(s in self.guards for s in range(mark, end_mark)):
            shortest = self.shortest_accepted(fs, fe) or 0
            if lo * shortest >= self.dfa_limit:
                raise WordTooLong(self.dfa_limit)
            if hi is not None and hi * shortest >= self.dfa_limit and self._acyclic(mark, end_mark):
                raise WordTooLong(self.dfa_limit)  # a finite language of words this long
        copies = [frag] + [copy() for _ in range(copies_needed)]
        start = self.new_state()
        cur = start
        for cs, ce in copies[:lo]:
            self.link(cur, cs)
            cur = ce
        if hi is None:
            if lo == 0:
                cs, ce = copies[0]
                end = self.new_state()
                self.link(cur, cs)
                self.link(cur, end)
                self.link(ce, cs)
                self.link(ce, end)
                return start, end
            cs, ce = copies[lo - 1]
            self.link(ce, cs)
            return start, cur
        end = self.new_state()
        for cs, ce in copies[lo:]:
            self.link(cur, end)
            self.link(cur, cs)
            cur = ce
        self.link(cur, end)
        return start, end

    # ---------------------------------------------------- construction

    def build(self, root: Node, on_pattern: Callable[[ir.Pattern], Node]) -> Fragment:
        """Build ``root``; ``on_pattern`` turns a ``Pattern`` into a node to build instead."""
        results: list[Fragment] = []
        stack: list = [(root, False, 0)]
        budget = current_budget()
        while stack:
            budget.tick("building a terminal's NFA")
            node, expanded, mark = stack.pop()
            if isinstance(node, ir.Pattern):
                stack.append((on_pattern(node), False, 0))
                continue
            if isinstance(node, ir.Literal):
                results.append(self.literal(node.value))
            elif isinstance(node, ir.CharClass):
                results.append(self.code_points(_check_ranges(node.ranges, 0x10FFFF, "character class")))
            elif isinstance(node, ir.ByteClass):
                results.append(self.byte_ranges(_check_ranges(node.ranges, 0xFF, "byte class")))
            elif isinstance(node, Anchor):
                results.append(self.anchor(node.kind))
            elif isinstance(node, Look):
                results.append(self.look(node))
            elif isinstance(node, DFALeaf):
                results.append(self.dfa(node.dfa))
            elif not expanded:
                if isinstance(node, ir.Repeat):
                    node = _merged_repeat(node)
                children = _children(node)
                stack.append((node, True, self.n))
                for child in reversed(children):
                    stack.append((child, False, 0))
            else:
                results.append(self._combine(node, results, mark))
        (frag,) = results
        return frag

    def _combine(self, node: Node, results: list[Fragment], mark: int) -> Fragment:
        if isinstance(node, ir.Concat):
            k = len(node.parts)
            if k == 0:
                return self.epsilon()
            frags = results[len(results) - k :]
            del results[len(results) - k :]
            for (_, e), (s, _) in zip(frags, frags[1:]):
                self.link(e, s)
            return frags[0][0], frags[-1][1]
        if isinstance(node, ir.Alternation):
            k = len(node.options)
            if k == 0:
                return self.nothing()
            frags = results[len(results) - k :]
            del results[len(results) - k :]
            if k == 1:
                return frags[0]
            s, e = self.new_state(), self.new_state()
            for fs, fe in frags:
                self.link(s, fs)
                self.link(fe, e)
            return s, e
        if isinstance(node, ir.Repeat):
            frag = results.pop()
            return self.repeat(frag, mark, node.min, node.max)
        if isinstance(node, ir.Automaton):
            k = len(node.edges)
            frags = results[len(results) - k :] if k else []
            del results[len(results) - k :]
            states = [self.new_state() for _ in range(node.n_states)]
            for (p, _, q), (fs, fe) in zip(node.edges, frags):
                self.link(states[p], fs)
                self.link(fe, states[q])
            end = self.new_state()
            for q in node.accepting:
                self.link(states[q], end)
            return states[0], end
        raise InvalidExpr(f"not a regular expression node: {type(node).__name__}")


def _merged_repeat(node: ir.Repeat) -> ir.Repeat:
    """``(Y{a,}){lo,hi}`` as ``Y{lo*a,}`` where the two mean the same (``(a+){0,9999}`` is ``a*``).

    Copying the unbounded item ``hi`` times would only make the subset
    construction slow (every subset holds every copy).
    """
    while isinstance(node.item, ir.Repeat) and node.item.max is None and node.max != 0:
        inner = node.item
        if not isinstance(inner.min, int) or not isinstance(node.min, int) or not (node.min >= 1 or inner.min <= 1):
            break
        node = ir.Repeat(inner.item, node.min * inner.min, None)
    return node


def reached(seeds: Iterable[int], moves: Sequence[Iterable[int]] | Mapping[int, Iterable[int]]) -> set[int]:
    """``seeds`` and every state reachable from them along ``moves[state]`` (a negative entry: no move)."""
    seen = set(seeds)
    work = list(seen)
    while work:
        for t in moves[work.pop()]:
            if t >= 0 and t not in seen:
                seen.add(t)
                work.append(t)
    return seen


def well_formed(n_states: int, edges: Sequence[tuple[int, object, int]], accepting: Sequence[int]) -> bool:
    """Whether an automaton's edges and accepting states name its states ``0..n_states - 1`` (and it has one)."""
    return n_states >= 1 and all(0 <= p < n_states and 0 <= q < n_states for p, _, q in edges) and all(
        0 <= q < n_states for q in accepting)


def _children(node: Node) -> tuple:
    if isinstance(node, ir.Concat):
        return node.parts
    if isinstance(node, ir.Alternation):
        return node.options
    if isinstance(node, ir.Repeat):
        lo, hi = node.min, node.max
        if not isinstance(lo, int) or lo < 0 or (hi is not None and (not isinstance(hi, int) or hi < lo)):
            raise InvalidExpr(f"invalid repeat bounds {{{lo},{'' if hi is None else hi}}}")
        return (node.item,)
    if isinstance(node, ir.Automaton):
        if not well_formed(node.n_states, node.edges, node.accepting):
            raise InvalidExpr(f"invalid automaton: a state outside 0..{node.n_states - 1}")
        return tuple(label for _, label, _ in node.edges)
    raise InvalidExpr(f"not a regular expression node: {type(node).__name__}")


def _check_ranges(ranges, top: int, what: str) -> tuple[tuple[int, int], ...]:
    out = []
    for r in ranges:
        lo, hi = r
        if not (0 <= lo <= hi <= top):
            raise InvalidExpr(f"invalid {what} range {lo:#x}-{hi:#x}")
        out.append((lo, hi))
    out.sort()
    return tuple(out)
