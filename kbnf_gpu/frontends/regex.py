"""Regex front end: a pattern whose whole output must match (``re.fullmatch``).

The flavour is **Python ``re``**, plus the escapes that xgrammar's regexes (and
ECMA-262) accept where Python only raises: ``\\u{H…}`` (a code point),
``\\cX`` (control character X mod 32), ``\\e`` (ESC) and named groups
``(?<name>…)``. Everything Python accepts means what it means to ``re``:
``\\d \\w \\s`` are Unicode, ``$`` also matches before a final ``"\\n"``,
anchors anywhere (``a^b`` is the empty language), lookarounds and ``\\b \\B``
exactly (``kbnf_gpu.automata`` compiles them by intersection and complement);
lookbehinds may have variable width, as in ECMA-262 and the ``regex`` module.
Refused with the column: backreferences (not regular), conditional groups,
atomic groups and possessive quantifiers, the ASCII and locale flags.

``parse_regex`` reads a pattern into a one-rule grammar with a single
``ir.Pattern`` terminal. ``translate_regex`` is the shared core (the Lark and
KBNF front ends use it too): it rewrites the extra escapes, validates the
pattern with Python's own regex parser, strips anchors that only restate
whole-match semantics, and writes the pattern back in a canonical subset of
Python syntax (the DFA builder parses it with Python's own parser): no
verbose mode, no ``\\u``/``\\N`` escapes, control characters as ``\\xHH``,
global flags moved into ``Pattern.flags`` (only ``i`` and ``s``; ``m`` is
written into each anchor as ``(?m:^)``).
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

from .. import ir
from ..errors import GrammarError

try:  # Python >= 3.11
    import re._constants as _c
    import re._parser as _sre
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _sre  # type: ignore[no-redef]

__all__ = ["parse_regex", "translate_regex", "has_lazy_quantifier", "RegexIssue"]

_FLAG_BITS = {
    "i": re.IGNORECASE,
    "m": re.MULTILINE,
    "s": re.DOTALL,
    "x": re.VERBOSE,
    "u": re.UNICODE,
}
_UNSUPPORTED_FLAGS = {"a": "the ASCII flag 'a'", "L": "the locale flag 'L'"}


class RegexIssue(Exception):
    """A pattern that cannot become a DFA; ``offset`` indexes the pattern text."""

    def __init__(self, message: str, offset: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def parse_regex(pattern: str, flags: str = "") -> ir.Grammar:
    """Read a Python regex into a grammar whose language is its full matches."""
    if not isinstance(pattern, str):
        raise GrammarError(f"a regex must be a str, got {type(pattern).__name__}")
    try:
        term = translate_regex(pattern, flags)
    except RegexIssue as e:
        if e.offset is None:
            raise GrammarError(e.message) from None
        raise GrammarError(e.message, text=pattern, offset=e.offset) from None
    body = _counted_apart(term) or ir.Terminal(term, name="REGEX", span=ir.Span(1, 1))
    rule = ir.Rule("start", body, span=ir.Span(1, 1))
    return ir.Grammar((rule,), "start", "regex", "eos", source=pattern)


FAR_COUNT = 64  # a top-level repetition counting this far is a grammar repetition, not part of the one lexeme


def _counted_apart(term: ir.Pattern) -> ir.Expr | None:
    """``term`` as a sequence of lexemes when its top level concatenates a repetition that counts far
    (``.{0,2000}``, ``(\\d{3}-){1,100}``): the repetition becomes a grammar ``Repetition`` of its item's
    lexeme, which the grammar's blocks of copies serve (``normalize``), where one lexeme's automaton grows
    with the count (a copy of every UTF-8 and class state per count: ``.{0,2000}`` passed ``max_dfa_states``).
    The language is the same (the parser takes every split between lexemes). ``None`` when there is none, or
    when an anchor or a lookaround could look across the pieces."""
    bits = (re.IGNORECASE if "i" in term.flags else 0) | (re.DOTALL if "s" in term.flags else 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = _sre.parse(term.source, bits)
        except re.error:  # a variable-width lookbehind: Python's parser refuses what ours reads
            return None
    items = list(_flat_groups(tree))
    if not any(_count(op, av) >= FAR_COUNT for op, av in items) or _guarded(tree):
        return None
    writer = _Writer()
    parts: list[ir.Expr] = []
    pending: list = []

    def lexeme(source: str) -> ir.Terminal:
        return ir.Terminal(ir.Pattern(source, term.flags), name="REGEX", span=ir.Span(1, 1))

    for op, av in items:
        if _count(op, av) < FAR_COUNT:
            pending.append((op, av))
            continue
        if pending:
            parts.append(lexeme(writer.seq(pending, False)))
            pending = []
        lo, hi, item = av
        parts.append(ir.Repetition(lexeme(writer.atom(item, False)), lo, None if hi == _c.MAXREPEAT else hi))
    if pending:
        parts.append(lexeme(writer.seq(pending, False)))
    return parts[0] if len(parts) == 1 else ir.Sequence(tuple(parts))


def _count(op, av) -> int:
    """How far a repetition item counts (its bound, or its minimum when unbounded); 0 for other items."""
    if op is not _c.MAX_REPEAT and op is not _c.MIN_REPEAT:
        return 0
    lo, hi, _ = av
    return lo if hi == _c.MAXREPEAT else hi


def _flat_groups(items):
    """The items of a sequence with plain groups opened (``(?:ab)c`` is ``a``, ``b``, ``c``)."""
    for op, av in items:
        if op is _c.SUBPATTERN and not av[1] and not av[2]:
            yield from _flat_groups(av[3])
        else:
            yield op, av


def _guarded(items) -> bool:
    """Does the tree hold an anchor or a lookaround (or a back reference) anywhere?"""
    return any(op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT, _c.GROUPREF, _c.GROUPREF_EXISTS) for op, _ in _sre_items(items))


def _sre_items(items):
    """Every item of a parsed pattern, inside groups, repetitions and alternatives (not inside lookarounds)."""
    stack = [items]
    while stack:
        for op, av in stack.pop():
            yield op, av
            if op is _c.SUBPATTERN:
                stack.append(av[3])
            elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
                stack.append(av[2])
            elif op is _c.BRANCH:
                stack.extend(av[1])


def translate_regex(source: str, flags: str = "", *, strip_anchors: bool = True) -> ir.Pattern:
    """Validate ``source`` and return the equivalent canonical ``ir.Pattern``.

    With ``strip_anchors`` (whole-match semantics) ``^``/``\\A`` at the very
    start and ``$``/``\\Z`` at the very end are dropped (they hold there
    anyway); anchors elsewhere are kept and mean what ``re`` says.
    Raises ``RegexIssue`` with the offset of the problem in ``source``.
    """
    bits = _flag_bits(flags)
    rewritten, where = _python_escapes(source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            re.compile(rewritten, bits)
        except re.error as e:
            if not _re_msg(e).startswith("look-behind requires fixed-width"):  # ours need not be
                raise RegexIssue(f"invalid regex: {_re_msg(e)}", where(e.pos)) from None
        except RecursionError:
            raise RegexIssue("the regex nests groups too deeply for Python's regex parser", where(_deepest_group(rewritten))) from None
        except (OverflowError, ValueError) as e:
            raise RegexIssue(f"invalid regex: {e}", None) from None
        try:
            spans = _Scanner(rewritten, bool(bits & re.VERBOSE)).removable_anchors(strip_anchors)
        except RegexIssue as e:
            raise RegexIssue(e.message, where(e.offset)) from None
        tree = _sre.parse(_delete_spans(rewritten, spans), bits)
    global_bits = tree.state.flags
    if global_bits & (re.ASCII | re.LOCALE):
        name = "the ASCII flag 'a'" if global_bits & re.ASCII else "the locale flag 'L'"
        raise RegexIssue(f"{name} is not supported", 0)
    canonical = _Writer().seq(tree, bool(global_bits & re.MULTILINE))
    out_flags = "".join(f for f, b in (("i", re.IGNORECASE), ("s", re.DOTALL)) if global_bits & b)
    return ir.Pattern(canonical, out_flags)


# \u{H..}, \cX, \e and (?<name> (Python rejects them), or any other escape (skipped whole)
_EXTRA_SYNTAX = re.compile(r"\\u\{[^}]*\}?|\\c.?|\\e|\\.|\(\?<(?![=!])", re.S)


def _python_escapes(source: str):
    """Rewrite the non-Python escapes into Python syntax.

    Returns the new text and a function mapping an offset in it back to ``source``.
    """
    out: list[str] = []
    marks: list[tuple[int, int]] = [(0, 0)]  # (offset in output, offset in source) where pieces start
    last = new_len = 0
    for m in _EXTRA_SYNTAX.finditer(source):
        tok = m.group(0)
        if tok.startswith("\\u{"):
            digits = tok[3:-1] if tok.endswith("}") else ""
            if not digits or len(digits) > 8 or any(d not in _HEX for d in digits) or int(digits, 16) > 0x10FFFF:
                raise RegexIssue("invalid escape \\u{...}: expected 1 to 6 hex digits of a code point", m.start())
            repl = "\\U%08x" % int(digits, 16)
        elif tok.startswith("\\c"):
            if len(tok) < 3 or not ("a" <= tok[2].lower() <= "z"):
                raise RegexIssue("invalid escape \\c: a letter must follow", m.start())
            repl = "\\x%02x" % (ord(tok[2]) % 32)
        elif tok == "\\e":
            repl = "\\x1b"
        elif tok == "(?<":
            repl = "(?P<"
        else:
            continue
        out.append(source[last : m.start()])
        new_len += m.start() - last
        marks.append((new_len, m.start()))
        out.append(repl)
        new_len += len(repl)
        marks.append((new_len, m.end()))
        last = m.end()
    if len(marks) == 1:
        return source, lambda pos: pos
    out.append(source[last:])

    def where(pos: int | None) -> int | None:
        if pos is None:
            return None
        new, old = max((mk for mk in marks if mk[0] <= pos), key=lambda mk: mk[0])
        return old + (pos - new)

    return "".join(out), where


def has_lazy_quantifier(source: str, flags: str = "") -> bool:
    """Whether a (valid) pattern uses a non-greedy quantifier such as ``*?``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = _sre.parse(source, _flag_bits(flags))
    return any(op is _c.MIN_REPEAT for op, _ in _sre_items(tree))


