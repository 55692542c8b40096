"""A hash-consed Earley recognizer whose terminals are byte DFAs.

Vocabulary of the module:

* position — an LR(0) item ``rule, dot`` numbered as one int (``pos_sym[p]``
  is the symbol after the dot, ``None`` at the end of the rule).
* item — ``(position, origin)``; ``origin`` is the ``uid`` of the interned
  ``EarleySet`` the rule started in, or ``SELF`` (0) for an item predicted in
  the set being built.
* Earley set — opened only where a terminal completes. What later positions
  need from it is how completions *from* it behave: the items waiting on each
  nonterminal, and Leo entries. Equal sets are one object.
* scan pair — ``(position, origin, terminal, q)``: an item whose next symbol
  is a terminal, with the terminal's DFA state after the bytes since it started.
* parser state — the frozenset of scan pairs plus an accepting flag, one
  interned ``ParserState`` object. Two positions with equal states behave
  identically on all future input, so ``(state, byte) -> state`` is a pure,
  memoizable function.

Memory stays bounded in a long-running process: sets are interned *weakly*
(a set lives while a state, another set or a bounded memo table refers to it:
a state holds the sets its pairs start in, a set the sets its items start in,
never a newer one, so plain reference counting frees them); states are
interned, and everything is memoized, in ``GenerationalCache``s. Items,
pairs, memo keys and most memo values are tuples of ints, which the garbage
collector stops tracking: its passes stay short however many states are
cached (a full collection scans each state and set, and nothing for them).

Truncated contexts (``truncated``): a state's masks depend on the context
(the origin sets) only as far as the next few completions reach. Replacing
every origin deeper than ``k`` completions by the sentinel set ``TOP`` gives a
state that repeats across documents (a string inside an object at depth 3 or
7 looks the same). Parsing from it is exact until a completion reaches
``TOP``; then the readings that needed the unknown context are dropped and
every state reached from there is *lossy* (``state.lossy``): a live lossy state
is still a real continuation, but a dead end reached lossily proves nothing
(``DEAD_UNKNOWN`` instead of ``DEAD``).

``truncated(state, depth, ANY)`` cuts the context with ``ANY`` instead: a
completion into it advances every item of the grammar waiting on that
nonterminal (any context at all), an over-approximation. A token that dies
even so is dead in every context (``" ]];"`` in JSON dies at ``;`` wherever it
stands), which settles most verdicts the lossy reading leaves open.

Leo's optimization collapses deterministic right-recursive completion chains
so ``S ::= "A" S | "A"`` keeps a constant-size state. Nullable nonterminals
and terminals are handled in the closure (Aycock–Horspool). All loops are
iterative.
"""
from __future__ import annotations

import bisect
import itertools
import operator
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from ..automata.dfa import ByteDFA, LazyDFA
from ..normalize import BnfGrammar
from ..caches import GenerationalCache, WeakTable

SELF = 0  # the origin of an item predicted in the set being built
_TOP_UID, _ANY_UID = 1, 2
_uids = itertools.count(3)  # never reused: a stale memo key can never match a new object


def _holding(sets: tuple):
    """What an object keeps of the sets it must keep alive: a lone set itself, else the tuple (most hold one set,
    and a 1-tuple per object would be one more for every garbage collection to scan)."""
    return sets[0] if len(sets) == 1 else sets


def _held(holding) -> tuple:
    return () if holding is None else (holding,) if type(holding) is EarleySet else holding


class EarleySet:
    """An interned Earley set: the items waiting on each symbol (``waiting_on``) and Leo entries (``leo_of``),
    kept as its interning key (``_set_key``), not as dicts: a dict of tuples stays tracked by the garbage
    collector until a full collection, one more object per set for it to scan.

    ``parents`` are the sets its items start in (they must outlive it), in the order of ``shape``: the id of
    the set's structure with each origin replaced by its parent's index (0 until ``EarleyParser._shape`` finds it).
    """

    __slots__ = ("uid", "key", "shape", "_parents", "__weakref__")

    def __init__(self, uid: int, key: tuple, parents: tuple) -> None:
        self.uid = uid
        self.key = key
        self.shape = 0  # not yet found (``EarleyParser._shape``)
        self._parents = _holding(parents)

    @property
    def parents(self) -> tuple:
        return _held(self._parents)

    def _entry(self, first: int) -> tuple | None:
        """The key's entry that starts with ``first`` (``sym`` for waiting items, ``~sym`` for a Leo entry)."""
        key = self.key
        i = bisect.bisect_left(key, (first,))
        return key[i] if i < len(key) and key[i][0] == first else None

    def waiting_on(self, sym: int) -> tuple:
        """The items ``(position, origin)`` whose next symbol is ``sym``."""
        entry = self._entry(sym)
        return () if entry is None else _entry_items(entry)

    def leo_of(self, sym: int) -> tuple | None:
        """The Leo entry ``(Y, origin)`` of ``sym``: completing ``sym`` here completes ``Y`` there."""
        if not self.key or self.key[0][0] >= 0:  # Leo entries sort first (``~sym``): most sets have none
            return None
        entry = self._entry(~sym)
        return None if entry is None else entry[1:]

    @property
    def waiting(self) -> dict:
        return {entry[0]: _entry_items(entry) for entry in self.key if entry[0] >= 0}

    @property
    def leo(self) -> dict:
        return {~entry[0]: entry[1:] for entry in self.key if entry[0] < 0}


