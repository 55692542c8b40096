"""Offline compiler: byte DFAs × vocabulary → token tables (and, from the lead, grammars → artifacts)."""
from __future__ import annotations

from .row_store import EMPTY_REF, RowStore
from .table_cache import TableCache
from .tables import LexemeSplits, cross_sets, deep_sets, inside_sets, lexeme_splits
from .token_sets import DEFAULT_SPARSE_LIMIT, TokenSet
from .token_trie import TokenTrie, trie_for

__all__ = [
    "DEFAULT_SPARSE_LIMIT",
    "EMPTY_REF",
    "LexemeSplits",
    "RowStore",
    "TableCache",
    "TokenSet",
    "TokenTrie",
    "cross_sets",
    "deep_sets",
    "inside_sets",
    "lexeme_splits",
    "trie_for",
]
