"""Conjunctions of subschemas ("atoms") and their merged constraints.

A value rule stands for the conjunction of a set of atoms; an atom is a
subschema (by JSON pointer) minus the applicator keywords already taken
apart. ``$ref`` and ``allOf`` are flattened into more atoms, ``anyOf`` and
``oneOf`` are distributed (one rule per branch), and what is left is merged
keyword by keyword (``merge``). Because atoms are pointers into the original
document, the set of possible conjunctions is finite and recursive schemas
terminate.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Optional

from ._document import IGNORED, TYPES, UNSUPPORTED, Document, child
from ._validate import json_key

Atom = tuple[str, frozenset[str]]
ALL_TYPES = frozenset({"null", "boolean", "object", "array", "string", "int", "frac"})
_TYPE_MAP = {
    "null": {"null"}, "boolean": {"boolean"}, "object": {"object"}, "array": {"array"},
    "string": {"string"}, "integer": {"int"}, "number": {"int", "frac"},
}
APPLICATORS = ("$ref", "$dynamicRef", "allOf", "anyOf", "oneOf")
# Keywords ``merge`` reads; with UNSUPPORTED and the choices, what makes an atom constrain anything.
ASSERTIONS = frozenset(
    {"type", "enum", "const", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
     "minLength", "maxLength", "pattern", "format", "items", "prefixItems", "additionalItems", "minItems",
     "maxItems", "uniqueItems", "properties", "patternProperties", "additionalProperties", "propertyNames",
     "required", "minProperties", "maxProperties", "anyOf", "oneOf"}
) | UNSUPPORTED


class Unsatisfiable(Exception):
    """The conjunction contains the ``false`` schema."""


@dataclass
class ObjectPart:
    pointer: str
    props: dict[str, str] = field(default_factory=dict)  # name -> pointer
    patterns: list[tuple[str, str]] = field(default_factory=list)  # (regex, pointer)
    additional: Optional[str] = None  # pointer, None when absent
    names: Optional[str] = None  # propertyNames pointer


@dataclass
class ArrayPart:
    pointer: str
    prefix: list[str] = field(default_factory=list)
    rest: Optional[str] = None  # pointer, None when absent


Bound = Optional[tuple[Decimal, bool]]  # (value, exclusive)


@dataclass
class Merged:
    """Every constraint of a flattened conjunction."""

    atoms: tuple[Atom, ...]
    types: set[str] = field(default_factory=lambda: set(ALL_TYPES))
    enums: list[tuple[list[Any], str]] = field(default_factory=list)
    lo: Bound = None
    hi: Bound = None
    multiple_of: list[tuple[Decimal, str]] = field(default_factory=list)
    min_len: int = 0
    max_len: Optional[int] = None
    patterns: list[tuple[str, str]] = field(default_factory=list)
    formats: list[tuple[str, str]] = field(default_factory=list)
    arrays: list[ArrayPart] = field(default_factory=list)
    min_items: int = 0
    max_items: Optional[int] = None
    unique: Optional[str] = None
    objects: list[ObjectPart] = field(default_factory=list)
    required: list[str] = field(default_factory=list)
    min_props: int = 0
    max_props: Optional[int] = None
    closed: list[str] = field(default_factory=list)  # atoms with "unevaluatedProperties": false
    contains: list[tuple[str, int, Optional[int]]] = field(default_factory=list)  # (pointer, min/maxContains)
    not_values: list[tuple[Any, str]] = field(default_factory=list)  # (value, pointer) excluded by "not"
    not_patterns: list[tuple[str, str]] = field(default_factory=list)  # (regex, pointer) no string may match
    forbidden: list[str] = field(default_factory=list)  # member names "not": {"required": [name]} excludes

    @property
    def where(self) -> str:
        """The location named in messages and rule names (the first atom's)."""
        return self.atoms[0][0] if self.atoms else ""


def expand(doc: Document, atoms: Any) -> tuple[Atom, ...]:
    """Flatten ``$ref`` and ``allOf``; raises ``Unsatisfiable`` on ``false``."""
    out: list[Atom] = []
    seen: set[Atom] = set()
    work = list(reversed(list(atoms)))
    while work:
        a = work.pop()
        if a in seen:
            continue
        seen.add(a)
        ptr, skip = a
        sch = doc.resolve(ptr)
        if sch is True:
            continue
        if sch is False:
            raise Unsatisfiable(ptr)
        if not isinstance(sch, dict):
            raise doc.fail("a schema must be an object or a boolean", ptr)
        if "$ref" in sch and "$ref" not in skip:
            target = doc.ref_target(sch["$ref"], ptr)
            if target is not None:
                work.append((target, frozenset()))
            if not doc.old_draft(ptr):  # draft 7 and older: siblings of $ref are ignored
                work.append((ptr, skip | {"$ref"}))
            continue
        if "$dynamicRef" in sch and "$dynamicRef" not in skip:
            target = doc.dynamic_target(sch["$dynamicRef"], ptr)
            if target is not None:
                work.append((target, frozenset()))
            work.append((ptr, skip | {"$dynamicRef"}))
            continue
        if "allOf" in sch and "allOf" not in skip:
            branches = sch["allOf"]
            if not isinstance(branches, list) or not branches:
                raise doc.fail("'allOf' must be a non-empty array", child(ptr, "allOf"))
            for i in reversed(range(len(branches))):
                work.append((child(ptr, "allOf", i), frozenset()))
            work.append((ptr, skip | {"allOf"}))
            continue
        if any(k in ASSERTIONS and k not in skip for k in sch):
            out.append(a)  # an atom of annotations only (a $ref's "description") would split shared rules
    return tuple(out)


DEPENDENCIES = ("dependentRequired", "dependentSchemas", "dependencies")
NON_OBJECT = {"type": ["null", "boolean", "number", "string", "array"]}


def first_choice(doc: Document, atoms: tuple[Atom, ...]) -> Optional[tuple[int, str, int]]:
    """(atom index, keyword, branch count) of the first ``anyOf``/``oneOf`` left, or of the first
    dependency keyword with a member name left (see ``dependency_branches``), ``if``, or ``not`` that
    needs its ``negation`` written out."""
    for i, (ptr, skip) in enumerate(atoms):
        sch = doc.resolve(ptr)
        for kw in ("anyOf", "oneOf"):
            if kw in sch and kw not in skip:
                branches = sch[kw]
                if not isinstance(branches, list) or not branches:
                    raise doc.fail(f"'{kw}' must be a non-empty array", child(ptr, kw))
                return i, kw, len(branches)
        for kw in DEPENDENCIES:
            if kw in sch and kw not in skip and _next_dependency(doc, ptr, skip, kw) is not None:
                return i, kw, 3
        if "if" in sch and "if" not in skip:
            return i, "if", 2
        if "not" in sch and "not" not in skip and not _plain_not(sch["not"]) and negation(sch["not"]) is not None:
            return i, "not", 1
    return None


def _plain_not(arg: Any) -> bool:
    """Whether ``_negate`` takes ``not`` of ``arg`` as it is (else ``not_branches`` writes its negation)."""
    if isinstance(arg, bool):
        return True
    keys = constraining(arg) if isinstance(arg, dict) else None
    if keys == ["required"] and isinstance(arg["required"], list) and len(arg["required"]) > 1:
        return False  # several names: De Morgan, name by name
    return not keys or (len(keys) == 1 and keys[0] in NEGATABLE)


def not_branches(doc: Document, atoms: tuple[Atom, ...], i: int) -> list[tuple[Atom, ...]]:
    """``not`` of a schema ``_negate`` cannot take as it is: its ``negation`` in its place."""
    ptr, skip = atoms[i]
    neg = negation(doc.resolve(child(ptr, "not")))
    return [atoms[:i] + ((ptr, skip | {"not"}), (doc.synthetic(neg, child(ptr, "not")), frozenset())) + atoms[i + 1:]]


def enum_choice(doc: Document, ptr: str, kw: str) -> Optional[list[Any]]:
    """The values of an ``anyOf``/``oneOf`` at ``ptr`` whose every branch is an ``enum`` or a ``const`` (their
    annotations aside), as one ``enum``: every branch's values for ``anyOf``, those in exactly one branch for
    ``oneOf``; ``None`` for any other choice. Distributed branch by branch, a conjunction with ``n`` such
    branches made ``n`` rules, each validating its values against the rest (azure-pipelines: 259 task names
    against each of 259 task patterns, 67,000 rules, most of them empty)."""
    groups = _enum_groups(doc, ptr, kw)
    if groups is None:
        return None
    counts: dict[Any, int] = {}
    values: dict[Any, Any] = {}
    for group in groups:
        for key, value in {json_key(v): v for v in group}.items():
            counts[key] = counts.get(key, 0) + 1
            values.setdefault(key, value)
    return [v for key, v in values.items() if kw == "anyOf" or counts[key] == 1]


def _enum_groups(doc: Document, ptr: str, kw: str) -> Optional[list[list[Any]]]:
    """Each branch's values where every branch of the choice is an ``enum`` or a ``const``, else ``None``."""
    branches = doc.resolve(child(ptr, kw))
    groups: list[list[Any]] = []
    for branch in branches if isinstance(branches, list) else ():
        keys = constraining(branch) if isinstance(branch, dict) else None
        if keys == ["enum"] and isinstance(branch["enum"], list):
            groups.append(branch["enum"])
        elif keys == ["const"]:
            groups.append([branch["const"]])
        else:
            return None
    return groups


def if_branches(doc: Document, atoms: tuple[Atom, ...], i: int) -> list[tuple[Atom, ...]]:
    """``if``/``then``/``else`` as two disjoint branches, ``if`` ∧ ``then`` and (not ``if``) ∧ ``else``,
    where ``negation`` can write the negated ``if``. Without ``then`` no negation is needed (``if`` or
    ``else``), without either there is no constraint; else unsupported (ignored when not strict)."""
    ptr, skip = atoms[i]
    sch = doc.resolve(ptr)
    done = atoms[:i] + ((ptr, skip | {"if"}),) + atoms[i + 1:]
    if "then" not in sch:
        if "else" not in sch:
            return [done]
        return [done + ((child(ptr, "if"), frozenset()),), done + ((child(ptr, "else"), frozenset()),)]
    neg = negation(doc.resolve(child(ptr, "if")))
    if neg is None:
        doc.problem("'if' with 'then' is supported only where the negation of 'if' can be written "
                    "(keywords such as 'format', 'items' or 'patternProperties' have none)", child(ptr, "if"))
        return [done]
    yes = done + ((child(ptr, "if"), frozenset()), (child(ptr, "then"), frozenset()))
    no = done + ((doc.synthetic(neg, child(ptr, "if")), frozenset()),) + (((child(ptr, "else"), frozenset()),) if "else" in sch else ())
    return [yes, no]


NEGATABLE = ("type", "const", "enum", "required", "pattern")
# ``{keyword: bound}`` fails only for the values of its type beyond the bound: (type, the keyword that
# holds for those, shift of a count)
_BOUND_NEGATIONS = {
    "minimum": ("number", "exclusiveMaximum", 0), "exclusiveMinimum": ("number", "maximum", 0),
    "maximum": ("number", "exclusiveMinimum", 0), "exclusiveMaximum": ("number", "minimum", 0),
    "minLength": ("string", "maxLength", -1), "maxLength": ("string", "minLength", 1),
    "minItems": ("array", "maxItems", -1), "maxItems": ("array", "minItems", 1),
    "minProperties": ("object", "maxProperties", -1), "maxProperties": ("object", "minProperties", 1),
}
_SPLITTABLE = frozenset(NEGATABLE) | frozenset(_BOUND_NEGATIONS) | {"properties"}  # keywords that read no sibling


def negation(sch: Any) -> Optional[Any]:
    """A schema for the values that ``sch`` rejects, where one can be written: one keyword among
    ``NEGATABLE`` (for ``_negate``), a bound (``minimum``, ``maxLength``...: the values of its type
    beyond it), ``properties`` of one name whose schema has a negation (``true`` there: none fails it),
    ``contains`` of a schema with a negation (the arrays whose items all fail it), ``not`` (its
    argument), and by De Morgan any conjunction of those
    (``anyOf`` of the parts' negations; ``properties`` and ``required`` split name by name) and
    ``anyOf``/``allOf`` of them; annotations aside. None otherwise."""
    if isinstance(sch, bool):
        return not sch
    if not isinstance(sch, dict):
        return None
    keys = constraining(sch)
    if not keys:
        return False
    if len(keys) == 1 and keys[0] in NEGATABLE and _plain_not(sch):
        return {"not": sch}
    if keys == ["not"]:
        return sch["not"]
    if len(keys) == 1 and keys[0] in ("anyOf", "allOf") and isinstance(sch[keys[0]], list) and sch[keys[0]]:
        negated = [negation(branch) for branch in sch[keys[0]]]
        return None if any(n is None for n in negated) else {"allOf" if keys[0] == "anyOf" else "anyOf": negated}
    if keys == ["contains"] and sch.get("minContains", 1) == 1 and "maxContains" not in sch:
        # an array fails ``contains`` when none of its items matches (non-arrays always pass)
        inner = negation(sch["contains"])
        return None if inner is None else {"type": "array", "items": inner}
    if len(keys) == 1 and keys[0] in _BOUND_NEGATIONS:
        bound = sch[keys[0]]
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound):
            return None
        kind, other, shift = _BOUND_NEGATIONS[keys[0]]
        if shift and bound != int(bound):
            return None
        if shift and int(bound) + shift < 0:
            return False  # minLength 0 and the like hold for every value
        return {"type": kind, other: int(bound) + shift if shift else bound}  # other types satisfy a bound
    parts = _conjuncts(sch, keys)
    if parts is not None and len(parts) > 1:
        negated = [negation(part) for part in parts]
        return None if any(n is None for n in negated) else {"anyOf": negated}
    props = sch.get("properties")
    if keys != ["properties"] or not isinstance(props, dict) or len(props) != 1:
        return None  # (``properties`` beside ``required`` is split above, name by name)
    (name, value), = props.items()
    negated = negation(value)
    if negated is None:
        return None
    # the objects whose ``name`` fails ``value`` (none where ``value`` is ``true``: ``{"uses": true}``)
    return False if negated is False else {"type": "object", "required": [name], "properties": {name: negated}}