# ------------------------------------------------------------------ flags


def _flag_bits(flags: str) -> int:
    bits = 0
    for f in flags:
        if f in _UNSUPPORTED_FLAGS:
            raise RegexIssue(f"{_UNSUPPORTED_FLAGS[f]} is not supported", None)
        if f not in _FLAG_BITS:
            raise RegexIssue(f"unknown regex flag {f!r} (expected some of 'imsxu')", None)
        bits |= _FLAG_BITS[f]
    return bits


def _re_msg(e: re.error) -> str:
    msg = e.msg if hasattr(e, "msg") else str(e)
    return str(msg)


def _delete_spans(text: str, spans: list[tuple[int, int]]) -> str:
    out, last = [], 0
    for a, b in sorted(spans):
        out.append(text[last:a])
        last = b
    out.append(text[last:])
    return "".join(out)


# ------------------------------------------------------------- the scanner


@dataclass
class _Item:
    kind: str  # "atom", "group", "start", "end", "flags"
    pos: int
    end: int
    node: "_Node | None" = None


@dataclass
class _Node:
    pos: int
    branches: list[list[_Item]] = field(default_factory=lambda: [[]])
    quantified: bool = False
    verbose: bool = False


_HEX = "0123456789abcdefABCDEF"
_OCT = "01234567"
_QUANT = re.compile(r"\{(\d*)(,\d*)?\}")


