"""A small JSON Schema validator for concrete values (enum/const candidates,
declared property names against ``propertyNames``...).

Follows python ``jsonschema``'s semantics for the keywords it knows (``pattern``
uses ``re.search``, numbers compare exactly, ``1 == 1.0`` but ``true != 1``).
Formats use this package's own format languages (a subset of the checker's).
"""
from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ...errors import GrammarError
from ._document import MAX_NESTING, Document, child
from ._pattern import search
from ._pyre import to_python
from .formats import FORMATS, INTEGER_FORMATS, format_language


def json_key(v: Any, depth: int = 0) -> Any:
    """A hashable key under JSON Schema equality (``1 == 1.0``, ``true != 1``)."""
    if depth > MAX_NESTING:
        raise GrammarError("enum/const value nested too deeply")
    if isinstance(v, bool) or v is None:
        return ("c", v)
    if isinstance(v, (int, float)):
        return ("n", _num(v))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("a", tuple(json_key(x, depth + 1) for x in v))
    if isinstance(v, dict):
        return ("o", frozenset((k, json_key(x, depth + 1)) for k, x in v.items()))
    raise GrammarError(f"not a JSON value: {v!r}")


def equal(a: Any, b: Any) -> bool:
    return json_key(a) == json_key(b)


@lru_cache(maxsize=None)
def _format_re(name: str) -> re.Pattern[str]:
    return re.compile(to_python(format_language(name)), re.S)  # type: ignore[arg-type]


def _is_type(v: Any, t: str) -> bool:
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if t == "string":
        return isinstance(v, str)
    if t == "array":
        return isinstance(v, list)
    if t == "object":
        return isinstance(v, dict)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if t == "number":
        return True
    if t == "integer":
        return isinstance(v, int) or float(v).is_integer()
    return False


def _num(v: Any) -> Decimal:
    if isinstance(v, float) and not math.isfinite(v):  # NaN/Infinity parse in Python's json, but are not JSON
        raise GrammarError(f"enum/const value {v!r} is not valid JSON")
    return Decimal(v) if isinstance(v, int) else Decimal(repr(v))


# the keywords ``Validator`` checks (every other keyword is an annotation to it, true of any value)
_CHECKED = frozenset({
    "$ref", "$dynamicRef", "type", "enum", "const", "allOf", "anyOf", "oneOf", "not",
    "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems", "uniqueItems", "prefixItems", "items", "contains",
    "required", "minProperties", "maxProperties", "properties", "patternProperties", "additionalProperties",
    "propertyNames", "dependentRequired",
})


