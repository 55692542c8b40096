"""A hash-consed Earley recognizer whose terminals are byte DFAs.

Vocabulary of the module:

* item — ``(rule, dot, origin)``; ``origin`` is the id of an interned Earley
  set, or ``SELF`` inside a set that is still being built (an item predicted
  at the current position).
* Earley set — opened only where a terminal completes. What later positions
  need from it is how completions *from* it behave: the items waiting on each
  nonterminal, and Leo entries. That part is interned: equal sets get equal ids.
* scan pair — ``(item, terminal, q)``: an item whose next symbol is a
  terminal, with the terminal's DFA state after the bytes since it started.
* parser state — the frozenset of scan pairs plus an accepting flag, interned
  to one small int. Two positions with equal states behave identically on all
  future input, so ``(state, byte) -> state`` is a pure, memoizable function.

Leo's optimization collapses deterministic right-recursive completion chains
so ``S ::= "A" S | "A"`` keeps a constant-size state. Nullable nonterminals
and terminals are handled in the closure (Aycock–Horspool). All loops are
iterative.
"""
from __future__ import annotations

from collections import defaultdict

from ..normalize import BnfGrammar

SELF = -1
DEAD = 0  # the state id of the dead state (no pairs, not accepting)

Item = tuple  # (rule, dot, origin)