def constraining(sch: dict) -> list[str]:
    """``sch``'s keywords that constrain a value: annotations and unknown keywords (``markdownDescription``)
    aside, as ``merge`` reads them."""
    return [k for k in sch if k in ASSERTIONS or k in APPLICATORS]


def _conjuncts(sch: dict, keys: list[str]) -> Optional[list[dict]]:
    """``sch`` as a conjunction of one-keyword (one-name) schemas, when none of its keywords reads a sibling."""
    if not keys or any(k not in _SPLITTABLE for k in keys):
        return None
    if any(isinstance(sch.get(k), bool) for k in ("exclusiveMinimum", "exclusiveMaximum")):
        return None  # draft 4: a boolean that changes "minimum"/"maximum"
    parts: list[dict] = []
    for k in keys:
        value = sch[k]
        if k == "properties" and isinstance(value, dict):
            parts += [{"properties": {name: v}} for name, v in value.items()]
        elif k == "required" and isinstance(value, list):
            parts += [{"required": [name]} for name in value]
        else:
            parts.append({k: value})
    return parts


def _next_dependency(doc: Document, ptr: str, skip: frozenset[str], kw: str) -> Optional[str]:
    deps = doc.resolve(ptr)[kw]
    if not isinstance(deps, dict):
        raise doc.fail(f"'{kw}' must be an object", child(ptr, kw))
    return next((name for name in deps if f"{kw}/{name}" not in skip), None)


