"""Rewrites a Lark grammar in the llguidance/xgrammar dialect into one python-lark loads.

The dialect adds, with one unambiguous meaning each:

- ``""`` (an empty literal, any flags): ε, written as the zero-width regex ``/(?:)/``
  (the front end accepts zero-width terminals);
- ``-`` inside rule and terminal names (``function-call``): mangled to
  ``_d4sh_``/``_D4SH_`` here, turned back by ``demangle``;
- rule-level ``x{m,n}``, ``x{m}``, ``x{,n}``, ``x{m,}``: Lark's ``x ~ m..n``;
- ``\\u{H…}`` inside a ``/regex/``: ``\\UHHHHHHHH`` (python-lark evaluates
  ``\\u`` escapes itself and has no braced form).

Two rewrites keep python-lark's loader from blowing up, without changing the
language: every ``?``/``[…]`` of a rule with many of them becomes a fresh rule
``_kbnf_o_N: | item`` (lark expands optionals in one expansion into 2^n
alternatives), and a group nested deeper than ``_MAX_DEPTH`` becomes a fresh
rule ``_kbnf_g_N: …`` (lark's tree transformers recurse per nesting level).
Hoisted rules go after the last line, so lines keep their numbers. The rewrite
is one left-to-right pass over tokens with an explicit stack: no recursion.
"""
from __future__ import annotations

import re

__all__ = ["rewrite_dialect", "mangle", "demangle"]

_MAX_DEPTH = 32
"""Groups nested deeper than this are hoisted into rules of their own."""
_MAX_OPTIONALS = 6
"""A rule statement with more optionals than this gets each hoisted."""

_TOKEN = re.compile(
    r"""(?P<nl>\n)|(?P<ws>[ \t\f\r]+|\\\n)|(?P<comment>//[^\n]*|\#[^\n]*)
    |(?P<string>"(?:\\.|[^"\\\n])*"i?)|(?P<regexp>/(?!/)(?:\\.|[^/\\\n])*/[imslux]*)
    |(?P<name>[_A-Za-z][_A-Za-z0-9]*(?:-[_A-Za-z0-9]+)*)|(?P<number>\d+)|(?P<punct>\.\.|->|.)""",
    re.X | re.S,
)
_ATOM_END = {"string", "regexp", "name"}
_COUNT = re.compile(r"\{\s*(\d*)\s*(,?)\s*(\d*)\s*\}")
_BRACED_U = re.compile(r"(?<!\\)((?:\\\\)*)\\u\{([0-9A-Fa-f]{1,6})\}")


def mangle(name: str) -> str:
    """A dialect name as python-lark reads it (``-`` replaced)."""
    return name.replace("-", "_D4SH_" if name.isupper() else "_d4sh_")


def demangle(name: str) -> str:
    """A name as the grammar wrote it (``-`` back in place)."""
    return name.replace("_d4sh_", "-").replace("_D4SH_", "-")


def rewrite_dialect(text: str) -> str:
    """``text`` rewritten for python-lark's loader (unchanged when it uses no dialect feature)."""
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(text)]
    tokens = [_token(kind, value) for kind, value in tokens]
    tokens = _counted_repetitions(tokens)
    out: list[str] = []
    extra: list[str] = []
    for statement in _statements(tokens):
        out.extend(_hoisted(statement, extra))
    rewritten = "".join(out)
    if not extra:
        return rewritten
    return rewritten + ("" if rewritten.endswith("\n") else "\n") + "".join(extra)


def _token(kind: str, value: str) -> tuple[str, str]:
    if kind == "string" and value in ('""', '""i'):
        return "regexp", "/(?:)/" + value[2:]
    if kind == "name" and "-" in value:
        return kind, mangle(value)
    if kind == "regexp" and "\\u{" in value:
        return kind, _BRACED_U.sub(lambda m: m.group(1) + "\\U%08x" % min(int(m.group(2), 16), 0x10FFFF), value)
    return kind, value


def _atom_start(tokens: list[tuple[str, str]], end: int) -> int | None:
    """Index of the first token of the atom that ends at ``tokens[end]`` (skipping no whitespace)."""
    kind, value = tokens[end]
    if kind in _ATOM_END:
        if end >= 2 and tokens[end - 1] == ("punct", "..") and tokens[end - 2][0] == "string":
            return end - 2
        return end
    if kind == "punct" and value in ")]":
        opener, depth = "(" if value == ")" else "[", 0
        for i in range(end, -1, -1):
            k, v = tokens[i]
            if k == "punct" and v == value:
                depth += 1
            elif k == "punct" and v == opener:
                depth -= 1
                if depth == 0:
                    return i
    return None


