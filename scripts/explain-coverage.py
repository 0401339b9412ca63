#!/usr/bin/env python3
"""The coverage of explain's generated rows: per generator of manifests/errors.toml, the
strings harvested from its source, the rows written, the strings those rows print, and the
strings deliberately left out with why.

Each generator prints its block with a coverage comment (checked against errors.toml by its
--check test); this reads those comments, so the figures are the generators' own.

usage: scripts/explain-coverage.py          a table for people
       scripts/explain-coverage.py --json   the same as JSON (tests/it/explain.rs reads it)
Only the Python standard library is used.
"""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATORS = [
    "gen-nvrm-errors.py",
    "gen-container-toolkit-errors.py",
    "gen-nccl-errors.py",
    "gen-cuda-errors.py",
    "gen-cuda-library-errors.py",
    "gen-torch-errors.py",
    "gen-jax-errors.py",
    "gen-python-gpu-errors.py",
    "gen-native-errors.py",
    "gen-rocm-errors.py",
]


def coverage(script):
    """The figures of one generator's block."""
    out = subprocess.run([sys.executable, os.path.join(HERE, script)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{script} failed: {out.stderr}")
    block = out.stdout
    head = block[block.index("# Coverage:"):]
    harvested = int(re.search(r"# Coverage: (\d+)", head).group(1))
    in_rows = re.search(r"(\d+) (?:of them )?in (\d+) rows", head)
    hand = re.search(r"(\d+) (?:matched by a hand-written row|share a number with a hand-written row)", head)
    left = {}
    lines = head.splitlines()
    start = next(i for i, line in enumerate(lines) if "left out:" in line) + 1
    for line in lines[start:]:
        m = re.match(r"#\s+(\d+) (.+)$", line)
        if not m:
            break
        left[m.group(2)] = int(m.group(1))
    return {
        "generator": script,
        "harvested": harvested,
        "rows": block.count("[[error]]"),
        "in_rows": int(in_rows.group(1)) if in_rows else 0,
        "in_hand_rows": int(hand.group(1)) if hand else 0,
        "left_out": left,
    }


def main(argv):
    rows = [coverage(g) for g in GENERATORS if os.path.exists(os.path.join(HERE, g))]
    if argv == ["--json"]:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for r in rows:
        print(f"{r['generator']}: {r['harvested']} harvested, {r['rows']} rows printing {r['in_rows']}, "
              f"{r['in_hand_rows']} in hand-written rows; left out:")
        for why, n in r["left_out"].items():
            print(f"  {n:5} {why}")
    total = {k: sum(r[k] for r in rows) for k in ("harvested", "rows", "in_rows", "in_hand_rows")}
    print(f"all: {total['harvested']} harvested, {total['rows']} rows printing {total['in_rows']}, "
          f"{total['in_hand_rows']} in hand-written rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
