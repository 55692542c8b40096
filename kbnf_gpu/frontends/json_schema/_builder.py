"""Schema -> IR grammar: one rule per reachable conjunction of subschemas.

Rules are produced from a work list (no Python recursion over the schema),
so deep and recursive schemas are fine; a recursive ``$ref`` becomes an
``ir.Ref`` back to the rule already named for it.
"""
from __future__ import annotations

import itertools
import json
import re
from collections import deque
from contextlib import contextmanager
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from math import gcd, isfinite, lcm
from typing import Any, Callable, Iterator, Optional, Union

from ... import ir
from ...automata import build_dfa
from ...automata.build import common_prefix_length
from ...budget import current_budget
from ...errors import DFATooLarge, GrammarError
from . import _charset as cs
from ._document import Document, child, located
from ._fsm import (DFA, TooLarge, as_expr, automaton_expr, byte_states_at_least, combine, intersection_dfa,
                   is_universal)
from ._layout import Layout
from ._long_strings import STRING_CHUNK, chunked_pattern, counted_string, threaded_string
from ._merge import (DEPENDENCIES, Atom, Merged, Unsatisfiable, choice_product, constraining, dependency_branches,
                     enum_choice, expand, first_choice, if_branches, merge, negation, not_branches, tighter_hi,
                     tighter_lo)
from ._objects import Member, TooManyStates, object_expr
from ._oneof import disjoint, exclusive
from ._pattern import PatternError, pattern_language, search
from ._prune import prune
from ._regex_format import MAX_PRODUCT_STATES, regex_string
from ._rx import Rx, alt, cc, lit, rep, seq, span_bound, within
from ._strings import encode, quoted, word
from ._validate import Validator, json_key
from ._scalars import ANY_NUMBER, BOOLEAN, NULL, format_terminal, integer_terminal
from .formats import FORMATS, INTEGER_FORMATS, UNSUPPORTED_FORMATS, format_language
from .numbers import (MAX_DIGITS, decimal_range_parts, integer_and_exponent, integer_multiples, integer_range,
                      multiple_of_regex, power_of_ten_exponent, step_digits)

MAX_INDENT_UNROLL = 16  # indent layout: instances of one subschema at distinct depths
MAX_PATTERN_PROPERTIES = 6
MAX_ENUMERATED_MULTIPLES = 256
MAX_MODULUS_STATES = 12  # multipleOf k (not dividing a power of ten) as an automaton: k up to this
MAX_MODULUS_RULES = 1000  # beyond, multipleOf k is one rule per residue (on half-lines)
SMALL_COUNT = 32  # counted repetitions up to this are left to ``normalize`` to unroll
# a counted range of up to this many copies is one chain (``normalize`` unrolls it); a wider one is written by
# binary digits (``up_to``), so ``maxLength: 1e9`` costs a few dozen rules, not millions. Tokens cost the same
# either way (an array of objects with ``maxItems: 1000``: 22 us per token), while a chain costs two rules a
# copy that every later stage pays for (QuickSight's analysis schema, dozens of arrays of 2,000 items or more
# and chains of 1,023 copies: 130k rules with 1,024 here, 29k with 64)
LINEAR_COUNT_RANGE = 64
_UNKNOWN = object()  # ``Builder.language``: not asked yet
_TOO_COMPLEX = object()  # ``Builder._regex_string``: the automaton beside ``format: regex`` is too large
MAX_EXCLUDED_NUMBERS = 256  # 'not' of number values: the range is cut into that many gaps
MAX_CONTAINS = 4  # 'contains' on one array: each element is one of 2**n variants
MAX_CONTAINS_STATES = 4096  # positions × counts of an array with 'contains'
MAX_EXCLUDED_KEY = 128  # code points of the longest declared name that additional keys are kept apart from

ANY_CHAR = cc(cs.ANY)


def _rule_base(pointer: str) -> str:
    """A readable rule name from a location (``uri#pointer`` for another document)."""
    if not pointer or pointer == "/":
        return "value"
    text = re.sub(r"[^A-Za-z0-9]+", "_", pointer.replace("$defs", "defs")).strip("_")
    return (text[-40:] or "value").lstrip("_") or "value"


def _regex_names(names: Any) -> bool:
    """Is a ``propertyNames`` schema ``format: regex`` and nothing else (annotations and ``type: string``
    aside)?"""
    if not isinstance(names, dict) or names.get("format") != "regex" or names.get("type", "string") != "string":
        return False
    return set(constraining(names)) <= {"format", "type"}


