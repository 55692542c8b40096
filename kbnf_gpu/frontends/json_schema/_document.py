"""The schema documents: locations, ``$ref`` resolution across documents, keyword tables.

Locations. Every subschema is named by a *location* string. In the root
schema it is the JSON pointer (``""``, ``"/properties/a"``); in another
document (one that a ``$ref`` reached through the caller's registry) it is
``"@<n>"`` followed by the pointer inside that document, ``n`` numbering the
documents in the order they were first referenced. ``child`` appends pointer
tokens to either form; ``show`` writes a location as ``uri#pointer`` for
messages (a root pointer stays a bare pointer).

References. A ``$ref`` is an RFC 3986 URI reference resolved against the base
URI of the place it occurs (the enclosing ``$id``s, else its document's URI);
its fragment is a JSON pointer or a plain-name anchor (``$anchor``,
``$dynamicAnchor``, draft <= 7 ``"$id": "#name"``). Documents other than the
root come only from ``registry`` (a ``referencing.Registry`` or a mapping URI
-> schema): nothing is fetched, and a URI found nowhere is a ``GrammarError``
naming the ``$ref`` by its location. Documents are read lazily: resolving
``#/$defs/x`` touches only that path, so a 2 MB definitions file costs only
the definitions a schema uses; a document is walked whole only to find an
embedded ``$id`` or an anchor.
"""
from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import unquote, urljoin

from ...errors import GrammarError, OptionError

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
# Standard assertion/applicator keywords the grammar cannot express (``not``, the dependencies and
# ``unevaluatedProperties`` only in the forms ``_merge`` takes apart first).
UNSUPPORTED = frozenset(
    {
        "not", "if", "dependentSchemas", "dependentRequired", "dependencies", "contains",
        "unevaluatedProperties", "unevaluatedItems", "$recursiveRef",
    }
)
TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")

_OLD_DRAFTS = ("draft-07", "draft-06", "draft-04", "draft-03")
_ID_DRAFTS = ("draft-04", "draft-03")  # "id" instead of "$id"
_MISSING = object()


class JsonSchemaWarning(UserWarning):
    """An approximation or an ignored keyword (``strict=False``)."""


def escape_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def child(pointer: str, *tokens: Any) -> str:
    if len(tokens) == 1:  # the common case, without a generator (called for every keyword of every subschema)
        return pointer + "/" + escape_token(str(tokens[0]))
    return pointer + "".join("/" + escape_token(str(t)) for t in tokens)


def _split(location: str) -> tuple[int, str]:
    """(document number, JSON pointer inside it)."""
    if not location.startswith("@"):
        return 0, location
    slash = location.find("/")
    if slash < 0:
        return int(location[1:]), ""
    return int(location[1:slash]), location[slash:]


def located(error: GrammarError, pointer: str) -> GrammarError:
    """``error`` with its ``pointer`` attribute set (the message already names the place)."""
    error.pointer = pointer
    return error


def check_registry(registry: Any) -> Optional[Mapping]:
    """The ``registry`` option: ``None``, a ``referencing.Registry`` or a mapping URI -> schema."""
    if registry is None or isinstance(registry, Mapping):
        return registry
    raise OptionError(
        f"registry must be a referencing.Registry or a mapping of URI -> schema, got {type(registry).__name__}"
    )


@dataclass
class _Source:
    """One document: its URI (no fragment; ``""`` for a root without ``$id``) and dialect."""

    uri: str
    contents: Any
    old_draft: bool  # draft 7 or older: "$id": "#a" is an anchor (and, for the root, $ref siblings are ignored)
    id_keyword: str  # "$id", or "id" before draft 6
    scanned: bool = False


