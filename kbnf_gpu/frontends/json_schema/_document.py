"""A schema document: JSON pointers, ``$ref`` resolution, keyword tables."""
from __future__ import annotations

import warnings
from typing import Any, Optional
from urllib.parse import unquote

from ...errors import GrammarError

MAX_NESTING = 200  # schema levels (one level = the value of "items", of "properties"/name...)
SCHEMA_KEYS = frozenset(
    {"items", "additionalItems", "additionalProperties", "propertyNames", "not", "if", "then", "else",
     "contains", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)
SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})

# Keywords that never constrain an instance (annotations and containers).
IGNORED = frozenset(
    {
        "title", "description", "default", "examples", "$comment", "$schema", "$id", "id",
        "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$defs", "definitions", "deprecated",
        "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "contentSchema",
        "$vocabulary", "then", "else", "minContains", "maxContains",
    }
)
# Standard assertion/applicator keywords the grammar cannot express.
UNSUPPORTED = frozenset(
    {
        "not", "if", "dependentSchemas", "dependentRequired", "dependencies", "contains",
        "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
    }
)
TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")


class JsonSchemaWarning(UserWarning):
    """An approximation or an ignored keyword (``strict=False``)."""


def escape_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def child(pointer: str, *tokens: Any) -> str:
    return pointer + "".join("/" + escape_token(str(t)) for t in tokens)


class Document:
    """The root schema plus everything needed to resolve pointers and refs."""

    def __init__(self, root: Any, strict: bool) -> None:
        self.root = root
        self.strict = strict
        self.draft7 = False
        self.base = ""
        self._warned: set[str] = set()
        self._cache: dict[str, Any] = {"": root}
        self.anchors: dict[str, str] = {}
        if isinstance(root, dict):
            sch = root.get("$schema")
            if isinstance(sch, str) and any(d in sch for d in ("draft-07", "draft-06", "draft-04", "draft-03")):
                self.draft7 = True
            rid = root.get("$id", root.get("id"))
            if isinstance(rid, str):
                self.base = rid.split("#")[0]
        self._scan()

    # -------------------------------------------------------- diagnostics

    def problem(self, message: str, pointer: str) -> None:
        """An unsupported construct: error when strict, else warn once."""
        text = f"{message} at '{pointer or '/'}'"
        if self.strict:
            raise GrammarError(text + " (pass strict=False to ignore it)")
        self.warn(text + "; ignored")

    def warn(self, text: str) -> None:
        if text not in self._warned:
            self._warned.add(text)
            warnings.warn(text, JsonSchemaWarning, stacklevel=4)

    def fail(self, message: str, pointer: str) -> GrammarError:
        return GrammarError(f"{message} at '{pointer or '/'}'")

    # ---------------------------------------------------------- pointers

    def _scan(self) -> None:
        """Check schema nesting and collect ``$anchor`` names (iteratively).

        A level is one step into a subschema (``items``, ``properties``/name,
        ``anyOf``/i...); data (``enum``, ``const``, ``default``...) is not walked.
        """
        stack: list[tuple[Any, str, int]] = [(self.root, "", 0)]
        while stack:
            node, ptr, level = stack.pop()
            if not isinstance(node, dict):
                continue
            if level > MAX_NESTING:
                shown = ptr if len(ptr) < 80 else ptr[:40] + "..." + ptr[-37:]
                raise GrammarError(f"schema nested more than {MAX_NESTING} levels deep at '{shown}'")
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                self.anchors.setdefault(anchor, ptr)
            for k, v in node.items():
                here = child(ptr, k)
                if k in SCHEMA_KEYS:
                    if isinstance(v, list):  # array-form items
                        stack.extend((x, child(here, i), level + 1) for i, x in enumerate(v))
                    else:
                        stack.append((v, here, level + 1))
                elif k in SCHEMA_LISTS and isinstance(v, list):
                    stack.extend((x, child(here, i), level + 1) for i, x in enumerate(v))
                elif k in SCHEMA_MAPS and isinstance(v, dict):
                    stack.extend((x, child(here, n), level + 1) for n, x in v.items())

    def resolve(self, pointer: str) -> Any:
        """The value at a JSON pointer (raises GrammarError when absent)."""
        hit = self._cache.get(pointer, self)
        if hit is not self:
            return hit
        node = self.root
        if pointer and not pointer.startswith("/"):
            raise GrammarError(f"invalid JSON pointer '{pointer}'")
        for raw in pointer.split("/")[1:]:
            tok = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
            else:
                raise GrammarError(f"JSON pointer '{pointer}' does not resolve")
        self._cache[pointer] = node
        return node

    def ref_target(self, ref: Any, at: str) -> Optional[str]:
        """The pointer a ``$ref`` value at ``at`` refers to (None: a non-local ref, ignored)."""
        if not isinstance(ref, str):
            raise self.fail("'$ref' must be a string", at)
        target = ref
        if self.base and target.startswith(self.base):
            target = target[len(self.base):]
        if not target.startswith("#"):
            if target == "":
                return ""
            self.problem(f"non-local '$ref' '{ref}' is unsupported", child(at, "$ref"))
            return None
        frag = unquote(target[1:])
        if frag == "" or frag.startswith("/"):
            try:
                self.resolve(frag)
            except GrammarError:
                raise self.fail(f"'$ref' '{ref}' does not resolve", at) from None
            return frag
        if frag in self.anchors:
            return self.anchors[frag]
        raise self.fail(f"'$ref' '{ref}' does not resolve", at)
