"""JSON Schema round trip at TOKEN level, with the real Llama-3 vocabulary.

Every schema of ``test_frontend_json_schema.SCHEMAS`` (61, every keyword the
front end supports, deep recursion and a 1,000-value enum included) is compiled
ONCE per session for Llama-3 (``_COMPILED``, a module-level cache), in
``whitespace="compact"`` unless the catalogue fixes a layout (``compact``,
``indent=2``, ``any_order``), plus a few extra layouts of the same schemas
(``@flexible``: ``whitespace="flexible"``, ``@indent2``: ``indent=2``). Then:

* ``test_random_walks``: 50 seeded walks per schema, each choosing among
  ``Matcher.allowed_token_ids()`` until EOS or ``BUDGET`` tokens. At every step
  the walk must not be stuck (a non-finished matcher allows some token), EOS is
  allowed exactly when ``is_accepting()``, the chosen token is accepted, and
  (every ``REJECT_EVERY`` steps) a random token outside the mask is rejected.
  Every finished output must be UTF-8, parse as JSON and validate with
  ``jsonschema`` (Draft 2020-12 unless the schema names another draft, format
  checking on); in ``compact`` and ``indent`` modes its layout must be exactly
  ``json.dumps``' (``skeleton``: strings and numbers blanked out).
  At least ``MIN_FINISHED`` (60%) of the walks of every schema must finish;
  the unfinished ones are counted and reported (they are valid prefixes: the
  matcher accepted every token and never got stuck).
* ``test_valid_instances``: 20 valid instances per schema (the catalogue's
  generator, else hypothesis-jsonschema ``from_schema`` derandomized; declared
  properties in schema order unless ``any_order``; serialized in the grammar's
  layout; ``@flexible`` cases add random whitespace) are tokenized greedily
  (the longest allowed token whose bytes match the text at the current
  position; one must exist at every step), and EOS must be allowed at the end
  and finish the matcher. Schemas whose language has fewer than 20 texts
  (``null``, ``boolean``, small enums) use all of them.

The sampler (documented bias; a uniform walk over 128k tokens stays inside a
string or a number almost forever, and never guesses a required key of an open
object). Walk ``w`` uses policy ``w % 5``:

* 0 ``uniform``: uniform over the allowed tokens;
* 1 ``structural``: with probability 1/2 among the allowed tokens holding a
  JSON structural byte ``"{}[],:`` (or EOS), else uniform;
* 2-4 ``instance``: with probability 7/10 what the greedy tokenizations of
  the schema's valid instances did here ("a model that has seen data of this
  schema": it spells required keys and enum values): the tokens they took in
  this parser state if they went through it, else the allowed tokens that
  came after the same last two bytes in them (``,"`` → a required key),
  drawn by how often they did; else as ``structural``. For ``any_order``
  schemas the instances' keys are shuffled (also tested by
  ``test_valid_instances``).

All policies switch to a closing phase after ``LATE`` tokens: EOS with
probability 1/2 whenever it is allowed; else with probability 1/2 what the
instances did here, as above (an open object that still lacks a required key
can only close by spelling it); else with
probability 4/5 among the allowed tokens that leave the least to close
(smallest nesting depth after the token, then outside a string, then holding
a structural byte so numbers and literals end; each token's lexical effect is
precomputed, ``_lexical_effects``), else uniform. Every choice is still among the
allowed tokens, so soundness is checked on every walk alike.

Duplicate keys (``{"x":1,"x":2}`` under ``additionalProperties``) are outside
what the grammar excludes (documented in the front end): such outputs are
counted, not validated.
"""
from __future__ import annotations

import json
import random
import re
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from test_frontend_json_schema import (
    SCHEMAS,
    _Duplicate,
    _no_duplicates,
    _valid_values,
    dumps,
    reorder,
    validator,
)

from kbnf_gpu import Matcher, compile_grammar
from kbnf_gpu.errors import TokenRejected
from kbnf_gpu.frontends.json_schema import JsonSchemaWarning

