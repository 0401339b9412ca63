"""What the generators of manifests/errors.toml share: each writes one block of rows between its
own BEGIN and END markers, prints it, checks that errors.toml holds it (--check, in the tests), or
writes it there (--write). Only the Python standard library is used."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "manifests", "errors.toml")


def git(gitdir, *args):
    """A git command on a bare snapshot (the search tool's fetch); None when it fails."""
    r = subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def toml_str(s):
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(s, ensure_ascii=False)


def current(text, begin, end):
    """The block between the markers in errors.toml's text, with its closing newline."""
    a = text.find(begin)
    b = text.find(end)
    if a < 0 or b < 0:
        return None
    return text[a:b + len(end)] + "\n"


def run(argv, new, begin, end, what, script, doc):
    """Prints the block `new` (no argument), checks errors.toml against it (--check) or
    writes it there (--write, appended at the end when the markers are not there yet)."""
    if not argv:
        sys.stdout.write(new)
        return 0
    with open(OUTPUT, encoding="utf-8") as f:
        text = f.read()
    old = current(text, begin, end)
    if argv == ["--check"]:
        if old != new:
            sys.stderr.write(f"manifests/errors.toml's {what} block differs from {script}'s "
                             f"output: run {script} --write\n")
            return 1
        return 0
    if argv == ["--write"]:
        text = text.replace(old, new) if old else text.rstrip("\n") + "\n\n" + new
        with open(OUTPUT, "w", encoding="utf-8") as f:
            f.write(text)
        return 0
    sys.stderr.write(doc)
    return 2
