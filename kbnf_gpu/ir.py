"""The one intermediate representation every front end produces.

Two layers:

* Terminal languages (``RegExpr``): regular languages over Unicode code points
  (or raw bytes), compiled later to byte-level DFAs by ``kbnf_gpu.automata``.
* Grammar expressions (``Expr``): EBNF over nonterminal references and
  terminals. ``kbnf_gpu.normalize`` desugars them into BNF.

Everything is a frozen dataclass: front ends build it, later stages read it.
Source positions are carried for error messages but never compared.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Iterator, Union

# ---------------------------------------------------------------- positions


def _hash_once(cls):
    """A node that holds other nodes: its hash kept once computed (the generated one walks the whole subtree,
    and the compiler hashes the same nodes over and over: memo keys), and neither its hash nor its equality
    recursing deep (a JSON Schema number bound of 300 digits nests its expression 600 levels deep, past the
    interpreter's recursion limit for the generated ones): equality with an explicit stack, and a hash that
    finds itself ``_HASH_DEPTH`` misses down (parts made but never hashed) hashes the parts under it first,
    children before parents. Not pickled (string hashes differ per process)."""
    generated = cls.__hash__
    _NODE_FIELDS[cls] = tuple(f.name for f in fields(cls) if f.compare)

    def __hash__(self) -> int:
        try:
            return self.__dict__["_hash"]
        except KeyError:
            pass
        misses = _hashing.__dict__
        depth = misses.get("depth", 0)
        if depth >= _HASH_DEPTH:
            _hash_parts(self)
        misses["depth"] = depth + 1
        try:
            value = generated(self)
        finally:
            misses["depth"] = depth
        object.__setattr__(self, "_hash", value)
        return value

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return _equal(self, other)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_hash", "_fingerprint")}

    cls.__hash__ = __hash__
    cls.__eq__ = __eq__
    cls.__getstate__ = __getstate__
    return cls


_NODE_FIELDS: dict[type, tuple[str, ...]] = {}  # the compared fields of each class ``_hash_once`` decorates
_HASH_DEPTH = 32  # first hashes nested this deep (each a few frames) go on without recursion
_hashing = threading.local()  # ``depth``: the first hashes in progress in this thread, nested


def _node_parts(node: object) -> Iterator[object]:
    """The nodes directly held by ``node``'s compared fields, in tuples or in tuples of tuples (an automaton's
    edges) too."""
    for name in _NODE_FIELDS[type(node)]:
        value = getattr(node, name)
        for x in value if type(value) is tuple else (value,):
            if type(x) is tuple:
                yield from x
            else:
                yield x


def _hash_parts(root: object) -> None:
    """Hash every node under ``root`` whose hash is not kept yet, children before parents (so that each
    generated hash reads its children's kept ones and goes no deeper)."""
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if ready:
            if node is not root:
                hash(node)
            continue
        stack.append((node, True))
        stack.extend((x, False) for x in _node_parts(node) if type(x) in _NODE_FIELDS and "_hash" not in x.__dict__)


def _equal(a: object, b: object) -> bool:
    """Structural equality of two nodes of one class, with an explicit stack (unequal ones mostly differ in
    their kept hashes)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        kind = type(x)
        if kind is not type(y):
            return False
        names = _NODE_FIELDS.get(kind)
        if names is not None:
            if hash(x) != hash(y):
                return False
            stack.extend((getattr(x, name), getattr(y, name)) for name in names)
        elif kind is tuple:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif x != y:
            return False
    return True


@dataclass(frozen=True)
class Span:
    """1-based line and column of a construct in the grammar text."""

    line: int
    column: int


def where(span: Span | None) -> dict:
    """``line``/``column`` keyword arguments for an error at ``span`` (none when it is unknown)."""
    return {} if span is None else {"line": span.line, "column": span.column}


# ---------------------------------------------------- terminal languages


@dataclass(frozen=True)
class Literal:
    """Exactly these bytes (a quoted string, already UTF-8 encoded)."""

    value: bytes


@dataclass(frozen=True)
class CharClass:
    """One code point out of ``ranges`` (sorted, disjoint, inclusive).

    Negated classes are stored already complemented over 0..0x10FFFF
    (surrogates excluded by the DFA builder, which encodes UTF-8).
    """

    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class ByteClass:
    """One raw byte out of ``ranges`` (sorted, disjoint, inclusive, 0..255)."""

    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Pattern:
    """A regex in Python ``re`` syntax (parsed by Python's own regex parser, so it means what ``re`` means).

    ``flags`` holds single-letter flags (``"i"``, ``"s"``, ``"m"``, ``"x"``, ``"u"``, ``"a"``).
    """

    source: str
    flags: str = ""


@_hash_once
@dataclass(frozen=True)
class Concat:
    parts: tuple["RegExpr", ...]


@_hash_once
@dataclass(frozen=True)
class Alternation:
    options: tuple["RegExpr", ...]


@_hash_once
@dataclass(frozen=True)
class Repeat:
    """``item`` repeated ``min`` to ``max`` times (``max=None``: unbounded)."""

    item: "RegExpr"
    min: int = 0
    max: int | None = None


@_hash_once
@dataclass(frozen=True)
class Automaton:
    """The language of a finite automaton: states ``0..n_states - 1`` (0 the start), ``edges``
    ``(from, label, to)`` that each read one match of ``label`` (a ``RegExpr``), and the ``accepting``
    states. A front end gives one where any regular expression for the language is huge: a pattern's
    lookaheads beside a length bound (``^(?=.*[A-Z]).{8,64}$``: a flag times a counter) need an expression
    exponential in the flags, its automaton a few hundred states."""

    n_states: int
    edges: tuple[tuple[int, "RegExpr", int], ...]
    accepting: tuple[int, ...]


RegExpr = Union[Literal, CharClass, ByteClass, Pattern, Concat, Alternation, Repeat, Automaton]


def parts(x: RegExpr) -> tuple[RegExpr, ...]:
    """The direct sub-expressions of ``x``, an automaton's edge labels included (none for a leaf)."""
    if isinstance(x, Concat):
        return x.parts
    if isinstance(x, Alternation):
        return x.options
    if isinstance(x, Repeat):
        return (x.item,)
    if isinstance(x, Automaton):
        return tuple(label for _, label, _ in x.edges)
    return ()


def fingerprint(expr: object) -> bytes | None:
    """A 32-byte digest of a terminal language's structure (``RegExpr``): equal for equal expressions, and,
    up to a BLAKE2b collision, only for them; ``None`` if ``expr`` holds a node of another type.

    A memo key that holds no objects: a process-wide memo keyed by the expressions themselves kept every node
    of thousands of them alive, and each full collection scanned them all. Kept on each composite node once
    computed (not pickled, like the kept hash), children before parents, without recursion (an expression
    may nest thousands deep).
    """
    leaves: dict[int, bytes] = {}  # a leaf's digest, this call only (leaves pickle their whole __dict__)

    def known(node: object) -> bytes | None:
        return leaves.get(id(node)) if type(node) in _LEAVES else node.__dict__.get("_fingerprint")

    stack = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if type(node) not in _FINGERPRINTED:
            return None
        if known(node) is not None:
            continue
        below = parts(node)
        if not ready:
            stack.append((node, True))
            stack.extend((x, False) for x in below)
            continue
        digest = hashlib.blake2b(_fingerprint_head(node) + b"".join(map(known, below)), digest_size=32).digest()
        if type(node) in _LEAVES:
            leaves[id(node)] = digest
        else:
            object.__setattr__(node, "_fingerprint", digest)
    return known(expr)


def _fingerprint_head(node: object) -> bytes:
    """Everything of ``node`` but its sub-expressions' digests (fixed-length, appended after), tagged by type."""
    kind = type(node)
    if kind is Literal:
        own = node.value
    elif kind is CharClass or kind is ByteClass:
        own = repr(node.ranges).encode()
    elif kind is Pattern:
        own = repr((node.source, node.flags)).encode()
    elif kind is Repeat:
        own = repr((node.min, node.max)).encode()
    elif kind is Automaton:
        own = repr((node.n_states, node.accepting, tuple((p, q) for p, _, q in node.edges))).encode()
    else:  # Concat, Alternation: their parts alone
        own = b""
    return _FINGERPRINTED[kind] + own


_FINGERPRINTED = {Literal: b"L", CharClass: b"C", ByteClass: b"B", Pattern: b"P", Concat: b"c", Alternation: b"a",
                  Repeat: b"r", Automaton: b"A"}
_LEAVES = (Literal, CharClass, ByteClass, Pattern)


class TerminalKind(str, Enum):
    """How a terminal's regular language is turned into its DFA (KBNF flags)."""

    PLAIN = "plain"
    EARLY_END = "early_end"  # KBNF #e"...": the lexeme ends at its first match
    COMPLEMENT = "complement"  # KBNF #ex"...": see kbnf_gpu/automata/kinds.py for the exact meaning
    SUBSTRINGS = "substrings"  # KBNF #substrs"...": any substring of the literal


@_hash_once
@dataclass(frozen=True)
class Terminal:
    """A terminal symbol: a regular language over bytes plus its kind."""

    expr: RegExpr
    kind: TerminalKind = TerminalKind.PLAIN
    name: str | None = field(default=None, compare=False)
    span: Span | None = field(default=None, compare=False)


# ------------------------------------------------------ grammar expressions


@dataclass(frozen=True)
class Ref:
    """A reference to a nonterminal by name."""

    name: str
    span: Span | None = field(default=None, compare=False)


@_hash_once
@dataclass(frozen=True)
class Sequence:
    """Concatenation; ``Sequence(())`` is the empty string."""

    items: tuple["Expr", ...]


@_hash_once
@dataclass(frozen=True)
class Choice:
    alternatives: tuple["Expr", ...]


@_hash_once
@dataclass(frozen=True)
class Repetition:
    """``item`` repeated ``min`` to ``max`` times (``max=None``: unbounded).

    ``?`` is ``Repetition(x, 0, 1)``, ``*`` is ``(x, 0, None)``, ``+`` is ``(x, 1, None)``.
    """

    item: "Expr"
    min: int = 0
    max: int | None = None


Expr = Union[Terminal, Ref, Sequence, Choice, Repetition]

EMPTY = Sequence(())


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of a grammar expression (none for terminals and references)."""
    if isinstance(expr, Sequence):
        return expr.items
    if isinstance(expr, Choice):
        return expr.alternatives
    if isinstance(expr, Repetition):
        return (expr.item,)
    return ()


def references(expr: Expr) -> Iterator[Ref]:
    """The references in ``expr``, depth first with an explicit stack (no recursion however deep it nests)."""
    stack: list[Expr] = [expr]
    while stack:
        e = stack.pop()
        kind = type(e)
        if kind is Ref:
            yield e  # type: ignore[misc]
        elif kind is Sequence:
            stack.extend(e.items)  # type: ignore[union-attr]
        elif kind is Choice:
            stack.extend(e.alternatives)  # type: ignore[union-attr]
        elif kind is Repetition:
            stack.append(e.item)  # type: ignore[union-attr]


@dataclass(frozen=True)
class Rule:
    """``name ::= body``. A name may have several rules: their bodies are alternatives."""

    name: str
    body: Expr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Grammar:
    """A whole grammar as a front end read it.

    ``end_mode`` is the syntax's default end-of-output mode: ``"eager"`` (KBNF)
    or ``"eos"`` (GBNF, Lark, regex, JSON Schema).
    """

    rules: tuple[Rule, ...]
    start: str
    syntax: str
    end_mode: str = "eos"
    source: str = field(default="", compare=False, repr=False)
