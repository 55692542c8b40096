"""The 100,000-input grammar-text fuzz (issue #13); CI runs 4,000 of the same inputs (tests/test_grammar_fuzz.py).

Mutated corpus grammars in every text syntax (``tests/grammar_fuzz.py``),
each compiled under a 1 s budget in a worker process with a hard per-input
timeout (SIGALRM, then the worker is replaced). Counts: compiled, library
error, crash (any other exception: a bug), hang (past the hard timeout: a bug).
Prints a table, writes JSON with every crash and hang.

    python benchmarks/fuzz_grammars.py [--inputs 100000] [--workers 2] [--timeout 10]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import signal
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from grammar_fuzz import SYNTAXES, inputs, run_one  # noqa: E402


class HardTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise HardTimeout()


def work(job: tuple[str, int, int, float, float]) -> list[dict]:
    """Run one chunk of inputs; one record per input."""
    syntax, n, seed, budget, hard = job
    signal.signal(signal.SIGALRM, _alarm)
    out = []
    for i, text in enumerate(inputs(syntax, n, seed)):
        rec = {"syntax": syntax, "seed": seed, "index": i}
        signal.setitimer(signal.ITIMER_REAL, hard)
        t0 = time.perf_counter()
        try:
            rec["outcome"], _ = run_one(text, syntax, budget)
        except HardTimeout:
            rec.update(outcome="hang", text=text)
        except Exception as err:  # noqa: BLE001 - what the fuzz looks for
            rec.update(outcome="crash", error=f"{type(err).__name__}: {err}"[:500], text=text,
                       trace=traceback.format_exc()[-2000:])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        rec["seconds"] = round(time.perf_counter() - t0, 4)
        if rec["outcome"] in ("ok", "error"):
            rec.pop("text", None)
        out.append(rec)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--budget", type=float, default=1.0, help="CompileConfig.time_budget_s per input")
    ap.add_argument("--timeout", type=float, default=10.0, help="hard per-input limit (a hang past it is a bug)")
    ap.add_argument("--chunk", type=int, default=250)
    ap.add_argument("--out", default=str(HERE / "out" / "fuzz_grammars.json"))
    args = ap.parse_args()

    per_syntax = -(-args.inputs // len(SYNTAXES))
    jobs = [(s, min(args.chunk, per_syntax - k), 1000 + k, args.budget, args.timeout)
            for s in SYNTAXES for k in range(0, per_syntax, args.chunk)]
    t0 = time.perf_counter()
    counts = {s: {"ok": 0, "error": 0, "crash": 0, "hang": 0} for s in SYNTAXES}
    bad, slowest = [], []
    done = 0
    with mp.get_context("fork").Pool(args.workers, maxtasksperchild=20) as pool:
        for records in pool.imap_unordered(work, jobs):
            for r in records:
                counts[r["syntax"]][r["outcome"]] += 1
                if r["outcome"] in ("crash", "hang"):
                    bad.append(r)
                slowest.append((r["seconds"], r["syntax"], r["seed"], r["index"]))
            done += len(records)
            slowest = sorted(slowest, reverse=True)[:10]
            print(f"\r{done}/{per_syntax * len(SYNTAXES)} inputs, {len(bad)} crashes/hangs", end="", file=sys.stderr,
                  flush=True)
    print(file=sys.stderr)
    wall = time.perf_counter() - t0
    print("| syntax | inputs | compiled | library error | crash | hang |")
    print("|---|---|---|---|---|---|")
    for s, c in counts.items():
        print(f"| {s} | {sum(c.values())} | {c['ok']} | {c['error']} | {c['crash']} | {c['hang']} |")
    print(f"\n{done} inputs in {wall:.0f} s; slowest: {slowest[:3]}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": platform.platform(), "date": time.strftime("%Y-%m-%d"),
                               "args": vars(args), "counts": counts, "wall_s": round(wall, 1),
                               "slowest": slowest, "crashes_and_hangs": bad}, indent=1))
    print(f"wrote {out}")
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