def dependency_branches(doc: Document, atoms: tuple[Atom, ...], i: int, kw: str) -> list[tuple[Atom, ...]]:
    """``kw`` for its next member name ``a`` as three disjoint branches: not an object; an object
    without ``a``; an object with ``a`` and what ``a`` brings (its required names, or its schema)."""
    ptr, skip = atoms[i]
    name = _next_dependency(doc, ptr, skip, kw)
    at = child(ptr, kw, name)
    need = doc.resolve(at)
    done = atoms[:i] + ((ptr, skip | {f"{kw}/{name}"}),) + atoms[i + 1:]
    if isinstance(need, list) and kw != "dependentSchemas":
        if not all(isinstance(x, str) for x in need):
            raise doc.fail("dependent names must be strings", at)
        present: tuple[Atom, ...] = ((doc.synthetic({"type": "object", "required": [name, *need]}), frozenset()),)
    elif isinstance(need, (dict, bool)) and kw != "dependentRequired":
        present = ((doc.synthetic({"type": "object", "required": [name]}), frozenset()), (at, frozenset()))
    else:
        raise doc.fail(f"'{kw}' values must be {'arrays of names' if kw == 'dependentRequired' else 'schemas'}", at)
    return [done + ((doc.synthetic(NON_OBJECT), frozenset()),),
            done + ((doc.synthetic({"not": {"required": [name]}}), frozenset()),),
            done + present]


