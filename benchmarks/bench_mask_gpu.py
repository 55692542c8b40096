"""Benchmark the batched mask kernels against the memory floor and xgrammar, at one vocabulary size.

Kernel-only part: synthetic bitset tables (64 rows, realistic densities), 1-4
rows and a few extra ids per sequence. For each batch size and dtype it reports

* ``ours``      — ``apply_token_masks`` (CSR already on the device, unvalidated as a serving loop runs it),
* ``fill``/``apply`` — ``fill_token_bitmask`` and ``apply_bitmask_inplace``,
* ``xgr``       — ``xgrammar.apply_token_bitmask_inplace`` on the same mask,
* ``floor``     — bytes read + written once (2·B·V·elem) over the measured
  device-to-device copy bandwidth.

GPU timings: CUDA events around a CUDA-graph replay of ``inner`` calls
(kernel time, no Python launch overhead) and around an eager loop (what a
Python caller pays); median over ``--repeats``. ``inner`` shrinks for big
batches so a sample stays near half a millisecond. Logits buffers rotate so
the footprint exceeds L2 when that takes at most 64 buffers. On CPU the torch
reference runs, timed with ``time.perf_counter``.

End to end (:func:`end_to_end_rows`): B real matchers of a compiled grammar,
each at a different position of a document; ours = ``mask_batch``, xgrammar =
its batch fill on the CPU + one copy + its apply. ``benchmarks/gpu_suite.py``
runs all of this over several vocabularies and grammars (issue #14).

    python benchmarks/bench_mask_gpu.py [--device cuda] [--batch 1,16,128,512] [--out FILE]
    python benchmarks/bench_mask_gpu.py --prepare-only --batch 1,16,128,1024   # the CPU half alone
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import kbnf_gpu.kernels as K
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import kbnf_gpu.kernels as K
from kbnf_gpu.kernels.device_tables import build_csr  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}
L2_TARGET_BYTES = 128 << 20
SAMPLE_S = 5e-4  # a GPU timing sample: about this long (inner calls per sample adapt)


@dataclass
class BenchContext:
    """Everything a benchmark section needs."""

    device: torch.device
    batches: list[int]
    dtypes: list[str]
    vocab: int
    repeats: int
    warmup: int
    inner: int
    copy_bw: float  # bytes/s, device-to-device copy (read + write counted)
    backend_note: str
    extra: dict = field(default_factory=dict)
    deadline: float = float("inf")  # time.monotonic() past which sections stop early

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def out_of_time(self, what: str) -> bool:
        if time.monotonic() < self.deadline:
            return False
        self.extra.setdefault("skipped_for_time", []).append(what)
        return True


# ------------------------------------------------------------------ timing


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_cpu(fn: Callable[[int], None], repeats: int, warmup: int) -> tuple[float, float]:
    """(median, min) seconds per call of ``fn(i)`` on the CPU."""
    for i in range(warmup):
        fn(i)
    samples = []
    for i in range(repeats):
        t0 = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples), min(samples)


def time_cuda(
    fn: Callable[[int], None], repeats: int, warmup: int, inner: int, graph: bool
) -> tuple[float, float] | None:
    """(median, min) seconds per call of ``fn(i)``: events around ``inner`` calls, eager or CUDA-graph replay.

    None when the graph cannot be captured (e.g. the function syncs).
    """
    for i in range(warmup):
        fn(i)
    torch.cuda.synchronize()
    run: Callable[[], None]
    if graph:
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for i in range(2):
                    fn(i)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for i in range(inner):
                    fn(i)
            run = g.replay
        except Exception:  # noqa: BLE001 - capture unsupported: report no graph time
            torch.cuda.synchronize()
            return None
    else:
        def run() -> None:
            for i in range(inner):
                fn(i)
    run()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        samples.append(a.elapsed_time(b) / 1e3 / inner)
    return statistics.median(samples), min(samples)


def measure_copy_bandwidth(device: torch.device, repeats: int = 10, nbytes: int | None = None) -> float:
    """Bytes/s of a large device-to-device copy, counting read + write."""
    nbytes = nbytes or ((1 << 30) if device.type == "cuda" else (256 << 20))
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    fn = lambda i: dst.copy_(src)  # noqa: E731
    if device.type == "cuda":
        sec = time_cuda(fn, repeats, 2, 1, graph=False)[0]
    else:
        sec = time_cpu(fn, max(3, repeats // 2), 1)[1]  # min: the machine may be shared
    del src, dst
    return 2 * nbytes / sec


# ------------------------------------------------------------- synthetic data


def synthetic_table(vocab: int, n_rows: int, device: torch.device, seed: int = 0) -> torch.Tensor:
    """int32 [n_rows, W]: a few dense rows (string bodies), many sparse ones (keys, literals, numbers)."""
    g = torch.Generator().manual_seed(seed)
    W = -(-vocab // 32)
    densities = [0.9, 0.5, 0.2, 0.05, 0.01, 0.001]
    rows = torch.zeros((n_rows, W * 32), dtype=torch.bool)
    for r in range(n_rows):
        rows[r] = torch.rand(W * 32, generator=g) < densities[r % len(densities)]
    rows[:, vocab:] = False
    packed = rows.view(n_rows, W, 32).to(torch.int64) << torch.arange(32)
    words = packed.sum(-1)
    words = torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)
    return words.to(device)


def synthetic_lists(batch: int, vocab: int, n_rows: int, seed: int = 1) -> tuple[list, list]:
    """Row lists and extra lists for ``batch`` sequences, shaped like the JSON grammar's masks on Llama-3.

    Measured along a JSON document (``bench_runtime.DOCUMENT``): 1-3 dense rows
    per state (mean 1.7) and 0-259 extra ids (mean 135, sorted and distinct).
    Here: 1-3 rows; half the sequences 0-16 extra ids, half 100-260; EOS
    (``vocab - 1``) among them.
    """
    g = torch.Generator().manual_seed(seed)
    row_lists, extra_lists = [], []
    for b in range(batch):
        k = int(torch.randint(1, 4, (1,), generator=g))
        row_lists.append(torch.randint(0, n_rows, (k,), generator=g).tolist())
        e = int(torch.randint(0, 17, (1,), generator=g)) if b % 2 else int(torch.randint(100, 261, (1,), generator=g))
        extra_lists.append(sorted(set(torch.randint(0, vocab, (e,), generator=g).tolist()) | {vocab - 1}))
    return row_lists, extra_lists


def synthetic_batch(batch: int, vocab: int, n_rows: int, device: torch.device, seed: int = 1):
    """CSR for ``batch`` sequences (see :func:`synthetic_lists`), on ``device``."""
    return build_csr(*synthetic_lists(batch, vocab, n_rows, seed), device=device)


def xgrammar_apply(extra: dict):
    """xgrammar's ``apply_token_bitmask_inplace``, or None (the reason goes into ``extra``)."""
    try:
        import xgrammar

        def apply(logits, bitmask, **options):
            V = logits.shape[-1]
            if logits.device.type == "cpu" and V % 32:
                # xgrammar 0.2.8's CPU path writes up to 32 * W columns even with vocab_size=V, past the end of a
                # narrower row (heap corruption at V = 100 or 130): give it a padded copy
                padded = logits.new_zeros((*logits.shape[:-1], 32 * bitmask.shape[-1]))
                padded[..., :V] = logits
                xgrammar.apply_token_bitmask_inplace(padded, bitmask, vocab_size=V, **options)
                logits.copy_(padded[..., :V])
                return
            xgrammar.apply_token_bitmask_inplace(logits, bitmask, vocab_size=V, **options)

        return apply
    except Exception as e:  # noqa: BLE001 - optional peer
        extra["xgrammar_error"] = repr(e)
        return None


