"""Schema -> IR grammar: one rule per reachable conjunction of subschemas.

Rules are produced from a work list (no Python recursion over the schema),
so deep and recursive schemas are fine; a recursive ``$ref`` becomes an
``ir.Ref`` back to the rule already named for it.
"""
from __future__ import annotations

import re
from collections import deque
from decimal import ROUND_CEILING, ROUND_FLOOR
from typing import Any, Optional

from ... import ir
from ...errors import GrammarError
from . import _charset as cs
from ._document import Document, child
from ._fsm import DFA, TooLarge, combine, intersection_dfa, paths
from ._layout import Layout
from ._merge import Atom, Merged, Unsatisfiable, expand, first_choice, merge
from ._objects import Member, TooManyStates, object_expr
from ._pattern import PatternError, pattern_language, search
from ._rx import Rx, alt, cc, lit, rep, seq
from ._strings import CHAR, encode, quoted
from ._validate import Validator, json_key
from .formats import FORMATS, UNSUPPORTED_FORMATS, format_language
from .numbers import INTEGER, NUMBER, decimal_range, integer_range, multiple_of_regex

MAX_INDENT_UNROLL = 16  # indent layout: instances of one subschema at distinct depths
MAX_RULES = 50_000
MAX_PATTERN_PROPERTIES = 6
MAX_ENUMERATED_MULTIPLES = 256
MAX_COUNT_RANGE = 10_000  # maxItems - minItems, maxLength / STRING_CHUNK: exact up to this
MAX_THREAD_RULES = 5_000  # rules of one threaded (chunked, pattern-tracking) string
MAX_THREAD_TERMINALS = 400
STRING_CHUNK = 16  # code points per lexeme when a long bounded string is split
ANY_CHAR = cc(cs.ANY)


def _rule_base(pointer: str) -> str:
    if not pointer:
        return "value"
    text = re.sub(r"[^A-Za-z0-9]+", "_", pointer.replace("$defs", "defs")).strip("_")
    return (text[-40:] or "value").lstrip("_") or "value"


