"""Whole-text membership: is a text a complete sentence, a viable prefix, or rejected (and where)?"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .normalize import NormalizeConfig, normalize
from .runtime.earley import DEAD, EarleyParser


@dataclass(frozen=True)
class CheckResult:
    """``status`` is ``"complete"``, ``"prefix"`` or ``"rejected"``; ``offset`` is the first rejected byte."""

    status: str
    offset: int | None = None

    @property
    def complete(self) -> bool:
        return self.status == "complete"


def check_parser(parser: EarleyParser, data: bytes | str) -> CheckResult:
    if isinstance(data, str):
        data = data.encode("utf-8")
    state, _, consumed = parser.step_bytes(parser.initial_state, data)
    if state == DEAD:
        return CheckResult("rejected", consumed)
    return CheckResult("complete" if parser.is_accepting(state) else "prefix")


def check_text(grammar: ir.Grammar, data: bytes | str, config: NormalizeConfig | None = None) -> CheckResult:
    """Run ``data`` through ``grammar`` (eos semantics: complete = the whole text is a sentence)."""
    return check_parser(EarleyParser(normalize(grammar, config)), data)
