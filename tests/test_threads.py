"""A server's thread pool: matchers of one shared compiled grammar, driven from several threads at once.

The runtime's caches (interned states, memo tables, masks, token rows) are
shared by every matcher of a grammar. Under a tiny switch interval, so that
threads interleave inside those caches, each thread's masks must equal the
masks one thread computes on a separate compiled grammar, with no exception.
"""
from __future__ import annotations

import json
import random
import sys
import threading

import numpy as np
import torch

from kbnf_gpu import Matcher, compile_grammar
from kbnf_gpu.grammars import JSON_KBNF
from kbnf_gpu.caches import GenerationalCache, WeakTable
from kbnf_gpu.runtime.earley import SELF, EarleyParser, _set_key
from integration_support import greedy_tokens


def documents(n: int, seed: int = 3) -> list[bytes]:
    rng = random.Random(seed)

    def value(depth: int):
        kind = rng.randrange(6 if depth < 3 else 3)
        if kind == 0:
            return rng.choice([True, False, None, rng.randint(-999, 999), round(rng.uniform(-9, 9), 3)])
        if kind in (1, 2):
            return "".join(rng.choice("ab \\\"é") for _ in range(rng.randrange(6)))
        if kind == 3:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {f"k{rng.randrange(9)}": value(depth + 1) for _ in range(rng.randrange(4))}

    return [json.dumps({"id": i, "v": value(0)}).encode() for i in range(n)]


