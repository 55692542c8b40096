"""The runtime's context machinery against exact oracles.

* masks computed on truncated contexts (and resolved deeper, then on the full
  state) equal the exact reference walk at every nesting depth, including
  tokens that close several brackets at once;
* ``step_token`` (lexeme-level walk) equals byte-by-byte stepping;
* parser states and sets are freed when nothing uses them (memory stays
  bounded in a long-running process); the memo tables are bounded;
* fusing runs of adjacent terminals keeps the language.
"""
from __future__ import annotations

import gc
import itertools
import random
import weakref
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnf_oracle import BnfOracle
from kbnf_gpu import CompileConfig, Matcher, Vocabulary, compile_grammar, ir
from kbnf_gpu.grammars import JSON_KBNF
from kbnf_gpu.normalize import NormalizeConfig, normalize
from kbnf_gpu.caches import GenerationalCache, WeakTable
from kbnf_gpu.runtime.earley import DEAD, SELF, TOP, EarleyParser, is_dead
from kbnf_gpu.runtime.masks import RESOLUTION_STAGES, TRUNCATION_DEPTH

# structural tokens that close (or open) several containers at once, and a few plain ones
BRACKET_TOKENS = [
    "{", "}", "[", "]", "}}", "]]", "}]", "]}", "}},", "]],", "}],", "]},", "}]}", "]]]", "}}}", "]]]]", "}}}}",
    '"}', '"]', '"}]', '"]]', '"}}', '"]}]', "1]]", "1}]", "1}}}", "[[", "[[[", "[{", '[{"', '{"a":', '{"a": [',
    '"a"', '":', '": ', ",", ", ", ',"a":', ", [", ",[", "1", "12", '"', "a", " ", "\n", "true", "null]]", "]]]],",
    "}];", "]);", " ]]", " }}", "]}\n",
    "]]]]]]]]", "}}}}}}}}", "]]]]]]]]]]]]", "}}}}}}}}}}}}",  # closing more than every truncation stage reaches
]


@pytest.fixture(scope="module")
def bracket_vocab() -> Vocabulary:
    tokens = {i: t.encode() for i, t in enumerate(BRACKET_TOKENS)}
    eos = len(tokens)
    tokens[eos] = b"</s>"
    return Vocabulary(tokens, special_ids=[eos], eos_ids=[eos])


@pytest.fixture(scope="module")
def bracket_json(bracket_vocab):
    return compile_grammar(JSON_KBNF, bracket_vocab, syntax="kbnf", end_mode="eos")


def _deep_walk(compiled, rng: random.Random, steps: int, open_bias: float) -> int:
    """A random walk through allowed tokens (biased to open containers); masks ≡ reference at every step."""
    vocab = compiled.vocab
    m = Matcher(compiled)
    deepest = depth = 0
    for _ in range(steps):
        allowed = m.allowed_token_ids()
        reference = compiled.reference_allowed_ids(m.state)
        assert allowed.tolist() == reference.tolist(), (depth, m.num_tokens)
        choices = [t for t in allowed.tolist() if t not in vocab.eos_ids]
        if not choices:
            break
        opening = [t for t in choices if vocab.token_bytes(t).count(b"[") + vocab.token_bytes(t).count(b"{") >
                   vocab.token_bytes(t).count(b"]") + vocab.token_bytes(t).count(b"}")]
        token = rng.choice(opening if opening and rng.random() < open_bias else choices)
        data = vocab.token_bytes(token)
        depth += data.count(b"[") + data.count(b"{") - data.count(b"]") - data.count(b"}")
        deepest = max(deepest, depth)
        m.accept_token(token)
    return deepest


