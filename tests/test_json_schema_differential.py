"""JSON Schema token masks, differentially against xgrammar's and llguidance's JSON Schema compilers.

Same vocabulary (Llama-3, 128,256 ids), same schemas, layouts aligned:

* ours: ``compile_grammar(schema, vocab, syntax="json_schema", whitespace="compact")``;
* xgrammar 0.2.8: ``GrammarCompiler(TokenizerInfo.from_huggingface(hf, vocab_size=128256,
  stop_token_ids=EOS)).compile_json_schema(schema, any_whitespace=False,
  separators=(",", ":"), strict_mode=True)``. ``strict_mode=True`` (its default)
  forbids properties and items the schema does not declare, as if
  ``unevaluatedProperties``/``unevaluatedItems`` were false; JSON Schema's own
  default is the opposite, so every object schema here says
  ``additionalProperties: false`` explicitly and lists ``required``, and every
  array gives ``items``: then both readings agree. Properties come in schema
  order for both (``any_order`` off), optional ones skippable.
* llguidance 1.9: ``LLMatcher.grammar_from_json_schema(schema, defaults={
  "whitespace_flexible": False, "json_allow_general_unicode_escapes": True})``
  (its default ``item_separator=","``/``key_separator=":"`` are compact
  already). By default llguidance admits ``\\uXXXX`` escapes only for the
  control characters U+0000-U+001F; ``json_allow_general_unicode_escapes``
  lifts that to any code point, as JSON (and we) allow. ``json_allowed_escapes``
  cannot add ``/`` (it rejects the letter), see ``LLG_STRING_CHARS``.

The engines are stepped in lock-step along the same token paths:

* valid instances (hand-written and hypothesis-jsonschema ``from_schema``,
  derandomized), ``json.dumps(x, separators=(",", ":"), ensure_ascii=False)``
  with declared properties in schema order, tokenized greedily through OUR
  allowed tokens (the longest allowed token matching at the position), and a
  few hand-written valid prefixes that reach a known difference;
* seeded random walks choosing among the tokens that ALL engines still in
  lock-step allow (half of the choices among tokens holding a JSON structural
  byte, so walks leave strings and nest; EOS ends a walk where all allow it).

At every step the allowed sets are compared on the non-special ids (the 256
Llama-3 added tokens are ignored: we never allow them, xgrammar's TokenizerInfo
for this tokenizer lists no special ids and treats the non-stop ones as text);
EOS is checked separately: ours allows EOS ⇔ ``Matcher.is_accepting()`` ⇔ each
peer's mask holds the EOS ids; at the end of an instance every engine allows
EOS. Every token on which a peer differs must be explained by a named rule of
``RULES`` that the case lists (``CASE_RULES``; the ``GLOBAL_RULES`` of a peer
apply to every case), and every rule listed for a case must be observed on it
(a stale entry fails: a fixed peer asks for its removal). A peer that rejects
the token an instance path takes (always a difference already explained at
that step) leaves the lock-step for the rest of that path; ours never does.
"""
from __future__ import annotations

import calendar
import json
import re
import warnings
from decimal import Decimal
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

from test_frontend_json_schema import _valid_values, reorder, validator

import xgrammar as xgr
import llguidance
import llguidance.hf  # noqa: F401  (a test extra: fail loudly if missing)
import transformers  # noqa: F401  (a test extra: fail loudly if missing)
import tokenizers  # noqa: F401  (a test extra: fail loudly if missing)

from kbnf_gpu import Matcher, compile_grammar  # noqa: E402

pytestmark = pytest.mark.slow

V = 128_256
SEED = 4242
N_HYPOTHESIS = 10  # generated instances per schema, besides the hand-written ones
N_WALKS = 40
WALK_TOKENS = 80
CLOSE_AFTER = 50  # walks then prefer tokens with a closing byte

LLG_DEFAULTS = {"whitespace_flexible": False, "json_allow_general_unicode_escapes": True}


# ------------------------------------------------------------------ schemas


@dataclass(frozen=True)
class DiffCase:
    id: str
    schema: Any
    values: tuple  # hand-written valid instances
    generate: bool = True  # add hypothesis-jsonschema instances (it cannot resolve recursive $refs)
    prefixes: tuple = ()  # extra valid prefixes to step along (they need not complete)


