"""Public entry points: terminals and regular expressions -> ``ByteDFA``, and DFA combinators."""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .. import ir
from ..errors import DFATooLarge, GrammarError
from ..caches import WeakTable
from . import kinds
from .dfa import ByteDFA, LazyDFA, StateLimit, byte_columns, determinize, finalize, from_table
from .guarded import AT_START, OTHER, determinize_guarded
from .labelled import Labelled, chained, labelled_dfa, lazy_labelled_dfa
from .nfa import NFA, DFALeaf, InvalidExpr, NFATooLarge, Node, WordTooLong
from .regex import BOL, BOS, Anchor, Look, RegexError, translate

DEFAULT_MAX_STATES = 10_000


def _nfa_limit(max_states: int) -> int:
    # An NFA may legitimately be larger than its DFA (UTF-8 paths, repeat
    # copies), but never unboundedly: this bounds time and memory.
    return max(100_000, 20 * max_states)


class _Context:
    """What is being built, for error messages."""

    def __init__(self, label: str, span: ir.Span | None = None) -> None:
        self.label = label
        self.span = span

    def where(self) -> dict:
        return ir.where(self.span)

    def too_large(self, limit: int, what: str = "DFA") -> DFATooLarge:
        return DFATooLarge(f"{self.label}: {what} exceeds the limit of {limit} states", **self.where())

    def regex_error(self, e: RegexError, pattern: ir.Pattern) -> GrammarError:
        at = f" at offset {e.pos}" if e.pos is not None else ""
        src = pattern.source if len(pattern.source) <= 60 else pattern.source[:57] + "..."
        return GrammarError(f"{self.label}: {e.message}{at} in regex {src!r}", **self.where())

    def error(self, message: str) -> GrammarError:
        return GrammarError(f"{self.label}: {message}", **self.where())


def _walk(node, into_looks: bool = True):
    """Every node of a regex tree (iterative); with ``into_looks``, lookaround bodies too."""
    stack = [node]
    while stack:
        x = stack.pop()
        yield x
        if isinstance(x, ir.Concat):
            stack.extend(x.parts)
        elif isinstance(x, ir.Alternation):
            stack.extend(x.options)
        elif isinstance(x, ir.Repeat):
            stack.append(x.item)
        elif isinstance(x, ir.Automaton):
            stack.extend(label for _, label, _ in x.edges)
        elif isinstance(x, Look) and into_looks:
            stack.append(x.body)


def _contains_guard(node) -> bool:
    return any(isinstance(x, (Anchor, Look)) for x in _walk(node, into_looks=False))


_ANY_BYTES = ir.Repeat(ir.ByteClass(((0, 255),)), 0, None)