class ParserState:
    """An interned parser state: scan pairs ``(position, origin, terminal, q)`` and whether the input is a sentence.

    ``origins`` are the sets the pairs start in (kept alive by the state), in the order of ``shape`` (as a
    set's); ``mask`` is a slot for the compiled grammar's per-state mask (it lives and dies with the state).
    """

    # the origins in three slots: most states start in one to three sets, and a tuple of them per state would be
    # one more object for every garbage collection to scan (``_origin3`` holds the third set or, past three, the
    # tuple of the rest)
    __slots__ = ("uid", "pairs", "lex", "shape", "accepting", "lossy", "_origin1", "_origin2", "_origin3", "mask")

    def __init__(self, pairs: tuple, accepting: bool, lossy: bool = False, origins: tuple = ()) -> None:
        self.uid = next(_uids)
        self.pairs = pairs
        self.lex = 0  # the id of the pairs' ``(terminal, q)`` column, found on first use (``EarleyParser._state_lex``)
        self.shape = 0  # not yet found (``EarleyParser._shape``)
        self.accepting = accepting
        self.lossy = lossy
        n = len(origins)
        self._origin1 = origins[0] if n else None
        self._origin2 = origins[1] if n > 1 else None
        self._origin3 = _holding(origins[2:]) if n > 2 else None
        self.mask = None

    @property
    def origins(self) -> tuple:
        if self._origin2 is None:
            return _held(self._origin1)
        return (self._origin1, self._origin2, *_held(self._origin3))

    def __repr__(self) -> str:
        if self is DEAD:
            return "<ParserState DEAD>"
        if self is DEAD_UNKNOWN:
            return "<ParserState DEAD_UNKNOWN>"
        flags = ("accepting " if self.accepting else "") + ("lossy " if self.lossy else "")
        return f"<ParserState {flags}{len(self.pairs)} pairs at {id(self):#x}>"


TOP = EarleySet(_TOP_UID, (), ())  # the unknown context beyond a truncation: completions into it are dropped
ANY = EarleySet(_ANY_UID, (), ())  # the unknown context read as every context: completions over-approximate
DEAD = ParserState((), False)  # no reading survives
DEAD_UNKNOWN = ParserState((), False, lossy=True)  # no reading survives, but readings needing TOP were dropped


_MAX_DEPTH = 256  # truncation depths (a few in practice) fit the low bits of a ``_trunc_memo`` key


def _trunc_low(depth: int, beyond: EarleySet) -> int:
    """The low bits of ``_trunc_memo``'s key for a truncation at ``depth`` with ``beyond``: the key of object
    ``uid`` is ``uid << 9 | low``, one int (memo keys that are tuples are tracked by the garbage collector until
    its next pass, one more object each); one level deeper is ``low - 2``."""
    return depth << 1 | (beyond is ANY)


def _set_key(waiting: dict, leo: dict) -> tuple:
    """An Earley set's interning key: ``(sym, p, o, p, o, ...)`` per waiting symbol and ``(~sym, y, o)`` per Leo
    entry, sorted. Tuples of ints in a tuple: the garbage collector stops tracking a key of two levels within
    two of its passes, a deeper one only in a full collection."""
    entries = [(sym, *itertools.chain.from_iterable(sorted(items))) for sym, items in waiting.items()]
    entries.extend((~sym, y, o) for sym, (y, o) in leo.items())
    entries.sort()
    return tuple(entries)


def _entry_items(entry: tuple) -> tuple:
    """The items ``(position, origin)`` of a ``_set_key`` entry ``(sym, p, o, p, o, ...)``."""
    return tuple(zip(entry[1::2], entry[2::2]))


def _first_seen(order: dict, origin: int) -> int:
    """``origin`` renumbered by first appearance (``~0, ~1, ...``, recorded in ``order``; ``SELF`` stays): what a
    shape keeps of an origin. ``list(order)`` is then the origins' uids in the shape's order."""
    if origin == SELF:
        return SELF
    found = order.get(origin)
    if found is None:
        found = order[origin] = ~len(order)
    return found


def is_dead(state: ParserState) -> bool:
    return state is DEAD or state is DEAD_UNKNOWN


class _Unbuilt:
    """One terminal's entry in one of the parser's per-terminal lists (``FIELDS``) while its DFA is not built
    (``LazyDFA``): the first read builds it and puts the real entries in every list. Whether the start state
    leads on is known without building (a prediction asks it of every terminal it meets)."""

    FIELDS = ("transitions", "accepting", "has_exit", "_rows")
    __slots__ = ("parser", "t", "field")

    def __init__(self, parser: "EarleyParser", t: int, field: str) -> None:
        # weakly: the parser's lists hold this, and a dropped grammar's parser goes when its count does
        self.parser, self.t, self.field = weakref.ref(parser), t, field

    def _real(self) -> Any:
        parser = self.parser()
        table = getattr(parser, self.field)
        if table[self.t] is self:
            parser._terminal_built(self.t, parser.grammar.dfas[self.t])
        return table[self.t]

    def __getitem__(self, q: int) -> Any:
        if q == 0 and self.field == "has_exit":
            return self.parser().grammar.dfas[self.t].exits_start
        return self._real()[q]

    def __setitem__(self, q: int, value: Any) -> None:
        self._real()[q] = value

    def __len__(self) -> int:
        return len(self._real())


