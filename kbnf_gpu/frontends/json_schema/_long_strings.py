"""Long strings as several lexemes, so that no terminal's automaton grows with a length limit.

* ``counted_string``: a plain string with length bounds: ``"`` then ``q``
  chunks of exactly ``STRING_CHUNK`` code points then a remainder with the
  closing quote; the chunk count is a ``Repetition``, so the length bounds
  are exact, and every terminal comes from a small process-wide set.
* ``threaded_string``: the same with ``pattern``/``format`` constraints: one
  rule per (automaton state, chunks so far); a chunk lexeme leads the
  constraint automaton from one state to another in exactly ``C`` code points
  (``C`` = 16, 8, 4, 2 or 1, the largest whose chunk automata stay under
  ``MAX_CHUNK_STATES``).
* ``chunked_pattern``: a pattern that counts far by itself
  (``^(ab|cd|ef|gh){1,300}$``) threaded the same way, with a rest of fewer
  than ``C`` code points, when as one lexeme its byte automaton (every code
  point also as an escape) would pass ``max_dfa_states`` (estimated at
  ``BYTE_STATES_PER_STATE`` per code-point state). Smaller ones
  (``^.{10,60}$``: 61 code-point states, 1,683 byte states) stay one lexeme:
  chunk boundaries cost their first instances more token steps across
  lexemes than the one lexeme's rows do (measured: 330 vs 143 ms; a password
  pattern ``^(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{8,64}$``, 14,818 byte states
  as one lexeme with ``max_dfa_states=20000``: 0.6-0.7 s against 5.5-6.3 s
  over its first six instances). Likewise ``threaded_string`` serves a
  pattern with length bounds as one lexeme when the bounds, counted beside
  the automaton's states, keep it small.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ... import ir
from ...budget import current_budget
from ._fsm import (DFA, PathLanguages, TooLarge, as_expr, automaton_expr, canonical_key, intersection_dfa, paths_dfa,
                   to_regex)
from ._rx import Rx, lit, seq
from ._scalars import QUOTE, string_piece, string_terminal
from ._strings import encode

if TYPE_CHECKING:
    from ._builder import Builder

STRING_CHUNK = 16  # code points per lexeme when a long string is split
MAX_THREAD_CHUNKS = 10_000  # chunk counts a threaded string tracks (one rule per state and count)
MAX_THREAD_RULES = 5_000  # rules of one threaded string
MAX_THREAD_TERMINALS = 400  # distinct chunk and tail lexemes of one threaded string
# automaton states at chunk boundaries (each gets its chunk languages, at the code-point level: a counter's run of
# states shares a few languages, ``.{0,1023}`` has 64 boundaries and two chunk lexemes)
MAX_THREAD_BOUNDARIES = 2_000
# byte automaton states per code-point state of a pattern as one lexeme (every code point also an escape;
# measured 6-30): a pattern whose code-point automaton passes ``max_dfa_states`` / this is chunked
BYTE_STATES_PER_STATE = 32
# a chunk lexeme: at most this many code-point automaton states (x 25-45 in bytes with its escapes), or else a
# regular expression of at most this many nodes; or shorter chunks
MAX_CHUNK_STATES = 64
CHUNK_REGEX = 4_000
# code-point automaton states of all the chunk and tail lexemes of one threaded string (x 25-45 in bytes): past
# it, shorter chunks (``format: hostname`` with ``maxLength: 300`` made 480 chunk languages of 16 code points)
MAX_THREAD_STATES = 2_000


def threaded_string(b: "Builder", langs: list[Rx], lo: int, hi: Optional[int], where: str) -> Optional[ir.Expr]:
    """Exact pattern/format plus length: chunks of ``C`` code points per lexeme,
    rules tracking (automaton state, chunks so far)."""
    try:
        d = intersection_dfa(langs)
    except TooLarge:
        d = None
        b.doc.problem("pattern/format too complex to combine", where)
        return counted_string(b, lo, hi)
    if d is None:
        return None
    shortest, longest = _length_range(d)
    if hi is not None and hi < shortest or longest is not None and lo > longest:
        return None
    # bounds the automaton implies anyway are dropped (``^[a-z]{5,10}$`` with ``maxLength: 1000000``)
    lo = 0 if lo <= shortest else lo
    hi = None if hi is not None and longest is not None and hi >= longest else hi
    if lo == 0 and hi is None:
        whole = b.string_term(as_expr(d))
        if b.fits(whole):
            return whole
        threaded = _thread_chunks(b, d, 0, None, (STRING_CHUNK, 8, 4), bounded_rest=True)
        if threaded is not None:
            return threaded
        b.doc.problem("this pattern/format is too complex to enforce exactly (its automaton, every code point also "
                      "an escape, passes max_dfa_states)", where)
        return counted_string(b, 0, None)
    # the bounds as a counter beside the automaton's states, when that still fits one lexeme (``format: ipv6``
    # with ``minLength: 3``: one more count than the automaton has; threading its hundreds of states would not)
    one = _one_lexeme_states()
    if d.n * (max(lo, hi or 0) + 1) <= 16 * one:
        bounded = paths_dfa(d, 0, lo, hi)
        if bounded is None:
            return None
        if bounded.n <= one:
            counted = b.string_term(as_expr(bounded))
            if b.fits(counted):  # else chunks: a class of many ranges (each code point also an escape) grows it
                return counted
    threaded = _thread_chunks(b, d, lo, hi, (STRING_CHUNK, 8, 4, 2, 1))
    if threaded is not None:
        return threaded
    # not exact: without ``strict``, the pattern/format alone if its lexeme fits (the lengths are what grew it),
    # else the lengths alone
    unbounded = b.string_term(as_expr(d))
    if b.fits(unbounded):
        b.doc.problem("minLength/maxLength beside this pattern/format is too complex to enforce exactly", where)
        return unbounded
    b.doc.problem("this pattern/format with minLength/maxLength is too complex to enforce exactly", where)
    return counted_string(b, lo, hi)


def chunked_pattern(b: "Builder", langs: list[Rx], lo: int, hi: Optional[int]) -> Optional[ir.Expr]:
    """``langs`` (with length bounds) as chunk lexemes when their automaton is big; ``None`` when it is small
    (one lexeme serves) or chunks do not keep it small (the caller builds one lexeme, as before)."""
    big = _one_lexeme_states()
    if sum(_count_span(x) for x in langs) <= big:  # a bound on the automaton's size, without building it
        return None
    try:
        d = intersection_dfa(langs)
    except TooLarge:
        return None
    if d is None or d.n <= big:
        return None
    # chunks of a code point or two would make most tokens cross lexemes: one big lexeme serves better
    return _thread_chunks(b, d, lo, hi, (STRING_CHUNK, 8, 4), bounded_rest=True)


def _one_lexeme_states() -> int:
    """Code-point automaton states that one lexeme may have: its byte automaton stays under ``max_dfa_states``."""
    return current_budget().config.max_dfa_states // BYTE_STATES_PER_STATE


def _thread_chunks(b: "Builder", d: DFA, lo: int, hi: Optional[int], sizes: tuple[int, ...],
                   bounded_rest: bool = False) -> Optional[ir.Expr]:
    """``_thread`` with the first chunk size of ``sizes`` whose lexemes stay small (``None``: none does)."""
    for C in sizes:
        if hi is not None and (hi - lo) // C > MAX_THREAD_CHUNKS:
            break
        try:
            return _thread(b, d, lo, hi, C, bounded_rest)
        except TooLarge:
            continue
    return None


def _count_span(x: Rx) -> int:
    """An upper bound on the code points a match of ``x`` spans before its repetitions loop (what its
    automaton's states grow with)."""
    if isinstance(x, ir.Literal):
        return len(x.value)
    if isinstance(x, ir.Concat):
        return sum(map(_count_span, x.parts))
    if isinstance(x, ir.Alternation):
        return sum(map(_count_span, x.options))
    if isinstance(x, ir.Repeat):
        return _count_span(x.item) * max(1, x.min if x.max is None else x.max)
    if isinstance(x, ir.Automaton):  # a path without a loop passes each state once
        return x.n_states * max((_count_span(label) for _, label, _ in x.edges), default=1)
    return 1


def _thread(b: "Builder", d: DFA, lo: int, hi: Optional[int], C: int, bounded_rest: bool = False) -> ir.Expr:
    """Rules ``(automaton state p, chunks so far j)``. Once the lower bound is met (``j >= J``, no upper bound)
    the rest from ``p`` is one tail lexeme, or with ``bounded_rest`` a tail of fewer than ``C`` code points
    or a chunk and the rest again (lexemes that stay small however far the automaton counts)."""
    # fail before any work when the states at chunk boundaries would pass the bound: each one a chunk may still
    # follow gets its chunk lexemes, and with no lower bound each one gets its tail too
    boundary = set() if hi is not None and hi < C else _boundary_states(d, C, None if hi is None else hi // C - 1)
    needed = len(boundary)
    if lo == 0:
        needed += len(_boundary_states(d, C, None if hi is None else hi // C))
    if needed > MAX_THREAD_BOUNDARIES:
        raise TooLarge("string automaton too large")
    if hi is not None:  # one rule per (state, chunks so far): the states at each boundary, counted
        rules, level = 0, {0}
        for _ in range(hi // C + 1):
            rules += len(level)
            if rules > MAX_THREAD_RULES or not level:
                break
            level = _after(d, level, C)
        if rules > MAX_THREAD_RULES:
            raise TooLarge("string automaton too large")
    chunk_terms: dict[int, list[tuple[int, ir.Terminal]]] = {}
    end_terms: dict[tuple[int, int, Optional[int]], Optional[ir.Terminal]] = {}
    # a counter's positions far from its bounds have chunks of one language: each language is written as an
    # expression and encoded once (the automaton work per position is small beside that); a chunk whose own
    # automaton is big makes the caller try shorter chunks
    by_language: dict[tuple, ir.Terminal] = {}
    states = [0]  # of the languages in ``by_language``
    close = lit('"')
    languages = PathLanguages(d)  # bounded languages: a node is the key of its language

    def language_term(key: tuple, language: Optional[DFA], kind: str) -> Optional[ir.Terminal]:
        if language is None:
            return None
        found = by_language.get((kind, key))
        if found is None:
            if len(by_language) >= MAX_THREAD_TERMINALS:
                raise TooLarge("string automaton too large")
            states[0] += language.n
            if states[0] > MAX_THREAD_STATES:
                raise TooLarge("string chunk automata too large")
            # a chunk is small in states (written as its automaton, whose byte DFA is built without a subset
            # construction: ``automata.labelled``) or in expression
            r = encode(automaton_expr(language) if language.n <= MAX_CHUNK_STATES else to_regex(language, CHUNK_REGEX))
            found = by_language[(kind, key)] = b.term(seq(r, close) if kind == "string_tail" else r, kind)
            if not b.fits(found):  # a class of many ranges, each code point also an escape: shorter chunks
                raise TooLarge("string chunk automaton too large")
        return found

    def node_term(node: int, kind: str) -> Optional[ir.Terminal]:
        return language_term((node,), languages.dfa(node), kind)  # a node is the key of its language

    accepting = {q for q in range(d.n) if d.accept[q]}
    # the chunk languages from every state at a chunk boundary (the states ``chunks`` is asked for), as nodes:
    # fail before writing any chunk when their automata together would pass the bound (a node is cheap; a
    # chunk's expression and encoding are not)
    chunk_nodes: dict[int, list[tuple[int, int]]] = {}  # p -> (q, node) of each nonempty chunk language
    counted = set()
    chunk_states = 0
    for p in boundary:
        found = chunk_nodes[p] = []
        for q in sorted(_after(d, {p}, C)):
            node = languages.root(p, C, C, {q})
            if node == PathLanguages.EMPTY:
                continue
            found.append((q, node))
            if node not in counted:
                counted.add(node)
                chunk_states += languages.dfa(node).n
                if chunk_states > MAX_THREAD_STATES:
                    raise TooLarge("string chunk automata too large")

    def chunks(p: int) -> list[tuple[int, ir.Terminal]]:
        if p not in chunk_terms:
            chunk_terms[p] = [(q, node_term(node, "string_chunk")) for q, node in chunk_nodes[p]]
        return chunk_terms[p]

    def end(p: int, lo_: int, hi_: Optional[int]) -> Optional[ir.Terminal]:
        if (p, lo_, hi_) not in end_terms:
            if hi_ is None:  # a loop: no node, its minimal automaton's canonical numbering is the key
                language = paths_dfa(d, p, lo_, None)
                found = language_term(canonical_key(language), language, "string_tail") if language else None
            else:
                node = languages.root(p, lo_, hi_, accepting)
                found = node_term(node, "string_tail")
            end_terms[(p, lo_, hi_)] = found
        return end_terms[(p, lo_, hi_)]

    # one rule per (state, chunks so far); a body is (terminal, the rule after it or None) per alternative, and
    # names are taken from the builder only once the whole thread is made (a TooLarge leaves it untouched)
    work: list[tuple[int, int]] = []
    bodies: dict[tuple[int, int], list[tuple[ir.Terminal, Optional[tuple[int, int]]]]] = {}
    seen: set[tuple[int, int]] = set()
    J = -(-lo // C) if hi is None else None

    def ref(p: int, j: int) -> tuple[int, int]:
        if (p, j) not in seen:
            if len(seen) >= MAX_THREAD_RULES:
                raise TooLarge("string automaton too large")
            seen.add((p, j))
            work.append((p, j))
        return p, j

    ref(0, 0)
    while work:
        p, j = work.pop()
        alts: list[tuple[ir.Terminal, Optional[tuple[int, int]]]] = []
        if J is not None and j >= J:
            t = end(p, 0, C - 1 if bounded_rest else None)
            if t is not None:
                alts.append((t, None))
            if bounded_rest:
                alts.extend((term, ref(q, J)) for q, term in chunks(p))
        else:
            first_len, last_len = max(0, lo - j * C), C - 1 if hi is None else min(C - 1, hi - j * C)
            if first_len <= last_len:
                t = end(p, first_len, last_len)
                if t is not None:
                    alts.append((t, None))
            if hi is None or (j + 1) * C <= hi:
                alts.extend((term, ref(q, j + 1)) for q, term in chunks(p))
        bodies[(p, j)] = alts
    refs = {key: ir.Ref(b.fresh(f"string_{key[0]}_{key[1]}")) for key in bodies}
    for key, alts in bodies.items():
        b.add_rule(refs[key].name, [t if after is None else ir.Sequence((t, refs[after])) for t, after in alts])
    return ir.Sequence((b.term(close, "quote"), refs[(0, 0)]))


def _length_range(d: DFA) -> tuple[int, Optional[int]]:
    """The fewest and the most code points of a string ``d`` accepts (``None``: no most, ``d`` loops); ``d``
    is trimmed (every state on a path to acceptance), as ``intersection_dfa`` gives it."""
    targets = [{t for t in row if t >= 0} for row in d.trans]
    shortest, level, seen = None, {0}, {0}
    for n in range(d.n + 1):  # breadth first: the first level with an accepting state
        if any(d.accept[q] for q in level):
            shortest = n
            break
        level = {t for q in level for t in targets[q]} - seen
        seen |= level
    indegree = [0] * d.n
    for ts in targets:
        for t in ts:
            indegree[t] += 1
    order = [q for q in range(d.n) if not indegree[q]]
    for q in order:  # Kahn's order: it misses a state exactly when a cycle reaches it
        for t in targets[q]:
            indegree[t] -= 1
            if not indegree[t]:
                order.append(t)
    if len(order) < d.n:
        return shortest or 0, None
    most = [0 if d.accept[q] else -1 for q in range(d.n)]
    for q in reversed(order):
        for t in targets[q]:
            if most[t] >= 0:
                most[q] = max(most[q], most[t] + 1)
    return shortest or 0, most[0]


def _boundary_states(d: DFA, C: int, levels: Optional[int]) -> set[int]:
    """The automaton's states at chunk boundaries (after a multiple of ``C`` code points, at most ``levels``
    chunks): the states ``_thread`` makes rules and chunk lexemes for."""
    seen = {0}
    frontier = {0}
    level = 0
    while frontier and (levels is None or level < levels):
        frontier = _after(d, frontier, C) - seen
        seen |= frontier
        level += 1
        if len(seen) > MAX_THREAD_BOUNDARIES:
            break
    return seen


def _after(d: DFA, states: set[int], n: int) -> set[int]:
    """The states ``d`` reaches from ``states`` after exactly ``n`` code points."""
    for _ in range(n):
        states = {t for q in states for t in d.trans[q] if t >= 0}
    return states


def counted_string(b: "Builder", lo: int, hi: Optional[int]) -> ir.Expr:
    """A JSON string of ``lo`` to ``hi`` code points from a fixed, process-wide set of terminals.

    Up to ``STRING_CHUNK`` code points the whole string is one terminal
    (``"`` CHAR{lo,hi} ``"``); beyond, ``"`` then ``q`` chunks of exactly
    ``STRING_CHUNK`` code points (a ``Repetition`` of one shared chunk
    terminal) then a tail of fewer with the closing quote. Every terminal
    involved is one of at most ``STRING_CHUNK**2`` shapes (``STRING_CHUNK`` more for a lower bound alone) whatever the bounds,
    shared by every schema (so built and tabled once per process), and none
    grows with the limit: ``maxLength: 5000`` costs what ``maxLength: 50``
    costs.
    """
    C = STRING_CHUNK
    if (hi is not None and hi <= C) or (hi is None and lo <= C):
        return string_terminal(lo, hi)
    q_lo, r_lo = divmod(lo, C)
    chunk = string_piece(C, C, False)

    def tail(lo_: int, hi_: Optional[int]) -> ir.Terminal:
        return string_piece(lo_, hi_, True)

    def chunks(lo_: int, hi_: Optional[int]) -> list[ir.Expr]:
        if lo_ == hi_ == 0:
            return []
        return [b.counted(chunk, lo_, hi_, "string_chunks")]

    if hi is None:
        body: list[ir.Expr] = [ir.Sequence((QUOTE, *chunks(q_lo, q_lo), tail(r_lo, None)))]
    else:
        q_hi, r_hi = divmod(hi, C)
        if q_lo == q_hi:
            body = [ir.Sequence((QUOTE, *chunks(q_lo, q_lo), tail(r_lo, r_hi)))]
        else:
            body = [ir.Sequence((QUOTE, *chunks(q_lo, q_lo), tail(r_lo, C - 1)))]
            if q_hi - q_lo >= 2:
                body.append(ir.Sequence((QUOTE, *chunks(q_lo + 1, q_hi - 1), tail(0, C - 1))))
            body.append(ir.Sequence((QUOTE, *chunks(q_hi, q_hi), tail(0, r_hi))))
    return body[0] if len(body) == 1 else ir.Choice(tuple(body))