class _LookBodies:
    """The DFAs of an NFA's lookaround bodies, for ``guarded.determinize_guarded``.

    A lookahead at position k holds when the rest of the input is in
    ``body Σ*``: it sees the input to its very end, so end anchors inside it
    mean the end of the input; start anchors read the context of k, and
    lookbehinds inside it the trackers' states at k (one DFA per such
    variant, compiled when first needed). A lookbehind holds when the input
    so far is in ``Σ* body``. Lookaheads or end anchors inside a lookbehind
    would need the input after k: refused.
    """

    def __init__(self, looks: list[Look], max_states: int, nfa_limit: int, ctx: "_Context") -> None:
        self.looks = looks
        self.max_states = max_states
        self.nfa_limit = nfa_limit
        self.ctx = ctx
        self._ahead: dict[tuple, ByteDFA | None] = {}
        self._behind: dict[Look, ByteDFA | None] = {}
        self._info: dict[int, tuple] = {}

    def _ahead_info(self, index: int) -> tuple:
        """(reads start anchors, nested lookbehinds, byte ranges) of lookahead ``index``."""
        if index not in self._info:
            reads_start, trackers, ranges = False, [], set()
            stack = [self.looks[index].body]
            while stack:
                body = stack.pop()
                nfa = NFA(self.nfa_limit)
                nfa.build(body, _no_pattern)
                ranges.update((lo, hi) for edges in nfa.edges for lo, hi, _ in edges)
                reads_start |= any(k in (BOS, BOL) for gs in nfa.guards.values() for k, _ in gs)
                for look in nfa.looks:
                    if look.behind:
                        trackers.append(look)
                    else:
                        stack.append(look.body)
            self._info[index] = (reads_start, tuple(dict.fromkeys(trackers)), ranges)
        return self._info[index]

    def ahead_trackers(self, index: int) -> tuple:
        return self._ahead_info(index)[1]

    def ahead_ranges(self, index: int) -> set:
        return self._ahead_info(index)[2]

    def ahead(self, index: int, ctx: int, start_lb: dict) -> ByteDFA | None:
        reads_start, trackers, _ = self._ahead_info(index)
        key = (index, ctx if reads_start else OTHER, tuple(start_lb.get(t, 0) for t in trackers))
        if key not in self._ahead:
            look = self.looks[index]
            root = ir.Concat((look.body, _ANY_BYTES))
            if reads_start or trackers:
                dfa = _determinized(root, self.max_states, self.nfa_limit, self.ctx, start_ctx=key[1], start_lb=start_lb)
            else:
                dfa = self._shared(root, OTHER)
            if look.negated:
                dfa = complement_bytes(dfa)
            self._ahead[key] = dfa if dfa.n_states else None
        return self._ahead[key]

    def behind(self, look: Look) -> ByteDFA | None:
        if look not in self._behind:
            for x in _walk(look.body):
                if isinstance(x, Look) and not x.behind:
                    raise InvalidExpr("a lookahead inside a lookbehind is not supported")
                if isinstance(x, Anchor) and x.kind not in (BOS, BOL):
                    raise InvalidExpr("an end anchor ($, \\Z) inside a lookbehind is not supported")
            dfa = self._shared(ir.Concat((_ANY_BYTES, look.body)), AT_START)
            self._behind[look] = dfa if dfa.n_states else None
        return self._behind[look]

    def _shared(self, root: ir.Concat, start_ctx: int) -> ByteDFA:
        """The DFA of a body that reads no context, shared across compilations (``\\b``'s ``\\w`` recurs)."""
        return _memo(
            _BODY_CACHE,
            _BODY_CACHE_SIZE,
            (root, start_ctx, self.max_states),
            lambda: _determinized(root, self.max_states, self.nfa_limit, self.ctx, start_ctx=start_ctx),
        )


_BODY_CACHE: dict[tuple, _Packed] = {}
_BODY_CACHE_SIZE = 256
_LABEL_CACHE: dict[tuple, _Packed] = {}  # an automaton edge's label -> its DFA (``_labels_determinized``)
_LABEL_CACHE_SIZE = 1024


_MEMO_BYTES_LIMIT = 64 << 20  # bytes of packed DFA tables one memo table may hold
_memo_bytes: dict[int, int] = {}  # id(cache) -> bytes of packed tables it holds
_memo_lock = threading.Lock()
_MISSING = object()
_shared_dfas = WeakTable()  # fingerprint -> a DFA some grammar still holds: a memo hit returns it, not a copy


@dataclass(frozen=True, eq=False)
class _Packed:
    """A ``ByteDFA`` as a memo holds it: one column per class of bytes that every state reads alike (a string's
    lexeme reads ~40 classes: a sixth of the full table), its states as they were."""

    table: np.ndarray  # int32 [n, classes]
    class_of_byte: np.ndarray  # [256]
    accepting: np.ndarray
    fingerprint: str

    @staticmethod
    def of(dfa: ByteDFA) -> "_Packed":
        table, class_of_byte = byte_columns(dfa.transitions)
        return _Packed(table, class_of_byte.astype(np.uint8), dfa.accepting, dfa.fingerprint)

    @property
    def nbytes(self) -> int:
        return self.table.nbytes + 256

    def unpacked(self) -> ByteDFA:
        dfa = ByteDFA.adopt(np.take(self.table, self.class_of_byte, axis=1), self.accepting)
        dfa.__dict__["fingerprint"] = self.fingerprint  # ``cached_property``: the arrays are the ones it hashed
        return dfa


