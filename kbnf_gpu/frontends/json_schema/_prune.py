"""Final clean-up of the rule set: unproductive alternatives, then unreachable rules."""
from __future__ import annotations

from typing import Optional

from ... import ir
from ...errors import GrammarError


def prune(rules: dict[str, ir.Expr]) -> ir.Grammar:
    """Drop unproductive alternatives and rules, then unreachable rules."""
    productive = _productive(rules)
    if "root" not in productive:
        raise GrammarError("the schema is unsatisfiable: no JSON value matches it")
    if len(productive) == len(rules):  # nothing to drop: every rule was made for a reference to it
        out = tuple(ir.Rule(n, rules[n]) for n in ["root", *(n for n in rules if n != "root")])
        return ir.Grammar(rules=out, start="root", syntax="json_schema", end_mode="eos")

    def clean(e: ir.Expr) -> Optional[ir.Expr]:
        """``e`` without its unproductive alternatives (None: nothing is left); ``e`` itself where none is."""
        kind = type(e)
        if kind is ir.Ref:
            return e if e.name in productive else None
        if kind is ir.Choice:
            alts = [clean(x) for x in e.alternatives]
            if len(alts) > 1 and all(c is x for c, x in zip(alts, e.alternatives)):
                return e
            kept = [c for c in alts if c is not None]
            if not kept:
                return None
            return kept[0] if len(kept) == 1 else ir.Choice(tuple(kept))
        if kind is ir.Sequence:
            items = [clean(x) for x in e.items]
            if any(x is None for x in items):
                return None
            return e if all(c is x for c, x in zip(items, e.items)) else ir.Sequence(tuple(items))
        if kind is ir.Repetition:
            item = clean(e.item)
            if item is None:
                return ir.EMPTY if e.min == 0 else None
            return e if item is e.item else ir.Repetition(item, e.min, e.max)
        return e

    cleaned = {n: clean(b) for n, b in rules.items() if n in productive}
    reach = {"root"}
    stack = ["root"]
    while stack:
        for ref in ir.references(cleaned[stack.pop()]):  # type: ignore[arg-type]
            if ref.name not in reach:
                reach.add(ref.name)
                stack.append(ref.name)
    order = ["root"] + [n for n in cleaned if n != "root" and n in reach]
    out = tuple(ir.Rule(n, cleaned[n]) for n in order)  # type: ignore[arg-type]
    return ir.Grammar(rules=out, start="root", syntax="json_schema", end_mode="eos")


def _productive(rules: dict[str, ir.Expr]) -> set[str]:
    """The rules that derive some text, in linear time (Dowling-Gallier): each
    alternative, in disjunctive form, counts the rules it still waits for."""
    productive: set[str] = set()
    work: list[str] = []
    waiting: list[int] = []
    owner: list[str] = []
    needed_by: dict[str, list[int]] = {}
    for name, body in rules.items():
        if _derives_text(body):  # what its other alternatives wait for cannot matter
            productive.add(name)
            work.append(name)
            continue
        for need in _requirements(body):
            if not need:
                if name not in productive:
                    productive.add(name)
                    work.append(name)
                continue
            needed_by_alt = len(waiting)
            waiting.append(len(need))
            owner.append(name)
            for ref in need:
                needed_by.setdefault(ref, []).append(needed_by_alt)
    while work:
        for alt in needed_by.get(work.pop(), ()):
            waiting[alt] -= 1
            if waiting[alt] == 0 and owner[alt] not in productive:
                productive.add(owner[alt])
                work.append(owner[alt])
    return productive


def _derives_text(body: ir.Expr) -> bool:
    """Whether ``body`` has an alternative of terminals alone (a threaded string's rule with its tail): a
    sufficient test, without the disjunctive form."""
    kind = type(body)
    if kind is ir.Choice:
        return any(type(alt) is ir.Terminal or type(alt) is ir.Sequence and all(type(x) is ir.Terminal for x in alt.items)
                   for alt in body.alternatives)
    return kind is ir.Terminal or kind is ir.Sequence and all(type(x) is ir.Terminal for x in body.items)


def _requirements(body: ir.Expr) -> list[frozenset[str]]:
    """``body`` in disjunctive form: for each way to derive it, the rules it needs.

    The bodies the builder makes nest a choice inside a sequence only where a
    choice of terminals or of a few rules sits, so the product stays tiny.
    """
    kind = type(body)
    if kind is ir.Terminal:
        return [_NOTHING]
    if kind is ir.Ref:
        return [frozenset((body.name,))]
    if kind is ir.Choice:
        out = []
        for alt in body.alternatives:  # most are a terminal, a reference, or a flat sequence of them: inline
            if type(alt) is ir.Terminal:
                out.append(_NOTHING)
            elif type(alt) is ir.Ref:
                out.append(frozenset((alt.name,)))
            else:
                out.extend(_requirements(alt))
        return out
    if kind is ir.Repetition:
        return [_NOTHING] if body.min == 0 else _requirements(body.item)
    if kind is ir.Sequence:
        out = [_NOTHING]
        names: list[str] = []
        for item in body.items:
            if type(item) is ir.Terminal:
                continue
            if type(item) is ir.Ref:
                names.append(item.name)
                continue
            out = list({a | b for a in out for b in _requirements(item)})
        if not names:
            return out
        if out == [_NOTHING]:
            return [frozenset(names)]
        return [need.union(names) for need in out]
    raise TypeError(type(body))


_NOTHING: frozenset[str] = frozenset()