OBJ = {"type": "object", "additionalProperties": False}

CASES = [
    DiffCase("object-required", {**OBJ, "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                                       "tags": {"type": "array", "items": {"type": "string"}}},
                                 "required": ["id", "name"]},
             ({"id": 1, "name": "ab"}, {"id": -20, "name": "x y", "tags": ["a", "b"]}, {"id": 0, "name": "", "tags": []})),
    DiffCase("optional-properties", {**OBJ, "properties": {"a": {"type": "boolean"}, "b": {"type": "null"},
                                                           "c": {"type": "integer"}}, "required": []},
             ({}, {"a": True}, {"b": None, "c": -1250}, {"a": False, "b": None, "c": 0})),
    DiffCase("nested-arrays", {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
             ([[1, 2], [3]], [], [[]], [[-7, 0, 123456789]])),
    DiffCase("array-of-objects", {"type": "array", "minItems": 1, "items": {
        **OBJ, "properties": {"k": {"type": "string", "enum": ["a", "b"]}, "v": {"type": ["integer", "null"]}},
        "required": ["k"]}},
             ([{"k": "a"}], [{"k": "b", "v": 15}, {"k": "a", "v": None}])),
    DiffCase("array-bounds", {"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3},
             ([True, False], [True, True, True])),
    DiffCase("enum-mixed", {"enum": ["red", "amber", 42, None, True, "x\"y"]}, ("red", 42, None, True, "x\"y")),
    DiffCase("enum-large", {"enum": ["value_%d" % i for i in range(100)]}, ("value_0", "value_99", "value_42")),
    DiffCase("const-object", {"const": {"name": "x", "tags": [1, 2]}}, ({"name": "x", "tags": [1, 2]},)),
    DiffCase("integer-bounds", {"type": "integer", "minimum": -5, "maximum": 1234}, (-5, 0, 1234, 77, -1)),
    DiffCase("integer-minimum", {"type": "integer", "minimum": 10}, (10, 99, 123456789012)),
    DiffCase("string-max-length", {"type": "string", "maxLength": 5}, ("", "abcde", "é😀", "a\"b")),
    DiffCase("string-length-range", {"type": "string", "minLength": 2, "maxLength": 8}, ("ab", "hello wo", "\n\t")),
    DiffCase("any-of", {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": 10}]},
             ("ab", 10, 12345)),
    DiffCase("type-list", {"type": ["string", "null", "boolean"]}, ("x", None, True, "é\\")),
    DiffCase("pattern", {"type": "string", "pattern": "^[a-z]+[0-9]{2}$"}, ("ab12", "z00")),
    DiffCase("number", {"type": "number"}, (0, -1.5, 3.25e10, 1e-7, 12)),
    DiffCase("number-bounds", {"type": "number", "minimum": -2.5, "maximum": 100}, (0, -2.5, 100, 99.999, 3)),
    DiffCase("nested-object", {**OBJ, "properties": {"user": {**OBJ, "properties": {
        "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}, "required": ["name", "age"]},
        "active": {"type": "boolean"}}, "required": ["user"]},
             ({"user": {"name": "a", "age": 3}}, {"user": {"name": "", "age": 0}, "active": False})),
    DiffCase("prefix-items", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
             ([], ["a"], ["a", 1])),
    DiffCase("format-date", {"type": "string", "format": "date"}, ("2024-02-29", "1999-12-31", "2023-02-28"),
             prefixes=(b'"000', b'"2023-04-3')),
    DiffCase("recursive-tree", {"$defs": {"node": {**OBJ, "properties": {
        "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"]}}, "$ref": "#/$defs/node"},
             ({"value": 1}, {"value": 2, "children": [{"value": 3, "children": []}, {"value": -4}]},
              {"value": 0, "children": [{"value": 5, "children": [{"value": 6}]}]}), generate=False),
]


# ------------------------------------------------------ differences, by rule

OUT, IN, ESC = 0, 1, 2  # JSON lexical mode: outside a string, inside one, after a backslash


def lex_mode(data: bytes, mode: int = OUT) -> int:
    for b in data:
        if mode == OUT:
            mode = IN if b == 0x22 else OUT
        elif mode == IN:
            mode = ESC if b == 0x5C else OUT if b == 0x22 else IN
        else:
            mode = IN
    return mode


def string_bytes(prefix_mode: int, tok: bytes) -> list[tuple[int, int]]:
    """(mode before the byte, byte) for every byte of ``tok`` read from ``prefix_mode``."""
    out = []
    mode = prefix_mode
    for b in tok:
        out.append((mode, b))
        mode = lex_mode(bytes([b]), mode)
    return out


def writes_surrogate_escape(s: "Step", tok: bytes) -> bool:
    """Does ``tok`` write hex digits of a ``\\uD800``-``\\uDFFF`` escape (read after ``s.prefix``)?"""
    tail = s.prefix[-6:]
    text = tail + tok
    i = text.find(b"\\u")
    while i >= 0:
        hex_ = text[i + 2 : i + 6]
        if i + 6 > len(tail) and hex_[:1] in (b"d", b"D") and (len(hex_) < 2 or hex_[1:2] in b"89abcdefABCDEF"):
            return True
        i = text.find(b"\\u", i + 1)
    return False


def writes_needless_escape(s: "Step", tok: bytes) -> bool:
    """Does ``tok`` write a byte that makes an escape ``\\/`` or a ``\\u00XX`` escape of printable ASCII
    (U+0020-U+007E), read after ``s.prefix``?"""
    data, first, mode = s.prefix + tok, len(s.prefix), OUT
    for i, b in enumerate(data):
        if mode == ESC:
            if b == 0x2F and i >= first:
                return True
            m = re.match(rb"u00(?:[2-6]|7[0-9a-eA-E])", data[i : i + 5])
            if m and i + m.end() > first:
                return True
        mode = lex_mode(bytes([b]), mode)
    return False


def mantissa_beyond_bounds(s: "Step", tok: bytes, lo: float, hi: float) -> bool:
    """The number the token extends (no exponent yet) lies outside [lo, hi], yet some ``e-N`` puts it inside."""
    m = re.search(rb"-?[0-9]+(?:\.[0-9]*)?$", s.prefix + tok)
    if s.mode != OUT or not m or not re.fullmatch(rb"[0-9.]+", tok):
        return False
    value = Decimal(m.group().rstrip(b".").decode())
    return not (lo <= value <= hi) and any(lo <= value.scaleb(-k) <= hi for k in range(1, 40))


def fraction_digits(prefix: bytes, tok: bytes) -> int:
    """Fraction digits of the number ending ``prefix`` once ``tok``'s leading digits are added (0: none)."""
    m = re.search(rb"[0-9]\.([0-9]*)$", prefix)
    lead = re.match(rb"[0-9]*", tok).group()
    return len(m.group(1)) + len(lead) if m and lead else 0


def writes_impossible_day(s: "Step", tok: bytes) -> bool:
    """Does ``tok`` write (the first digit of) a day that the month of ``"YYYY-MM-`` cannot have?"""
    full = s.prefix + tok
    start = max(0, len(s.prefix) - 12)
    for m in re.finditer(rb'"([0-9]{4})-([0-9]{2})-([0-9]{1,2})', full[start:]):
        if start + m.end(3) <= len(s.prefix):
            continue  # the day was written before this token
        year, month, day = int(m.group(1)), int(m.group(2)), m.group(3)
        if not 1 <= month <= 12:
            return False
        last = [31, 29 if calendar.isleap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (int(day) * 10 if len(day) == 1 else int(day)) > last
    return False


def writes_year_zero(s: "Step", tok: bytes) -> bool:
    """Does ``tok`` complete the year ``0000`` of a string starting ``"0000``?"""
    full = s.prefix + tok
    return s.prefix[:1] == b'"' and len(s.prefix) < 5 <= len(full) and full[1:5] == b"0000"


def at_bound_with_trailing_zeros(s: "Step", tok: bytes) -> bool:
    """Is the number ending the output, followed by ``tok``, a schema bound with extra trailing zeros?"""
    m = re.search(rb"-?[0-9]+\.?[0-9]*$", s.prefix + tok)
    if s.mode != OUT or not m or not tok.strip(b"0.") == b"" and not re.fullmatch(rb"[0-9]*0", tok):
        return False
    text = m.group().decode()
    if "." not in text or not text.endswith("0"):
        return False
    bounds = [s.schema.get(k) for k in ("minimum", "maximum") if isinstance(s.schema, dict)]
    return any(b is not None and Decimal(text) == Decimal(str(b)) for b in bounds)


@dataclass(frozen=True)
class Step:
    prefix: bytes  # the output so far
    mode: int  # lex_mode(prefix)
    forced: bytes  # llguidance's compute_ff_bytes() here (b"" for xgrammar)
    schema: Any


@dataclass(frozen=True)
class Rule:
    peer: str  # "xgrammar" | "llguidance"
    side: str  # "ours": a token only we allow; "peer": a token only the peer allows
    reason: str
    explains: Callable[[Step, bytes], bool]


RULES: dict[str, Rule] = {
    # llguidance design: where the grammar forces bytes, llguidance's mask holds only the
    # canonical tokenization of them (the tokenizer's own split), so a shorter token that
    # spells a proper prefix of the forced bytes ('{' before '"id":', 'na' of '"name"') is
    # masked. Ours is exact (DESIGN §1): any token keeping the output a valid prefix.
    "LLG_FORCED_CANONICAL": Rule(
        "llguidance", "ours", "llguidance admits only the canonical tokenization of forced bytes",
        lambda s, tok: bool(s.forced) and s.forced.startswith(tok) and tok != s.forced,
    ),
    # llguidance's JSON string lexeme excludes the raw byte U+007F (DEL) and the '\/' escape,
    # both valid JSON (RFC 8259 §7: only '"', '\\' and U+0000-U+001F must be escaped;
    # '\/' is a listed escape). Its json_allowed_escapes option rejects '/'.
    "LLG_STRING_CHARS": Rule(
        "llguidance", "ours", "llguidance strings exclude raw U+007F and the \\/ escape",
        lambda s, tok: any((m == IN and b == 0x7F) or (m == ESC and b == 0x2F) for m, b in string_bytes(s.mode, tok)),
    ),
    # llguidance's integer admits "-0" (a valid JSON integer, value 0); our front end writes
    # integers without "-0" by design (front-end docstring: "type: integer is plain integers
    # (no 1.0, no -0)").
    "LLG_MINUS_ZERO": Rule(
        "llguidance", "peer", "llguidance integers admit -0; ours exclude it by design",
        lambda s, tok: s.mode == OUT and s.prefix.endswith(b"-") and tok[:1] == b"0" and not tok[1:2].isdigit(),
    ),
    # Design difference: our strings never hold a lone surrogate escape (front-end docstring:
    # "lone surrogate escapes are never produced": '\ud83d\ude00' yes, '\ude00' alone no);
    # xgrammar's JSON strings admit any four hex digits after '\u' (RFC 8259 §8.2: such
    # strings are syntactically valid, their decoding is unpredictable). Peer-only tokens
    # that write part of a \uD800-\uDFFF escape. (llguidance with
    # json_allow_general_unicode_escapes pairs surrogates as we do.)
    "XGR_LONE_SURROGATES": Rule(
        "xgrammar", "peer", "xgrammar admits lone surrogate escapes; ours never produce them",
        lambda s, tok: writes_surrogate_escape(s, tok),
    ),
    # xgrammar 0.2.8 bug: a string with maxLength/minLength admits raw control characters
    # U+0000-U+001F other than \n and \r (invalid JSON: RFC 8259 §7), e.g.
    #   compile_json_schema({"type": "string", "maxLength": 5}, any_whitespace=False)
    #   then accept '"' and '\t' (token 197): accepted; '"\t"' is not JSON.
    "XGR_BOUNDED_STRING_CONTROLS": Rule(
        "xgrammar", "peer", "xgrammar's length-bounded strings admit raw control characters (invalid JSON)",
        lambda s, tok: any(m == IN and b < 0x20 for m, b in string_bytes(s.mode, tok)),
    ),
    # xgrammar 0.2.8: a string with maxLength/minLength admits no escape sequence at all
    # (an under-approximation: '"a\"b"' has 3 characters).
    "XGR_BOUNDED_STRING_NO_ESCAPES": Rule(
        "xgrammar", "ours", "xgrammar's length-bounded strings admit no escapes",
        lambda s, tok: any(m == IN and b == 0x5C for m, b in string_bytes(s.mode, tok)),
    ),
    # Design difference: our strings never hold a needless escape of printable ASCII (front-end
    # docstring, "strings": spelled as json.dumps spells them, so '/' and not '\/', 'a' and not
    # '\u0061'); both peers' plain strings admit them (xgrammar '\/' and '\u0061', llguidance
    # '\u0061': it excludes '\/', LLG_STRING_CHARS). Peer-only tokens that write part of one.
    "XGR_NEEDLESS_ESCAPES": Rule(
        "xgrammar", "peer", "xgrammar admits needless escapes of printable ASCII; ours never write them",
        writes_needless_escape,
    ),
    "LLG_NEEDLESS_ESCAPES": Rule(
        "llguidance", "peer", "llguidance admits \\u escapes of printable ASCII; ours never write them",
        writes_needless_escape,
    ),
    # Design difference: with minimum/maximum, our numbers admit an exponent wherever it provably
    # stays in range ('1e1' in [-2.5, 100]; front-end docstring, "numbers"); both peers write
    # bounded numbers in plain decimal notation only.
    "XGR_BOUNDED_EXPONENT": Rule(
        "xgrammar", "ours", "bounded numbers: ours admit in-range exponents, xgrammar none",
        lambda s, tok: s.mode == OUT and s.prefix[-1:].isdigit() and tok[:1] in (b"e", b"E"),
    ),
    "LLG_BOUND_EXPONENT": Rule(
        "llguidance", "ours", "bounded numbers: ours admit in-range exponents, llguidance none",
        lambda s, tok: s.mode == OUT and s.prefix[-1:].isdigit() and tok[:1] in (b"e", b"E"),
    ),
    # A mantissa past the bounds is still a valid prefix when an exponent can bring it back:
    # '201' in [-2.5, 100] continues to '201e-1' (20.1). Ours admits it (issue #15 item 4); both
    # peers cut the digits at the bound.
    "XGR_MANTISSA_BEYOND_BOUND": Rule(
        "xgrammar", "ours", "bounded numbers: ours admit digits an exponent brings back in range",
        lambda s, tok: mantissa_beyond_bounds(s, tok, -2.5, 100),
    ),
    "LLG_MANTISSA_BEYOND_BOUND": Rule(
        "llguidance", "ours", "bounded numbers: ours admit digits an exponent brings back in range",
        lambda s, tok: mantissa_beyond_bounds(s, tok, -2.5, 100),
    ),
    # xgrammar 0.2.8: a number with minimum/maximum holds at most 6 fraction digits
    # ('-2.1234567' in [-2.5, 100] is masked after '-2.123456'): an under-approximation.
    "XGR_BOUNDED_FRACTION_DIGITS": Rule(
        "xgrammar", "ours", "xgrammar's bounded numbers hold at most 6 fraction digits",
        lambda s, tok: s.mode == OUT and fraction_digits(s.prefix, tok) > 6,
    ),
    # Peer bugs: format "date" admits days that do not exist. xgrammar 0.2.8 admits every day
    # 01-31 in every month ('"2024-02-30"', '"2023-04-31"'); llguidance 1.9 admits February 29
    # in every year ('"3927-02-29"'). jsonschema's format checker (and our front end) reject
    # them: RFC 3339 full-date. Peer-only tokens that write a day the month cannot have.
    "XGR_DATE_DAY_OF_MONTH": Rule(
        "xgrammar", "peer", "xgrammar's date admits days 01-31 in every month",
        lambda s, tok: writes_impossible_day(s, tok),
    ),
    "LLG_DATE_LEAP_YEAR": Rule(
        "llguidance", "peer", "llguidance's date admits February 29 in every year",
        lambda s, tok: writes_impossible_day(s, tok),
    ),
    # Both peers admit the year 0000 ('"0000-01-01"'), which RFC 3339 allows syntactically but
    # jsonschema's format checker rejects (Python dates start at year 1); so do we.
    "XGR_DATE_YEAR_ZERO": Rule(
        "xgrammar", "peer", "xgrammar's date admits year 0000", lambda s, tok: writes_year_zero(s, tok),
    ),
    "LLG_DATE_YEAR_ZERO": Rule(
        "llguidance", "peer", "llguidance's date admits year 0000", lambda s, tok: writes_year_zero(s, tok),
    ),
    # llguidance 1.9 bug: a number equal to a decimal bound but written with trailing zeros
    # ('-2.50', '-2.500' for minimum -2.5) is masked; it is valid (-2.50 >= -2.5):
    #   grammar_from_json_schema({"type": "number", "minimum": -2.5}, ...): after "-2.5" the
    #   mask holds no '0'; after "-2." none of '50', '500'.
    "LLG_BOUND_TRAILING_ZEROS": Rule(
        "llguidance", "ours", "llguidance masks a decimal bound written with trailing zeros",
        lambda s, tok: at_bound_with_trailing_zeros(s, tok),
    ),
}

GLOBAL_RULES = {
    "llguidance": ("LLG_FORCED_CANONICAL", "LLG_STRING_CHARS", "LLG_MINUS_ZERO", "LLG_NEEDLESS_ESCAPES"),
    "xgrammar": ("XGR_LONE_SURROGATES", "XGR_NEEDLESS_ESCAPES"),
}

# case id -> rules that must explain (and must be observed on) that case
CASE_RULES: dict[str, tuple[str, ...]] = {
    "string-max-length": ("XGR_BOUNDED_STRING_CONTROLS", "XGR_BOUNDED_STRING_NO_ESCAPES"),
    "string-length-range": ("XGR_BOUNDED_STRING_CONTROLS", "XGR_BOUNDED_STRING_NO_ESCAPES"),
    "any-of": ("XGR_BOUNDED_STRING_CONTROLS", "XGR_BOUNDED_STRING_NO_ESCAPES"),
    "format-date": ("XGR_DATE_DAY_OF_MONTH", "LLG_DATE_LEAP_YEAR", "XGR_DATE_YEAR_ZERO", "LLG_DATE_YEAR_ZERO"),
    "number-bounds": ("XGR_BOUNDED_EXPONENT", "LLG_BOUND_EXPONENT", "XGR_BOUNDED_FRACTION_DIGITS",
                      "LLG_BOUND_TRAILING_ZEROS", "XGR_MANTISSA_BEYOND_BOUND", "LLG_MANTISSA_BEYOND_BOUND"),
}


# ----------------------------------------------------------------- engines


@dataclass
class Peers:
    vocab: Any
    special: np.ndarray  # bool [V] (EOS included)
    special_not_eos: np.ndarray  # bool [V]
    eos: np.ndarray
    structural: np.ndarray  # bool [V]
    closing: np.ndarray  # bool [V]
    token_bytes: list
    by_bytes: dict
    max_len: int
    xgr_compiler: Any
    llg_tokenizer: Any


_PEERS: list[Peers] = []


@pytest.fixture(scope="module")
def peers(llama3_vocab) -> Peers:
    return load_peers(llama3_vocab)


def load_peers(llama3_vocab) -> Peers:
    """The Llama-3 tokenizer for each peer (built once per session)."""
    if not _PEERS:
        from tokenizers import Tokenizer
        from transformers import PreTrainedTokenizerFast

        import llguidance.hf
        from kbnf_gpu.tokenizers import locate

        vocab = llama3_vocab
        assert vocab.size == V
        hf = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_file(str(locate("llama3").path)))
        eos = list(vocab.eos_ids)
        info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=V, stop_token_ids=eos)
        llt = llguidance.hf.from_tokenizer(hf, n_vocab=V, eos_token=eos)
        matrix, lengths = vocab.token_matrix()
        cols = np.arange(matrix.shape[1])[None, :] < lengths[:, None]

        def holding(chars: bytes) -> np.ndarray:
            return (np.isin(matrix, np.frombuffer(chars, dtype=np.uint8)) & cols).any(axis=1)

        special = np.zeros(V, dtype=bool)
        special[list(vocab.special_ids)] = True
        token_bytes = [vocab.token_bytes(i) for i in range(V)]
        by_bytes: dict[bytes, int] = {}
        for i in np.flatnonzero(lengths).tolist():
            by_bytes.setdefault(token_bytes[i], i)
        special_not_eos = special.copy()
        special_not_eos[eos] = False
        _PEERS.append(Peers(vocab, special, special_not_eos, np.array(eos, dtype=np.int32), holding(b'"{}[],:'), holding(b'"}]'),
                            token_bytes, by_bytes, int(lengths.max()),
                            xgr.GrammarCompiler(info, max_threads=1), llt))
    return _PEERS[0]


def _bits(words: np.ndarray) -> np.ndarray:
    return np.unpackbits(np.ascontiguousarray(words).view(np.uint8), bitorder="little")[:V].astype(bool)


class Engines:
    """Ours plus the two peers for one path; a peer leaves when it rejects the path's token."""

    def __init__(self, p: Peers, ours: Any, xg: Any, lg: str) -> None:
        self.p = p
        self.ours = Matcher(ours)
        self.xgr = xgr.GrammarMatcher(xg)
        self.llg = llguidance.LLMatcher(p.llg_tokenizer, lg, log_level=0)
        assert not self.llg.is_error(), self.llg.get_error()
        self.live = {"xgrammar": True, "llguidance": True}
        self._xbuf = xgr.allocate_token_bitmask(1, V)
        self.out = b""

    def masks(self) -> dict[str, np.ndarray]:
        ours = np.zeros(V, dtype=bool)
        ours[self.ours.allowed_token_ids()] = True
        m = {"ours": ours}
        if self.live["xgrammar"]:
            self.xgr.fill_next_token_bitmask(self._xbuf)
            m["xgrammar"] = _bits(self._xbuf[0].numpy())
        if self.live["llguidance"]:
            m["llguidance"] = _bits(np.frombuffer(self.llg.compute_bitmask(), dtype=np.uint32))
        return m

    def accept(self, t: int, masks: dict[str, np.ndarray]) -> None:
        self.ours.accept_token(t)
        if self.live["xgrammar"]:
            if masks["xgrammar"][t]:
                assert self.xgr.accept_token(t), ("xgrammar rejects a token of its own mask", self.out, t)
            else:
                self.live["xgrammar"] = False
        if self.live["llguidance"]:
            if masks["llguidance"][t]:
                assert self.llg.consume_token(t), ("llguidance rejects a token of its own mask", self.out,
                                                   t, self.llg.get_error())
            else:
                self.live["llguidance"] = False
        if not self.p.special[t]:
            self.out += self.p.token_bytes[t]


@dataclass
class Report:
    case: str
    schema: Any = None
    steps: int = 0
    hits: Counter = field(default_factory=Counter)  # rule -> tokens it explained
    failures: list = field(default_factory=list)  # unexplained differences


def compare(e: Engines, masks: dict[str, np.ndarray], rules: dict[str, tuple[str, ...]], report: Report) -> None:
    p = e.p
    report.steps += 1
    ours = masks["ours"]
    accepting = e.ours.is_accepting()
    ours_eos = bool(ours[p.eos].all())
    assert ours_eos == accepting == bool(ours[p.eos].any()), (report.case, e.out)
    assert not (ours & p.special_not_eos).any()
    mode = lex_mode(e.out)
    for peer in ("xgrammar", "llguidance"):
        if peer not in masks:
            continue
        theirs = masks[peer]
        if bool(theirs[p.eos].all()) != ours_eos:
            report.failures.append((peer, e.out, "EOS", ours_eos))
        forced = e.llg.compute_ff_bytes() if peer == "llguidance" else b""
        step = Step(e.out, mode, forced, report.schema)
        for side, ids in (("ours", ours & ~theirs & ~p.special), ("peer", theirs & ~ours & ~p.special)):
            for t in np.flatnonzero(ids).tolist():
                tok = p.token_bytes[t]
                for name in rules[peer]:
                    r = RULES[name]
                    if r.side == side and r.explains(step, tok):
                        report.hits[name] += 1
                        break
                else:
                    report.failures.append((peer, e.out, f"{side}-only", tok, forced))


# -------------------------------------------------------------------- test


_COMPILED: dict[str, tuple] = {}


def compiled(case: DiffCase, p: Peers) -> tuple:
    if case.id not in _COMPILED:
        ours = compile_grammar(case.schema, p.vocab, syntax="json_schema", whitespace="compact")
        xg = p.xgr_compiler.compile_json_schema(case.schema, any_whitespace=False, separators=(",", ":"),
                                                strict_mode=True)
        lg = llguidance.LLMatcher.grammar_from_json_schema(case.schema, defaults=LLG_DEFAULTS)
        _COMPILED[case.id] = (ours, xg, lg)
    return _COMPILED[case.id]


def instances(case: DiffCase) -> list[bytes]:
    v = validator(case.schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generated = _valid_values(case.schema, None, N_HYPOTHESIS) if case.generate else []
    values = list(case.values) + [x for x in generated if v.is_valid(x)]
    assert all(v.is_valid(x) for x in case.values), case.id
    texts = [json.dumps(reorder(x, case.schema, case.schema), separators=(",", ":"), ensure_ascii=False)
             for x in values]
    return list(dict.fromkeys(t.encode("utf-8") for t in texts))


def run_path(e: Engines, text: bytes, rules: dict, report: Report) -> dict[str, np.ndarray]:
    """Step every engine along ``text`` tokenized greedily through our mask; compare at each step."""
    p = e.p
    pos = 0
    while True:
        masks = e.masks()
        compare(e, masks, rules, report)
        if pos == len(text):
            return masks
        for n in range(min(p.max_len, len(text) - pos), 0, -1):
            t = p.by_bytes.get(text[pos : pos + n])
            if t is not None and masks["ours"][t]:
                break
        else:
            raise AssertionError(f"{report.case}: no allowed token at {text[:pos]!r} | {text[pos:]!r}")
        e.accept(t, masks)
        pos += n


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_masks_match_peers(case: DiffCase, peers: Peers) -> None:
    p = peers
    ours, xg, lg = compiled(case, p)
    rules = {peer: GLOBAL_RULES[peer] + tuple(r for r in CASE_RULES.get(case.id, ()) if RULES[r].peer == peer)
             for peer in ("xgrammar", "llguidance")}
    report = Report(case.id, case.schema)
    left: Counter = Counter()
    # (a) valid instances, greedy through our allowed tokens
    for text in instances(case):
        e = Engines(p, ours, xg, lg)
        masks = run_path(e, text, rules, report)
        assert e.ours.is_accepting(), (case.id, text)
        for peer, live in e.live.items():
            left[peer] += not live
            if live:
                assert masks[peer][p.eos].all(), (peer, case.id, text)
    for prefix in case.prefixes:
        run_path(Engines(p, ours, xg, lg), prefix, rules, report)
    # (b) random walks through the tokens every engine allows
    rng = np.random.default_rng([SEED, sum(case.id.encode())])
    for _ in range(N_WALKS):
        e = Engines(p, ours, xg, lg)
        for step in range(WALK_TOKENS):
            masks = e.masks()
            compare(e, masks, rules, report)
            common = masks["ours"].copy()
            for peer in ("xgrammar", "llguidance"):
                common &= masks[peer]
            if common[p.eos].all() and (step >= CLOSE_AFTER or rng.random() < 0.2):
                break
            eos_common = bool(common[p.eos].all())
            common &= ~p.special
            ids = np.flatnonzero(common)
            if not ids.size:
                assert eos_common, (case.id, "no token every engine allows", e.out)
                break
            bias = p.closing if step >= CLOSE_AFTER else p.structural
            if rng.random() < (0.8 if step >= CLOSE_AFTER else 0.5) and bias[ids].any():
                ids = ids[bias[ids]]
            e.accept(int(ids[rng.integers(ids.size)]), masks)
            assert all(e.live.values())
    print(f"{case.id}: {report.steps} steps, differences explained {dict(report.hits)}, "
          f"instances that left lock-step {dict(left)}")
    assert not report.failures, (case.id, report.failures[:10], len(report.failures))
    for name in CASE_RULES.get(case.id, ()):
        assert report.hits[name], f"{case.id}: listed difference {name} was never observed (stale entry?)"


def test_global_rules_are_observed(peers: Peers) -> None:
    """Every peer-wide rule shows up on a small schema along fixed paths (else the list is stale)."""
    case = DiffCase("global", {**OBJ, "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
                               "required": ["name", "n"]}, ())
    ours, xg, lg = compiled(case, peers)
    report = Report(case.id, case.schema)
    for path in (b'{"name":"a\\u', b'{"name":"","n":-'):
        e = Engines(peers, ours, xg, lg)
        run_path(e, path, GLOBAL_RULES, report)
        assert e.out == path and all(e.live.values())
    assert not report.failures, report.failures[:5]
    for peer, names in GLOBAL_RULES.items():
        for name in names:
            assert report.hits[name], (name, dict(report.hits))