class _Prediction:
    """What predicting one nonterminal adds to any set: its waiting items, scan items, predicted nonterminals.

    ``scan_positions``/``scan_terminals``: the scan items whose terminal can move at all, as two columns, so a
    set's scan pairs are zipped together in C (a schema's value closure holds a thousand key literals).
    """

    __slots__ = ("waiting", "scans", "nonterminals", "scan_positions", "scan_terminals")

    def __init__(self, waiting: dict, scans: tuple, nonterminals: frozenset, has_exit: list) -> None:
        self.waiting = waiting
        self.scans = scans
        self.nonterminals = nonterminals
        moving = [(p, t) for p, _, t in scans if has_exit[t][0]]
        self.scan_positions = tuple(p for p, _ in moving)
        self.scan_terminals = tuple(t for _, t in moving)


def rule_positions(grammar: BnfGrammar) -> tuple[list[int | None], list[tuple[int, ...]]]:
    """``(pos_sym, predict)``: the rules' dotted positions laid end to end, each rule's symbols then ``None``
    (its end), with the symbol after each dot; and per nonterminal, the first positions of its rules."""
    rules = grammar.rules
    pos_sym: list[int | None] = list(itertools.chain.from_iterable((*rule.rhs, None) for rule in rules))
    rule_start = [0, *itertools.accumulate(len(rule.rhs) + 1 for rule in rules)][:-1]
    by_lhs: list[list[int]] = [[] for _ in grammar.nonterminals]
    for rule, start in zip(rules, rule_start):
        by_lhs[rule.lhs].append(start)
    return pos_sym, [tuple(starts) for starts in by_lhs]


