"""Per-step cost of the serving-engine integrations, beside xgrammar wired the way vLLM wires it, in one run.

B requests share one JSON Schema (Llama-3 vocabulary, logits padded by 128
columns); request b follows the token path of the document shifted by b steps
modulo half its length (so the batch mixes states). Per step, every request takes its next token and
its row is masked:

* ``vllm-processor``: our vLLM logits processor (V1 interface, as vLLM's
  sampler calls it): the requests' output lists grow, ``apply(logits)`` advances
  every matcher and masks the batch with one ``mask_batch``;
* ``backend-adapter``: ``Grammar.accept_tokens`` + ``fill_bitmask`` per request,
  then one ``xgrammar.apply_token_bitmask_inplace`` (vLLM's structured-output path
  with us as the backend: vLLM applies the bitmask itself, with xgrammar's kernel, whatever the backend);
* ``xgrammar``: ``GrammarMatcher.accept_token`` + ``fill_next_token_bitmask`` per
  request, then one ``xgrammar.apply_token_bitmask_inplace`` (the same path with xgrammar).

Times are warm (a second pass: per-state caches filled, as in a server that has
seen the schema); the compile time of the schema is reported separately.

    python benchmarks/bench_integrations.py [--device cpu|cuda] [--out benchmarks/out/bench_integrations.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import greedy_tokens, llama3_hf  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string", "maxLength": 40},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "active": {"type": "boolean"},
        "score": {"type": "number"},
    },
    "required": ["id", "name", "tags", "active", "score"],
}
DOCUMENT = b'{"id": 12345, "name": "Ada Lovelace", "tags": ["math", "poetry", "engines"], "active": true, "score": 3.25}'
PAD = 128


def vllm_processor(model_dir: str, device: torch.device):
    from kbnf_gpu.integrations.vllm import GrammarLogitsProcessor

    model_config = SimpleNamespace(skip_tokenizer_init=False, hf_config=None, tokenizer=model_dir, model=model_dir,
                                   runner_type="generate", tokenizer_mode="auto", tokenizer_revision=None,
                                   trust_remote_code=False)
    return GrammarLogitsProcessor(SimpleNamespace(model_config=model_config, additional_config={}), device, False)


def shifts(tokens, batch: int) -> tuple[list[int], int]:
    """Each request's starting offset in the document, and the number of steps all of them can take."""
    span = max(1, len(tokens) // 2)
    offsets = [b % span for b in range(batch)]
    return offsets, len(tokens) - max(offsets)


def run_processor(proc, tokens, batch: int, device) -> float:
    from vllm import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdateBuilder

    from kbnf_gpu.integrations.spec import GrammarSpec

    proc.requests.clear()
    proc.cache.result(GrammarSpec.from_request({"json_schema": SCHEMA}))  # compiled before timing
    offsets, steps = shifts(tokens, batch)
    builder = BatchUpdateBuilder()
    outputs = [list(tokens[:offset]) for offset in offsets]
    for b in range(batch):
        builder.added.append((b, SamplingParams(extra_args={"kbnf_gpu": {"json_schema": SCHEMA}}), [], outputs[b]))
    proc.update_state(builder.get_and_reset(batch))
    logits = torch.zeros(batch, proc.vocab.size + PAD, device=device)
    proc.apply(logits)  # consumes the offsets' tokens
    _sync(device)
    t0 = time.perf_counter()
    for step in range(steps - 1):
        for b, offset in enumerate(offsets):
            outputs[b].append(tokens[offset + step])
        proc.apply(logits)
    _sync(device)
    return (time.perf_counter() - t0) / (steps - 1) * 1e3


def run_backend(compiled, tokens, batch: int, device) -> float:
    import xgrammar as xgr

    from kbnf_gpu.integrations.backend import Grammar
    from kbnf_gpu.kernels import allocate_token_bitmask

    offsets, steps = shifts(tokens, batch)
    grammars = [Grammar(compiled) for _ in range(batch)]
    for offset, g in zip(offsets, grammars):
        assert g.accept_tokens(tokens[:offset])
    bitmask = allocate_token_bitmask(batch, compiled.vocab.size)
    logits = torch.zeros(batch, compiled.vocab.size + PAD, device=device)
    _sync(device)
    t0 = time.perf_counter()
    for step in range(steps):
        for b, (offset, g) in enumerate(zip(offsets, grammars)):
            assert g.accept_tokens([tokens[offset + step]])
            g.fill_bitmask(bitmask, b)
        xgr.apply_token_bitmask_inplace(logits, bitmask.to(device, non_blocking=True), vocab_size=compiled.vocab.size)
    _sync(device)
    return (time.perf_counter() - t0) / steps * 1e3


def run_xgrammar(ctx, vocab_size: int, tokens, batch: int, device) -> float:
    import xgrammar as xgr

    offsets, steps = shifts(tokens, batch)
    matchers = [xgr.GrammarMatcher(ctx) for _ in range(batch)]
    for offset, m in zip(offsets, matchers):
        for t in tokens[:offset]:
            assert m.accept_token(t)
    bitmask = xgr.allocate_token_bitmask(batch, vocab_size)
    logits = torch.zeros(batch, vocab_size + PAD, device=device)
    _sync(device)
    t0 = time.perf_counter()
    for step in range(steps):
        for b, (offset, m) in enumerate(zip(offsets, matchers)):
            assert m.accept_token(tokens[offset + step])
            m.fill_next_token_bitmask(bitmask, b)
        xgr.apply_token_bitmask_inplace(logits, bitmask.to(device, non_blocking=True), vocab_size=vocab_size)
    _sync(device)
    return (time.perf_counter() - t0) / steps * 1e3


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batches", default="1,16,64")
    parser.add_argument("--out", default="benchmarks/out/bench_integrations.json")
    args = parser.parse_args()
    device = torch.device(args.device)
    import xgrammar as xgr

    from kbnf_gpu import Vocabulary, compile_grammar

    tok = llama3_hf()
    tok.eos_token = "<|eot_id|>"
    with tempfile.TemporaryDirectory() as model_dir:
        tok.save_pretrained(model_dir)
        (Path(model_dir) / "config.json").write_text('{"model_type": "llama"}')
        proc = vllm_processor(model_dir, device)
    vocab: Vocabulary = proc.vocab
    t0 = time.perf_counter()
    compiled = compile_grammar(SCHEMA, vocab, syntax="json_schema")
    ours_compile = time.perf_counter() - t0
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=vocab.size)
    t0 = time.perf_counter()
    ctx = xgr.GrammarCompiler(info, cache_enabled=False).compile_json_schema(json.dumps(SCHEMA))
    xgr_compile = time.perf_counter() - t0
    tokens = greedy_tokens(vocab, compiled, DOCUMENT)
    rows = []
    for batch in [int(b) for b in args.batches.split(",")]:
        for _ in range(2):  # the second pass is measured (warm caches)
            ours = run_processor(proc, tokens, batch, device)
            adapter = run_backend(compiled, tokens, batch, device)
            theirs = run_xgrammar(ctx, vocab.size, tokens, batch, device)
        rows.append({"batch": batch, "vllm_processor_ms": ours, "backend_adapter_ms": adapter,
                     "xgrammar_ms": theirs, "processor_vs_xgrammar": ours / theirs})
    print(f"device {device}; compile of the schema: ours {ours_compile * 1e3:.0f} ms, xgrammar {xgr_compile * 1e3:.0f} ms")
    print(f"{'batch':>5} {'vllm-processor ms':>18} {'backend-adapter ms':>19} {'xgrammar ms':>12} {'ratio':>6}")
    for r in rows:
        print(f"{r['batch']:>5} {r['vllm_processor_ms']:>18.3f} {r['backend_adapter_ms']:>19.3f} "
              f"{r['xgrammar_ms']:>12.3f} {r['processor_vs_xgrammar']:>6.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"device": str(device), "machine": platform.machine(), "rows": rows,
                               "compile_ms": {"ours": ours_compile * 1e3, "xgrammar": xgr_compile * 1e3}}, indent=2))


if __name__ == "__main__":
    main()