class Document:
    """The root schema plus the registry's documents; resolves locations and refs (memoized)."""

    def __init__(self, root: Any, strict: bool, registry: Optional[Mapping] = None) -> None:
        self.strict = strict
        self._registry = registry
        self._registry_indexed = False
        self._warned: set[str] = set()
        self._sources: list[_Source] = []
        self._resources: dict[str, str] = {}  # absolute URI -> location of that resource
        self._anchors: dict[tuple[str, str], str] = {}  # (resource URI, name) -> location
        self._cache: dict[str, Any] = {}
        self._bases: dict[str, str] = {}
        self._targets: dict[tuple[str, Any], Optional[str]] = {}
        self._synthetic: dict[str, str] = {}
        self._origin: dict[int, str] = {}  # synthetic source -> the location it stands for
        self._add_source(root, "", None)
        self._scan(0, check_nesting=True)

    # -------------------------------------------------------- diagnostics

    def show(self, location: str) -> str:
        """A location for messages: a root JSON pointer, else ``uri#pointer``."""
        n, pointer = _split(location)
        if n in self._origin:
            return self.show(self._origin[n])
        if n == 0:
            return pointer or "/"
        return f"{self._sources[n].uri}#{pointer}"

    def problem(self, message: str, location: str) -> None:
        """An unsupported construct: error when strict, else warn once."""
        text = f"{message} at '{self.show(location)}'"
        if self.strict:
            raise located(GrammarError(text + " (pass strict=False to ignore it)"), self.show(location))
        self.warn(text + "; ignored")

    @property
    def warnings_given(self) -> int:
        """How many distinct warnings this document has given."""
        return len(self._warned)

    def warn(self, text: str) -> None:
        if text not in self._warned:
            self._warned.add(text)
            warnings.warn(text, JsonSchemaWarning, stacklevel=4)

    def fail(self, message: str, location: str) -> GrammarError:
        return located(GrammarError(f"{message} at '{self.show(location)}'"), self.show(location))

    # ---------------------------------------------------------- documents

    def _add_source(self, contents: Any, uri: str, like: Optional[_Source]) -> str:
        """Register a document under ``uri`` (and its own ``$id``); its location."""
        n = len(self._sources)
        old = like.old_draft if like else False
        id_keyword = like.id_keyword if like else "$id"
        if isinstance(contents, dict):
            dialect = contents.get("$schema")
            if isinstance(dialect, str):
                old = any(d in dialect for d in _OLD_DRAFTS)
                id_keyword = "id" if any(d in dialect for d in _ID_DRAFTS) else "$id"
        source = _Source(uri, contents, old, id_keyword)
        own = self._own_id(contents, source)
        if own is not None:
            source.uri = _join(uri, own)
        self._sources.append(source)
        location = "" if n == 0 else f"@{n}"
        self._cache[location] = contents
        self._resources.setdefault(uri, location)
        self._resources.setdefault(source.uri, location)
        return location

    @staticmethod
    def _own_id(node: Any, source: _Source) -> Optional[str]:
        """The base-changing ``$id`` of a schema object (fragment dropped), if any."""
        if not isinstance(node, dict):
            return None
        value = node.get(source.id_keyword)
        if not isinstance(value, str) or value.startswith("#"):
            return None
        return value.split("#", 1)[0]

    def _scan(self, n: int, check_nesting: bool = False) -> None:
        """Walk one document's subschemas (iteratively): embedded ``$id`` resources,
        anchors, and (root only) the nesting limit.

        A level is one step into a subschema (``items``, ``properties``/name,
        ``anyOf``/i...); data (``enum``, ``const``, ``default``...) is not walked.
        """
        source = self._sources[n]
        source.scanned = True
        prefix = "" if n == 0 else f"@{n}"
        stack: list[tuple[Any, str, int, str]] = [(source.contents, prefix, 0, source.uri)]
        while stack:
            node, loc, level, base = stack.pop()
            if not isinstance(node, dict):
                continue
            if check_nesting and level > MAX_NESTING:
                shown = loc if len(loc) < 80 else loc[:40] + "..." + loc[-37:]
                raise located(GrammarError(f"schema nested more than {MAX_NESTING} levels deep at '{shown}'"),
                              self.show(loc))
            if level:
                own = self._own_id(node, source)
                if own is not None:
                    base = _join(base, own)
                    self._resources.setdefault(base, loc)
            for key in ("$anchor", "$dynamicAnchor"):
                name = node.get(key)
                if isinstance(name, str):
                    self._anchors.setdefault((base, name), loc)
            legacy = node.get(source.id_keyword)
            if source.old_draft and isinstance(legacy, str) and legacy.startswith("#") and len(legacy) > 1:
                self._anchors.setdefault((base, legacy[1:]), loc)
            for k, v in node.items():
                here = child(loc, k)
                if k in SCHEMA_KEYS:
                    if isinstance(v, list):  # array-form items
                        stack.extend((x, child(here, i), level + 1, base) for i, x in enumerate(v))
                    else:
                        stack.append((v, here, level + 1, base))
                elif k in SCHEMA_LISTS and isinstance(v, list):
                    stack.extend((x, child(here, i), level + 1, base) for i, x in enumerate(v))
                elif k in SCHEMA_MAPS and isinstance(v, dict):
                    stack.extend((x, child(here, name), level + 1, base) for name, x in v.items())

    def _from_registry(self, uri: str) -> Any:
        """The registry's document for ``uri`` (``_MISSING`` when absent); never fetches."""
        registry = self._registry
        if registry is None:
            return _MISSING
        for key in (uri, uri + "#") if uri else ("",):
            try:
                value = registry[key]
            except KeyError:
                continue
            return _contents(value, uri)
        return _MISSING

    def _resource(self, uri: str) -> Optional[str]:
        """The location of the resource named ``uri`` (None: found nowhere)."""
        loc = self._resources.get(uri)
        if loc is not None:
            return loc
        contents = self._from_registry(uri)
        if contents is not _MISSING:
            return self._add_source(contents, uri, self._sources[0])
        # an embedded $id: in the documents read so far, then in every document of the registry
        for n in range(len(self._sources)):
            if not self._sources[n].scanned:
                self._scan(n)
        if uri not in self._resources and self._registry is not None and not self._registry_indexed:
            self._registry_indexed = True
            for key in list(self._registry.keys()):
                key = key.rstrip("#") if isinstance(key, str) else key
                if isinstance(key, str) and key not in self._resources:
                    self._add_source(_contents(self._registry[key], key), key, self._sources[0])
                    self._scan(len(self._sources) - 1)
        if uri not in self._resources:
            contents = _metaschema(uri)
            if contents is not _MISSING:
                return self._add_source(contents, uri, self._sources[0])
        return self._resources.get(uri)

    def synthetic(self, schema: dict, origin: Optional[str] = None) -> str:
        """The location of a schema the front end adds itself (one per distinct schema and origin);
        messages about it name ``origin``, the user's location it was derived from."""
        key = json.dumps([schema, origin], sort_keys=True)
        loc = self._synthetic.get(key)
        if loc is None:
            loc = self._synthetic[key] = self._add_source(schema, f"kbnf-gpu:internal/{len(self._synthetic)}", None)
            if origin is not None:
                self._origin[_split(loc)[0]] = origin
        return loc

    # ---------------------------------------------------------- locations

    def resolve(self, location: str) -> Any:
        """The value at a location (raises GrammarError when absent)."""
        hit = self._cache.get(location, _MISSING)
        if hit is not _MISSING:
            return hit
        n, pointer = _split(location)
        if pointer and not pointer.startswith("/"):
            raise GrammarError(f"invalid JSON pointer '{pointer}'")
        node = self._sources[n].contents
        for raw in pointer.split("/")[1:]:
            tok = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
            else:
                raise GrammarError(f"JSON pointer '{self.show(location)}' does not resolve")
        self._cache[location] = node
        return node

    def old_draft(self, location: str) -> bool:
        """Draft 7 or older: siblings of ``$ref`` are ignored. The root's dialect rules every
        document, as in ``jsonschema`` (its validator class is the root's)."""
        return self._sources[0].old_draft

    def base_uri(self, location: str) -> str:
        """The base URI at a location: the document's URI changed by every enclosing ``$id``."""
        hit = self._bases.get(location)
        if hit is not None:
            return hit
        n, pointer = _split(location)
        source = self._sources[n]
        base = source.uri
        node = source.contents
        kind = "schema"  # what ``node`` is: a schema, a list or map of schemas, or data
        for raw in pointer.split("/")[1:]:
            tok = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and tok in node:
                nxt = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                nxt = node[int(tok)]
            else:
                break
            if kind == "schema":
                kind = ("schema" if tok in SCHEMA_KEYS else "list" if tok in SCHEMA_LISTS
                        else "map" if tok in SCHEMA_MAPS else "data")
                if kind == "schema" and isinstance(nxt, list):
                    kind = "list"  # array-form items
            elif kind in ("list", "map"):
                kind = "schema"
            else:
                break
            node = nxt
            if kind == "schema":
                own = self._own_id(node, source)
                if own is not None:
                    base = _join(base, own)
        self._bases[location] = base
        return base

    def ref_target(self, ref: Any, at: str) -> Optional[str]:
        """The location the ``$ref`` of the schema at ``at`` refers to (None: unresolvable
        and ignored, with ``strict=False``)."""
        key = (at, ref if isinstance(ref, str) else id(ref))
        if key in self._targets:
            return self._targets[key]
        target = self._ref_target(ref, at)
        self._targets[key] = target
        return target

    def dynamic_target(self, ref: Any, at: str) -> Optional[str]:
        """The location a ``$dynamicRef`` refers to, where it does not depend on the evaluation path: a
        reference that does not land on a ``$dynamicAnchor`` reads as ``$ref``; one that does lands on the
        outermost resource of the dynamic scope declaring that anchor, which is the root resource when it
        declares it (an extensible recursive schema). Elsewhere (the 2020-12 metaschema's vocabularies, reached
        through the metaschema or not) it is unsupported."""
        target = self.ref_target(ref, at)
        if target is None or not isinstance(ref, str):
            return target
        name = unquote(ref.partition("#")[2])
        landed = self.resolve(target)
        if not name or name.startswith("/") or not isinstance(landed, dict) or landed.get("$dynamicAnchor") != name:
            return target
        outermost = self._anchors.get((self.base_uri(""), name))  # the root resource's, if it declares one
        if outermost is not None and self.resolve(outermost).get("$dynamicAnchor") == name:
            return outermost
        self.problem(f"'$dynamicRef' '{ref}' lands where the evaluation path decides (supported: the root "
                     f"resource declaring '$dynamicAnchor: {name}', or a reference that is no dynamic anchor)",
                     child(at, "$dynamicRef"))
        return None

    def _ref_target(self, ref: Any, at: str) -> Optional[str]:
        if not isinstance(ref, str):
            raise self.fail("'$ref' must be a string", at)
        base = self.base_uri(at)
        if ref.startswith("#"):
            uri, frag = base, ref[1:]
        else:
            uri, _, frag = _join(base, ref).partition("#") if base else ref.partition("#")
        frag = unquote(frag)
        resource = self._resource(uri)
        if resource is None:
            where = "it is not in the registry" if self._registry is not None else "no registry was given"
            self.problem(
                f"'$ref' '{ref}' refers to the document '{uri}', and {where} "
                "(documents are never fetched; pass them with registry=...)",
                child(at, "$ref"),
            )
            return None
        if frag == "" or frag.startswith("/"):
            target = resource + frag
            try:
                self.resolve(target)
            except GrammarError:
                raise self.fail(f"'$ref' '{ref}' does not resolve", at) from None
            return target
        loc = self._anchors.get((uri, frag))
        if loc is None:
            for n in range(len(self._sources)):
                if not self._sources[n].scanned:
                    self._scan(n)
            loc = self._anchors.get((uri, frag))
        if loc is None:
            raise self.fail(f"'$ref' '{ref}' does not resolve", at)
        return loc