class EarleyParser:
    """The recognizer for one grammar; shared (also across threads) by every matcher of that grammar."""

    def __init__(self, grammar: BnfGrammar, *, memo_limit: int = 1 << 13) -> None:
        self.grammar = grammar
        self._n_nonterminals = len(grammar.nonterminals)
        rules = grammar.rules
        pos_sym, self.predict = rule_positions(grammar)
        sizes = [len(rule.rhs) + 1 for rule in rules]
        pos_lhs = list(itertools.chain.from_iterable(itertools.repeat(rule.lhs, n) for rule, n in zip(rules, sizes)))
        self.pos_sym = pos_sym
        self.pos_lhs = pos_lhs
        # the symbol after the dot is the rule's last one (Leo candidates)
        self.pos_last = [sym is not None and nxt is None for sym, nxt in zip(pos_sym, pos_sym[1:] + [None])]
        n_nt = len(grammar.nonterminals)
        after: list[list[int]] = [[] for _ in range(n_nt)]
        for p, sym in enumerate(pos_sym):
            if sym is not None and sym >= 0:
                after[sym].append(p)
        self.waiting_anywhere = [tuple(ps) for ps in after]
        self._predictions: list[_Prediction | None] = [None] * len(grammar.nonterminals)
        self._first: dict[int, tuple[int, ...]] = {}  # symbol -> terminals that can start it (bounded by the grammar)
        self.nullable = grammar.nullable
        self.term_nullable = [bool(d.nullable) for d in grammar.dfas]
        # per terminal: its DFA's transitions, accepting states, and per state whether any byte leads on (a pair
        # whose DFA state has no way out is finished once its completion is done); and per state its 256
        # transitions as a tuple (filled on first use; a tuple of ints, unlike a list, is not scanned by the
        # garbage collector). A DFA not built yet (``LazyDFA``) stands as ``_Unbuilt`` until first read.
        self.transitions: list = []
        self.accepting: list = []
        self.has_exit: list = []
        self._rows: list = []
        for t, d in enumerate(grammar.dfas):
            if isinstance(d, LazyDFA) and not d.built:
                for field in _Unbuilt.FIELDS:
                    getattr(self, field).append(_Unbuilt(self, t, field))
            else:
                self._terminal_built(t, d)
        self._lock = threading.Lock()
        self._sets = WeakTable()  # structure -> set
        self._set_by_uid = WeakTable()
        self._set_by_uid[_TOP_UID] = TOP
        self._set_by_uid[_ANY_UID] = ANY
        # states are interned in a bounded table, not weakly: a weak reference per state is one more object for
        # every garbage collection to scan. A state evicted while something still holds it may meet an equal
        # twin later (a new uid: its memo entries and mask are computed again, nothing else differs)
        self._states: GenerationalCache = GenerationalCache(max(1, memo_limit // 2))
        self._kernel_memo: GenerationalCache = GenerationalCache(memo_limit)
        self._complete_memo: GenerationalCache = GenerationalCache(memo_limit)
        self._byte_memo: GenerationalCache = GenerationalCache(memo_limit)
        self._expect_memo: GenerationalCache = GenerationalCache(memo_limit)
        self._walk_memo: GenerationalCache = GenerationalCache(memo_limit)
        self._lex_ids: GenerationalCache = GenerationalCache(memo_limit)
        self._shape_ids: GenerationalCache = GenerationalCache(memo_limit)
        self._cut_memo: GenerationalCache = GenerationalCache(memo_limit)  # (shape, cut parents' uids) -> truncation
        self._trunc_memo: GenerationalCache = GenerationalCache(memo_limit)  # uid << 9 | _trunc_low -> truncation
        self._lex_memo: GenerationalCache = GenerationalCache(memo_limit)
        earley_set, scan_pairs, accept, _, _ = self._build_set(((0, SELF),))  # held till interned
        self.initial_state = self._intern_state(scan_pairs, accept, False)

    def _terminal_built(self, t: int, dfa: ByteDFA) -> None:
        for field, value in zip(_Unbuilt.FIELDS, (dfa.transitions, dfa.accepting_list, dfa.has_exit_list,
                                                  [None] * dfa.n_states)):
            table = getattr(self, field)
            if t < len(table):
                table[t] = value
            else:
                table.append(value)

    # ------------------------------------------------------------ interning

    def _intern_set(self, waiting: dict, leo: dict, parents: tuple) -> EarleySet:
        key = _set_key(waiting, leo)
        ref = self._sets.data.get(key)  # the dictionary under the weak one: no Python-level ``get`` per step
        found = None if ref is None else ref()
        if found is None:
            # every entry holds an origin at each even position (an item's, or a Leo entry's ``(~sym, y, o)``)
            order = dict.fromkeys([o for entry in key for o in entry[2::2] if o != SELF])
            by_uid = {s.uid: s for s in parents}
            parents = tuple(by_uid[u] for u in order)
            with self._lock:
                found = self._sets.get(key)
                if found is None:
                    found = EarleySet(next(_uids), key, parents)
                    # by uid first: another thread may find the set by content (no lock) as soon as it is in
                    # ``_sets``, and then look its items' origin up by uid
                    self._set_by_uid[found.uid] = found
                    self._sets[key] = found
        return found

    def _intern_state(self, pairs: tuple, accepting: bool, lossy: bool) -> ParserState:
        """The state of ``pairs``. Every set a pair starts in must be alive (the caller holds it): a new state
        looks its origins up by uid and keeps them alive."""
        if not pairs and not accepting:
            return DEAD_UNKNOWN if lossy else DEAD
        pairs = tuple(sorted(set(pairs)))
        # the key: the pairs themselves (most states), else the pairs and the flags (a last item that is an int,
        # not a pair): two levels of tuples, as ``_intern_set``'s
        flags = accepting + 2 * lossy
        key = pairs + (flags,) if flags else pairs
        found = self._states[key]
        if found is None:
            order = dict.fromkeys([o for _, o, _, _ in pairs if o != SELF])
            origins = tuple([self._set_by_uid.get(u) for u in order])  # None: freed (swept from the table or not)
            if None in origins:  # a caller let a set its pairs start in die: a bug, never a silently wrong state
                raise RuntimeError("a new parser state's origin set was freed before the state was interned")
            with self._lock:
                found = self._states[key]
                if found is None:
                    found = self._states.put(key, ParserState(pairs, accepting, lossy, origins))
        return found

    def _shape(self, obj: "EarleySet | ParserState") -> int:
        """The id of a set's or state's shape: its interning key with every origin uid replaced by its index of
        first appearance (``_first_seen``). A set's or state's truncation depends only on its shape and its
        origins' truncations (``_cut_memo``). Found on first use: most sets and states (those a DEEP check walks
        through) are never truncated."""
        if obj.shape:
            return obj.shape
        order: dict[int, int] = {}
        if type(obj) is EarleySet:
            structure = tuple([(entry[0], *[x if i & 1 else _first_seen(order, x) for i, x in enumerate(entry[1:], 1)])
                               for entry in obj.key])
        else:
            # an int last: no set's shape (tuples only) is equal
            structure = (*[(p, _first_seen(order, o), t, q) for p, o, t, q in obj.pairs],
                         obj.accepting + 2 * obj.lossy)
        found = self._shape_ids[structure]
        if found is None:
            found = self._shape_ids.put(structure, next(_uids))
        obj.shape = found
        return found

    def _lex_id(self, pairs: tuple) -> int:
        """An id for the ``(terminal, q)`` column of ``pairs``: states in different contexts at the same lexical
        place (a value inside an object at depth 3 or 7) share it, and with it ``_lex_step``'s walks. Ids are
        never reused, so a memo entry of an evicted id can never match another column."""
        column = tuple([(t, q) for _, _, t, q in pairs])
        found = self._lex_ids[column]
        if found is None:
            found = self._lex_ids.put(column, next(_uids))
        return found

    def _state_lex(self, state: ParserState) -> int:
        """``state.lex``, found on first use (a state a DEEP check walks through is never stepped by a token)."""
        state.lex = self._lex_id(state.pairs)
        return state.lex

    def set_of(self, uid: int) -> EarleySet:
        """The live set with this uid (a live item or pair keeps its origin set alive)."""
        return self._set_by_uid[uid]

    @property
    def n_states(self) -> int:
        """Parser states interned now (a table of at most ``memo_limit``; matchers and memo tables may hold more)."""
        return len(self._states)

    @property
    def n_sets(self) -> int:
        """Earley sets alive now."""
        return len(self._sets)

    def cache_stats(self) -> dict:
        return {"parser_states": self.n_states, "earley_sets": self.n_sets,
                "memo_entries": sum(map(len, self.memo_tables()))}

    def memo_tables(self) -> tuple[GenerationalCache, ...]:
        """Every memo table of the parser (each bounded to two generations of ``memo_limit`` entries)."""
        return (self._kernel_memo, self._complete_memo, self._byte_memo, self._expect_memo, self._walk_memo,
                self._lex_ids, self._lex_memo, self._shape_ids, self._cut_memo, self._trunc_memo)

    def _row(self, t: int, q: int) -> tuple[int, ...]:
        row = self._rows[t][q]
        if row is None:
            row = self._rows[t][q] = tuple(self.transitions[t][q].tolist())
        return row

    # --------------------------------------------------------------- closure

    def _complete(self, lhs: int, origin: int) -> tuple:
        """``(whether completing ``lhs`` that started at set ``origin`` accepts, whether it reached ``TOP``, *the
        items it advances)``, one flat tuple (see ``_set_key``). The items start in ``origin`` or its parents:
        alive while the caller, which holds ``origin``, uses them. So the memo entry holds no set; once
        ``origin`` is freed its entry is never looked up again (uids are never reused)."""
        key = origin * self._n_nonterminals + lhs  # an int key: no tuple for the garbage collector to track
        hit = self._complete_memo[key]
        if hit is not None:
            return hit
        earley_set = self._set_by_uid[origin]
        leo = earley_set.leo_of(lhs)
        if leo is not None:
            lhs = leo[0]
            if leo[1] != SELF:
                earley_set = self._set_by_uid[leo[1]]
        if lhs == 0:
            result: tuple = (True, False)
        elif earley_set is TOP:
            result = (False, True)
        elif earley_set is ANY:  # every item of the grammar waiting on lhs, in any context; or the end of the input
            result = (True, False, *[(p + 1, _ANY_UID) for p in self.waiting_anywhere[lhs]])
        else:
            uid = earley_set.uid
            result = (False, False, *[(p + 1, uid if o == SELF else o) for p, o in earley_set.waiting_on(lhs)])
        return self._complete_memo.put(key, result)

    def _build_set(self, kernel: tuple) -> tuple:
        """Close ``kernel`` (items whose origins are alive) into an Earley set.

        Returns ``(earley_set, scan_pairs, accept, touched, lex)``: the interned
        set (the caller holds it while it uses the pairs); its scan pairs
        ``(position, origin, terminal, 0)`` (origins resolved; terminals that
        can consume a byte), which start in the set or in the kernel's origins
        and their parents; whether the start symbol completed here; whether a
        completion reached ``TOP`` (then readings are missing); the pairs'
        ``_lex_id``. The memo keeps ``(uid, accept, touched, lex, *scan_pairs)``,
        not the set: a flat tuple the garbage collector soon stops scanning
        (see ``_set_key``). A hit whose set has since been freed is built again.
        """
        key = kernel if len(kernel) == 1 else tuple(sorted(kernel))
        hit = self._kernel_memo[key]
        if hit is not None:
            ref = self._set_by_uid.data.get(hit[0])
            found = None if ref is None else ref()
            if found is not None:
                return found, hit[4:], hit[1], hit[2], hit[3]
        pos_sym, pos_lhs, nullable, term_nullable = self.pos_sym, self.pos_lhs, self.nullable, self.term_nullable
        seen = set(kernel)
        agenda = list(kernel)
        waiting: dict[int, list] = defaultdict(list)
        scans: list = []
        predicted: set[int] = set()
        closures: list[_Prediction] = []  # the context-free part: everything predicted, as precomputed closures
        accept = False
        touched = False
        while agenda:
            item = agenda.pop()
            p, origin = item
            sym = pos_sym[p]
            if sym is None:
                if pos_lhs[p] == 0:
                    accept = True
                    continue
                if origin == SELF:
                    continue  # an ε-completion: handled when the nullable symbol was predicted
                completion = self._complete(pos_lhs[p], origin)
                accept = accept or completion[0]
                touched = touched or completion[1]
                for new in completion[2:]:
                    if new not in seen:
                        seen.add(new)
                        agenda.append(new)
                continue
            if sym >= 0:
                waiting[sym].append(item)
                if sym not in predicted:
                    closure = self._predicted(sym)
                    closures.append(closure)
                    predicted |= closure.nonterminals
                skip = sym in nullable
            else:
                scans.append((p, origin, ~sym))
                skip = term_nullable[~sym]
            if skip:
                new = (p + 1, origin)
                if new not in seen:
                    seen.add(new)
                    agenda.append(new)
        own_waiting = {sym: {o for _, o in items} for sym, items in waiting.items()}  # the kernel's part
        for closure in closures:
            for sym, items in closure.waiting.items():
                waiting[sym].extend(items)
        if len(closures) > 1:  # closures of different nonterminals may overlap
            waiting = defaultdict(list, {sym: list(dict.fromkeys(items)) for sym, items in waiting.items()})
        leo = self._leo_entries(waiting)
        for sym in leo:
            del waiting[sym]
        # every origin met here is alive now (reachable from the kernel's); hold the ones kept (predicted items
        # start here: only the kernel's part and Leo entries name other sets)
        set_by_uid = self._set_by_uid
        used = {o for sym, origins in own_waiting.items() if sym in waiting for o in origins}
        used.update(o for _, o in leo.values())
        used.discard(SELF)
        earley_set = self._intern_set({sym: tuple(items) for sym, items in waiting.items()}, leo,
                                      tuple(set_by_uid[u] for u in used))
        uid = earley_set.uid
        has_exit = self.has_exit
        own = [(p, uid if o == SELF else o, t, 0) for p, o, t in scans if has_exit[t][0]]
        predicted_pairs = [zip(c.scan_positions, itertools.repeat(uid), c.scan_terminals, itertools.repeat(0))
                           for c in closures if c.scan_positions]
        pairs = itertools.chain(own, *predicted_pairs)
        scan_pairs = tuple(dict.fromkeys(pairs) if len(predicted_pairs) + bool(own) > 1 else pairs)
        lex = self._lex_id(scan_pairs)
        self._kernel_memo.put(key, (uid, accept, touched, lex, *scan_pairs))
        return earley_set, scan_pairs, accept, touched, lex

    def _predicted(self, nonterminal: int) -> "_Prediction":
        """The closure of predicting ``nonterminal`` (only items predicted here: context-free, computed once)."""
        found = self._predictions[nonterminal]
        if found is not None:
            return found
        pos_sym, nullable, term_nullable, predict = self.pos_sym, self.nullable, self.term_nullable, self.predict
        agenda = [(start, SELF) for start in predict[nonterminal]]
        seen = set(agenda)
        done = {nonterminal}
        waiting: dict[int, list] = defaultdict(list)
        scans: list = []
        while agenda:
            item = agenda.pop()
            p = item[0]
            sym = pos_sym[p]
            if sym is None:
                continue  # an ε-completion: handled where the nullable symbol was predicted
            if sym >= 0:
                waiting[sym].append(item)
                if sym not in done:
                    done.add(sym)
                    for start in predict[sym]:
                        new = (start, SELF)
                        if new not in seen:
                            seen.add(new)
                            agenda.append(new)
                skip = sym in nullable
            else:
                scans.append((p, SELF, ~sym))
                skip = term_nullable[~sym]
            if skip:
                new = (p + 1, SELF)
                if new not in seen:
                    seen.add(new)
                    agenda.append(new)
        found = self._predictions[nonterminal] = _Prediction(
            {sym: tuple(items) for sym, items in waiting.items()}, tuple(scans), frozenset(done), self.has_exit)
        return found

    def _leo_entries(self, waiting: dict[int, list]) -> dict[int, tuple]:
        """Leo entries of a set: ``sym -> (Y, origin)`` where completing ``sym`` here means completing ``Y`` there.

        ``sym`` qualifies when exactly one item waits on it and ``sym`` is that
        item's last symbol. The entry follows the chain to its top, through
        earlier sets' entries and through this set's own (``origin == SELF``),
        so an entry's target never has an entry itself.
        """
        pos_last, pos_lhs = self.pos_last, self.pos_lhs
        candidates: dict[int, tuple] = {}
        for sym, items in waiting.items():
            if len(items) == 1:
                p, origin = items[0]
                if pos_last[p]:
                    candidates[sym] = (pos_lhs[p], origin)
        resolved: dict[int, tuple | None] = {}
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
                    far = self._set_by_uid[origin].leo_of(x)
                    if far is None:
                        target = (x, origin)
                    else:
                        target = (far[0], origin if far[1] == SELF else far[1])
                    break
                if x not in candidates:
                    target = (x, SELF)
                    break
                cur = x
            for sym in reversed(path):
                resolved[sym] = target
            # a same-set link whose successor got no entry falls back to (x, SELF)
            for sym in path:
                if resolved[sym] is None:
                    x, origin = candidates[sym]
                    if origin == SELF and x in resolved and resolved[x] is None and x not in path:
                        resolved[sym] = (x, SELF)
        return {sym: t for sym, t in resolved.items() if t is not None}

    # ------------------------------------------------------------------ steps

    @property
    def byte_memo_get(self) -> Callable[[int], ParserState | None]:
        """``step_byte``'s memo lookup, for a caller's hot loop: ``get(state.uid << 8 | byte)`` is the state after
        the byte if this generation of the memo holds it, else ``None`` (then call ``step_byte``)."""
        return self._byte_memo.get

    def step_byte(self, state: ParserState, byte: int) -> ParserState:
        """The state after one more byte (``DEAD`` if no reading survives)."""
        key = state.uid << 8 | byte  # an int key: no tuple for the garbage collector to track
        hit = self._byte_memo[key]
        if hit is not None:
            return hit
        if state is DEAD or state is DEAD_UNKNOWN:
            return state
        pairs = []
        completed = []
        accepting = self.accepting
        has_exit = self.has_exit
        rows = self._rows
        for p, o, t, q in state.pairs:
            row = rows[t][q] or self._row(t, q)
            q2 = row[byte]
            if q2 >= 0:
                if has_exit[t][q2]:
                    pairs.append((p, o, t, q2))
                if accepting[t][q2]:
                    completed.append((p + 1, o))
        accept = False
        lossy = state.lossy
        if completed:
            earley_set, scan_pairs, accept, touched, _ = self._build_set(tuple(completed))  # held till interned
            lossy = lossy or touched
            pairs.extend(scan_pairs)
        return self._byte_memo.put(key, self._intern_state(tuple(pairs), accept, lossy))

    def step_token(self, state: ParserState, data: bytes) -> tuple[ParserState, bool]:
        """(state after ``data``, whether the input was a sentence at a byte boundary after the first byte).

        Equal to ``step_bytes`` but faster on new states: each pair walks its
        terminal's DFA over the bytes (a context-free walk, memoized per
        ``(terminal, q, bytes)``), and the parser only works where a lexeme
        completes; nothing between boundaries is interned.
        """
        if state is DEAD or state is DEAD_UNKNOWN:
            return state, False
        n = len(data)
        lex_step = self._lex_step
        lossy = state.lossy
        built = []  # the sets opened inside the token: their pairs' origins, alive till the state is interned
        final: list = []
        completions: dict[int, list] = {}
        starts = state.pairs
        lex = state.lex or self._state_lex(state)
        k = 0
        passed = False
        accept = False  # whether the state after all of ``data`` accepts
        while True:
            rest = data[k:] if k else data
            for i, q_end, ends in lex_step(lex, starts, rest):
                p, o, t, _ = starts[i]
                if q_end >= 0:
                    final.append((p, o, t, q_end))
                for j in ends:
                    at = completions.get(k + j)
                    if at is None:
                        completions[k + j] = [(p + 1, o)]
                    else:
                        at.append((p + 1, o))
            if not completions:
                break
            k = min(completions)
            done = completions.pop(k)
            earley_set, starts, accept_here, touched, lex = self._build_set(
                (done[0],) if len(done) == 1 else tuple(dict.fromkeys(done)))
            built.append(earley_set)
            lossy = lossy or touched
            passed = passed or accept_here
            if k == n:
                final.extend(starts)
                accept = accept_here
                break
        if not final and not accept:
            return (DEAD_UNKNOWN if lossy else DEAD), passed
        return self._intern_state(tuple(final), accept, lossy), passed

    def _lex_step(self, lex: int, pairs: tuple, data: bytes) -> tuple:
        """The pairs (of ``_lex_id`` ``lex``) that survive ``data`` or complete inside it: ``(index in pairs, final
        state or -1, prefix lengths where it accepts)`` each. Context-free, so memoized per column, not per state:
        most pairs die on a token's first byte, and a new state at a known lexical place walks nothing."""
        key = (lex, data)
        hit = self._lex_memo[key]
        if hit is None:
            walked: dict = {}  # pairs that share a terminal and DFA state walk once
            found = []
            for i, (_, _, t, q) in enumerate(pairs):
                result = walked.get((t, q))
                if result is None:
                    result = walked[(t, q)] = self._walk(t, q, data)
                if result[0] >= 0 or result[1]:
                    found.append((i, *result))
            hit = self._lex_memo.put(key, tuple(found))
        return hit

    def _walk(self, t: int, q: int, data: bytes) -> tuple[int, tuple[int, ...]]:
        """Terminal ``t`` from DFA state ``q`` over ``data``: (final state if alive and not finished, else -1;
        the prefix lengths >= 1 after which it accepts)."""
        key = (t, q, data)
        hit = self._walk_memo[key]
        if hit is not None:
            return hit
        rows = self._rows[t]
        accepting = self.accepting[t]
        ends = []
        for i, byte in enumerate(data, 1):
            q = (rows[q] or self._row(t, q))[byte]
            if q < 0:
                break
            if accepting[q]:
                ends.append(i)
        else:
            if not self.has_exit[t][q]:
                q = -1
        return self._walk_memo.put(key, (q, tuple(ends)))

    def step_bytes(self, state: ParserState, data: bytes) -> tuple[ParserState, bool, int]:
        """Feed ``data``; returns (state, accepted at some byte boundary after the first byte, bytes consumed before dying)."""
        passed_accept = False
        for i, byte in enumerate(data):
            state = self.step_byte(state, byte)
            if state is DEAD or state is DEAD_UNKNOWN:
                return state, passed_accept, i
            passed_accept = passed_accept or state.accepting
        return state, passed_accept, len(data)

    def expected_after(self, item: tuple) -> tuple[tuple[int, ...], bool]:
        """Terminals that can start right after the terminal of ``item`` (``(position, origin)``) completes; and
        whether that reached ``TOP``."""
        hit = self._expect_memo[item]
        if hit is None:
            sym = self.pos_sym[item[0] + 1]
            if sym is not None and (sym >= 0 and sym not in self.nullable or sym < 0 and not self.term_nullable[~sym]):
                # nothing after it can complete here: what comes next is context-free
                hit = self._expect_memo.put(item, (self._first_terminals(sym), False))
            else:
                _, scan_pairs, _, touched, _ = self._build_set(((item[0] + 1, item[1]),))
                hit = self._expect_memo.put(item, (tuple(sorted({t for _, _, t, _ in scan_pairs})), touched))
        return hit

    def _first_terminals(self, sym: int) -> tuple[int, ...]:
        """The terminals that can start a non-nullable symbol (as ``expected_after`` reports them)."""
        found = self._first.get(sym)
        if found is None:
            scans = ((~sym,),) if sym < 0 else ((t,) for _, _, t in self._predicted(sym).scans)
            found = self._first[sym] = tuple(sorted({t for (t,) in scans if self.has_exit[t][0]}))
        return found

    def with_lexer_states(self, state: ParserState, new_states: Callable[[int], Sequence[int] | None]) -> ParserState:
        """``state`` with each scan pair's DFA state ``q`` replaced by ``new_states(t)[q]`` (a terminal for which
        it gives ``None`` keeps its states); ``state`` itself when nothing changes. The caller holds ``state``,
        which holds the origin sets the new state starts in."""
        pairs = []
        changed = False
        for p, o, t, q in state.pairs:
            table = new_states(t)
            if table is not None and int(table[q]) != q:
                q = int(table[q])
                changed = True
            pairs.append((p, o, t, q))
        return self._intern_state(tuple(pairs), state.accepting, state.lossy) if changed else state

    # ------------------------------------------------------------ truncation

    def truncated(self, state: ParserState, depth: int, beyond: EarleySet = TOP) -> ParserState:
        """``state`` with every origin more than ``depth`` completions away replaced by ``beyond`` (``TOP`` or ``ANY``)."""
        if not 0 <= depth < _MAX_DEPTH:
            raise ValueError(f"truncation depth {depth} is outside 0..{_MAX_DEPTH - 1}")
        if not state.pairs:  # DEAD, DEAD_UNKNOWN, or a sentence with nothing left to read: no context to cut
            return state
        return self._cut(state, _trunc_low(depth, beyond), beyond, self._rebuilt_state)

    def _rebuilt_state(self, state: ParserState, new: dict, cut: tuple) -> ParserState:
        return self._intern_state(tuple([(p, new[o], t, q) for p, o, t, q in state.pairs]), state.accepting,
                                  state.lossy)  # ``cut`` (held by the caller) holds the new origins

    def _rebuilt_set(self, earley_set: EarleySet, new: dict, cut: tuple) -> EarleySet:
        waiting = {sym: tuple([(p, new[o]) for p, o in items]) for sym, items in earley_set.waiting.items()}
        return self._intern_set(waiting, {sym: (y, new[o]) for sym, (y, o) in earley_set.leo.items()}, cut)

    def _cut(self, obj, low: int, beyond: EarleySet, rebuild):
        """The truncation of ``obj`` (a state or a set) at the depth and ``beyond`` of ``low`` (``_trunc_low``):
        memoized per object, then by its shape and its sources' (origins' or parents') truncations one level
        shallower; on a miss, ``rebuild(obj, uid -> new uid, truncated sources)`` makes it.
        (Memo tables of int keys, not a dict on each object: the garbage collector stops scanning the keys,
        and a dict of objects it would scan for good.)"""
        memo = self._trunc_memo
        memo_key = obj.uid << 9 | low
        found = memo[memo_key]
        if found is not None:
            return found
        sources = obj.parents if type(obj) is EarleySet else obj.origins
        low -= 2  # one level shallower
        cut = []
        for s in sources:  # the recursion is as deep as the (small) truncation depth, never the input
            if low < 2 or s is TOP or s is ANY:  # depth 0, or no context beyond
                cut.append(beyond)
            else:
                c = memo[s.uid << 9 | low]
                cut.append(c if c is not None else self._cut(s, low, beyond, self._rebuilt_set))
        if all(map(operator.is_, cut, sources)):  # nothing as deep as ``depth``: the object is its own cut
            return memo.put(memo_key, obj)
        key = (self._shape(obj), *[s.uid for s in cut])
        found = self._cut_memo[key]
        if found is None:
            new = {s.uid: c.uid for s, c in zip(sources, cut)}
            new[SELF] = SELF
            found = self._cut_memo.put(key, rebuild(obj, new, tuple(cut)))
        return memo.put(memo_key, found)

    # --------------------------------------------------------------- queries

    def is_accepting(self, state: ParserState) -> bool:
        return state.accepting

    def is_viable(self, state: ParserState) -> bool:
        return not is_dead(state)

    def pairs(self, state: ParserState) -> tuple:
        return state.pairs

    def live_items(self, state: ParserState) -> int:
        """How many scan pairs the state holds (constant under Leo for right recursion)."""
        return len(state.pairs)
