"""The keys left to ``additionalProperties``: every key but the declared ones, as a small automaton.

``other_keys(names)`` is a language of JSON string bodies (between the
quotes) for the keys outside ``names``, built straight from the trie of the
names (the common case: no ``patternProperties`` or ``propertyNames``):
a key either ends inside the trie where no name ends, or leaves the trie
with a character no name continues with, followed by anything.

Sound, and complete for keys that do not escape a printable ASCII character
needlessly (``\\u0061`` for ``a``, ``\\/``) before they leave every declared
name: on the trie, printable ASCII is read raw and everything else (other
code points, escapes of control characters, ``\\"``, ``\\\\``) in any
encoding, so a key can never spell a declared name in another escaping,
while the automaton stays the size of the trie. Accepting every escaping of
every character exactly would need, at each trie node, its own automaton of
``\\uXXXX`` digits that avoids exactly that node's continuations: a few
thousand states for an object of 40 properties, where this is a few hundred
(and minimal automata of such key sets are that size too).
"""
from __future__ import annotations

from functools import lru_cache

from . import _charset as cs
from ...ir import Alternation
from ._rx import EPS, Rx, cc, lit, seq, star
from ._strings import CHAR, unit

PRINTABLE: cs.Ranges = cs.subtract(cs.norm([(0x20, 0x7E)]), cs.of_chars('"\\'))  # written raw in a key
_END = ""


@lru_cache(maxsize=512)
def other_keys(names: tuple[str, ...]) -> Rx:
    """Key bodies that decode to a string not in ``names`` (see the module docstring)."""
    trie: dict = {}
    for name in names:
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[_END] = True
    others = unit(cs.subtract(cs.ANY, PRINTABLE))  # any encoding of what is not printable ASCII
    # post-order without recursion; per node: ``short`` = the key ends in the trie, ``leave`` = up to
    # the character that leaves it by a printable (or, at a special node, any) character, ``plain`` =
    # up to a node where a non-printable character leaves it (one shared ``others`` after them all)
    short: dict[int, Rx] = {}
    leave: dict[int, Rx] = {}
    plain: dict[int, Rx] = {}
    stack: list[tuple[dict, bool]] = [(trie, False)]
    while stack:
        node, done = stack.pop()
        kids = sorted(k for k in node if k != _END)
        if not done:
            stack.append((node, True))
            stack.extend((node[k], False) for k in kids)
            continue
        special = any(not cs.contains(PRINTABLE, ord(k)) for k in kids)  # a continuation written escaped
        if special:
            steps = [(unit(cs.single(ord(k))), id(node[k])) for k in kids]
            exits = unit(cs.subtract(cs.ANY, cs.norm((ord(k), ord(k)) for k in kids)))
        else:
            steps = [(lit(k), id(node[k])) for k in kids]
            exits = cc(_printable_but(kids))
        short[id(node)] = _union(None if _END in node else EPS, *(seq(s, short.pop(c)) for s, c in steps))
        leave[id(node)] = _union(exits, *(seq(s, leave.pop(c)) for s, c in steps))
        plain[id(node)] = _union(None if special else EPS, *(seq(s, plain.pop(c)) for s, c in steps))
    root = id(trie)
    return _union(short[root], seq(_union(leave[root], seq(plain[root], others)), star(CHAR)))


def _printable_but(kids: list[str]) -> cs.Ranges:
    """Printable ASCII (``PRINTABLE``) minus the sorted characters ``kids``."""
    out: list[tuple[int, int]] = []
    for a, b in PRINTABLE:
        for k in kids:
            if a <= ord(k) <= b:
                if a < ord(k):
                    out.append((a, ord(k) - 1))
                a = ord(k) + 1
        if a <= b:
            out.append((a, b))
    return tuple(out)


def _union(*options: Rx) -> Rx:
    """Alternation of options known to be distinct (``alt`` would hash every subtree to dedupe)."""
    kept = [o for o in options if o is not None]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else Alternation(tuple(kept))