def _memo(cache: dict, size: int, key, make):
    """``cache[key]``, made by ``make()`` when missing. Least recently used entries go first when it would hold
    more than ``size`` entries or ``_MEMO_BYTES_LIMIT`` bytes of packed tables (a server compiles new grammars
    all day; the lexemes its schemas share, a tag's pattern, stay). A DFA is held packed (``_Packed``); a hit
    returns the DFA itself while a grammar still holds it (or the same language made under another key), else
    unpacks it. A ``LazyDFA`` is held as it is until it is built (counted at what it holds), then packed."""
    with _memo_lock:
        hit = cache.pop(key, _MISSING)
        if hit is not _MISSING:
            cache[key] = hit  # most recently used: last
            if not isinstance(hit, _Packed):
                return hit
            live = _shared_dfas.get(hit.fingerprint)
            if live is not None:
                return live
    if hit is _MISSING:
        made = make()
        if isinstance(made, LazyDFA) and not made.built:
            # held as it is (packing it would build it), and packed once built
            object.__setattr__(made, "on_built", functools.partial(_pack_built, cache, key))
            hit = made
        else:
            hit = _Packed.of(made) if isinstance(made, ByteDFA) else made
    else:
        made = hit.unpacked()
    return _hold(cache, size, key, hit, made)


def _pack_built(cache: dict, key, lazy: LazyDFA) -> None:
    """A memo's ``LazyDFA``, now built: held packed from now on, like any other DFA (if it is still held)."""
    _hold(cache, None, key, _Packed.of(lazy), lazy, replacing=lazy)


def _hold(cache: dict, size: int | None, key, hit, made, replacing=None):  # type: ignore[no-untyped-def]
    """Put ``hit`` in ``cache`` (most recently used), evicting the least recently used past ``size`` entries
    or ``_MEMO_BYTES_LIMIT`` bytes; returns ``made``, or the DFA of the same language a live grammar holds.
    ``replacing``: only in place of that entry."""
    with _memo_lock:
        if replacing is not None and cache.get(key) is not replacing:
            return made
        if isinstance(hit, _Packed):
            live = _shared_dfas.get(hit.fingerprint)  # the same language made under another key: one object
            if live is None:
                _shared_dfas[hit.fingerprint] = made
            else:
                made = live
        used = _memo_bytes.get(id(cache), 0) - _nbytes(cache.pop(key, None))
        while cache and ((size is not None and len(cache) >= size) or used + _nbytes(hit) > _MEMO_BYTES_LIMIT):
            used -= _nbytes(cache.pop(next(iter(cache))))
        cache[key] = hit
        _memo_bytes[id(cache)] = used + _nbytes(hit)
    return made


def _nbytes(entry) -> int:  # type: ignore[no-untyped-def]
    if isinstance(entry, LazyDFA):
        return entry.held_bytes
    return entry.nbytes if isinstance(entry, _Packed) else 0


def complement_bytes(dfa: ByteDFA) -> ByteDFA:
    """Every byte string not in ``dfa``'s language."""
    n = dfa.n_states
    t = np.full((n + 1, 256), n, dtype=np.int64)
    t[:n] = np.where(dfa.transitions < 0, n, dfa.transitions)
    return from_table(t, np.append(~dfa.accepting, True))


def _labels_determinized(root: Node, determinized: Callable[[Node], ByteDFA], max_states: int,
                         lazy: bool = False) -> Node:
    """``root`` with each ``Automaton``'s edge labels replaced by their DFAs (one per distinct label), and the
    automaton itself by its DFA where its labels make deterministic tries (``labelled_dfa``). A label
    written out (a class of code points, each also a JSON escape) is a nondeterministic union of spellings;
    the subset construction over the whole automaton would track its branches in every state, passing the
    state limit before minimization merges them (three times the final states for a password pattern).
    ``lazy``: where ``root`` itself becomes one such DFA, it is a ``LazyDFA`` (``lazy_labelled_dfa``)."""
    leaves: dict = {}

    def label_leaf(label: Node) -> DFALeaf:
        leaf = leaves.get(label)
        if leaf is None:
            leaf = leaves[label] = DFALeaf(determinized(label))
        return leaf

    def labelled(node: ir.Literal | ir.Automaton) -> Labelled:
        """A literal (one edge reading it) or an automaton, over its labels' DFAs."""
        if isinstance(node, ir.Literal):
            return 2, ((0, label_leaf(node).dfa, 1),), (1,)
        return node.n_states, tuple((p, label_leaf(label).dfa, q) for p, label, q in node.edges), node.accepting

    def rebuilt(node: Node) -> Node:
        # the whole expression's DFA may be made on first use; a part's is read by the construction around it
        make = lazy_labelled_dfa if node is root and lazy else labelled_dfa
        if isinstance(node, ir.Automaton):
            direct = make(*labelled(node), max_states)
            if direct is not None:
                return DFALeaf(direct)
            return ir.Automaton(node.n_states, tuple((p, label_leaf(label), q) for p, label, q in node.edges),
                                node.accepting)
        if isinstance(node, ir.Concat):
            if any(isinstance(x, ir.Automaton) for x in node.parts) and all(
                    isinstance(x, (ir.Literal, ir.Automaton)) for x in node.parts):
                # quotes around an automaton: one automaton, so one trie DFA and no subset construction after it
                chain = chained([labelled(x) for x in node.parts if not isinstance(x, ir.Literal) or x.value])
                direct = None if chain is None else make(*chain, max_states)
                if direct is not None:
                    return DFALeaf(direct)
            return ir.Concat(tuple(rebuilt(x) for x in node.parts))
        if isinstance(node, ir.Alternation):
            return ir.Alternation(tuple(rebuilt(x) for x in node.options))
        if isinstance(node, ir.Repeat):
            return ir.Repeat(rebuilt(node.item), node.min, node.max)
        if isinstance(node, Look):
            return Look(rebuilt(node.body), behind=node.behind, negated=node.negated)
        return node

    try:
        return rebuilt(root)
    finally:
        # ``rebuilt`` calls itself through its closure: a cycle that would hold ``leaves`` (every label's DFA) and
        # ``root`` until the garbage collector finds it, after the compilation (which pauses the collector)
        rebuilt = None  # noqa: F841


