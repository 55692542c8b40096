"""The exact, slow allowed-token set: walk every token's bytes through the parser.

Tokens are visited in sorted order so a token shares the parser states of the
longest prefix it has in common with the previous one (a token trie without
the trie). Every byte step is memoized by the parser. This is the test oracle
the table-driven masks must agree with.
"""
from __future__ import annotations

import numpy as np

from ..vocab import Vocabulary
from .earley import DEAD, EarleyParser


class SortedTokens:
    """A vocabulary's normal tokens sorted by bytes, with each one's common prefix length with its predecessor."""

    def __init__(self, vocab: Vocabulary) -> None:
        pairs = sorted((vocab.token_bytes(int(i)), int(i)) for i in vocab.normal_ids)
        self.token_bytes = [b for b, _ in pairs]
        self.ids = np.array([i for _, i in pairs], dtype=np.int32)
        lcp = [0] * len(pairs)
        for k in range(1, len(pairs)):
            a, b = self.token_bytes[k - 1], self.token_bytes[k]
            n = min(len(a), len(b))
            j = 0
            while j < n and a[j] == b[j]:
                j += 1
            lcp[k] = j
        self.lcp = lcp


def reference_allowed(parser: EarleyParser, state: int, tokens: SortedTokens) -> np.ndarray:
    """Sorted ids of the normal tokens whose bytes keep ``state`` viable."""
    if state == DEAD:
        return np.zeros(0, dtype=np.int32)
    step = parser.step_byte
    allowed = []
    path = [state]  # path[k] = state after the first k bytes of the current token
    for k, data in enumerate(tokens.token_bytes):
        keep = min(tokens.lcp[k], len(path) - 1)
        del path[keep + 1 :]
        s = path[-1]
        for byte in data[keep:]:
            s = step(s, byte) if s != DEAD else DEAD
            path.append(s)
        if s != DEAD:
            allowed.append(tokens.ids[k])
    out = np.array(allowed, dtype=np.int32)
    out.sort()
    return out
