"""Random KBNF grammars: our IR and DFAs agree with the ``kbnf`` package on every short string.

Each generated grammar ``G`` (start ``s``) is wrapped as ``start ::= s "\\x01";`` so
that kbnf's eager finish happens exactly at the sentinel: a string ``w`` is a
sentence of ``G`` iff kbnf finishes on ``w + "\\x01"``, and a viable prefix iff
kbnf accepts its bytes. Exhaustive over strings up to length 4 on {a, b}.
"""
from __future__ import annotations

import importlib
import itertools
import multiprocessing

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from kbnf_gpu.check import check_parser
from kbnf_gpu.frontends import parse_grammar
from kbnf_gpu.normalize import normalize
from kbnf_gpu.runtime.earley import DEAD, EarleyParser
from kbnf_oracle import quiet_stderr, sentinel_status

kbnf = importlib.import_module("kbnf")

TERMINALS = ['"a"', '"b"', '"ab"', '"ba"', "'aa'", '#"a*b"', '#"(ab)+"', '#"[ab]"', '#"b?a"', '#e"a+"',
             '#e"(a|b)*b"', '#ex"bb"', '#ex"a"', '#substrs"abba"', '#substrs"ab"']
NAMES = ["s", "x", "y"]


def expressions(names: list[str], terminals: list[str] = TERMINALS):
    # repetition applies to terminals only: kbnf's engine may not terminate on a
    # repeated nullable group ({[x]}), so the generator stays clear of it; and
    # never to #substrs (a kbnf bug)
    terminal = st.sampled_from(terminals)
    repeatable = st.sampled_from([t for t in terminals if not t.startswith("#substrs")])
    repeated = st.one_of(terminal, st.tuples(repeatable, st.sampled_from(["?", "*", "+"])).map("".join),
                         repeatable.map(lambda x: f"[{x}]"), repeatable.map(lambda x: f"{{{x}}}"))
    leaf = st.one_of(repeated, st.sampled_from(names))
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(" ".join),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(" + " | ".join(xs) + ")"),
        ),
        max_leaves=5,
    )


@st.composite
def grammars(draw) -> str:
    # one #substrs literal per grammar: kbnf mishandles two different ones (pinned by
    # test_kbnf_bug_two_substring_literals)
    substrs = [t for t in TERMINALS if t.startswith("#substrs")]
    keep = draw(st.sampled_from(substrs))
    terminals = [t for t in TERMINALS if t not in substrs or t == keep]
    rules = []
    for name in NAMES:
        body = draw(expressions(NAMES, terminals))
        # a terminal alternative keeps every rule productive
        rules.append(f"{name} ::= {body} | {draw(st.sampled_from(terminals))};")
    return "start ::= s '\\x01';\n" + "\n".join(rules)


def kbnf_vocabulary():
    return kbnf.Vocabulary({i: kbnf.Token(bytes([i])) for i in (1, ord("a"), ord("b"))},
                           {1: "\x01", ord("a"): "a", ord("b"): "b"})


VOCAB = kbnf_vocabulary()


STRINGS = [bytes(chars) for n in range(5) for chars in itertools.product(b"ab", repeat=n)]
KBNF_TIMEOUT_S = 5


def _kbnf_worker(text: str, conn) -> None:
    config = kbnf.Config()
    config.engine_config.rejected_token_prefix_cache_enabled = False
    with quiet_stderr():
        engine = kbnf.Engine(text, VOCAB, config)
        conn.send([sentinel_status(engine, w) for w in STRINGS])


def kbnf_statuses(text: str) -> list[tuple[bool, bool]] | None:
    """kbnf's verdicts on every string, in a forked process: kbnf 0.4.2 never returns on some grammars."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_kbnf_worker, args=(text, child))
    proc.start()
    result = parent.recv() if parent.poll(KBNF_TIMEOUT_S) else None
    proc.kill()
    proc.join()
    return result


def test_kbnf_bug_two_substring_literals():
    """kbnf 0.4.2 accepts only the empty string from ``#substrs"abba" | #substrs"ab"`` (each alone is right);
    ours accepts every substring of either, as the language defines. If kbnf is fixed, the random grammars
    above may use both literals again."""
    text = "start ::= s '\\x01';\ns ::= #substrs\"abba\" | #substrs\"ab\";"
    theirs = kbnf_statuses(text)
    assert theirs is not None
    parser = EarleyParser(normalize(parse_grammar(text, "kbnf")))
    for w, verdict in zip(STRINGS, theirs):
        substring = any(w in x for x in (b"abba", b"ab"))
        assert check_parser(parser, w + b"\x01").complete == substring, w
        assert verdict == ((True, True) if w == b"" else (False, False)), w  # the oracle's bug


def test_kbnf_bug_right_recursion_through_two_rules():
    """kbnf 0.4.2 finds ``aaa`` incomplete in ``s ::= x "a" | "a"; x ::= "a" s | "a"``, whose language is
    ``a`` repeated once or more; ours completes every such string (a disagreement random grammars meet)."""
    text = "start ::= s '\\x01';\ns ::= x \"a\" | \"a\";\nx ::= \"a\" s | \"a\";"
    theirs = kbnf_statuses(text)
    assert theirs is not None
    parser = EarleyParser(normalize(parse_grammar(text, "kbnf")))
    for w, verdict in zip(STRINGS, theirs):
        assert check_parser(parser, w + b"\x01").complete == (len(w) >= 1 and set(w) == {ord("a")}), w
    assert theirs[STRINGS.index(b"aaa")] == (True, False)  # the oracle's bug


def test_random_kbnf_grammars_agree_with_kbnf():
    """Random KBNF grammars: our verdicts equal kbnf's on every short string; the oracle answers on most.

    Derandomized: the oracle has bugs of its own (two pinned above), so a fresh draw in every CI run could
    meet another; these grammars are the same in every run."""
    hangs: list[str] = []
    compared: list[str] = []

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(grammars())
    def agree(text):
        theirs = kbnf_statuses(text)
        if theirs is None:  # the oracle hung: hypothesis draws another grammar; bounded below
            hangs.append(text)
            reject()
        parser = EarleyParser(normalize(parse_grammar(text, "kbnf")))
        for w, verdict in zip(STRINGS, theirs):
            state, _, _ = parser.step_bytes(parser.initial_state, w)
            ours = (state != DEAD, check_parser(parser, w + b"\x01").complete)
            assert ours == verdict, (text, w, ours, verdict)
        compared.append(text)

    agree()
    assert len(compared) >= 20 and len(hangs) <= len(compared) // 3, (len(compared), hangs)