class Builder:
    """Collects rules and terminals while walking the schema."""

    def __init__(self, doc: Document, layout: Layout, any_order: bool) -> None:
        self.doc = doc
        self.layout = layout
        self.any_order = any_order
        self.validator = Validator(doc)
        self.rules: dict[str, ir.Expr] = {}
        self.rule_names: set[str] = {"root"}
        self._fresh_next: dict[str, int] = {}  # base -> the suffix ``fresh`` tries next
        self.nodes: dict[tuple[frozenset[Atom], int], str] = {}
        self._depths: dict[frozenset[Atom], int] = {}
        self._flat: set[str] = set()  # rules whose containers are cut off (indent depth limit)
        self._enum_choices: dict[tuple[str, str], Optional[str]] = {}  # ``_enum_choice``'s memo
        self._enum_value_lists: dict[tuple[str, ...], list[Any]] = {}  # ``_enum_values``' memo
        self.queue: deque[tuple[str, tuple[Atom, ...], int]] = deque()
        self._terms: dict[ir.RegExpr, ir.Terminal] = {}
        # the rules of counted repetitions: ("times" | "up_to" | "below_power", item, count) -> rule name
        self._count_rules: dict[tuple[str, ir.Expr, int], str] = {}
        self.regex_rule: Optional[str] = None  # the rules of ``format: regex`` (``_regex_format``), made once
        self._languages: dict[tuple[Rx, ...], Union[DFA, None, TooLarge]] = {}  # ``language``'s memo
        self._threaded: dict[tuple, Optional[ir.Expr]] = {}  # ``threaded``'s memo

    # ------------------------------------------------------------ helpers

    def term(self, rx: Rx, name: str) -> Optional[ir.Terminal]:
        """One ``ir.Terminal`` per distinct language of this schema (None: the empty language)."""
        if rx is None:
            return None
        t = self._terms.get(rx)
        if t is None:
            t = self._terms[rx] = ir.Terminal(rx, name=name)
        return t

    def language(self, langs: list[Rx]) -> Optional[DFA]:
        """``intersection_dfa(langs)``, once per schema: a string's constraints are tried in chunks
        (``chunked_pattern``), as one lexeme (``_whole_string``) and threaded, each from the same automaton
        (282 of the second corpus's 688 intersections were asked again). A ``TooLarge`` is remembered too."""
        key = tuple(langs)
        found = self._languages.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            try:
                found = intersection_dfa(langs)
            except TooLarge as e:
                found = e
            self._languages[key] = found
        if isinstance(found, TooLarge):
            raise TooLarge(str(found))
        return found

    def string_term(self, rx: Rx) -> Optional[ir.Terminal]:
        """A whole JSON string whose decoded contents match ``rx``, quotes and escapes included, as one lexeme."""
        return self.term(quoted(encode(rx)), "string")

    def automaton_string(self, d: DFA, written: Callable[[DFA], Rx] = as_expr) -> Optional[ir.Terminal]:
        """The JSON string whose contents ``d`` accepts, ``written`` as an expression, as one lexeme if its byte
        automaton fits ``max_dfa_states`` (else ``None``); one that provably cannot (``byte_states_at_least``)
        is not spelled in bytes at all."""
        limit = current_budget().config.max_dfa_states
        if byte_states_at_least(d, limit) > limit:
            return None
        term = self.string_term(written(d))
        return term if self.fits(term) else None

    def fits(self, term: Optional[ir.Terminal]) -> bool:
        """Does ``term``'s byte automaton stay within ``max_dfa_states``? Built here (memoized: ``normalize``
        takes the same one) so that a lexeme too big is replaced by smaller ones, or refused at its schema
        location, instead of failing later with only a rule name."""
        if term is None:
            return True
        try:
            build_dfa(term, max_states=current_budget().config.max_dfa_states)
        except DFATooLarge:
            return False
        return True

    @staticmethod
    def seq(*parts: Rx) -> Rx:
        return seq(*parts)

    def fresh(self, base: str) -> str:
        """An unused rule name: ``base``, else ``base_2``, ``base_3``...; the search resumes where the last one
        for ``base`` ended (names are never freed), not from the start (quadratic: 8 s of Azure Pipelines' 71,000
        rules)."""
        n = self._fresh_next.get(base, 1)
        name = base if n == 1 else f"{base}_{n}"
        while name in self.rule_names:
            n += 1
            name = f"{base}_{n}"
        self._fresh_next[base] = n + 1
        self.rule_names.add(name)
        return name

    def add_rule(self, name: str, alts: list[ir.Expr]) -> None:
        if len(self.rules) % 1024 == 0:
            current_budget().check("max_rules", len(self.rules), "grammar rules of the schema")
        assert name not in self.rules, name
        self.rule_names.add(name)
        self.rules[name] = alts[0] if len(alts) == 1 else ir.Choice(tuple(alts))  # () = nothing

    def counted(self, item: ir.Expr, lo: int, hi: Optional[int], base: str) -> ir.Expr:
        """``item`` ``lo`` to ``hi`` times; a large ``lo`` or ``hi - lo`` costs O(log) rules (``times``, ``up_to``)."""
        rest = None if hi is None else hi - lo
        if rest is not None and rest > LINEAR_COUNT_RANGE:
            optional = self.up_to(item, rest, base)
            return optional if lo == 0 else ir.Sequence((self.counted(item, lo, lo, base), optional))
        if lo <= SMALL_COUNT:
            return ir.Repetition(item, lo, hi)
        if rest == 0:
            return self.times(item, lo, base)
        return ir.Sequence((self.times(item, lo, base), ir.Repetition(item, 0, rest)))

    def up_to(self, item: ir.Expr, n: int, base: str) -> ir.Expr:
        """``item`` 0 to ``n`` times. Past ``LINEAR_COUNT_RANGE``, by the binary digits of the count: with
        ``2**k <= n`` the top digit, ``U(n) ::= B(k) | X^(2**k) U(n - 2**k)``, the first for fewer than ``2**k``
        copies, the second for more; ``B(i) ::= B(i-1) | X^(2**(i-1)) B(i-1)`` is 0 to ``2**i - 1`` copies (each
        power of two taken or not). Every count has one derivation, and a parser holds one item per digit."""
        if n <= LINEAR_COUNT_RANGE:
            return ir.Repetition(item, 0, n)
        name = self._count_rules.get(("up_to", item, n))
        if name is None:
            k = n.bit_length() - 1
            top = self.times(item, 1 << k, base)
            name = self._count_rules[("up_to", item, n)] = self.fresh(f"{base}_upto{n}"[:60])
            more = n - (1 << k)
            self.add_rule(name, [self._below_power(item, k, base),
                                 ir.Sequence((top, self.up_to(item, more, base))) if more else top])
        return ir.Ref(name)

    def _below_power(self, item: ir.Expr, k: int, base: str) -> ir.Expr:
        """``item`` 0 to ``2**k - 1`` times (``B(k)`` of ``up_to``)."""
        if (1 << k) - 1 <= LINEAR_COUNT_RANGE:
            return ir.Repetition(item, 0, (1 << k) - 1)
        name = self._count_rules.get(("below_power", item, k))
        if name is None:
            lower = self._below_power(item, k - 1, base)
            name = self._count_rules[("below_power", item, k)] = self.fresh(f"{base}_below{1 << k}"[:60])
            self.add_rule(name, [lower, ir.Sequence((self.times(item, 1 << (k - 1), base), lower))])
        return ir.Ref(name)

    def times(self, item: ir.Expr, n: int, base: str) -> ir.Expr:
        """``item`` exactly ``n`` times by doubling (``X_2k ::= X_k X_k``): ``minLength: 1e18`` is
        60 rules, never ``n`` copies, and a parser walks it with one item per level."""
        if n <= SMALL_COUNT:
            return ir.Repetition(item, n, n)
        name = self._count_rules.get(("times", item, n))
        if name is None:
            half = self.times(item, n // 2, base)
            name = self._count_rules[("times", item, n)] = self.fresh(f"{base}_x{n}"[:60])
            self.add_rule(name, [ir.Sequence((half, half, item) if n % 2 else (half, half))])
        return ir.Ref(name)

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
            base = _rule_base(self.doc.show(flat[0][0]) if flat else "any")
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
        budget = current_budget()
        with self._located("/"):
            root = self.value_rule((("", frozenset()),), 0)
        while self.queue:
            name, atoms, depth = self.queue.popleft()
            with self._located(self.doc.show(atoms[0][0]) if atoms else "/"):
                budget.tick("building the JSON Schema grammar")
                self.add_rule(name, self._body(name, atoms, depth))
        if root is None:
            raise GrammarError("the schema is unsatisfiable (false): no JSON value matches it")
        items: list[ir.Expr] = [ir.Ref(root)]
        if self.layout.flexible:
            w = self.layout.punct("edge")
            items = [w, ir.Ref(root), w]
        self.rules["root"] = items[0] if len(items) == 1 else ir.Sequence(tuple(items))
        return prune(self.rules)

    @contextmanager
    def _located(self, where: str) -> Iterator[None]:
        """Errors while building the subschema at ``where`` name it: a library error
        without a place gets this one, and a raw Python error from a malformed
        schema (a keyword of the wrong type) becomes a ``GrammarError``."""
        try:
            yield
        except GrammarError as e:
            if e.pointer is None:
                e.pointer = where
                e.args = (f"{e.args[0]} at '{where}'" if e.args else f"at '{where}'", *e.args[1:])
            raise
        except (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError, UnicodeError,
                RecursionError, ZeroDivisionError) as e:
            raise located(GrammarError(f"malformed or unsupported schema ({type(e).__name__}: {e}) at '{where}'"),
                          where) from None

    def _body(self, name: str, atoms: tuple[Atom, ...], depth: int) -> list[ir.Expr]:
        choice = self._choice(atoms)
        if choice is not None:
            alts: list[ir.Expr] = []
            kept = []
            for branch in choice[1]:
                r = self.value_rule(branch, depth)
                if r is not None:
                    alts.append(ir.Ref(r))
                    kept.append(branch)
            self._warn_overlap(choice[0], kept)
            return alts
        m = merge(self.doc, atoms)
        return self._fragments(m, depth, containers=name not in self._flat)

    def _choice(self, atoms: tuple[Atom, ...]) -> Optional[tuple[str, list[tuple[Atom, ...]]]]:
        """The first choice of a conjunction (``anyOf``, ``oneOf``, a dependency, ``if``, a written-out
        ``not``) as (its location, the conjunctions of its branches); None when there is none."""
        choice = first_choice(self.doc, atoms)
        if choice is None:
            return None
        i, kw, n = choice
        ptr, skip = atoms[i]
        enum_at = self._enum_choice(ptr, kw) if kw in ("anyOf", "oneOf") else None
        if enum_at is not None:  # one branch: the values as one enum (exact: see ``enum_choice``)
            if not enum_at:
                return child(ptr, kw), []
            return child(ptr, kw), [atoms[:i] + ((ptr, skip | {kw}), (enum_at, frozenset())) + atoms[i + 1:]]
        # distributing every anyOf/oneOf of a conjunction makes the product of their widths in rules
        current_budget().check("max_schema_branches", choice_product(self.doc, atoms),
                               "combinations of anyOf/oneOf branches", pointer=self.doc.show(child(atoms[i][0], kw)))
        if kw in DEPENDENCIES:
            branches = dependency_branches(self.doc, atoms, i, kw)
        elif kw == "if":
            branches = if_branches(self.doc, atoms, i)
        elif kw == "not":
            branches = not_branches(self.doc, atoms, i)
        else:
            branches = [atoms[:i] + ((ptr, skip | {kw}), (child(ptr, kw, k), frozenset())) + atoms[i + 1:]
                        for k in range(n)]
        if kw == "oneOf":
            branches = exclusive(self.doc, branches)
        return child(ptr, kw), branches

    def _enum_choice(self, ptr: str, kw: str) -> Optional[str]:
        """The location of ``enum_choice``'s values at ``ptr`` as one ``enum`` ("" when there are none, None when
        the choice is not one of values): once per choice, however many conjunctions reach it (azure-pipelines'
        259 task names, met from each of 259 task patterns, were read again at each)."""
        key = (ptr, kw)
        if key not in self._enum_choices:
            values = enum_choice(self.doc, ptr, kw)
            if values:
                self._enum_choices[key] = self.doc.synthetic({"enum": values}, child(ptr, kw))
            else:
                self._enum_choices[key] = None if values is None else ""
        return self._enum_choices[key]

    def _warn_overlap(self, where: str, kept: list[tuple[Atom, ...]]) -> None:
        """A ``oneOf`` whose branches kept may overlap is an ``anyOf``: say so."""
        if where.rsplit("/", 1)[-1] == "oneOf" and not disjoint(self.doc, kept):
            self.doc.warn(f"'oneOf' at '{where}' is treated as 'anyOf' "
                          "(its branches may overlap, so a value matching two of them is accepted)")

    # ---------------------------------------------------------- fragments

    def _fragments(self, m: Merged, depth: int, containers: bool = True) -> list[ir.Expr]:
        """One alternative per JSON type ``m`` allows (scalars first; each scalar type its own terminal)."""
        if m.enums:
            return self._enum(m, depth)  # the validator applies "not" to each value
        t = set(m.types)
        booleans = {True: "true", False: "false"}
        drops: list[Rx] = [pattern_language(src, over=True) for src, _ in m.not_patterns if "string" in t]
        excluded: list[Decimal] = []
        for v, where in m.not_values:
            if v is None:
                t.discard("null")
            elif isinstance(v, bool):
                booleans.pop(v, None)
            elif isinstance(v, str):
                drops.append(word(v))
            elif isinstance(v, (int, float)):
                if len(excluded) >= MAX_EXCLUDED_NUMBERS:
                    self.doc.problem(f"'not' of more than {MAX_EXCLUDED_NUMBERS} numbers is unsupported", where)
                elif not isinstance(v, float) or isfinite(v):
                    excluded.append(Decimal(str(v)))
            elif (isinstance(v, dict) and "object" in t) or (isinstance(v, list) and "array" in t):
                self.doc.problem("'not' of an object or array value is unsupported", where)
        out: list[Optional[ir.Expr]] = []
        if "string" in t:
            out.append(self._string(m, drops))
        if "int" in t or "frac" in t:
            out.append(self._number(m, excluded))
        if "boolean" in t and booleans:
            out.append(BOOLEAN if len(booleans) == 2 else self.term(alt(*map(lit, booleans.values())), "boolean"))
        if "null" in t:
            out.append(NULL)
        if "object" in t and containers:
            out.append(self._object(m, depth))
        if "array" in t and containers:
            out.append(self._array(m, depth))
        return [e for e in out if e is not None]

    def _enum(self, m: Merged, depth: int) -> list[ir.Expr]:
        for fmt, at in m.formats:
            if fmt in UNSUPPORTED_FORMATS:
                self.doc.problem(f"unsupported format '{fmt}'", at)
        kept = self._enum_values(m)
        for p, s in m.atoms:
            kept = self.validator.valid_values(kept, p, s | {"enum", "const"})
        if not kept:
            return []
        budget = current_budget()
        where = self.doc.show(m.enums[0][1])
        exprs = [self.layout.value(v, depth) for v in kept]
        batches = _value_batches(exprs, max(1, budget.config.max_dfa_states // 2), where)
        budget.check("max_terminals", len(batches), "terminals for the enum/const values", pointer=where)
        return [term for batch in batches for term in self._enum_terms([exprs[i] for i in batch])]

    def _enum_terms(self, exprs: list[ir.RegExpr]) -> list[ir.Terminal]:
        """The values as one terminal, or in halves where its automaton passes ``max_dfa_states`` after all
        (``_value_batches`` estimates)."""
        term = self.term(alt(*exprs), "enum")
        if len(exprs) == 1 or self.fits(term):
            return [term]
        half = len(exprs) // 2
        return self._enum_terms(exprs[:half]) + self._enum_terms(exprs[half:])

    def _enum_values(self, m: Merged) -> list[Any]:
        """The values every ``enum``/``const`` of ``m`` allows, once each and writable: once per set of those
        keywords (a choice of 259 task names, met with each of 259 task patterns, is read once)."""
        key = tuple(at for _, at in m.enums)
        found = self._enum_value_lists.get(key)
        if found is None:
            values, _ = m.enums[0]
            for other, _ in m.enums[1:]:
                keys = {json_key(v) for v in other}
                values = [v for v in values if json_key(v) in keys]
            seen = set()
            found = []
            for v in values:
                k = json_key(v)
                if k in seen:
                    continue
                seen.add(k)
                if not _writable(v):
                    self.doc.problem("an enum/const value with a lone surrogate cannot be generated", m.enums[0][1])
                    continue
                found.append(v)
            self._enum_value_lists[key] = found
        return found

    # ------------------------------------------------------------ numbers

    def _number(self, m: Merged, excluded: list[Decimal]) -> Optional[ir.Expr]:
        """Numbers in the bounds, multiples of every ``multipleOf``, none equal to an ``excluded`` value
        (``not`` of a ``const``/``enum``): the range is cut into gaps around those values."""
        ints_only = "frac" not in m.types
        step = _common_multiple([v for v, _ in m.multiple_of]) if m.multiple_of else None
        where = m.multiple_of[0][1] if m.multiple_of else m.where
        if step is not None and not _within_digits(step):
            self.doc.problem(f"'multipleOf' {step} has more than {MAX_DIGITS} digits or zeros", where)
            step = None
        k = 1
        if step is not None and (ints_only or step_digits(step) is None):
            if not ints_only:  # a step with a prime factor other than 2 and 5: its last digits do not decide
                if step != step.to_integral_value():
                    self.doc.problem(f"'multipleOf' {step} on numbers is unsupported (a factor other than 2 and 5)",
                                     where)
                    step = None
                else:
                    self.doc.warn(f"'multipleOf' at '{self.doc.show(where)}' on numbers: only integer spellings "
                                  "are generated (10.0 and 1e1 are valid multiples too)")
                    ints_only = True
            if step is not None:
                units, exp = integer_and_exponent(step)  # integers n with step | n: multiples of units/gcd(...)
                k = units * 10**exp if exp >= 0 else units // gcd(units, 10**-exp)
                step = None
        lo, hi = m.lo, m.hi
        for fmt, _ in m.formats:
            if fmt in INTEGER_FORMATS:
                a, b = INTEGER_FORMATS[fmt]
                lo = tighter_lo(lo, (Decimal(a), False))
                hi = tighter_hi(hi, (Decimal(b), False))
        gaps = _gaps(lo, hi, excluded)
        if not ints_only:
            fractional = "int" not in m.types  # not integer: the numbers whose value is no integer
            if fractional and step is not None:
                self.doc.problem("'not' of 'integer' together with 'multipleOf' is unsupported", where)
                fractional = False
            if gaps == [(None, None)] and step is None and not fractional:
                return ANY_NUMBER
            parts = [part for a, b in gaps for part in decimal_range_parts(
                a[0] if a else None, bool(a and a[1]), b[0] if b else None, bool(b and b[1]), step, fractional)]
            if fractional:  # each exponent its own lexeme: their union's automaton counts digits and zeros for all
                return ir.Choice(tuple(self.term(part, "number") for part in parts)) if parts else None
            return self.term(alt(*parts), "number") if parts else None
        parts = [self._integers(a, b, k, m) for a, b in gaps]
        parts = [p for p in parts if p is not None]
        return None if not parts else parts[0] if len(parts) == 1 else ir.Choice(tuple(parts))

    def _integers(self, lo: Optional[tuple[Decimal, bool]], hi: Optional[tuple[Decimal, bool]], k: int,
                  m: Merged) -> Optional[ir.Expr]:
        """Integers in the bounds that are multiples of ``k``."""
        ilo = ihi = None
        if lo is not None:
            ilo = int(lo[0].to_integral_value(ROUND_FLOOR)) + 1 if lo[1] else int(lo[0].to_integral_value(ROUND_CEILING))
        if hi is not None:
            ihi = int(hi[0].to_integral_value(ROUND_CEILING)) - 1 if hi[1] else int(hi[0].to_integral_value(ROUND_FLOOR))
        if ilo is not None and ihi is not None and ilo > ihi:
            return None
        if k == 1:
            return integer_terminal(ilo, ihi)
        if ilo is not None and ihi is not None and (ihi - ilo) // k <= MAX_ENUMERATED_MULTIPLES:
            first = -((-ilo) // k) * k
            return self.term(alt(*(lit(str(n)) for n in range(first, ihi + 1, k))), "integer")
        if step_digits(Decimal(k)) is not None:  # the last digits decide: a few of them per multiple
            rx = integer_multiples(ilo, ihi, k)
            return self.term(rx, "integer") if rx is not None else None
        signs = _half_lines(ilo, ihi)
        for use_regex in (True, False):  # the last digits decide (k | 10**j): a small regex; else residue rules
            if use_regex and (power_of_ten_exponent(k) is not None and k <= 1000 or signs is None and k <= MAX_MODULUS_STATES):
                try:
                    return self.term(combine(integer_range(ilo, ihi), [multiple_of_regex(k)]), "integer")
                except TooLarge:
                    pass
            elif not use_regex and signs is not None and k <= MAX_MODULUS_RULES:
                return self._multiples(k, *signs)
        # a residue automaton of k states in a loop: its regular expression grows exponentially in k
        self.doc.problem(f"'multipleOf' {k} on this range is too complex to enforce exactly", m.multiple_of[0][1])
        return integer_terminal(ilo, ihi)

    def _multiples(self, k: int, zero: bool, positive: bool, negative: bool) -> ir.Expr:
        """Canonical integers divisible by ``k`` as rules, one per residue (``R_r ::= d R_(10r+d mod k)``,
        ``R_0`` may stop): the residue automaton without a regular expression, whose size would be
        exponential in ``k``. Each digit is a lexeme; ``zero``/``positive``/``negative`` pick the half-lines."""
        digit = [self.term(lit(str(d)), "digit") for d in range(10)]
        names: dict[int, str] = {}
        work: list[int] = []

        def residue(r: int) -> ir.Ref:
            if r not in names:
                names[r] = self.fresh(f"multiple_of_{k}_r{r}")
                work.append(r)
            return ir.Ref(names[r])

        lead = ir.Choice(tuple(ir.Sequence((digit[d], residue(d % k))) for d in range(1, 10)))
        while work:
            r = work.pop()
            alts: list[ir.Expr] = [ir.EMPTY] if r == 0 else []
            alts += [ir.Sequence((digit[d], residue((10 * r + d) % k))) for d in range(10)]
            self.add_rule(names[r], alts)
        options: list[ir.Expr] = [digit[0]] if zero else []
        if positive:
            options.append(lead)
        if negative:
            options.append(ir.Sequence((self.term(lit("-"), "minus"), lead)))
        return ir.Choice(tuple(options))

    # ------------------------------------------------------------ strings

    def _string_constraints(self, m: Merged, regex_served: bool = False) -> list[Rx]:
        """Decoded-string languages of ``pattern``s and ``format``s (problems reported; ``format: regex`` is
        none, and unsupported unless ``regex_served``: the caller serves it as a grammar)."""
        langs: list[Rx] = []
        for src, at in m.patterns:
            try:
                lang = pattern_language(src)
            except PatternError as e:
                self.doc.problem(f"unsupported pattern {src!r} ({e})", at)
                continue
            if m.max_len is not None:  # every caller bounds the length too
                lang = within(lang, m.max_len)
            if not is_universal(lang):  # ``(?s).*`` asks nothing: a length limit beside it is a counted string
                langs.append(lang)
        for fmt, at in m.formats:
            if fmt in FORMATS:
                langs.append(format_language(fmt))
            elif fmt == "regex" and regex_served:
                continue
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

    def _string(self, m: Merged, drops: list[Rx] = ()) -> Optional[ir.Expr]:
        """A string terminal, or a rule expression for long or complex strings (None: no string fits);
        ``drops``: decoded languages no string may be in (``not``)."""
        lo, hi = m.min_len, m.max_len
        if hi is not None and hi < lo:
            return None
        where = m.where
        # ``format: regex`` is a grammar, not a language: served with the patterns and lengths beside it (the
        # grammar's product with their automaton), not beside another format or a ``not``
        regex_served = (any(fmt == "regex" for fmt, _ in m.formats) and not drops
                        and all(fmt == "regex" or fmt not in FORMATS for fmt, _ in m.formats))
        langs = self._string_constraints(m, regex_served=regex_served)
        if regex_served:
            served = self._regex_string(langs, lo, hi)
            if served is not _TOO_COMPLEX:
                return served
            self.doc.problem("format 'regex' beside this pattern or length is too complex to enforce exactly", where)
        folded = False  # ``drops`` taken into ``langs``: the lengths apply as to any pattern
        if drops and max(lo, hi or 0) > 2 * STRING_CHUNK:
            # the language without its lengths, threaded with them as a pattern is (Buildkite's step keys: a
            # class, no UUID, no "{{matrix", at most 100)
            try:
                rx = combine(rep(ANY_CHAR, 0, None), langs, drops)
            except TooLarge:
                self.doc.problem("'not' together with these string constraints is too complex", where)
            else:
                if rx is None:
                    return None
                langs, folded = [rx], True
        elif drops:
            try:
                rx = combine(rep(ANY_CHAR, lo, hi), langs, drops)
            except TooLarge:
                self.doc.problem("'not' together with these string constraints is too complex", where)
            else:
                return None if rx is None else self.string_term(rx)
        if not langs:
            return counted_string(self, lo, hi)
        if lo == 0 and hi is None and len(langs) == 1 and not m.patterns and not folded:
            return format_terminal(next(f for f, _ in m.formats if f in FORMATS))
        long = (hi is None and lo > 2 * STRING_CHUNK) or (hi is not None and hi > 2 * STRING_CHUNK)
        if not long or (hi is None and lo == 0):
            chunked = chunked_pattern(self, langs, lo, hi) if m.patterns or folded else None
            if chunked is not None:
                return chunked
            try:
                whole = self._whole_string(langs, lo, hi)
                if self.fits(whole):  # else in chunks (a class of many ranges: each also an escape)
                    return whole
            except TooLarge:
                pass
        return self.threaded(langs, lo, hi, where)

    def _regex_string(self, langs: list[Rx], lo: int, hi: Optional[int]) -> Union[ir.Expr, None, object]:
        """``format: regex`` within ``langs`` and the lengths (``_regex_format.regex_string``); ``_TOO_COMPLEX``
        where their automaton has more than ``MAX_PRODUCT_STATES`` states."""
        if not langs and lo == 0 and hi is None:
            return regex_string(self)
        try:
            d = self.language(langs if lo == 0 and hi is None else [rep(ANY_CHAR, lo, hi), *langs])
        except TooLarge:
            return _TOO_COMPLEX
        if d is None:
            return None
        return _TOO_COMPLEX if d.n > MAX_PRODUCT_STATES else regex_string(self, d)

    def _whole_string(self, langs: list[Rx], lo: int, hi: Optional[int]) -> Optional[ir.Terminal]:
        """The string as one lexeme, written as its code-point automaton: its byte DFA is built as tries side by
        side (``automata.labelled``), which fail within ~0.1 s when too large, where the subset construction
        over a regular expression took up to 1.3 s to find that (the same DFAs for the second corpus's 194
        such strings, 6.4 -> 3.4 s in all). A lone pattern whose automaton passes its own limit is written as
        itself (``TooLarge`` otherwise, as the intersection would raise)."""
        bounded = langs if lo == 0 and hi is None else [rep(ANY_CHAR, lo, hi), *langs]
        try:
            language = self.language(bounded)
        except TooLarge:
            if len(bounded) > 1:
                raise
            return self.string_term(bounded[0])
        if language is None:
            return None
        whole = self.automaton_string(language, automaton_expr)
        if whole is None:
            raise TooLarge("string automaton too large for one lexeme")
        return whole

    def threaded(self, langs: list[Rx], lo: int, hi: Optional[int], where: str) -> Optional[ir.Expr]:
        """``threaded_string``, once per schema for each constraints and lengths: a schema repeats its strings
        (QuickSight's analysis: 110 threaded strings, 3 distinct; each made its chunk languages and rules
        again). A string whose problems were reported is made again where it recurs, so that each place says
        its own."""
        key = (tuple(langs), lo, hi)
        if key in self._threaded:
            return self._threaded[key]
        warned = self.doc.warnings_given
        made = threaded_string(self, langs, lo, hi, where)
        if self.doc.warnings_given == warned:
            self._threaded[key] = made
        return made

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

        if m.contains:
            return self._containing(m, depth, atoms_at)
        lo, hi = m.min_items, m.max_items
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
        empty = L.punct("[]", depth)
        if hi == 0:
            return empty if lo == 0 else None
        comma = L.punct(",", depth)

        def elem(i: int) -> str:
            r = elems[i] if i < K else rest
            assert r is not None
            return r

        base = _rule_base(self.doc.show(m.where)) if m.atoms else "any"
        # T(i): the elements from index i on (each preceded by a comma)
        tail_names: dict[int, str] = {}

        def tail(i: int) -> ir.Expr:
            if i >= K:
                more_lo = max(lo - i, 0)
                more_hi = None if hi is None else hi - i
                if more_hi == 0:
                    return ir.EMPTY
                return self.counted(ir.Sequence((comma, ir.Ref(elem(i)))), more_lo, more_hi, f"{base}_items")
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
            (L.punct("[", depth), ir.Ref(elem(0)), tail(1), L.punct("]", depth))
        )
        return ir.Choice((empty, body)) if lo == 0 else body

    def _containing(self, m: Merged, depth: int, atoms_at) -> Optional[ir.Expr]:
        """An array with ``contains``: an automaton over the elements, its state the position (up to
        where ``prefixItems``, ``minItems`` and ``maxItems`` stop telling positions apart) and, per
        ``contains`` C, how many elements matched it (up to ``minContains``, or exactly up to
        ``maxContains``). Each element is written as ``items`` (X) and, per C, either X∧C (counted) or,
        without a maximum, anything (it may match C or not: "at least" needs no more), with one, X∧¬C
        (the negation as ``not`` takes it). A rule per live state."""
        counters: list[tuple[str, int, Optional[int], Optional[str]]] = []  # (pointer, min, max, ¬C pointer)
        for at, k, high in m.contains:
            if max(k, high or 0) > SMALL_COUNT:
                self.doc.problem(f"'minContains'/'maxContains' over {SMALL_COUNT} are unsupported", at)
                k, high = min(k, 1), None
            neg_at = None
            if high is not None:
                if high < k:
                    return None
                neg = negation(self.doc.resolve(at))
                if neg is None:
                    self.doc.problem("'maxContains' is supported only when 'contains' can be negated (as for 'not')", at)
                    high = None
                else:
                    neg_at = self.doc.synthetic(neg, at)
            if k > 0 or high is not None:
                counters.append((at, k, high, neg_at))
        if len(counters) > MAX_CONTAINS:
            self.doc.problem(f"more than {MAX_CONTAINS} 'contains' on one array are unsupported", counters[-1][0])
            del counters[MAX_CONTAINS:]
        K = max((len(a.prefix) for a in m.arrays), default=0)
        lo, hi = m.min_items, m.max_items
        count_states = 1
        for _, k, high, _ in counters:
            count_states *= (k if high is None else high) + 1
        if max(K, lo, 1 if hi is None else hi) * count_states > MAX_CONTAINS_STATES:
            self.doc.problem(f"'contains' with these item counts needs more than {MAX_CONTAINS_STATES} states",
                             counters[0][0] if counters else m.where)
            lo, hi = 0, None  # keep the counting, drop the bounds on the length
        if hi is not None and hi < lo:
            return None
        last = hi if hi is not None else max(K, lo, 1)  # positions from here on are alike (or there are none)
        d = self.child_depth(depth)
        variants_memo: dict[int, list[tuple[str, tuple[int, ...]]]] = {}

        def variants(i: int) -> list[tuple[str, tuple[int, ...]]]:
            """(value rule, counted per C) for an element at position ``i``."""
            key = min(i, K)
            if key not in variants_memo:
                out = []
                for picks in itertools.product((True, False), repeat=len(counters)):
                    atoms = list(atoms_at(i if i < K else None))
                    for (at, _, _, neg_at), counted in zip(counters, picks):
                        if counted:
                            atoms.append((at, frozenset()))
                        elif neg_at is not None:
                            atoms.append((neg_at, frozenset()))
                    r = self.value_rule(tuple(atoms), d)
                    if r is not None:
                        out.append((r, tuple(int(p) for p in picks)))
                variants_memo[key] = out
            return variants_memo[key]

        def step(state: tuple[int, tuple[int, ...]], picks: tuple[int, ...]):
            i, counts = state
            nxt = []
            for (_, k, high, _), c, p in zip(counters, counts, picks):
                c += p
                if high is None:
                    c = min(c, k)
                elif c > high:
                    return None
                nxt.append(c)
            return (min(i + 1, last) if hi is None else i + 1, tuple(nxt))

        def accepting(state: tuple[int, tuple[int, ...]]) -> bool:
            i, counts = state
            return i >= lo and all(c >= k for (_, k, _, _), c in zip(counters, counts))

        start = (0, (0,) * len(counters))
        edges: dict[tuple, list[tuple[str, tuple]]] = {}
        order = [start]
        seen = {start}
        while len(order) > len(edges):
            state = order[len(edges)]
            out = edges[state] = []
            if hi is None or state[0] < hi:
                for r, picks in variants(state[0]):
                    nxt = step(state, picks)
                    if nxt is not None:
                        out.append((r, nxt))
                        if nxt not in seen:
                            seen.add(nxt)
                            order.append(nxt)
        sources: dict[tuple, list[tuple]] = {}  # the states that step to each state
        for s in order:
            for _, t in edges[s]:
                sources.setdefault(t, []).append(s)
        live = {s for s in order if accepting(s)}
        work = list(live)
        while work:
            for s in sources.get(work.pop(), ()):
                if s not in live:
                    live.add(s)
                    work.append(s)
        if start not in live:
            return None
        L = self.layout
        comma = L.punct(",", depth)
        base = _rule_base(self.doc.show(m.where)) if m.atoms else "any"
        names = {s: self.fresh(f"{base}_contains") for s in order if s != start and s in live}
        for s, nm in names.items():
            alts: list[ir.Expr] = [ir.EMPTY] if accepting(s) else []
            alts += [ir.Sequence((comma, ir.Ref(r), ir.Ref(names[t]))) for r, t in edges[s] if t in live]
            self.add_rule(nm, alts)
        options: list[ir.Expr] = [L.punct("[]", depth)] if accepting(start) else []
        options += [ir.Sequence((L.punct("[", depth), ir.Ref(r), ir.Ref(names[t]), L.punct("]", depth)))
                    for r, t in edges[start] if t in live]
        return ir.Choice(tuple(options))

    # ------------------------------------------------------------ objects

    def _object(self, m: Merged, depth: int) -> Optional[ir.Expr]:
        parts = m.objects
        declared = list(dict.fromkeys([k for o in parts for k in o.props] + m.required))  # first-seen order
        required = set(m.required)
        evaluated = [self._evaluated(p) for p in m.closed]
        evaluated = [e for e in evaluated if e is not None]
        for k in m.forbidden:
            if k in required:
                return None
        props: list[Member] = []
        for k in declared:
            if k in m.forbidden:
                continue
            if not all(k in names or any(_safe_search(src, k) for src in pats) for names, pats in evaluated):
                if k in required:
                    return None  # a required member that unevaluatedProperties: false forbids
                continue
            if not _writable(k):
                self.doc.problem(f"property name {k!r} has a lone surrogate and cannot be generated", m.where)
                if k in required:
                    return None
                continue
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
            props.append(Member(self.layout.key(k), r, k in required))
        regions = self._regions(m, declared + [k for k in m.forbidden if k not in declared], depth, evaluated)
        base = _rule_base(self.doc.show(m.where)) if m.atoms else "any"
        try:
            return object_expr(self, self.fresh(f"{base}_obj"), depth, props, regions, m.min_props, m.max_props)
        except TooManyStates:
            where = m.objects[0].pointer if m.objects else m.where
            self.doc.problem("minProperties/maxProperties too large to count with these properties", where)
            return object_expr(self, self.fresh(f"{base}_obj"), depth, props, regions, 0, None)

    def _evaluated(self, pointer: str) -> Optional[tuple[set[str], set[str]]]:
        """The member names and ``patternProperties`` regexes that the subschema at ``pointer``
        evaluates through itself, its ``$ref``s and ``allOf``s (None: all, by ``additionalProperties``).

        Names only an ``anyOf``/``oneOf`` branch would evaluate are left out, so with
        ``unevaluatedProperties: false`` such members are refused: sound, not complete."""
        names: set[str] = set()
        pats: set[str] = set()
        for ptr, skip in expand(self.doc, ((pointer, frozenset()),)):
            sch = self.doc.resolve(ptr)
            if "additionalProperties" in sch and "additionalProperties" not in skip:
                return None
            if isinstance(sch.get("properties"), dict):
                names.update(sch["properties"])
            if isinstance(sch.get("patternProperties"), dict):
                pats.update(sch["patternProperties"])
        return names, pats

    def _regions(self, m: Merged, declared: list[str], depth: int,
                 evaluated: list[tuple[set[str], set[str]]] = ()) -> list[Member]:
        """Key languages and value rules for members outside the declared names (under
        ``unevaluatedProperties: false``, only keys matching one of its ``patternProperties``)."""
        pats: list[tuple[int, str, str]] = []
        for i, o in enumerate(m.objects):
            for src, p in o.patterns:
                pats.append((i, src, p))
        if len(pats) > MAX_PATTERN_PROPERTIES:
            raise self.doc.fail(f"more than {MAX_PATTERN_PROPERTIES} patternProperties in one object", m.objects[0].pointer)
        names_langs: list[Rx] = []
        # keys that are regexes (draft 6/7 metaschemas' ``patternProperties``): a grammar, no language, so only
        # where nothing else constrains them
        regex_keys = not pats and not declared and any(o.names is not None for o in m.objects) and all(
            _regex_names(self.doc.resolve(o.names)) for o in m.objects if o.names is not None)
        for o in m.objects:
            if o.names is not None and not regex_keys:
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
        words: list[Rx] = []
        simple = not pats and not names_langs  # keys are "anything but the declared names"
        out: list[Member] = []
        for mask in range(1 << len(pats)):
            if not all(any(mask >> j & 1 and pats[j][1] in mine for j in range(len(pats))) for _, mine in evaluated):
                continue  # keys here match none of the patterns an unevaluatedProperties: false evaluates
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
            if regex_keys:
                out.append(Member(self.layout.key_rule(regex_string(self)), value))
                continue
            if simple:
                if _trie_size(declared) > current_budget().config.max_dfa_states // 2 or \
                        max(map(len, declared), default=0) > MAX_EXCLUDED_KEY:
                    # the automaton grows with the trie, and its regular expression nests as deep as a name
                    where = m.objects[0].pointer if m.objects else m.where
                    self.doc.warn(f"member keys at '{self.doc.show(where)}' outside the {len(declared)} declared "
                                  "names are too many or too long to describe; no additional member is generated")
                    continue
                keys = self.layout.other_key(tuple(sorted(set(declared))))
                if not self.fits(keys[0]):  # names spelled in escapes at many trie nodes (non-ASCII names)
                    where = m.objects[0].pointer if m.objects else m.where
                    self.doc.warn(f"member keys at '{self.doc.show(where)}' outside the {len(declared)} declared "
                                  "names are too many to describe in one lexeme; no additional member is generated")
                    continue
                out.append(Member(keys, value))
                continue
            if declared and not words:
                words = [word(k) for k in declared]
            keep = [under[j] for j in range(len(pats)) if mask >> j & 1] + names_langs
            drop = [over[j] for j in range(len(pats)) if not mask >> j & 1] + words
            try:
                lang = combine(rep(ANY_CHAR, 0, None), keep, drop)
            except TooLarge:
                where = m.objects[0].pointer if m.objects else m.where
                self.doc.warn(f"member keys at '{where}' are too complex to describe; some keys are not generated")
                continue
            if lang is None:
                continue
            keys = self.layout.key_of(quoted(encode(lang)))
            if not self.fits(keys[0]):  # (``propertyNames: {"maxLength": 1024}``: a key lexeme of 1,024 code points)
                where = m.objects[0].pointer if m.objects else m.where
                self.doc.warn(f"member keys at '{self.doc.show(where)}' are too long or complex for one lexeme; "
                              "some keys are not generated")
                continue
            out.append(Member(keys, value))
        return out

    def _names_language(self, pointer: str) -> Rx:
        """Decoded language of the string values a ``propertyNames`` schema allows."""
        return self._strings_of(((pointer, frozenset()),), pointer)

    def _strings_of(self, atoms: tuple[Atom, ...], pointer: str) -> Rx:
        """Decoded language of the strings a conjunction allows (its choices: the union of their branches)."""
        try:
            flat = expand(self.doc, atoms)
        except Unsatisfiable:
            return None
        choice = self._choice(flat)
        if choice is not None:
            langs = [(branch, self._strings_of(branch, pointer)) for branch in choice[1]]
            self._warn_overlap(choice[0], [branch for branch, lang in langs if lang is not None])
            return alt(*(lang for _, lang in langs))
        m = merge(self.doc, flat)
        if m.enums:
            values = [v for v in m.enums[0][0] if isinstance(v, str)]
            for p, s in flat:
                values = self.validator.valid_values(values, p, s)
            return alt(*(word(v) for v in values))
        if "string" not in m.types:
            return None
        try:
            return self.string_language(m)
        except TooLarge:
            self.doc.warn(f"'propertyNames' at '{pointer}' is too complex to describe; only declared keys are generated")
            return None

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


def _trie_size(names: list[str]) -> int:
    """Nodes of the trie of ``names`` (UTF-8): what the automaton of the keys outside them grows with."""
    return len({name.encode("utf-8", "surrogatepass")[:i] for name in names for i in range(1, len(name.encode("utf-8", "surrogatepass")) + 1)})


def _writable(v: Any) -> bool:
    """Can ``v`` be written as UTF-8 JSON without a lone surrogate escape (which the grammar never produces)?"""
    if not isinstance(v, (str, list, dict)):
        return True
    try:
        (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _half_lines(lo: Optional[int], hi: Optional[int]) -> Optional[tuple[bool, bool, bool]]:
    """(zero, positive, negative) when the integers ``[lo, hi]`` are 0 and/or whole half-lines, else None."""
    if lo not in (None, 0, 1) or hi not in (None, 0, -1) or (lo is not None and hi is not None and lo != hi):
        return None
    zero = (lo is None or lo <= 0) and (hi is None or hi >= 0)
    return zero, hi is None, lo is None


def _gaps(lo: Optional[tuple[Decimal, bool]], hi: Optional[tuple[Decimal, bool]],
          points: list[Decimal]) -> list[tuple[Optional[tuple[Decimal, bool]], Optional[tuple[Decimal, bool]]]]:
    """The range ``(lo, hi)`` (bounds as ``(value, exclusive)``, None: unbounded) without ``points``: the
    intervals between them, each excluding the points at its ends (some may be empty)."""
    out = []
    start = lo
    for p in sorted(set(points)):
        if start is not None and (p < start[0] or (p == start[0] and start[1])):
            continue
        if hi is not None and (p > hi[0] or (p == hi[0] and hi[1])):
            break
        out.append((start, (p, True)))
        start = (p, True)
    out.append((start, hi))
    return out


def _within_digits(v: Decimal) -> bool:
    units, exp = integer_and_exponent(v)
    return abs(exp) <= MAX_DIGITS and units.bit_length() <= 4 * MAX_DIGITS


def _common_multiple(values: list[Decimal]) -> Decimal:
    """The least common multiple of positive decimals (each ``n * 10**e``: scaled to integers first)."""
    parts = [integer_and_exponent(v) for v in values]
    low = min(e for _, e in parts)
    n = 1
    for units, e in parts:
        if e - low > 2 * MAX_DIGITS or n.bit_length() > 8 * MAX_DIGITS:  # past what _within_digits lets through
            return Decimal(10) ** (2 * MAX_DIGITS)
        n = lcm(n, units * 10 ** (e - low))
    return Decimal(n).scaleb(low)


def _value_batches(exprs: list[ir.RegExpr], room: int, where: str) -> list[list[int]]:
    """Indices of enum/const values (their expressions) in batches, one terminal each, whose automaton should
    stay within ``room`` states. A value written one way (a literal) adds to its batch's trie the bytes past
    its common prefix with the literal before, in sorted order (``"x"`` to ``"x" * 2000``, 2 MB of text, is a
    trie of 4,000 nodes: one terminal, not 400 whose tables the first mask would walk one by one); any other
    (an object with whitespace between its tokens) adds ``span_bound`` of its own."""
    budget = current_budget()
    literal = [i for i, x in enumerate(exprs) if isinstance(x, ir.Literal)]
    literal.sort(key=lambda i: exprs[i].value)
    batches: list[list[int]] = [[]]
    size = 0
    before = b""
    for i in literal + [i for i, x in enumerate(exprs) if not isinstance(x, ir.Literal)]:
        x = exprs[i]
        alone = span_bound(x)
        budget.check("max_dfa_states", alone, "automaton states of one enum/const value (its length)",
                     pointer=where)
        added = alone - common_prefix_length(before, x.value) if isinstance(x, ir.Literal) else alone
        if size + added > room and batches[-1]:
            batches.append([])
            size, added, before = 0, alone, b""
        batches[-1].append(i)
        size += added
        if isinstance(x, ir.Literal):
            before = x.value
    return batches