def test_masks_are_exact_beyond_every_truncation_depth(bracket_json, monkeypatch):
    builder = bracket_json._masks
    resolving: list = []  # the full state whose mask ``_resolve`` is settling
    settled_on_full: list[int] = []  # candidates that only the full state settled viable
    real_check, real_resolve = builder._check, builder._resolve

    def check(state, candidates):
        alive, unknown = real_check(state, candidates)
        if resolving and state is resolving[-1] and alive:
            settled_on_full.append(len(alive))
        return alive, unknown

    def resolve(state, unknown):
        resolving.append(state)
        try:
            return real_resolve(state, unknown)
        finally:
            resolving.pop()

    monkeypatch.setattr(builder, "_check", check)
    monkeypatch.setattr(builder, "_resolve", resolve)
    rng = random.Random(1)
    deepest = 0
    for walk in range(24):
        deepest = max(deepest, _deep_walk(bracket_json, rng, steps=90, open_bias=0.75 if walk % 2 else 0.45))
    # deeper than the truncation and every deeper resolution stage: the exact fallback on full states ran too,
    # for the long closers, and found viable tokens
    assert deepest > TRUNCATION_DEPTH + max(RESOLUTION_STAGES)
    assert settled_on_full


def _context_tree(parser, origin: int, depth: int):
    """The set ``origin`` as a tree: its items with every origin replaced by that set's tree, ``depth`` levels
    deep (``"TOP"`` below); equal trees are equal truncations, whatever the uids."""
    if origin == SELF:
        return "SELF"
    earley_set = parser.set_of(origin)
    if depth <= 0 or earley_set is TOP:
        return "TOP"
    waiting = sorted((sym, sorted(repr((p, _context_tree(parser, o, depth - 1))) for p, o in items))
                     for sym, items in earley_set.waiting.items())
    leo = sorted((sym, y, repr(_context_tree(parser, o, depth - 1))) for sym, (y, o) in earley_set.leo.items())
    return waiting, leo


def _state_tree(parser, state, depth: int):
    """The state as a tree (``truncated(state, depth)`` keeps ``depth - 1`` levels of its origin sets)."""
    return sorted(repr((p, _context_tree(parser, o, depth - 1), t, q)) for p, o, t, q in state.pairs), state.accepting


def test_truncation_depth_outside_the_memo_key_range_is_refused(bracket_json):
    parser = bracket_json.parser
    for depth in (-1, 256, 10**6):
        with pytest.raises(ValueError, match="truncation depth"):
            parser.truncated(parser.initial_state, depth)
    assert parser.truncated(parser.initial_state, 255) is not None


def test_truncation_memo_by_shape_equals_cutting_each_set(bracket_json):
    """``truncated`` memoizes by a set's shape and its parents' truncations (shared across sets and states of
    other documents): every truncation along deep walks equals cutting the full state's own sets."""
    parser = bracket_json.parser
    rng = random.Random(7)
    checked = 0
    for _ in range(6):
        m = Matcher(bracket_json)
        for _ in range(60):
            state = m.state
            for depth in (1, 2, TRUNCATION_DEPTH, *(TRUNCATION_DEPTH + levels for levels in RESOLUTION_STAGES)):
                cut = parser.truncated(state, depth)
                assert _state_tree(parser, cut, 99) == _state_tree(parser, state, depth)
                checked += 1
            choices = [t for t in m.allowed_token_ids().tolist() if t not in bracket_json.vocab.eos_ids]
            if not choices:
                break
            m.accept_token(rng.choice(choices))
    assert checked > 500


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["[", "{\"a\":", "1", ",", "]", "}"]), max_size=40))
def test_masks_are_exact_on_arbitrary_prefixes(bracket_json, pieces):
    """Any byte prefix: fed as bytes, then the mask must equal the reference (whatever the nesting)."""
    m = Matcher(bracket_json)
    for piece in pieces:
        try:
            m.accept_bytes(piece.encode())
        except Exception:
            continue  # not viable here: the state is unchanged
    assert m.allowed_token_ids().tolist() == bracket_json.reference_allowed_ids(m.state).tolist()


