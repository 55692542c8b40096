"""IR grammar → BNF over byte-DFA terminals.

Steps: merge rules by name and check references; desugar EBNF into BNF (left
recursion for repetition); build each terminal's byte DFA; drop unproductive
and unreachable rules; fuse regular sub-grammars into single terminals so
char-level grammars (GBNF, Lark) parse a few large lexemes instead of one
Earley step per character.

Symbols in BNF rules are ints: ``s >= 0`` is nonterminal ``s``; ``s < 0`` is
terminal ``~s`` (``-1`` is terminal 0).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from . import ir
from .automata import ByteDFA, build_dfa, dfa_concat, dfa_literal, dfa_literal_union, dfa_repeat, dfa_union
from .automata.build import trie_size
from .budget import compile_budget, current_budget
from .errors import DFATooLarge, GrammarError

AUGMENTED_START = "<start>"
CHAR_LEVEL_PART_STATES = 8


@dataclass(frozen=True)
class NormalizeConfig:
    """Bounds for compilation.

    Fusion bounds a fused terminal's DFA: ``fuse_max_states`` for char-level
    sub-grammars (every part a DFA of at most ``CHAR_LEVEL_PART_STATES``
    states: fusing them saves one Earley step per character, and unfused they
    make most tokens cross several lexemes), ``fuse_max_states_lexemes`` when
    the parts are already multi-character lexemes (little runtime gain, and a
    big fused DFA costs token-table time that sharing its parts would not).
    """

    max_dfa_states: int = 10_000
    fuse: bool = True
    fuse_max_states: int = 256
    fuse_max_states_lexemes: int = 64


@dataclass(frozen=True, slots=True)
class BnfRule:
    lhs: int
    rhs: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class BnfGrammar:
    """A cleaned BNF grammar. Rule 0 is ``<start> ::= start`` (the augmented start)."""

    nonterminals: tuple[str, ...]
    terminals: tuple[ir.Terminal, ...]
    dfas: tuple[ByteDFA, ...]
    rules: tuple[BnfRule, ...]
    start: int  # the augmented start nonterminal; rules[0] is its only rule
    end_mode: str = "eos"
    nullable: frozenset[int] = field(default=frozenset())

    def terminal_name(self, t: int) -> str:
        term = self.terminals[t]
        return term.name or repr(term.expr)

    def rules_by_lhs(self) -> dict[int, list[int]]:
        by_lhs: dict[int, list[int]] = defaultdict(list)
        for i, r in enumerate(self.rules):
            by_lhs[r.lhs].append(i)
        return by_lhs


def term_sym(t: int) -> int:
    return ~t


def is_terminal(sym: int) -> bool:
    return sym < 0


class _Builder:
    """Mutable workspace of the desugaring pass (local to ``normalize``)."""

    def __init__(self, grammar: ir.Grammar, config: NormalizeConfig) -> None:
        self.grammar = grammar
        self.config = config
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.expanded = 0  # symbols added by counted repetition (checked against max_expansion)
        self.fusion_work = RULE_FUSION_BUILDS  # DFA constructions left to rule fusion
        self.run_fusion_work = RUN_FUSION_CONCATS  # concatenations left to run fusion (literal pairs are free)
        self.rules: list[tuple[int, tuple[int, ...]]] = []
        self.terminals: list[ir.Terminal] = []
        self.terminal_index: dict[ir.Terminal, int] = {}
        self.dfas: list[ByteDFA] = []
        self.helper_cache: dict[tuple, int] = {}
        self.chains: dict[int, list[int]] = {}  # item symbol -> O_1, O_2, ... (``optional_chain``)

    def nonterminal(self, name: str) -> int:
        if name not in self.index:
            self.index[name] = len(self.names)
            self.names.append(name)
        return self.index[name]

    def helper(self, base: str) -> int:
        name = f"{base}#{len(self.names)}"
        return self.nonterminal(name)

    def terminal(self, term: ir.Terminal) -> int:
        t = self.terminal_index.get(term)
        if t is None:
            current_budget().tick("building terminal automata")
            current_budget().check("max_terminals", len(self.terminals) + 1, "distinct terminals",
                                   **ir.where(term.span))
            dfa = build_dfa(term, max_states=self.config.max_dfa_states)
            t = len(self.terminals)
            self.terminal_index[term] = t
            self.terminals.append(term)
            self.dfas.append(dfa)
        return t

    def fused_terminal(self, dfa: ByteDFA, name: str) -> int:
        term = ir.Terminal(ir.Pattern(f"<fused:{dfa.fingerprint}>"), name=name)
        t = self.terminal_index.get(term)
        if t is None:
            t = len(self.terminals)
            self.terminal_index[term] = t
            self.terminals.append(term)
            self.dfas.append(dfa)
        return t

    # -- desugaring: iterative over the expression tree --------------------

    def alternatives(self, expr: ir.Expr, owner: str) -> list[tuple[int, ...]]:
        """The BNF alternatives of ``expr``; nested constructs become helper rules."""
        if isinstance(expr, ir.Choice):
            return [self.sequence(alt, owner) for alt in _flatten_choice(expr)]
        return [self.sequence(expr, owner)]

    def sequence(self, expr: ir.Expr, owner: str) -> tuple[int, ...]:
        # most alternatives are flat sequences of terminals and references (a JSON Schema's: all, 110,000 of
        # them for a schema with long threaded strings): those are read here, without a call per symbol
        out: list[int] = []
        for item in expr.items if type(expr) is ir.Sequence else (expr,):
            kind = type(item)
            if kind is ir.Terminal:
                t = self.terminal_index.get(item)
                out.append(~(self.terminal(item) if t is None else t))
            elif kind is ir.Ref:
                fused = self.fused_rules.get(item.name)
                out.append(self.index[item.name] if fused is None else ~fused)
            else:
                return tuple([self.symbol(x, owner) for x in _flatten_sequence(expr)])
        return tuple(out)

    def symbol(self, expr: ir.Expr, owner: str) -> int:
        """One BNF symbol standing for ``expr`` (creating helper rules as needed).

        Written with an explicit work stack: a helper rule's body is queued,
        not recursed into, so nesting depth never reaches Python's stack.
        """
        if isinstance(expr, ir.Terminal):
            return term_sym(self.terminal(expr))
        if isinstance(expr, ir.Ref):
            fused = self.fused_rules.get(expr.name)
            if fused is not None:
                return term_sym(fused)
            return self.index[expr.name]
        dfa = self.regular_dfa(expr)
        if dfa is not None:
            return term_sym(self.fused_terminal(dfa, owner))
        key = (expr, owner)
        cached = self.helper_cache.get(key)
        if cached is not None:
            return cached
        nt = self.helper(owner)
        self.helper_cache[key] = nt
        self.pending.append((nt, expr, owner))
        return nt

    def expand_helper(self, nt: int, expr: ir.Expr, owner: str) -> None:
        if isinstance(expr, ir.Repetition):
            lo, hi = expr.min, expr.max
            if lo < 0 or (hi is not None and hi < lo):
                raise GrammarError(f"bad repetition bounds {{{lo},{hi}}}", rule=owner)
            item = self.symbol(expr.item, owner)
            # symbols and rules this repetition adds: its prefix, and the links of its item's chain it is the
            # first to reach (``optional_chain``); an unbounded one, two rules
            links = 1 if hi is None else max(0, hi - lo - len(self.chains.get(item, ())))
            budget = current_budget()
            budget.check("max_expansion", self.expanded + lo + 2 * links, f"repetition {{{lo},{hi}}}", rule=owner)
            budget.check("max_rules", len(self.rules) + 1 + links, f"repetition {{{lo},{hi}}}", rule=owner)
            self.expanded += lo + 2 * links
            if item < 0 and self.blocked_repetition(nt, expr, item, owner):
                return
            prefix = (item,) * lo
            if hi is None:
                if lo == 0:
                    # X* ::= ε | X* X   (left recursion keeps the Earley state small)
                    self.rules.append((nt, ()))
                    self.rules.append((nt, (nt, item)))
                else:
                    star = self.symbol(ir.Repetition(expr.item, 0, None), owner)
                    self.rules.append((nt, prefix + (star,)))
            elif hi == lo:
                self.rules.append((nt, prefix))
            else:
                # X{lo,hi} ::= X^lo O_{hi-lo};  O_k ::= ε | X O_{k-1}
                tail = self.optional_chain(item, hi - lo, owner)
                self.rules.append((nt, prefix + (tail,)))
            return
        for alt in self.alternatives(expr, owner):
            self.rules.append((nt, alt))

    def blocked_repetition(self, nt: int, expr: ir.Repetition, item: int, owner: str) -> bool:
        """``nt ::= X{lo,hi}`` for a terminal ``X`` in blocks of ``B`` copies fused into one lexeme; False if it
        does not pay (fusion off, counts below two blocks, or not even two copies fit ``fuse_max_states``).

        Too big to fuse whole (``char{1,100}``: 100 x 14 states), the repetition would otherwise be ``hi``
        separate lexemes: a token of k characters completes k - 1 of them, so nearly every token is a DEEP
        candidate checked by stepping the parser, at every count (a new parser context each). In blocks, a
        token crosses at most one block boundary (CROSS rows) unless it is longer than a block. The language
        is unchanged: ``X{lo,hi} = X^lo X{0,hi-lo}`` with ``X^lo = T(B)^(lo//B) T(lo%B)`` and
        ``O(n) ::= ε | T(1..min(n,B-1)) | T(B) O(n-B)`` (no count is derived twice).
        """
        lo, hi = expr.min, expr.max
        if not self.config.fuse or (hi if hi is not None else lo) < 2 * BLOCK_MIN:
            return False
        x = self.dfas[~item]
        limit = self.config.fuse_max_states
        size = max(BLOCK_MIN, min(limit // max(x.n_states - 1, 1), hi if hi is not None else lo))
        while size >= BLOCK_MIN:
            full = _within(limit, lambda: dfa_repeat(x, size, size, max_states=limit))
            if full is not None:
                break
            size //= 2
        else:
            return False
        memo: dict[tuple[int, int], int] = {}
        name = self.terminals[~item].name or owner

        def block(a: int, b: int) -> int:
            """The fused terminal of ``X{a,b}`` (``b <= size``, so it fits)."""
            if (a, b) == (1, 1):
                return item
            if (a, b) not in memo:
                dfa = full if (a, b) == (size, size) else dfa_repeat(x, a, b, max_states=limit)
                memo[(a, b)] = term_sym(self.fused_terminal(dfa, f"{name}{{{a},{b}}}"))
            return memo[(a, b)]

        exact = [block(size, size)] * (lo // size) + ([block(lo % size, lo % size)] if lo % size else [])
        if hi is None:
            self.rules.append((nt, (*exact, self.symbol(ir.Repetition(expr.item, 0, None), owner))))
            return True
        tail: int | None = None
        rest = hi - lo
        # O(n) from the innermost block outwards: O(r) for the remainder r = rest % size, then O(r + size), ...
        for n in range(rest % size, rest + 1, size):
            if n == 0:
                continue
            helper = self.helper(owner)
            self.rules.append((helper, ()))
            self.rules.append((helper, (block(1, min(n, size - 1)),)))
            if n >= size:
                self.rules.append((helper, (block(size, size),) if tail is None else (block(size, size), tail)))
            tail = helper
        self.rules.append((nt, (*exact,) if tail is None else (*exact, tail)))
        return True

    def optional_chain(self, item: int, count: int, owner: str) -> int:
        """``O_count``: 0 to ``count`` copies of ``item``, ``O_k ::= ε | item O_(k-1)``. One chain per item,
        extended on demand and shared by every count: a threaded string's repetitions of one chunk up to
        ``maxLength / C`` chunks, one per count it can stop at, are ``count`` rules in all, not ``count`` each."""
        chain = self.chains.setdefault(item, [])
        while len(chain) < count:
            nt = self.helper(owner)
            self.rules.append((nt, ()))
            self.rules.append((nt, (item, chain[-1]) if chain else (item,)))
            chain.append(nt)
        return chain[count - 1]

    # -- fusion of regular sub-grammars -------------------------------------

    def regular_dfa(self, root: ir.Expr) -> ByteDFA | None:
        """The DFA of ``root``'s language if it is regular and small enough to fuse, else ``None``.

        Regular means: only terminals and references to fused rules. Post-order
        over the expression tree with an explicit stack; results memoized per node.
        """
        if not self.config.fuse:
            return None
        memo = self.regular_memo
        stack: list[tuple[ir.Expr, bool]] = [(root, False)]
        while stack:
            expr, children_done = stack.pop()
            if id(expr) in memo:
                continue
            if isinstance(expr, ir.Terminal):
                memo[id(expr)] = (expr, self.dfas[self.terminal(expr)])
                continue
            if isinstance(expr, ir.Ref):
                t = self.fused_rules.get(expr.name)
                memo[id(expr)] = (expr, None if t is None else self.dfas[t])
                continue
            if not children_done:
                words = _literal_words(expr)
                if words is not None:
                    # a union of literals, fused, is never bigger than its parts (its trie, minimized), and one
                    # scan item stands for all; fused up to a lexeme's limit, before (and instead of) building
                    # each literal's DFA. Unfused, 5,000 keywords in a loop made 5,000 x 5,000 follower pairs: 18 s
                    limit = self.config.max_dfa_states
                    if self.fusion_work > 0 and trie_size(words) <= limit:
                        self.fusion_work -= 1
                        dfa = _within(limit, lambda: dfa_literal_union(words, max_states=limit))
                        if dfa is not None:
                            memo[id(expr)] = (expr, dfa)
                            continue
                stack.append((expr, True))
                stack.extend((c, False) for c in ir.children(expr))
                continue
            parts = [memo[id(c)][1] for c in ir.children(expr)]
            dfa = None
            regular = all(p is not None for p in parts)
            char_level = regular and all(p.n_states <= CHAR_LEVEL_PART_STATES for p in parts)
            limit = self.config.fuse_max_states if char_level else self.config.fuse_max_states_lexemes
            # a cheap size estimate first: fusing is only worth trying when the parts are small. A union
            # is often far smaller than its parts (300 one-character alternatives: 3 states), and the
            # subset construction stops at ``limit`` states, so it may try from larger parts
            budget = (UNION_PARTS_FACTOR if isinstance(expr, ir.Choice) else 4) * limit
            if regular and self.fusion_work > 0 and sum(p.n_states for p in parts) <= budget \
                    and _literal_words(expr) is None:  # a union of literals that did not fuse above: not here either
                self.fusion_work -= 1
                if isinstance(expr, ir.Sequence):
                    dfa = _within(limit, lambda: dfa_concat(parts, max_states=limit) if parts else dfa_literal(b""))
                elif isinstance(expr, ir.Choice):
                    dfa = _within(limit, lambda: dfa_union(parts, max_states=limit))
                else:
                    dfa = _within(limit, lambda: dfa_repeat(parts[0], expr.min, expr.max, max_states=limit))
            memo[id(expr)] = (expr, dfa)  # the expr is kept alive so its id stays unique
        return memo[id(root)][1]

    def fuse_rules(self) -> None:
        """Fuse every rule whose whole language is regular (bottom-up).

        Non-recursive rules qualify when all they reference is regular. A rule
        whose only recursion is on itself at the ends of its alternatives
        (``R ::= a R | R b | c``, as GBNF writes strings and lists) is regular
        too: ``R = a* c b*``.
        """
        if not self.config.fuse:
            return
        bodies: dict[int, list[ir.Expr]] = defaultdict(list)
        for rule in self.grammar.rules:
            bodies[self.index[rule.name]].append(rule.body)
        by_lhs = {nt: [tuple(self.index[r.name] for b in bs for r in ir.references(b))] for nt, bs in bodies.items()}
        for nt, self_recursive in _singleton_sccs_postorder(by_lhs):
            exprs = bodies[nt]
            body = exprs[0] if len(exprs) == 1 else ir.Choice(tuple(exprs))
            if self_recursive:
                body = _linear_recursion_body(self.names[nt], body)
                if body is None:
                    continue
            self.regular_memo_roots.append(body)
            try:
                dfa = self.regular_dfa(body)
            except GrammarError as err:
                if err.rule is None:
                    err.rule = self.names[nt]
                    err.args = (err._format(),)
                raise
            if dfa is not None:
                self.fused_rules[self.names[nt]] = self.fused_terminal(dfa, self.names[nt])

    def build(self) -> None:
        grammar = self.grammar
        if not grammar.rules:
            raise GrammarError("the grammar has no rules")
        for rule in grammar.rules:
            self.nonterminal(rule.name)
        if grammar.start not in self.index:
            raise self.undefined_reference() or GrammarError(f"no rule named '{grammar.start}' (the start nonterminal)")
        try:
            self.desugar()
        except Exception:
            # an undefined reference is the error reported first, with its position; desugaring meets every
            # reference (a KeyError at an undefined one), so a grammar is searched for one only when it failed
            # (the search walks every rule: 55 ms of a 110,000-rule schema)
            undefined = self.undefined_reference()
            if undefined is not None:
                raise undefined from None
            raise

    def undefined_reference(self) -> GrammarError | None:
        """The error for the first reference, in rule order, to a name no rule defines (None: there is none)."""
        for rule in self.grammar.rules:
            ref = next((ref for ref in ir.references(rule.body) if ref.name not in self.index), None)
            if ref is not None:
                return GrammarError(f"undefined nonterminal '{ref.name}'", **ir.where(ref.span), rule=rule.name)
        return None

    def desugar(self) -> None:
        grammar = self.grammar
        self.fused_rules: dict[str, int] = {}
        self.regular_memo: dict[int, tuple] = {}
        self.regular_memo_roots: list[ir.Expr] = []
        self.fuse_rules()
        self.nonterminal(AUGMENTED_START)
        self.rules.append((self.index[AUGMENTED_START], (self.index[grammar.start],)))
        self.pending: list[tuple[int, ir.Expr, str]] = []
        for name, t in self.fused_rules.items():
            self.rules.append((self.index[name], (term_sym(t),)))
        for rule in grammar.rules:
            if rule.name in self.fused_rules:
                continue
            nt = self.index[rule.name]
            try:
                for alt in self.alternatives(rule.body, rule.name):
                    self.rules.append((nt, alt))
                while self.pending:
                    self.expand_helper(*self.pending.pop())
                current_budget().check("max_rules", len(self.rules), "BNF rules", rule=rule.name)
            except DFATooLarge:
                raise
            except GrammarError as err:
                if err.rule is None:
                    err.rule = rule.name
                    err.args = (err._format(),)
                raise


BLOCK_MIN = 4  # copies per block at least, else a counted repetition stays one lexeme per copy
MAX_RUN = 16  # terminals fused into one run at most
# Run fusion builds at most this many concatenated DFAs per grammar (a few ms each): the punctuation of a
# JSON grammar needs a dozen; a large JSON Schema (one run per property) would otherwise spend seconds here.
RUN_FUSION_CONCATS = 64
# Rule fusion builds at most this many DFAs per grammar: a GBNF grammar's char-level rules need tens; a large
# JSON Schema's objects would otherwise try hundreds that rarely pay (its lexemes are already whole strings).
RULE_FUSION_BUILDS = 256
UNION_PARTS_FACTOR = 64  # a union is tried while its parts have at most this many times the fusion limit's states


def _within(limit: int, make: Callable[[], ByteDFA]) -> ByteDFA | None:
    """The DFA ``make()`` builds if it is not empty and has at most ``limit`` states, else None (fusion declined)."""
    try:
        dfa = make()
    except DFATooLarge:
        return None
    return dfa if dfa.n_states <= limit and not dfa.is_empty() else None


def _is_literal(term: ir.Terminal) -> bool:
    return term.kind == ir.TerminalKind.PLAIN and isinstance(term.expr, ir.Literal)


def _literal_words(expr: ir.Expr) -> list[bytes] | None:
    """The texts of a choice whose every branch is a literal terminal, else ``None``."""
    if isinstance(expr, ir.Choice) and all(isinstance(c, ir.Terminal) and _is_literal(c) for c in expr.alternatives):
        return [c.expr.value for c in expr.alternatives]
    return None


def _fuse_terminal_runs(b: _Builder, rules: list[tuple[int, tuple[int, ...]]]) -> list[tuple[int, tuple[int, ...]]]:
    """Replace runs of adjacent terminals in a rule (``"," ws`` or ``string ws ":" ws``) by one terminal.

    Fewer lexeme boundaries mean fewer Earley sets per document and fewer
    tokens that cross two or more lexemes (whose masks need exact checks), and
    the concatenated DFA of a few small terminals is cheap. A run is fused
    greedily, left to right, while the DFA stays within ``fuse_max_states``.
    """
    limit = b.config.fuse_max_states
    memo: dict[tuple[int, int], int | None] = {}

    def fused(left: int, right: int) -> int | None:
        """The terminal of ``left`` then ``right`` (``left`` may itself be a fused run), or None past the limit."""
        key = (left, right)
        if key not in memo:
            current_budget().tick("fusing terminal runs")
            lt, rt = b.terminals[left], b.terminals[right]
            if _is_literal(lt) and _is_literal(rt):  # "a" "b" is "ab": a chain, no automaton work
                memo[key] = b.terminal(ir.Terminal(ir.Literal(lt.expr.value + rt.expr.value)))
                return memo[key]
            a, c = b.dfas[left], b.dfas[right]
            dfa = None
            if a.n_states + c.n_states <= 4 * limit and b.run_fusion_work > 0:
                b.run_fusion_work -= 1
                dfa = _within(limit, lambda: dfa_concat((a, c), max_states=limit))
            name = f"{lt.name or '?'} {rt.name or '?'}"
            memo[key] = None if dfa is None else b.fused_terminal(dfa, name)
        return memo[key]

    out = []
    for lhs, rhs in rules:
        new: list[int] = []
        run: list[int] = []  # terminals of the current run, fused so far into run_term
        run_term: int | None = None
        for sym in rhs + (0,):  # a nonterminal sentinel flushes the last run
            if sym < 0 and run:
                candidate = fused(run_term, ~sym) if len(run) < MAX_RUN else None
                if candidate is not None:
                    run.append(~sym)
                    run_term = candidate
                    continue
            if run:
                new.append(term_sym(run_term if run_term is not None else run[0]))
                run, run_term = [], None
            if sym < 0:
                run, run_term = [~sym], ~sym
            else:
                new.append(sym)
        out.append((lhs, tuple(new[:-1])))
    return out


def _flatten_choice(expr: ir.Choice) -> list[ir.Expr]:
    out: list[ir.Expr] = []
    stack: list[ir.Expr] = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Choice):
            stack.extend(reversed(e.alternatives))
        else:
            out.append(e)
    return out


def _flatten_sequence(expr: ir.Expr) -> list[ir.Expr]:
    out: list[ir.Expr] = []
    stack: list[ir.Expr] = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Sequence):
            stack.extend(reversed(e.items))
        elif isinstance(e, ir.Repetition) and e.min == 1 and e.max == 1:
            stack.append(e.item)
        else:
            out.append(e)
    return out


# ----------------------------------------------------------------- cleanup


def _productive(rules: list[tuple[int, tuple[int, ...]]], empty_terms: set[int]) -> set[int]:
    """Nonterminals that derive some string: a worklist over rules, linear in the grammar's size."""
    waiting: list[int] = []  # per rule: nonterminal occurrences not yet known productive
    users: dict[int, list[int]] = defaultdict(list)  # nonterminal -> rules that mention it (once per occurrence)
    productive: set[int] = set()
    empty_syms = {~t for t in empty_terms}
    # a rule of terminals alone makes its left side productive: its other rules need not wait for anything
    # (a threaded string's rule and its tail)
    direct = {lhs for lhs, rhs in rules if (not rhs or max(rhs) < 0) and (not empty_syms or empty_syms.isdisjoint(rhs))}
    ready = list(direct)
    for i, (lhs, rhs) in enumerate(rules):
        if lhs in direct or empty_syms and not empty_syms.isdisjoint(rhs):
            waiting.append(-1)  # productive already, or never by this rule
            continue
        nts = [s for s in rhs if s >= 0]
        waiting.append(len(nts))
        for s in nts:
            users[s].append(i)
    while ready:
        nt = ready.pop()
        if nt in productive:
            continue
        productive.add(nt)
        for i in users.pop(nt, ()):
            waiting[i] -= 1
            if waiting[i] == 0:
                ready.append(rules[i][0])
    return productive


def _reachable(rules: list[tuple[int, tuple[int, ...]]], start: int) -> set[int]:
    by_lhs: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for lhs, rhs in rules:
        by_lhs[lhs].append(rhs)
    seen = {start}
    stack = [start]
    while stack:
        nt = stack.pop()
        for rhs in by_lhs[nt]:
            for s in rhs:
                if s >= 0 and s not in seen:
                    seen.add(s)
                    stack.append(s)
    return seen


def nullable_nonterminals(rules, dfas) -> frozenset[int]:
    """Worklist fixpoint, linear in the grammar (a pass-until-stable loop is quadratic on rule chains)."""
    nullable: set[int] = set()
    missing: list[int] = []  # per rule: its nonterminals not yet known nullable (-1: a non-nullable terminal)
    users: dict[int, list[int]] = defaultdict(list)
    work: list[int] = []
    solid = {~t for t, dfa in enumerate(dfas) if not dfa.nullable}  # terminals that read at least a byte
    for i, (lhs, rhs) in enumerate(rules):
        if not solid.isdisjoint(rhs):
            missing.append(-1)
            continue
        nts = [s for s in rhs if s >= 0]
        missing.append(len(nts))
        for s in nts:
            users[s].append(i)
        if not nts and lhs not in nullable:
            nullable.add(lhs)
            work.append(lhs)
    while work:
        for i in users.get(work.pop(), ()):
            missing[i] -= 1
            lhs = rules[i][0]
            if missing[i] == 0 and lhs not in nullable:
                nullable.add(lhs)
                work.append(lhs)
    return frozenset(nullable)


# ------------------------------------------------------------------ fusion


def _linear_recursion_body(name: str, body: ir.Expr) -> ir.Expr | None:
    """``R ::= a R | R b | c`` (R only at the ends) as the equivalent ``a* c b*``; ``None`` if not of that form."""
    rights: list[ir.Expr] = []
    lefts: list[ir.Expr] = []
    bases: list[ir.Expr] = []
    alternatives = _flatten_choice(body) if isinstance(body, ir.Choice) else [body]
    for alt in alternatives:
        items = _flatten_sequence(alt)
        count = sum(1 for ref in ir.references(alt) if ref.name == name)
        if count == 0:
            bases.append(alt)
        elif count == 1 and isinstance(items[-1], ir.Ref) and items[-1].name == name:
            rights.append(ir.Sequence(tuple(items[:-1])))
        elif count == 1 and isinstance(items[0], ir.Ref) and items[0].name == name:
            lefts.append(ir.Sequence(tuple(items[1:])))
        else:
            return None
    if not bases:
        return None
    parts: list[ir.Expr] = []
    if rights:
        parts.append(ir.Repetition(ir.Choice(tuple(rights)), 0, None))
    parts.append(ir.Choice(tuple(bases)))
    if lefts:
        parts.append(ir.Repetition(ir.Choice(tuple(lefts)), 0, None))
    return ir.Sequence(tuple(parts))


def _singleton_sccs_postorder(by_lhs: dict[int, list[tuple[int, ...]]]) -> list[tuple[int, bool]]:
    """``(nonterminal, refers to itself)`` in dependency post-order, for those on no longer cycle (Tarjan, iterative)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    order: list[tuple[int, bool]] = []
    counter = 0
    nodes = list(by_lhs.keys())
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter([s for rhs in by_lhs[root] for s in rhs if s >= 0]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for child in it:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter([s for rhs in by_lhs.get(child, ()) for s in rhs if s >= 0])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) == 1:
                    order.append((node, any(node in rhs for rhs in by_lhs[node])))
    return order


# -------------------------------------------------------------------- entry


def normalize(grammar: ir.Grammar, config: NormalizeConfig | None = None) -> BnfGrammar:
    """Desugar, build DFAs, clean up and fuse; the result is ready for the Earley parser.

    Runs under the compilation's budget, or, called on its own, under one budget of the default limits."""
    with compile_budget():
        return _normalized(grammar, config or NormalizeConfig())


def _normalized(grammar: ir.Grammar, config: NormalizeConfig) -> BnfGrammar:
    b = _Builder(grammar, config)
    b.build()
    start = b.index[AUGMENTED_START]
    rules = list(dict.fromkeys(b.rules))  # drop duplicate alternatives, keep order
    if config.fuse:
        rules = list(dict.fromkeys(_fuse_terminal_runs(b, rules)))
    empty_terms = {t for t, d in enumerate(b.dfas) if d.is_empty()}
    productive = _productive(rules, empty_terms)
    user_start = b.index[grammar.start]
    if user_start not in productive:
        raise GrammarError(
            f"the start nonterminal '{grammar.start}' derives no finite string (unproductive)",
            rule=grammar.start,
        )
    # symbols a kept rule may not use: unproductive nonterminals and empty terminals (mostly none)
    barred = {~t for t in empty_terms} | {nt for nt in range(len(b.names)) if nt not in productive}
    rules = [(lhs, rhs) for lhs, rhs in rules if lhs in productive and (not barred or barred.isdisjoint(rhs))]
    reachable = _reachable(rules, start)
    rules = [(lhs, rhs) for lhs, rhs in rules if lhs in reachable]
    # renumber nonterminals and terminals densely, augmented start first
    nt_map: dict[int, int] = {start: 0}
    t_map: dict[int, int] = {}
    for lhs, rhs in rules:
        if lhs not in nt_map:
            nt_map[lhs] = len(nt_map)
        for s in rhs:
            if s >= 0:
                if s not in nt_map:
                    nt_map[s] = len(nt_map)
            elif ~s not in t_map:
                t_map[~s] = len(t_map)
    renumbered = {**nt_map, **{~old: ~new for old, new in t_map.items()}}
    new_rules = [BnfRule(nt_map[lhs], tuple([renumbered[s] for s in rhs])) for lhs, rhs in rules]
    new_rules.sort(key=lambda r: r.lhs != 0)  # rule 0 is the augmented start's
    names = [""] * len(nt_map)
    for old, new in nt_map.items():
        names[new] = b.names[old]
    terminals = [None] * len(t_map)
    dfas = [None] * len(t_map)
    for old, new in t_map.items():
        terminals[new] = b.terminals[old]
        dfas[new] = b.dfas[old]
    raw = [(r.lhs, r.rhs) for r in new_rules]
    return BnfGrammar(
        nonterminals=tuple(names),
        terminals=tuple(terminals),  # type: ignore[arg-type]
        dfas=tuple(dfas),  # type: ignore[arg-type]
        rules=tuple(new_rules),
        start=0,
        end_mode=grammar.end_mode,
        nullable=nullable_nonterminals(raw, dfas),
    )