def choice_product(doc: Document, atoms: tuple[Atom, ...]) -> int:
    """The number of branch combinations of every ``anyOf``/``oneOf`` (and dependency) left in a conjunction
    (a choice of enums is one enum: one branch)."""
    product = 1
    for ptr, skip in atoms:
        sch = doc.resolve(ptr)
        for kw in ("anyOf", "oneOf"):
            if kw in sch and kw not in skip and isinstance(sch[kw], list) and _enum_groups(doc, ptr, kw) is None:
                product *= max(1, len(sch[kw]))
        for kw in DEPENDENCIES:
            if kw in sch and kw not in skip and isinstance(sch[kw], dict):
                product *= 3 ** sum(f"{kw}/{name}" not in skip for name in sch[kw])
        if "if" in sch and "if" not in skip:
            product *= 2
    return product


def _negate(doc: Document, m: Merged, arg: Any, at: str) -> None:
    """``not`` of a schema with one keyword among ``NEGATABLE`` (annotations aside), else unsupported."""
    if arg is True:
        m.types = set()  # not true: nothing
        return
    if arg is False:
        return
    keys = constraining(arg) if isinstance(arg, dict) else None
    if keys == []:
        m.types = set()  # annotations only: a schema every value meets, so nothing is left
        return
    if not keys or len(keys) != 1 or keys[0] not in NEGATABLE:
        doc.problem(f"unsupported keyword 'not' (only one of {', '.join(NEGATABLE)} can be negated)", at)
        return
    kw, value = keys[0], arg[keys[0]]
    where = child(at, kw)
    if kw == "type":
        m.types -= _type_set(doc, value, where)  # not integer: "frac" stays, the numbers that are no integer
    elif kw in ("const", "enum"):
        m.not_values.extend((v, where) for v in _enum_values(doc, kw, value, where))
    elif kw == "required":  # "required" holds for every non-object: only objects can fail it
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise doc.fail("'required' must be an array of strings", where)
        if len(value) > 1:
            doc.problem("'not' of 'required' with several names is unsupported", where)
            return
        m.types &= {"object"} if value else set()
        m.forbidden.extend(value)
    else:  # likewise "pattern" for non-strings
        if not isinstance(value, str):
            raise doc.fail("'pattern' must be a string", where)
        m.types &= {"string"}
        m.not_patterns.append((value, where))