# ------------------------------------------------------------- step_token


TERMINALS = [ir.Literal(b"a"), ir.Literal(b"ab"), ir.Pattern("a*"), ir.Pattern("[ab]"), ir.Pattern("(ab)+b?"),
             ir.Literal(b"")]


@st.composite
def grammars(draw):
    names = ["s", "x", "y"]
    symbol = st.one_of(st.sampled_from(names[1:]).map(ir.Ref), st.sampled_from(TERMINALS).map(ir.Terminal))
    rules = []
    for name in names:
        alts = draw(st.lists(st.lists(symbol, max_size=3), min_size=1, max_size=3))
        alts.append([ir.Terminal(draw(st.sampled_from(TERMINALS[:2])))])  # productive
        rules.append(ir.Rule(name, ir.Choice(tuple(ir.Sequence(tuple(a)) for a in alts))))
    return ir.Grammar(tuple(rules), start="s", syntax="test")


@settings(max_examples=80, deadline=None)
@given(grammars(), st.lists(st.binary(min_size=1, max_size=4).map(lambda b: bytes(97 + (c % 2) for c in b)),
                            min_size=1, max_size=5))
def test_step_token_equals_byte_steps(grammar, chunks):
    parser = EarleyParser(normalize(grammar, NormalizeConfig(fuse=False)))
    a = b = parser.initial_state
    for chunk in chunks:
        a, passed_a = parser.step_token(a, chunk)
        b, passed_b, _ = parser.step_bytes(b, chunk)
        assert a is b and passed_a == passed_b
        if a is DEAD:
            break


# ---------------------------------------------------------------- memory


def test_unused_states_and_sets_are_freed(bracket_json):
    compiled = compile_grammar(JSON_KBNF, bracket_json.vocab, syntax="kbnf", end_mode="eos",
                               config=CompileConfig(memo_limit=64, mask_cache_limit=64))
    rng = random.Random(5)
    peak = 0
    for _ in range(30):
        _deep_walk(compiled, rng, steps=40, open_bias=0.6)
        peak = max(peak, compiled.parser.n_states)
    stats = compiled.cache_stats()
    # bounded memo tables: 2 generations each, every one of them full at most
    tables = compiled.parser.memo_tables()
    assert all(len(table) <= 2 * 64 for table in tables)
    assert stats["memo_entries"] == sum(map(len, tables))
    # with nothing but bounded caches referring to them, states are bounded too (not one per step ever taken)
    gc.collect()
    assert compiled.parser.n_states <= peak
    assert compiled.parser.n_states < 30 * 40


def test_a_closure_memo_hit_whose_set_was_freed_builds_the_set_again(bracket_json):
    """``_kernel_memo`` keeps a set's uid, not the set: once nothing else holds the set it is freed, and a later
    hit must build it again (the memoized pairs start in it). Parsing then goes on exactly: at every prefix the
    bytes that keep the parse alive are a fresh parser's."""
    parser = EarleyParser(bracket_json.parser.grammar)
    data = b'{"a": [1, {"a": 12}, []], "b": {"c": [true, null]}}'
    state = parser.initial_state
    for byte in data:
        state = parser.step_byte(state, byte)
    assert state.accepting
    before = {key: entry[0] for key, entry in parser._kernel_memo.items()}
    del state
    for table in (parser._byte_memo, parser._states, parser._trunc_memo, parser._cut_memo):
        table.clear()  # everything that held the sets but the closure memo, which keeps their uids
    gc.collect()
    freed = {key for key, uid in before.items() if parser._set_by_uid.get(uid) is None}
    assert freed, "no set was freed"
    fresh = EarleyParser(bracket_json.parser.grammar)
    state, reference = parser.initial_state, fresh.initial_state
    for byte in data:
        state, reference = parser.step_byte(state, byte), fresh.step_byte(reference, byte)
        alive = [b for b in range(256) if not is_dead(parser.step_byte(state, b))]
        assert alive == [b for b in range(256) if not is_dead(fresh.step_byte(reference, b))]
        assert state.accepting == reference.accepting
    memo = parser._kernel_memo
    rebuilt = [key for key in freed if memo[key] is not None and memo[key][0] != before[key]]
    assert rebuilt, "no hit found its set freed"