def trace(compiled, tokens: list[int]) -> list[np.ndarray]:
    """The allowed ids before each token and after the last, and the packed bitmask at each step."""
    m = Matcher(compiled)
    out = []
    bitmask = np.zeros((1, (compiled.vocab.size + 31) // 32), dtype=np.int32)
    for t in tokens + [None]:
        out.append(m.allowed_token_ids().copy())
        tensor = torch.from_numpy(bitmask)
        m.fill_bitmask(tensor, 0)
        out.append(tensor.numpy().copy())
        if t is not None:
            m.accept_token(t)
    return out


def race(work, n: int = 4) -> list[BaseException]:
    """Run ``work(i)`` for ``i`` in ``range(n)``, each in its own thread, under a 1 us switch interval (threads then
    interleave inside the caches); the exceptions they raised."""
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except BaseException as err:  # noqa: BLE001 - returned to the test
            errors.append(err)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(old)
    return errors


def test_shared_grammar_from_many_threads_gives_one_threads_masks(llama3_vocab, llama3_json):
    docs = documents(8)
    paths = [greedy_tokens(llama3_json, d) for d in docs]
    expected = [trace(llama3_json, p) for p in paths]  # one thread (a warm grammar)
    shared = compile_grammar(JSON_KBNF, llama3_vocab, "kbnf", end_mode="eos")  # cold: threads race to fill caches
    results: dict[int, list[np.ndarray]] = {}

    def work(i: int) -> None:
        for j in range(i, len(paths), 4):
            results[j] = trace(shared, paths[j])

    errors = race(work)
    assert not errors, errors
    assert sorted(results) == list(range(len(paths)))
    for j, exp in enumerate(expected):
        got = results[j]
        assert len(got) == len(exp)
        for step, (a, b) in enumerate(zip(got, exp)):
            assert np.array_equal(a, b), (j, step)



def test_lexemes_made_on_first_use_race_to_one_build(llama3_vocab):
    """A JSON Schema's string lexemes are built on first read (``LazyDFA``); matchers of one cold grammar in
    several threads race to build them and to put them in the parser's lists: each thread's masks equal one
    thread's on a grammar of its own (another ``max_dfa_states``: its lexemes are other objects)."""
    from kbnf_gpu import CompileConfig
    from kbnf_gpu.automata.dfa import LazyDFA

    schema = {"type": "array", "items": {"type": "object", "additionalProperties": False, "properties": {
        "id": {"type": "string", "pattern": "^[a-h]{2}[0-7]{1,3}$"},
        "tag": {"type": "string", "pattern": "^t-[a-z]+$", "maxLength": 9},
        "kind": {"enum": ["alpha-kind", "beta-kind", "gamma-kind"]}}}}
    docs = [json.dumps(d, separators=(",", ":")) for d in (
        [{"id": "ab12", "tag": "t-xyz", "kind": "beta-kind"}, {"id": "hh7", "kind": "alpha-kind"}],
        [{"tag": "t-q"}, {"id": "cd765", "kind": "gamma-kind"}], [], [{"id": "ee0", "tag": "t-abcdefg"}])]
    alone = compile_grammar(schema, llama3_vocab, "json_schema", config=CompileConfig(max_dfa_states=9_999))
    paths = [greedy_tokens(alone, d.encode()) for d in docs]
    expected = [trace(alone, p) for p in paths]
    shared = compile_grammar(schema, llama3_vocab, "json_schema")
    lazy = [d for d in shared.bnf.dfas if isinstance(d, LazyDFA)]
    assert len(lazy) >= 3 and not any(d.built for d in lazy)
    results: dict[int, list[np.ndarray]] = {}

    def work(i: int) -> None:
        results[i] = trace(shared, paths[i])

    errors = race(work)
    assert not errors, errors
    assert all(d.built for d in lazy)
    for j, exp in enumerate(expected):
        assert len(results[j]) == len(exp)
        for step, (a, b) in enumerate(zip(results[j], exp)):
            assert np.array_equal(a, b), (j, step)


def test_a_lexeme_read_by_threads_at_once_is_built_once():
    """Threads that read an unbuilt ``LazyDFA`` together wait for one build and all see its arrays."""
    from kbnf_gpu.automata import dfa_literal
    from kbnf_gpu.automata.dfa import LazyDFA

    made = []
    start = threading.Event()

    def make():
        made.append(1)
        start.wait(0.05)  # the first builder holds the build open while the others ask
        return dfa_literal(b"abc")

    lazy = LazyDFA(make, nullable=False, exits_start=True, held_bytes=0)
    seen: list = []

    def work(i: int) -> None:
        seen.append((lazy.transitions, lazy.accepting_list))

    errors = race(work, 6)
    assert not errors, errors
    assert made == [1] and len(seen) == 6
    assert all(t is seen[0][0] for t, _ in seen) and lazy.matches(b"abc") and not lazy.matches(b"ab")


class _PausingWeakDict(WeakTable):
    """A ``WeakTable`` whose stores pause until ``go`` is set (at most 2 s): the window between two
    publications of one interned object, held open for another thread to look into."""

    def __init__(self, entered: threading.Event, go: threading.Event) -> None:
        super().__init__()
        self.entered, self.go = entered, go

    def __setitem__(self, key, value) -> None:
        self.entered.set()
        self.go.wait(2.0)
        super().__setitem__(key, value)


def _intern_while_paused(parser: EarleyParser, paused: str, sym: int) -> list[BaseException]:
    """Intern a new Earley set while the store ``parser.<paused>`` (``_sets`` or ``_set_by_uid``) pauses; meanwhile
    another thread that finds the set by content resolves its uid, as a parse step does with an item's origin."""
    entered, go = threading.Event(), threading.Event()
    original = getattr(parser, paused)
    pausing = _PausingWeakDict(entered, go)
    pausing.update(original)
    setattr(parser, paused, pausing)
    waiting = {sym: ((0, SELF),)}  # a structure no parse built: a new set
    key = _set_key(waiting, {})
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            assert entered.wait(2.0), "the interning thread never stored"
            found = parser._sets.get(key)
            if found is not None:
                assert parser.set_of(found.uid) is found
        except BaseException as err:  # noqa: BLE001 - reported to the test
            errors.append(err)
        finally:
            go.set()

    th = threading.Thread(target=reader)
    th.start()
    made = parser._intern_set(dict(waiting), {}, ())
    th.join()
    setattr(parser, paused, original)
    original.update(pausing)
    assert parser._sets.get(key) is made and parser.set_of(made.uid) is made
    return errors


def test_a_set_found_by_content_is_found_by_uid(llama3_json):
    """Interning publishes a set by uid before by content: a thread that finds it by content (lock-free) can
    resolve its uid at once (the ``KeyError`` on a uid once seen in the shared-grammar test above)."""
    parser = EarleyParser(llama3_json.parser.grammar)
    for sym, paused in enumerate(("_set_by_uid", "_sets")):  # pause either publication
        assert not _intern_while_paused(parser, paused, sym), paused


def test_compiles_pause_the_garbage_collector_until_the_last_one_ends(monkeypatch):
    """``CompileConfig.pause_gc``: no cyclic collection during a compile; overlapping compiles in two threads
    keep the pause until the last ends; the collector's state before is restored, after an error too."""
    import gc

    import pytest

    import kbnf_gpu.compile.compiled as compiled_module
    from kbnf_gpu import CompileConfig, GrammarError, Vocabulary

    vocab = Vocabulary({i: bytes([97 + i]) for i in range(4)}, eos_ids=[3])
    seen: dict[str, bool] = {}
    entered, release = threading.Event(), threading.Event()
    real_normalize = compiled_module.normalize

    def normalize(grammar, config):
        seen[threading.current_thread().name] = gc.isenabled()
        if threading.current_thread().name == "slow":
            entered.set()
            assert release.wait(30)
        return real_normalize(grammar, config)

    monkeypatch.setattr(compiled_module, "normalize", normalize)
    assert gc.isenabled()
    slow = threading.Thread(target=lambda: compile_grammar("a+", vocab, syntax="regex"), name="slow")
    slow.start()
    assert entered.wait(30)
    compile_grammar("b+", vocab, syntax="regex")  # starts and ends inside the slow one
    assert not gc.isenabled()  # the slow compile still runs
    release.set()
    slow.join(30)
    assert gc.isenabled() and seen == {"slow": False, threading.current_thread().name: False}
    compile_grammar("c+", vocab, syntax="regex", config=CompileConfig(pause_gc=False))
    assert seen[threading.current_thread().name] is True
    with pytest.raises(GrammarError):
        compile_grammar("(", vocab, syntax="regex")
    assert gc.isenabled()
    gc.disable()
    try:
        compile_grammar("a+", vocab, syntax="regex")
        assert not gc.isenabled()  # the caller's choice stands
    finally:
        gc.enable()


def test_generational_cache_and_weak_table_under_racing_threads():
    """Stores from several threads race through turns of generations, the release of evicted ones and the sweeps
    of a ``WeakTable``: no exception, and whatever is found is what was stored under that key."""
    cache = GenerationalCache(16)
    table = WeakTable()
    lock = threading.Lock()

    class Value:
        def __init__(self, n: int) -> None:
            self.n = n

    def work(seed: int) -> None:
        rng = random.Random(seed)
        kept = []
        for i in range(10_000):
            key = rng.randrange(200)
            found = cache[key]
            assert found is None or found.n == key
            cache.put(key, Value(key))
            value = Value(i)
            if i % 7 == 0:
                kept.append(value)
            with lock:  # WeakTable writers hold their owner's lock; readers do not
                table[(seed, i)] = value
            probe = table.get((seed, rng.randrange(i + 1)))
            assert probe is None or probe.n <= i

    errors = race(work)
    assert not errors, errors
    assert len(cache) <= 32
