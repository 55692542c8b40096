"""Pattern languages the piecewise construction of ``_pattern`` cannot reach:
lookaheads nested in groups, alternations, repetitions or after ``$``;
lookbehinds; anchors inside repetitions; word boundaries.

The automata layer already determinizes regexes with anchors and lookarounds
exactly (``automata.guarded``: threads with lookahead obligations, lookbehind
trackers), but over bytes. A pattern's character sets split the code space
into a handful of *symbols* (code points that no set tells apart, as in
``_fsm.alphabet``), so each symbol is written as one pseudo-byte, the byte
layer builds the DFA of the search language, and that DFA is read back over
the symbols and turned into an expression (``_fsm.as_expr``: a regex, or the
automaton itself where any regex would be large). Exact, with the same
approximations per set as ``_pattern`` (swapped inside negated lookarounds,
where matching less means accepting more).
"""
from __future__ import annotations

from ... import ir
from ...automata.build import regexpr_to_dfa
from ...automata.regex import BOS, EOL, EOS, Anchor, Look, word_boundary
from ...errors import CompileBudgetExceeded, GrammarError
from . import _charset as cs
from ._fsm import DFA, alphabet, as_expr, minimize
from ._pattern import ASCII_WORD, walk
from ._rx import Rx, alt

MAX_LOOKAROUND_STATES = 4096  # a pattern's automaton (each state costs a subset of lookahead obligations)
_NEWLINE = 10  # the byte layer's ``$`` (EOL) reads byte 10 as "\n": the symbol {"\n"} must be that byte


def automaton_language(tree: tuple, over: bool, error) -> Rx:
    """``search_language`` of any pattern tree (``error(message)`` builds the ``PatternError`` to raise).

    A word boundary is exact in each reading of its ``\\w`` (ECMA-262's ASCII one, Python's Unicode
    one) but monotone in neither, so ``under`` is what both readings accept (one automaton: the
    first reading as a lookahead over the whole string) and ``over`` what either does."""
    if not any(node[0] == "wordb" for node, _ in walk(tree)):
        return _language(tree, over, (), error)
    # a reading of word boundaries: (\w, whether \B holds in the empty string)
    ecma, python = (ASCII_WORD, True), (cs.unicode_class("w"), False)
    if over:
        return alt(_language(tree, True, (ecma,), error), _language(tree, True, (python,), error))
    return _language(tree, False, (ecma, python), error)


def _language(tree: tuple, over: bool, words: tuple, error) -> Rx:
    """One automaton; ``words``: the readings of a word boundary's ``\\w`` that must all match (none
    without a word boundary)."""
    labels = [w for w, _ in words] + [node[2] if o else node[1] for node, o in walk(tree, over) if node[0] == "set"]
    symbols, of_label = alphabet([*labels, cs.single(_NEWLINE), cs.ANY])
    if len(symbols) > 256:
        raise error(f"lookarounds over {len(symbols)} distinct character sets (at most 256)")
    nl = symbols.index(cs.single(_NEWLINE))
    free = iter(b for b in range(256) if b != _NEWLINE)
    byte_of_symbol = [_NEWLINE if s == nl else next(free) for s in range(len(symbols))]
    class_memo: dict[cs.Ranges, ir.ByteClass] = {}

    def byte_class(ranges: cs.Ranges) -> ir.ByteClass:
        hit = class_memo.get(ranges)
        if hit is None:
            hit = class_memo[ranges] = ir.ByteClass(cs.norm([(byte_of_symbol[s], byte_of_symbol[s]) for s in of_label[ranges]]))
        return hit

    def node(n: tuple, o: bool, word: tuple):
        kind = n[0]
        if kind == "set":
            return byte_class(n[2] if o else n[1])
        if kind == "cat":
            return ir.Concat(tuple(node(x, o, word) for x in n[1]))
        if kind == "alt":
            return ir.Alternation(tuple(node(x, o, word) for x in n[1]))
        if kind == "rep":
            return ir.Repeat(node(n[1], o, word), n[2], n[3])
        if kind == "bol":
            return Anchor(BOS)
        if kind == "eol":  # over: Python's $ (the end, or before a final "\n"); under: the very end
            return Anchor(EOL if o else EOS)
        if kind == "wordb":
            return word_boundary(byte_class(word[0]), not n[1], word[1], byte_class(cs.ANY))
        return Look(node(n[2], o != n[1], word), behind=n[4], negated=n[1])

    any_star = ir.Repeat(byte_class(cs.ANY), 0, None)
    readings = [ir.Concat((any_star, node(tree, over, word), any_star)) for word in words or [()]]
    # every reading but the last as a lookahead over the whole string from its start
    root = ir.Concat((*(Look(ir.Concat((r, Anchor(EOS))), behind=False, negated=False) for r in readings[:-1]),
                      readings[-1]))
    try:
        dfa = regexpr_to_dfa(root, max_states=MAX_LOOKAROUND_STATES)
        trans = dfa.transitions[:, byte_of_symbol].tolist() if dfa.n_states else []
        return as_expr(minimize(DFA(symbols, trans, dfa.accepting.tolist())) if trans else None)
    except CompileBudgetExceeded:
        raise
    except GrammarError as e:  # too many states, a regex too large, or a lookahead inside a lookbehind
        raise error(str(e).split(": ", 1)[-1]) from None