def test_a_state_whose_origin_set_was_freed_is_refused_not_built(bracket_json):
    """A new state looks its origin sets up by uid; if one died (a caller bug), interning raises instead of
    building a state that would resolve the dead uid later, or never."""
    parser = EarleyParser(bracket_json.parser.grammar)
    earley_set, scan_pairs, _, _, _ = parser._build_set(((0, SELF),))
    pairs = tuple((p, o, t, q) for p, o, t, q in scan_pairs if o == earley_set.uid)
    assert pairs
    gone = EarleyParser(bracket_json.parser.grammar)  # a second parser's set: same uid space, about to die
    other, _, _, _, _ = gone._build_set(((0, SELF),))
    parser._set_by_uid[other.uid] = other  # published here too, then freed
    dead_pairs = tuple((p, other.uid, t, q) for p, _, t, q in pairs)
    del other, gone
    gc.collect()
    with pytest.raises(RuntimeError, match="origin set was freed"):
        parser._intern_state(dead_pairs, False, False)


def test_the_garbage_collector_tracks_only_the_parsers_states_and_sets(bracket_vocab):
    """After a run, what the parser and its memo tables keep that the garbage collector still tracks is the
    states, the sets, the sets' weak references and the masks: items, pairs, set contents and memo entries are
    tuples of ints at most two levels deep, which it stops tracking. A full collection's pause grows with what
    it tracks (nested tuples, a dict per set and a weak reference per state were 2.4 times as many objects
    after 200 JSON documents, 11 ms of pause against 3.5)."""
    compiled = compile_grammar(JSON_KBNF, bracket_vocab, syntax="kbnf", end_mode="eos", eager=True)
    rng = random.Random(11)
    _deep_walk(compiled, rng, steps=40, open_bias=0.6)  # what the first masks build once (their tables) is kept
    gc.collect()
    gc.freeze()  # what exists before the run is left out of ``gc.get_objects()``
    try:
        for _ in range(30):
            _deep_walk(compiled, rng, steps=40, open_bias=0.6)
        gc.collect()
        gc.collect()
        tracked = gc.get_objects()
    finally:
        gc.unfreeze()
    kinds = Counter(type(o).__name__ for o in tracked)
    kept = kinds["ParserState"] + kinds["EarleySet"]
    assert kept > 300, kinds  # the run built many
    referents = Counter(type(o()).__name__ for o in tracked if type(o) is weakref.ReferenceType)
    assert set(referents) <= {"EarleySet", "NoneType"}, referents  # sets alone are held weakly (dead: not yet swept)
    others = sum(kinds.values()) - kept - kinds["ReferenceType"] - kinds["Mask"]
    assert others <= 100, kinds.most_common(12)


def test_masks_are_interned_by_content(bracket_json):
    """States with the same allowed set share one Mask (and so one packed bitset), bounded by mask_cache_limit."""
    compiled = compile_grammar(JSON_KBNF, bracket_json.vocab, syntax="kbnf", end_mode="eos",
                               config=CompileConfig(mask_cache_limit=16))
    rng = random.Random(9)
    by_content: dict = {}
    states = 0
    for _ in range(12):
        m = Matcher(compiled)
        for _ in range(30):
            mask = compiled.mask(m.state)
            bits = compiled.allowed_bitset(m.state)
            assert np.array_equal(np.flatnonzero(np.unpackbits(bits.view(np.uint8), bitorder="little")),
                                  compiled.reference_allowed_ids(m.state))
            key = (mask.rows.tobytes(), mask.extras.tobytes())
            seen = by_content.setdefault(key, mask)
            if len(by_content) <= 16:  # within the bound, equal content is the same object
                assert seen is mask
            states += 1
            choices = [t for t in m.allowed_token_ids().tolist() if t not in compiled.vocab.eos_ids]
            if not choices:
                break
            m.accept_token(rng.choice(choices))
    assert compiled.cache_stats()["distinct_masks"] <= 2 * 16
    assert len(by_content) < states


