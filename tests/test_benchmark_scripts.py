"""The benchmark scripts of issues #11 and #13 run, in their reduced or tiny forms (correctness, never time)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                       env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    return r


def test_bench_trace_reduced(tmp_path):
    """Every engine accepts every token of the trace; fill_bitmask equals allowed_token_ids at every step."""
    r = run([str(REPO / "benchmarks" / "bench_trace.py"), "--reduced"], tmp_path)
    assert "reduced trace: OK" in r.stdout


def test_bench_soak_tiny(tmp_path):
    out = tmp_path / "soak.json"
    run([str(REPO / "benchmarks" / "bench_soak.py"), "--docs", "10", "--schemas", "4", "--every", "5",
         "--settle", "5", "--out", str(out)], tmp_path)
    report = json.loads(out.read_text())
    assert [v["soak"] for v in report["verdicts"]] == ["documents", "schemas"]
    assert report["info"]["documents"]["tokens"] > 100 and report["info"]["schemas"]["tokens"] > 10


def test_fuzz_grammars_tiny(tmp_path):
    out = tmp_path / "fuzz.json"
    run([str(REPO / "benchmarks" / "fuzz_grammars.py"), "--inputs", "80", "--chunk", "20", "--workers", "1",
         "--out", str(out)], tmp_path)
    report = json.loads(out.read_text())
    assert sum(sum(c.values()) for c in report["counts"].values()) == 80 and not report["crashes_and_hangs"]


def test_profile_kernels_launches_agree_on_the_interpreter(tmp_path):
    """Every launch profile_kernels times writes the same logits as the default launch (bf16 and fp32)."""
    r = run([str(REPO / "benchmarks" / "profile_kernels.py"), "--launches", "--kernels", "apply,mask",
             "--dtype", "bf16,fp32"], tmp_path)
    lines = [ln for ln in r.stdout.splitlines() if "(interpreter)" in ln]
    assert "MISMATCH" not in r.stdout and len(lines) >= 2 * 2 * 8
    assert sum("(default)" in ln for ln in lines) == 4
    r = run([str(REPO / "benchmarks" / "profile_kernels.py"), "--profile", "--kernels", "apply"], tmp_path)
    assert "profiled apply" in r.stdout


def test_probe_hostile_runs_its_cases(tmp_path):
    """The hostile-input probe compiles and masks the cases it is asked for (here the keyword loops, which
    took 18 s before their union fused), recording each one's outcome."""
    out = tmp_path / "probe.json"
    run([str(REPO / "benchmarks" / "probe_hostile.py"), "--only", "gbnf: 5,000 keywords", "--out", str(out)],
        tmp_path)
    rows = json.loads(out.read_text())["rows"]
    assert [r["case"] for r in rows] == ["gbnf: 5,000 keywords", "gbnf: 5,000 keywords in a loop"]
    assert all(r["outcome"] == "compiled" and r["first_mask_ms"] >= 0 for r in rows)