class _Scanner:
    """Finds anchors and DFA-inexpressible constructs with their positions.

    Runs only on patterns Python already compiled, so it can be lenient about
    syntax; it mirrors the group / alternative / quantifier structure.
    """

    def __init__(self, text: str, verbose: bool) -> None:
        self.text = text
        self.verbose = verbose

    def removable_anchors(self, strip: bool) -> list[tuple[int, int]]:
        """Anchors that hold wherever they stand (at the very start / end); none unless ``strip``."""
        root = self._scan()
        spans: list[tuple[int, int]] = []
        if strip:
            self._walk(root, True, True, spans)
        return spans

    # ---- structure
    def _scan(self) -> _Node:
        s, n = self.text, len(self.text)
        root = _Node(0, verbose=self.verbose)
        stack = [root]
        i = 0
        while i < n:
            node = stack[-1]
            branch = node.branches[-1]
            ch = s[i]
            if node.verbose and ch in " \t\n\r\f\v":
                i += 1
            elif node.verbose and ch == "#":
                j = s.find("\n", i)
                i = n if j < 0 else j + 1
            elif ch == "\\":
                i = self._escape(i, branch)
            elif ch == "[":
                j = self._class_end(i)
                branch.append(_Item("atom", i, j))
                i = j
            elif ch == "(":
                i = self._open(i, stack)
            elif ch == ")":
                if len(stack) > 1:
                    done = stack.pop()
                    stack[-1].branches[-1].append(_Item("group", done.pos, i + 1, done))
                i += 1
            elif ch == "|":
                node.branches.append([])
                i += 1
            elif ch in "*+?" or (ch == "{" and self._quantifier_end(i) is not None):
                i = self._quantifier(i, branch)
            elif ch == "^":
                branch.append(_Item("start", i, i + 1))
                i += 1
            elif ch == "$":
                branch.append(_Item("end", i, i + 1))
                i += 1
            else:
                branch.append(_Item("atom", i, i + 1))
                i += 1
        return root

    def _escape(self, i: int, branch: list[_Item]) -> int:
        s = self.text
        c = s[i + 1] if i + 1 < len(s) else ""
        if c == "A":
            branch.append(_Item("start", i, i + 2))
            return i + 2
        if c == "Z":
            branch.append(_Item("end", i, i + 2))
            return i + 2
        if c in "123456789":
            octal = s[i + 1 : i + 4]
            if len(octal) == 3 and all(d in _OCT for d in octal):
                j = i + 4
            else:
                raise RegexIssue("backreferences are not supported (no finite automaton matches them)", i)
        elif c == "x":
            j = i + 4
        elif c == "u":
            j = i + 6
        elif c == "U":
            j = i + 10
        elif c == "N":
            j = s.find("}", i) + 1 or len(s)
        elif c == "0":
            j = i + 2
            while j < len(s) and j < i + 4 and s[j] in _OCT:
                j += 1
        else:
            j = i + 2
        branch.append(_Item("atom", i, j))
        return j

    def _class_end(self, i: int) -> int:
        s, n = self.text, len(self.text)
        j = i + 1
        if j < n and s[j] == "^":
            j += 1
        if j < n and s[j] == "]":
            j += 1
        while j < n and s[j] != "]":
            j += 2 if s[j] == "\\" else 1
        return j + 1

    def _open(self, i: int, stack: list[_Node]) -> int:
        s = self.text
        parent = stack[-1]
        if not s.startswith("(?", i):
            stack.append(_Node(i, verbose=parent.verbose))
            return i + 1
        rest = s[i + 2 : i + 4]
        if rest.startswith(("=", "!", "<=", "<!")):
            # zero-width: anchors inside it are never removable (see _walk)
            stack.append(_Node(i, quantified=True, verbose=parent.verbose))
            return i + (3 if rest[0] in "=!" else 4)
        if rest.startswith("P="):
            raise RegexIssue("backreferences are not supported (no finite automaton matches them)", i)
        if rest.startswith("("):
            raise RegexIssue("conditional groups are not supported", i)
        if rest.startswith(">"):
            raise RegexIssue("atomic groups are not supported", i)
        if rest.startswith("#"):
            j = s.find(")", i)
            return len(s) if j < 0 else j + 1
        if rest.startswith("P<"):
            j = s.find(">", i)
            stack.append(_Node(i, verbose=parent.verbose))
            return j + 1
        if rest.startswith(":"):
            stack.append(_Node(i, verbose=parent.verbose))
            return i + 3
        m = re.compile(r"\(\?([aiLmsux]*)(?:-([imsx]*))?([:)])").match(s, i)
        if m is None:  # pragma: no cover - Python accepted it, so it is a flag group
            stack.append(_Node(i, verbose=parent.verbose))
            return i + 2
        added, removed, end = m.group(1), m.group(2) or "", m.group(3)
        if end == ")":  # global flags, zero width
            if "x" in added:
                parent.verbose = True
                self.verbose = True
            parent.branches[-1].append(_Item("flags", i, m.end()))
            return m.end()
        verbose = (parent.verbose or "x" in added) and "x" not in removed
        stack.append(_Node(i, verbose=verbose))
        return m.end()

    def _quantifier_end(self, i: int) -> int | None:
        m = _QUANT.match(self.text, i)
        if m is None or m.group(0) == "{}":
            return None
        return m.end()

    def _quantifier(self, i: int, branch: list[_Item]) -> int:
        s = self.text
        j = i + 1 if s[i] in "*+?" else self._quantifier_end(i)
        assert j is not None
        if branch and branch[-1].kind == "group" and branch[-1].node is not None:
            branch[-1].node.quantified = True
        if j < len(s) and s[j] == "?":
            j += 1
        elif j < len(s) and s[j] == "+":
            raise RegexIssue("possessive quantifiers are not supported", i)
        return j

    # ---- anchors
    def _walk(self, node: _Node, at_start: bool, at_end: bool, spans: list[tuple[int, int]]) -> None:
        for branch in node.branches:
            for k, item in enumerate(branch):
                first = at_start and all(b.kind in ("start", "flags") for b in branch[:k])
                last = at_end and all(b.kind in ("end", "flags") for b in branch[k + 1 :])
                if item.kind == "start" and first:
                    spans.append((item.pos, item.end))
                elif item.kind == "end" and last:
                    spans.append((item.pos, item.end))
                elif item.kind == "group" and item.node is not None:
                    q = item.node.quantified
                    self._walk(item.node, first and not q, last and not q, spans)


