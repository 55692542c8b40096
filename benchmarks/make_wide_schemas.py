"""Write JSON Schemas of wide objects (hundreds to thousands of keys) into a directory, for ``bench_realworld.py``.

Real-world schemas with many keys (a ``oneOf`` over every resource of an API,
generated configuration formats) are where compile + first mask has its tail:
the first mask after ``{`` must allow the first token of every key. This
writes, for each ``n`` of ``--sizes``: ``n`` optional integer properties,
``n`` required ones, and a ``oneOf`` of ``n // 10`` objects of 10 keys each.
Measure them beside the peers, each schema in a worker with a timeout::

    python benchmarks/make_wide_schemas.py --out /tmp/wide
    python benchmarks/bench_realworld.py --corpus /tmp/wide --timeout 120 --instances 1
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def wide_schemas(sizes: list[int]) -> dict[str, Any]:
    """File name -> schema."""
    out: dict[str, Any] = {}
    for n in sizes:
        props = {f"field_{i:05d}": {"type": "integer"} for i in range(n)}
        out[f"optional-{n}.json"] = {"type": "object", "properties": props, "additionalProperties": False}
        out[f"required-{n}.json"] = {"type": "object", "properties": props, "required": list(props),
                                     "additionalProperties": False}
        branches = [{"type": "object", "additionalProperties": False, "required": [f"kind_{b}"],
                     "properties": {f"kind_{b}": {"const": b},
                                    **{f"b{b}_key_{i}": {"type": "string"} for i in range(9)}}}
                    for b in range(max(1, n // 10))]
        out[f"oneof-{n}.json"] = {"oneOf": branches}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="directory to write the schemas into")
    ap.add_argument("--sizes", default="100,500,2000", help="comma-separated key counts")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    schemas = wide_schemas([int(s) for s in args.sizes.split(",")])
    for name, schema in schemas.items():
        (args.out / name).write_text(json.dumps(schema), encoding="utf-8")
    print(f"wrote {len(schemas)} schemas to {args.out}")


if __name__ == "__main__":
    main()
