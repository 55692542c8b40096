"""Benchmark the batched mask kernels against the memory floor and xgrammar.

Kernel-only part: synthetic bitset tables (64 rows, realistic densities), 1-4
rows and a few extra ids per sequence, logits of V = 128,256 (Llama-3).
For each batch size and dtype it reports

* ``ours``      — ``apply_token_masks`` (CSR already on the device),
* ``fill``/``apply`` — ``fill_token_bitmask`` and ``apply_bitmask_inplace``,
* ``xgr``       — ``xgrammar.apply_token_bitmask_inplace`` on the same mask,
* ``floor``     — bytes read + written once (2·B·V·elem) over the measured
  device-to-device copy bandwidth.

GPU timings: CUDA events around a CUDA-graph replay of ``--inner`` calls
(kernel time, no Python launch overhead) and around an eager loop (what a
Python caller pays); median over ``--repeats``. Logits buffers rotate so the
footprint exceeds L2 when that takes at most 64 buffers. On CPU the torch
reference runs, timed with ``time.perf_counter``.

The end-to-end part (real matchers) plugs in at :func:`end_to_end_rows`.

    python benchmarks/bench_mask_gpu.py [--device cuda] [--batch 1,16,128,512] [--out FILE]
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

try:
    import kbnf_gpu.kernels as K
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import kbnf_gpu.kernels as K
from kbnf_gpu.kernels.device_tables import build_csr  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}
L2_TARGET_BYTES = 128 << 20


@dataclass
class BenchContext:
    """Everything a benchmark section needs; passed to :func:`end_to_end_rows`."""

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


# ------------------------------------------------------------------ timing


def _sync(device: torch.device) -> None:
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
    """(median, min) seconds per call of ``fn(i)``: events around ``inner`` calls, eager or CUDA-graph replay."""
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


def measure_copy_bandwidth(device: torch.device, repeats: int = 10) -> float:
    """Bytes/s of a large device-to-device copy, counting read + write."""
    nbytes = (1 << 30) if device.type == "cuda" else (256 << 20)
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


def synthetic_batch(batch: int, vocab: int, n_rows: int, device: torch.device, seed: int = 1):
    """CSR for ``batch`` sequences: 1-4 rows each and 0-8 extra ids (EOS among them)."""
    g = torch.Generator().manual_seed(seed)
    row_lists, extra_lists = [], []
    for _ in range(batch):
        k = int(torch.randint(1, 5, (1,), generator=g))
        row_lists.append(torch.randint(0, n_rows, (k,), generator=g).tolist())
        e = int(torch.randint(0, 9, (1,), generator=g))
        extra_lists.append(torch.randint(0, vocab, (e,), generator=g).tolist() + [vocab - 1])
    return build_csr(row_lists, extra_lists, device=device)


# ------------------------------------------------------------------ sections


def kernel_rows(ctx: BenchContext) -> list[dict]:
    """Time our kernels, xgrammar's and the memory floor for every (batch, dtype)."""
    try:
        import xgrammar  # noqa: F401

        xgr_apply = xgrammar.apply_token_bitmask_inplace
    except Exception as e:  # noqa: BLE001 - optional dependency
        xgr_apply = None
        ctx.extra["xgrammar_error"] = repr(e)
    dev, V = ctx.device, ctx.vocab
    W = -(-V // 32)
    table = synthetic_table(V, 64, dev)
    out = []
    for B in ctx.batches:
        csr = synthetic_batch(B, V, 64, dev)
        _sync(dev)
        bitmask = torch.empty((B, W), dtype=torch.int32, device=dev)
        K.fill_token_bitmask(bitmask, table, *csr.csr(), vocab_size=V)
        for dname in ctx.dtypes:
            dtype = DTYPES[dname]
            elem = torch.empty((), dtype=dtype).element_size()
            buf_bytes = B * V * elem
            nbuf = 1
            if dev.type == "cuda":
                nbuf = max(1, min(64, -(-L2_TARGET_BYTES // buf_bytes)))
            g = torch.Generator(device=dev).manual_seed(B)
            bufs = [torch.randn((B, V), generator=g, device=dev).to(dtype) for _ in range(nbuf)]

            def ours(i: int) -> None:
                K.apply_token_masks(bufs[i % nbuf], table, *csr.csr(), vocab_size=V)

            def fill(i: int) -> None:
                K.fill_token_bitmask(bitmask, table, *csr.csr(), vocab_size=V)

            def apply(i: int) -> None:
                K.apply_bitmask_inplace(bufs[i % nbuf], bitmask, vocab_size=V)

            def xgr(i: int) -> None:
                xgr_apply(bufs[i % nbuf], bitmask)

            # correctness on this data: ours vs xgrammar, same mask
            row: dict = {"batch": B, "dtype": dname, "vocab": V, "logits_bytes": buf_bytes, "buffers": nbuf}
            ref = bufs[0].clone()
            ours(0)
            if xgr_apply is not None:
                try:
                    xgr_apply(ref, bitmask)
                    row["xgr_matches"] = bool(torch.equal(ref, bufs[0]))
                except Exception as e:  # noqa: BLE001
                    row["xgr_error"] = repr(e)
            del ref
            row["floor_us"] = 2 * buf_bytes / ctx.copy_bw * 1e6
            fns = {"ours": ours, "fill": fill, "apply": apply}
            if xgr_apply is not None and "xgr_error" not in row:
                fns["xgr"] = xgr
            for name, fn in fns.items():
                if dev.type == "cuda":
                    t_graph = time_cuda(fn, ctx.repeats, ctx.warmup, ctx.inner, graph=True)
                    t_eager = time_cuda(fn, ctx.repeats, ctx.warmup, ctx.inner, graph=False)
                    row[f"{name}_us"] = None if t_graph is None else t_graph[0] * 1e6
                    row[f"{name}_min_us"] = None if t_graph is None else t_graph[1] * 1e6
                    row[f"{name}_eager_us"] = t_eager[0] * 1e6
                else:
                    med, low = time_cpu(fn, ctx.repeats, ctx.warmup)
                    row[f"{name}_us"], row[f"{name}_min_us"] = med * 1e6, low * 1e6
            out.append(row)
            del bufs
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    return out


def end_to_end_rows(ctx: BenchContext) -> list[dict]:
    """Per decoding step for B real matchers: ours (gather rows → one copy → one launch) vs xgrammar.

    Each of the B sequences sits at a different position of a JSON document
    (Llama-3 vocabulary, a JSON grammar); ours = ``prepare_batch`` +
    ``apply_prepared``; xgrammar = ``fill_next_token_bitmask`` per matcher +
    ``apply_token_bitmask_inplace``. Steady state: both engines' per-state
    caches are warm (a serving loop revisits states constantly).
    """
    if ctx.vocab != 128256:
        return []
    from kbnf_gpu import Matcher, Vocabulary, compile_grammar
    from kbnf_gpu.batch import apply_prepared, prepare_batch
    from bench_runtime import DOCUMENT
    from common import greedy_tokens, llama3_hf

    from kbnf_gpu.grammars import JSON_KBNF

    vocab = Vocabulary.from_name("llama3")
    compiled = compile_grammar(JSON_KBNF, vocab, syntax="kbnf", end_mode="eos")
    tokens = greedy_tokens(vocab, compiled, DOCUMENT.encode())
    try:
        import xgrammar as xgr

        hf = llama3_hf()
        info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=vocab.size)
        xgr_compiled = xgr.GrammarCompiler(info).compile_builtin_json_grammar()
    except Exception as e:  # noqa: BLE001 - optional peer
        xgr = None
        ctx.extra["xgrammar_e2e_error"] = repr(e)
    dev = ctx.device
    out = []
    for B in ctx.batches:
        ours_m = []
        xgr_m = []
        for b in range(B):
            k = b % len(tokens)
            m = Matcher(compiled)
            m.accept_tokens(tokens[:k])
            ours_m.append(m)
            if xgr is not None:
                xm = xgr.GrammarMatcher(xgr_compiled)
                for t in tokens[:k]:
                    assert xm.accept_token(t)
                xgr_m.append(xm)
        W = -(-vocab.size // 32)
        bitmask = torch.empty((B, W), dtype=torch.int32, device="cpu").pin_memory() if dev.type == "cuda" \
            else torch.empty((B, W), dtype=torch.int32)
        dev_bitmask = torch.empty((B, W), dtype=torch.int32, device=dev)
        for dname in ctx.dtypes:
            logits = torch.randn((B, vocab.size), device=dev).to(DTYPES[dname])

            def ours(i: int) -> None:
                apply_prepared(logits, prepare_batch(ours_m, dev))

            def ours_cpu(i: int) -> None:
                prepare_batch(ours_m, dev)

            def theirs(i: int) -> None:
                for b, xm in enumerate(xgr_m):
                    xm.fill_next_token_bitmask(bitmask, b)
                dev_bitmask.copy_(bitmask, non_blocking=True)
                xgr.apply_token_bitmask_inplace(logits, dev_bitmask)

            def theirs_cpu(i: int) -> None:
                for b, xm in enumerate(xgr_m):
                    xm.fill_next_token_bitmask(bitmask, b)

            row: dict = {"batch": B, "dtype": dname, "section": "end_to_end"}
            fns = {"ours_e2e": ours, "ours_gather": ours_cpu}
            if xgr is not None:
                fns.update({"xgr_e2e": theirs, "xgr_fill": theirs_cpu})
            for name, fn in fns.items():
                med, low = time_cpu(lambda i: (fn(i), _sync(dev)), ctx.repeats, ctx.warmup)
                row[f"{name}_us"], row[f"{name}_min_us"] = med * 1e6, low * 1e6
            if xgr is not None:
                row["speedup_vs_xgr"] = row["xgr_e2e_us"] / row["ours_e2e_us"]
            out.append(row)
    return out


# ------------------------------------------------------------------ report


def _fmt(v: float | None) -> str:
    return "-" if v is None else (f"{v:9.1f}" if v < 1e5 else f"{v:9.0f}")


def print_table(rows: list[dict], cuda: bool) -> None:
    cols = ["ours_us", "fill_us", "apply_us", "xgr_us", "floor_us", "ours_min_us", "xgr_min_us"]
    if cuda:
        cols += ["ours_eager_us", "xgr_eager_us"]
    print("# microseconds per call: median over repeats (min columns: fastest sample)")
    head = f"{'B':>5} {'dtype':>5} " + " ".join(f"{c[:-3]:>9}" for c in cols) + "  ours/floor  xgr/ours"
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = r["ours_us"] / r["floor_us"] if r.get("ours_us") else None
        vs = r["xgr_us"] / r["ours_us"] if r.get("xgr_us") and r.get("ours_us") else None
        print(
            f"{r['batch']:>5} {r['dtype']:>5} "
            + " ".join(_fmt(r.get(c)) for c in cols)
            + f"  {_fmt(ratio):>10}  {_fmt(vs):>8}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", default="1,16,128,512", help="comma-separated batch sizes")
    ap.add_argument("--dtype", default="bf16,fp32", help="comma-separated: bf16,fp32,fp16")
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--repeats", type=int, default=None, help="timed samples (median)")
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--inner", type=int, default=20, help="GPU calls per timed sample")
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
    ctx = BenchContext(
        device=dev,
        batches=[int(b) for b in args.batch.split(",") if b],
        dtypes=[d for d in args.dtype.split(",") if d],
        vocab=args.vocab,
        repeats=repeats,
        warmup=warmup,
        inner=args.inner,
        copy_bw=bw,
        backend_note=note,
    )
    rows = kernel_rows(ctx)
    print_table(rows, cuda)
    e2e = end_to_end_rows(ctx)
    if e2e:
        print("\n# end to end, B real matchers (JSON grammar, Llama-3), steady state; microseconds per step")
        print(f"{'B':>5} {'dtype':>5} {'ours e2e':>10} {'ours gather':>12} {'xgr e2e':>10} {'xgr fill':>10} {'speedup':>8}")
        for r in e2e:
            print(f"{r['batch']:>5} {r['dtype']:>5} {_fmt(r.get('ours_e2e_us')):>10} {_fmt(r.get('ours_gather_us')):>12} "
                  f"{_fmt(r.get('xgr_e2e_us')):>10} {_fmt(r.get('xgr_fill_us')):>10} {r.get('speedup_vs_xgr', float('nan')):>8.2f}")

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
    out.write_text(json.dumps({"meta": meta, "results": rows, "end_to_end": e2e}, indent=2))
    print(f"# wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
