"""Per-token CPU cost of the matcher, beside kbnf, xgrammar and llguidance in the same run.

1. JSON document, Llama-3 vocabulary: per token = accept the token + compute
   the next mask (ours: ``accept_token`` + ``mask_parts``; xgrammar:
   ``accept_token`` + ``fill_next_token_bitmask``; llguidance: ``consume_token``
   + ``compute_mask``; kbnf: ``try_accept_new_token`` + ``compute_allowed_token_ids``).
   "first" = a fresh compiled grammar's first pass over the document (caches
   cold); "again" = a new matcher over the same document (per-state caches warm,
   as in a server that has seen the structure before).
2. Right recursion ``start ::= "A" start | "A";`` (eos mode) over 10,000
   tokens: per-token time per window of 1,000 and the parser's live items, which
   Leo's optimization keeps constant.

    python benchmarks/bench_runtime.py [--out benchmarks/out/bench_runtime.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_compile import JSON_GBNF  # noqa: E402
from common import greedy_tokens, llama3_hf  # noqa: E402

from kbnf_gpu.grammars import JSON_KBNF  # noqa: E402

DOCUMENT = (
    '{"id": 12345, "name": "Ada Lovelace", "tags": ["math", "poetry", "engines"], "active": true, '
    '"scores": [1.5, -2, 3e4, 0.25], "address": {"city": "London", "zip": null, "lines": ["12 St James\'s Sq", '
    '"SW1"]}, "notes": "first \\"programmer\\"", "items": [{"a": 1}, {"a": 2}, {"a": 3}, {"a": 4}, {"a": 5}]}'
)


def per_token_us(step, tokens) -> float:
    t0 = time.perf_counter()
    for t in tokens:
        step(t)
    return (time.perf_counter() - t0) / len(tokens) * 1e6


def json_rows(vocab) -> list[dict]:
    from kbnf_gpu import Matcher, compile_grammar

    rows = []
    compiled = compile_grammar(JSON_KBNF, vocab, syntax="kbnf", end_mode="eos")
    # the tokens come from a separate compilation, so the measured one starts with cold caches
    tokens = greedy_tokens(vocab, compile_grammar(JSON_KBNF, vocab, syntax="kbnf", end_mode="eos"),
                           DOCUMENT.encode())

    def ours_pass() -> float:
        m = Matcher(compiled)
        m.mask_parts()

        def step(t):
            m.accept_token(t)
            m.mask_parts()

        return per_token_us(step, tokens)

    rows.append({"engine": "kbnf_gpu", "first_us": ours_pass(), "again_us": ours_pass(), "tokens": len(tokens)})

    try:
        import xgrammar as xgr

        hf = llama3_hf()
        info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=vocab.size)
        xc = xgr.GrammarCompiler(info, cache_enabled=False).compile_grammar(JSON_GBNF)
        bitmask = xgr.allocate_token_bitmask(1, vocab.size)

        def xgr_pass() -> float:
            m = xgr.GrammarMatcher(xc)
            m.fill_next_token_bitmask(bitmask)

            def step(t):
                assert m.accept_token(t)
                m.fill_next_token_bitmask(bitmask)

            return per_token_us(step, tokens)

        rows.append({"engine": "xgrammar", "first_us": xgr_pass(), "again_us": xgr_pass(), "tokens": len(tokens)})
        xc = xgr.GrammarCompiler(info, cache_enabled=False).compile_builtin_json_grammar()
        rows.append({"engine": "xgrammar (builtin JSON)", "first_us": xgr_pass(), "again_us": xgr_pass(),
                     "tokens": len(tokens)})
    except Exception as e:  # noqa: BLE001 - optional peer
        rows.append({"engine": "xgrammar", "error": repr(e)})

    try:
        import llguidance
        import llguidance.hf

        lltok = llguidance.hf.from_tokenizer(hf)
        grammar = llguidance.LLMatcher.grammar_from_lark(JSON_LARK)

        def ll_pass() -> float:
            m = llguidance.LLMatcher(lltok, grammar)
            m.compute_bitmask()

            def step(t):
                assert m.consume_token(t), m.get_error()
                m.compute_bitmask()

            return per_token_us(step, tokens)

        rows.append({"engine": "llguidance", "first_us": ll_pass(), "again_us": ll_pass(), "tokens": len(tokens)})
    except Exception as e:  # noqa: BLE001
        rows.append({"engine": "llguidance", "error": repr(e)})

    try:
        import kbnf

        ids = vocab.normal_ids.tolist()
        kv = kbnf.Vocabulary({i: kbnf.Token(vocab.token_bytes(i)) for i in ids},
                             {i: vocab.token_bytes(i).decode("utf-8", "replace") for i in ids})
        config = kbnf.Config()
        config.engine_config.rejected_token_prefix_cache_enabled = False
        engine = kbnf.Engine(JSON_KBNF, kv, config)

        def kbnf_pass() -> float:
            engine.reset()
            engine.compute_allowed_token_ids()

            def step(t):
                engine.try_accept_new_token(t)
                engine.compute_allowed_token_ids()

            return per_token_us(step, tokens[:-1])  # kbnf finishes eagerly at the last token

        rows.append({"engine": "kbnf", "first_us": kbnf_pass(), "again_us": kbnf_pass(), "tokens": len(tokens)})
    except Exception as e:  # noqa: BLE001
        rows.append({"engine": "kbnf", "error": repr(e)})
    return rows


JSON_LARK = r"""
start: WS? value WS?
?value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" WS? "}" | "{" WS? member (WS? "," WS? member)* WS? "}"
member: STRING WS? ":" WS? value
array: "[" WS? "]" | "[" WS? value (WS? "," WS? value)* WS? "]"
STRING: /"([^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
WS: /[ \t\n\r]+/
"""


def right_recursion_rows() -> list[dict]:
    from kbnf_gpu import Matcher, Vocabulary, compile_grammar

    vocab = Vocabulary({0: b"A", 1: b"AA", 2: b"</s>"}, special_ids=[2], eos_ids=[2])
    compiled = compile_grammar('start ::= "A" start | "A";', vocab, syntax="kbnf", end_mode="eos")
    m = Matcher(compiled)
    rows = []
    for window in range(10):
        t0 = time.perf_counter()
        for _ in range(1000):
            m.accept_token(0)
            m.allowed_token_ids()
        rows.append({"tokens": 1000 * (window + 1), "per_token_us": (time.perf_counter() - t0) * 1e3,
                     "live_items": compiled.parser.live_items(m.state), "parser_states": compiled.parser.n_states})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/out/bench_runtime.json")
    args = parser.parse_args()
    from kbnf_gpu import Vocabulary

    torch.set_num_threads(1)
    vocab = Vocabulary.from_name("llama3")
    jrows = json_rows(vocab)
    print("JSON document, Llama-3: microseconds per token (accept + next mask)")
    print(f"{'engine':<24} {'first pass':>11} {'again':>9}")
    for r in jrows:
        if "error" in r:
            print(f"{r['engine']:<24} error: {r['error'][:100]}")
        else:
            print(f"{r['engine']:<24} {r['first_us']:>11.1f} {r['again_us']:>9.1f}")
    rrows = right_recursion_rows()
    print('\nright recursion start ::= "A" start | "A" (eos): per-token time by window')
    print(f"{'tokens':>7} {'us/token':>9} {'live items':>11} {'states':>7}")
    for r in rrows:
        print(f"{r['tokens']:>7} {r['per_token_us']:>9.2f} {r['live_items']:>11} {r['parser_states']:>7}")
    meta = {"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(), "cpus": os.cpu_count(),
            "command": " ".join(sys.argv)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "json": jrows, "right_recursion": rrows}, indent=1))


if __name__ == "__main__":
    main()
