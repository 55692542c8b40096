"""The repository carries its own test material: nothing in it reads from outside the checkout."""
from __future__ import annotations

import re
from pathlib import Path

from data_paths import CORPUS, SEED_DOC, corpus_cases

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("kbnf_gpu", "tests", "benchmarks", ".ci")
# paths and variables that lead outside the repository
FORBIDDEN = re.compile(r"\.\./shared|/work/shared|(?<![\w.])shared/(corpus|seeds)|KBNF_GPU_SHARED|parents\[[2-9]\]")
# environment variables the code may read: switches, the demo's artifact cache (a user setting where the
# library writes, never test data it reads), and the module path the GPU suite hands on to its pytest run
ALLOWED_ENV = {"TRITON_INTERPRET", "AUTOMATA_EXAMPLES", "CUDA_VISIBLE_DEVICES", "PYTHONHASHSEED", "HF_HUB_OFFLINE",
               "KBNF_GPU_CACHE", "PYTHONPATH", "HYPOTHESIS_PROFILE"}
ENV_READ = re.compile(r"""(?:environ(?:\.get|\.setdefault|\.pop)?\s*[\[(]\s*|getenv\(\s*)["']([A-Z0-9_]+)["']""")


def _files() -> list[Path]:
    me = Path(__file__).resolve()
    out = []
    for top in SCANNED:
        for path in (REPO / top).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".sh", "") and path.resolve() != me and "data" not in path.parts:
                out.append(path)
    return out


def test_the_corpus_and_seed_text_are_in_the_repository():
    assert CORPUS.is_file() and (CORPUS.parent / "README.md").is_file() and SEED_DOC.is_file()
    assert REPO in CORPUS.resolve().parents
    cases = corpus_cases()
    assert len(cases) == 398
    assert {c["format"] for c in cases} == {"gbnf", "lark", "regex", "kbnf", "json_schema"}


def test_no_file_refers_to_a_path_outside_the_repository():
    files = _files()
    assert len(files) > 50
    offenders = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in files
                 for m in FORBIDDEN.finditer(p.read_text(encoding="utf-8", errors="replace"))]
    assert not offenders, offenders


def test_only_known_environment_variables_are_read():
    seen = {}
    for p in _files():
        for m in ENV_READ.finditer(p.read_text(encoding="utf-8", errors="replace")):
            seen.setdefault(m.group(1), str(p.relative_to(REPO)))
    unknown = {k: v for k, v in seen.items() if k not in ALLOWED_ENV}
    assert not unknown, f"environment variables outside the allow-list: {unknown}"


def test_the_guard_catches_what_it_should():
    assert FORBIDDEN.search('Path(__file__).parents[2] / "shared"')
    assert FORBIDDEN.search("see ../shared/DESIGN.md")
    assert FORBIDDEN.search('os.environ["KBNF_GPU_SHARED"]')
    assert not FORBIDDEN.search("tests/data/corpus/cases.jsonl")
    assert ENV_READ.search('os.environ.get("SOME_DATA_DIR", "/elsewhere")').group(1) == "SOME_DATA_DIR"


def test_ci_runs_the_readme_command_in_a_fresh_clone():
    run = (REPO / ".ci" / "run").read_text()
    assert "git clone" in run and "mktemp -d" in run and "venv" in run