def _compile(root: Node, max_states: int, ctx: _Context, lazy: bool = False) -> ByteDFA:
    """Any expression tree -> ByteDFA, mapping internal limits to ``DFATooLarge``; ``lazy``: an enum's words
    (their trie known to fit) and the automata of ``_labels_determinized`` are made on first use."""
    words = [x.value for x in root.options] if isinstance(root, ir.Alternation) and all(
        isinstance(x, ir.Literal) for x in root.options) else None
    nodes = trie_size(words) if words is not None else 0
    if words is not None and nodes <= 2 * max_states:
        # an enum's words: their trie (a table of at most that many rows), minimized, where the subset
        # construction over the words' NFA costs several times more (678 enums of the second corpus)
        if lazy and nodes <= max_states:  # the trie, so the DFA, fits: made on first use
            return LazyDFA(lambda: dfa_literal_union(words, max_states=max_states), nullable=b"" in words,
                           exits_start=any(words), held_bytes=sum(map(len, words)))
        try:
            return dfa_literal_union(words, max_states=max_states)
        except DFATooLarge:
            raise ctx.too_large(max_states) from None
    nfa_limit = _nfa_limit(max_states)

    def on_pattern(p: ir.Pattern) -> Node:
        try:
            node = translate(p.source, p.flags)
        except RegexError as e:
            raise ctx.regex_error(e, p) from None
        if _contains_guard(node):
            # anchors and lookarounds refer to the pattern's own extent: determinize it alone
            return DFALeaf(_determinized(node, max_states, nfa_limit, ctx))
        return node

    if any(isinstance(x, ir.Automaton) for x in _walk(root)):
        # a label (a class of code points, spelled) recurs across terminals: a counted string's chunks all share it
        try:
            root = _labels_determinized(root, lambda label: _memo(
                _LABEL_CACHE, _LABEL_CACHE_SIZE, (ir.fingerprint(label) or label, max_states),
                lambda: _determinized(label, max_states, nfa_limit, ctx, on_pattern)), max_states, lazy)
        except StateLimit:
            raise ctx.too_large(max_states) from None
        if isinstance(root, DFALeaf):
            return root.dfa
    try:
        return _determinized(root, max_states, nfa_limit, ctx, on_pattern)
    except DFATooLarge:
        if not isinstance(root, ir.Alternation) or len(root.options) < 2:
            raise
    # A union of many spellings (a JSON Schema number with bounds and ``multipleOf``) can pass the limit in the
    # subset construction over its raw NFA while its minimal DFA is small (10,000+ subsets for 1,008 states):
    # minimize each option first, then determinize their union. Options are not split further, and every
    # determinization ticks the compile budget.
    leaves = tuple(DFALeaf(_determinized(option, max_states, nfa_limit, ctx, on_pattern)) for option in root.options)
    return _determinized(ir.Alternation(leaves), max_states, nfa_limit, ctx, on_pattern)


