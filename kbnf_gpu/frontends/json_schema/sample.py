"""Random texts of a schema's grammar: instances for tests and benchmarks.

``sample_texts(grammar, n, seed)`` draws ``n`` random sentences of an IR
grammar whose terminals are regular expressions over code points (what the
JSON Schema front end produces), by a random derivation from the start rule:
alternatives uniformly, repetitions ``min`` to ``min + 3`` times (sometimes
the maximum), and once the derivation is ``max_depth`` rules deep only the
alternatives that end soonest (by height: the fewest nested rules to a
terminal-only expansion), so every draw terminates. Characters come from the
printable ASCII part of a class four times out of five. The texts are in the
grammar's language; ``jsonschema`` is the judge of whether they are valid.
"""
from __future__ import annotations

import random
from typing import Any

from ... import ir

_INF = 10**9


def sample_texts(grammar: ir.Grammar, n: int, seed: int = 0, max_depth: int = 6,
                 escapes: bool = True) -> list[str]:
    """``n`` random sentences of ``grammar`` (see the module docstring); ``escapes=False``
    avoids the alternatives that write a character as a backslash escape where another
    way is left (strings as a model usually writes them)."""
    rules = {r.name: r.body for r in grammar.rules}
    h = _heights(rules)

    def height(e: Any) -> int:
        return _height(e, h)

    rnd = random.Random(seed)
    texts = []
    for _ in range(n):
        out: list[str | bytes] = []  # bytes: raw bytes of a UTF-8 sequence an automaton reads byte by byte
        stack: list[tuple[Any, int]] = [(rules[grammar.start], 0)]
        while stack:
            e, d = stack.pop()
            if isinstance(e, ir.Terminal):
                _sample_regex(e.expr, rnd, out, escapes)
            elif isinstance(e, ir.Ref):
                stack.append((rules[e.name], d + 1))
            elif isinstance(e, ir.Sequence):
                stack.extend((x, d) for x in reversed(e.items))
            elif isinstance(e, ir.Choice):
                alts = [a for a in e.alternatives if height(a) < _INF]
                if d > max_depth:
                    best = min(height(a) for a in alts)
                    alts = [a for a in alts if height(a) == best]
                stack.append((rnd.choice(alts), d))
            else:
                hi = e.min + 3 if e.max is None else min(e.max, e.min + 3)
                stack.extend([(e.item, d)] * (e.min if d > max_depth else rnd.randint(e.min, hi)))
        texts.append(b"".join(p.encode() if isinstance(p, str) else p for p in out).decode())
    return texts


def _height(e: Any, h: dict[str, int]) -> int:
    """Nested rules below ``e`` on its shortest way to terminals only (``_INF``: none)."""
    if isinstance(e, ir.Terminal):
        return 0
    if isinstance(e, ir.Ref):
        return min(h[e.name] + 1, _INF)
    if isinstance(e, ir.Sequence):
        return max((_height(x, h) for x in e.items), default=0)
    if isinstance(e, ir.Choice):
        return min((_height(x, h) for x in e.alternatives), default=_INF)
    return 0 if e.min == 0 else _height(e.item, h)


def _heights(rules: dict[str, Any]) -> dict[str, int]:
    h = dict.fromkeys(rules, _INF)
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            v = _height(body, h)
            if v < h[name]:
                h[name], changed = v, True
    return h


def _escape(x: Any) -> bool:
    """Does the regex start with a backslash (a JSON escape)?"""
    while isinstance(x, ir.Concat) and x.parts:
        x = x.parts[0]
    return isinstance(x, ir.Literal) and x.value.startswith(b"\\")


def _automaton_walk(a: ir.Automaton, rnd: random.Random, escapes: bool = True) -> list[Any]:
    """The labels along a random path of ``a`` from its start to an accepting state: random edges (that can
    still reach one) for a while, then a shortest way there; ``escapes=False`` takes an edge that reads an
    escape or raw bytes (``_preferred``) only where no other is left."""
    distance = {q: 0 for q in a.accepting}  # edges to an accepting state, breadth first backwards from them
    frontier, level = set(a.accepting), 0
    while frontier:
        level += 1
        frontier = {p for p, _, q in a.edges if q in frontier and p not in distance}
        distance.update((p, level) for p in frontier)
    if 0 not in distance:
        raise ValueError("the automaton accepts nothing")
    out_edges: dict[int, list] = {}
    for edge in a.edges:
        if edge[2] in distance:
            out_edges.setdefault(edge[0], []).append(edge)
    labels, q = [], 0
    for _ in range(rnd.randint(0, 3 * a.n_states + 4)):
        if q in a.accepting and rnd.random() < 0.1 or q not in out_edges:
            return labels
        _, label, q = rnd.choice(_preferred(out_edges[q], escapes))
        labels.append(label)
    while distance[q]:
        _, label, q = rnd.choice(_preferred([e for e in out_edges[q] if distance[e[2]] == distance[q] - 1], escapes))
        labels.append(label)
    return labels


def _preferred(edges: list, escapes: bool) -> list:
    """``edges``, or with ``escapes=False`` the plain ones among them where there are any."""
    plain = edges if escapes else [e for e in edges if not _escape(e[1]) and not isinstance(e[1], ir.ByteClass)]
    return plain or edges


def _sample_regex(e: Any, rnd: random.Random, out: list[str | bytes], escapes: bool = True) -> None:
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ir.Literal):
            out.append(x.value.decode())
        elif isinstance(x, ir.CharClass):
            low = [(a, min(b, 0x7E)) for a, b in x.ranges if a <= 0x7E]
            a, b = rnd.choice(low) if low and rnd.random() < 0.8 else rnd.choice(x.ranges)
            out.append(chr(rnd.randint(a, b)))
        elif isinstance(x, ir.Concat):
            stack.extend(reversed(x.parts))
        elif isinstance(x, ir.Alternation):
            options = x.options if escapes else [o for o in x.options if not _escape(o)] or x.options
            stack.append(rnd.choice(options))
        elif isinstance(x, ir.Repeat):
            hi = x.min + 3 if x.max is None else min(x.max, x.min + 3)
            if x.max is not None and rnd.random() < 0.1:
                hi = x.max
            stack.extend([x.item] * rnd.randint(x.min, hi))
        elif isinstance(x, ir.ByteClass):
            a, b = rnd.choice(x.ranges)
            out.append(bytes((rnd.randint(a, b),)))
        elif isinstance(x, ir.Automaton):
            stack.extend(reversed(_automaton_walk(x, rnd, escapes)))
        else:
            raise TypeError(f"cannot sample {type(x).__name__}")
