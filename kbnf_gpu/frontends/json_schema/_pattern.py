"""JSON Schema ``pattern`` regexes -> regular languages over decoded code points.

A schema regex is ECMA-262, but validators (python ``jsonschema`` included)
run it with their host engine. We accept the syntax both agree on and compute
two languages per pattern, in search semantics (``re.search``):

* ``under``: a subset of what both ECMA-262 and Python accept (``\\d`` is
  ASCII, ``.`` excludes all ECMA line terminators, ``$`` is the end of the
  string). Used where matching must imply validity.
* ``over``: a superset of what both accept (``\\d`` is any Unicode decimal,
  ``.`` excludes only ``\\n``, ``$`` may precede a final ``\\n``). Used where
  *not* matching must imply validity (keys left to ``additionalProperties``).

Unanchored ends get ``.*``: ``^A|B$`` accepts ``"Ax"`` and ``"xB"``. Anchors may appear anywhere outside repetitions.

The flavour is ECMA-262 with the ``u`` flag: named groups ``(?<name>…)``
(and Python's ``(?P<name>…)``), ``\\cX`` (X mod 32), ``\\uXXXX`` (a
surrogate pair ``\\uD83D\\uDE00`` is one code point), ``\\u{H…}``,
``\\xHH``, ``\\p{…}``/``\\P{…}`` (General_Category values, ``Any``, ``ASCII``), identity
escapes such as ``\\/`` and ``\\_``, ``[^]`` (any character) and ``[]`` (none).
Lookaheads at the top level of the pattern or of a top-level branch
(``^(?!…)``, ``^(?=…)(?=…)``, the form real-world schemas use, and ``a(?!b)c``) are exact: intersections and differences of anchored languages.
Lookarounds anywhere else (``^(?:(?!ab).)*$``, lookbehinds of any width,
lookaheads nested in lookaheads), anchors inside repetitions and ``\\b``
``\\B`` are exact too, by automaton (``_lookaround``; a word boundary's
``\\w`` is ASCII to ECMA-262 and Unicode to Python, so ``under`` is what both
readings accept and ``over`` what either does). Rejected with
``PatternError``: lookaheads or ``$`` inside a lookbehind, backreferences,
inline flags, possessive repeats, and syntax that the two dialects read
differently (``{,n}``, ``\\a``...).
"""
from __future__ import annotations

import re
import string
from typing import Callable, Optional

from ...caches import memoized
from ...ir import Automaton, Concat, Repeat
from . import _charset as cs
from ._rx import EPS, Rx, alt, cc, factored_alt, holds_automaton, nullable, opt, rep, seq, star

MAX_GROUP_DEPTH = 100
MAX_REPEAT = 5000
_ALNUM = string.ascii_letters + string.digits
# java.util.regex.Pattern's POSIX classes (US-ASCII only, as Java reads them by default); not ``Alpha``, which
# ECMA-262 reads as Unicode's Alphabetic
JAVA_POSIX_CLASSES = {
    "Lower": string.ascii_lowercase, "Upper": string.ascii_uppercase, "Digit": string.digits, "Alnum": _ALNUM,
    "Punct": string.punctuation, "Graph": _ALNUM + string.punctuation, "Print": _ALNUM + string.punctuation + " ",
    "Blank": " \t", "Cntrl": "".join(map(chr, range(0x20))) + "\x7f", "XDigit": string.hexdigits,
    "Space": " \t\n\x0b\f\r",
}
_BRACE = re.compile(r"\{(\d+)(,(\d*))?\}")
_BRACE_AMBIGUOUS = re.compile(r"\{,\d*\}")