def _determinized(
    root: Node,
    max_states: int,
    nfa_limit: int,
    ctx: _Context,
    on_pattern=None,
    start_ctx: int = AT_START,
    start_lb: dict | None = None,
) -> ByteDFA:
    nfa = NFA(nfa_limit, max_states)
    try:
        start, accept = nfa.build(root, on_pattern or _no_pattern)
        if not nfa.guards:
            # a DFA needs a state per byte of its shortest word: refuse before determinizing
            shortest = nfa.shortest_accepted(start, accept)
            if shortest is not None and shortest >= max_states:
                raise WordTooLong(max_states)
        if nfa.guards:
            bodies = _LookBodies(nfa.looks, max_states, nfa_limit, ctx)
            table, accepting, class_of_byte = determinize_guarded(
                nfa, start, accept, max_states, bodies, start_ctx, start_lb
            )
        else:
            table, accepting, class_of_byte = determinize(nfa, start, accept, max_states)
    except NFATooLarge:
        raise ctx.too_large(nfa_limit, "NFA") from None
    except (StateLimit, WordTooLong):
        raise ctx.too_large(max_states) from None
    except InvalidExpr as e:
        raise ctx.error(str(e)) from None
    return finalize(table, accepting, class_of_byte)


def _no_pattern(p: ir.Pattern) -> Node:  # pragma: no cover - patterns never nest inside patterns
    raise AssertionError("unexpected pattern")


def _describe(expr: ir.RegExpr) -> str:
    """A short, non-recursive description of ``expr`` for messages."""
    if isinstance(expr, ir.Pattern):
        src = expr.source if len(expr.source) <= 60 else expr.source[:57] + "..."
        text = f"regex {src!r}"
    elif isinstance(expr, ir.Literal):
        text = f"literal {expr.value!r}"
    else:
        text = type(expr).__name__.lower()
    return text if len(text) <= 80 else text[:77] + "..."


