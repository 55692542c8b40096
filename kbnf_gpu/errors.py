"""Errors raised by kbnf_gpu. Every error a user can cause says where and why."""
from __future__ import annotations


class KbnfGpuError(Exception):
    """Base class of every error this package raises on purpose."""


class GrammarError(KbnfGpuError, ValueError):
    """A grammar (or schema, or regex) that cannot be compiled.

    Carries the 1-based ``line`` and ``column`` of the problem when known,
    the ``rule`` it belongs to, and a caret excerpt of the offending line.
    """

    def __init__(
        self,
        message: str,
        *,
        text: str | None = None,
        offset: int | None = None,
        line: int | None = None,
        column: int | None = None,
        rule: str | None = None,
        expected: str | None = None,
        pointer: str | None = None,
    ) -> None:
        if text is not None and offset is not None:
            offset = max(0, min(offset, len(text)))
            line = text.count("\n", 0, offset) + 1
            line_start = text.rfind("\n", 0, offset) + 1
            column = offset - line_start + 1
        self.reason = message
        self.line = line
        self.column = column
        self.rule = rule
        self.expected = expected
        self.pointer = pointer
        self.excerpt: str | None = None
        if text is not None and line is not None and column is not None:
            lines = text.split("\n")
            if 1 <= line <= len(lines):
                src = lines[line - 1]
                self.excerpt = src + "\n" + " " * (column - 1) + "^"
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
            if self.column is not None:
                where.append(f"column {self.column}")
        if self.rule is not None:
            where.append(f"rule '{self.rule}'")
        if self.pointer is not None:
            where.append(f"at '{self.pointer}'")
        msg = self.reason
        if self.expected:
            msg += f" (expected {self.expected})"
        if where:
            msg = ", ".join(where) + ": " + msg
        if self.excerpt:
            msg += "\n" + self.excerpt
        return msg


class DFATooLarge(GrammarError):
    """A terminal's DFA would exceed the configured state limit."""


class CompileBudgetExceeded(GrammarError):
    """Compiling would exceed a limit of ``CompileConfig`` (time, states, rules, expansion size).

    ``limit`` names the ``CompileConfig`` field; the message says which construct ran into it.
    """

    def __init__(self, message: str, *, limit: str, **where) -> None:
        self.limit = limit
        super().__init__(message, **where)


class OptionError(KbnfGpuError, TypeError, ValueError):
    """An unknown option, or an option value of the wrong type or out of range (raised before any work)."""


class TokenRejected(KbnfGpuError, ValueError):
    """A token (or bytes) that the grammar does not allow here; the matcher state is unchanged."""


class VocabularyError(KbnfGpuError, ValueError):
    """A tokenizer file or vocabulary that cannot be loaded."""


class ArtifactError(KbnfGpuError, ValueError):
    """An artifact file that cannot be loaded (corrupt, wrong version, wrong vocabulary)."""


class KernelInputError(KbnfGpuError, TypeError, ValueError):
    """A mask-kernel argument of the wrong type, dtype, shape, device or value (raised before any launch)."""
