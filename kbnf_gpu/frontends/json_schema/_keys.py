"""The keys left to ``additionalProperties``: every key but the declared ones, as a small automaton.

``other_keys(names)`` is a language of JSON string bodies (between the
quotes) for the keys outside ``names``, built straight from the trie of the
names (the common case: no ``patternProperties`` or ``propertyNames``):
a key either ends inside the trie where no name ends, or leaves the trie
with a character no name continues with, followed by anything.

Exact for the spellings every string has (``_strings``: printable ASCII
raw, no needless escape like ``\\u0061`` or ``\\/``): on the trie, printable
ASCII is read raw and everything else (other code points, escapes of control
characters, ``\\"``, ``\\\\``) in any of its spellings, so a key can never
spell a declared name in another escaping, while the automaton stays the
size of the trie.

The automaton's states are the trie's nodes, one ``free`` state (the key
has left every name) and states that every node shares for what leaves the
trie in more than one byte (a backslash's escapes, a UTF-8 lead byte's
continuation bytes), so its byte DFA is built as tries side by side
(``automata.labelled``), linear in the trie, where the same language as a
regular expression cost a subset construction (an object of 411 properties:
0.04 s where that took 1.4 s, for its 2,237 states).
"""
from __future__ import annotations

from ...automata.utf8 import utf8_sequences
from . import _charset as cs
from ...ir import Automaton, ByteClass
from ._rx import Rx, cc, lit
from ._strings import CHAR, RAW_ALLOWED, escaped, unit

PRINTABLE: cs.Ranges = cs.subtract(cs.norm([(0x20, 0x7E)]), cs.of_chars('"\\'))  # written raw in a key
_END = ""


def other_keys(names: tuple[str, ...]) -> Rx:
    """Key bodies that decode to a string not in ``names``, as an automaton (see the module docstring).

    Not memoized: its one caller (``_layout._other_key``) holds the key terminals made of it, by the same names;
    a memo here kept a second copy of every automaton alive (200,000 objects for a full collection to scan
    after 138 schemas)."""
    trie: dict = {}
    for name in names:
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[_END] = True
    order = [trie]  # breadth first: node i is state i, the root state 0
    number = {id(trie): 0}
    for node in order:  # grows while it is walked
        for k in sorted(k for k in node if k != _END):
            number[id(node[k])] = len(order)
            order.append(node[k])
    free, backslash = len(order), len(order) + 1
    not_printable = cs.subtract(cs.ANY, PRINTABLE)
    edges: list[tuple[int, Rx, int]] = [(backslash, escaped(not_printable), free), (free, CHAR, free)]
    # what is not printable ASCII, raw: an ASCII byte, or a UTF-8 lead byte then its continuation bytes in states
    # every node shares (as the backslash state), so no node spells them again
    raw_ascii = cs.intersect(cs.intersect(not_printable, RAW_ALLOWED), ((0, 0x7F),))
    leads: list[tuple[Rx, int]] = []
    n_states = free + 2
    for spelled in utf8_sequences(cs.intersect(not_printable, ((0x80, cs.MAX_CP),))):
        after = free
        for byte_range in reversed(spelled[1:]):
            edges.append((n_states, ByteClass((byte_range,)), after))
            after, n_states = n_states, n_states + 1
        leads.append((ByteClass((spelled[0],)), after))
    exits_by_kids: dict[tuple[str, ...], Rx] = {}
    for i, node in enumerate(order):
        kids = sorted(k for k in node if k != _END)
        if any(not cs.contains(PRINTABLE, ord(k)) for k in kids):  # a continuation written escaped
            # every character in any encoding: the kids' to their nodes (none for a lone surrogate, which has no
            # spelling), the rest out of the trie
            edges.extend((i, step, number[id(node[k])]) for k in kids if (step := unit(cs.single(ord(k)))) is not None)
            exits = unit(cs.subtract(cs.ANY, cs.norm((ord(k), ord(k)) for k in kids)))
            if exits is not None:
                edges.append((i, exits, free))
            continue
        # printable ASCII raw, to a kid or out of the trie; what is not printable ASCII, raw or escaped, leaves it
        edges.extend((i, lit(k), number[id(node[k])]) for k in kids)
        exits = exits_by_kids.get(tuple(kids))
        if exits is None:  # most nodes have one kid, and many the same one
            exits = exits_by_kids[tuple(kids)] = cc(cs.norm([*_printable_but(kids), *raw_ascii]))
        edges.append((i, exits, free))
        edges.append((i, lit("\\"), backslash))
        edges.extend((i, lead, after) for lead, after in leads)
    accepting = tuple(i for i, node in enumerate(order) if _END not in node) + (free,)
    return Automaton(n_states, tuple(edges), accepting)


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

