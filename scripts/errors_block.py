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
    """The block between the markers in a manifest's text, with its closing newline."""
    a = text.find(begin)
    b = text.find(end)
    if a < 0 or b < 0:
        return None
    return text[a:b + len(end)] + "\n"


def run(argv, new, begin, end, what, script, doc, output=OUTPUT):
    """Prints the block `new` (no argument), checks `output` (errors.toml unless another manifest
    is named) against it (--check) or writes it there (--write, appended at the end when the
    markers are not there yet)."""
    if not argv:
        sys.stdout.write(new)
        return 0
    with open(output, encoding="utf-8") as f:
        text = f.read()
    old = current(text, begin, end)
    name = os.path.relpath(output, ROOT)
    if argv == ["--check"]:
        if old != new:
            sys.stderr.write(f"{name}'s {what} block differs from {script}'s "
                             f"output: run {script} --write\n")
            return 1
        return 0
    if argv == ["--write"]:
        text = text.replace(old, new) if old else text.rstrip("\n") + "\n\n" + new
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
        return 0
    sys.stderr.write(doc)
    return 2


# ---------------------------------------------------------------------------------------------
# Harvesting the messages a source file prints (the generators from gen-rocm-errors.py on).
#
# A message is the text of the string literals of one call to a function that prints or raises
# (`opener`, a regular expression ending at the call's open parenthesis or at a C++ stream):
# adjacent literals are joined, and a literal joined by an expression (`+ x +`, `<< x <<`, an
# f-string's `{x}`) gets "%s" where the expression stands. It is an approximation of what the
# program prints, good enough to check a row's words against; what a row says is ours.

import re  # noqa: E402

_PY_LIT = re.compile(r'''(?P<pre>[rRbBfFuU]{0,2})(?P<q>"""|\'\'\'|"|')''')
_FIELD = re.compile(r"\{[^{}]*\}")
CONVERSION = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfFgGcsp]|\{[^{}]*\}")