def _type_set(doc: Document, value: Any, ptr: str) -> set[str]:
    """The value kinds a ``type`` keyword names (one name or a list)."""
    kinds: set[str] = set()
    for t in value if isinstance(value, list) else [value]:
        if t not in TYPES:
            raise doc.fail(f"unknown type {t!r}", ptr)
        kinds |= _TYPE_MAP[t]
    return kinds


def _enum_values(doc: Document, kw: str, value: Any, ptr: str) -> list:
    """The values an ``enum`` or ``const`` allows; NaN and Infinity (which Python's ``json`` parses) are refused."""
    values = [value] if kw == "const" else value
    if not isinstance(values, list):
        raise doc.fail("'enum' must be an array", ptr)
    try:
        json.dumps(values, allow_nan=False)
    except ValueError:
        raise doc.fail("an enum/const value holds NaN or Infinity, which are not JSON", ptr) from None
    except RecursionError:
        raise doc.fail("an enum/const value is nested too deeply", ptr) from None
    return values


def _num(doc: Document, v: Any, ptr: str) -> Decimal:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise doc.fail("expected a number", ptr)
    if isinstance(v, float) and not math.isfinite(v):
        raise doc.fail(f"expected a finite number, got {v}", ptr)
    return Decimal(v) if isinstance(v, int) else Decimal(repr(v))


def _count(doc: Document, v: Any, ptr: str) -> int:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise doc.fail("expected a non-negative integer", ptr)
    return v


def tighter_lo(a: Bound, b: Bound) -> Bound:
    if a is None:
        return b
    if b is None:
        return a
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return (a[0], a[1] or b[1])


def tighter_hi(a: Bound, b: Bound) -> Bound:
    if a is None:
        return b
    if b is None:
        return a
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return (a[0], a[1] or b[1])


