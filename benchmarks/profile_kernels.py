"""One kernel at a time, for a profiler or a narrow launch comparison (issue #14).

``--profile``: warm each chosen kernel up, then launch it once more between
``cudaProfilerStart``/``Stop``, so ``ncu --profile-from-start off`` reports
exactly those launches (synthetic tables as in ``bench_mask_gpu.kernel_rows``)::

    ncu --profile-from-start off --set full python benchmarks/profile_kernels.py --profile --batch 4096

``--launches``: time each chosen kernel under a few tuning launches (CUDA-graph
replay, µs per call) beside the default one; a narrow companion to
``gpu_suite.py --sweep``, which covers only the fused kernel::

    python benchmarks/profile_kernels.py --launches --kernels apply,fill --batch 128,1024,4096

On the CPU (the Triton interpreter) both run at tiny sizes and time nothing:
the launches are checked against the default one instead.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton_mask is first imported
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mask_gpu import (  # noqa: E402
    DTYPES, inner_calls, measure_copy_bandwidth, synthetic_lists, synthetic_table, time_cuda)

import kbnf_gpu.kernels as K  # noqa: E402
from kbnf_gpu.kernels.device_tables import build_csr  # noqa: E402
from kbnf_gpu.kernels import triton_mask as TM  # noqa: E402

KINDS = ("mask", "fill", "apply")
# (block words, warps, blocks per program, programs per SM, store, row chunk, extra-id chunk); the default launch
# comes first
LAUNCHES = [(32, 1, 1, 0, "masked", 1, 64), (32, 1, 1, 0, "masked", 4, 256), (32, 1, 2, 0, "masked", 4, 256),
            (32, 1, 4, 0, "masked", 4, 256), (32, 1, 8, 0, "masked", 4, 256), (32, 1, 2, 0, "masked", 4, 128),
            (64, 2, 2, 0, "masked", 4, 256), (32, 1, 1, 0, "packed", 4, 256), (32, 1, 1, 0, "packed", 4, 128),
            (32, 1, 1, 0, "packed", 4, 64), (32, 1, 1, 0, "packed", 2, 256), (16, 1, 1, 0, "packed", 4, 256),
            (64, 1, 1, 0, "packed", 4, 256), (64, 2, 1, 0, "packed", 4, 256), (32, 1, 1, 4, "packed", 4, 256),
            (32, 1, 2, 0, "packed", 4, 256), (128, 4, 1, 0, "packed", 4, 256), (32, 1, 1, 0, "select", 4, 256),
            (32, 1, 2, 0, "select", 4, 256), (32, 1, 2, 0, "split", 4, 256)]


def launcher(kind: str, B: int, V: int, dtype: torch.dtype, device: torch.device, extras: bool = True):
    """``run(cfg, i)`` launching ``kind`` on buffers rotated by ``i``, and the logits buffers to compare."""
    W = -(-V // 32)
    table = synthetic_table(V, 64, device)
    row_lists, extra_lists = synthetic_lists(B, V, 64)
    csr = build_csr(row_lists, extra_lists if extras else None, device=device)
    bitmask = torch.empty((B, W), dtype=torch.int32, device=device)
    K.fill_token_bitmask(bitmask, table, *csr.csr(), vocab_size=V)
    nbuf = max(1, min(16, -(-(128 << 20) // (B * V * dtype.itemsize)))) if device.type == "cuda" else 1
    g = torch.Generator(device=device).manual_seed(B)
    bufs = [torch.randn((B, V), generator=g, device=device).to(dtype) for _ in range(nbuf)]
    out = torch.empty_like(bitmask)
    first = bufs[0].clone()

    def reset() -> None:
        bufs[0].copy_(first)
        out.zero_()

    def run(cfg: TM.LaunchConfig, i: int) -> None:
        if kind == "mask":
            TM.mask_logits(bufs[i % nbuf], table, *csr.csr(), None, None, V, launch=cfg)
        elif kind == "fill":
            TM.fill_bitmask(out, table, *csr.csr(), None, None, V, launch=cfg)
        else:
            TM.apply_bitmask(bufs[i % nbuf], bitmask, None, V, launch=cfg)

    return run, reset, (out if kind == "fill" else bufs[0])


def configs(kind: str, elem_size: int) -> list[TM.LaunchConfig]:
    default = TM.default_launch(kind, 1, 1, elem_size)
    cfgs = [TM.LaunchConfig(bw, w, bpp, pps, store, extra_chunk=ec, row_chunk=rc)
            for bw, w, bpp, pps, store, rc, ec in LAUNCHES
            if (kind != "fill" or store == "masked") and (kind != "apply" or (rc, ec) == (1, 64))]
    return list(dict.fromkeys([default, *cfgs]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--profile", action="store_true", help="one launch of each kernel inside a profiler range")
    mode.add_argument("--launches", action="store_true", help="time a few launches of each kernel")
    ap.add_argument("--kernels", default="mask,fill,apply", help=f"comma-separated of {','.join(KINDS)}")
    ap.add_argument("--batch", default="4096")
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--no-extras", action="store_true", help="rows only: no extra ids (what they cost)")
    ap.add_argument("--dtype", default="bf16", help=f"comma-separated of {','.join(DTYPES)}")
    args = ap.parse_args(argv)
    kinds, dnames = args.kernels.split(","), args.dtype.split(",")
    if set(kinds) - set(KINDS):
        ap.error(f"--kernels: choose from {KINDS}")
    if set(dnames) - set(DTYPES):
        ap.error(f"--dtype: choose from {sorted(DTYPES)}")
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    batches = [int(b) for b in args.batch.split(",")] if cuda else [3]
    V = args.vocab if cuda else 300
    copy_bw = measure_copy_bandwidth(device) if cuda and args.launches else None  # bytes/s, read + write
    for dname, B, kind in ((d, B, k) for d in dnames for B in batches for k in kinds):
        dtype = DTYPES[dname]
        run, reset, result = launcher(kind, B, V, dtype, device, not args.no_extras)
        default, *others = configs(kind, dtype.itemsize)
        if args.profile:
            run(default, 0)
            run(default, 0)
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.cudart().cudaProfilerStart()
            run(default, 0)
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.cudart().cudaProfilerStop()
            print(f"profiled {kind} B={B} V={V} {dname} launch={default}", flush=True)
            continue
        run(default, 0)
        expected = result.clone()
        for cfg in [default, *others]:
            reset()
            run(cfg, 0)
            same = bool(torch.equal(result, expected))
            if not same:
                print(f"MISMATCH {kind} B={B} {cfg}", flush=True)
                return 1
            if cuda:
                floor_s = 2 * B * V * dtype.itemsize / copy_bw
                t = time_cuda(lambda i, c=cfg: run(c, i), 10, 2, inner_calls(floor_s), graph=True)
                us = "-" if t is None else f"{t[0] * 1e6:8.1f} ({t[0] / floor_s:4.2f}x floor)"
            else:
                us = "(interpreter)"
            print(f"{kind:>5} B={B:<5} {dname} {us} µs  bw={cfg.block_words} warps={cfg.num_warps} "
                  f"bpp={cfg.blocks_per_program} pps={cfg.programs_per_sm} store={cfg.store} rows={cfg.row_chunk} "
                  f"extra={cfg.extra_chunk}"
                  f"{' no-extras' if args.no_extras else ''}"
                  f"{'  (default)' if cfg == default else ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
