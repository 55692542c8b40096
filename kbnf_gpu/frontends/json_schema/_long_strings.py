"""Long strings as several lexemes, so that no terminal's automaton grows with a length limit.

* ``counted_string``: a plain string with length bounds: ``"`` then ``q``
  chunks of exactly ``STRING_CHUNK`` code points then a remainder with the
  closing quote; the chunk count is a ``Repetition``, so the length bounds
  are exact, and every terminal comes from a small process-wide set.
* ``threaded_string``: the same with ``pattern``/``format`` constraints: one
  rule per (automaton state, chunks so far); a chunk lexeme leads the
  constraint automaton from one state to another in exactly ``C`` code points
  (``C`` = 16, 8, 4, 2 or 1, the largest whose chunk automata stay under
  ``MAX_CHUNK_STATES``). Only where the count can still bind: a state whose
  rest is finite and cannot reach ``maxLength`` is one tail lexeme (one rule
  for every count once ``minLength`` is met), and a final class loop is a
  ``Builder.counted`` repetition of one chunk (``counted_pieces``, which
  ``counted_string`` uses too).
* ``chunked_pattern``: a pattern that counts far by itself
  (``^(ab|cd|ef|gh){1,300}$``) threaded the same way, with a rest of fewer
  than ``C`` code points, when as one lexeme its byte automaton (each code
  point past ASCII also an escape) would pass ``max_dfa_states`` (estimated at
  ``BYTE_STATES_PER_STATE`` per code-point state; for an automaton that
  reads ASCII alone, ``ASCII_BYTE_STATES_PER_STATE``, and one lexeme built
  from the automaton is tried first, kept where it fits). Smaller ones
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

from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

from ... import ir
from ...automata.dfa import least_twins
from ...budget import current_budget
from ._fsm import (DFA, PathLanguages, TooLarge, automaton_expr, canonical_key, paths_dfa, set_bits, spells_wide,
                   to_regex)
from ._rx import Rx, lit, seq, span_bound
from ._scalars import QUOTE, string_piece, string_terminal
from ._strings import encode

if TYPE_CHECKING:
    from ._builder import Builder

STRING_CHUNK = 16  # code points per lexeme when a long string is split
MAX_THREAD_RULES = 5_000  # rules of one threaded string
# successor links of one threaded string's rules (the real-world schemas that compile make up to 180,000; a search
# for any of 600 time zone names made 7,000,000 in 5 s before it was refused for its lexemes)
MAX_THREAD_LINKS = 400_000
MAX_THREAD_TERMINALS = 400  # distinct chunk and tail lexemes of one threaded string
# automaton states at chunk boundaries (each gets its chunk languages, at the code-point level: a counter's run of
# states shares a few languages, ``.{0,1023}`` has 64 boundaries and two chunk lexemes), where one lexeme may
# still serve (a pattern that counts far, ``chunked_pattern``: past this, one lexeme is tried first)
MAX_THREAD_BOUNDARIES = 2_000
# the same where no lexeme holds the string (the last resort before a refusal): ``[A-Za-z0-9:_/+=,@.-]{0,1023}``
# after a loop has 1,024 boundary states and two chunk lexemes; what the lexemes cost is bounded by
# ``MAX_THREAD_TERMINALS`` and ``MAX_THREAD_STATES``
MAX_LAST_RESORT_BOUNDARIES = 5_000
# byte automaton states per code-point state of a pattern as one lexeme (each code point past ASCII also an
# escape; measured 6-30): a pattern whose code-point automaton passes ``max_dfa_states`` / this is chunked, unless
# it reads ASCII alone (below)
BYTE_STATES_PER_STATE = 32
# the same for an automaton that reads ASCII alone: 1.0 where it reads printable ASCII (raw only: an AWS name with
# a 10-character suffix, ``[a-zA-Z][a-zA-Z0-9-_]{0,99}-[a-zA-Z0-9]{10}``), up to 7 with control characters (their
# escapes remain: ``[\x00-\x7f]{0,100}``): up to ``max_dfa_states`` / this, one lexeme is tried before chunks
ASCII_BYTE_STATES_PER_STATE = 8
# a chunk lexeme: at most this many code-point automaton states (x 25-45 in bytes with its escapes), or else a
# regular expression of at most this many nodes; or shorter chunks
MAX_CHUNK_STATES = 64
CHUNK_REGEX = 4_000
# code-point automaton states of all the chunk and tail lexemes of one threaded string (x 25-45 in bytes): past
# it, shorter chunks (``format: hostname`` with ``maxLength: 300`` made 480 chunk languages of 16 code points)
MAX_THREAD_STATES = 2_000
# states x rounds of Moore's refinement one threaded string spends on its rests' twins (``_bounded_twins``)
TWIN_REFINEMENT = 1 << 16


def threaded_string(b: "Builder", langs: list[Rx], lo: int, hi: Optional[int], where: str) -> Optional[ir.Expr]:
    """Exact pattern/format plus length: chunks of ``C`` code points per lexeme,
    rules tracking (automaton state, chunks so far)."""
    try:
        d = b.language(langs)
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
        whole = b.automaton_string(d)
        if whole is not None:
            return whole
        threaded = _thread_chunks(b, d, 0, None, (STRING_CHUNK, 8, 4), True, MAX_LAST_RESORT_BOUNDARIES)
        if threaded is not None:
            return threaded
        b.doc.problem("this pattern/format is too complex to enforce exactly (its automaton in bytes passes "
                      "max_dfa_states)", where)
        return counted_string(b, 0, None)
    # the bounds as a counter beside the automaton's states, when that still fits one lexeme (``format: ipv6``
    # with ``minLength: 3``: one more count than the automaton has; threading its hundreds of states would not).
    # A finite ASCII language has the room of fewer byte states per state (ipv6 with ``maxLength: 39``: 567
    # states, refused as chunks); a loop's keeps the smaller room, where chunks serve its first masks better
    # (``^[a-c]+(-[a-c]+)*$`` to 400: 1,200 states, a first mask of 130 ms against 30 as chunks)
    ascii_room = longest is not None and not spells_wide(d)
    one = current_budget().config.max_dfa_states // ASCII_BYTE_STATES_PER_STATE if ascii_room else _one_lexeme_states()
    if d.n * (max(lo, hi or 0) + 1) <= 16 * one:
        bounded = paths_dfa(d, 0, lo, hi)
        if bounded is None:
            return None
        if bounded.n <= one:
            counted = b.automaton_string(bounded)
            if counted is not None:  # else chunks: a class of many ranges (each also an escape) grows it
                return counted
    threaded = _thread_chunks(b, d, lo, hi, (STRING_CHUNK, 8, 4, 2, 1), False, MAX_LAST_RESORT_BOUNDARIES)
    if threaded is not None:
        return threaded
    # not exact: without ``strict``, the pattern/format alone if its lexeme fits (the lengths are what grew it),
    # else the lengths alone
    unbounded = b.automaton_string(d)
    if unbounded is not None:
        b.doc.problem("minLength/maxLength beside this pattern/format is too complex to enforce exactly", where)
        return unbounded
    b.doc.problem("this pattern/format with minLength/maxLength is too complex to enforce exactly", where)
    return counted_string(b, lo, hi)


def chunked_pattern(b: "Builder", langs: list[Rx], lo: int, hi: Optional[int]) -> Optional[ir.Expr]:
    """``langs`` (with length bounds) as chunk lexemes when their automaton is big; ``None`` when it is small
    (one lexeme serves) or chunks do not keep it small (the caller builds one lexeme, as before)."""
    big = _one_lexeme_states()
    if sum(span_bound(x) for x in langs) <= big:  # a bound on the automaton's size, without building it
        return None
    try:
        d = b.language(langs)
    except TooLarge:
        return None
    if d is None or d.n <= big:
        return None
    if lo == 0 and hi is None and d.n * ASCII_BYTE_STATES_PER_STATE <= big * BYTE_STATES_PER_STATE \
            and not spells_wide(d):
        # one lexeme, built from the automaton as tries side by side (``automata.labelled``; an ASCII one too
        # large fails within ~0.1 s: an AWS name with a 10-character suffix, 1,205 code-point states): a Secrets
        # Manager ARN ending in ``[a-zA-Z0-9!/_+=.@-]{1,512}`` (585 code-point states) takes 63-199 ms where its
        # chunks took 346-832 ms, an EventBridge rule's ARN with ``{1,1024}`` (1,091) 218 where they took 413;
        # one lexeme also serves the first instances better than chunks (above)
        whole = b.automaton_string(d, automaton_expr)
        if whole is not None:
            return whole
    # chunks of a code point or two would make most tokens cross lexemes: one big lexeme serves better
    return _thread_chunks(b, d, lo, hi, (STRING_CHUNK, 8, 4), bounded_rest=True)


def _one_lexeme_states() -> int:
    """Code-point automaton states that one lexeme may have: its byte automaton stays under ``max_dfa_states``."""
    return current_budget().config.max_dfa_states // BYTE_STATES_PER_STATE


def _thread_chunks(b: "Builder", d: DFA, lo: int, hi: Optional[int], sizes: tuple[int, ...],
                   bounded_rest: bool = False, boundaries: Optional[int] = None) -> Optional[ir.Expr]:
    """``_thread`` with the first chunk size of ``sizes`` whose lexemes stay small (``None``: none does)."""
    for C in sizes:
        try:
            return _thread(b, d, lo, hi, C, bounded_rest, boundaries)
        except TooManyRules:
            return None  # shorter chunks reach every (state, count) these do, and more: they fail too, slower
        except TooLarge:
            continue
    return None


class TooManyRules(TooLarge):
    """A threaded string's plan passes ``MAX_THREAD_RULES`` or its boundary states (before any lexeme work)."""