def inner_calls(floor_s: float, cap: int = 20) -> int:
    """GPU calls per timed sample (at most ``cap``) for a call whose memory floor is ``floor_s``: a sample
    lasts about ``SAMPLE_S``."""
    return max(1, min(cap, round(SAMPLE_S / max(floor_s, 1e-6))))


def timed(ctx: BenchContext, row: dict, name: str, fn: Callable[[int], None], *, eager: bool, floor_s: float) -> None:
    """Time ``fn`` into ``row``: ``{name}_us`` (graph replay on CUDA), ``{name}_min_us``, ``{name}_eager_us``."""
    if ctx.cuda:
        inner = inner_calls(floor_s, ctx.inner)
        t_graph = time_cuda(fn, ctx.repeats, ctx.warmup, inner, graph=True)
        row[f"{name}_us"] = None if t_graph is None else t_graph[0] * 1e6
        row[f"{name}_min_us"] = None if t_graph is None else t_graph[1] * 1e6
        if eager or t_graph is None:
            row[f"{name}_eager_us"] = time_cuda(fn, ctx.repeats, ctx.warmup, inner, graph=False)[0] * 1e6
    else:
        med, low = time_cpu(fn, ctx.repeats, ctx.warmup)
        row[f"{name}_us"], row[f"{name}_min_us"] = med * 1e6, low * 1e6