def _literal_at(text, i, lang):
    """(value, end) of the string literal starting at text[i], or None."""
    if lang == "py":
        m = _PY_LIT.match(text, i)
        if not m or (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            return None
        q, pre = m.group("q"), m.group("pre").lower()
        j = m.end()
        out = []
        while j < len(text):
            if text.startswith(q, j):
                s = "".join(out)
                if "f" in pre:
                    s = _FIELD.sub("%s", s.replace("{{", "\x01").replace("}}", "\x02"))
                    s = s.replace("\x01", "{").replace("\x02", "}")
                return s, j + len(q)
            if text[j] == "\\" and "r" not in pre and j + 1 < len(text):
                nxt = text[j + 1]
                out.append({"n": " ", "t": " ", "\n": ""}.get(nxt, nxt))
                j += 2
                continue
            if text[j] == "\n" and len(q) == 1:
                return None
            out.append(text[j])
            j += 1
        return None
    if text[i] != '"':
        return None
    j = i + 1
    out = []
    while j < len(text):
        c = text[j]
        if c == '"':
            return "".join(out), j + 1
        if c == "\\" and j + 1 < len(text):
            nxt = text[j + 1]
            out.append({"n": " ", "t": " ", "\n": ""}.get(nxt, nxt))
            j += 2
            continue
        if c == "\n":
            return None
        out.append(c)
        j += 1
    return None


def _skip_comment(text, i, lang):
    """The end of a comment starting at text[i], or None."""
    if lang == "py":
        if text[i] == "#":
            e = text.find("\n", i)
            return len(text) if e < 0 else e
        return None
    if text.startswith("//", i):
        e = text.find("\n", i)
        return len(text) if e < 0 else e
    if text.startswith("/*", i):
        e = text.find("*/", i + 2)
        return len(text) if e < 0 else e + 2
    return None


def _call_messages(text, start, lang, limit=4000):
    """The messages of the call whose arguments start at `start`: until its closing parenthesis
    (or `;` at depth 0 for a C++ stream)."""
    depth = 0
    pieces = []  # the current message's parts
    msgs = []
    gap = ""  # what stands between the last literal and here
    i = start
    end = min(len(text), start + limit)

    def close():
        if pieces:
            msgs.append("".join(pieces).strip())
            pieces.clear()

    while i < end:
        c = text[i]
        skip = _skip_comment(text, i, lang)
        if skip is not None:
            i = skip
            continue
        if lang != "py" and c == "'":
            j = text.find("'", i + 1 + (text[i + 1] == "\\"))
            i = (j + 1) if j > 0 else i + 1
            continue
        lit = _literal_at(text, i, lang)
        if lit:
            value, i = lit
            if pieces and gap.strip():
                pieces.append("%s")
            pieces.append(value)
            gap = ""
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                break
        elif c == "," and depth == 0:
            close()
            gap = ""
            i += 1
            continue
        elif c == ";" and depth == 0 and lang != "py":
            break
        if pieces and not c.isspace() and c not in "+<\\":
            gap += c
        i += 1
    close()
    return [m for m in msgs if m]


def harvest(text, lang, opener):
    """The messages of every call `opener` finds in `text` (a file's source)."""
    out = []
    for m in re.finditer(opener, text):
        out.extend(_call_messages(text, m.end(), lang))
    return out


def is_message(s, min_words=3):
    """Whether a literal reads as a message (words, not a format key or a path)."""
    words = re.findall(r"[A-Za-z]{2,}", CONVERSION.sub(" ", s))
    return len(words) >= min_words


def words(s):
    """A text's words (letters and digits, lower case) outside placeholders."""
    s = re.sub(r"\{[a-z*]+(?::\w+)?\}", " ", s)
    return [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_]+", CONVERSION.sub(" ", s))]


def printed_by_source(pattern, messages, fills=()):
    """The harvested messages that can print `pattern`: each word of the pattern (outside its
    placeholders) is a word of the message, or one of `fills` (the words a row says a
    placeholder of the source is filled with)."""
    want = set(words(pattern)) - {w.lower() for w in fills}
    return [m for m in messages if want and want <= set(words(m["text"]))]


def hand_patterns(exclude_ids):
    """The first long literal piece of each pattern of the rows of errors.toml outside a
    generator's block (its own ids excluded), lower case: what a hand-written row matches."""
    import tomllib
    with open(OUTPUT, "rb") as f:
        table = tomllib.load(f)
    out = []
    for row in table.get("error", []):
        if row["id"] in exclude_ids:
            continue
        for p in row.get("patterns", []):
            pieces = [" ".join(piece.split()).lower()
                      for piece in re.split(r"\{[^{}]*\}", p.replace("(?i)", ""))]
            at = next((i for i, piece in enumerate(pieces) if len(piece) >= 12), None)
            if at is not None:
                # The pattern's other literal words are printed too: "operator {w}::{w} does not
                # exist" is not every message that says "does not exist". Those after the first
                # long piece are not asked of a fragment that ends with it (a message built from
                # several strings: "Loaded runtime CuDNN library:").
                before = [piece for piece in pieces[:at] if len(piece) >= 4]
                after = [piece for piece in pieces[at + 1:] if len(piece) >= 4]
                out.append((pieces[at], before, after, row["id"]))
    return out


def in_hand_row(text, hands):
    """The id of a hand-written row whose words the message prints, if any."""
    flat = " ".join(CONVERSION.sub(" ", text).split()).lower()
    for piece, before, after, rid in hands:
        at = flat.find(piece)
        if at < 0 or not all(b in flat[:at] for b in before):
            continue
        fragment = len(flat) - (at + len(piece)) < 4
        if fragment or all(a in flat[at:] for a in after):
            return rid
    return None


def rows_block(spec, data):
    """The block of rows and its coverage comment for a generator's `spec` (BEGIN, END,
    SOURCE_NOTE, ROWS, LEFT_OUT, CHECKED) over its harvested `data` ({"sources": [...],
    "messages": [{"text", "source", "files", "refs"}]})."""
    msgs = data["messages"]
    ids = {r["id"] for r in spec.ROWS}
    hands = hand_patterns(ids)
    used = {}
    rows_out = []
    for row in spec.ROWS:
        refs, files, sources = [], [], []
        for p in row["patterns"]:
            mine = printed_by_source(p, [m for m in msgs if m["source"] in row["sources"]],
                                     row.get("fills", ()))
            if not mine:
                raise SystemExit(f"{row['id']}: pattern {p!r} is printed by no harvested message")
            for m in mine:
                used.setdefault(m["text"], row["id"])
                for r in m["refs"]:
                    if r not in refs:
                        refs.append(r)
                for f in m["files"]:
                    if f not in files:
                        files.append(f)
                if m["source"] not in sources:
                    sources.append(m["source"])
        rows_out.append((row, refs, sorted(files), sources))
    left = {}
    hand = 0
    for m in msgs:
        if m["text"] in used:
            continue
        if in_hand_row(m["text"], hands):
            hand += 1
            continue
        why = next(reason for reason, test in spec.LEFT_OUT if test(m))
        left[why] = left.get(why, 0) + 1
    out = [spec.BEGIN]
    out += ["# " + line for line in spec.SOURCE_NOTE.strip().splitlines()]
    for s in data["sources"]:
        out.append(f"# Read: {s['name']}: {s['repo']} {', '.join(s['files'])} at {', '.join(s['refs'])} ({s['via']}).")
    out.append(f"# Coverage: {len(msgs)} messages harvested; {len(used)} of them in {len(rows_out)} rows; "
               f"{hand} matched by a hand-written row above; left out:")
    for reason, _ in spec.LEFT_OUT:
        out.append(f"#   {left.get(reason, 0)} {reason}")
    by_name = {s["name"]: s for s in data["sources"]}
    for row, refs, files, sources in rows_out:
        repo = "; ".join(f"{by_name[s]['repo']} {', '.join(f for f in files if f in by_name[s]['files'])}" for s in sources)
        out += ["", "[[error]]", f"id = {toml_str(row['id'])}", f"family = {toml_str(row['family'])}",
                "printed_by = " + toml_str(row["printed_by"]),
                "versions = " + toml_str(f"{row['versions']} (of the releases read: {', '.join(refs)})"),
                f"fatal = {'true' if row['fatal'] else 'false'}"]
        if row.get("not_the_machine"):
            out.append("not_the_machine = true")
        if row.get("generic"):
            out.append("generic = true")
        out += ["patterns = [" + ", ".join(toml_str(p) for p in row["patterns"]) + "]",
                "meaning = " + toml_str(row["meaning"])]
        if not row.get("not_the_machine") or row.get("causes"):
            out.append("causes = [" + ", ".join(toml_str(c) for c in row.get("causes", [])) + "]")
        out += ["decide = " + toml_str(row["decide"]),
                "elsewhere = [" + ", ".join(toml_str(e) for e in row["elsewhere"]) + "]",
                "checks = [" + ", ".join(toml_str(c) for c in row["checks"]) + "]",
                "fix = " + toml_str(row["fix"])]
        if row.get("fix_on_host"):
            out.append("fix_on_host = true")
        out += ["examples = [" + ", ".join(toml_str(e) for e in row["examples"]) + "]",
                "source = " + toml_str(f"{repo}; {row['reports']}"),
                f"checked = {toml_str(spec.CHECKED)}"]
    out.append(spec.END)
    return "\n".join(out) + "\n"


def coverage(spec, data):
    """(harvested, in rows, rows, matched by hand rows, {reason: count}) for explain-coverage."""
    text = rows_block(spec, data)
    m = re.search(r"# Coverage: (\d+) messages harvested; (\d+) of them in (\d+) rows; (\d+) matched", text)
    left = {}
    for reason, _ in spec.LEFT_OUT:
        k = re.search(r"#   (\d+) " + re.escape(reason), text)
        left[reason] = int(k.group(1)) if k else 0
    return tuple(int(x) for x in m.groups()) + (left,)


def extract_git(gitdir, name, repo, refs, paths, lang, opener, via="fetch", assigned=None):
    """The messages `opener` finds in `paths` (files, or folders read whole) at each of `refs`,
    as a source of the vendored data."""
    msgs = {}
    files_read = []
    for ref in refs:
        listing = (git(gitdir, "ls-tree", "-r", "--name-only", ref) or "").split("\n")
        for path in listing:
            if not any(path == p or (p.endswith("/") and path.startswith(p)) for p in paths):
                continue
            if not path.endswith((".py", ".pyx", ".pxd", ".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".hip", ".in")):
                continue
            src = git(gitdir, "show", f"{ref}:{path}") or ""
            file_lang = "py" if path.endswith((".py", ".pyx", ".pxd")) else "c"
            found = harvest(src, file_lang, opener)
            if assigned and file_lang == "py":
                found += harvest_assigned(src, file_lang, assigned)
            for text in found:
                if not is_message(text):
                    continue
                m = msgs.setdefault(text, {"text": text, "source": name, "files": [], "refs": []})
                if path not in m["files"]:
                    m["files"].append(path)
                    if path not in files_read:
                        files_read.append(path)
                if ref not in m["refs"]:
                    m["refs"].append(ref)
    source = {"name": name, "repo": repo, "files": sorted(files_read), "refs": list(refs), "via": via}
    return source, sorted(msgs.values(), key=lambda m: m["text"])


def newest_per_minor(gitdir, tag_re, first=(0, 0)):
    """The newest tag of each minor release (tags matching `tag_re`, whose groups are the
    version's numbers), from `first` on, oldest first."""
    newest = {}
    for t in (git(gitdir, "tag") or "").split():
        m = re.fullmatch(tag_re, t)
        if not m:
            continue
        v = tuple(int(x) for x in m.groups())
        if v[:2] >= tuple(first) and (v[:2] not in newest or v > newest[v[:2]][0]):
            newest[v[:2]] = (v, t)
    return [t for _, t in sorted(newest.values())]


def main(argv, spec, doc):
    """A generator's command line: print, --check, --write, or --extract (from the clones in
    /work/.mirror or the folders named after it)."""
    if argv and argv[0] == "--extract":
        data = spec.extract(argv[1:])
        os.makedirs(os.path.dirname(spec.DATA), exist_ok=True)
        with open(spec.DATA, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write("\n")
        return 0
    with open(spec.DATA) as f:
        data = json.load(f)
    return run(argv, rows_block(spec, data), spec.BEGIN, spec.END, spec.WHAT, spec.SCRIPT, doc)


def _assigned(text, start, lang):
    """The literal (adjacent literals joined, in parentheses or not) assigned at `start`."""
    i, depth, parts = start, 0, []
    while i < len(text):
        c = text[i]
        if c == "(":
            depth += 1
        elif c in " \t" or text.startswith("\\\n", i):
            i += 1 if c != "\\" else 2
            continue
        elif c == "\n":
            if depth <= 0:
                break
        else:
            lit = _literal_at(text, i, lang)
            if not lit:
                break
            parts.append(lit[0])
            i = lit[1]
            continue
        i += 1
    return "".join(parts).strip()


def harvest_assigned(text, lang, names):
    """The literals assigned to variables whose names match `names` (a message kept in a
    variable, printed later: torch's capability warnings)."""
    out = []
    for m in re.finditer(r"(?m)^\s*(" + names + r")\s*=\s*", text):
        s = _assigned(text, m.end(), lang)
        if s:
            out.append(s)
    return out


def extract_wheels(name, project, wheels, members, opener, assigned=None):
    """The messages `opener` finds in the wheel files' `members` (paths inside the wheels), as a
    source of the vendored data; each wheel is one ref (its version)."""
    import zipfile
    msgs, files_read, refs = {}, [], []
    for path in wheels:
        version = os.path.basename(path).split("-")[1]
        refs.append(version)
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            for member in members:
                if member not in names:
                    continue
                src = z.read(member).decode("utf-8", "replace")
                found = harvest(src, "py", opener)
                if assigned:
                    found += harvest_assigned(src, "py", assigned)
                for text in found:
                    if not is_message(text):
                        continue
                    m = msgs.setdefault(text, {"text": text, "source": name, "files": [], "refs": []})
                    if member not in m["files"]:
                        m["files"].append(member)
                    if member not in files_read:
                        files_read.append(member)
                    if version not in m["refs"]:
                        m["refs"].append(version)
    source = {"name": name, "repo": f"PyPI {project}", "files": sorted(files_read), "refs": refs,
              "via": "the released wheels' files, read with pip download"}
    return source, sorted(msgs.values(), key=lambda m: m["text"])


PY_OPENER = (r"\braise\s+[\w.]+\s*\(|\b(?:warnings\.)?warn\s*\(|\b(?:logger|log|_logger)\.(?:warning|warn|error|info|critical|exception)\s*\("
             r"|\b(?:RuntimeError|AssertionError|OSError|ImportError|ValueError)\s*\(")


NATIVE_KEYWORDS = re.compile(
    r"(?i)cuda|cudnn|cublas|cufft|cusparse|cusolver|nccl|libcu|\bdso\b|driver|ptxas|nvrtc|nvjitlink|\bgpu\b|provider|load library")


def native_message(text):
    """Whether a string of a shared library reads as a message about CUDA, the driver, a GPU or
    a provider (not a symbol, a path, a code expression or an identifier)."""
    return (" " in text and "\\" not in text and NATIVE_KEYWORDS.search(text) is not None
            and is_message(text)
            and not re.search(r"::|^[_*$\d]|\w\(.*[,)]|\.(?:cc|h|cpp|cu|cuh)\b|^/|external/|\bconst\b|\bvoid\b|[{};]", text))


def extract_native(name, project, wheels, member_re, min_len=16):
    """The C/C++ message strings compiled into the shared libraries of released wheels: runs of
    printable bytes (a format string is kept whole, `%s` and all) that read as a message and
    name a CUDA library, the driver, a GPU or a provider. Each wheel is one ref (its version)."""
    import zipfile
    run = re.compile(rb"[\x20-\x7e]{%d,}" % min_len)
    msgs, files_read, refs = {}, [], []
    for path in wheels:
        version = os.path.basename(path).split("-")[1]
        refs.append(version)
        with zipfile.ZipFile(path) as z:
            for member in z.namelist():
                if not re.search(member_re, member):
                    continue
                data = z.read(member)
                for m in run.finditer(data):
                    text = " ".join(m.group().decode("ascii").split())
                    if not native_message(text):
                        continue
                    e = msgs.setdefault(text, {"text": text, "source": name, "files": [], "refs": []})
                    if member not in e["files"]:
                        e["files"].append(member)
                        if member not in files_read:
                            files_read.append(member)
                    if version not in e["refs"]:
                        e["refs"].append(version)
    source = {"name": name, "repo": f"PyPI {project}", "files": sorted(files_read), "refs": refs,
              "via": "strings of the released wheels' shared libraries, read with pip download"}
    return source, sorted(msgs.values(), key=lambda m: m["text"])
