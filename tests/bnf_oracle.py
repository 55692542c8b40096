"""Brute-force reference semantics for BNF grammars with DFA terminals (test helper).

``derives(w)`` and ``viable_prefix(w)`` decide membership exactly by dynamic
programming over the positions of ``w`` (a fixpoint, so nullable and cyclic
rules are fine). Slow and obviously right: the oracle the parser is checked against.
"""
from __future__ import annotations

from kbnf_gpu.normalize import BnfGrammar


def _dfa_walk(dfa, data: bytes) -> int:
    q = 0 if dfa.n_states else -1
    for b in data:
        if q < 0:
            return -1
        q = int(dfa.transitions[q, b])
    return q


class BnfOracle:
    def __init__(self, grammar: BnfGrammar) -> None:
        self.g = grammar

    def _exact(self, w: bytes) -> dict:
        """table[(sym, i, j)] = True if sym derives w[i:j] (symbols: nonterminal ints, terminal ~t)."""
        g = self.g
        n = len(w)
        table: set = set()
        for t, dfa in enumerate(g.dfas):
            for i in range(n + 1):
                for j in range(i, n + 1):
                    q = _dfa_walk(dfa, w[i:j])
                    if q >= 0 and dfa.accepting[q]:
                        table.add((~t, i, j))
        changed = True
        while changed:
            changed = False
            for rule in g.rules:
                for i in range(n + 1):
                    # ends reachable after deriving a prefix of rhs from i
                    ends = {i}
                    for sym in rule.rhs:
                        ends = {j for e in ends for j in range(e, n + 1) if (sym, e, j) in table}
                        if not ends:
                            break
                    for j in ends:
                        if (rule.lhs, i, j) not in table:
                            table.add((rule.lhs, i, j))
                            changed = True
        return table

    def derives(self, w: bytes) -> bool:
        return (self.g.start, 0, len(w)) in self._exact(w)

    def viable_prefix(self, w: bytes) -> bool:
        """Is ``w`` a prefix of some sentence? (All symbols are productive after normalization.)"""
        g = self.g
        n = len(w)
        exact = self._exact(w)
        prefix: set = set()  # (sym, i): sym derives some s with w[i:] a prefix of s
        for t, dfa in enumerate(g.dfas):
            for i in range(n + 1):
                if _dfa_walk(dfa, w[i:]) >= 0:
                    prefix.add((~t, i))
        for nt in range(len(g.nonterminals)):
            prefix.add((nt, n))
        changed = True
        while changed:
            changed = False
            for rule in g.rules:
                for i in range(n + 1):
                    if (rule.lhs, i) in prefix:
                        continue
                    ends = {i}
                    ok = False
                    for sym in rule.rhs:
                        if any((sym, e) in prefix for e in ends):
                            ok = True
                            break
                        ends = {j for e in ends for j in range(e, n + 1) if (sym, e, j) in exact}
                        if not ends:
                            break
                    if not ok and n in ends:
                        ok = True
                    if ok:
                        prefix.add((rule.lhs, i))
                        changed = True
        return (g.start, 0) in prefix