# ------------------------------------------------------------------ sections


def kernel_rows(ctx: BenchContext) -> list[dict]:
    """Time our kernels, xgrammar's and the memory floor for every (batch, dtype) at ``ctx.vocab``."""
    xgr_apply = xgrammar_apply(ctx.extra)
    dev, V = ctx.device, ctx.vocab
    W = -(-V // 32)
    table = synthetic_table(V, 64, dev)
    out = []
    for B in ctx.batches:
        if ctx.out_of_time(f"kernel V={V} B={B}"):
            break
        csr = synthetic_batch(B, V, 64, dev)
        sync(dev)
        bitmask = torch.empty((B, W), dtype=torch.int32, device=dev)
        K.fill_token_bitmask(bitmask, table, *csr.csr(), vocab_size=V)
        for dname in ctx.dtypes:
            dtype = DTYPES[dname]
            elem = torch.empty((), dtype=dtype).element_size()
            buf_bytes = B * V * elem
            nbuf = max(1, min(64, -(-L2_TARGET_BYTES // buf_bytes))) if ctx.cuda else 1
            g = torch.Generator(device=dev).manual_seed(B)
            bufs = [torch.randn((B, V), generator=g, device=dev).to(dtype) for _ in range(nbuf)]

            def ours(i: int) -> None:
                K.apply_token_masks(bufs[i % nbuf], table, *csr.csr(), vocab_size=V, validate=False)

            def fill(i: int) -> None:
                K.fill_token_bitmask(bitmask, table, *csr.csr(), vocab_size=V, validate=False)

            def apply(i: int) -> None:
                K.apply_bitmask_inplace(bufs[i % nbuf], bitmask, vocab_size=V, validate=False)

            def xgr(i: int) -> None:
                xgr_apply(bufs[i % nbuf], bitmask)

            copy_to = torch.empty_like(bufs[0])

            def copy(i: int) -> None:  # the floor at this size: the same bytes read and written once
                copy_to.copy_(bufs[i % nbuf])

            row: dict = {"vocab": V, "batch": B, "dtype": dname, "logits_bytes": buf_bytes, "buffers": nbuf}
            # correctness on this data: ours vs xgrammar, same mask
            ref = bufs[0].clone()
            ours(0)
            if xgr_apply is not None:
                try:
                    xgr_apply(ref, bitmask)
                    row["xgr_matches"] = bool(torch.equal(ref, bufs[0]))
                except Exception as e:  # noqa: BLE001
                    row["xgr_error"] = repr(e)
            del ref
            floor_s = 2 * buf_bytes / ctx.copy_bw
            row["floor_us"] = floor_s * 1e6
            timed(ctx, row, "ours", ours, eager=True, floor_s=floor_s)
            timed(ctx, row, "fill", fill, eager=False, floor_s=floor_s / 64)
            timed(ctx, row, "apply", apply, eager=False, floor_s=floor_s)
            timed(ctx, row, "copy", copy, eager=False, floor_s=floor_s)
            del copy_to
            if xgr_apply is not None and "xgr_error" not in row:
                timed(ctx, row, "xgr", xgr, eager=True, floor_s=floor_s)
            if row.get("ours_us"):
                row["ours_over_floor"] = row["ours_us"] / row["floor_us"]
                row["ours_over_copy"] = row["ours_us"] / row["copy_us"] if row.get("copy_us") else None
                if row.get("xgr_us"):
                    row["xgr_over_ours"] = row["xgr_us"] / row["ours_us"]
            out.append(row)
            del bufs
            if ctx.cuda:
                torch.cuda.empty_cache()
    return out


@dataclass
class Workload:
    """A compiled grammar and a token path through one of its sentences, for ours and (maybe) xgrammar."""

    name: str
    compiled: object
    tokens: list[int]
    xgr_compiled: object | None = None


def positions(B: int, tokens: list[int]) -> list[int]:
    """B prefix lengths spread over the token path (every sequence at its own position)."""
    return [(b * 7919) % max(1, len(tokens)) for b in range(B)]


def end_to_end_rows(ctx: BenchContext, workloads: list[Workload], check: Callable | None = None) -> list[dict]:
    """Per decoding step for B real matchers: ours (gather rows → one copy → one launch) vs xgrammar.

    ours = ``mask_batch`` (+ a sync); split into ``prepare_batch`` (CPU half)
    and ``apply_prepared`` (+ a sync). xgrammar = ``batch_fill_next_token_bitmask``
    (its multi-threaded CPU fill) + one copy + ``apply_token_bitmask_inplace``.
    Steady state: both engines' per-state caches are warm. On CUDA,
    ``overlap`` runs the CPU half while a stand-in forward (a GPU sleep of
    ``forward_us``) computes, as a serving loop does. ``check(logits_before,
    logits_after, matchers)``, if given, verifies our masks.
    """
    from kbnf_gpu.batch import apply_prepared, mask_batch, prepare_batch

    try:
        import xgrammar as xgr
    except Exception as e:  # noqa: BLE001 - optional peer
        xgr = None
        ctx.extra["xgrammar_e2e_error"] = repr(e)
    dev = ctx.device
    out = []
    for wl in workloads:
        vocab = wl.compiled.vocab
        use_xgr = xgr is not None and wl.xgr_compiled is not None
        batch_filler = xgr.BatchGrammarMatcher() if use_xgr else None
        for B in ctx.batches:
            if ctx.out_of_time(f"e2e {wl.name} B={B}"):
                break
            ours_m, xgr_m = matchers_along(B, wl), []
            for k in positions(B, wl.tokens) if use_xgr else ():
                xm = xgr.GrammarMatcher(wl.xgr_compiled)
                for t in wl.tokens[:k]:
                    assert xm.accept_token(t), "xgrammar rejected a token of the path"
                xgr_m.append(xm)
            W = -(-vocab.size // 32)
            host_bitmask = torch.empty((B, W), dtype=torch.int32, pin_memory=ctx.cuda)
            dev_bitmask = torch.empty((B, W), dtype=torch.int32, device=dev)
            for dname in ctx.dtypes:
                logits = torch.randn((B, vocab.size), device=dev).to(DTYPES[dname])
                row: dict = {"grammar": wl.name, "vocab": vocab.size, "batch": B, "dtype": dname}
                if check is not None:
                    before = logits.clone()
                    mask_batch(logits, ours_m)
                    row["masks_ok"] = bool(check(before, logits, ours_m))
                prepared = prepare_batch(ours_m, dev)

                def ours(i: int) -> None:
                    mask_batch(logits, ours_m)
                    sync(dev)

                def ours_prepare(i: int) -> None:
                    prepare_batch(ours_m, dev)

                def ours_apply(i: int) -> None:  # as mask_batch launches it: checked on the host, no device sync
                    apply_prepared(logits, prepared, validate=False)
                    sync(dev)

                def xgr_fill(i: int) -> None:
                    batch_filler.batch_fill_next_token_bitmask(xgr_m, host_bitmask)

                def xgr_e2e(i: int) -> None:
                    xgr_fill(i)
                    dev_bitmask.copy_(host_bitmask, non_blocking=True)
                    xgr.apply_token_bitmask_inplace(logits, dev_bitmask, vocab_size=logits.shape[-1])
                    sync(dev)

                fns = {"ours_e2e": ours, "ours_prepare": ours_prepare, "ours_apply": ours_apply}
                if use_xgr:
                    fns.update({"xgr_fill": xgr_fill, "xgr_e2e": xgr_e2e})
                for name, fn in fns.items():
                    med, low = time_cpu(fn, ctx.repeats, ctx.warmup)
                    row[f"{name}_us"], row[f"{name}_min_us"] = med * 1e6, low * 1e6
                if ctx.cuda:
                    row.update(overlap_row(lambda: mask_batch(logits, ours_m), dev, ctx, "ours"))
                    if use_xgr:
                        row.update(overlap_row(lambda: xgr_e2e(0), dev, ctx, "xgr"))
                if use_xgr:
                    row["speedup_vs_xgr"] = row["xgr_e2e_us"] / row["ours_e2e_us"]
                out.append(row)
    return out


def overlap_row(step: Callable[[], None], dev: torch.device, ctx: BenchContext, name: str,
                forward_s: float = 2e-3) -> dict:
    """A stand-in forward (a GPU sleep) enqueued, then ``step``, then a sync: the CPU half hides behind it.

    ``{name}_overlap_us`` ≈ ``forward_us`` + the launch's own GPU time when
    the CPU half fully overlaps the forward.
    """
    cycles = _sleep_cycles(dev, forward_s)

    def run(i: int) -> None:
        torch.cuda._sleep(cycles)
        step()
        sync(dev)

    def forward_only(i: int) -> None:
        torch.cuda._sleep(cycles)
        sync(dev)

    return {f"{name}_overlap_us": time_cpu(run, ctx.repeats, 1)[0] * 1e6,
            "forward_us": time_cpu(forward_only, ctx.repeats, 1)[0] * 1e6}


_CYCLES: dict = {}


def _sleep_cycles(dev: torch.device, seconds: float) -> int:
    """GPU clock cycles of ``torch.cuda._sleep`` lasting about ``seconds`` (calibrated once)."""
    if dev not in _CYCLES:
        probe = 1_000_000
        torch.cuda._sleep(probe)  # warm up
        sync(dev)
        t0 = time.perf_counter()
        torch.cuda._sleep(probe)
        sync(dev)
        _CYCLES[dev] = probe / max(time.perf_counter() - t0, 1e-6)
    return int(_CYCLES[dev] * seconds)


def schema_workload(vocab, name: str, xgr_compiler=None, config=None) -> Workload:
    """One of ``bench_schema``'s schemas (compact separators) and the token path of its instance."""
    from bench_schema import SCHEMAS, instance_text
    from common import greedy_tokens

    from kbnf_gpu import compile_grammar

    schema = json.dumps(SCHEMAS[name][0])
    compiled = compile_grammar(schema, vocab, syntax="json_schema", whitespace="compact", config=config)
    xc = None
    if xgr_compiler is not None:
        xc = xgr_compiler.compile_json_schema(schema, any_whitespace=False, separators=(",", ":"))
    return Workload(f"schema:{name}", compiled, greedy_tokens(vocab, compiled, instance_text(name)), xc)


def matchers_along(B: int, wl: Workload) -> list:
    """B matchers of ``wl``, each at its own position of the token path."""
    from kbnf_gpu import Matcher

    out = []
    for k in positions(B, wl.tokens):
        m = Matcher(wl.compiled)
        m.accept_tokens(wl.tokens[:k])
        out.append(m)
    return out


def prepare_rows(ctx: BenchContext, workloads: list[Workload]) -> list[dict]:
    """The CPU half of a step alone: ``prepare_batch``'s masks → pool slots → one packed index buffer.

    Steady state (every state's mask known). On the CPU the CSR path is forced
    (``backend="torch"``): the same host work as for a GPU, without the copy.
    """
    from kbnf_gpu.batch import prepare_batch

    backend = None if ctx.cuda else "torch"
    out = []
    for wl in workloads:
        for B in ctx.batches:
            matchers = matchers_along(B, wl)
            med, low = time_cpu(lambda i: prepare_batch(matchers, ctx.device, backend=backend), ctx.repeats,
                                ctx.warmup)
            out.append({"grammar": wl.name, "batch": B, "prepare_us": med * 1e6, "prepare_min_us": low * 1e6,
                        "per_matcher_us": med * 1e6 / B})
    print(f"\n# prepare_batch (CPU half), steady state; microseconds per step\n{'grammar':>28} {'B':>5} "
          f"{'prepare':>9} {'min':>9} {'per matcher':>11}")
    for r in out:
        print(f"{r['grammar']:>28} {r['batch']:>5} {r['prepare_us']:>9.1f} {r['prepare_min_us']:>9.1f} "
              f"{r['per_matcher_us']:>11.2f}")
    return out


def json_workload(vocab, *, with_xgrammar: bool, extra: dict, config=None) -> Workload:
    """The JSON grammar (``JSON_KBNF``, eos mode) and a token path through ``bench_runtime.DOCUMENT``."""
    from bench_runtime import DOCUMENT
    from common import greedy_tokens

    from kbnf_gpu import compile_grammar
    from kbnf_gpu.grammars import JSON_KBNF

    compiled = compile_grammar(JSON_KBNF, vocab, syntax="kbnf", end_mode="eos", config=config)
    xgr_compiled = None
    if with_xgrammar:
        compiler = xgrammar_compiler(vocab, extra)
        if compiler is not None:
            xgr_compiled = compiler.compile_builtin_json_grammar()
    return Workload("json", compiled, greedy_tokens(vocab, compiled, DOCUMENT.encode()), xgr_compiled)


_XGR_COMPILERS: dict = {}


def xgrammar_compiler(vocab, extra: dict):
    """An xgrammar ``GrammarCompiler`` for the Llama-3 tokenizer, or None (reason in ``extra``)."""
    if vocab.size in _XGR_COMPILERS:
        return _XGR_COMPILERS[vocab.size]
    compiler = None
    try:
        import xgrammar as xgr
        from common import llama3_hf

        info = xgr.TokenizerInfo.from_huggingface(llama3_hf(), vocab_size=vocab.size,
                                                  stop_token_ids=list(vocab.eos_ids))
        compiler = xgr.GrammarCompiler(info)
    except Exception as e:  # noqa: BLE001 - optional peer
        extra["xgrammar_e2e_error"] = repr(e)
    _XGR_COMPILERS[vocab.size] = compiler
    return compiler


# ------------------------------------------------------------------ report


def fmt(v: float | None) -> str:
    return "-" if v is None else (f"{v:9.1f}" if v < 1e5 else f"{v:9.0f}")


def print_kernel_table(rows: list[dict], cuda: bool) -> None:
    cols = ["ours_us", "fill_us", "apply_us", "xgr_us", "floor_us", "copy_us", "ours_min_us", "xgr_min_us"]
    if cuda:
        cols += ["ours_eager_us", "xgr_eager_us"]
    print("# microseconds per call: median over repeats (min columns: fastest sample)")
    head = (f"{'V':>7} {'B':>5} {'dtype':>5} " + " ".join(f"{c[:-3]:>9}" for c in cols)
            + "  ours/floor  ours/copy  xgr/ours")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['vocab']:>7} {r['batch']:>5} {r['dtype']:>5} " + " ".join(fmt(r.get(c)) for c in cols)
              + f"  {fmt(r.get('ours_over_floor')):>10}  {fmt(r.get('ours_over_copy')):>9}  "
              f"{fmt(r.get('xgr_over_ours')):>8}")


def print_e2e_table(rows: list[dict]) -> None:
    print("\n# end to end, B real matchers, steady state; microseconds per step")
    print(f"{'grammar':>22} {'B':>5} {'dtype':>5} {'ours e2e':>10} {'prepare':>9} {'apply':>9} {'xgr e2e':>10} "
          f"{'xgr fill':>10} {'speedup':>8} {'overlap':>9} {'forward':>9} {'ok':>3}")
    for r in rows:
        print(f"{r['grammar']:>22} {r['batch']:>5} {r['dtype']:>5} {fmt(r.get('ours_e2e_us')):>10} "
              f"{fmt(r.get('ours_prepare_us')):>9} {fmt(r.get('ours_apply_us')):>9} {fmt(r.get('xgr_e2e_us')):>10} "
              f"{fmt(r.get('xgr_fill_us')):>10} {fmt(r.get('speedup_vs_xgr')):>8} "
              f"{fmt(r.get('ours_overlap_us')):>9} {fmt(r.get('forward_us')):>9} "
              f"{'-' if 'masks_ok' not in r else ('yes' if r['masks_ok'] else 'NO'):>3}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", default="1,16,128,512", help="comma-separated batch sizes")
    ap.add_argument("--dtype", default="bf16,fp32", help="comma-separated: bf16,fp32,fp16")
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--repeats", type=int, default=None, help="timed samples (median)")
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--inner", type=int, default=20, help="GPU calls per timed sample (at most)")
    ap.add_argument("--no-e2e", action="store_true",
                    help="skip the end-to-end JSON section (run when --vocab is Llama-3's 128,256)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="time only prepare_batch (the CPU half) for the JSON grammar and two schemas on Llama-3")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/out/bench_mask_<device>.json)")
    args = ap.parse_args(argv)

    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but no CUDA GPU is available")
    cuda = dev.type == "cuda"
    repeats = args.repeats or (30 if cuda else 5)
    warmup = args.warmup if args.warmup is not None else (5 if cuda else 1)
    note = "triton kernels (CUDA)" if cuda else "torch reference on CPU (no GPU: Triton kernels not timed)"
    print(f"# device={dev} backend: {note}")
    bw = measure_copy_bandwidth(dev)
    print(f"# copy bandwidth {bw / 1e9:.1f} GB/s (read+write)")
    ctx = BenchContext(device=dev, batches=[int(b) for b in args.batch.split(",") if b],
                       dtypes=[d for d in args.dtype.split(",") if d], vocab=args.vocab, repeats=repeats,
                       warmup=warmup, inner=args.inner, copy_bw=bw, backend_note=note)
    from kbnf_gpu import Vocabulary

    rows, e2e, prepare = [], [], []
    if args.prepare_only:
        vocab = Vocabulary.from_name("llama3")
        prepare = prepare_rows(ctx, [json_workload(vocab, with_xgrammar=False, extra=ctx.extra),
                                     *(schema_workload(vocab, name) for name in ("object-12",
                                                                                 "nested-array-objects"))])
    else:
        rows = kernel_rows(ctx)
        print_kernel_table(rows, cuda)
        if args.vocab == 128256 and not args.no_e2e:
            e2e = end_to_end_rows(ctx, [json_workload(Vocabulary.from_name("llama3"), with_xgrammar=True,
                                                      extra=ctx.extra)])
            print_e2e_table(e2e)

    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "out" / f"bench_mask_{dev.type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "device": torch.cuda.get_device_name(dev) if cuda else platform.processor() or platform.machine(),
        "backend": note,
        "torch": torch.__version__,
        "copy_bandwidth_gbs": bw / 1e9,
        "repeats": repeats,
        "inner": args.inner if cuda else 1,
        "cpu_threads": torch.get_num_threads(),
        "triton_interpret": os.environ.get("TRITON_INTERPRET"),
        **ctx.extra,
    }
    out.write_text(json.dumps({"meta": meta, "results": rows, "end_to_end": e2e, "prepare": prepare}, indent=2))
    print(f"# wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
