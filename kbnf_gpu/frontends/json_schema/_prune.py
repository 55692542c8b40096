"""Final clean-up of the rule set: unproductive alternatives, then unreachable rules."""
from __future__ import annotations

from typing import Optional

from ... import ir
from ...errors import GrammarError


def prune(rules: dict[str, ir.Expr]) -> ir.Grammar:
    """Drop unproductive alternatives and rules, then unreachable rules."""
    productive: set[str] = set()

    def ok(e: ir.Expr) -> bool:
        if isinstance(e, ir.Terminal):
            return True
        if isinstance(e, ir.Ref):
            return e.name in productive
        if isinstance(e, ir.Sequence):
            return all(ok(x) for x in e.items)
        if isinstance(e, ir.Choice):
            return any(ok(x) for x in e.alternatives)
        if isinstance(e, ir.Repetition):
            return e.min == 0 or ok(e.item)
        raise TypeError(type(e))

    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in productive and ok(body):
                productive.add(name)
                changed = True
    if "root" not in productive:
        raise GrammarError("the schema is unsatisfiable: no JSON value matches it")

    def clean(e: ir.Expr) -> Optional[ir.Expr]:
        if isinstance(e, ir.Choice):
            alts = [c for c in (clean(x) for x in e.alternatives) if c is not None]
            if not alts:
                return None
            return alts[0] if len(alts) == 1 else ir.Choice(tuple(alts))
        if isinstance(e, ir.Sequence):
            items = [clean(x) for x in e.items]
            if any(x is None for x in items):
                return None
            return ir.Sequence(tuple(items))  # type: ignore[arg-type]
        if isinstance(e, ir.Repetition):
            item = clean(e.item)
            if item is None:
                return ir.EMPTY if e.min == 0 else None
            return ir.Repetition(item, e.min, e.max)
        if isinstance(e, ir.Ref):
            return e if e.name in productive else None
        return e

    cleaned = {n: clean(b) for n, b in rules.items() if n in productive}
    reach = {"root"}
    stack = ["root"]
    while stack:
        body = cleaned[stack.pop()]
        todo: list[ir.Expr] = [body]  # type: ignore[list-item]
        while todo:
            e = todo.pop()
            if isinstance(e, ir.Ref):
                if e.name not in reach:
                    reach.add(e.name)
                    stack.append(e.name)
            else:
                todo.extend(ir.children(e))
    order = ["root"] + [n for n in cleaned if n != "root" and n in reach]
    out = tuple(ir.Rule(n, cleaned[n]) for n in order)  # type: ignore[arg-type]
    return ir.Grammar(rules=out, start="root", syntax="json_schema", end_mode="eos")