class Validator:
    """``valid(value, pointer, skip)``: does ``value`` satisfy the schema at ``pointer``?"""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        # (pointer, skip) -> the schema there and its keywords to check: an enum's values are validated at the
        # same places again and again (azure-pipelines: 133,000 times at 735 places, half of them against a
        # synthetic enum whose one keyword is skipped)
        self._checks: dict[tuple[str, frozenset[str]], tuple[dict, tuple[tuple[str, Any], ...]]] = {}

    def valid(self, value: Any, pointer: str, skip: frozenset[str] = frozenset(), depth: int = 0) -> bool:
        return bool(self.valid_values([value], pointer, skip, depth))

    def valid_values(self, values: list, pointer: str, skip: frozenset[str] = frozenset(), depth: int = 0) -> list:
        """The ``values`` (in order) that satisfy the schema at ``pointer``: the schema and its keywords are
        looked up once for them all, and each keyword is one pass over those left (an enum's values are checked
        against each place it meets: azure-pipelines' 254 task names at 735 places, 133,000 checks)."""
        if depth > MAX_NESTING:
            raise GrammarError("value or schema nested too deeply to check")
        sch = self.doc.resolve(pointer)
        if sch is True:
            return list(values)
        if sch is False:
            return []
        if not isinstance(sch, dict):
            raise self.doc.fail("a schema must be an object or a boolean", pointer)
        d = depth + 1
        if "$ref" in sch and self.doc.old_draft(pointer) and "$ref" not in skip:
            target = self.doc.ref_target(sch["$ref"], pointer)
            return list(values) if target is None else self.valid_values(values, target, frozenset(), d)
        found = self._checks.get((pointer, skip))
        if found is None or found[0] is not sch:
            found = self._checks[(pointer, skip)] = (
                sch, tuple((kw, arg) for kw, arg in sch.items() if kw in _CHECKED and kw not in skip))
        for kw, arg in found[1]:
            if not values:
                break
            values = [v for v in values if self._keyword(kw, arg, sch, v, pointer, skip, d)]
        return list(values)

    def _keyword(self, kw: str, arg: Any, sch: dict, v: Any, ptr: str, skip: frozenset[str], d: int) -> bool:
        if kw in ("$ref", "$dynamicRef"):
            target = self.doc.ref_target(arg, ptr) if kw == "$ref" else self.doc.dynamic_target(arg, ptr)
            return target is None or self.valid(v, target, frozenset(), d)
        if kw == "type":
            types = arg if isinstance(arg, list) else [arg]
            return any(_is_type(v, t) for t in types)
        if kw == "enum":
            return any(equal(v, x) for x in arg)
        if kw == "const":
            return equal(v, arg)
        if kw == "allOf":
            return all(self.valid(v, child(ptr, kw, i), frozenset(), d) for i in range(len(arg)))
        if kw == "anyOf":
            return any(self.valid(v, child(ptr, kw, i), frozenset(), d) for i in range(len(arg)))
        if kw == "oneOf":
            return sum(self.valid(v, child(ptr, kw, i), frozenset(), d) for i in range(len(arg))) == 1
        if kw == "not":
            return not self.valid(v, child(ptr, kw), frozenset(), d)
        if isinstance(v, str):
            return self._string(kw, arg, v)
        if _is_type(v, "number"):
            return self._number(kw, arg, sch, v)
        if isinstance(v, list):
            return self._array(kw, arg, sch, v, ptr, d)
        if isinstance(v, dict):
            return self._object(kw, arg, sch, v, ptr, d)
        return True

    def _string(self, kw: str, arg: Any, v: str) -> bool:
        if kw == "minLength":
            return len(v) >= arg
        if kw == "maxLength":
            return len(v) <= arg
        if kw == "pattern":
            return search(arg, v)
        if kw == "format" and isinstance(arg, str) and arg in FORMATS:
            return _format_re(arg).fullmatch(v) is not None
        return True

    def _number(self, kw: str, arg: Any, sch: dict, v: Any) -> bool:
        if kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") and isinstance(arg, bool):
            return True
        x = _num(v)
        if kw == "minimum":
            return x > _num(arg) if sch.get("exclusiveMinimum") is True else x >= _num(arg)
        if kw == "maximum":
            return x < _num(arg) if sch.get("exclusiveMaximum") is True else x <= _num(arg)
        if kw == "exclusiveMinimum":
            return x > _num(arg)
        if kw == "exclusiveMaximum":
            return x < _num(arg)
        if kw == "multipleOf":  # as fractions: a decimal remainder needs the quotient's digits in its precision
            return (Fraction(x) / Fraction(_num(arg))).denominator == 1
        if kw == "format" and isinstance(arg, str) and arg in INTEGER_FORMATS:
            lo, hi = INTEGER_FORMATS[arg]
            return lo <= x <= hi
        return True

    def _array(self, kw: str, arg: Any, sch: dict, v: list, ptr: str, d: int) -> bool:
        if kw == "minItems":
            return len(v) >= arg
        if kw == "maxItems":
            return len(v) <= arg
        if kw == "uniqueItems":
            return not arg or len({json_key(x) for x in v}) == len(v)
        if kw == "prefixItems":
            return all(self.valid(x, child(ptr, kw, i), frozenset(), d) for i, x in enumerate(v[: len(arg)]))
        if kw == "items":
            if isinstance(arg, list):
                ok = all(self.valid(x, child(ptr, kw, i), frozenset(), d) for i, x in enumerate(v[: len(arg)]))
                if "additionalItems" in sch:
                    ok = ok and all(
                        self.valid(x, child(ptr, "additionalItems"), frozenset(), d) for x in v[len(arg):]
                    )
                return ok
            start = len(sch.get("prefixItems", []))
            return all(self.valid(x, child(ptr, kw), frozenset(), d) for x in v[start:])
        if kw == "contains":
            n = sum(self.valid(x, child(ptr, kw), frozenset(), d) for x in v)
            return sch.get("minContains", 1) <= n <= sch.get("maxContains", n)
        return True

    def _object(self, kw: str, arg: Any, sch: dict, v: dict, ptr: str, d: int) -> bool:
        if kw == "required":
            return all(k in v for k in arg)
        if kw == "minProperties":
            return len(v) >= arg
        if kw == "maxProperties":
            return len(v) <= arg
        if kw == "properties":
            return all(self.valid(v[k], child(ptr, kw, k), frozenset(), d) for k in arg if k in v)
        if kw == "patternProperties":
            return all(
                self.valid(x, child(ptr, kw, p), frozenset(), d)
                for p in arg for k, x in v.items() if search(p, k)
            )
        if kw == "additionalProperties":
            props = sch.get("properties", {})
            pats = sch.get("patternProperties", {})
            return all(
                self.valid(x, child(ptr, kw), frozenset(), d)
                for k, x in v.items()
                if k not in props and not any(search(p, k) for p in pats)
            )
        if kw == "propertyNames":
            return all(self.valid(k, child(ptr, kw), frozenset(), d) for k in v)
        if kw == "dependentRequired":
            return all(all(r in v for r in reqs) for k, reqs in arg.items() if k in v)
        return True