def _join(base: str, ref: str) -> str:
    return urljoin(base, ref) if base else ref


def _metaschema(uri: str) -> Any:
    """The official metaschema named ``uri`` (draft 3 to 2020-12, their vocabularies), where the registry has
    none: from ``jsonschema_specifications``, which ``jsonschema`` installs (local files; ``_MISSING`` without
    it). A schema that holds schemas refers to them without passing them."""
    try:
        from jsonschema_specifications import REGISTRY
    except ImportError:
        return _MISSING
    for key in (uri, uri + "#") if uri else ():
        try:
            return _contents(REGISTRY[key], uri)
        except KeyError:  # referencing's NoSuchResource is one
            continue
    return _MISSING


def _contents(value: Any, uri: str) -> Any:
    """A registry entry as a schema: a ``referencing.Resource``, a schema, or its JSON text."""
    contents = getattr(value, "contents", value)
    if isinstance(contents, (str, bytes, bytearray)):
        try:
            contents = json.loads(contents)
        except (ValueError, RecursionError) as e:
            raise GrammarError(f"the registry's document '{uri}' is not valid JSON: {e}") from None
    if not isinstance(contents, (dict, bool)):
        raise GrammarError(f"the registry's document '{uri}' is not a schema (an object or a boolean)")
    return contents
