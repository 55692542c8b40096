"""Finite automata over Unicode code points, for the few set operations a
schema needs (``pattern`` with ``minLength``, keys left to
``additionalProperties``, ``propertyNames``...) and back to a regex.

Everything is bounded (``MAX_STATES``, ``MAX_REGEX_SIZE``); beyond the bounds
a ``GrammarError`` is raised rather than letting a schema blow up.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Optional

import numpy as np

from ...automata.dfa import minimal_classes
from ...automata.nfa import reached
from ...budget import current_budget
from ...errors import GrammarError
from ...ir import Alternation, Automaton, CharClass, Concat, Literal, Repeat
from . import _charset as cs
from ._rx import EPS, Rx, alt, nullable, seq, size, star
from ._strings import U_ESCAPED

MAX_NFA_STATES = 200_000
MAX_STATES = 20_000
MAX_REGEX_SIZE = 30_000
MAX_EXPR_STATES = 64  # automata with more states stay automata (``as_expr``): state elimination grows fast


class TooLarge(GrammarError):
    """An automaton or regular expression exceeded its bound."""


class _NFA:
    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[cs.Ranges, int]]] = []

    def new(self) -> int:
        if len(self.eps) >= MAX_NFA_STATES:
            raise TooLarge("regular expression too large to combine (NFA state limit)")
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def build(self, x: Rx) -> tuple[int, int]:
        s, t = self.new(), self.new()
        if x is None:
            return s, t
        if isinstance(x, CharClass):
            if x.ranges:
                self.edges[s].append((cs.norm(x.ranges), t))
        elif isinstance(x, Literal):
            cur = s
            for ch in x.value.decode("utf-8"):
                nxt = self.new()
                self.edges[cur].append((cs.single(ord(ch)), nxt))
                cur = nxt
            self.eps[cur].append(t)
        elif isinstance(x, Concat):
            cur = s
            for p in x.parts:
                a, b = self.build(p)
                self.eps[cur].append(a)
                cur = b
            self.eps[cur].append(t)
        elif isinstance(x, Alternation):
            for o in x.options:
                a, b = self.build(o)
                self.eps[s].append(a)
                self.eps[b].append(t)
        elif isinstance(x, Repeat):
            cur = s
            for _ in range(x.min):
                a, b = self.build(x.item)
                self.eps[cur].append(a)
                cur = b
            if x.max is None:
                a, b = self.build(x.item)
                self.eps[cur].append(a)
                self.eps[b].append(cur)
                self.eps[cur].append(t)
            else:
                for _ in range(x.max - x.min):
                    self.eps[cur].append(t)
                    a, b = self.build(x.item)
                    self.eps[cur].append(a)
                    cur = b
                self.eps[cur].append(t)
        elif isinstance(x, Automaton):
            states = [self.new() for _ in range(x.n_states)]
            self.eps[s].append(states[0])
            for p, label, q in x.edges:
                if isinstance(label, CharClass):  # one edge, no states of its own
                    if label.ranges:
                        self.edges[states[p]].append((cs.norm(label.ranges), states[q]))
                    continue
                a, b = self.build(label)
                self.eps[states[p]].append(a)
                self.eps[b].append(states[q])
            for q in x.accepting:
                self.eps[states[q]].append(t)
        else:
            raise TypeError(f"cannot build an automaton from {type(x).__name__}")
        return s, t

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        return frozenset(reached(states, self.eps))


def _numbered(index: dict, order: list, key, what: str) -> int:
    """``key``'s number in ``index``; a new key gets the next one and is appended to ``order`` (``TooLarge``,
    saying ``what``, once ``MAX_STATES`` are numbered)."""
    j = index.get(key)
    if j is None:
        if len(order) >= MAX_STATES:
            raise TooLarge(f"{what} (DFA state limit)")
        j = index[key] = len(order)
        order.append(key)
    return j


@dataclass
class DFA:
    """``trans[state][symbol]`` is the next state or -1; start state 0."""

    symbols: list[cs.Ranges]
    trans: list[list[int]]
    accept: list[bool]

    @property
    def n(self) -> int:
        return len(self.trans)

    @cached_property
    def successor_symbols(self) -> list[tuple[tuple[int, int], ...]]:
        """Per state, ``(successor, bitmask of the symbols leading there)`` for each distinct successor (a row of a
        dozen symbols has two or three)."""
        out = []
        for row in self.trans:
            masks: dict[int, int] = {}
            for sym, t in enumerate(row):
                if t >= 0:
                    masks[t] = masks.get(t, 0) | 1 << sym
            out.append(tuple(masks.items()))
        return out

    @cached_property
    def successors(self) -> list[tuple[int, ...]]:
        """Per state, the distinct states a symbol leads to."""
        return [tuple(t for t, _ in row) for row in self.successor_symbols]

    @cached_property
    def predecessors(self) -> list[list[int]]:
        """Per state, the distinct states with a symbol leading to it (``successors`` reversed)."""
        into: list[list[int]] = [[] for _ in range(self.n)]
        for q, targets in enumerate(self.successors):
            for t in targets:
                into[t].append(q)
        return into


def alphabet(labels: list[cs.Ranges]) -> tuple[list[cs.Ranges], dict[cs.Ranges, list[int]]]:
    """Partition the code space into symbols; map each label to its symbols.

    The code space is cut at every label's range ends; the pieces with the same labels around them are one
    symbol, in the order of their first piece. One sweep over the cuts counts, per label, its ranges that hold
    the piece (a class such as ``\\p{L}`` makes a thousand pieces, each held by a few labels)."""
    uniq = list(dict.fromkeys(labels))
    changes: dict[int, list[tuple[int, int]]] = {0: [], cs.MAX_CP + 1: []}  # cut -> (label, +1 enters / -1 leaves)
    for i, lab in enumerate(uniq):
        for a, b in lab:
            changes.setdefault(a, []).append((i, 1))
            changes.setdefault(b + 1, []).append((i, -1))
    cuts = sorted(changes)
    sig_of: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    holding: dict[int, int] = {}  # label -> its ranges around the piece (adjacent or overlapping ones: two at a cut)
    for a, nxt in zip(cuts, cuts[1:]):
        for i, step in changes[a]:
            n = holding.get(i, 0) + step
            if n:
                holding[i] = n
            else:
                del holding[i]
        sig_of.setdefault(tuple(sorted(holding)), []).append((a, nxt - 1))
    symbols: list[cs.Ranges] = []
    of_label: dict[cs.Ranges, list[int]] = {lab: [] for lab in uniq}
    for sig, rs in sig_of.items():
        rng = cs.norm(rs)
        if not rng:
            continue
        symbols.append(rng)
        for i in sig:
            of_label[uniq[i]].append(len(symbols) - 1)
    return symbols, of_label


def compile_many(exprs: list[Rx]) -> list[DFA]:
    """Deterministic automata for ``exprs``, all over one shared alphabet."""
    nfa = _NFA()
    ends = [nfa.build(x) for x in exprs]
    labels = [lab for edges in nfa.edges for lab, _ in edges]
    symbols, of_label = alphabet(labels)
    moves: list[list[tuple[list[int], int]]] = [
        [(of_label[lab], t) for lab, t in edges] for edges in nfa.edges
    ]
    out = []
    budget = current_budget()
    closures: dict[frozenset[int], frozenset[int]] = {}  # the symbols of one class mostly lead to one set
    for start, final in ends:
        init = nfa.closure([start])
        index = {init: 0}
        order = [init]
        trans: list[list[int]] = []
        accept: list[bool] = []
        i = 0
        while i < len(order):
            budget.tick("combining regular expressions")
            cur = order[i]
            i += 1
            accept.append(final in cur)
            succ: dict[int, set[int]] = {}
            for s in cur:
                for syms, t in moves[s]:
                    for a in syms:
                        succ.setdefault(a, set()).add(t)
            row = [-1] * len(symbols)
            for a, targets in succ.items():
                key = frozenset(targets)
                closed = closures.get(key)
                if closed is None:
                    closed = closures[key] = nfa.closure(key)
                row[a] = _numbered(index, order, closed, "regular expression too large to combine")
            trans.append(row)
        out.append(DFA(symbols, trans, accept))
    return out


def complement(d: DFA) -> DFA:
    n = d.n
    trans = [[t if t >= 0 else n for t in row] for row in d.trans]
    trans.append([n] * len(d.symbols))
    accept = [not a for a in d.accept] + [True]
    return DFA(d.symbols, trans, accept)


def intersect(a: DFA, b: DFA) -> DFA:
    assert a.symbols is b.symbols or a.symbols == b.symbols
    index = {(0, 0): 0}
    order = [(0, 0)]
    trans: list[list[int]] = []
    accept: list[bool] = []
    i = 0
    while i < len(order):
        p, q = order[i]
        i += 1
        accept.append(a.accept[p] and b.accept[q])
        row = []
        for s in range(len(a.symbols)):
            x, y = a.trans[p][s], b.trans[q][s]
            if x < 0 or y < 0:
                row.append(-1)
                continue
            row.append(_numbered(index, order, (x, y), "regular expressions too large to intersect"))
        trans.append(row)
    return DFA(a.symbols, trans, accept)


def trim(d: DFA) -> Optional[DFA]:
    """Keep states reachable from the start and co-reachable to acceptance; None if empty."""
    live = reached((q for q in range(d.n) if d.accept[q]), d.predecessors)
    if 0 not in live:
        return None
    keep = sorted(reached([0], d.successors) & live)  # a path to a live state passes live states only
    new = {q: i for i, q in enumerate(keep)}
    trans = [[new.get(t, -1) if t >= 0 else -1 for t in d.trans[q]] for q in keep]
    return DFA(d.symbols, trans, [d.accept[q] for q in keep])


def minimize(d: DFA) -> Optional[DFA]:
    """Trim, then merge equivalent states (Moore refinement)."""
    t = trim(d)
    if t is None:
        return None
    # Moore rounds, then Hopcroft for a counter's long chain (``.{10,60}``: a round per count)
    block = minimal_classes(np.array(t.trans, dtype=np.int64).reshape(t.n, len(t.symbols)),
                            np.array(t.accept, dtype=bool)).tolist()
    # renumber so the start state is 0
    order: dict[int, int] = {}
    for q in range(t.n):
        order.setdefault(block[q], len(order))
    trans: list[list[int]] = [[] for _ in order]
    accept = [False] * len(order)
    for q in range(t.n):
        b = order[block[q]]
        trans[b] = [order[block[x]] if x >= 0 else -1 for x in t.trans[q]]
        accept[b] = t.accept[q]
    return DFA(t.symbols, trans, accept)


def _alt_cc(a: Rx, b: Rx) -> Rx:
    """Union that merges character classes."""
    if isinstance(a, CharClass) and isinstance(b, CharClass):
        return CharClass(cs.union(a.ranges, b.ranges))
    return alt(a, b)


def to_regex(d: Optional[DFA], limit: int = MAX_REGEX_SIZE) -> Rx:
    """A regular expression for the language of ``d`` (state elimination).

    Raises ``TooLarge`` when the expression would exceed about ``limit`` nodes.
    """
    if d is None:
        return None
    return automaton_regex(automaton_expr(d), limit)


def automaton_regex(a: Automaton, limit: int = MAX_REGEX_SIZE) -> Rx:
    """A regular expression for the language of ``a`` (state elimination; ``TooLarge`` past about ``limit``
    nodes)."""
    n = a.n_states
    S, F = n, n + 1
    edge: dict[tuple[int, int], Rx] = {(S, 0): EPS}
    cost: dict[tuple[int, int], int] = {(S, 0): 1}
    for q in a.accepting:
        edge[(q, F)] = EPS
        cost[(q, F)] = 1
    for p, label, q in a.edges:
        edge[(p, q)] = _alt_cc(edge.get((p, q)), label)
        cost[(p, q)] = cost.get((p, q), 0) + size(label)
    succ: dict[int, set[int]] = {q: set() for q in range(n + 2)}
    pred: dict[int, set[int]] = {q: set() for q in range(n + 2)}
    for p, q in edge:
        succ[p].add(q)
        pred[q].add(p)
    remaining = set(range(n))
    budget = current_budget()
    while remaining:
        budget.tick("writing an automaton as a regular expression")
        k = min(remaining, key=lambda s: (len(pred[s] - {s}) * len(succ[s] - {s}), s))
        remaining.discard(k)
        loop = edge.pop((k, k), None)
        loop_cost = cost.pop((k, k), 0) + 1
        mid = star(loop) if loop is not None else EPS
        ins = [p for p in pred[k] if p != k]
        outs = [q for q in succ[k] if q != k]
        for p in ins:
            for q in outs:
                path = seq(edge[(p, k)], mid, edge[(k, q)])
                c = cost[(p, k)] + loop_cost + cost[(k, q)] + cost.get((p, q), 0) + 1
                if c > limit:
                    raise TooLarge("combined regular expression too large")
                edge[(p, q)] = _alt_cc(edge.get((p, q)), path)
                cost[(p, q)] = c
                succ[p].add(q)
                pred[q].add(p)
        for p in ins:
            edge.pop((p, k), None)
            cost.pop((p, k), None)
            succ[p].discard(k)
        for q in outs:
            edge.pop((k, q), None)
            cost.pop((k, q), None)
            pred[q].discard(k)
        succ[k].clear()
        pred[k].clear()
    return edge.get((S, F))


def automaton_expr(d: DFA) -> Automaton:
    """``d`` as an expression (``ir.Automaton``): one edge per (state, target), labelled with the union of the
    symbols that lead there."""
    edges = []
    labels: dict[int, CharClass] = {}  # symbols' bitmask -> their class (a counter's states share theirs)
    for q, row in enumerate(d.successor_symbols):
        for t, symbols in sorted(row):
            label = labels.get(symbols)
            if label is None:
                label = labels[symbols] = CharClass(cs.norm(r for sym in set_bits(symbols) for r in d.symbols[sym]))
            edges.append((q, label, t))
    return Automaton(d.n, tuple(edges), tuple(q for q in range(d.n) if d.accept[q]))


def as_expr(d: Optional[DFA]) -> Rx:
    """The language of ``d`` as an expression: a regular expression when ``d`` is small and one about as large
    as its edges exists, else the automaton itself (``automaton_expr``). A larger expression is a
    nondeterministic one (the orders of a few lookaheads: ``.*A.*B|.*B.*A``), which grows exponentially and
    costs the byte layer's subset construction seconds, while the automaton stays a product of small
    factors, deterministic but for the JSON escapes of its labels."""
    if d is None:
        return None
    if d.n <= MAX_EXPR_STATES and not spells_wide(d):
        edges = sum(map(len, d.successors))
        try:
            return to_regex(d, 4 * edges + 32)
        except TooLarge:
            pass
    return automaton_expr(d)


# Families of the partial states of a JSON string's byte automaton (beside its states at code-point ends, one per
# state of a minimal code-point automaton): within a code point after a UTF-8 lead byte of 2, 3 or 4 bytes, and
# after ``\u`` and 0 to 3 hex digits. Each family has its own count of bytes left to the code point's end, so
# no state of one accepts what a state of another does (and none accepts the ``"`` or ``\`` a state at a code
# point's end can read first). Per family, ranges of code points whose spellings share one prefix (C2; E1; F1;
# ``\u``; ``\u0``; ``\u00``; ``\u000``..``\u00f``), cut to those spelled that way (``_strings.U_ESCAPED`` after
# ``\u``): the partial states after it are as many as the distinct moves of the automaton's states over it.
_BYTE_FAMILIES: tuple[tuple[cs.Ranges, ...], ...] = tuple(
    tuple(r for r in (cs.intersect(cs.norm(ranges), U_ESCAPED) for ranges in family) if r) for family in (
        (((0x80, 0xBF),),),
        (((0x1000, 0x1FFF),),),
        (((0x40000, 0x7FFFF),),),
        (((0x0000, 0xFFFF),),),
        (((0x0000, 0x0FFF),),),
        (((0x0000, 0x00FF),),),
        tuple(((lo, lo + 0xF),) for lo in range(0, 0x100, 0x10)),
    ))


def byte_states_at_least(d: DFA, limit: int) -> int:
    """A lower bound on the states of the minimal byte automaton of the JSON strings whose contents the minimal
    ``d`` accepts (each code point in its spellings, ``_strings.unit``): ``d``'s states, plus per family of
    partial states (``_BYTE_FAMILIES``) the distinct moves of ``d``'s states over one of its ranges (a spelling
    decodes one way, so distinct moves of a minimal automaton are distinct byte states).
    Worked out only where it could pass ``limit`` (else ``d.n``): an automaton that cannot fit is refused
    before its classes are spelled in bytes (``allOf`` of 12 patterns ``.*x.*``, 4,096 states: at least 20,000
    byte states, found in milliseconds where building them took 10 s)."""
    if d.n * (1 + len(_BYTE_FAMILIES)) <= limit:
        return d.n
    table = np.array(d.trans, dtype=np.int64).reshape(d.n, len(d.symbols))
    total = d.n
    for family in _BYTE_FAMILIES:
        most = 0
        for ranges in family:
            columns = [i for i, sym in enumerate(d.symbols) if cs.intersect(sym, ranges)]
            moves = table[:, columns]
            moves = moves[(moves >= 0).any(axis=1)]
            most = max(most, len(np.unique(moves, axis=0)) if moves.size else 0)
        total += most
    return total


def spells_wide(d: DFA) -> bool:
    """Does ``d`` read code points past ASCII? Each such class, spelled in bytes (UTF-8 of 2-4 bytes, and
    ``\\uXXXX`` escapes, astral ones in pairs), is a DFA of tens to hundreds of states (``[\\p{L}\\p{N}\\p{P}...]``:
    797): as an automaton, its byte DFA is built as tries side by side (``automata.labelled``), which also fails
    at once when it would pass the state limit, where a regular expression's subset construction takes a second
    to find that (that class ``{1,16}``: 3.0 s against 1.3 in all). ASCII classes spell small: there the
    regular expression's construction is the cheaper (over the second corpus's schemas under 2.5 s, in one
    process: 50.0 s as before, 46.2 s with every automaton as one, 41.7 s with this rule)."""
    read = 0
    for row in d.successor_symbols:
        for _, symbols in row:
            read |= symbols
    return any(hi >= 0x80 for sym in set_bits(read) for _, hi in d.symbols[sym])


def intersection_dfa(exprs: list[Rx]) -> Optional[DFA]:
    """The minimal automaton of the intersection of ``exprs`` (None: empty)."""
    if any(x is None for x in exprs):
        return None
    dfas = compile_many(exprs)
    acc: Optional[DFA] = minimize(dfas[0])
    for d in dfas[1:]:
        if acc is None:
            return None
        acc = minimize(intersect(acc, d))
    return acc


def paths_dfa(d: DFA, start: int, lo: int, hi: Optional[int], targets: Optional[set[int]] = None) -> Optional[DFA]:
    """The minimal automaton (over ``d``'s symbols; ``None``: empty) of the strings ``w`` with
    ``lo <= len(w) <= hi`` leading ``d`` from ``start`` into ``targets`` (default: the accepting states);
    ``hi=None``: no upper bound."""
    targets = {q for q in range(d.n) if d.accept[q]} if targets is None else targets
    if hi is not None:
        languages = PathLanguages(d)
        return languages.dfa(languages.root(start, lo, hi, targets))
    index: dict[tuple[int, int], int] = {(start, 0): 0}
    order = [(start, 0)]
    trans: list[list[int]] = []
    accept: list[bool] = []
    i = 0
    while i < len(order):
        q, n = order[i]
        i += 1
        accept.append(q in targets and n >= lo)
        row = []
        for sym in range(len(d.symbols)):
            t = d.trans[q][sym]
            if t < 0:
                row.append(-1)
                continue
            row.append(_numbered(index, order, (t, min(n + 1, lo)), "regular expressions too large to intersect"))
        trans.append(row)
    return minimize(DFA(d.symbols, trans, accept))


class PathLanguages:
    """The languages of bounded-length paths through one automaton ``d`` (strings of ``lo`` to ``hi`` symbols
    from a state into a set of states), each a node of one hash-consed DAG shared by all of them.

    A node is ``(accepts, its children)``, the children a sorted tuple of ``(child node, bitmask of the symbols
    that lead to it)`` without the empty language, interned, so two nodes are one exactly when their languages
    are equal (by induction on the length left): a node's id is a canonical key of its language, and the nodes
    under it are its minimal automaton, with no subset construction or minimization. A chunked string asks for
    thousands of these (``format: hostname`` with ``maxLength: 255``: 2,097 chunk languages of 8 code points
    from each of 125 states), and most share their tails. A node is made from the few distinct successors of
    its state (an automaton over a dozen symbol classes has two or three), not from one child per symbol.
    """

    EMPTY = -1

    def __init__(self, d: DFA) -> None:
        self.d = d
        self._ids: dict[tuple, int] = {}
        self._nodes: list[tuple[bool, tuple[tuple[int, int], ...]]] = []
        self._memo: dict[frozenset, dict[tuple[int, int, int], int]] = {}
        self._exact: dict[tuple[int, int], dict[int, int]] = {}  # (state, length) -> {end state: node}
        self._dfas: dict[int, DFA] = {}

    def root(self, start: int, lo: int, hi: int, targets: set[int]) -> int:
        """The node of the strings of ``lo`` to ``hi`` symbols leading ``d`` from ``start`` into ``targets``
        (``EMPTY`` if there are none)."""
        memo = self._memo.setdefault(frozenset(targets), {})
        successors, ids, nodes = self.d.successor_symbols, self._ids, self._nodes
        first = (start, lo, hi)
        stack = [first]
        while stack:
            key = stack[-1]
            if key in memo:
                stack.pop()
                continue
            s, need, room = key
            children: tuple[tuple[int, int], ...] = ()
            if room:
                down_need, down_room = need - 1 if need else 0, room - 1
                missing = [(t, down_need, down_room) for t, _ in successors[s]
                           if (t, down_need, down_room) not in memo]
                if missing:
                    stack.extend(missing)
                    continue
                by_child: dict[int, int] = {}
                for t, symbols in successors[s]:
                    child = memo[(t, down_need, down_room)]
                    if child != self.EMPTY:  # successors with one language share a child: their symbols merge
                        by_child[child] = by_child.get(child, 0) | symbols
                children = tuple(sorted(by_child.items()))
            accepts = not need and s in targets
            if not accepts and not children:
                memo[key] = self.EMPTY
            else:
                memo[key] = _numbered(ids, nodes, (accepts, children), "regular expressions too large to intersect")
            stack.pop()
        return memo[first]

    def exact_roots(self, start: int, length: int) -> dict[int, int]:
        """``{q: root(start, length, length, {q})}`` for every state ``q`` that ``length`` symbols lead to from
        ``start`` (the chunk languages of a threaded string), all at once: each ``(state, length left)`` is
        visited once for every end state it reaches, where ``root`` visits it once per end state asked for,
        reached or not (Bedrock AgentCore's payment manager, ~1,100 chunked states: front end 1.9 -> 1.1 s)."""
        memo, successors, ids, nodes = self._exact, self.d.successor_symbols, self._ids, self._nodes
        what = "regular expressions too large to intersect"
        stack = [(start, length)]
        while stack:
            key = stack[-1]
            if key in memo:
                stack.pop()
                continue
            s, k = key
            if not k:
                memo[key] = {s: _numbered(ids, nodes, (True, ()), what)}
                stack.pop()
                continue
            missing = [(t, k - 1) for t, _ in successors[s] if (t, k - 1) not in memo]
            if missing:
                stack.extend(missing)
                continue
            by_end: dict[int, dict[int, int]] = {}  # end state -> {child: symbols}, as ``root`` merges them
            for t, symbols in successors[s]:
                for q, child in memo[(t, k - 1)].items():
                    by_child = by_end.setdefault(q, {})
                    by_child[child] = by_child.get(child, 0) | symbols
            memo[key] = {q: _numbered(ids, nodes, (False, tuple(sorted(by_child.items()))), what)
                         for q, by_child in by_end.items()}
            stack.pop()
        return memo[(start, length)]

    def dfa(self, node: int) -> Optional[DFA]:
        """The minimal automaton of ``node``'s language (``None`` for ``EMPTY``): the nodes under it, numbered
        breadth first from it."""
        if node == self.EMPTY:
            return None
        found = self._dfas.get(node)
        if found is None:
            width = len(self.d.symbols)
            number = {node: 0}
            order = [node]
            trans: list[list[int]] = []
            for x in order:  # grows while it is walked
                row = [-1] * width
                # children in the order of their first symbols: the numbering depends on the language alone (equal
                # chunk languages of two patterns are one automaton, and one lexeme in the terminal memo)
                for child, symbols in sorted(self._nodes[x][1], key=lambda item: item[1] & -item[1]):
                    if child not in number:
                        number[child] = len(order)
                        order.append(child)
                    for sym in set_bits(symbols):
                        row[sym] = number[child]
                trans.append(row)
            found = self._dfas[node] = DFA(self.d.symbols, trans, [self._nodes[x][0] for x in order])
        return found


def set_bits(mask: int) -> Iterable[int]:
    """The positions of the set bits of ``mask``, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def canonical_key(d: DFA) -> tuple:
    """A key equal for two minimal automata over the same symbols exactly when their languages are equal:
    the states renumbered in breadth-first order from the start (a minimal automaton is unique up to its
    numbering)."""
    number = {0: 0}
    order = [0]
    rows = []
    for q in order:  # grows while it is walked
        row = []
        for t in d.trans[q]:
            if t >= 0 and t not in number:
                number[t] = len(order)
                order.append(t)
            row.append(number[t] if t >= 0 else -1)
        rows.append(tuple(row))
    return tuple(d.accept[q] for q in order), tuple(rows)


def combine(base: Rx, keep: list[Rx] = (), drop: list[Rx] = ()) -> Rx:  # type: ignore[assignment]
    """``base ∩ keep[0] ∩ ... − drop[0] − ...`` as a regex (None when empty)."""
    if base is None or any(k is None for k in keep):
        return None
    drop = [x for x in drop if x is not None]
    if not keep and not drop:
        return base
    dfas = compile_many([base, *keep, *drop])
    acc: Optional[DFA] = dfas[0]
    for k in dfas[1 : 1 + len(keep)]:
        acc = minimize(intersect(acc, k)) if acc is not None else None
    for x in dfas[1 + len(keep) :]:
        if acc is None:
            break
        acc = minimize(intersect(acc, complement(x)))
    return as_expr(acc)


def is_universal(x: Rx) -> bool:
    """Does ``x`` match every string (``(?s).*``, ``^.*$`` with ``dotAll``: a pattern that asks nothing)? Only a
    language with the empty string can be; the others are answered without building anything."""
    if x is None or not nullable(x):
        return False
    try:
        d = minimize(compile_many([star(CharClass(cs.ANY)), x])[1])
    except TooLarge:
        return False
    return d is not None and d.n == 1 and d.accept[0] and all(t == 0 for t in d.trans[0])


def is_empty(x: Rx) -> bool:
    return x is None or trim(compile_many([x])[0]) is None
