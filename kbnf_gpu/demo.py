"""``kbnf-gpu demo``: a serving loop that makes every sequence of a batch valid JSON.

Logits come from a seeded random generator (no model download is possible
here): a fixed random preference per token plus fresh noise each step, and a
bias toward closing tokens and EOS that grows with the step, so outputs end.
Every step: ``mask_batch`` (one launch) → sample → ``accept_token``. The
compiled grammar is cached as an artifact file, so the second run loads it.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from .batch import apply_prepared, prepare_batch
from .compile.artifact import load_compiled
from .compile.compiled import CompiledGrammar, compile_grammar
from .errors import ArtifactError
from .grammars import json_kbnf
from .runtime.matcher import Matcher
from .vocab import Vocabulary

JSON_GRAMMAR = json_kbnf(max_whitespace=4)


def cache_dir() -> Path:
    return Path(os.environ.get("KBNF_GPU_CACHE", Path.home() / ".cache" / "kbnf_gpu"))


def load_or_compile(vocab: Vocabulary, name: str, grammar: str, *, log=print) -> CompiledGrammar:
    """The JSON grammar for ``vocab``: from the artifact cache if present, else compiled and saved."""
    path = cache_dir() / f"{name}-{vocab.fingerprint[:16]}.kbnfgpu"
    if path.exists():
        try:
            t0 = time.perf_counter()
            compiled = load_compiled(path, vocab)
            log(f"loaded {path} in {1e3 * (time.perf_counter() - t0):.1f} ms")
            return compiled
        except ArtifactError as err:
            log(f"ignoring cached artifact: {err}")
    t0 = time.perf_counter()
    compiled = compile_grammar(grammar, vocab, syntax="kbnf", end_mode="eos")
    seconds = time.perf_counter() - t0
    path.parent.mkdir(parents=True, exist_ok=True)
    size = compiled.save(path)
    log(f"compiled the JSON grammar in {seconds:.2f} s; saved {size / 1024:.0f} KiB to {path}")
    return compiled


def token_ids(vocab: Vocabulary, wanted: set[bytes], extra: tuple[int, ...] = ()) -> np.ndarray:
    ids = [i for i in vocab.normal_ids.tolist() if vocab.token_bytes(i) in wanted]
    return np.array(ids + list(extra), dtype=np.int64)


OPENING = {b"{", b"[", b'{"', b'["', b'":', b'","', b'":"', b'":[', b'":{', b"true", b"null"}
CLOSING = {b"}", b"]", b'"', b'"}', b"}}", b"]}", b"}]", b"0", b"1", b" }", b'"]'}


def serve(compiled: CompiledGrammar, *, batch: int, steps: int, seed: int, device: torch.device):
    """Run the loop; returns (outputs, finished flags, timings in seconds per phase)."""
    vocab = compiled.vocab
    gen = torch.Generator(device="cpu").manual_seed(seed)
    preference = (torch.randn(vocab.size, generator=gen) * 2.0).to(device)
    opening = torch.from_numpy(token_ids(vocab, OPENING)).to(device)
    closing = torch.from_numpy(token_ids(vocab, CLOSING, vocab.eos_ids)).to(device)
    matchers = [Matcher(compiled) for _ in range(batch)]
    outputs = [bytearray() for _ in range(batch)]
    timing = {"advance": 0.0, "gather": 0.0, "mask": 0.0, "sample": 0.0}
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    n_steps = 0
    for step in range(steps):
        if all(m.is_finished() for m in matchers):
            break
        n_steps += 1
        logits = preference + torch.randn(batch, vocab.size, generator=gen).to(device)
        logits[:, opening] += 6.0 * max(0.0, 1.0 - 3.0 * step / steps)
        logits[:, closing] += 24.0 * step / steps
        t0 = time.perf_counter()
        prepared = prepare_batch(matchers, device)
        t1 = time.perf_counter()
        apply_prepared(logits, prepared)
        sync()
        t2 = time.perf_counter()
        # Gumbel-max: a sample from softmax(logits) without normalizing
        uniform = torch.rand(batch, vocab.size, generator=gen).clamp_(1e-20, 1.0).to(device)
        tokens = (logits.float() - torch.log(-torch.log(uniform))).argmax(dim=-1).tolist()
        t3 = time.perf_counter()
        for b, m in enumerate(matchers):
            if not m.is_finished():
                m.accept_token(tokens[b])
                if not m.is_finished():
                    outputs[b] += vocab.token_bytes(tokens[b])
        t4 = time.perf_counter()
        timing["gather"] += t1 - t0
        timing["mask"] += t2 - t1
        timing["sample"] += t3 - t2
        timing["advance"] += t4 - t3
    per_step = {k: v / max(n_steps, 1) for k, v in timing.items()}
    return [bytes(o) for o in outputs], [m.is_finished() for m in matchers], per_step, n_steps


def run_demo(*, batch: int = 16, steps: int = 256, seed: int = 0, device: str | None = None,
             tokenizer: str = "llama3") -> int:
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    vocab = Vocabulary.from_name(tokenizer)
    print(f"kbnf-gpu demo: {tokenizer} vocabulary ({vocab.size} tokens), batch {batch}, up to {steps} steps, "
          f"device {dev}")
    compiled = load_or_compile(vocab, "json", JSON_GRAMMAR)
    outputs, finished, per_step, n_steps = serve(compiled, batch=batch, steps=steps, seed=seed, device=dev)
    valid = 0
    for b, (text, done) in enumerate(zip(outputs, finished)):
        shown = text.decode("utf-8", "replace")
        shown = shown if len(shown) <= 110 else shown[:107] + "..."
        if done:
            try:
                json.loads(text)
                verdict = "valid JSON"
                valid += 1
            except ValueError as err:
                verdict = f"INVALID JSON: {err}"
        else:
            verdict = f"unfinished after {steps} steps (a valid prefix)"
        print(f"[{b:2d}] {verdict:<28} {shown!r}")
    cpu_ms = 1e3 * (per_step["advance"] + per_step["gather"])
    print(f"\n{valid}/{len(outputs)} outputs finished as valid JSON in {n_steps} steps")
    print(f"per step, batch {batch}: CPU {cpu_ms:.3f} ms (state advance {1e3 * per_step['advance']:.3f} + "
          f"row gathering {1e3 * per_step['gather']:.3f}), mask application {1e3 * per_step['mask']:.3f} ms, "
          f"sampling {1e3 * per_step['sample']:.3f} ms")
    bad = sum(1 for text, done in zip(outputs, finished) if done and not _is_json(text))
    return 1 if bad or valid == 0 else 0


def _is_json(text: bytes) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def run_bench(*, device: str | None = None, tokenizer: str = "llama3") -> int:
    """Per-step times of the serving loop at a few batch sizes (see benchmarks/ for the full suite)."""
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    vocab = Vocabulary.from_name(tokenizer)
    compiled = load_or_compile(vocab, "json", JSON_GRAMMAR, log=lambda *a: print(*a, file=sys.stderr))
    print(f"{'batch':>6} {'advance ms':>11} {'gather ms':>10} {'mask ms':>9} {'steps':>6}")
    for batch in (1, 16, 64):
        _, _, per_step, n = serve(compiled, batch=batch, steps=64, seed=1, device=dev)
        print(f"{batch:>6} {1e3 * per_step['advance']:>11.3f} {1e3 * per_step['gather']:>10.3f} "
              f"{1e3 * per_step['mask']:>9.3f} {n:>6}")
    return 0