class Builder:
    """Collects rules and terminals while walking the schema."""

    def __init__(self, doc: Document, layout: Layout, any_order: bool) -> None:
        self.doc = doc
        self.layout = layout
        self.any_order = any_order
        self.validator = Validator(doc)
        self.rules: dict[str, ir.Expr] = {}
        self.rule_names: set[str] = {"root"}
        self.nodes: dict[tuple[frozenset[Atom], int], str] = {}
        self._depths: dict[frozenset[Atom], int] = {}
        self._flat: set[str] = set()  # rules whose containers are cut off (indent depth limit)
        self.queue: deque[tuple[str, tuple[Atom, ...], int]] = deque()
        self._terms: dict[ir.RegExpr, ir.Terminal] = {}

    # ------------------------------------------------------------ helpers

    def term(self, rx: Rx, name: str) -> ir.Terminal:
        """One shared ``ir.Terminal`` per distinct language."""
        if rx is None:
            raise GrammarError("internal error: empty terminal")
        t = self._terms.get(rx)
        if t is None:
            t = self._terms[rx] = ir.Terminal(rx, name=name)
        return t

    @staticmethod
    def seq(*parts: Rx) -> Rx:
        return seq(*parts)

    def fresh(self, base: str) -> str:
        name = base
        n = 1
        while name in self.rule_names:
            n += 1
            name = f"{base}_{n}"
        self.rule_names.add(name)
        return name

    def add_rule(self, name: str, alts: list[ir.Expr]) -> None:
        if len(self.rules) >= MAX_RULES:
            raise GrammarError(f"schema too large: more than {MAX_RULES} grammar rules")
        assert name not in self.rules, name
        self.rule_names.add(name)
        self.rules[name] = alts[0] if len(alts) == 1 else ir.Choice(tuple(alts))  # () = nothing

    def child_depth(self, depth: int) -> int:
        """Nesting depth of a member/element (only the indent layout depends on it)."""
        return depth + 1 if self.layout.indent is not None else 0

    def value_rule(self, atoms: tuple[Atom, ...], depth: int) -> Optional[str]:
        """The rule for values satisfying every atom (None: statically impossible)."""
        try:
            flat = expand(self.doc, atoms)
        except Unsatisfiable:
            return None
        key = (frozenset(flat), depth)
        name = self.nodes.get(key)
        if name is None:
            base = _rule_base(flat[0][0] if flat else atoms[0][0] if atoms else "any")
            if not flat:
                base = "any"
            if self.layout.indent is not None:
                base = f"{base}_d{depth}"
            name = self.nodes[key] = self.fresh(base)
            if self.layout.indent is not None:
                seen = self._depths[key[0]] = self._depths.get(key[0], 0) + 1
                if seen > MAX_INDENT_UNROLL:
                    self._flat.add(name)
            self.queue.append((name, flat, depth))
        return name

    # -------------------------------------------------------------- build

    def build(self) -> ir.Grammar:
        root = self.value_rule((("", frozenset()),), 0)
        while self.queue:
            name, atoms, depth = self.queue.popleft()
            self.add_rule(name, self._body(name, atoms, depth))
        if root is None:
            raise GrammarError("the schema is unsatisfiable (false): no JSON value matches it")
        edge = self.layout.edge()
        items: list[ir.Expr] = [ir.Ref(root)]
        if edge != seq():
            w = self.term(edge, "ws")
            items = [w, ir.Ref(root), w]
        self.rules["root"] = items[0] if len(items) == 1 else ir.Sequence(tuple(items))
        return _prune(self.rules)

    def _body(self, name: str, atoms: tuple[Atom, ...], depth: int) -> list[ir.Expr]:
        choice = first_choice(self.doc, atoms)
        if choice is not None:
            i, kw, n = choice
            ptr, skip = atoms[i]
            alts: list[ir.Expr] = []
            branches = []
            for k in range(n):
                branch = atoms[:i] + ((ptr, skip | {kw}), (child(ptr, kw, k), frozenset())) + atoms[i + 1:]
                r = self.value_rule(branch, depth)
                if r is not None:
                    alts.append(ir.Ref(r))
                    branches.append(branch)
            if kw == "oneOf" and not self._disjoint(branches):
                self.doc.warn(
                    f"'oneOf' at '{child(ptr, kw)}' is treated as 'anyOf' "
                    "(its branches may overlap, so a value matching two of them is accepted)"
                )
            return alts
        m = merge(self.doc, atoms)
        return self._fragments(m, depth, containers=name not in self._flat)

    # ---------------------------------------------------------- fragments

    def _fragments(self, m: Merged, depth: int, containers: bool = True) -> list[ir.Expr]:
        if m.enums:
            return self._enum(m, depth)
        scalars: list[Rx] = []
        t = m.types
        out: list[ir.Expr] = []
        if "object" in t and containers:
            e = self._object(m, depth)
            if e is not None:
                out.append(e)
        if "array" in t and containers:
            e = self._array(m, depth)
            if e is not None:
                out.append(e)
        if "string" in t:
            s = self._string(m)
            if isinstance(s, (ir.Sequence, ir.Choice)):
                out.append(s)
            else:
                scalars.append(s)
        if "int" in t or "frac" in t:
            scalars.append(self._number(m))
        if "boolean" in t:
            scalars.append(alt(lit("true"), lit("false")))
        if "null" in t:
            scalars.append(lit("null"))
        sc = alt(*scalars)
        if sc is not None:
            out.insert(0, self.term(sc, self._scalar_name(t)))
        return out

    @staticmethod
    def _scalar_name(t: set[str]) -> str:
        parts = [x for x in ("string", "int", "frac", "boolean", "null") if x in t]
        return "|".join(parts) if len(parts) > 1 else (parts[0] if parts else "scalar")

    def _enum(self, m: Merged, depth: int) -> list[ir.Expr]:
        for fmt, at in m.formats:
            if fmt in UNSUPPORTED_FORMATS:
                self.doc.problem(f"unsupported format '{fmt}'", at)
        values, _ = m.enums[0]
        for other, _ in m.enums[1:]:
            keys = {json_key(v) for v in other}
            values = [v for v in values if json_key(v) in keys]
        seen = set()
        kept = []
        for v in values:
            k = json_key(v)
            if k in seen:
                continue
            seen.add(k)
            if all(self.validator.valid(v, p, s | {"enum", "const"}) for p, s in m.atoms):
                kept.append(v)
        if not kept:
            return []
        rx = alt(*(self.layout.value(v, depth) for v in kept))
        return [self.term(rx, "enum")]

    # ------------------------------------------------------------ numbers

    def _number(self, m: Merged) -> Rx:
        ints_only = "frac" not in m.types
        k = 1
        for v, at in m.multiple_of:
            if v != v.to_integral_value():
                self.doc.problem("'multipleOf' with a non-integer value is unsupported", at)
                continue
            ints_only = True
            k = _lcm(k, int(v))
        lo, hi = m.lo, m.hi
        if not ints_only:
            if lo is None and hi is None:
                return NUMBER
            return decimal_range(lo[0] if lo else None, bool(lo and lo[1]), hi[0] if hi else None, bool(hi and hi[1]))
        ilo = ihi = None
        if lo is not None:
            ilo = int(lo[0].to_integral_value(ROUND_FLOOR)) + 1 if lo[1] else int(lo[0].to_integral_value(ROUND_CEILING))
        if hi is not None:
            ihi = int(hi[0].to_integral_value(ROUND_CEILING)) - 1 if hi[1] else int(hi[0].to_integral_value(ROUND_FLOOR))
        if k == 1:
            return INTEGER if ilo is None and ihi is None else integer_range(ilo, ihi)
        if ilo is not None and ihi is not None and (ihi - ilo) // k <= MAX_ENUMERATED_MULTIPLES:
            first = -((-ilo) // k) * k
            return alt(*(lit(str(n)) for n in range(first, ihi + 1, k)))
        if k > 1000:
            self.doc.problem(f"'multipleOf' {k} on an unbounded range is unsupported", m.multiple_of[0][1])
            return integer_range(ilo, ihi)
        base = integer_range(ilo, ihi)
        return combine(base, [multiple_of_regex(k)])

    # ------------------------------------------------------------ strings

    def _string_constraints(self, m: Merged) -> list[Rx]:
        """Decoded-string languages of ``pattern``s and ``format``s (problems reported)."""
        langs: list[Rx] = []
        for src, at in m.patterns:
            try:
                langs.append(pattern_language(src))
            except PatternError as e:
                self.doc.problem(f"unsupported pattern {src!r} ({e})", at)
        for fmt, at in m.formats:
            if fmt in FORMATS:
                langs.append(format_language(fmt))
            elif fmt in UNSUPPORTED_FORMATS:
                self.doc.problem(f"unsupported format '{fmt}'", at)
        return langs

    def string_language(self, m: Merged) -> Rx:
        """The decoded-string language of ``m``'s string keywords, as one regex."""
        langs = self._string_constraints(m)
        if m.max_len is not None and m.max_len < m.min_len:
            return None
        base = rep(ANY_CHAR, m.min_len, m.max_len)
        if not langs:
            return base
        if len(langs) == 1 and m.min_len == 0 and m.max_len is None:
            return langs[0]
        return combine(base, langs)

    def _string(self, m: Merged) -> Any:
        """A string terminal's language, or a rule expression for long/complex strings."""
        lo, hi = m.min_len, m.max_len
        if hi is not None and hi < lo:
            return None
        long = (hi is None and lo > 2 * STRING_CHUNK) or (hi is not None and hi > 2 * STRING_CHUNK)
        langs = self._string_constraints(m)
        if not langs:
            if long:
                return self._chunked_string(lo, hi, m.atoms[0][0])
            return quoted(rep(CHAR, lo, hi))
        if not long or (hi is None and lo == 0):
            try:
                if len(langs) == 1 and lo == 0 and hi is None:
                    return quoted(encode(langs[0]))
                return quoted(encode(combine(rep(ANY_CHAR, lo, hi), langs)))
            except TooLarge:
                pass
        return self._threaded_string(langs, lo, hi, m.atoms[0][0])

    def _threaded_string(self, langs: list[Rx], lo: int, hi: Optional[int], where: str) -> Optional[ir.Expr]:
        """Exact pattern/format plus length: chunks of ``C`` code points per lexeme,
        rules tracking (automaton state, chunks so far)."""
        try:
            d = intersection_dfa(langs)
        except TooLarge:
            d = None
            self.doc.problem("pattern/format too complex to combine", where)
            return quoted(rep(CHAR, lo, hi)) if hi is not None and hi <= 2 * STRING_CHUNK else self._chunked_string(lo, hi, where)
        if d is None:
            return None
        for C in (STRING_CHUNK, 8, 4, 2, 1):
            if hi is not None and (hi - lo) // C > MAX_COUNT_RANGE:
                break
            try:
                return self._thread(d, lo, hi, C)
            except TooLarge:
                continue
        self.doc.problem("pattern/format combined with minLength/maxLength is too complex to enforce exactly", where)
        return self._chunked_string(lo, hi, where)

    def _thread(self, d: DFA, lo: int, hi: Optional[int], C: int) -> ir.Expr:
        limit = 4_000
        chunk_terms: dict[int, list[tuple[int, ir.Terminal]]] = {}
        end_terms: dict[tuple[int, int, Optional[int]], Optional[ir.Terminal]] = {}
        close = lit('"')

        def chunks(p: int) -> list[tuple[int, ir.Terminal]]:
            if p not in chunk_terms:
                reach = {p}
                for _ in range(C):
                    reach = {t for q in reach for t in d.trans[q] if t >= 0}
                out = []
                for q in sorted(reach):
                    r = paths(d, p, C, C, {q}, limit)
                    if r is not None:
                        out.append((q, self.term(encode(r), "string_chunk")))
                chunk_terms[p] = out
            return chunk_terms[p]

        def end(p: int, a: int, b: Optional[int]) -> Optional[ir.Terminal]:
            if (p, a, b) not in end_terms:
                r = paths(d, p, a, b, None, limit)
                end_terms[(p, a, b)] = None if r is None else self.term(seq(encode(r), close), "string_tail")
            return end_terms[(p, a, b)]

        names: dict[tuple[int, int], str] = {}
        work: list[tuple[int, int]] = []
        bodies: dict[str, list[ir.Expr]] = {}
        J = -(-lo // C) if hi is None else None

        def ref(p: int, j: int) -> ir.Ref:
            if (p, j) not in names:
                if len(names) >= MAX_THREAD_RULES:
                    raise TooLarge("string automaton too large")
                names[(p, j)] = f"string_{p}_{j}"
                work.append((p, j))
            return ir.Ref(names[(p, j)])

        first = ref(0, 0)
        while work:
            p, j = work.pop()
            alts: list[ir.Expr] = []
            if J is not None and j >= J:
                t = end(p, 0, None)
                if t is not None:
                    alts.append(t)
            else:
                a, b = max(0, lo - j * C), C - 1 if hi is None else min(C - 1, hi - j * C)
                if a <= b:
                    t = end(p, a, b)
                    if t is not None:
                        alts.append(t)
                if hi is None or (j + 1) * C <= hi:
                    for q, term in chunks(p):
                        alts.append(ir.Sequence((term, ref(q, j + 1))))
            bodies[names[(p, j)]] = alts
            if len(chunk_terms) + len(end_terms) > MAX_THREAD_TERMINALS:
                raise TooLarge("string automaton too large")
        rename = {n: self.fresh(n) for n in bodies}

        def fix(e: ir.Expr) -> ir.Expr:
            if isinstance(e, ir.Ref):
                return ir.Ref(rename[e.name])
            if isinstance(e, ir.Sequence):
                return ir.Sequence(tuple(fix(x) for x in e.items))
            return e

        for n, alts in bodies.items():
            self.add_rule(rename[n], [fix(a) for a in alts])
        return ir.Sequence((self.term(close, "quote"), fix(first)))

    def _chunked_string(self, lo: int, hi: Optional[int], where: str) -> ir.Expr:
        """``"`` chunk{q} rest ``"`` with fixed-size chunks: bounded lexemes for long strings."""
        C = STRING_CHUNK
        if hi is not None and (hi - lo) // C > MAX_COUNT_RANGE:
            self.doc.problem(f"maxLength {hi} is too large to enforce exactly", where)
            hi = None
        q_lo, r_lo = divmod(lo, C)
        open_q = self.term(lit('"'), "quote")
        chunk = self.term(rep(CHAR, C, C), "chunk")

        def tail(a: int, b: Optional[int]) -> ir.Terminal:
            return self.term(seq(rep(CHAR, a, b), lit('"')), "string_tail")

        def chunks(a: int, b: Optional[int]) -> list[ir.Expr]:
            if b == 0 and a == 0:
                return []
            return [ir.Repetition(chunk, a, b)]

        if hi is None:
            body: list[ir.Expr] = [ir.Sequence((open_q, *chunks(q_lo, q_lo), tail(r_lo, None)))]
        else:
            q_hi, r_hi = divmod(hi, C)
            if q_lo == q_hi:
                body = [ir.Sequence((open_q, *chunks(q_lo, q_lo), tail(r_lo, r_hi)))]
            else:
                body = [ir.Sequence((open_q, *chunks(q_lo, q_lo), tail(r_lo, C - 1)))]
                if q_hi - q_lo >= 2:
                    body.append(ir.Sequence((open_q, *chunks(q_lo + 1, q_hi - 1), tail(0, C - 1))))
                body.append(ir.Sequence((open_q, *chunks(q_hi, q_hi), tail(0, r_hi))))
        return body[0] if len(body) == 1 else ir.Choice(tuple(body))  # type: ignore[return-value]

    # ------------------------------------------------------------- arrays

    def _array(self, m: Merged, depth: int) -> Optional[ir.Expr]:
        L = self.layout
        if m.unique is not None:
            self.doc.warn(f"'uniqueItems' at '{m.unique}' cannot be enforced by a grammar; ignored")
        K = max((len(a.prefix) for a in m.arrays), default=0)

        def atoms_at(i: Optional[int]) -> tuple[Atom, ...]:
            out = []
            for a in m.arrays:
                if i is not None and i < len(a.prefix):
                    out.append((a.prefix[i], frozenset()))
                elif a.rest is not None:
                    out.append((a.rest, frozenset()))
            return tuple(out)

        lo, hi = m.min_items, m.max_items
        if hi is not None and hi - lo > MAX_COUNT_RANGE:
            self.doc.problem(f"maxItems {hi} is too large to enforce exactly (more than {MAX_COUNT_RANGE} above minItems)",
                             m.atoms[0][0])
            hi = None
        elems: list[Optional[str]] = []
        for i in range(K if hi is None else min(K, hi)):
            r = self.value_rule(atoms_at(i), self.child_depth(depth))
            elems.append(r)
            if r is None:
                hi = i if hi is None else min(hi, i)
                break
        rest = None
        if hi is None or hi > K:
            rest = self.value_rule(atoms_at(None), self.child_depth(depth))
            if rest is None:
                hi = K if hi is None else min(hi, K)
        if hi is not None and hi < lo:
            return None
        empty = self.term(L.empty("[]", depth), "empty_array")
        if hi == 0:
            return empty if lo == 0 else None
        comma = self.term(L.comma(depth), "comma")

        def elem(i: int) -> str:
            r = elems[i] if i < K else rest
            assert r is not None
            return r

        base = _rule_base(m.atoms[0][0]) if m.atoms else "any"
        # T(i): the elements from index i on (each preceded by a comma)
        tail_names: dict[int, str] = {}

        def tail(i: int) -> ir.Expr:
            if i >= K:
                more_lo = max(lo - i, 0)
                more_hi = None if hi is None else hi - i
                if more_hi == 0:
                    return ir.EMPTY
                return ir.Repetition(ir.Sequence((comma, ir.Ref(elem(i)))), more_lo, more_hi)
            if i not in tail_names:
                tail_names[i] = self.fresh(f"{base}_items{i}")
            return ir.Ref(tail_names[i])

        for i in range(1, K):
            if hi is not None and i > hi:
                break
            tail(i)
        for i, nm in sorted(tail_names.items()):
            alts: list[ir.Expr] = []
            if i >= lo:
                alts.append(ir.EMPTY)
            if hi is None or i < hi:
                alts.append(ir.Sequence((comma, ir.Ref(elem(i)), tail(i + 1))))
            self.add_rule(nm, alts)
        body = ir.Sequence(
            (self.term(L.open("[", depth), "lbracket"), ir.Ref(elem(0)), tail(1), self.term(L.close("]", depth), "rbracket"))
        )
        return ir.Choice((empty, body)) if lo == 0 else body

    # ------------------------------------------------------------ objects

    def _object(self, m: Merged, depth: int) -> Optional[ir.Expr]:
        parts = m.objects
        declared: list[str] = []
        for o in parts:
            for k in o.props:
                if k not in declared:
                    declared.append(k)
        for k in m.required:
            if k not in declared:
                declared.append(k)
        required = set(m.required)
        props: list[Member] = []
        for k in declared:
            if not all(o.names is None or self.validator.valid(k, o.names) for o in parts):
                if k in required:
                    return None
                continue
            atoms: list[Atom] = []
            for o in parts:
                atoms.extend((p, frozenset()) for p in _view(o, k))
            r = self.value_rule(tuple(atoms), self.child_depth(depth))
            if r is None:
                if k in required:
                    return None
                continue
            key = seq(lit('"'), _canonical_key(k), lit('"'))
            props.append(Member(key, r, k in required))
        regions = self._regions(m, declared, depth)
        base = _rule_base(m.atoms[0][0]) if m.atoms else "any"
        try:
            return object_expr(self, self.fresh(f"{base}_obj"), depth, props, regions, m.min_props, m.max_props)
        except TooManyStates:
            where = m.objects[0].pointer if m.objects else m.atoms[0][0]
            self.doc.problem("minProperties/maxProperties too large to count with these properties", where)
            return object_expr(self, self.fresh(f"{base}_obj"), depth, props, regions, 0, None)

    def _regions(self, m: Merged, declared: list[str], depth: int) -> list[Member]:
        """Key languages and value rules for members outside the declared names."""
        pats: list[tuple[int, str, str]] = []
        for i, o in enumerate(m.objects):
            for src, p in o.patterns:
                pats.append((i, src, p))
        if len(pats) > MAX_PATTERN_PROPERTIES:
            raise self.doc.fail(f"more than {MAX_PATTERN_PROPERTIES} patternProperties in one object", m.objects[0].pointer)
        names_langs: list[Rx] = []
        for o in m.objects:
            if o.names is not None:
                names_langs.append(self._names_language(o.names))
        under: list[Rx] = []
        over: list[Rx] = []
        usable = []
        for i, src, p in pats:
            try:
                under.append(pattern_language(src))
                over.append(pattern_language(src, over=True))
                usable.append((i, src, p))
            except PatternError as e:
                self.doc.problem(f"unsupported patternProperties regex {src!r} ({e})", p)
        pats = usable
        words = [_word(k) for k in declared]
        out: list[Member] = []
        for mask in range(1 << len(pats)):
            atoms: list[Atom] = []
            for i, o in enumerate(m.objects):
                mine = [p for j, (oi, _, p) in enumerate(pats) if oi == i and mask >> j & 1]
                if mine:
                    atoms.extend((p, frozenset()) for p in mine)
                elif o.additional is not None:
                    atoms.append((o.additional, frozenset()))
            value = self.value_rule(tuple(atoms), self.child_depth(depth))
            if value is None:
                continue
            keep = [under[j] for j in range(len(pats)) if mask >> j & 1] + names_langs
            drop = [over[j] for j in range(len(pats)) if not mask >> j & 1] + words
            try:
                lang = combine(rep(ANY_CHAR, 0, None), keep, drop)
            except TooLarge:
                where = m.objects[0].pointer if m.objects else m.atoms[0][0]
                self.doc.warn(f"member keys at '{where}' are too complex to describe; some keys are not generated")
                continue
            if lang is None:
                continue
            out.append(Member(quoted(encode(lang)), value))  # type: ignore[arg-type]
        return out

    def _names_language(self, pointer: str) -> Rx:
        """Decoded language of the string values a ``propertyNames`` schema allows."""
        try:
            flat = expand(self.doc, ((pointer, frozenset()),))
        except Unsatisfiable:
            return None
        if first_choice(self.doc, flat) is not None:
            self.doc.problem("'anyOf'/'oneOf' inside 'propertyNames' is unsupported", pointer)
            return rep(ANY_CHAR, 0, None)
        m = merge(self.doc, flat)
        if m.enums:
            values = [v for v in m.enums[0][0] if isinstance(v, str) and all(self.validator.valid(v, p, s) for p, s in flat)]
            return alt(*(_word(v) for v in values))
        if "string" not in m.types:
            return None
        try:
            return self.string_language(m)
        except TooLarge:
            self.doc.warn(f"'propertyNames' at '{pointer}' is too complex to describe; only declared keys are generated")
            return None

    # ----------------------------------------------------------- oneOf

    def _disjoint(self, branches: list[tuple[Atom, ...]]) -> bool:
        sigs = [self._signature(b) for b in branches]
        for i in range(len(sigs)):
            for j in range(i + 1, len(sigs)):
                if not _sig_disjoint(sigs[i], sigs[j]):
                    return False
        return True

    def _signature(self, atoms: tuple[Atom, ...]) -> Any:
        try:
            flat = expand(self.doc, atoms)
        except Unsatisfiable:
            return (set(), None, {})
        types: set[str] = {"null", "boolean", "object", "array", "string", "int", "frac"}
        consts: Optional[set[Any]] = None
        disc: dict[str, set[Any]] = {}
        for ptr, skip in flat:
            sch = self.doc.resolve(ptr)
            if not isinstance(sch, dict):
                continue
            if "type" in sch and "type" not in skip:
                ts = sch["type"] if isinstance(sch["type"], list) else [sch["type"]]
                allowed: set[str] = set()
                for t in ts:
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


def _view(o: Any, key: str) -> list[str]:
    """The subschemas one object part applies to member ``key`` (jsonschema semantics):
    its ``properties`` entry and every matching ``patternProperties`` entry, or
    else ``additionalProperties``."""
    out = [o.props[key]] if key in o.props else []
    out += [p for src, p in o.patterns if _safe_search(src, key)]
    if not out and o.additional is not None:
        out.append(o.additional)
    return out


def _safe_search(src: str, key: str) -> bool:
    try:
        return search(src, key)
    except PatternError:
        return False  # reported where the pattern's key region is built


def _word(s: str) -> Rx:
    return seq(*(cc(cs.single(ord(c))) for c in s))


def _canonical_key(s: str) -> Rx:
    from ._layout import canonical_text

    return canonical_text(s)


def _lcm(a: int, b: int) -> int:
    from math import gcd

    return a * b // gcd(a, b)


# ------------------------------------------------------------- pruning


def _prune(rules: dict[str, ir.Expr]) -> ir.Grammar:
    """Drop unproductive alternatives and rules, then unreachable rules."""
    productive: set[str] = set()

    def ok(e: ir.Expr) -> bool:
        if isinstance(e, ir.Terminal):
            return True
        if isinstance(e, ir.Ref):
            return e.name in productive
        if isinstance(e, ir.Sequence):
            return all(ok(x) for x in e.items)
        if isinstance(e, ir.Choice):
            return any(ok(x) for x in e.alternatives)
        if isinstance(e, ir.Repetition):
            return e.min == 0 or ok(e.item)
        raise TypeError(type(e))

    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in productive and ok(body):
                productive.add(name)
                changed = True
    if "root" not in productive:
        raise GrammarError("the schema is unsatisfiable: no JSON value matches it")

    def clean(e: ir.Expr) -> Optional[ir.Expr]:
        if isinstance(e, ir.Choice):
            alts = [c for c in (clean(x) for x in e.alternatives) if c is not None]
            if not alts:
                return None
            return alts[0] if len(alts) == 1 else ir.Choice(tuple(alts))
        if isinstance(e, ir.Sequence):
            items = [clean(x) for x in e.items]
            if any(x is None for x in items):
                return None
            return ir.Sequence(tuple(items))  # type: ignore[arg-type]
        if isinstance(e, ir.Repetition):
            item = clean(e.item)
            if item is None:
                return ir.EMPTY if e.min == 0 else None
            return ir.Repetition(item, e.min, e.max)
        if isinstance(e, ir.Ref):
            return e if e.name in productive else None
        return e

    cleaned = {n: clean(b) for n, b in rules.items() if n in productive}
    reach = {"root"}
    stack = ["root"]
    while stack:
        body = cleaned[stack.pop()]
        todo: list[ir.Expr] = [body]  # type: ignore[list-item]
        while todo:
            e = todo.pop()
            if isinstance(e, ir.Ref):
                if e.name not in reach:
                    reach.add(e.name)
                    stack.append(e.name)
            elif isinstance(e, ir.Sequence):
                todo.extend(e.items)
            elif isinstance(e, ir.Choice):
                todo.extend(e.alternatives)
            elif isinstance(e, ir.Repetition):
                todo.append(e.item)
    order = ["root"] + [n for n in cleaned if n != "root" and n in reach]
    out = tuple(ir.Rule(n, cleaned[n]) for n in order)  # type: ignore[arg-type]
    return ir.Grammar(rules=out, start="root", syntax="json_schema", end_mode="eos")
