"""Table-driven masks ≡ the exact reference walk, on random and real vocabularies; artifacts round-trip."""
from __future__ import annotations

import os
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbnf_gpu import ArtifactError, CompileConfig, Vocabulary, ir
from kbnf_gpu.compile.artifact import load_compiled
from kbnf_gpu.compile.compiled import CompiledGrammar
from kbnf_gpu.compile.grammar_tables import build_grammar_tables
from kbnf_gpu.normalize import NormalizeConfig, normalize
from kbnf_gpu.runtime.matcher import Matcher


def lit(data: bytes) -> ir.Terminal:
    return ir.Terminal(ir.Literal(data))


def pat(source: str) -> ir.Terminal:
    return ir.Terminal(ir.Pattern(source))


def star(e: ir.Expr) -> ir.Repetition:
    return ir.Repetition(e, 0, None)


def json_grammar() -> ir.Grammar:
    ws = pat(r"[ \t\n\r]*")
    string = pat(r'"([^"\\\x00-\x1f]|\\(["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
    number = pat(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
    ref = ir.Ref
    members = ir.Sequence((ref("pair"), star(ir.Sequence((ws, lit(b","), ws, ref("pair"))))))
    values = ir.Sequence((ref("value"), star(ir.Sequence((ws, lit(b","), ws, ref("value"))))))
    return ir.Grammar(rules=(
        ir.Rule("root", ir.Sequence((ws, ref("value"), ws))),
        ir.Rule("value", ir.Choice((ref("obj"), ref("arr"), string, number, lit(b"true"), lit(b"false"),
                                    lit(b"null")))),
        ir.Rule("obj", ir.Sequence((lit(b"{"), ws, ir.Repetition(members, 0, 1), ws, lit(b"}")))),
        ir.Rule("pair", ir.Sequence((string, ws, lit(b":"), ws, ref("value")))),
        ir.Rule("arr", ir.Sequence((lit(b"["), ws, ir.Repetition(values, 0, 1), ws, lit(b"]")))),
    ), start="root", syntax="test")


def small_grammars() -> list[ir.Grammar]:
    ref = ir.Ref
    return [
        json_grammar(),
        # right recursion, nullable terminal between lexemes, multi-byte literal
        ir.Grammar(rules=(ir.Rule("s", ir.Choice((ir.Sequence((lit("é".encode()), pat("[ab]*"), ref("s"))),
                                                   lit(b";")))),), start="s", syntax="test"),
        # left-recursive arithmetic with a number regex
        ir.Grammar(rules=(
            ir.Rule("e", ir.Choice((ir.Sequence((ref("e"), pat("[+*-]"), ref("t"))), ref("t")))),
            ir.Rule("t", ir.Choice((pat("[0-9]+"), ir.Sequence((lit(b"("), ref("e"), lit(b")")))))),
        ), start="e", syntax="test"),
        # lexemes that end inside one another ("ab" | "a" "b" "c"*)
        ir.Grammar(rules=(ir.Rule("s", star(ir.Choice((lit(b"ab"), ir.Sequence((lit(b"a"), lit(b"b"),
                                                                                 pat("c*"))))))),),
                   start="s", syntax="test"),
        many_literal_followers(),
    ]


KEYS = (b"a", b"ab", b"b", b"ba", b"c", b'"a', b"1", b"-", b"ab-", b"\xc3\xa9", b"ca",
        b"cab", b"cb", b"cc", b"c1", b"c-", b'c"', b"c:a", b"c\xc3\xa9")  # eight after "c": one table mid-key too


def many_literal_followers() -> ir.Grammar:
    """An object-like grammar: after ``{`` and ``,`` any of a dozen keys (prefixes of one another, one a chain that
    accepts its prefix ``t``), each with its own value rule (so the keys stay separate terminals), enough for the
    literal followers to share one table (``GrammarTables.follower_tables``)."""
    ref = ir.Ref
    keys = [lit(k) for k in KEYS] + [pat("t(ru)?")]
    pairs = ir.Choice(tuple(ir.Sequence((k, lit(b":"), ref(f"v{i}"))) for i, k in enumerate(keys)))
    values = tuple(ir.Rule(f"v{i}", ir.Choice((lit(b"1" * (1 + i % 3)), ref("obj")))) for i in range(len(keys)))
    return ir.Grammar(rules=(
        ir.Rule("obj", ir.Sequence((lit(b"{"), pairs, star(ir.Sequence((lit(b","), pairs))), lit(b"}")))),
        *values,
    ), start="obj", syntax="test")


def compile_ir(grammar: ir.Grammar, vocab: Vocabulary, *, end_mode: str = "eos", sparse_limit: int = 256,
               fuse: bool = True) -> CompiledGrammar:
    config = CompileConfig(sparse_limit=sparse_limit, fuse=fuse)
    bnf = normalize(grammar, NormalizeConfig(fuse=fuse))
    return CompiledGrammar(bnf, vocab, config=config, end_mode=end_mode,
                           tables=build_grammar_tables(bnf, vocab, config=config))


def walk_and_compare(compiled: CompiledGrammar, rng: random.Random, walks: int, steps: int) -> int:
    """Random walks through allowed tokens; at every step tables ≡ reference. Returns steps checked."""
    checked = 0
    for _ in range(walks):
        matcher = Matcher(compiled)
        for _ in range(steps):
            expected = compiled.reference_allowed_ids(matcher.state)
            if matcher.is_finished():
                expected = np.zeros(0, dtype=np.int32)
            got = matcher.allowed_token_ids()
            assert np.array_equal(got, expected), (matcher.num_tokens, set(got.tolist()) ^ set(expected.tolist()))
            checked += 1
            if not got.size:
                break
            matcher.accept_token(int(rng.choice(got)))
            if matcher.is_finished():
                break
    return checked


ALPHABET = '{}[]":, ab1-\\tru\nc+*()0;é'.encode()  # covers every grammar's bytes


@st.composite
def vocabularies(draw):
    byte = st.sampled_from(sorted(set(ALPHABET)))
    tokens = draw(st.lists(st.lists(byte, min_size=1, max_size=4).map(bytes), min_size=20, max_size=120,
                           unique=True))
    tokens += [bytes([c]) for c in ALPHABET if bytes([c]) not in tokens]
    eos = len(tokens)
    tokens.append(b"</s>")
    return Vocabulary(dict(enumerate(tokens)), special_ids=[eos], eos_ids=[eos], size=eos + 3)


@settings(max_examples=25, deadline=None)
@given(vocab=vocabularies(), which=st.integers(0, 4), eager=st.booleans(), sparse_limit=st.sampled_from([0, 4, 256]),
       seed=st.integers(0, 2**16))
def test_tables_match_reference_on_random_vocabularies(vocab, which, eager, sparse_limit, seed):
    compiled = compile_ir(small_grammars()[which], vocab, end_mode="eager" if eager else "eos",
                          sparse_limit=sparse_limit)
    walk_and_compare(compiled, random.Random(seed), walks=4, steps=12)


@settings(max_examples=25, deadline=None)
@given(vocab=vocabularies(), seed=st.integers(0, 2**16))
def test_literal_followers_taken_together_match_reference(vocab, seed):
    """Keys after ``{`` and ``,`` get one table together (as followers of ``{``, and as scan pairs of what they
    can still match): masks still equal the reference walk's, and both kinds of shared table were used."""
    compiled = compile_ir(many_literal_followers(), vocab, fuse=False)
    walk_and_compare(compiled, random.Random(seed), walks=4, steps=12)
    groups = {**compiled.tables._groups._old, **compiled.tables._groups}
    assert any(isinstance(key[0], int) for key in groups)  # (terminal, followers): CROSS/DEEP of '{' to the keys
    assert any(isinstance(key[0], tuple) for key in groups)  # (rests, followers): the keys themselves


def counted_grammars() -> list[ir.Grammar]:
    """Counted repetitions of a lexeme ``X`` that ends where it accepts (``ab|ca|cb``, ``[ab]{3}``: a chunk of
    a counted string), so its copies ahead get rows (``GrammarTables.repeat_ref``): as a chain (``X{1,7}``),
    as a run of required copies then a chain (``X{3,9}``, the run longer than ``masks.REPEATS``), in blocks
    (``X{2,20}``, fused), and between quotes with a shorter tail (a counted string's shape)."""
    ref = ir.Ref
    x = pat("ab|c[ab]")
    chunk = pat("[ab]{3}")
    return [
        ir.Grammar(rules=(ir.Rule("s", ir.Sequence((ir.Repetition(x, 1, 7), lit(b";"),
                                                   ir.Repetition(ref("s"), 0, 1)))),), start="s", syntax="test"),
        ir.Grammar(rules=(ir.Rule("s", ir.Choice((ir.Sequence((ir.Repetition(x, 3, 9), lit(b"."))),
                                                  ir.Sequence((x, lit(b";"), ref("s")))))),), start="s", syntax="test"),
        ir.Grammar(rules=(ir.Rule("s", ir.Sequence((ir.Repetition(x, 2, 20), lit(b";")))),), start="s", syntax="test"),
        ir.Grammar(rules=(ir.Rule("s", ir.Sequence((lit(b'"'), ir.Repetition(chunk, 0, 8), pat('[ab]{0,2}"'),
                                                   ir.Repetition(ir.Sequence((lit(b","), ref("s"))), 0, 1)))),),
                   start="s", syntax="test"),
    ]


@st.composite
def long_token_vocabularies(draw):
    """Tokens over the counted grammars' bytes, random and spanning several copies of ``X`` (runs of its words,
    started inside one, maybe ending in another byte)."""
    alphabet = b'abc;.",'
    byte = st.sampled_from(sorted(set(alphabet)))
    tokens = draw(st.lists(st.lists(byte, min_size=1, max_size=6).map(bytes), min_size=10, max_size=40))
    runs = st.tuples(st.integers(0, 1), st.lists(st.sampled_from([b"ab", b"ca", b"cb", b"aab", b"bba"]), min_size=2,
                                                 max_size=6), st.sampled_from([b"", b";", b".", b'"', b"a"]))
    tokens += [b"".join(words)[cut:] + end for cut, words, end in draw(st.lists(runs, min_size=5, max_size=30))]
    tokens = list(dict.fromkeys(tokens))
    tokens += [bytes([c]) for c in alphabet if bytes([c]) not in tokens]
    eos = len(tokens)
    tokens.append(b"</s>")
    return Vocabulary(dict(enumerate(tokens)), special_ids=[eos], eos_ids=[eos], size=eos + 1)


@settings(max_examples=30, deadline=None)
@given(vocab=long_token_vocabularies(), which=st.integers(0, 3), fuse=st.booleans(), seed=st.integers(0, 2**16))
def test_repeated_lexeme_rows_match_reference(vocab, which, fuse, seed):
    """Masks where a counted repetition's copies ahead are rows (a token spanning several copies of ``X``)
    equal the reference walk's at every step, and such rows were used."""
    compiled = compile_ir(counted_grammars()[which], vocab, fuse=fuse)
    walk_and_compare(compiled, random.Random(seed), walks=4, steps=14)
    if not fuse:  # fused, a counted repetition of a small lexeme is one lexeme: no copies to count
        assert any(ref != -1 for ref in compiled.tables._repeat_refs.values())


def test_repeat_runs_count_the_copies_that_follow():
    """``repeat_runs``: after the ``i``-th of ``X{lo,hi}`` the grammar derives ``hi - i`` more ``X`` (capped),
    through the required copies and the optional chain; after a lone ``X`` that a different lexeme follows, none."""
    from kbnf_gpu.runtime.earley import EarleyParser
    from kbnf_gpu.runtime.masks import repeat_runs

    x = pat("ab|c[ab]")
    grammar = ir.Grammar(rules=(ir.Rule("s", ir.Choice((ir.Sequence((ir.Repetition(x, 3, 6), lit(b"."))),
                                                        ir.Sequence((x, lit(b";")))))),), start="s", syntax="test")
    parser = EarleyParser(normalize(grammar, NormalizeConfig(fuse=False)))
    runs = repeat_runs(parser.pos_sym, parser.predict, cap=10)
    x_sym = next(sym for sym in parser.pos_sym if sym is not None and sym < 0
                 and parser.grammar.terminals[~sym].expr == x.expr)
    found = sorted(runs(p) for p, sym in enumerate(parser.pos_sym) if sym == x_sym)
    # X X X O_3 (after each of the three: 5, 4, 3), O_k ::= X O_{k-1} (2, 1, 0), and the lone X before ';' (0)
    assert found == [0, 0, 1, 2, 3, 4, 5]
    assert sorted(repeat_runs(parser.pos_sym, parser.predict, cap=2)(p) for p, sym in enumerate(parser.pos_sym)
                  if sym == x_sym) == [0, 0, 1, 2, 2, 2, 2]
    # nonterminals nested thousands deep before the X's: counted to a bounded depth, no recursion error
    deep = ir.Grammar(rules=(*(ir.Rule(f"a{i}", ir.Sequence((x, ir.Ref(f"a{i + 1}")))) for i in range(3000)),
                             ir.Rule("a3000", ir.Sequence((x, x)))), start="a0", syntax="test")
    parser = EarleyParser(normalize(deep, NormalizeConfig(fuse=False)))
    runs = repeat_runs(parser.pos_sym, parser.predict, cap=5)
    assert {runs(p) for p in range(len(parser.pos_sym))} <= set(range(6))


@pytest.fixture(scope="module", params=["llama3", "gpt2", "mistral"])
def real_vocab(request):
    return Vocabulary.from_name(request.param)


def test_tables_match_reference_on_real_vocabularies(real_vocab):
    compiled = compile_ir(json_grammar(), real_vocab)
    assert walk_and_compare(compiled, random.Random(7), walks=3, steps=8) >= 8
    # and along a real document, where tokens cross lexeme boundaries ('":', '},', ...)
    matcher = Matcher(compiled)
    text = '{"key": [1, 2.5e3, "x\\u00e9"], "b": {"c": null}}'.encode()
    pos = 0
    while pos < len(text):
        expected = compiled.reference_allowed_ids(matcher.state)
        assert np.array_equal(matcher.allowed_token_ids(), expected)
        best = max((t for t in expected.tolist() if text.startswith(real_vocab.token_bytes(t), pos)),
                   key=lambda t: len(real_vocab.token_bytes(t)))
        matcher.accept_token(best)
        pos += len(real_vocab.token_bytes(best))
    assert matcher.is_accepting()


@pytest.fixture(scope="module")
def tiny_vocab():
    tokens = [b"{", b"}", b'"', b'":', b"a", b"1", b" ", b"[", b"]", b",", b'"a"', b"true", b'{"', b"},", b"</s>"]
    return Vocabulary(dict(enumerate(tokens)), special_ids=[len(tokens) - 1], eos_ids=[len(tokens) - 1])


def test_artifact_round_trip_gives_identical_masks(tmp_path, tiny_vocab):
    compiled = compile_ir(json_grammar(), tiny_vocab, sparse_limit=2)
    path = tmp_path / "json.kbnfgpu"
    size = compiled.save(path)
    assert size == path.stat().st_size > 0
    loaded = load_compiled(path, tiny_vocab)
    walk_in_lockstep(compiled, loaded, random.Random(3), walks=20)


def test_artifact_of_a_counted_repetition_masks_exactly(tmp_path):
    """An artifact of a grammar with a counted repetition: its tables are saved, the rows of copies ahead are
    added when the loaded grammar first meets them, and its masks are the reference walk's."""
    tokens = [b"ab", b"ca", b"abab", b"abcaab", b"ababab", b"cacbcaab", b"bcaab", b"ab;", b";", b"a", b"b", b"c"]
    vocab = Vocabulary(dict(enumerate(tokens + [b"</s>"])), special_ids=[len(tokens)], eos_ids=[len(tokens)])
    config = CompileConfig(sparse_limit=2, fuse=False)
    bnf = normalize(counted_grammars()[0], NormalizeConfig(fuse=False))
    compiled = CompiledGrammar(bnf, vocab, config=config, end_mode="eos",
                               tables=build_grammar_tables(bnf, vocab, config=config, eager=True))
    path = tmp_path / "counted.kbnfgpu"
    compiled.save(path)
    loaded = load_compiled(path, vocab)
    assert walk_and_compare(loaded, random.Random(5), walks=6, steps=10) >= 6
    assert any(ref != -1 for ref in loaded.tables._repeat_refs.values())


@pytest.mark.parametrize("slow_stage", ["inside", "inside_state"])
def test_a_compile_keeps_to_its_time_budget(tiny_vocab, monkeypatch, slow_stage):
    """``time_budget_s`` covers an eager compile's tables (each table, and each repeat row, checks the clock
    before it starts) and a lazy compile's first mask (the rows it computes): a table that runs past it stops
    the compile with an error naming the stage, not the first mask of the serving loop later. (The lazy
    compile's first mask here reads whole ``inside`` tables, not the rows of single states.)"""
    import time

    from kbnf_gpu import compile_grammar
    from kbnf_gpu.compile.table_cache import TableCache
    from kbnf_gpu.errors import CompileBudgetExceeded

    real = getattr(TableCache, slow_stage)

    def slow(self, *args, **kwargs):
        time.sleep(0.6)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TableCache, slow_stage, slow)
    # the tables of this small grammar are whole; only the repeat rows of [ab]{3,9} go state by state
    grammar = 'root ::= "[" [ab]{3,9} "]"'
    config = CompileConfig(time_budget_s=0.5, fuse=False)
    with pytest.raises(CompileBudgetExceeded, match=r"time_budget_s=0.5 s \(while computing token tables"):
        compile_grammar(grammar, tiny_vocab, syntax="gbnf", eager=True, config=config)
    if slow_stage == "inside":
        with pytest.raises(CompileBudgetExceeded, match=r"time_budget_s=0.5 s \(while computing token tables"):
            compile_grammar(grammar, tiny_vocab, syntax="gbnf", config=config)
    monkeypatch.setattr(TableCache, slow_stage, real)
    lazy = compile_grammar(grammar, tiny_vocab, syntax="gbnf", config=config)
    assert lazy.initial_state.mask is not None  # computed within the compile, under its budget


def test_eager_tables_hold_every_repeat_row_and_artifacts_keep_them(tmp_path):
    """``build_all`` (an eager compile, an artifact) computes the rows of a counted repetition's copies ahead
    for every state of ``X`` and every count of copies the grammar has (one walk of each ``X{1,r}``): each equals
    the row of that state alone; an artifact keeps them, so the loaded grammar's masks compute none; a saved
    repeat row that names no state, or no stored row, is refused."""
    from kbnf_gpu.compile.grammar_tables import GrammarTables
    from kbnf_gpu.compile.table_cache import TableCache
    from kbnf_gpu.automata.build import repeat_copies
    from kbnf_gpu.runtime.masks import repeated_terminals

    tokens = [b"ab", b"ca", b"abab", b"abcaab", b"ababab", b"cacbcaab", b"bcaab", b"ab;", b";", b".", b"a", b"b",
              b"c", b"cbab.", b"abcbca"]
    vocab = Vocabulary(dict(enumerate(tokens + [b"</s>"])), special_ids=[len(tokens)], eos_ids=[len(tokens)])
    config = CompileConfig(sparse_limit=2, fuse=False)
    bnf = normalize(counted_grammars()[1], NormalizeConfig(fuse=False))
    tables = build_grammar_tables(bnf, vocab, config=config, eager=True)
    wanted = {(tables.same_dfa(t), q, r) for t, r in repeated_terminals(bnf) for q in range(bnf.dfas[t].n_states)}
    assert {r for _, _, r in wanted} == {2, 3, 4, 5}  # X{3,9}: 5 copies ahead at most (REPEATS), down to 2
    assert set(tables._repeat_refs) == wanted
    fresh = TableCache(sparse_limit=2)
    for (t, q, r), ref in tables._repeat_refs.items():
        alone = fresh.inside_state(repeat_copies(bnf.dfas[t], r + 1), q, vocab)
        assert tables.store.get(ref) == alone
    compiled = CompiledGrammar(bnf, vocab, config=config, end_mode="eos", tables=tables)
    compiled.save(tmp_path / "counted.kbnfgpu")
    loaded = load_compiled(tmp_path / "counted.kbnfgpu", vocab)
    saved = dict(loaded.tables._repeat_refs)
    assert set(saved) == wanted
    assert all(loaded.tables.store.get(saved[k]) == tables.store.get(tables._repeat_refs[k]) for k in wanted)
    assert walk_and_compare(loaded, random.Random(2), walks=6, steps=12) >= 6
    assert loaded.tables._repeat_refs == saved  # every row a mask asked for was in the artifact
    arrays = tables.to_arrays()
    for name, at, value in (("repeat_keys", (0, 1), 99), ("repeat_keys", (0, 2), 1), ("repeat_refs", 0, 10**6)):
        bad = {k: v.copy() for k, v in arrays.items()}
        bad[name][at] = value
        with pytest.raises(ValueError, match="repeat row|outside the stored rows"):
            GrammarTables.from_arrays(bnf, tables.trie, fresh, bad)


def walk_in_lockstep(first: CompiledGrammar, second: CompiledGrammar, rng: random.Random, walks: int) -> None:
    """Random walks through ``first``'s allowed tokens: ``second`` allows, accepts and finishes the same."""
    for _ in range(walks):
        a, b = Matcher(first), Matcher(second)
        for _ in range(15):
            allowed = a.allowed_token_ids()
            assert np.array_equal(allowed, b.allowed_token_ids())
            assert a.is_accepting() == b.is_accepting()
            if not allowed.size:
                break
            t = int(rng.choice(allowed))
            a.accept_token(t)
            b.accept_token(t)
            if a.is_finished():
                assert b.is_finished()
                break


def test_tables_store_only_the_rows_read_and_save_them_all(tmp_path, tiny_vocab):
    """A grammar's tables add a state's row to its store when a mask first reads it (``LazyRefs``); saving an
    artifact after a few masks stores every row, and the loaded artifact masks like the compiled grammar."""
    compiled = compile_ir(json_grammar(), tiny_vocab, sparse_limit=2)
    eager = compile_ir(json_grammar(), tiny_vocab, sparse_limit=2)
    eager.tables.build_all()
    matcher = Matcher(compiled)
    matcher.allowed_token_ids()
    tables = compiled.tables
    read = {t: sum(r is not None for r in refs._refs) for t, refs in tables.inside.items()}
    assert read and all(n <= 2 for n in read.values()) and any(len(tables.inside[t]) > 2 for t in read)
    stored = compiled.tables.store.dense_count + compiled.tables.store.sparse_count
    assert stored < eager.tables.store.dense_count + eager.tables.store.sparse_count
    for t, refs in tables.inside.items():  # the rows read are the eager tables' rows
        for q, r in enumerate(refs._refs):
            if r is not None:
                assert tables.store.get(r) == eager.tables.store.get(eager.tables.inside_refs(t)[q])
    compiled.save(tmp_path / "json.kbnfgpu")
    loaded = load_compiled(tmp_path / "json.kbnfgpu", tiny_vocab)
    assert all(len(loaded.tables.inside_refs(t)) == d.n_states for t, d in enumerate(loaded.bnf.dfas))
    walk_in_lockstep(eager, loaded, random.Random(5), walks=10)


def test_artifact_rejects_tampering_wrong_vocab_and_newer_format(tmp_path, tiny_vocab):
    compiled = compile_ir(json_grammar(), tiny_vocab)
    path = tmp_path / "g.kbnfgpu"
    compiled.save(path)
    data = bytearray(path.read_bytes())
    for position in (20, len(data) // 2, len(data) - 40):
        bad = bytearray(data)
        bad[position] ^= 0x01
        (tmp_path / "bad").write_bytes(bytes(bad))
        with pytest.raises(ArtifactError, match="checksum"):
            load_compiled(tmp_path / "bad", tiny_vocab)
    other = Vocabulary({0: b"x", 1: b"y"})
    with pytest.raises(ArtifactError, match="different vocabulary"):
        load_compiled(path, other)
    (tmp_path / "junk").write_bytes(b"not an artifact at all, just some bytes to read" * 3)
    with pytest.raises(ArtifactError, match="magic"):
        load_compiled(tmp_path / "junk", tiny_vocab)
    with pytest.raises(ArtifactError):
        load_compiled(tmp_path / "missing", tiny_vocab)
    # a newer format (re-signed, so only the version is wrong)
    import hashlib
    import json
    import struct

    head_len = struct.unpack_from("<Q", data, 8)[0]
    header = json.loads(bytes(data[16:16 + head_len]))
    header["format_version"] = 999
    head = json.dumps(header).encode()
    body = bytes(data[:8]) + struct.pack("<Q", len(head)) + head + bytes(data[16 + head_len:-32])
    (tmp_path / "newer").write_bytes(body + hashlib.sha256(body).digest())
    with pytest.raises(ArtifactError, match="newer"):
        load_compiled(tmp_path / "newer", tiny_vocab)


def test_artifact_never_unpickles(tmp_path, tiny_vocab, monkeypatch):
    import pickle

    def forbidden(*args, **kwargs):
        raise AssertionError("pickle must not be used")

    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    compiled = compile_ir(json_grammar(), tiny_vocab)
    compiled.save(tmp_path / "g.kbnfgpu")
    loaded = load_compiled(tmp_path / "g.kbnfgpu", tiny_vocab)
    assert np.array_equal(Matcher(loaded).allowed_token_ids(), Matcher(compiled).allowed_token_ids())


def wide_schemas(n: int) -> list[dict]:
    """An object of ``n`` optional keys sharing prefixes, and a ``oneOf`` of ``n // 10`` objects (each its own
    ``{`` terminal and first keys): the shapes whose first masks take their keys together."""
    props = {f"field_{i}": {"type": "integer"} for i in range(n)}
    branches = [{"type": "object", "required": [f"kind_{b}"],
                 "properties": {f"kind_{b}": {"const": b}, **{f"b{b}_{i}": {"type": "string"} for i in range(9)}}}
                for b in range(n // 10)]
    return [{"type": "object", "properties": props, "additionalProperties": False}, {"oneOf": branches}]


@pytest.mark.parametrize("which", [0, 1])
def test_wide_schema_masks_match_reference_on_llama3(which, llama3_vocab):
    """Real vocabulary, keys taken together (one table for a hundred keys): masks ≡ the reference walk."""
    from kbnf_gpu import compile_grammar

    compiled = compile_grammar(wide_schemas(120)[which], llama3_vocab, "json_schema")
    assert walk_and_compare(compiled, random.Random(which), walks=2, steps=6) >= 6
    assert len(compiled.tables._groups) > 0


def test_prepared_vocabulary_is_not_rebuilt_by_compiles_or_integrations(monkeypatch):
    """``prepare_vocabulary`` builds the per-vocabulary pieces once; compiles and the integrations' compile cache
    reuse them (a rebuild would land in a server's first request)."""
    from kbnf_gpu import compile_grammar, prepare_vocabulary
    from kbnf_gpu.compile import token_trie
    from kbnf_gpu.integrations.cache import CompileCache

    tokens = [b"x", b"y", b"xy", b"yx", b"xx", b"</s>"]  # a vocabulary no other test uses
    vocab = Vocabulary(dict(enumerate(tokens)), special_ids=[5], eos_ids=[5])
    assert prepare_vocabulary(vocab) is vocab

    def rebuilt(*_args, **_kwargs):
        raise AssertionError("the token trie was built again")

    monkeypatch.setattr(token_trie.TokenTrie, "from_vocab", rebuilt)
    matcher = Matcher(compile_grammar("(xy)+", vocab, syntax="regex"))
    assert matcher.allowed_token_ids().tolist() == [0, 2]
    CompileCache(vocab).shutdown()
    fresh = Vocabulary(dict(enumerate(tokens[:-1] + [b"z", b"</s>"])), special_ids=[6], eos_ids=[6])
    with pytest.raises(AssertionError, match="built again"):
        CompileCache(fresh)  # a new vocabulary is prepared when the cache starts, not at its first request


@settings(max_examples=40, deadline=None)
@given(vocab=vocabularies(), chosen=st.lists(st.integers(0, 200), max_size=60))
def test_byte_order_walks_candidates_sorted_with_their_shared_prefixes(vocab, chosen):
    from kbnf_gpu.runtime.masks import ByteOrder

    order = ByteOrder(vocab)
    key = [vocab.token_bytes(i) if i not in vocab.special_ids and vocab.token_bytes(i) else b""
           for i in range(vocab.size)]
    assert [key[i] for i in order.ids.tolist()] == sorted(key)
    assert np.array_equal(order.rank[order.ids], np.arange(vocab.size))
    candidates = np.array(sorted({c % vocab.size for c in chosen}), dtype=np.int64)
    ordered, shared = order.walk_order(candidates)
    assert sorted(ordered) == candidates.tolist()
    assert [key[i] for i in ordered] == sorted(key[i] for i in ordered)
    prefix = [len(os.path.commonprefix([key[a], key[b]])) for a, b in zip(ordered, ordered[1:])]
    assert shared == ([0] + prefix if ordered else [])


def test_byte_order_counts_long_shared_prefixes_in_full():
    from kbnf_gpu.runtime.masks import ByteOrder

    tokens = [b" " * n for n in (1, 15, 16, 17, 40)] + [b"=" * 20 + b"a", b"=" * 20 + b"b", b"=" * 16, b"x"]
    order = ByteOrder(Vocabulary(dict(enumerate(tokens))))
    ordered, shared = order.walk_order(np.arange(len(tokens)))
    assert [tokens[i] for i in ordered] == sorted(tokens)
    assert shared == [0] + [len(os.path.commonprefix([tokens[a], tokens[b]])) for a, b in zip(ordered, ordered[1:])]
    assert max(shared) == 20


@settings(max_examples=25, deadline=None)
@given(vocab=vocabularies(), which=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_candidate_check_equals_stepping_each_token_alone(vocab, which, seed):
    """``MaskBuilder._check`` (prefix-sharing walk, dead prefixes settled at once) gives each token the verdict
    of stepping it alone, on full states and on truncated (lossy) ones."""
    from kbnf_gpu.runtime.earley import ANY, DEAD, DEAD_UNKNOWN

    compiled = compile_ir(small_grammars()[which], vocab)
    builder, parser = compiled._masks, compiled.parser
    rng = random.Random(seed)
    matcher = Matcher(compiled)
    every = np.arange(vocab.size, dtype=np.int64)
    for _ in range(6):
        for state in (matcher.state, parser.truncated(matcher.state, 1), parser.truncated(matcher.state, 1, ANY)):
            alive, unknown = builder._check(state, every)
            expect_alive, expect_unknown = [], []
            for tid in every.tolist():
                data = compiled._token_bytes[tid]
                if data is None:
                    continue
                end = parser.step_bytes(state, data)[0]
                if end is DEAD_UNKNOWN:
                    expect_unknown.append(tid)
                elif end is not DEAD:
                    expect_alive.append(tid)
            assert sorted(alive) == expect_alive and sorted(unknown) == expect_unknown
        allowed = matcher.allowed_token_ids()
        if not allowed.size or matcher.is_finished():
            break
        matcher.accept_token(int(rng.choice(allowed)))


def test_large_dfas_whose_states_start_on_many_tokens_get_tables_state_by_state(monkeypatch):
    """``GrammarTables._sets``: one state at a time for a large DFA with a heavy state, or (without one) whose
    states together start on more than ``WIDE_WALK`` vocabularies' worth of tokens; else the whole table."""
    from kbnf_gpu.compile import dfa_walk, grammar_tables

    vocab = Vocabulary({i: bytes([c]) for i, c in enumerate(b"ab-")}, size=3)
    counted = ir.Grammar(rules=(ir.Rule("s", ir.Repetition(pat("[ab]"), 3, 3)),), start="s", syntax="test")
    monkeypatch.setattr(grammar_tables, "PER_STATE_MIN", 1)
    monkeypatch.setattr(dfa_walk, "_HEAVY_SHARE", 2.0)  # no state is heavy
    tables = compile_ir(counted, vocab, fuse=True).tables
    dfa = max(tables.grammar.dfas, key=lambda d: d.n_states)
    width = dfa_walk.walk_width(tables.trie, dfa)  # 3 states starting on 'a' and 'b': 2 of 3 tokens each
    assert width == pytest.approx(2.0)
    for wide_walk, by_state in ((1.9, True), (2.0, False)):
        monkeypatch.setattr(grammar_tables, "WIDE_WALK", wide_walk)
        tables = compile_ir(counted, vocab, fuse=True).tables
        t = tables.grammar.dfas.index(dfa)
        assert isinstance(tables.inside_refs(t)._sets, grammar_tables.StateRows) == by_state


@settings(max_examples=25, deadline=None)
@given(vocab=vocabularies(), which=st.integers(0, 4), seed=st.integers(0, 2**16), per_state=st.booleans())
def test_deep_tables_that_walk_their_followers_match_reference(vocab, which, seed, per_state):
    """With no follower's lexemes tabulated (every DEEP table walks from the positions it asks,
    ``LexemeWalk``), whole tables or one state at a time: masks equal the reference walk's, and every DEEP
    table equals the one computed from tabulated lexemes."""
    from kbnf_gpu.compile import grammar_tables, table_cache, tables

    def no_table(*args):
        raise AssertionError("a follower's lexemes were tabulated")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables, "SPLITS_MAX_STARTS", -1)
        patch.setattr(table_cache, "lexeme_splits", no_table)
        patch.setattr(grammar_tables, "_DEFAULT_CACHES", {})  # tables computed here, not found from earlier tests
        if per_state:
            patch.setattr(grammar_tables, "PER_STATE_MIN", 1)
            patch.setattr(grammar_tables, "has_heavy_state", lambda trie, dfa: True)
        compiled = compile_ir(small_grammars()[which], vocab)
        assert walk_and_compare(compiled, random.Random(seed), walks=3, steps=10)
        walked = compiled.tables.build_all()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grammar_tables, "_DEFAULT_CACHES", {})
        tabulated = compile_ir(small_grammars()[which], vocab).tables.build_all()
    assert sorted(walked.deep) == sorted(tabulated.deep)
    for key in tabulated.deep:
        got = [walked.store.get(r).to_ids().tolist() for r in walked.deep[key].resolved()]
        assert got == [tabulated.store.get(r).to_ids().tolist() for r in tabulated.deep[key].resolved()], key


@settings(max_examples=25, deadline=None)
@given(vocab=vocabularies(), which=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_tables_computed_state_by_state_match_reference(vocab, which, seed):
    """With every non-literal DFA taken as large, tables are computed one state at a time on first read
    (``StateRows``): masks equal the reference walk's, and an artifact saved afterwards holds every state's row
    (the whole tables)."""
    from kbnf_gpu.compile import grammar_tables

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grammar_tables, "PER_STATE_MIN", 1)
        patch.setattr(grammar_tables, "has_heavy_state", lambda trie, dfa: True)
        compiled = compile_ir(small_grammars()[which], vocab)
        walk_and_compare(compiled, random.Random(seed), walks=3, steps=10)
        assert any(isinstance(refs._sets, grammar_tables.StateRows) for refs in compiled.tables.inside.values())
        arrays = compiled.tables.to_arrays()
    whole = compile_ir(small_grammars()[which], vocab).tables
    whole.build_all()
    for t, refs in compiled.tables.inside.items():
        got = [compiled.tables.store.get(r) for r in refs.resolved()]
        assert got == [whole.store.get(r) for r in whole.inside_refs(t).resolved()]
    assert arrays["inside_refs"].size == sum(d.n_states for d in compiled.bnf.dfas)


COUNTING_BYTES = ('[]",ab1 ', "ab;.", "{}a1b")  # the bytes of each of ``counting_grammars``
# tokens across two lexeme boundaries or more (DEEP candidates), short and long
COUNTING_TOKENS = (('","', '","a', 'a","', '"]', 'a"]', '","ab1', 'ab","'), (";a", "a;b", "b;.", ";ab;", "ab;ab;"),
                   ("}{", "b}{a", "}{1", "1b}{", "}{a1}{"))


@settings(max_examples=30, deadline=None)
@given(which=st.integers(0, 2), data=st.data(), seed=st.integers(0, 2**16), short=st.integers(1, 5),
       second=st.integers(0, 3))
def test_short_twins_serve_state_by_state_tables_and_deep_checks_exactly(which, data, seed, short, second):
    """States alike on every token of at most a rung of ``TWIN_TOKEN_BYTES`` (short twins; the first rung also
    for DEEP verdicts) share those tokens' table sets and DEEP verdicts, the longer tokens taken state by
    state: masks equal the reference walk's. (Counters, every DFA taken as large, and tokens of 1-5 bytes
    counted as short, with a second rung a few bytes longer or none, so that many states have twins; tokens
    of the grammar's bytes, so that many cross lexemes.)"""
    from kbnf_gpu.compile import grammar_tables, table_cache

    alphabet = sorted(set(COUNTING_BYTES[which].encode()))
    tokens = data.draw(st.lists(st.lists(st.sampled_from(alphabet), min_size=2, max_size=6).map(bytes),
                                min_size=10, max_size=60, unique=True))
    tokens += [t.encode() for t in COUNTING_TOKENS[which] if t.encode() not in tokens]
    tokens += [bytes([c]) for c in alphabet if bytes([c]) not in tokens]
    vocab = Vocabulary(dict(enumerate([*tokens, b"</s>"])), special_ids=[len(tokens)], eos_ids=[len(tokens)])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grammar_tables, "PER_STATE_MIN", 1)
        patch.setattr(grammar_tables, "has_heavy_state", lambda trie, dfa: True)
        patch.setattr(table_cache, "TWIN_TOKEN_BYTES", (short, short + second) if second else (short,))
        patch.setattr(table_cache, "STATE_READS", 1 << 30)
        compiled = compile_ir(counting_grammars()[which], vocab, fuse=False)
        walk_and_compare(compiled, random.Random(seed), walks=3, steps=16)


def counting_grammars() -> list[ir.Grammar]:
    """Lists of counted lexemes: a counter's positions far from its bound are short twins."""
    ref = ir.Ref
    item = pat(r'"[ab1 ]{0,12}"')
    return [
        ir.Grammar(rules=(ir.Rule("s", ir.Sequence((lit(b"["), item, star(ir.Sequence((lit(b","), item))),
                                                     lit(b"]")))),), start="s", syntax="test"),
        ir.Grammar(rules=(ir.Rule("s", ir.Choice((ir.Sequence((pat("[ab]{2,9}"), lit(b";"), ref("s"))),
                                                   lit(b"."))),),), start="s", syntax="test"),
        ir.Grammar(rules=(ir.Rule("s", star(ir.Sequence((pat(r"\{[a1]{1,10}"), pat("[ab]{0,7}\\}"))))),),
                   start="s", syntax="test"),
    ]


def test_string_lexemes_are_built_when_first_read(llama3_vocab, tmp_path):
    """A JSON Schema string's lexeme (an automaton whose byte DFA is tries side by side) is laid out and counted
    against ``max_dfa_states`` when compiling, and built when the parser or a mask first reads it: compiling
    and the first mask build neither value lexeme; a document that reaches one builds that one alone, and every
    mask on the way is the reference walk's. Saving an artifact builds the rest."""
    from kbnf_gpu import compile_grammar
    from kbnf_gpu.automata.dfa import LazyDFA

    schema = {"type": "object", "additionalProperties": False, "required": ["code"],
              "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{2,4}[a-f]?$"},
                             "tag": {"type": "string", "pattern": "^[a-z]+(_[a-z]+)*-[q-z]$"}}}
    fast = compile_grammar(schema, llama3_vocab, syntax="json_schema")
    lazy = [d for d in fast.bnf.dfas if isinstance(d, LazyDFA)]
    assert len(lazy) == 2 and not any(d.built for d in lazy)
    matcher = Matcher(fast)
    matcher.allowed_token_ids()
    assert not any(d.built for d in lazy)
    reference = Matcher(compile_grammar(schema, llama3_vocab, syntax="json_schema",
                                        config=CompileConfig(use_tables=False)))
    text, pos = b'{"code":"AB-1234e"}', 0
    while pos < len(text):
        allowed = matcher.allowed_token_ids()
        assert np.array_equal(allowed, reference.allowed_token_ids()), text[:pos]
        best = max((t for t in allowed.tolist() if (llama3_vocab.token_bytes(t) or b"\0")
                    and text.startswith(llama3_vocab.token_bytes(t), pos)),
                   key=lambda t: len(llama3_vocab.token_bytes(t)))
        matcher.accept_token(best)
        reference.accept_token(best)
        pos += len(llama3_vocab.token_bytes(best))
    assert matcher.is_accepting() and reference.is_accepting()
    assert sorted(d.built for d in lazy) == [False, True]
    fast.save(tmp_path / "schema.kbnfg")
    assert all(d.built for d in lazy)