def _deepest_group(source: str) -> int:
    """Offset of the first ``(`` at the pattern's greatest group depth (escapes and classes skipped)."""
    depth = best = at = 0
    i, in_class = 0, False
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 1 + (source[i + 1 : i + 2] == "]")
            continue
        elif c == "(":
            depth += 1
            if depth > best:
                best, at = depth, i
        elif c == ")":
            depth -= 1
        i += 1
    return at


# -------------------------------------------------------------- the writer

_SPECIAL = frozenset(".^$*+?{}[]\\|()")  # escaped outside a class
_CLASS_SPECIAL = frozenset("\\]-^[&~|")  # escaped inside a class (set-op look-alikes too)
_CATEGORIES = {
    _c.CATEGORY_DIGIT: r"\d",
    _c.CATEGORY_NOT_DIGIT: r"\D",
    _c.CATEGORY_WORD: r"\w",
    _c.CATEGORY_NOT_WORD: r"\W",
    _c.CATEGORY_SPACE: r"\s",
    _c.CATEGORY_NOT_SPACE: r"\S",
}
_ANCHORS = {
    _c.AT_BEGINNING_STRING: "\\A",
    _c.AT_END_STRING: "\\Z",
    _c.AT_BOUNDARY: "\\b",
    _c.AT_NON_BOUNDARY: "\\B",
}
_UNSUPPORTED_OPS = {
    _c.GROUPREF: "backreferences are not supported (no finite automaton matches them)",
    _c.GROUPREF_EXISTS: "conditional groups are not supported",
}
for _name, _msg in (("ATOMIC_GROUP", "atomic groups are not supported"),
                    ("POSSESSIVE_REPEAT", "possessive quantifiers are not supported")):
    if hasattr(_c, _name):
        _UNSUPPORTED_OPS[getattr(_c, _name)] = _msg


