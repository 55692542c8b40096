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
    """A declared property (``key`` is the encoded, quoted key) or an additional region."""

    key: ir.RegExpr
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
    G = len(groups)
    track = min_props > 0 or max_props is not None
    cap = max_props if max_props is not None else min_props

    def bump(c: int) -> int:
        return c + 1 if max_props is not None else min(c + 1, cap)

    def room(c: int) -> bool:
        return max_props is None or c < max_props

    comma = b.term(L.comma(depth), "comma")
    colon = L.colon()

    def piece(m: Member, first: bool) -> tuple[ir.Expr, ...]:
        key = b.term(b.seq(m.key, colon), "key")
        return (key,) if first else (comma, key)

    State = tuple[int, frozenset[int], int, bool]
    names: dict[State, str] = {}
    work: list[State] = []

    def ref(s: State) -> ir.Ref:
        g, S, c, first = s
        if g < G and len(S) == len(groups[g]):
            s = (g + 1, frozenset(), c, first)
        if not track:
            s = (s[0], s[1], 0, s[3])
        if s not in names:
            if len(names) >= MAX_STATES:
                raise TooManyStates()
            names[s] = b.fresh(f"{name}_m{len(names)}")
            work.append(s)
        return ir.Ref(names[s])

    start: State = (0, frozenset(), 0, True)
    init = ref(start)
    while work:
        s = work.pop()
        g, S, c, first = s
        alts: list[ir.Expr] = []
        if g < G:
            group = groups[g]
            if room(c):
                for j in group:
                    if j in S:
                        continue
                    m = props[j]
                    alts.append(ir.Sequence((*piece(m, first), ir.Ref(m.value), ref((g, S | {j}, bump(c), False)))))
                if b.any_order:
                    for r in regions:
                        alts.append(ir.Sequence((*piece(r, first), ir.Ref(r.value), ref((g, S, bump(c), False)))))
            if all(props[j].required is False or j in S for j in group):
                alts.append(ref((g + 1, frozenset(), c, first)))
        else:
            if room(c):
                for r in regions:
                    alts.append(ir.Sequence((*piece(r, first), ir.Ref(r.value), ref((G, frozenset(), bump(c), False)))))
            if not first and (not track or c >= min_props):
                alts.append(ir.EMPTY)
        b.add_rule(names[s], alts)
    body = ir.Sequence((b.term(L.open("{", depth), "lbrace"), init, b.term(L.close("}", depth), "rbrace")))
    options: list[ir.Expr] = []
    if min_props == 0 and not any(p.required for p in props):
        options.append(b.term(L.empty("{}", depth), "empty_object"))
    options.append(body)
    return options[0] if len(options) == 1 else ir.Choice(tuple(options))
