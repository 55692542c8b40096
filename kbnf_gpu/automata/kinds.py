"""The KBNF terminal kinds, as transformations of a terminal's byte DFA.

The meanings below were established by probing the ``kbnf`` 0.4.2 package
(the oracle) with ``start ::= <terminal> "\\x01";`` and feeding bytes one by
one; ``tests/test_automata.py`` re-checks them differentially.

* ``#e"r"`` (EARLY_END): the non-empty strings of L(r) with no proper
  non-empty prefix in L(r): the lexeme ends at the first (non-empty) match.
  The empty string never counts, so ``#e"a*"`` is exactly ``a`` and
  ``#e""`` is the empty language.
* ``#ex"r"`` (COMPLEMENT): the non-empty byte strings that contain no
  substring in L(r), over all 256 bytes (invalid UTF-8 included; ``r`` itself
  matches UTF-8 text). If L(r) holds the empty string nothing qualifies, so
  ``#ex"a*"`` is the empty language.
* ``#substrs"s"`` (SUBSTRINGS): every byte substring of ``s``, the empty
  string and partial UTF-8 characters included. Generalized here to the
  factor language of any L(r).
"""
from __future__ import annotations

import numpy as np

from .dfa import ByteDFA, StateLimit, determinize, empty_dfa, finalize, from_table
from .nfa import NFA


def early_end(dfa: ByteDFA) -> ByteDFA:
    """Strings of L ending at their first non-empty match (KBNF ``#e``)."""
    n = dfa.n_states
    if n == 0:
        return dfa
    t = np.array(dfa.transitions, dtype=np.int64)
    t[dfa.accepting] = -1
    # a fresh, non-accepting copy of the start state: the empty prefix never ends the lexeme
    t = np.vstack([t, np.array(dfa.transitions[0], dtype=np.int64)[None, :]])
    accepting = np.append(dfa.accepting, False)
    return from_table(t, accepting, start=n)


def complement(dfa: ByteDFA, max_states: int, nfa_limit: int) -> ByteDFA:
    """Non-empty byte strings containing no substring in L (KBNF ``#ex``)."""
    if dfa.nullable:
        return empty_dfa()
    nfa = NFA(nfa_limit)
    s = nfa.new_state()
    nfa.edges[s].append((0, 255, s))
    fs, fe = nfa.dfa(dfa)
    nfa.link(s, fs)
    # search DFA for "some prefix ends with a match"
    table, accepting, class_of_byte = determinize(nfa, s, fe, max_states)
    n, k = table.shape
    t = np.where(accepting[np.maximum(table, 0)] | (table < 0), -1, table)
    t[accepting] = -1
    t = np.vstack([t, t[0:1]])
    keep = np.append(~accepting, False)  # the fresh start copy rejects the empty string
    return finalize(t, keep, class_of_byte, start=n)


def substrings(dfa: ByteDFA, max_states: int, nfa_limit: int) -> ByteDFA:
    """Every substring of every string of L, the empty one included (KBNF ``#substrs``)."""
    if dfa.n_states == 0:
        return dfa
    nfa = NFA(nfa_limit)
    s, e = nfa.dfa(dfa, all_initial=True, all_final=True)
    table, accepting, class_of_byte = determinize(nfa, s, e, max_states)
    return finalize(table, accepting, class_of_byte)


def literal_substrings(data: bytes, max_states: int) -> ByteDFA:
    """``substrings`` of one literal in linear time: the suffix automaton, all states accepting."""
    length = [0]
    link = [-1]
    nxt: list[dict[int, int]] = [{}]
    last = 0
    for c in data:
        cur = len(length)
        length.append(length[last] + 1)
        link.append(0)
        nxt.append({})
        p = last
        while p != -1 and c not in nxt[p]:
            nxt[p][c] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][c]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(length)
                length.append(length[p] + 1)
                link.append(link[q])
                nxt.append(dict(nxt[q]))
                while p != -1 and nxt[p].get(c) == q:
                    nxt[p][c] = clone
                    p = link[p]
                link[q] = link[cur] = clone
        last = cur
        if len(length) > max_states:
            raise StateLimit(max_states)
    table = np.full((len(nxt), 256), -1, dtype=np.int64)
    for state, edges in enumerate(nxt):
        for byte, target in edges.items():
            table[state, byte] = target
    return from_table(table, np.ones(len(nxt), dtype=bool))