import jsonschema  # noqa: F401  (a test extra: fail loudly if missing)
import hypothesis_jsonschema  # noqa: F401  (a test extra: fail loudly if missing)

pytestmark = pytest.mark.slow

N_WALKS = 50
BUDGET = 300  # tokens per walk
LATE = 120  # closing phase starts here
MIN_FINISHED = 0.6
N_INSTANCES = 20
REJECT_EVERY = 7
SEED = 20250611

# languages with fewer than N_INSTANCES values (all of them are used)
SMALL_LANGUAGES = {"boolean", "null", "int-float-bounds", "enum-mixed", "const-object", "enum-with-type", "all-of-numbers"}

# extra layouts of catalogue schemas: id -> {suffix: options}
EXTRA_LAYOUTS: dict[str, dict[str, dict]] = {
    "object-required": {"flexible": {"whitespace": "flexible"}},
    "recursive-tree": {"flexible": {"whitespace": "flexible"}, "indent2": {"indent": 2}},
    "any-of": {"flexible": {"whitespace": "flexible"}},
    "enum-mixed": {"flexible": {"whitespace": "flexible"}},
    "nested-array-objects": {"flexible": {"whitespace": "flexible", "max_whitespace": 8}},
    "true-schema": {"flexible": {"whitespace": "flexible", "max_whitespace": 8}},
}


@dataclass
class Case:
    id: str
    schema: Any
    opts: dict  # front-end options (whitespace / indent / any_order)
    gen: Any  # generator of valid values, or None for hypothesis-jsonschema

    @property
    def layout(self) -> str:
        if self.opts.get("indent") is not None:
            return "indent"
        return self.opts.get("whitespace", "flexible")


def _cases() -> list[Case]:
    out = []
    for id, schema, opts, _invalid, gen in SCHEMAS:
        base = dict(opts)
        if "indent" not in base:
            base.setdefault("whitespace", "compact")
        out.append(Case(id, schema, base, gen))
        for suffix, extra in EXTRA_LAYOUTS.get(id, {}).items():
            o = {k: v for k, v in opts.items() if k == "any_order"}
            o.update(extra)
            out.append(Case(f"{id}@{suffix}", schema, o, gen))
    return out


CASES = _cases()
assert len(CASES) >= 40


# ------------------------------------------------------- shared, cached state


@dataclass
class VocabInfo:
    vocab: Any
    eos: np.ndarray
    special: np.ndarray  # bool [V]
    structural: np.ndarray  # bool [V]: a byte of "{}[],: (or EOS)
    token_bytes: list
    by_bytes: dict  # bytes -> id (normal tokens)
    max_len: int
    # JSON lexical effect of each token from each mode (OUT of a string, IN one, after a backslash):
    # end_mode[mode, t] and depth_delta[mode, t] (net change of the {}/[] nesting depth)
    end_mode: np.ndarray
    depth_delta: np.ndarray


_VOCAB: list[VocabInfo] = []


def vocab_info(vocab) -> VocabInfo:
    if not _VOCAB:
        matrix, lengths = vocab.token_matrix()
        cols = np.arange(matrix.shape[1])[None, :] < lengths[:, None]

        def holding(chars: bytes) -> np.ndarray:
            mask = (np.isin(matrix, np.frombuffer(chars, dtype=np.uint8)) & cols).any(axis=1)
            mask[list(vocab.eos_ids)] = True
            return mask

        special = np.zeros(vocab.size, dtype=bool)
        special[list(vocab.special_ids)] = True
        token_bytes = [vocab.token_bytes(i) for i in range(vocab.size)]
        by_bytes: dict[bytes, int] = {}
        for i in np.flatnonzero(lengths).tolist():
            by_bytes.setdefault(token_bytes[i], i)
        end_mode, depth_delta = _lexical_effects(token_bytes, holding(b'"{}[]\\'))
        _VOCAB.append(VocabInfo(vocab, np.array(vocab.eos_ids, dtype=np.int32), special, holding(b'"{}[],:'),
                                token_bytes, by_bytes, int(lengths.max()), end_mode, depth_delta))
    return _VOCAB[0]