FREE = -1  # the chunk count of a rule whose rest neither bound still reaches: one tail, whatever the count


def _thread(b: "Builder", d: DFA, lo: int, hi: Optional[int], C: int, bounded_rest: bool = False,
            boundaries: Optional[int] = None) -> ir.Expr:
    """Rules ``(automaton state p, chunks so far j)``. Once the lower bound is met (``j >= J``, no upper bound)
    the rest from ``p`` is one tail lexeme, or with ``bounded_rest`` a tail of fewer than ``C`` code points
    or a chunk and the rest again (lexemes that stay small however far the automaton counts). With an upper
    bound, a state whose rest is finite and cannot reach it is one tail too, and once the lower bound is met
    too its rule is one for every count (``FREE``): an ARN's suffix after its last loop is counted only near
    ``maxLength``, not at each of its ``maxLength / C`` counts."""
    shortest, longest, reach = _residual_lengths(d)
    small = _one_lexeme_states()
    boundaries = MAX_THREAD_BOUNDARIES if boundaries is None else boundaries  # read at the call, not at import
    # an accepting state that only loops to itself: the rest from it is a counted string of its class
    sink = [bool(d.accept[q]) and d.successors[q] == (q,) for q in range(d.n)]
    J = -(-lo // C) if hi is None else None

    def free(p: int, j: int) -> bool:  # the upper bound cannot bind on the (small, finite) rest from ``p``
        return (hi is not None and longest[p] is not None and j * C + longest[p] <= hi
                and reach[p].bit_count() <= small)

    # with an upper bound, the rule of (p, j) reads at most ``hi - j * C`` more code points: states that accept
    # the same strings that short are one rule (a hostname's label positions far from its 63 at its last counts)
    twins = None if hi is None else _bounded_twins(d, hi, C)

    def key(p: int, j: int) -> tuple[int, int]:
        if twins is None:
            return p, min(j, J)
        return (p, FREE) if free(p, j) and lo - j * C <= shortest[p] else (twins(hi - j * C)[p], j)

    # plan the rules first (states and counts only), failing before any lexeme work when they would pass the
    # bounds: each state a chunk may still leave gets its chunk lexemes, and with no lower bound its tail too
    after: dict[int, list[int]] = {}
    plan: dict[tuple[int, int], list[tuple[int, tuple[int, int]]]] = {}  # rule -> (state, rule) its chunks lead to
    tail_lengths: dict[tuple[int, int], tuple[int, Optional[int]]] = {}  # rule -> its tail's fewest, most
    repeated: set[tuple[int, int]] = set()  # rules whose rest is a counted repetition of one chunk (``sink``)
    chunked: set[int] = set()
    tails: set[int] = set()
    work = [key(0, 0)]
    queued = set(work)
    budget = current_budget()
    keys: dict[tuple[int, int], tuple[int, int]] = {}  # ``key``'s answers: every state a count leads to asks
    futures = _futures(d, C)
    links = 0  # successor links of the rules planned
    while work:
        budget.tick("threading a string's length limits")
        p, j = rule = work.pop()
        if j == FREE or free(p, j):  # the rest is finite: its longest string is the upper bound that holds
            step, tail_lengths[rule] = None, ((0 if j == FREE else max(0, lo - j * C)), longest[p])
        elif sink[p] and (J is None or j < J):  # its chunks counted by a repetition, not one rule per count
            step, tail_lengths[rule] = None, (max(0, lo - j * C), None if hi is None else hi - j * C)
            repeated.add(rule)
        elif J is not None and j >= J:
            step, tail_lengths[rule] = (J if bounded_rest else None), (0, C - 1 if bounded_rest else None)
        else:
            step = j + 1 if hi is None or (j + 1) * C <= hi else None
            tail_lengths[rule] = max(0, lo - j * C), C - 1 if hi is None else min(C - 1, hi - j * C)
        if step is not None and p not in after:
            after[p] = list(set_bits(futures(p)))
        # a state whose shortest rest no longer fits under ``maxLength`` is no rule (its language is empty)
        if step is None:
            plan[rule] = []
        else:
            nexts = plan[rule] = []
            for q in after[p]:
                if hi is None or step * C + shortest[q] <= hi:
                    nxt = keys.get((q, step))
                    if nxt is None:
                        nxt = keys[(q, step)] = key(q, step)
                    nexts.append((q, nxt))
            links += len(nexts)
        if plan[rule]:
            chunked.add(p)
        tails.add(p)
        for _, nxt in plan[rule]:
            if nxt not in queued:
                queued.add(nxt)
                work.append(nxt)
        if len(queued) > MAX_THREAD_RULES or links > MAX_THREAD_LINKS or \
                len(chunked) + (len(tails) if lo == 0 else 0) > boundaries:
            raise TooManyRules("string automaton too large")
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
            if not b.fits(found):  # a class of many ranges, each also an escape: shorter chunks
                raise TooLarge("string chunk automaton too large")
        return found

    def node_term(node: int, kind: str) -> Optional[ir.Terminal]:
        return language_term((node,), languages.dfa(node), kind)  # a node is the key of its language

    accepting = {q for q in range(d.n) if d.accept[q]}
    # the chunk languages from every state a chunk leaves, and the bounded tails, as nodes: fail before writing
    # any lexeme when their automata together would pass the bound (a node is cheap; a lexeme's expression and
    # encoding are not)
    chunk_nodes: dict[int, list[tuple[int, int]]] = {}  # p -> (q, node) of each nonempty chunk language
    counted = {PathLanguages.EMPTY}
    chunk_states = 0

    def count(node: int) -> None:
        nonlocal chunk_states
        if node not in counted:
            counted.add(node)
            chunk_states += languages.dfa(node).n
            if chunk_states > MAX_THREAD_STATES:
                raise TooLarge("string chunk automata too large")

    for p in sorted(chunked):
        ends = languages.exact_roots(p, C)
        chunk_nodes[p] = [(q, ends[q]) for q in after[p] if q in ends]
        for _, node in chunk_nodes[p]:
            count(node)
    for (p, j), (first_len, last_len) in tail_lengths.items():
        if (p, j) in repeated:
            count(languages.exact_roots(p, C).get(p, PathLanguages.EMPTY))
        elif last_len is not None and first_len <= last_len:
            count(languages.root(p, first_len, last_len, accepting))

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

    # every lexeme is made before the builder gets a rule or a name, so a TooLarge leaves it untouched: each
    # rule's tail and the chunk lexemes of its state first, then the rules (one pass over their alternatives)
    tail_terms: dict[tuple[int, int], Optional[ir.Terminal]] = {}
    repeated_chunks: dict[tuple[int, int], Optional[ir.Terminal]] = {}
    for rule, nexts in plan.items():
        p, _ = rule
        first_len, last_len = tail_lengths[rule]
        if rule in repeated:
            for _, _, fewest, most in _spans(first_len, last_len, C):
                end(p, fewest, most)
            chunk_node = languages.exact_roots(p, C).get(p, PathLanguages.EMPTY)
            repeated_chunks[rule] = node_term(chunk_node, "string_chunk")
            continue
        tail_terms[rule] = end(p, first_len, last_len) if last_len is None or first_len <= last_len else None
        if nexts:
            chunks(p)
    counted_rests = {rule: counted_pieces(b, *tail_lengths[rule], C, chunk,
                                          lambda lo_, hi_, p=rule[0]: end(p, lo_, hi_))
                     for rule, chunk in repeated_chunks.items()}
    refs = {r: ir.Ref(b.fresh(f"string_{r[0]}_{'free' if r[1] == FREE else r[1]}")) for r in plan}
    for rule, nexts in plan.items():
        alts = counted_rests.get(rule)
        if alts is not None:
            b.add_rule(refs[rule].name, [alt[0] if len(alt) == 1 else ir.Sequence(alt) for alt in alts])
            continue
        body: list[ir.Expr] = []
        tail = tail_terms[rule]
        if tail is not None:
            body.append(tail)
        if nexts:
            to = dict(nexts)
            body.extend(ir.Sequence((term, refs[to[q]])) for q, term in chunk_terms[rule[0]] if q in to)
        b.add_rule(refs[rule].name, body)
    return ir.Sequence((b.term(close, "quote"), refs[key(0, 0)]))


def _bounded_twins(d: DFA, hi: int, C: int) -> Callable[[int], list[int]]:
    """Per rest a count of chunks leaves (``hi - j * C``): per state of ``d``, the least state that accepts the
    same strings of at most that many code points (Moore's refinement, stopped after that many rounds). The
    refinement is stable after ``d.n`` rounds, and it runs at most ``TWIN_REFINEMENT / d.n`` of them: a longer
    rest takes the last round's twins where the refinement was stable by then, else every state is its own
    twin (exact, only more rules; an ARN's 1,242 states took 1,224 rounds, 0.2 s per chunk size, and none
    merged). So ``maxLength: 2147483647`` refines no more than ``maxLength: 300``."""
    top = max(1, min(d.n, TWIN_REFINEMENT // d.n))
    rounds = sorted({*range(hi % C, min(hi, top) + 1, C), top - 1, top})
    table = np.array(d.trans, dtype=np.int64).reshape(d.n, -1)
    found = dict(zip(rounds, least_twins(table, np.array(d.accept, dtype=bool), tuple(rounds))))
    stable = top == d.n or np.array_equal(found[top - 1], found[top])
    beyond = found[top] if stable else np.arange(d.n)
    as_lists: dict[int, list[int]] = {}  # one list per distinct array (once stable, every round's is one)

    def twins(rest: int) -> list[int]:
        at = found[rest] if rest <= top else beyond
        hit = as_lists.get(id(at))
        if hit is None:
            hit = as_lists[id(at)] = at.tolist()
        return hit

    return twins


def _length_range(d: DFA) -> tuple[int, Optional[int]]:
    """The fewest and the most code points of a string ``d`` accepts (``None``: no most, ``d`` loops); ``d``
    is trimmed (every state on a path to acceptance), as ``intersection_dfa`` gives it."""
    shortest, longest, _ = _residual_lengths(d)
    return shortest[0], longest[0]


def _residual_lengths(d: DFA) -> tuple[list[int], list[Optional[int]], list[int]]:
    """Per state of the trimmed ``d``: the fewest and the most code points of a string it accepts from there
    (``None``: no most, a loop is ahead), and the states it reaches (a bit set; only where the most is known)."""
    targets, sources = d.successors, d.predecessors
    shortest = [0 if d.accept[q] else -1 for q in range(d.n)]
    level = [q for q in range(d.n) if d.accept[q]]
    for q in level:  # breadth first from the accepting states, backwards
        for s in sources[q]:
            if shortest[s] < 0:
                shortest[s] = shortest[q] + 1
                level.append(s)
    longest: list[Optional[int]] = [None] * d.n
    reach = [0] * d.n
    unresolved = [len(ts) for ts in targets]
    order = [q for q in range(d.n) if not unresolved[q]]
    for q in order:  # Kahn's order backwards: a state is left out exactly when a loop is ahead of it
        longest[q] = max([0 if d.accept[q] else -1] + [longest[t] + 1 for t in targets[q]])
        reach[q] = 1 << q
        for t in targets[q]:
            reach[q] |= reach[t]
        for s in sources[q]:
            unresolved[s] -= 1
            if not unresolved[s]:
                order.append(s)
    return shortest, longest, reach


def _futures(d: DFA, n: int) -> Callable[[int], int]:
    """``q ->`` the states ``d`` reaches from ``q`` after exactly ``n`` code points, as a bit set. Memoized per
    (state, steps left): the states a threaded string asks share their futures (600 time zone names searched
    for, a 7,000-state automaton: sets of states stepped from each state apart took over 10 s)."""
    successors = d.successors
    memo: dict[int, int] = {}  # q * (n + 1) + k -> states
    budget = current_budget()

    def after(q: int, k: int) -> int:
        if k == 0:
            return 1 << q
        key = q * (n + 1) + k
        found = memo.get(key)
        if found is None:
            budget.tick("threading a string's length limits")
            found = 0
            for t in successors[q]:  # recursion as deep as ``n`` (a chunk's code points), never the input
                found |= after(t, k - 1)
            memo[key] = found
        return found

    return lambda q: after(q, n)


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
    body = [ir.Sequence((QUOTE, *pieces)) for pieces in
            counted_pieces(b, lo, hi, C, string_piece(C, C, False), lambda lo_, hi_: string_piece(lo_, hi_, True))]
    return body[0] if len(body) == 1 else ir.Choice(tuple(body))


def counted_pieces(b: "Builder", lo: int, hi: Optional[int], C: int, chunk: ir.Expr,
                   tail: Callable[[int, Optional[int]], Optional[ir.Expr]]) -> list[tuple[ir.Expr, ...]]:
    """``lo`` to ``hi`` code points as ``chunk`` (``C`` of them) repeated then ``tail(fewest, most)`` (fewer
    than ``C``, or any number for ``most=None``), one tuple of pieces per alternative; the count of chunks is
    a ``Builder.counted`` (rules in the digits of the count), so ``hi`` costs what its digits cost."""
    spans = _spans(lo, hi, C)
    tails = [tail(fewest, most) for _, _, fewest, most in spans]  # first: a tail may fail, a count adds rules

    def chunks(lo_: int, hi_: Optional[int]) -> tuple[ir.Expr, ...]:
        return () if lo_ == hi_ == 0 else (b.counted(chunk, lo_, hi_, "string_chunks"),)

    return [(*chunks(a, z), t) for (a, z, _, _), t in zip(spans, tails) if t is not None]


def _spans(lo: int, hi: Optional[int], C: int) -> list[tuple[int, Optional[int], int, Optional[int]]]:
    """Per alternative: the fewest and most chunks, then the fewest and most code points of the tail."""
    q_lo, r_lo = divmod(lo, C)
    if hi is None:
        return [(q_lo, q_lo, r_lo, None)]
    q_hi, r_hi = divmod(hi, C)
    if q_lo == q_hi:
        return [(q_lo, q_lo, r_lo, r_hi)]
    middle = [(q_lo + 1, q_hi - 1, 0, C - 1)] if q_hi - q_lo >= 2 else []
    return [(q_lo, q_lo, r_lo, C - 1), *middle, (q_hi, q_hi, 0, r_hi)]