class PatternError(ValueError):
    """An unsupported or invalid regex; ``pos`` is an offset into the pattern."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(f"{message} at offset {pos}")
        self.pos = pos


class _NeedsAutomaton(PatternError):
    """The piecewise construction cannot place a lookaround or anchor: ``_lookaround`` can."""


# Intermediate tree: ("set", under, over) | ("cat", [..]) | ("alt", [..])
# | ("rep", node, lo, hi) | ("bol",) | ("eol",) | ("look", negated, node, offset, behind)
# | ("wordb", negated): \b (\B), whose \w is ASCII to ECMA-262 and Unicode to Python
Node = tuple

_ECMA_SPACE = cs.norm(
    [(9, 13), (32, 32), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
     (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)]
)
_ASCII_D = ((0x30, 0x39),)
ASCII_WORD = cs.norm(cs.of_chars("_") + ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)))


def _class_escape(letter: str) -> tuple[cs.Ranges, cs.Ranges]:
    """(under, over) of ``\\d \\w \\s`` and their negations."""
    low = letter.lower()
    if low == "d":
        pos_under, pos_over = _ASCII_D, cs.unicode_class("d")
    elif low == "w":
        pos_under, pos_over = ASCII_WORD, cs.unicode_class("w")
    else:
        py = cs.unicode_class("s")
        pos_under, pos_over = cs.intersect(_ECMA_SPACE, py), cs.union(_ECMA_SPACE, py)
    if letter.islower():
        return pos_under, pos_over
    return cs.complement(pos_over), cs.complement(pos_under)


_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = {"n": 10, "r": 13, "t": 9, "f": 12, "v": 11}
_DOT_UNDER = cs.complement(cs.of_chars("\n\r\u2028\u2029"))
_DOT_OVER = cs.complement(cs.of_chars("\n"))


class _Parser:
    def __init__(self, src: str) -> None:
        self.s = src
        self.i = 0
        self.ecma_only = False  # read ECMA-only syntax (Python's re refuses it or reads it otherwise)
        self.dot_all = False  # a leading ``(?s)``: ``.`` reads every code point

    def error(self, msg: str, pos: Optional[int] = None) -> PatternError:
        return PatternError(msg, self.i if pos is None else pos)

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def parse(self) -> Node:
        if self.s.startswith("(?s)"):  # Python's (and PCRE's) dot-all flag, before the whole pattern
            self.i = 4
            self.dot_all = True
        node = self.alternation(0)
        if self.i < len(self.s):
            raise self.error("unbalanced ')'")
        return node

    def alternation(self, depth: int) -> Node:
        if depth > MAX_GROUP_DEPTH:
            raise self.error("groups nested too deeply")
        branches = [self.concat(depth)]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.concat(depth))
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def concat(self, depth: int) -> Node:
        items: list[Node] = []
        while self.i < len(self.s) and self.peek() not in "|)":
            start = self.i
            atom = self.atom(depth)
            items.append(self.quantified(atom, start))
        return ("cat", items)

    def quantified(self, atom: Node, start: int) -> Node:
        while True:
            c = self.peek()
            bounds = None
            if c in ("*", "+", "?"):
                self.i += 1
                bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            elif c == "{":
                bounds = self._brace_quantifier()
            if bounds is None:
                return atom
            lo, hi = bounds
            if atom[0] in ("bol", "eol", "look", "wordb"):
                raise self.error("quantified anchor or lookaround", start)
            if self.peek() == "?":
                self.i += 1
            elif self.peek() == "+":
                raise self.error("possessive quantifier is unsupported")
            if hi is not None and hi < lo:
                raise self.error("bad repeat bounds")
            if lo > MAX_REPEAT or (hi is not None and hi > MAX_REPEAT):
                raise self.error(f"repeat bound above {MAX_REPEAT}")
            atom = ("rep", atom, lo, hi)

    def _brace_quantifier(self) -> Optional[tuple[int, Optional[int]]]:
        """Parse ``{n}``, ``{n,}``, ``{n,m}`` at ``self.i``; None if it is a literal brace."""
        m = _BRACE.match(self.s, self.i)
        if m is None:
            if _BRACE_AMBIGUOUS.match(self.s, self.i):
                raise self.error("ambiguous brace quantifier '{,n}'")
            return None
        self.i = m.end()
        lo = int(m.group(1))
        if m.group(2) is None:
            return lo, lo
        return lo, (int(m.group(3)) if m.group(3) else None)

    def atom(self, depth: int) -> Node:
        c = self.peek()
        start = self.i
        if c == "(":
            self.i += 1
            if self.s.startswith("?:", self.i):
                self.i += 2
            elif self.s.startswith("?P<", self.i) or (
                self.s.startswith("?<", self.i) and not self.s.startswith(("?<=", "?<!"), self.i)
            ):
                j = self.s.find(">", self.i)
                if j < 0:
                    raise self.error("bad group name")
                self.ecma_only |= self.s[self.i + 1] == "<"
                self.i = j + 1
            elif self.s.startswith(("?=", "?!", "?<=", "?<!"), self.i):
                behind = self.s[self.i + 1] == "<"
                self.i += 2 + behind
                negated = self.s[self.i - 1] == "!"
                inner = self.alternation(depth + 1)
                if self.peek() != ")":
                    raise self.error("missing ')'", start)
                self.i += 1
                return ("look", negated, inner, start, behind)
            elif c == "(" and self.peek() == "?":
                raise self.error("unsupported group construct (inline flags or extension)", start)
            inner = self.alternation(depth + 1)
            if self.peek() != ")":
                raise self.error("missing ')'", start)
            self.i += 1
            return inner
        if c in "*+?":
            raise self.error("nothing to repeat")
        if c == "{" and self._looks_like_quantifier():
            raise self.error("nothing to repeat")
        if c == "^":
            self.i += 1
            return ("bol",)
        if c == "$":
            self.i += 1
            return ("eol",)
        if c == ".":
            self.i += 1
            return ("set", cs.ANY, cs.ANY) if self.dot_all else ("set", _DOT_UNDER, _DOT_OVER)
        if c == "[":
            return self.char_class()
        if c == "\\" and self.s[self.i + 1 : self.i + 2] in ("A", "Z", "z"):
            # Python's, Java's and PCRE's start and end of the string (``\\A[0-9a-z]+\\Z``), as ``^`` and ``$``
            # read them here; Python has no ``\\z``
            self.ecma_only |= self.s[self.i + 1] == "z"
            self.i += 2
            return ("bol",) if self.s[self.i - 1] == "A" else ("eol",)
        if c == "\\" and self.s[self.i + 1 : self.i + 2] in ("b", "B"):
            self.i += 2
            return ("wordb", self.s[self.i - 1] == "B")
        if c == "\\":
            under, over = self.escape(in_class=False)
            return ("set", under, over)
        self.i += 1
        r = cs.single(ord(c))
        return ("set", r, r)

    def _looks_like_quantifier(self) -> bool:
        save = self.i
        try:
            return self._brace_quantifier() is not None
        finally:
            self.i = save

    def escape(self, in_class: bool) -> tuple[cs.Ranges, cs.Ranges]:
        start = self.i
        self.i += 1
        if self.i >= len(self.s):
            raise self.error("trailing backslash", start)
        c = self.s[self.i]
        self.i += 1
        if c in "dDwWsS":
            return _class_escape(c)
        if c in _SIMPLE_ESCAPES:
            r = cs.single(_SIMPLE_ESCAPES[c])
            return r, r
        if c == "b" and in_class:
            return cs.single(8), cs.single(8)
        if c == "0" and not self.peek().isdigit():
            return cs.single(0), cs.single(0)
        if c == "c" and self.peek().isascii() and self.peek().isalpha():
            self.ecma_only = True
            self.i += 1
            r = cs.single(ord(self.s[self.i - 1]) % 32)
            return r, r
        if c == "u" and self.peek() == "{":
            end = self.s.find("}", self.i)
            digits = self.s[self.i + 1 : end] if end > 0 else ""
            if not digits or len(digits) > 6 or any(d not in _HEX for d in digits) or int(digits, 16) > 0x10FFFF:
                raise self.error("bad \\u{...} escape (1 to 6 hex digits, at most 10FFFF)", start)
            self.ecma_only = True
            self.i = end + 1
            r = cs.single(int(digits, 16))
            return r, r
        if c in "xu":
            n = 2 if c == "x" else 4
            digits = self.s[self.i : self.i + n]
            if len(digits) != n or any(d not in _HEX for d in digits):
                raise self.error(f"bad \\{c} escape", start)
            self.i += n
            code = int(digits, 16)
            low = self.s[self.i + 2 : self.i + 6] if self.s.startswith("\\u", self.i) else ""
            if 0xD800 <= code < 0xDC00 and len(low) == 4 and all(d in _HEX for d in low) and 0xDC00 <= int(low, 16) < 0xE000:
                self.ecma_only = True  # a UTF-16 surrogate pair: one code point, as in ECMA-262's u mode
                self.i += 6
                code = 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
            r = cs.single(code)
            return r, r
        if c in "pP" and self.peek() == "{":
            return self._property(c == "P", start)
        if c.isalnum():
            raise self.error(f"unsupported escape '\\{c}'", start)
        r = cs.single(ord(c))
        return r, r

    def _property(self, negated: bool, start: int) -> tuple[cs.Ranges, cs.Ranges]:
        """``\\p{…}`` / ``\\P{…}`` (ECMA-262, ``u`` flag): a General_Category (``L``, ``Letter``, ``gc=Lu``,
        ``General_Category=Nd``), ``Any`` or ``ASCII``; or a Java POSIX class (``\\p{Graph}``), a syntax error in
        ECMA-262 that schemas written for Java (CloudFormation's) use with Java's ASCII meaning. Python's ``re``
        has no ``\\p``; the categories are those of this interpreter's Unicode version."""
        end = self.s.find("}", self.i)
        name = self.s[self.i + 1 : end] if end > 0 else ""
        key, _, value = name.partition("=")
        if value and key in ("gc", "General_Category"):
            name = value
        if name == "Any":
            r = cs.ANY
        elif name == "ASCII":
            r = cs.norm([(0, 0x7F)])
        elif name in JAVA_POSIX_CLASSES:
            r = cs.of_chars(JAVA_POSIX_CLASSES[name])
        else:
            try:
                r = cs.unicode_category(name)
            except KeyError:
                raise self.error(f"unsupported Unicode property '{name}' (General_Category values, Any, ASCII and "
                                 "Java's POSIX classes are supported)", start) from None
        self.ecma_only = True
        self.i = end + 1
        if negated:
            r = cs.complement(r)
        return r, r

    def char_class(self) -> Node:
        start = self.i
        self.i += 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        if self.peek() == "]":  # ECMA-262: [] matches nothing, [^] any character (Python reads them otherwise)
            self.i += 1
            self.ecma_only = True
            r = cs.ANY if negate else ()
            return ("set", r, r)
        under: list[cs.Ranges] = []
        over: list[cs.Ranges] = []
        while True:
            if self.i >= len(self.s):
                raise self.error("unterminated character class", start)
            c = self.peek()
            if c == "]":
                self.i += 1
                break
            lo_item = self.class_atom()
            if self.peek() == "-" and self.i + 1 < len(self.s) and self.s[self.i + 1] != "]":
                self.i += 1
                hi_item = self.class_atom()
                if lo_item is None or hi_item is None:
                    raise self.error("class escape used as a range end", start)
                a, b = lo_item, hi_item
                if a > b:
                    raise self.error("bad character range", start)
                r = cs.norm([(a, b)])
                under.append(r)
                over.append(r)
            elif lo_item is None:
                u, o = self._last_set
                under.append(u)
                over.append(o)
            else:
                r = cs.single(lo_item)
                under.append(r)
                over.append(r)
        u, o = cs.union(*under), cs.union(*over)
        if negate:
            u, o = cs.complement(o), cs.complement(u)
        return ("set", u, o)

    def class_atom(self) -> Optional[int]:
        """A single code point, or None for a class escape (left in ``_last_set``)."""
        c = self.peek()
        if c == "\\":
            nxt = self.s[self.i + 1] if self.i + 1 < len(self.s) else ""
            u, o = self.escape(in_class=True)
            if nxt in "dDwWsSpP":  # a class escape (``\\p`` without ``{`` was refused by ``escape``)
                self._last_set = (u, o)
                return None
            return u[0][0] if u else 0xD800  # a surrogate escape matches nothing decodable
        self.i += 1
        return ord(c)


def parse(source: str) -> Node:
    """Parse a pattern into the intermediate tree (raises ``PatternError``)."""
    return _Parser(source).parse()


# ------------------------------------------------------------ languages

Pieces = dict[tuple[bool, bool], Rx]  # (anchored at start, anchored at end) -> body


def _restrict_eps(x: Rx) -> Rx:
    return EPS if nullable(x) else None


def _add(p: Pieces, key: tuple[bool, bool], body: Rx) -> None:
    if body is not None:
        p[key] = alt(p.get(key), body)


def _pieces(node: Node, over: bool) -> Pieces:
    kind = node[0]
    if kind == "look":
        raise _NeedsAutomaton("a lookaround the piecewise construction cannot place", node[3])
    if kind == "wordb":
        raise _NeedsAutomaton("a word boundary", 0)
    if kind == "set":
        return {(False, False): cc(node[2] if over else node[1])}
    if kind == "bol":
        return {(True, False): EPS}
    if kind == "eol":
        return {(False, True): EPS}
    if kind == "alt":
        bodies: dict[tuple[bool, bool], list[Rx]] = {}  # one alternation per key, made once (not per branch)
        for b in node[1]:
            for k, v in _pieces(b, over).items():
                if v is not None:
                    bodies.setdefault(k, []).append(v)
        return {k: factored_alt(vs) for k, vs in bodies.items()}
    if kind == "rep":
        inner = _pieces(node[1], over)
        if any(k != (False, False) for k, v in inner.items() if v is not None):
            if node[3] is not None and node[3] <= 1:
                out = dict(inner)
                if node[2] == 0:
                    _add(out, (False, False), EPS)
                return out
            raise _NeedsAutomaton("an anchor inside a repeated group", 0)
        return {(False, False): rep(inner.get((False, False)), node[2], node[3])}
    # concatenation; a run of unanchored items is one body, joined at once (item by item, a pattern of 5,000
    # plain characters copied and hashed its growing body at each: 2 s)
    acc: Pieces = {(False, False): EPS}
    for nxt in _runs_joined([_pieces(item, over) for item in node[1]]):
        res: Pieces = {}
        for (sx, ex), bx in acc.items():
            for (sy, ey), by in nxt.items():
                if bx is None or by is None:
                    continue
                if ex and sy:
                    if nullable(bx) and nullable(by):
                        _add(res, (True, True), EPS)
                elif ex:
                    if over and by != EPS:  # Python's "$" may stand before a final "\n" that ``by`` reads
                        raise _NeedsAutomaton("'$' before more pattern", 0)
                    if nullable(by):
                        _add(res, (sx, True), bx)
                elif sy:
                    if nullable(bx):
                        _add(res, (True, ey), by)
                else:
                    _add(res, (sx, ey), seq(bx, by))
        acc = res
    return acc


def _runs_joined(items: list[Pieces]) -> list[Pieces]:
    """``items`` with each run of unanchored pieces (one key, ``(False, False)``) as one piece: its bodies in
    sequence, which is what the concatenation makes of them one at a time."""
    out: list[Pieces] = []
    run: list[Rx] = []
    for p in items:
        if p.keys() == {(False, False)}:
            run.append(p[False, False])
            continue
        if run:
            out.append({(False, False): seq(*run)})
            run = []
        out.append(p)
    if run:
        out.append({(False, False): seq(*run)})
    return out


ANY_STAR = star(cc(cs.ANY))


def search_language(tree: Node, over: bool) -> Rx:
    """Strings (decoded) in which the pattern finds a match."""
    out: Rx = None
    for (sa, ea), body in _pieces(tree, over).items():
        if body is None:
            continue
        tail: Rx = ANY_STAR
        if ea:
            tail = opt(cc(cs.single(10))) if over else EPS
        out = alt(out, seq(EPS if sa else ANY_STAR, _unpinned(body, not sa, not ea), tail))
    return out


def _unpinned(body: Rx, start: bool, end: bool) -> Rx:
    """``body`` less what ``.*`` beside an unanchored end already reads: nullable parts there, and a repetition's
    copies past its minimum (unanchored, ``arn:.+:[^/].{0,1023}`` is ``.*arn:.+:[^/].*`` and ``x/.{1,2048}`` is
    ``.*x/..*``: the same strings, and no counter to combine)."""
    parts = list(body.parts) if isinstance(body, Concat) else [body]
    while end and parts and nullable(parts[-1]):
        parts.pop()
    while start and parts and nullable(parts[0]):
        parts.pop(0)
    if end and parts and isinstance(parts[-1], Repeat):
        parts[-1] = rep(parts[-1].item, parts[-1].min, parts[-1].min)
    if start and parts and isinstance(parts[0], Repeat):
        parts[0] = rep(parts[0].item, parts[0].min, parts[0].min)
    return seq(*parts)


def _with_lookaheads(tree: Node, over: bool) -> Rx:
    """``search_language`` with lookaheads at the top level of the pattern (per branch of a top-level alternation).

    A match of ``P (?=A)(?!B) R`` splits the string where the lookaheads stand:
    ``u`` ends with a match of ``P`` (from the start if ``P`` has ``^``), and
    ``v`` (the whole rest of the string) starts with ``A``, does not start with
    ``B`` and starts with a match of ``R``: ``L(P) · (^A ∩ ^R − ^B)``, exact by
    intersection and difference of anchored languages (the approximations swap
    for negated bodies). ``R`` may hold further lookaheads.
    """
    if tree[0] == "alt":  # each branch may have its own: ^(?!a)b|^(?=c)d
        return alt(*(_with_lookaheads(branch, over) for branch in tree[1]))
    items = tree[1] if tree[0] == "cat" else [tree]
    first = next((i for i, item in enumerate(items) if _is_lookahead(item)), None)
    if first is None:
        return search_language(tree, over)
    last = first
    while last < len(items) and _is_lookahead(items[last]):
        last += 1
    from ._fsm import combine

    def anchored(body: Node, approx: bool) -> Rx:
        return _with_lookaheads(("cat", [("bol",), *(body[1] if body[0] == "cat" else [body])]), approx)

    looks = items[first:last]
    if any(_reads_start(node) for node in [*looks, *items[last:]]):
        # "^" right of the split holds only where the left part is empty: not piecewise
        raise _NeedsAutomaton("a start anchor after a lookahead", looks[0][3])
    keep = [anchored(look[2], over) for look in looks if not look[1]]
    drop = [anchored(look[2], not over) for look in looks if look[1]]
    right = combine(anchored(("cat", items[last:]), over), keep, drop)
    left: Rx = None
    for (sa, ea), body in _pieces(("cat", items[:first]), over).items():
        if body is None:
            continue
        if ea:
            raise _NeedsAutomaton("a lookahead after '$'", looks[0][3])
        left = alt(left, seq(EPS if sa else ANY_STAR, body))
    return None if left is None or right is None else seq(left, right)


def walk(tree: Node, over: bool = False):
    """Every node of ``tree`` (lookaround bodies included) with the approximation it is read in:
    ``over`` swapped inside negated lookarounds, where matching less accepts more."""
    stack = [(tree, over)]
    while stack:
        node, o = stack.pop()
        yield node, o
        if node[0] in ("cat", "alt"):
            stack.extend((x, o) for x in node[1])
        elif node[0] == "rep":
            stack.append((node[1], o))
        elif node[0] == "look":
            stack.append((node[2], o != node[1]))


def _reads_start(node: Node) -> bool:
    """Does ``node`` hold a ``^`` (lookaround bodies included)?"""
    return any(x[0] == "bol" for x, _ in walk(node))


def _is_lookahead(node: Node) -> bool:
    return node[0] == "look" and not node[4]


def _language(tree: Node, over: bool) -> Rx:
    """``search_language`` of any tree: piecewise where it can be (no alphabet bound), else by automaton.
    A piecewise language that holds an automaton beside other parts (``.*`` before an unanchored pattern's
    lookaheads) is made one automaton here, over code points: the byte layer's subset construction would
    track every state of the automaton at once behind the ``.*``, each inside JSON escapes."""
    try:
        lang = _with_lookaheads(tree, over)
        if lang is not None and not isinstance(lang, Automaton) and holds_automaton(lang):
            from ._fsm import as_expr, intersection_dfa

            lang = as_expr(intersection_dfa([lang]))
        return lang
    except _NeedsAutomaton as e:
        from ._lookaround import automaton_language

        pos = e.pos  # ``e`` is unbound once the except block ends; the callback keeps its position
        return automaton_language(tree, over, lambda message: PatternError(message, pos))


def pattern_language(source: str, over: bool = False) -> Rx:
    """``search_language`` of a pattern source (lookarounds and anchors anywhere)."""
    return _language(parse(source), over)


def search(source: str, text: str) -> bool:
    """Does ``source`` match somewhere in ``text``? Python ``re`` semantics (what
    python ``jsonschema`` does); for ECMA-only syntax (which Python refuses or
    reads otherwise: ``[^]``, ``\\cX``, ``\\u{…}``, surrogate pairs, ``(?<name>…)``)
    this module's own (under-approximated) reading."""
    return _searcher(source)(text)


@memoized(1 << 17, lambda source: len(source) + 64)
def _searcher(source: str) -> Callable[[str], bool]:
    """``search`` for one pattern, read once (an enum of a hundred values checked against one pattern in
    hundreds of schema branches: Azure Pipelines parsed patterns 67,000 times)."""
    parser = _Parser(source)
    try:
        tree = parser.parse()
    except PatternError:
        tree = None
    if tree is None or not parser.ecma_only:
        try:
            compiled = re.compile(source)
        except re.error:
            if tree is None:
                raise PatternError("a pattern neither Python nor this module reads", 0) from None
        else:
            return lambda text: compiled.search(text) is not None
    from ._pyre import to_python

    lang = _language(tree, False)
    if lang is None:
        return lambda text: False
    whole = re.compile(to_python(lang), re.S)
    return lambda text: whole.fullmatch(text) is not None
