"""Where the project's shared test material lives: ``shared/`` beside the checkout (or $KBNF_GPU_SHARED)."""
from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("KBNF_GPU_SHARED", Path(__file__).resolve().parents[2] / "shared"))
CORPUS = SHARED / "corpus" / "cases.jsonl"
SEED_DOC = SHARED / "seeds" / "kbnf-crate-doc.txt"
assert CORPUS.is_file(), f"the grammar corpus is missing: {CORPUS} (set KBNF_GPU_SHARED)"
