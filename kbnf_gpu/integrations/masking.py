"""Rows that may only end: every logit ``-inf`` except a few ids (EOS, a filler), for the integrations."""
from __future__ import annotations

from typing import Sequence

import torch


def allow_only(logits: torch.Tensor, rows: Sequence[int], ids: Sequence[Sequence[int]]) -> None:
    """Row ``rows[k]`` of ``logits`` keeps only the logits of ``ids[k]``; its other columns become ``-inf``."""
    if not rows:
        return
    flat_rows = [r for r, allowed in zip(rows, ids) for _ in allowed]
    flat_cols = [c for allowed in ids for c in allowed]
    device = logits.device
    index_rows = torch.tensor(flat_rows, dtype=torch.long).to(device, non_blocking=True)
    index_cols = torch.tensor(flat_cols, dtype=torch.long).to(device, non_blocking=True)
    kept = logits[index_rows, index_cols]
    logits[torch.tensor(list(rows), dtype=torch.long).to(device, non_blocking=True)] = float("-inf")
    logits[index_rows, index_cols] = kept