def test_generational_cache_is_bounded_and_keeps_recent_entries():
    cache = GenerationalCache(4)
    for i in range(100):
        cache.put(i, str(i))
        assert cache[i] == str(i)
    assert len(cache) <= 8
    assert cache[99] == "99" and cache[0] is None
    cache.put("old", 1)
    for i in range(4):
        cache.put(("filler", i), i)
    assert cache["old"] == 1  # found in the old generation and promoted
    for i in range(4):
        cache.put(("more", i), i)
    assert cache["old"] == 1


class _Value:
    """A weakly referable cache value (to see when a cache lets go of it)."""


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 60)), max_size=80))
def test_weighted_memo_holds_at_most_its_limit_and_the_most_recent(calls):
    """``WeightedMemo`` against a model LRU bounded by weight: a lookup finds what the model holds; the
    weight held never passes the limit; what it holds is what a least-recently-used list by weight holds; an
    entry heavier than the limit is never held."""
    from kbnf_gpu.caches import WeightedMemo

    limit = 50
    memo = WeightedMemo(limit)
    model: list[tuple[int, int]] = []  # (key, weight), least recently used first
    made = []
    misses = 0
    for key, weight in calls:
        hit = [m for m in model if m[0] == key]
        misses += not hit
        value = memo.lookup(key)
        if value is None:
            made.append(key)
            value = memo.store(key, ("value", key), weight)
        assert value == ("value", key)
        if hit:
            model.remove(hit[0])
            model.append(hit[0])
        elif weight <= limit:
            model.append((key, weight))
            while sum(w for _, w in model) > limit:
                model.pop(0)
        assert memo.held == sum(w for _, w in model) <= limit and len(memo) == len(model)
    assert len(made) == misses  # made exactly when not held


def test_front_end_memos_stay_bounded_on_huge_untrusted_text():
    """The front ends' memos of results made from untrusted text (a pattern, a class, key names) are bounded
    by the text they hold, not by a count of entries: a stream of huge distinct patterns leaves each at most
    its limit."""
    from kbnf_gpu.automata.regex import translate
    from kbnf_gpu.frontends.json_schema import _charset as cs
    from kbnf_gpu.frontends.json_schema._strings import unit

    for k in range(12):
        source = "|".join(f"a{k}b{i}" for i in range(4_000))  # ~30,000 characters each
        translate(source)
        ranges = tuple((i * 3 + k, i * 3 + k) for i in range(12_000))
        unit(cs.norm(ranges))
        cs.union(cs.norm(ranges), ((k, k),))
    for memo in (translate.memo, unit.memo, cs._norm_tuple.memo, cs._union_tuples.memo):
        assert 0 < memo.held <= memo.limit and len(memo) < 12  # the oldest of the twelve let go


def test_generational_cache_releases_an_evicted_generation_a_little_per_store():
    """Evicting a generation must not free all its objects in one store (that was a 1-3 ms step in a long trace)."""
    cache = GenerationalCache(100)
    first = [_Value() for _ in range(100)]
    refs = [weakref.ref(v) for v in first]
    for i, v in enumerate(first):
        cache.put(("first", i), v)
    del first, v
    for i in range(101):  # two turns: the first generation becomes the old one, then the evicted one
        cache.put(("filler", i), _Value())
    assert all(cache[("first", i)] is None for i in range(100))
    alive = sum(r() is not None for r in refs)
    assert alive == 100  # evicted, not yet released
    for i in range(60):
        cache.put(("more", i), _Value())
        now = sum(r() is not None for r in refs)
        assert alive - now <= 2
        alive = now
    assert alive == 0  # released before the next turn
    assert len(cache) <= 200