def merge(doc: Document, atoms: tuple[Atom, ...]) -> Merged:
    """Merge the keywords of flattened atoms (no applicators left)."""
    m = Merged(atoms)
    for ptr, skip in atoms:
        sch = doc.resolve(ptr)
        obj: Optional[ObjectPart] = None
        arr: Optional[ArrayPart] = None
        for kw, arg in sch.items():
            if kw in skip or kw in IGNORED or kw in APPLICATORS:
                continue
            at = child(ptr, kw)
            if kw == "not":
                _negate(doc, m, arg, at)
                continue
            if kw in DEPENDENCIES:
                continue  # distributed by the builder (``dependency_branches``) before merging
            if kw == "contains":
                low = _count(doc, sch.get("minContains", 1), child(ptr, "minContains"))
                high = sch.get("maxContains")
                high = None if high is None else _count(doc, high, child(ptr, "maxContains"))
                if low > 0 or high is not None:
                    m.contains.append((at, low, high))
                continue
            if kw == "unevaluatedProperties" and arg in (True, {}):
                continue  # everything may be unevaluated: no constraint
            if kw == "unevaluatedProperties" and arg is False:
                m.closed.append(ptr)
            elif kw in UNSUPPORTED:
                doc.problem(f"unsupported keyword '{kw}'", at)
            elif kw == "type":
                m.types &= _type_set(doc, arg, at)
            elif kw in ("enum", "const"):
                m.enums.append((_enum_values(doc, kw, arg, at), at))
            elif kw in ("minimum", "exclusiveMinimum"):
                if isinstance(arg, bool):  # draft 4 boolean form
                    continue
                excl = kw == "exclusiveMinimum" or sch.get("exclusiveMinimum") is True
                m.lo = tighter_lo(m.lo, (_num(doc, arg, at), excl))
            elif kw in ("maximum", "exclusiveMaximum"):
                if isinstance(arg, bool):
                    continue
                excl = kw == "exclusiveMaximum" or sch.get("exclusiveMaximum") is True
                m.hi = tighter_hi(m.hi, (_num(doc, arg, at), excl))
            elif kw == "multipleOf":
                v = _num(doc, arg, at)
                if v <= 0:
                    raise doc.fail("'multipleOf' must be positive", at)
                m.multiple_of.append((v, at))
            elif kw == "minLength":
                m.min_len = max(m.min_len, _count(doc, arg, at))
            elif kw == "maxLength":
                n = _count(doc, arg, at)
                m.max_len = n if m.max_len is None else min(m.max_len, n)
            elif kw == "pattern":
                if not isinstance(arg, str):
                    raise doc.fail("'pattern' must be a string", at)
                m.patterns.append((arg, at))
            elif kw == "format":
                if isinstance(arg, str):
                    m.formats.append((arg, at))
            elif kw in ("items", "prefixItems", "additionalItems"):
                if arr is None:
                    arr = ArrayPart(ptr)
                    m.arrays.append(arr)
                if kw == "prefixItems" or (kw == "items" and isinstance(arg, list)):
                    if not isinstance(arg, list):
                        raise doc.fail("'prefixItems' must be an array", at)
                    if kw == "prefixItems" and isinstance(sch.get("items"), list):
                        raise doc.fail("array-form 'items' together with 'prefixItems'", at)
                    arr.prefix = [child(at, i) for i in range(len(arg))]
                    if kw == "items" and "additionalItems" in sch and "additionalItems" not in skip:
                        arr.rest = child(ptr, "additionalItems")
                elif kw == "items":
                    arr.rest = at
                # additionalItems only matters next to array-form items (handled above)
            elif kw == "minItems":
                m.min_items = max(m.min_items, _count(doc, arg, at))
            elif kw == "maxItems":
                n = _count(doc, arg, at)
                m.max_items = n if m.max_items is None else min(m.max_items, n)
            elif kw == "uniqueItems":
                if arg is True:
                    m.unique = at
            elif kw in ("properties", "patternProperties", "additionalProperties", "propertyNames"):
                if obj is None:
                    obj = ObjectPart(ptr)
                    m.objects.append(obj)
                if kw == "properties":
                    if not isinstance(arg, dict):
                        raise doc.fail("'properties' must be an object", at)
                    obj.props = {k: child(at, k) for k in arg}
                elif kw == "patternProperties":
                    if not isinstance(arg, dict):
                        raise doc.fail("'patternProperties' must be an object", at)
                    obj.patterns = [(k, child(at, k)) for k in arg]
                elif kw == "additionalProperties":
                    obj.additional = at
                else:
                    obj.names = at
            elif kw == "required":
                if not isinstance(arg, list) or not all(isinstance(x, str) for x in arg):
                    raise doc.fail("'required' must be an array of strings", at)
                known = set(m.required)
                for name in arg:
                    if name not in known:
                        known.add(name)
                        m.required.append(name)
            elif kw == "minProperties":
                m.min_props = max(m.min_props, _count(doc, arg, at))
            elif kw == "maxProperties":
                n = _count(doc, arg, at)
                m.max_props = n if m.max_props is None else min(m.max_props, n)
            # anything else is an unknown keyword: an annotation, ignored
    return m