def _char(code: int, special: frozenset[str] = _SPECIAL) -> str:
    """One code point written so that Python re reads it literally."""
    ch = chr(code)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if ch in special:
        return "\\" + ch
    return ch


class _Writer:
    """Writes a parsed pattern back as canonical Python regex syntax.

    ``multiline`` (the ``m`` flag where an item stands) is written into the
    anchors it changes, ``(?m:^)``, so that the output needs no ``m`` flag.
    """

    def seq(self, items, multiline: bool) -> str:
        out = []
        for op, av in items:
            if op is _c.SUBPATTERN and not av[1] and not av[2]:
                out.append(self.seq(av[3], multiline))  # a plain group in a sequence: no parentheses
            else:
                out.append(self.item(op, av, multiline))
        return "".join(out)

    def atom(self, items, multiline: bool) -> str:
        items = list(items)
        if len(items) == 1 and items[0][0] in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            return self.item(*items[0], multiline)
        if len(items) == 1 and items[0][0] in (_c.SUBPATTERN, _c.BRANCH):
            return self.item(*items[0], multiline)
        return "(?:" + self.seq(items, multiline) + ")"

    def item(self, op, av, multiline: bool) -> str:
        if op is _c.LITERAL:
            return _char(av)
        if op is _c.NOT_LITERAL:
            return "[^" + _char(av, _CLASS_SPECIAL) + "]"
        if op is _c.ANY:
            return "."
        if op is _c.IN:
            return self.charset(av)
        if op is _c.BRANCH:
            return "(?:" + "|".join(self.seq(b, multiline) for b in av[1]) + ")"
        if op is _c.SUBPATTERN:
            _group, add, delete, sub = av
            inner = (multiline or bool(add & re.MULTILINE)) and not delete & re.MULTILINE
            on = _flag_letters(add)
            off = _flag_letters(delete)
            if not on and not off:
                return self.atom(sub, inner)
            return "(?" + on + ("-" + off if off else "") + ":" + self.seq(sub, inner) + ")"
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lo, hi, sub = av
            return self.atom(sub, multiline) + _quant(lo, hi)
        if op is _c.AT:
            if av in _ANCHORS:
                return _ANCHORS[av]
            text = "^" if av is _c.AT_BEGINNING else "$"
            return "(?m:" + text + ")" if multiline else text
        if op is _c.ASSERT or op is _c.ASSERT_NOT:
            direction, sub = av
            kind = ("<" if direction < 0 else "") + ("=" if op is _c.ASSERT else "!")
            return "(?" + kind + self.seq(sub, multiline) + ")"
        if op in _UNSUPPORTED_OPS:
            raise RegexIssue(_UNSUPPORTED_OPS[op], None)
        raise RegexIssue(f"unsupported regex construct {op}", None)

    def charset(self, items) -> str:
        neg = ""
        parts = []
        for op, av in items:
            if op is _c.NEGATE:
                neg = "^"
            elif op is _c.LITERAL:
                parts.append(_char(av, _CLASS_SPECIAL))
            elif op is _c.RANGE:
                parts.append(_char(av[0], _CLASS_SPECIAL) + "-" + _char(av[1], _CLASS_SPECIAL))
            elif op is _c.CATEGORY:
                parts.append(_CATEGORIES[av])
            else:  # pragma: no cover - other set ops come only from re.compile
                raise RegexIssue(f"unsupported character-class item {op}", None)
        return "[" + neg + "".join(parts) + "]"


def _flag_letters(bits: int) -> str:
    if bits & (re.ASCII | re.LOCALE):
        raise RegexIssue("the ASCII and locale flags are not supported", None)
    return "".join(f for f, b in (("i", re.IGNORECASE), ("s", re.DOTALL)) if bits & b)


def _quant(lo: int, hi: int) -> str:
    unbounded = hi == _c.MAXREPEAT
    if (lo, unbounded) == (0, True):
        return "*"
    if (lo, unbounded) == (1, True):
        return "+"
    if (lo, hi) == (0, 1):
        return "?"
    if unbounded:
        return "{%d,}" % lo
    if lo == hi:
        return "{%d}" % lo
    return "{%d,%d}" % (lo, hi)