def _counted_repetitions(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``x{m,n}`` as Lark's ``x ~ m..n`` (``x{m,}``: ``x ~ m x*``)."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == ("punct", "{") and out and out[-1][0] != "ws":
            j = i
            while j < len(tokens) and tokens[j] != ("punct", "}") and tokens[j][0] in ("punct", "number", "ws"):
                j += 1
            m = _COUNT.fullmatch("".join(v for _, v in tokens[i : j + 1]))
            start = _atom_start(out, len(out) - 1) if m and (m.group(1) or m.group(3)) else None
            if m and start is not None:
                lo, comma, hi = m.group(1) or "0", m.group(2), m.group(3)
                if not comma:
                    out.append(("punct", f" ~ {lo}"))
                elif hi:
                    out.append(("punct", f" ~ {lo}..{hi}"))
                else:
                    atom = out[start:]
                    out.append(("punct", f" ~ {lo} "))
                    out.extend(atom)
                    out.append(("punct", "*"))
                i = j + 1
                continue
        out.append(tok)
        i += 1
    return out


def _statements(tokens: list[tuple[str, str]]):
    """Split tokens into statements: each starts at a line that begins with neither space nor ``|``."""
    current: list[tuple[str, str]] = []
    at_line_start = True
    for tok in tokens:
        if at_line_start and tok[0] not in ("ws", "nl", "comment") and tok != ("punct", "|") and current:
            yield current
            current = []
        current.append(tok)
        at_line_start = tok[0] == "nl"
    if current:
        yield current


def _hoisted(statement: list[tuple[str, str]], extra: list[str]) -> list[str]:
    """A rule statement with deep groups / many optionals moved into fresh rules (appended to ``extra``)."""
    values = [v for _, v in statement]
    head = next((i for i, (k, _) in enumerate(statement) if k not in ("ws", "nl", "comment")), None)
    if head is None or statement[head][0] == "punct" and statement[head][1] not in "?!":
        return values
    name_at = head + (statement[head][0] == "punct")
    if name_at >= len(statement) or statement[name_at][0] != "name":
        return values
    if not statement[name_at][1].lstrip("_")[:1].islower():
        return values  # a terminal definition
    colon = next((i for i in range(name_at + 1, len(statement)) if statement[i] == ("punct", ":")), None)
    if colon is None or any(v == "{" for _, v in statement[name_at + 1 : colon]):
        return values  # template definitions keep their parameters in scope
    body = statement[colon + 1 :]
    depth = peak = 0
    optionals = 0
    for k, v in body:
        if k == "punct" and v in "([":
            depth += 1
            peak = max(peak, depth)
        elif k == "punct" and v in ")]":
            depth -= 1
        optionals += k == "punct" and v in "?["
    if peak <= _MAX_DEPTH and optionals <= _MAX_OPTIONALS:
        return values
    hoist_optionals = optionals > _MAX_OPTIONALS
    out: list[tuple[str, str]] = list(statement[: colon + 1])
    opens: list[int] = []
    for tok in body:
        k, v = tok
        if k == "punct" and v in "([":
            opens.append(len(out))
            out.append(tok)
        elif k == "punct" and v in ")]" and opens:
            start = opens.pop()
            opener = out[start][1]
            inner = "".join(x for _, x in out[start + 1 :]).replace("\n", " ")
            if opener == "[" and hoist_optionals:
                del out[start:]
                out.append(("name", _fresh(extra, "o", "| " + inner)))
            elif opener == "(" and len(opens) >= _MAX_DEPTH:
                del out[start:]
                out.append(("name", _fresh(extra, "g", inner)))
            else:
                out.append(tok)
        elif k == "punct" and v == "?" and hoist_optionals and out:
            end = len(out) - 1
            while end >= 0 and out[end][0] == "ws":
                end -= 1
            start = _atom_start(out, end) if end >= 0 else None
            if start is None:
                out.append(tok)
                continue
            inner = "".join(x for _, x in out[start : end + 1]).replace("\n", " ")
            del out[start:]
            out.append(("name", _fresh(extra, "o", "| " + inner)))
        else:
            out.append(tok)
    return [v for _, v in out]


def _fresh(extra: list[str], kind: str, body: str) -> str:
    name = f"_kbnf_{kind}_{len(extra)}"
    extra.append(f"{name}: {body}\n")
    return name
