"""Object members as a small state machine of rules.

A state is ``(group, emitted, count, first)``: the declared properties are cut
into groups that are emitted in order; inside a group any order is allowed,
each property at most once (``emitted`` is the subset already written). In
the default (schema) order every group has one property; with
``any_order=True`` groups hold up to ``ANY_ORDER_GROUP`` properties, so the
order is completely free for up to that many declared properties and free
within consecutive blocks beyond it (a warning says so). Optional
properties are skipped by an empty step to the next group; once the last
group is passed, "additional" members (keys outside the declared names, per
``patternProperties``/``additionalProperties``) may follow; with
``any_order=True`` they may also appear between declared ones. ``count``
tracks the number of members only when ``minProperties``/``maxProperties``
ask for it; ``first`` decides whether a comma precedes the next member.
Every accepted member list therefore has correct commas and no declared key
twice.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ... import ir

if TYPE_CHECKING:
    from ._builder import Builder

ANY_ORDER_GROUP = 8
MAX_STATES = 20_000


class TooManyStates(Exception):
    """The member state machine would exceed ``MAX_STATES`` (huge min/maxProperties)."""


@dataclass
class Member:
    """A declared property or an additional region (``key``: the key's terminals, colon included)."""

    key: tuple[ir.Expr, ...]
    value: str  # rule name
    required: bool = False


def object_expr(
    b: "Builder",
    name: str,
    depth: int,
    props: list[Member],
    regions: list[Member],
    min_props: int,
    max_props: Optional[int],
) -> Optional[ir.Expr]:
    """The object fragment (empty-object lexeme or open, members, close)."""
    L = b.layout
    if max_props is not None and (max_props < sum(p.required for p in props)):
        return None
    if b.any_order:
        if len(props) > ANY_ORDER_GROUP:
            b.doc.warn(
                f"any_order: {len(props)} declared properties; order is free only within "
                f"consecutive blocks of {ANY_ORDER_GROUP}"
            )
        groups = [list(range(i, min(i + ANY_ORDER_GROUP, len(props)))) for i in range(0, len(props), ANY_ORDER_GROUP)]
    else:
        groups = [[i] for i in range(len(props))]
    track = min_props > 0 or max_props is not None
    cap = max_props if max_props is not None else min_props

    def bump(c: int) -> int:
        return c + 1 if max_props is not None else min(c + 1, cap)

    def room(c: int) -> bool:
        return max_props is None or c < max_props

    comma = L.punct(",", depth)

    def piece(m: Member, first: bool) -> tuple[ir.Expr, ...]:
        return m.key if first else (comma, *m.key)

    if not b.any_order and not track:
        init = _in_order(b, name, props, regions, piece)
    else:
        init = _state_machine(b, name, props, regions, piece, groups, track, bump, room, min_props, max_props)
    options: list[ir.Expr] = []
    if min_props == 0 and not any(p.required for p in props):
        options.append(L.punct("{}", depth))
    if init is not None:
        options.append(ir.Sequence((L.punct("{", depth), init, L.punct("}", depth))))
    if not options:
        return None
    return options[0] if len(options) == 1 else ir.Choice(tuple(options))


def _in_order(b: "Builder", name: str, props: list[Member], regions: list[Member], piece) -> Optional[ir.Ref]:
    """Members in schema order, no counting (the common case), as chains of rules:
    ``A_g`` (nothing written yet), ``B_g`` (a member written; commas from now on)
    and ``K_g`` (member g, key to value, then the rest):

    ``A_g ::= K_g | A_g+1`` (the skip only if property g is optional),
    ``B_g ::= "," K_g | B_g+1``, ``K_g ::= key_g value_g B_g+1``; at the end
    ``A_n``/``B_n`` take additional members, and ``B_n`` may stop. Each key
    appears once (not once after ``A`` and once after a comma), so each key's
    lexeme run (key, colon) is one terminal downstream.
    """
    n = len(props)
    first_required = next((g for g, p in enumerate(props) if p.required), n)
    if first_required == n and not regions:
        last_a = n - 1  # A_n would be empty: an object needs a member to reach it
        if n == 0:
            return None
    else:
        last_a = first_required
    a_names = [b.fresh(f"{name}_a{g}") for g in range(last_a + 1)]
    b_names = {g: b.fresh(f"{name}_b{g}") for g in range(1 if n else 0, n + 1)}
    k_names = [b.fresh(f"{name}_k{g}") for g in range(n)]

    def after(g: int) -> ir.Ref:
        return ir.Ref(b_names[g])

    for g, rule in enumerate(k_names):
        b.add_rule(rule, [ir.Sequence((*props[g].key, ir.Ref(props[g].value), after(g + 1)))])
    for g, rule in enumerate(a_names):
        if g == n:
            b.add_rule(rule, [ir.Sequence((*piece(r, True), ir.Ref(r.value), after(n))) for r in regions])
            continue
        alts: list[ir.Expr] = [ir.Ref(k_names[g])]
        if not props[g].required and g + 1 <= last_a:
            alts.append(ir.Ref(a_names[g + 1]))
        b.add_rule(rule, alts)
    comma = piece(Member((), ""), False)
    for g, rule in b_names.items():
        if g == n:
            alts = [ir.Sequence((*piece(r, False), ir.Ref(r.value), after(n))) for r in regions]
            b.add_rule(rule, [*alts, ir.EMPTY])
            continue
        alts = [ir.Sequence((*comma, ir.Ref(k_names[g])))]
        if not props[g].required:
            alts.append(after(g + 1))
        b.add_rule(rule, alts)
    return ir.Ref(a_names[0])


def _state_machine(b: "Builder", name: str, props: list[Member], regions: list[Member], piece, groups, track,
                   bump, room, min_props: int, max_props: Optional[int]) -> Optional[ir.Ref]:
    """Members as states ``(group, emitted, count, first)`` (any order, or min/maxProperties). Past the
    declared groups only additional members are left: with a count, their number is one repetition counted in
    its digits (``Builder.counted``), not a state per count (``maxProperties: 2147483647`` was refused)."""
    G = len(groups)
    State = tuple[int, frozenset[int], int, bool]
    Alt = tuple[tuple[ir.Expr, ...], Optional[State]]  # symbols, then the next state (None: the end)

    def norm(s: State) -> State:
        g, S, c, first = s
        if g < G and len(S) == len(groups[g]):
            g, S = g + 1, frozenset()
        return g, S, c if track else 0, first

    def written(m: Member, first: bool) -> tuple[ir.Expr, ...]:
        return (*piece(m, first), ir.Ref(m.value))

    def member(m: Member, first: bool, nxt: State) -> Alt:
        return written(m, first), norm(nxt)

    def regions_counted(first: bool, fewest: int, most: Optional[int]) -> tuple[ir.Expr, ...]:
        """``fewest`` to ``most`` additional members (``first``: none written before them; at least one)."""
        more = _any_of([written(r, False) for r in regions])  # a comma, then one of them
        if not first:
            return (b.counted(more, fewest, most, f"{name}_more"),)
        later = b.counted(more, max(0, fewest - 1), None if most is None else most - 1, f"{name}_more")
        return _any_of([written(r, True) for r in regions]), later

    start: State = norm((0, frozenset(), 0, True))
    edges: dict[State, list[Alt]] = {}
    work = [start]
    while work:
        s = work.pop()
        if s in edges:
            continue
        if len(edges) >= MAX_STATES:
            raise TooManyStates()
        g, S, c, first = s
        alts: list[Alt] = []
        if g < G:
            group = groups[g]
            if room(c):
                alts.extend(member(props[j], first, (g, S | {j}, bump(c), False)) for j in group if j not in S)
                if b.any_order:
                    alts.extend(member(r, first, (g, S, bump(c), False)) for r in regions)
            if all(props[j].required is False or j in S for j in group):
                alts.append(((), norm((g + 1, frozenset(), c, first))))
        elif track and regions:
            fewest, most = max(0, min_props - c), None if max_props is None else max_props - c
            if most is None or most >= max(1 if first else 0, fewest):
                alts.append((regions_counted(first, fewest, most), None))
        else:
            if room(c):
                alts.extend(member(r, first, (G, frozenset(), bump(c), False)) for r in regions)
            if not first and (not track or c >= min_props):
                alts.append(((), None))
        edges[s] = alts
        work.extend(nxt for _, nxt in alts if nxt is not None and nxt not in edges)
    live = _live_states(edges)
    if start not in live:
        init = None
    else:
        names: dict[State, str] = {}
        order = [start]
        while order:
            s = order.pop()
            names[s] = b.fresh(f"{name}_m{len(names)}")
            order.extend(nxt for _, nxt in edges[s] if nxt in live and nxt not in names and nxt not in order)
        for s, rule in names.items():
            out: list[ir.Expr] = []
            for items, nxt in edges[s]:
                if nxt is None:
                    out.append(ir.Sequence(items))
                elif nxt in live:
                    out.append(ir.Sequence((*items, ir.Ref(names[nxt]))) if items else ir.Ref(names[nxt]))
            b.add_rule(rule, out)
        init = ir.Ref(names[start])
    return init


def _any_of(options: list[tuple[ir.Expr, ...]]) -> ir.Expr:
    """One of ``options`` (each a sequence of symbols)."""
    seqs = [ir.Sequence(o) for o in options]
    return seqs[0] if len(seqs) == 1 else ir.Choice(tuple(seqs))


def _live_states(edges: dict) -> set:
    """The states from which the member list can end (member values assumed satisfiable)."""
    back: dict = {}
    live: set = set()
    work = []
    for s, alts in edges.items():
        for _, nxt in alts:
            if nxt is None:
                if s not in live:
                    live.add(s)
                    work.append(s)
            else:
                back.setdefault(nxt, []).append(s)
    while work:
        for p in back.get(work.pop(), ()):
            if p not in live:
                live.add(p)
                work.append(p)
    return live
