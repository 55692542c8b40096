"""kbnf_gpu: grammar-constrained decoding with exact token masks, applied on the GPU in one launch per batch.

Pipeline: front ends (KBNF, GBNF, Lark, regex, JSON Schema) → IR → byte DFAs →
token tables → artifact; at run time an Earley parser per sequence (``Matcher``)
and Triton kernels (``mask_batch``) that mask a whole batch of logits.
"""
from __future__ import annotations

from .compile.compiled import CompileConfig, CompiledGrammar, compile_grammar, prepare_vocabulary
from .engine import AcceptTokenError, AcceptTokenResult, Engine
from .errors import (
    ArtifactError,
    CompileBudgetExceeded,
    DFATooLarge,
    GrammarError,
    KbnfGpuError,
    OptionError,
    TokenRejected,
    VocabularyError,
)
from .runtime.matcher import Matcher
from .vocab import Vocabulary

__version__ = "0.1.0"

__all__ = [
    "AcceptTokenError",
    "AcceptTokenResult",
    "ArtifactError",
    "CompileBudgetExceeded",
    "CompileConfig",
    "CompiledGrammar",
    "DFATooLarge",
    "Engine",
    "GrammarError",
    "KbnfGpuError",
    "Matcher",
    "OptionError",
    "TokenRejected",
    "Vocabulary",
    "VocabularyError",
    "compile_grammar",
    "load_compiled",
    "mask_batch",
    "prepare_vocabulary",
]


def __getattr__(name: str):
    # heavy optional pieces load on first use
    if name == "mask_batch":
        from .batch import mask_batch

        return mask_batch
    if name == "load_compiled":
        from .compile.artifact import load_compiled

        return load_compiled
    raise AttributeError(name)