OUT, IN, ESC = 0, 1, 2


def _lex(mode: int, depth: int, data: bytes) -> tuple[int, int]:
    for b in data:
        if mode == OUT:
            if b == 0x22:
                mode = IN
            elif b in b"{[":
                depth += 1
            elif b in b"}]":
                depth -= 1
        elif mode == IN:
            if b == 0x5C:
                mode = ESC
            elif b == 0x22:
                mode = OUT
        else:
            mode = IN
    return mode, depth


def _lexical_effects(token_bytes: list, interesting: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    size = len(token_bytes)
    end_mode = np.repeat(np.array([[OUT], [IN], [IN]], dtype=np.int8), size, axis=1)
    end_mode[ESC, [i for i, b in enumerate(token_bytes) if not b]] = ESC
    depth_delta = np.zeros((3, size), dtype=np.int16)
    for t in np.flatnonzero(interesting).tolist():
        data = token_bytes[t] or b""
        for mode in (OUT, IN, ESC):
            end_mode[mode, t], depth_delta[mode, t] = _lex(mode, 0, data)
    return end_mode, depth_delta


@dataclass
class Compiled:
    case: Case
    compiled: Any
    compile_s: float
    allowed: dict = field(default_factory=dict)  # state -> sorted allowed ids (states are never reused)
    subsets: dict = field(default_factory=dict)  # (state, kind) -> ids
    texts: list = field(default_factory=list)  # valid instance texts
    # what the valid instances' tokenizations did, as (ids, probabilities by count):
    hints: dict = field(default_factory=dict)  # state -> the tokens taken in that state
    follows: dict = field(default_factory=dict)  # last 2 bytes of the output -> the tokens that came next

    def hint(self, state: int, context: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        """What the instances did here: their tokens in this state, else after these bytes."""
        hit = self.hints.get(state)
        if hit is not None:
            return hit
        key = (state, context)
        if key not in self.subsets:
            after = self.follows.get(context)
            if after is not None:
                keep = np.isin(after[0], self.allowed[state])
                after = (after[0][keep], after[1][keep] / after[1][keep].sum()) if keep.any() else None
            self.subsets[key] = after
        return self.subsets[key]

    def allowed_ids(self, m: Matcher) -> np.ndarray:
        hit = self.allowed.get(m.state)
        if hit is None:
            hit = self.allowed[m.state] = m.allowed_token_ids()
        return hit


_COMPILED: dict[str, Compiled] = {}


def compiled_case(case: Case, vocab) -> Compiled:
    hit = _COMPILED.get(case.id)
    if hit is None:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JsonSchemaWarning)
            compiled = compile_grammar(case.schema, vocab, syntax="json_schema", **case.opts)
        hit = _COMPILED[case.id] = Compiled(case, compiled, time.perf_counter() - t0)
        hit.texts = instance_texts(case)
        info = vocab_info(vocab)
        hints: dict[int, Counter] = {}
        follows: dict[bytes, Counter] = {}
        for text in hit.texts:
            done = b""
            for t in greedy_tokenize(hit, info, text.encode("utf-8"), hints) + [int(info.eos[0])]:
                follows.setdefault(done[-2:], Counter())[t] += 1
                done += info.token_bytes[t]
        hit.hints = {state: _distribution(counts) for state, counts in hints.items()}
        hit.follows = {t: _distribution(counts) for t, counts in follows.items()}
    return hit


def _distribution(counts: Counter) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array(sorted(counts), dtype=np.int32)
    weights = np.array([counts[i] for i in ids.tolist()], dtype=np.float64)
    return ids, weights / weights.sum()


def _shuffled_keys(v: Any, rnd: random.Random) -> Any:
    if isinstance(v, dict):
        keys = list(v)
        rnd.shuffle(keys)
        return {k: _shuffled_keys(v[k], rnd) for k in keys}
    if isinstance(v, list):
        return [_shuffled_keys(x, rnd) for x in v]
    return v


def instance_texts(case: Case) -> list[str]:
    """``N_INSTANCES`` valid texts in the case's layout (all of them when the language is smaller)."""
    v = validator(case.schema)
    values = [x for x in _valid_values(case.schema, case.gen, N_INSTANCES + 5) if v.is_valid(x)]
    rnd = random.Random(SEED)
    if case.opts.get("any_order"):
        values = [_shuffled_keys(x, rnd) for x in values]
    else:
        values = [reorder(x, case.schema, case.schema) for x in values]
    assert values, case.id
    mode = {"indent": case.opts["indent"]} if case.layout == "indent" else {"whitespace": case.layout}
    texts: list[str] = []
    for i, x in enumerate(values[:N_INSTANCES]):
        # flexible: every other instance with random whitespace in every gap
        texts.append(dumps(x, mode, rnd=rnd if case.layout == "flexible" and i % 2 else None))
    while case.layout == "flexible" and len(set(texts)) < N_INSTANCES:
        texts.append(dumps(rnd.choice(values), mode, rnd=rnd))
    return texts


# ------------------------------------------------------------------ helpers


def greedy_tokenize(c: Compiled, info: VocabInfo, text: bytes, hints: dict | None = None) -> list[int]:
    """Longest allowed token matching ``text`` at each position; ends in an accepting state.

    ``hints``, when given, counts state -> tokens taken there (EOS at the end).
    """
    m = Matcher(c.compiled)
    out: list[int] = []
    pos = 0
    while pos < len(text):
        allowed = c.allowed_ids(m)
        assert allowed.size, (c.case.id, text[:pos])
        for n in range(min(info.max_len, len(text) - pos), 0, -1):
            t = info.by_bytes.get(text[pos : pos + n])
            if t is not None:
                k = np.searchsorted(allowed, t)
                if k < allowed.size and allowed[k] == t:
                    break
        else:
            raise AssertionError(f"{c.case.id}: no allowed token matches {text[pos:pos + 20]!r} after {text[:pos]!r}")
        if hints is not None:
            hints.setdefault(m.state, Counter())[t] += 1
        m.accept_token(t)
        out.append(t)
        pos += n
    allowed = c.allowed_ids(m)
    assert m.is_accepting() and np.isin(info.eos, allowed).all(), (c.case.id, text)
    if hints is not None:
        hints.setdefault(m.state, Counter())[int(info.eos[0])] += 1
    m.accept_token(int(info.eos[0]))
    assert m.is_finished() and m.allowed_token_ids().size == 0
    return out


_NUMBER = re.compile(r"-?Infinity|NaN|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def skeleton(text: str) -> str:
    """The layout of a JSON text: every string literal becomes ``""`` and every number ``0``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
            continue
        out.append(ch)
        i += 1
    return _NUMBER.sub("0", "".join(out))


def _subset(c: Compiled, state: int, kind: str, allowed: np.ndarray, mask: np.ndarray) -> np.ndarray:
    key = (state, kind)
    hit = c.subsets.get(key)
    if hit is None:
        hit = c.subsets[key] = allowed[mask[allowed]]
    return hit


# -------------------------------------------------------------------- tests


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_valid_instances(case: Case, llama3_vocab) -> None:
    """Valid instances are accepted token by token (greedy tokenization) and EOS ends them."""
    c = compiled_case(case, llama3_vocab)
    info = vocab_info(llama3_vocab)
    n = len(c.texts)
    assert n >= N_INSTANCES or (case.layout != "flexible" and case.id in SMALL_LANGUAGES), (case.id, n)
    for text in c.texts:
        tokens = greedy_tokenize(c, info, text.encode("utf-8"))
        assert b"".join(info.token_bytes[t] for t in tokens) == text.encode("utf-8")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_random_walks(case: Case, llama3_vocab) -> None:
    """Seeded constrained walks: never stuck, EOS iff accepting, every finished output validates."""
    c = compiled_case(case, llama3_vocab)
    info = vocab_info(llama3_vocab)
    eos, eos_set = info.eos, set(info.eos.tolist())
    v = validator(case.schema)
    rng = np.random.default_rng([SEED, sum(case.id.encode())])
    finished = unfinished = duplicates = 0
    by_policy = [0] * 5
    lengths: list[int] = []
    t0 = time.perf_counter()
    for w in range(N_WALKS):
        policy = w % 5
        m = Matcher(c.compiled)
        out = bytearray()
        mode = OUT  # JSON lexical mode at the end of out (see _lex)
        for step in range(BUDGET):
            state = m.state
            allowed = c.allowed_ids(m)
            assert allowed.size, f"{case.id}: walk {w} stuck after {bytes(out)!r}"
            eos_allowed = bool(np.isin(eos, allowed).all())
            assert eos_allowed == m.is_accepting() == bool(np.isin(eos, allowed).any()), (case.id, bytes(out))
            pick = allowed
            r = rng.random()
            if step >= LATE:
                if eos_allowed and rng.random() < 0.5:
                    pick = eos
                elif r < 0.5 and (hint := c.hint(state, bytes(out[-2:]))) is not None:
                    pick = hint
                elif r < 0.9:
                    # the allowed tokens that leave the least to close: nesting depth, then
                    # string, then one that ends a lexeme (holds a structural byte)
                    score = (4 * info.depth_delta[mode, allowed] + 2 * (info.end_mode[mode, allowed] != OUT)
                             - info.structural[allowed])
                    pick = allowed[score == score.min()]
            elif policy >= 2 and r < 0.7 and (hint := c.hint(state, bytes(out[-2:]))) is not None:
                pick = hint
            elif policy >= 1 and rng.random() < 0.5:
                pick = _subset(c, state, "structural", allowed, info.structural)
            if isinstance(pick, tuple):
                t = int(rng.choice(pick[0], p=pick[1]))
            else:
                if not pick.size:
                    pick = allowed
                t = int(pick[rng.integers(pick.size)])
            if step % REJECT_EVERY == 0:
                # the mask is complete for this token: a token outside it must be rejected
                other = int(rng.integers(llama3_vocab.size))
                k = np.searchsorted(allowed, other)
                if not (k < allowed.size and allowed[k] == other):
                    with pytest.raises(TokenRejected):
                        m.accept_token(other)
                    assert m.state == state
            m.accept_token(t)
            if t in eos_set:
                assert m.is_finished() and m.allowed_token_ids().size == 0
                break
            out += info.token_bytes[t]
            mode = int(info.end_mode[mode, t])
        lengths.append(len(out))
        if not m.is_finished():
            unfinished += 1
            continue
        finished += 1
        by_policy[policy] += 1
        text = out.decode("utf-8")  # a finished output is complete UTF-8
        try:
            value = json.loads(text, object_pairs_hook=_no_duplicates)
        except _Duplicate:
            duplicates += 1
            continue
        assert v.is_valid(value), (case.id, text)
        # the layout is exactly the mode's: json.dumps' layout (compact or indent), up to
        # the spelling of strings and numbers
        if case.layout == "compact":
            assert skeleton(text) == skeleton(json.dumps(value, separators=(",", ":"))), (case.id, text)
        elif case.layout == "indent":
            assert skeleton(text) == skeleton(json.dumps(value, indent=case.opts["indent"])), (case.id, text)
    elapsed = time.perf_counter() - t0
    print(f"{case.id}: compile {c.compile_s:.2f}s, walks {elapsed:.2f}s, {finished}/{N_WALKS} finished "
          f"(by policy {by_policy}; {unfinished} unfinished at {BUDGET} tokens, {duplicates} with duplicate keys), "
          f"mean {np.mean(lengths):.0f} bytes, {len(c.allowed)} states")
    assert finished >= MIN_FINISHED * N_WALKS, (case.id, finished, unfinished)
