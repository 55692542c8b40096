"""The ``kbnf-gpu`` command line: ``check``, ``compile``, ``demo``, ``bench``."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .errors import KbnfGpuError

SYNTAX_BY_SUFFIX = {".kbnf": "kbnf", ".gbnf": "gbnf", ".lark": "lark", ".json": "json_schema", ".regex": "regex"}


def _read_grammar(path: str, syntax: str | None) -> tuple[str, str]:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as err:
        raise SystemExit(f"kbnf-gpu: cannot read {path}: {err.strerror}") from None
    return text, syntax or SYNTAX_BY_SUFFIX.get(file.suffix, "kbnf")


def cmd_check(args: argparse.Namespace) -> int:
    from .check import check_parser
    from .frontends import parse_grammar
    from .normalize import normalize
    from .runtime.earley import EarleyParser

    text, syntax = _read_grammar(args.grammar, args.syntax)
    data = args.text.encode("utf-8") if args.text is not None else Path(args.text_file).read_bytes()
    grammar = parse_grammar(text, syntax, start=args.start)
    result = check_parser(EarleyParser(normalize(grammar)), data)
    if result.status == "complete":
        print("complete: the text is a sentence of the grammar")
        return 0
    if result.status == "prefix":
        print("prefix: the text is a valid prefix but not a complete sentence")
        return 1
    offset = result.offset or 0
    print(f"rejected at byte {offset}: {data[max(0, offset - 20):offset]!r} ▶ {data[offset:offset + 20]!r}")
    return 2


def _progress_bar(stream=sys.stderr):
    last = {"stage": None, "time": 0.0}

    def report(stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if stage == last["stage"] and done < total and now - last["time"] < 0.1:
            return
        last.update(stage=stage, time=now)
        width = 30
        filled = int(width * done / max(total, 1))
        stream.write(f"\r{stage:<24} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return report


def cmd_compile(args: argparse.Namespace) -> int:
    from .compile.compiled import compile_grammar
    from .config import CompileConfig
    from .vocab import Vocabulary

    text, syntax = _read_grammar(args.grammar, args.syntax)
    source = json.loads(text) if syntax == "json_schema" else text
    vocab = Vocabulary.from_name(args.tokenizer) if "/" not in args.tokenizer and not Path(args.tokenizer).exists() \
        else Vocabulary.from_path(args.tokenizer)
    t0 = time.perf_counter()
    # an offline compile: no wall-clock limit unless asked (a request's compile keeps the library's default)
    config = CompileConfig(time_budget_s=args.time_budget)
    compiled = compile_grammar(source, vocab, syntax=syntax, start=args.start, end_mode=args.end_mode, eager=True,
                               config=config, progress=None if args.quiet else _progress_bar())
    seconds = time.perf_counter() - t0
    size = compiled.save(args.output)
    summary = compiled.summary()
    summary.update(seconds=round(seconds, 3), artifact_bytes=size, output=str(args.output))
    for key, value in summary.items():
        print(f"{key:>16}: {value}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(batch=args.batch, steps=args.steps, seed=args.seed, device=args.device,
                    tokenizer=args.tokenizer)


def cmd_bench(args: argparse.Namespace) -> int:
    from .demo import run_bench

    return run_bench(device=args.device, tokenizer=args.tokenizer)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kbnf-gpu", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="is a text a complete sentence, a valid prefix, or rejected?")
    p.add_argument("grammar", help="grammar file")
    p.add_argument("--syntax", choices=["kbnf", "gbnf", "lark", "regex", "json_schema"], default=None,
                   help="grammar language (default: from the file suffix, else kbnf)")
    p.add_argument("--start", default=None, help="start nonterminal")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--text", help="the text to check")
    group.add_argument("--text-file", help="read the text to check from a file")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("compile", help="compile a grammar for a tokenizer into an artifact file")
    p.add_argument("grammar")
    p.add_argument("--syntax", choices=["kbnf", "gbnf", "lark", "regex", "json_schema"], default=None)
    p.add_argument("--start", default=None)
    p.add_argument("--end-mode", choices=["eager", "eos"], default=None)
    p.add_argument("--tokenizer", required=True,
                   help="tokenizer.json, tiktoken file, SentencePiece .model, or llama3|gpt2|qwen|mistral")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="fail if compiling takes longer (default: no limit)")
    p.set_defaults(func=cmd_compile)

    for name, func, helptext in (("demo", cmd_demo, "serving-loop demo: JSON for 16 sequences"),
                                 ("bench", cmd_bench, "quick per-step timing of the serving loop")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
        p.add_argument("--tokenizer", default="llama3")
        if name == "demo":
            p.add_argument("--batch", type=int, default=16)
            p.add_argument("--steps", type=int, default=256)
            p.add_argument("--seed", type=int, default=0)
        p.set_defaults(func=func)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KbnfGpuError as err:
        print(f"kbnf-gpu: {type(err).__name__}: {err}", file=sys.stderr)
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
