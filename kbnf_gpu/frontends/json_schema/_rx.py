"""Small smart constructors over ``ir`` regular expressions.

``None`` stands for the empty language and ``EPS`` for the empty string; the
constructors simplify around both so generated terminals stay small.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from ...ir import Alternation, Automaton, ByteClass, CharClass, Concat, Literal, Pattern, RegExpr, Repeat, parts
from ._charset import Ranges

Rx = Optional[RegExpr]
EPS: RegExpr = Concat(())


def cc(ranges: Ranges) -> Rx:
    """One code point out of ``ranges`` (``None`` if there are none)."""
    return CharClass(tuple(ranges)) if ranges else None


def lit(s: str) -> RegExpr:
    return EPS if not s else Literal(s.encode("utf-8"))


def seq(*parts: Rx) -> Rx:
    out: list[RegExpr] = []
    run: list[Literal] = []  # the literals since the last other part: joined once, not copied per literal
    for p in parts:
        if p is None:
            return None
        items = p.parts if isinstance(p, Concat) else (p,)
        for x in items:
            if isinstance(x, Literal):
                run.append(x)
                continue
            if run:
                out.append(_joined(run))
                run = []
            out.append(x)
    if run:
        out.append(_joined(run))
    return out[0] if len(out) == 1 else Concat(tuple(out))


def _joined(run: list[Literal]) -> Literal:
    return run[0] if len(run) == 1 else Literal(b"".join(x.value for x in run))


def alt(*options: Rx) -> Rx:
    out: list[RegExpr] = []
    seen: set[RegExpr] = set()
    for o in options:
        if o is None:
            continue
        for x in (o.options if isinstance(o, Alternation) else (o,)):
            if x not in seen:
                seen.add(x)
                out.append(x)
    if not out:
        return None
    return out[0] if len(out) == 1 else Alternation(tuple(out))


FACTOR_DEPTH = 64  # leading items factored out of alternatives at most (a cap on the recursion)


def factored_alt(options: list[RegExpr]) -> Rx:
    """``alt(*options)`` with the options' common leading items factored out, a trie of alternatives:
    ``word0|word1|..`` is ``w o r d (0|1|..)``. The language is the same; the automaton's subset construction
    otherwise carries every alternative through each of its states (5,000 words in a loop: over 10 s)."""
    return _factored([x.parts if isinstance(x, Concat) else (x,) for x in options], 0)


def _factored(items: list[tuple[RegExpr, ...]], depth: int) -> Rx:
    if len(items) < 2 or depth >= FACTOR_DEPTH:
        return alt(*(seq(*x) for x in items))
    by_head: dict[RegExpr, list[tuple[RegExpr, ...]]] = {}
    out: list[Rx] = []
    for x in items:
        if x:
            by_head.setdefault(x[0], []).append(x[1:])
        elif not out:
            out.append(EPS)
    for head, rests in by_head.items():
        out.append(seq(head, *rests[0]) if len(rests) == 1 else seq(head, _factored(rests, depth + 1)))
    return alt(*out)


def rep(x: Rx, lo: int, hi: Optional[int]) -> Rx:
    if hi is not None and hi < lo:
        return None
    if x is None:
        return EPS if lo == 0 else None
    if x == EPS or hi == 0:
        return EPS
    if lo == 1 and hi == 1:
        return x
    return Repeat(x, lo, hi)


def opt(x: Rx) -> Rx:
    if x is None:
        return EPS
    if nullable(x):
        return x
    return rep(x, 0, 1)


def star(x: Rx) -> Rx:
    return rep(x, 0, None)


def nullable(x: Rx) -> bool:
    if x is None:
        return False
    if isinstance(x, (Literal,)):
        return not x.value
    if isinstance(x, (CharClass, ByteClass)):
        return False
    if isinstance(x, Concat):
        return all(nullable(p) for p in x.parts)
    if isinstance(x, Alternation):
        return any(nullable(p) for p in x.options)
    if isinstance(x, Repeat):
        return x.min == 0 or nullable(x.item)
    if isinstance(x, Automaton):  # an accepting state reached from the start over edges that read nothing
        reached, stack = {0}, [0]
        while stack:
            p = stack.pop()
            for q in (q for s, label, q in x.edges if s == p and q not in reached and nullable(label)):
                reached.add(q)
                stack.append(q)
        return not reached.isdisjoint(x.accepting)
    if isinstance(x, Pattern):  # pragma: no cover - not produced here
        raise TypeError("Pattern nodes are opaque")
    raise TypeError(type(x))


def with_parts(x: RegExpr, new: list[Rx]) -> Rx:
    """``x`` with its ``parts`` replaced by ``new`` (an automaton's edges whose label is now ``None`` dropped)."""
    if isinstance(x, Concat):
        return seq(*new)
    if isinstance(x, Alternation):
        return alt(*new)
    if isinstance(x, Repeat):
        return rep(new[0], x.min, x.max)
    if isinstance(x, Automaton):
        return Automaton(x.n_states, tuple((p, label, q) for (p, _, q), label in zip(x.edges, new)
                                           if label is not None), x.accepting)
    return x


def fold(x: RegExpr, make: Callable[[RegExpr, list[Any]], Any]) -> Any:
    """``make(node, what make gave for its parts)`` from the leaves up, once per distinct node and without
    recursion: an expression may nest as deep as a count (a counter's optional tail as a regular expression,
    ``[a-zA-Z0-9-._]{0,299}``, overflowed Python's stack)."""
    done: dict[int, Any] = {}
    stack: list[tuple[RegExpr, bool]] = [(x, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in done:
            continue
        below = parts(node)
        if not ready and below:
            stack.append((node, True))
            stack.extend((part, False) for part in below if id(part) not in done)
            continue
        done[id(node)] = make(node, [done[id(part)] for part in below])
    return done[id(x)]


def _fewest(node: RegExpr, below: list[int]) -> int:
    """The fewest symbols a match of ``node`` spans, given its parts' (0 for an automaton: not worked out)."""
    if isinstance(node, Literal):
        return len(node.value.decode("utf-8"))
    if isinstance(node, (CharClass, ByteClass)):
        return 1
    if isinstance(node, Concat):
        return sum(below)
    if isinstance(node, Alternation):
        return min(below, default=0)
    if isinstance(node, Repeat):
        return node.min * below[0]
    return 0


def within(x: Rx, most: int) -> Rx:
    """``x`` for the texts of at most ``most`` symbols: a repetition that reaches past its upper bound only in
    longer texts (``([a-z]+/?){3,1016}`` within 256) loses the bound, which made its automaton a copy of the item
    per count (and the subset construction track every count at once: seconds); the same texts of at most
    ``most`` symbols match, since a match of a part spans no more than the text. One walk carries each node's
    rewrite and its fewest symbols."""
    def make(node: RegExpr, below: list[tuple[Rx, int]]) -> tuple[Rx, int]:
        fewest = _fewest(node, [f for _, f in below])
        new = [e for e, _ in below]
        if isinstance(node, Repeat) and node.max is not None and (node.max + 1) * below[0][1] > most:
            return rep(new[0], node.min, None), fewest
        return with_parts(node, new), fewest

    return None if x is None else fold(x, make)[0]


def _nodes(x: RegExpr):
    """Every node of ``x`` (iteratively), an automaton's edge labels included."""
    stack: list[RegExpr] = [x]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(parts(e))


def holds_automaton(x: Rx) -> bool:
    """Is an ``Automaton`` part of ``x``?"""
    return x is not None and any(isinstance(e, Automaton) for e in _nodes(x))


def size(x: Rx) -> int:
    """Number of nodes (a cost measure for generated expressions)."""
    return 1 if x is None else sum(1 for _ in _nodes(x))


def span_bound(x: Rx) -> int:
    """An upper bound on the symbols a match of ``x`` spans before its repetitions loop, which bounds the states
    of its automaton where it has no loop (an enum value's layout): literals, classes, each repetition as many
    copies as it may have, an automaton's longest path without a loop."""
    if isinstance(x, Literal):
        return len(x.value)
    if isinstance(x, Concat):
        return sum(map(span_bound, x.parts))
    if isinstance(x, Alternation):
        return sum(map(span_bound, x.options))
    if isinstance(x, Repeat):
        return span_bound(x.item) * max(1, x.min if x.max is None else x.max)
    if isinstance(x, Automaton):  # a path without a loop passes each state once
        return x.n_states * max((span_bound(label) for _, label, _ in x.edges), default=1)
    return 1