def regexpr_to_dfa(expr: ir.RegExpr, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """The trimmed, minimal byte DFA of ``expr`` (PLAIN semantics)."""
    return _compile(expr, max_states, _Context(_describe(expr)))


def build_dfa(terminal: ir.Terminal, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """The trimmed, minimal byte DFA of a terminal, its KBNF kind applied (see ``kinds``).

    Raises ``DFATooLarge`` past ``max_states`` and ``GrammarError`` for a bad
    or unsupported regex. The empty language is returned, not raised.
    """
    digest = ir.fingerprint(terminal.expr)  # linear in the expression, against a subset construction that is not
    if digest is None:  # a node no digest covers: built, not shared
        return _build_terminal(terminal, max_states)
    key = (digest, terminal.kind.value, max_states)
    return _memo(_FLAT_CACHE, _FLAT_CACHE_SIZE, key, lambda: _build_terminal(terminal, max_states))


# The same terminals recur across grammars (a JSON Schema's integers, strings,
# punctuation with whitespace) and their DFAs are immutable, so share them.
_FLAT_CACHE: dict[tuple, _Packed] = {}  # (ir.fingerprint of the expression, kind, state limit) -> its DFA
_FLAT_CACHE_SIZE = 4096


def _build_terminal(terminal: ir.Terminal, max_states: int) -> ByteDFA:
    label = f"terminal {terminal.name}" if terminal.name else f"terminal {_describe(terminal.expr)}"
    ctx = _Context(label, terminal.span)
    kind = terminal.kind
    if kind == ir.TerminalKind.SUBSTRINGS and isinstance(terminal.expr, ir.Literal):
        try:
            return kinds.literal_substrings(terminal.expr.value, max_states)
        except StateLimit:
            raise ctx.too_large(max_states) from None
    if kind == ir.TerminalKind.PLAIN and isinstance(terminal.expr, ir.Literal):  # a chain: no subset construction
        if len(terminal.expr.value) + 1 > max_states:
            raise ctx.too_large(max_states)
        return dfa_literal(terminal.expr.value)
    base = _compile(terminal.expr, max_states, ctx, lazy=kind == ir.TerminalKind.PLAIN)
    try:
        if kind == ir.TerminalKind.PLAIN:
            return base
        if kind == ir.TerminalKind.EARLY_END:
            return kinds.early_end(base)
        if kind == ir.TerminalKind.COMPLEMENT:
            return kinds.complement(base, max_states, _nfa_limit(max_states))
        if kind == ir.TerminalKind.SUBSTRINGS:
            return kinds.substrings(base, max_states, _nfa_limit(max_states))
    except StateLimit:
        raise ctx.too_large(max_states) from None
    except NFATooLarge:
        raise ctx.too_large(_nfa_limit(max_states), "NFA") from None
    raise GrammarError(f"{label}: unknown terminal kind {kind!r}", **ctx.where())


# ---------------------------------------------------------------- combinators


def dfa_literal(data: bytes) -> ByteDFA:
    """Exactly ``data``."""
    n = len(data)
    t = np.full((n + 1, 256), -1, dtype=np.int32)
    t[np.arange(n), np.frombuffer(bytes(data), dtype=np.uint8)] = np.arange(1, n + 1)
    accepting = np.zeros(n + 1, dtype=bool)
    accepting[n] = True
    return ByteDFA(t, accepting)


def dfa_literal_union(values: Sequence[bytes], *, max_states: int = DEFAULT_MAX_STATES,
                      max_trie_states: int | None = None) -> ByteDFA:
    """Exactly one of ``values``: built as a trie, then minimized (no subset construction).

    A union of many literals (300 one-character alternatives, 2,000 enum words)
    has a trie as large as its bytes but a minimal DFA often of a few states; the
    subset construction would stop at ``max_states`` before minimizing. The trie
    may have up to ``max_trie_states`` (default ``64 * max_states``) states.
    """
    cap = 64 * max_states if max_trie_states is None else max_trie_states
    table, final = _trie_table(values, cap)
    dfa = finalize(table, final, np.arange(256))
    if dfa.n_states > max_states:
        raise DFATooLarge(f"dfa_literal_union: DFA exceeds the limit of {max_states} states")
    return dfa


def literal_trie(values: Sequence[bytes], *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """Exactly one of ``values``, as their trie (not minimized: built in one pass, for a DFA used once).

    The trie is trimmed (every node leads to a value), and the same set of
    values in the same order gives the same DFA.
    """
    table, final = _trie_table(values, max_states)
    return ByteDFA(table.astype(np.int32), final)


def _trie_table(values: Sequence[bytes], cap: int) -> tuple[np.ndarray, np.ndarray]:
    """``(int64 [n, 256] transitions, bool [n] accepting)`` of the trie of ``values`` (at most ``cap`` nodes).
    The values are taken in sorted order, each from the end of its common prefix with the one before: the work
    follows the trie, not the bytes (``"x" * i`` for ``i < 2000``: 4,000 nodes from 2 MB)."""
    parents: list[int] = []
    labels: list[int] = []
    final = [False]
    path = [0]  # the nodes along the value before (the root first)
    before = b""
    for value in sorted(values):
        shared = common_prefix_length(before, value)
        del path[shared + 1:]
        if len(final) + len(value) - shared > cap:
            raise DFATooLarge(f"the trie of {len(values)} literals exceeds {cap} states")
        for byte in value[shared:]:
            parents.append(path[-1])
            labels.append(byte)
            path.append(len(final))
            final.append(False)
        final[path[-1]] = True
        before = value
    table = np.full((len(final), 256), -1, dtype=np.int64)
    table[np.array(parents, dtype=np.int64), np.array(labels, dtype=np.int64)] = np.arange(1, len(final))
    return table, np.array(final, dtype=bool)


def trie_size(values: Sequence[bytes]) -> int:
    """Nodes of the trie of ``values`` (the root included), from their sorted order alone."""
    before = b""
    nodes = 1
    for value in sorted(values):
        nodes += len(value) - common_prefix_length(before, value)
        before = value
    return nodes


def common_prefix_length(a: Sequence, b: Sequence) -> int:
    """The length of the longest common prefix of two strings (``bytes`` or ``str``), by halving: the slices
    compare in C, so a long shared prefix costs a few comparisons, not a Python loop over it."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def dfa_concat(parts: Sequence[ByteDFA], *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """Concatenation of the parts' languages (no parts: the empty string)."""
    parts = tuple(parts)
    return _combined("dfa_concat", parts, (), max_states, lambda: ir.Concat(tuple(DFALeaf(p) for p in parts)),
                     lambda: _glued(parts, max_states))


def _glued(parts: tuple[ByteDFA, ...], max_states: int) -> ByteDFA | None:
    """``parts`` concatenated without a subset construction, or ``None`` where that is not exact.

    ``A`` then ``B`` is deterministic as it stands when no accepting state of
    ``A`` has an edge on a byte that starts ``B`` (a key literal then ``ws ":"
    ws``, that then a value, a number then ``ws ","``: the runs a JSON Schema
    fuses): each accepting state of ``A`` takes ``B``'s start edges as well, and
    accepts iff ``B`` accepts the empty string. A word then leaves ``A`` exactly
    where a prefix of it is in ``A`` and the rest starts ``B``.
    """
    if len(parts) < 2 or any(p.n_states == 0 for p in parts):
        return None
    table = parts[0].transitions.astype(np.int64)
    accepting = parts[0].accepting.copy()
    for b in parts[1:]:
        start_edges = b.transitions[0] >= 0
        ends = np.flatnonzero(accepting)
        if (table[np.ix_(ends, np.flatnonzero(start_edges))] >= 0).any():
            return None
        offset = table.shape[0]
        if offset + b.n_states > 64 * max_states:
            return None
        shifted = np.where(b.transitions >= 0, b.transitions.astype(np.int64) + offset, -1)
        rows = table[ends]
        rows[:, start_edges] = shifted[0, start_edges]
        table[ends] = rows
        accepting[ends] = bool(b.accepting[0])
        table = np.vstack([table, shifted])
        accepting = np.concatenate([accepting, b.accepting])
    dfa = from_table(table, accepting)
    if dfa.n_states > max_states:
        raise _Context("dfa_concat").too_large(max_states)
    return dfa


def dfa_union(options: Sequence[ByteDFA], *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """Union of the options' languages (no options: the empty language)."""
    return _combined("dfa_union", tuple(options), (), max_states,
                     lambda: ir.Alternation(tuple(DFALeaf(o) for o in options)))


def dfa_repeat(item: ByteDFA, min: int, max: int | None, *, max_states: int = DEFAULT_MAX_STATES) -> ByteDFA:
    """``item`` repeated ``min`` to ``max`` times (``max=None``: unbounded)."""
    return _combined("dfa_repeat", (item,), (min, max), max_states, lambda: ir.Repeat(DFALeaf(item), min, max))


def repeat_copies(item: ByteDFA, copies: int) -> ByteDFA | None:
    """``item{1,copies}`` as ``copies`` copies of ``item``'s states: state ``i * n + q`` is copy ``i`` at ``q``
    (copy 0 keeps ``item``'s numbering, so a state of ``item`` is the same state here), and each copy's
    accepting states take ``item``'s start edges into the next copy. Deterministic, hence exact, when
    ``item``'s accepting states have no edges and it does not accept the empty word (a chunk of a counted
    string, a block of a counted repetition): a word then splits into copies one way only. ``None`` for any
    other ``item``. Not minimized: callers read states by that numbering."""
    t, accepting = item.transitions, item.accepting
    if copies < 1 or item.n_states == 0 or accepting[0] or (t[accepting] >= 0).any():
        return None

    def make() -> ByteDFA:
        n = item.n_states
        into_next = t[0]
        blocks = []
        for i in range(copies):
            block = np.where(t >= 0, t + i * n, -1)
            block[accepting] = np.where(into_next >= 0, into_next + (i + 1) * n, -1) if i + 1 < copies else -1
            blocks.append(block)
        return ByteDFA(np.vstack(blocks), np.tile(accepting, copies))

    return _memo(_COMBINED_CACHE, _COMBINED_CACHE_SIZE, ("repeat_copies", item.fingerprint, copies), make)


# The same combinations recur across grammars (every JSON Schema fuses its keys
# with the same whitespace-and-colon, its values with the same comma): results
# (and refusals) keyed by the parts' fingerprints, bounded.
_COMBINED_CACHE: dict[tuple, _Packed | DFATooLarge] = {}
_COMBINED_CACHE_SIZE = 4096


def _combined(op: str, parts: tuple[ByteDFA, ...], params: tuple, max_states: int, expr, direct=None) -> ByteDFA:
    def make() -> ByteDFA | DFATooLarge:
        try:
            built = direct() if direct is not None else None
            return built if built is not None else _compile(expr(), max_states, _Context(op))
        except DFATooLarge as err:
            return err

    key = (op, tuple(p.fingerprint for p in parts), params, max_states)
    hit = _memo(_COMBINED_CACHE, _COMBINED_CACHE_SIZE, key, make)
    if isinstance(hit, DFATooLarge):
        raise DFATooLarge(*hit.args)
    return hit
