#!/usr/bin/env python3
"""The share of tests/explain cases whose top cause is the one the maintainers named, by kind.

Runs a gpu-doctor binary on every case the way tests/it/explain.rs does (the fixture machine's
root and environment, the text through --log, standard input or the arguments) and compares
`explain.cause` with the case's `cause`. Kinds (the issue's three): "cause on the machine" (the case
names a finding), "decoy" (cause = "none" on a machine that has findings of its own: the case's
`kind = "decoy"`, or a leading comment that says Decoy) and "points elsewhere" (cause = "none",
any other case: the real cause is another machine's, the job's or the program's).

usage: tests/explain/score.py [BINARY]                     (default target/debug/gpu-doctor)
       tests/explain/score.py [BINARY] --held-out [FILE]     (default held-out/2025-26.toml)
The held-out set (a file of `[[case]]` tables, each with an explicit `kind`) is run twice, the
text once on standard input and once through --log, and scored for each way.
Prints one line per case that misses, then the shares. Standard library only (Python 3.11+).
"""

import os
import subprocess
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def fixture_env(machine):
    env = {}
    path = os.path.join(ROOT, "tests", "fixtures", machine, "env")
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                env[k] = v
    return env


def run(binary, case, tmp, via=None):
    root = os.path.join(ROOT, "tests", "fixtures", case["machine"], "root")
    args = [binary, "--root", root, "--timeout", "20", "explain", "--json"]
    via = via or case.get("via", "log")
    stdin = None
    if via == "args":
        args += ["--", case["text"]]
    elif via == "stdin":
        stdin = case["text"].encode()
    else:
        log = os.path.join(tmp, "case.log")
        with open(log, "w") as f:
            f.write(case["text"])
        args += ["--log", log]
    out = subprocess.run(args, input=stdin, capture_output=True, env=fixture_env(case["machine"]))
    try:
        import json
        return json.loads(out.stdout)["explain"].get("cause") or "none"
    except ValueError:
        return "error"


KINDS = {"machine": "cause on the machine", "decoy": "decoy", "elsewhere": "points elsewhere"}


def kind_of(case, path):
    """The kind of a case without a `kind` key: from its cause and its leading comment."""
    if case["cause"] != "none":
        return KINDS["machine"]
    head = []
    for line in open(path):
        if not line.startswith("#"):
            break
        head.append(line)
    return KINDS["decoy"] if "decoy" in "".join(head).lower() else KINDS["elsewhere"]


def report(totals):
    all_right = sum(r for r, _ in totals.values())
    all_count = sum(c for _, c in totals.values())
    for kind, (right, count) in sorted(totals.items()):
        print(f"{kind}: {right}/{count} ({100 * right // max(count, 1)}%)")
    print(f"all: {all_right}/{all_count} ({100 * all_right // max(all_count, 1)}%)")


def held_out(binary, path):
    """Each case of a held-out file, through standard input and through --log."""
    with open(path, "rb") as f:
        cases = tomllib.load(f)["case"]
    with tempfile.TemporaryDirectory() as tmp:
        for via in ("stdin", "log"):
            totals = {}
            for case in cases:
                kind = KINDS[case["kind"]]
                got = run(binary, case, tmp, via)
                right, count = totals.get(kind, (0, 0))
                ok = got == case["cause"]
                totals[kind] = (right + ok, count + 1)
                if not ok:
                    print(f"miss {case['name']} ({via}): {got}, want {case['cause']}")
            print(f"-- {os.path.basename(path)} through {via}")
            report(totals)
    return 0


def main(argv):
    if "--held-out" in argv:
        at = argv.index("--held-out")
        rest = argv[at + 1:]
        path = rest[0] if rest else os.path.join(HERE, "held-out", "2025-26.toml")
        argv = argv[:at]
        binary = argv[0] if argv else os.path.join(ROOT, "target", "debug", "gpu-doctor")
        return held_out(binary, path)
    binary = argv[0] if argv else os.path.join(ROOT, "target", "debug", "gpu-doctor")
    totals = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(HERE)):
            if not name.endswith(".toml"):
                continue
            with open(os.path.join(HERE, name), "rb") as f:
                case = tomllib.load(f)
            kind = KINDS.get(case.get("kind")) or kind_of(case, os.path.join(HERE, name))
            got = run(binary, case, tmp)
            right, count = totals.get(kind, (0, 0))
            ok = got == case["cause"]
            totals[kind] = (right + ok, count + 1)
            if not ok:
                print(f"miss {name}: {got}, want {case['cause']}")
    report(totals)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