class BoundedCache(dict):
    """A dict that forgets its oldest half when it reaches ``limit`` entries."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = max(2, limit)

    def put(self, key, value) -> None:
        if len(self) >= self.limit:
            for old in list(self.keys())[: self.limit // 2]:
                del self[old]
        self[key] = value


class EarleyParser:
    """The recognizer for one grammar; shared by every matcher of that grammar."""

    def __init__(self, grammar: BnfGrammar, *, memo_limit: int = 1 << 20) -> None:
        self.grammar = grammar
        self.rule_lhs = [r.lhs for r in grammar.rules]
        self.rule_rhs = [r.rhs for r in grammar.rules]
        by_lhs: dict[int, list[int]] = defaultdict(list)
        for i, lhs in enumerate(self.rule_lhs):
            by_lhs[lhs].append(i)
        self.rules_by_lhs = [tuple(by_lhs[n]) for n in range(len(grammar.nonterminals))]
        self.nullable = grammar.nullable
        self.transitions = [d.transitions for d in grammar.dfas]
        self.accepting = [d.accepting.tolist() for d in grammar.dfas]
        self.term_nullable = [bool(d.nullable) for d in grammar.dfas]
        # a pair whose DFA state has no way out is finished once its completion is done
        self.has_exit = [(d.transitions >= 0).any(axis=1).tolist() for d in grammar.dfas]
        self._rows: dict[tuple[int, int], list[int]] = {}
        # interning tables
        self._set_ids: dict[tuple, int] = {}
        self._set_waiting: list[dict[int, tuple]] = []
        self._set_leo: list[dict[int, tuple[int, int]]] = []
        self._state_ids: dict[tuple, int] = {}
        self.state_pairs: list[tuple] = []
        self.state_accepting: list[bool] = []
        # memo tables
        self._kernel_memo = BoundedCache(memo_limit)
        self._complete_memo = BoundedCache(memo_limit)
        self._byte_memo = BoundedCache(memo_limit)
        self._intern_state((), False)  # DEAD == 0
        set_id, scans, accept = self._build_set(((0, 0, SELF),))
        self.initial_state = self._intern_state(
            tuple((item, t, 0) for item, t in scans if self.has_exit[t][0]), accept
        )

    # ------------------------------------------------------------ interning

    def _intern_state(self, pairs: tuple, accepting: bool) -> int:
        key = (frozenset(pairs), accepting)
        sid = self._state_ids.get(key)
        if sid is None:
            sid = len(self.state_pairs)
            self._state_ids[key] = sid
            self.state_pairs.append(tuple(sorted(key[0])))
            self.state_accepting.append(accepting)
        return sid

    @property
    def n_states(self) -> int:
        return len(self.state_pairs)

    @property
    def n_sets(self) -> int:
        return len(self._set_waiting)

    def _row(self, t: int, q: int) -> list[int]:
        row = self._rows.get((t, q))
        if row is None:
            row = self.transitions[t][q].tolist()
            self._rows[(t, q)] = row
        return row

    # --------------------------------------------------------------- closure

    def _complete(self, lhs: int, origin: int) -> tuple[tuple, bool]:
        """Items advanced by completing ``lhs`` that started at set ``origin``; and whether that accepts."""
        key = (lhs, origin)
        hit = self._complete_memo.get(key)
        if hit is not None:
            return hit
        leo = self._set_leo[origin].get(lhs)
        if leo is not None:
            lhs, origin = leo[0], (origin if leo[1] == SELF else leo[1])
        if lhs == 0:
            result: tuple[tuple, bool] = ((), True)
        else:
            advanced = tuple(
                (rule, dot + 1, origin if item_origin == SELF else item_origin)
                for rule, dot, item_origin in self._set_waiting[origin].get(lhs, ())
            )
            result = (advanced, False)
        self._complete_memo.put(key, result)
        return result

    def _build_set(self, kernel: tuple) -> tuple[int, tuple, bool]:
        """Close ``kernel`` into a new Earley set.

        Returns the interned set id, its scan items (origins resolved) with
        their terminal, and whether the start symbol completed here.
        """
        key = frozenset(kernel)
        hit = self._kernel_memo.get(key)
        if hit is not None:
            return hit
        rule_rhs = self.rule_rhs
        rule_lhs = self.rule_lhs
        seen = set(kernel)
        agenda = list(kernel)
        waiting: dict[int, list] = defaultdict(list)
        scans: list = []
        predicted: set[int] = set()
        accept = False
        while agenda:
            item = agenda.pop()
            rule, dot, origin = item
            rhs = rule_rhs[rule]
            if dot == len(rhs):
                lhs = rule_lhs[rule]
                if lhs == 0:
                    accept = True
                    continue
                if origin == SELF:
                    continue  # an ε-completion: handled when the nullable symbol was predicted
                advanced, accepts = self._complete(lhs, origin)
                accept = accept or accepts
                for new in advanced:
                    if new not in seen:
                        seen.add(new)
                        agenda.append(new)
                continue
            sym = rhs[dot]
            if sym >= 0:
                waiting[sym].append(item)
                if sym not in predicted:
                    predicted.add(sym)
                    for r in self.rules_by_lhs[sym]:
                        new = (r, 0, SELF)
                        if new not in seen:
                            seen.add(new)
                            agenda.append(new)
                skip = sym in self.nullable
            else:
                scans.append((item, ~sym))
                skip = self.term_nullable[~sym]
            if skip:
                new = (rule, dot + 1, origin)
                if new not in seen:
                    seen.add(new)
                    agenda.append(new)
        leo = self._leo_entries(waiting)
        for sym in leo:
            del waiting[sym]
        frozen_waiting = {sym: tuple(sorted(items)) for sym, items in waiting.items()}
        set_key = (frozenset(frozen_waiting.items()), frozenset(leo.items()))
        set_id = self._set_ids.get(set_key)
        if set_id is None:
            set_id = len(self._set_waiting)
            self._set_ids[set_key] = set_id
            self._set_waiting.append(frozen_waiting)
            self._set_leo.append(leo)
        resolved = tuple(
            ((rule, dot, set_id if origin == SELF else origin), t) for (rule, dot, origin), t in scans
        )
        result = (set_id, resolved, accept)
        self._kernel_memo.put(key, result)
        return result

    def _leo_entries(self, waiting: dict[int, list]) -> dict[int, tuple[int, int]]:
        """Leo entries of a set: ``sym -> (Y, origin)`` where completing ``sym`` here means completing ``Y`` there.

        ``sym`` qualifies when exactly one item waits on it and ``sym`` is that
        item's last symbol. The entry follows the chain to its top, through
        earlier sets' entries and through this set's own (``origin == SELF``),
        so an entry's target never has an entry itself.
        """
        rule_rhs, rule_lhs = self.rule_rhs, self.rule_lhs
        candidates: dict[int, tuple[int, int]] = {}
        for sym, items in waiting.items():
            if len(items) == 1:
                rule, dot, origin = items[0]
                if dot == len(rule_rhs[rule]) - 1:
                    candidates[sym] = (rule_lhs[rule], origin)
        resolved: dict[int, tuple[int, int] | None] = {}
        for first in candidates:
            path: list[int] = []
            cur = first
            while True:
                if cur in resolved:
                    target = resolved[cur]
                    break
                if cur in path:  # a cycle of unit rules inside the set: no entry for any of them
                    target = None
                    break
                path.append(cur)
                x, origin = candidates[cur]
                if origin != SELF:
                    far = self._set_leo[origin].get(x)
                    if far is None:
                        target = (x, origin)
                    else:
                        target = (far[0], origin if far[1] == SELF else far[1])
                    break
                if x not in candidates:
                    target = (x, SELF)
                    break
                cur = x
            # unwind: each path element completes into the next one's target
            for sym in reversed(path):
                if target is None:
                    resolved[sym] = None
                    continue
                resolved[sym] = target
            # a same-set link whose successor got no entry falls back to (x, SELF)
            for sym in path:
                if resolved[sym] is None:
                    x, origin = candidates[sym]
                    if origin == SELF and x in resolved and resolved[x] is None and x not in path:
                        resolved[sym] = (x, SELF)
        return {sym: t for sym, t in resolved.items() if t is not None}

    # ------------------------------------------------------------------ steps

    def step_byte(self, state: int, byte: int) -> int:
        """The state after one more byte (``DEAD`` if no reading survives)."""
        key = (state, byte)
        hit = self._byte_memo.get(key)
        if hit is not None:
            return hit
        pairs = []
        completed = []
        accepting = self.accepting
        has_exit = self.has_exit
        for item, t, q in self.state_pairs[state]:
            q2 = self._row(t, q)[byte]
            if q2 >= 0:
                if has_exit[t][q2]:
                    pairs.append((item, t, q2))
                if accepting[t][q2]:
                    rule, dot, origin = item
                    completed.append((rule, dot + 1, origin))
        accept = False
        if completed:
            _, scans, accept = self._build_set(tuple(completed))
            pairs.extend((item, t, 0) for item, t in scans if self.has_exit[t][0])
        result = self._intern_state(tuple(pairs), accept) if (pairs or accept) else DEAD
        self._byte_memo.put(key, result)
        return result

    def step_bytes(self, state: int, data: bytes) -> tuple[int, bool, int]:
        """Feed ``data``; returns (state, accepted at some byte boundary after the first byte, bytes consumed before dying)."""
        passed_accept = False
        accepting = self.state_accepting
        for i, byte in enumerate(data):
            state = self.step_byte(state, byte)
            if state == DEAD:
                return DEAD, passed_accept, i
            passed_accept = passed_accept or accepting[state]
        return state, passed_accept, len(data)

    def is_accepting(self, state: int) -> bool:
        return self.state_accepting[state]

    def is_viable(self, state: int) -> bool:
        return state != DEAD

    def live_items(self, state: int) -> int:
        """How many scan pairs the state holds (constant under Leo for right recursion)."""
        return len(self.state_pairs[state])
