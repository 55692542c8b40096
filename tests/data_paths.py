"""The test material that ships with the repository (``tests/data``): nothing is read from outside it."""
from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "corpus" / "cases.jsonl"
SEED_DOC = DATA / "seeds" / "kbnf-crate-doc.txt"


def corpus_cases(fmt: str | None = None) -> list[dict]:
    """The corpus records (``tests/data/corpus/README.md``), optionally only those of one ``format``."""
    # split on "\n", not splitlines(): U+2028 inside a grammar is data
    records = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").split("\n") if line.strip()]
    return [r for r in records if fmt is None or r["format"] == fmt]