def test_generational_cache_tolerates_an_evicted_generation_emptied_under_it():
    """Another thread may take the last evicted entry between a store's check and its pop."""

    class EmptiedOnCheck(dict):
        def __len__(self) -> int:
            n = dict.__len__(self)
            self.clear()  # as if another thread popped it right after this check
            return n

    cache = GenerationalCache(4)
    cache._evicted = EmptiedOnCheck({"gone": 1})
    cache.put("key", "value")
    assert cache["key"] == "value"


def test_weak_table_drops_dead_entries_a_few_per_store_and_stays_bounded():
    table = WeakTable()
    live = []
    dropped_at_once = 0
    for i in range(20_000):
        value = _Value()
        if i % 10 == 0:
            live.append(value)  # one in ten stays alive
        before = len(table.data)
        table[("key", i)] = value
        dropped_at_once = max(dropped_at_once, before + 1 - len(table.data))
        assert len(table.data) <= max(1.5 * WeakTable.MIN_SWEEP, 4 * len(live))
    assert dropped_at_once <= 2
    del value
    assert len(table) == len(live)
    assert all(table[("key", 10 * j)] is v for j, v in enumerate(live))
    for j in range(len(live)):
        assert table.get(("key", 10 * j + 1)) is None


# ------------------------------------------------------------ run fusion


def _language(grammar: ir.Grammar, fuse: bool, alphabet: bytes, max_len: int) -> set[bytes]:
    parser = EarleyParser(normalize(grammar, NormalizeConfig(fuse=fuse)))
    out = set()
    for n in range(max_len + 1):
        for chars in itertools.product(alphabet, repeat=n):
            state, _, _ = parser.step_bytes(parser.initial_state, bytes(chars))
            if state is not DEAD and state.accepting:
                out.add(bytes(chars))
    return out


@settings(max_examples=60, deadline=None)
@given(grammars())
def test_fusing_terminal_runs_keeps_the_language(grammar):
    fused = normalize(grammar)
    oracle = BnfOracle(normalize(grammar, NormalizeConfig(fuse=False)))
    language = _language(grammar, True, b"ab", 5)
    assert language == {w for n in range(6) for w in map(bytes, itertools.product(b"ab", repeat=n))
                        if oracle.derives(w)}
    assert len(fused.terminals) >= 1


def test_json_punctuation_fuses_with_whitespace():
    bnf = normalize(__import__("kbnf_gpu.frontends", fromlist=["parse_grammar"]).parse_grammar(JSON_KBNF, "kbnf"))
    names = {bnf.terminal_name(t) for t in range(len(bnf.terminals))}
    assert {'ws "," ws', 'string ws ":" ws', 'ws "}"'} <= names


def test_table_cache_is_bounded_in_bytes():
    """The process-wide token-table cache evicts by bytes too: a server compiling new schemas all day stays flat."""
    from kbnf_gpu import Vocabulary
    from kbnf_gpu.automata import dfa_literal
    from kbnf_gpu.compile.table_cache import TableCache, table_nbytes

    vocab = Vocabulary({i: bytes([97 + i % 26]) * (1 + i // 26) for i in range(2000)})
    cache = TableCache(max_bytes=40_000, sparse_limit=0)  # dense rows: 252 bytes each
    sizes = []
    for n in range(1, 40):
        table = cache.inside(dfa_literal(b"a" * n), vocab)
        sizes.append(table_nbytes(table))
        assert cache.nbytes <= 40_000 or len(cache) == 1
    assert sum(sizes) > 40_000 and len(cache) < 39
    assert cache.nbytes == sum(table_nbytes(t) for t in cache._mem.values())
