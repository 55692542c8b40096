"""``oneOf`` as a choice of branches: when is that exact?

``disjoint``: only if the branches are provably disjoint (by type, by
``const``/``enum`` values, or by a required property whose ``const``/``enum``
values differ: a discriminator); then ``oneOf`` is ``anyOf``.

``exclusive``: a common overlap made exact first. ``null`` and booleans can be
constrained by nothing but ``type``, ``enum`` and ``const``, so when two or
more branches accept every ``null`` (``{"type": ["string", "null"]}`` next to
``{"type": ["integer", "null"]}``, as Kubernetes' ``IntOrString`` is
written), no ``null`` can match exactly one of them: ``null`` is dropped from
every branch (likewise ``true``/``false``).
"""
from __future__ import annotations

from typing import Any, Optional

from ._document import Document
from ._merge import Atom, Unsatisfiable, expand, first_choice
from ._validate import json_key


def disjoint(doc: Document, branches: list[tuple[Atom, ...]]) -> bool:
    sigs = [_signature(doc, b) for b in branches]
    for i in range(len(sigs)):
        for j in range(i + 1, len(sigs)):
            if not _sig_disjoint(sigs[i], sigs[j]):
                return False
    return True


_ALL = ("null", "boolean", "object", "array", "number", "string")


def exclusive(doc: Document, branches: list[tuple[Atom, ...]]) -> list[tuple[Atom, ...]]:
    """The branches with ``null``/boolean removed where two or more accept every such value."""
    drop: list[str] = []
    for t in ("null", "boolean"):
        takers = [_takes_all(doc, b, t) for b in branches]
        if takers.count(True) >= 2 and None not in takers:
            drop.append(t)
    if not drop:
        return branches
    keep = doc.synthetic({"type": [t for t in _ALL if t not in drop]})
    return [b + ((keep, frozenset()),) for b in branches]


def _takes_all(doc: Document, atoms: tuple[Atom, ...], t: str) -> Optional[bool]:
    """Does the branch accept every value of type ``t`` (True), none (False), or some (None)?"""
    try:
        flat = expand(doc, atoms)
    except Unsatisfiable:
        return False
    types, consts, _ = _signature(doc, atoms)
    if t not in types:
        return False
    if consts is not None or first_choice(doc, flat) is not None:
        return None
    return True


def _signature(doc: Document, atoms: tuple[Atom, ...]) -> Any:
    try:
        flat = expand(doc, atoms)
    except Unsatisfiable:
        return (set(), None, {})
    types: set[str] = {"null", "boolean", "object", "array", "string", "int", "frac"}
    consts: Optional[set[Any]] = None
    disc: dict[str, set[Any]] = {}
    for ptr, skip in flat:
        sch = doc.resolve(ptr)
        if not isinstance(sch, dict):
            continue
        if "type" in sch and "type" not in skip:
            ts = sch["type"] if isinstance(sch["type"], list) else [sch["type"]]
            allowed: set[str] = set()
            for t in ts:
                if not isinstance(t, str):
                    continue  # reported by ``merge`` with its pointer
                allowed |= {"integer": {"int"}, "number": {"int", "frac"}}.get(t, {t})
            types &= allowed
        vals = _const_values(sch)
        if vals is not None:
            consts = vals if consts is None else consts & vals
        req = sch.get("required", [])
        for k, sub in (sch.get("properties") or {}).items():
            if k in req and isinstance(sub, dict):
                v = _const_values(sub)
                if v is not None:
                    disc[k] = v
    return (types, consts, disc)


def _const_values(sch: dict) -> Optional[set[Any]]:
    if "const" in sch:
        return {json_key(sch["const"])}
    if isinstance(sch.get("enum"), list):
        return {json_key(v) for v in sch["enum"]}
    return None


def _sig_disjoint(a: Any, b: Any) -> bool:
    if not (a[0] & b[0]):
        return True
    if a[1] is not None and b[1] is not None and not (a[1] & b[1]):
        return True
    return any(k in b[2] and not (v & b[2][k]) for k, v in a[2].items())
