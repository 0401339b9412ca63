#!/usr/bin/env python3
"""Runs gpu-doctor's plans for real, as far as this machine allows, and counts what fails.

For every fixture machine (tests/fixtures/*) and every target below, the plan is made and run
with `gpu-doctor --root SANDBOX plan ARGS --execute --yes` in a throwaway copy of the fixture:

- user-level steps run for real: virtual environments are made by the Python the plan names,
  played by this machine's pyenv interpreters (python3 is the target release's: 3.10 on Ubuntu
  22.04, 3.12 on 24.04; python3.11 is 3.11, ...); uv is installed from PyPI for real and makes
  environments from those interpreters (UV_PYTHON_PREFERENCE=only-system);
- every pip line is resolved by that interpreter's own pip against PyPI (`pip install --dry-run
  --report --only-binary=:all:`; lines on PyTorch's index from PyPI's metadata for the same
  release, said in the results; an aarch64 fixture's lines for `--platform
  manylinux2014_aarch64` and the manylinux_2_x aarch64 tags), and what it would install is written into the environment as
  metadata (scripts/plan-run/pip), so the plan's own checks that the build landed see it;
- root steps go through recording stand-ins (apt-get, dpkg, dpkg-query, wget, modprobe,
  mokutil, update-initramfs, sudo, conda) that keep what they "installed" for the next run;
- each plan is run twice: the second run must skip every step;
- with --resume, each plan is also stopped at each changing command in turn (the stand-in
  fails) and run again: it must finish, skipping the steps the first run finished.

Figures (plans, refused, steps run, pip lines resolved, failures with their reason) go to stdout
and, with --json FILE, to a file; PLANS-RUN.md holds the last figures.

usage: scripts/plan-run.py [--bin PATH] [--fixtures a,b] [--targets quick|all]
                           [--target "ARGS"]... [--resume] [--json FILE] [--jobs N]
Needs: a built gpu-doctor (cargo build), pyenv's Pythons 3.8-3.13 under ~/.pyenv/versions, and
PyPI. Only the Python standard library is used.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SHIM = os.path.join(HERE, "plan-run")
PYENV = os.path.expanduser("~/.pyenv/versions")
CACHE = os.path.join(ROOT, "target", "plan-run-cache")

QUICK = [
    [],
    ["--framework", "torch"],
    ["--framework", "cupy"],
    ["--framework", "jax[cuda13]"],
    ["--framework", "tensorflow"],
    ["--framework", "torch", "--python", "3.11"],
    ["--framework", "torch", "--python", "3.13"],
    ["--framework", "torch", "--os", "ubuntu-24.04"],
    ["--via", "apt", "--framework", "torch"],
    ["--driver", "auto"],
]
ALL = QUICK + [
    ["--framework", "tensorflow==2.15"],
    ["--framework", "jax[cuda12]", "--driver", "auto"],
    ["--framework", "torch==2.5.1"],
    ["--via", "conda", "--framework", "torch"],
    ["--via", "apt", "--cuda", "12.8"],
    ["--framework", "cupy", "--os", "ubuntu-24.04", "--python", "3.12"],
]

LOG = '{ printf \'%s\' "${0##*/}"; for a in "$@"; do printf \' [%s]\' "$a"; done; printf \'\\n\'; } >>"$STUB_LOG"'
# A changing call numbered $STUB_FAIL_CALL fails (the counter lives in the state folder).
FAIL = '''n=$(( $(cat "$STUB_STATE/calls" 2>/dev/null || echo 0) + 1 )); echo "$n" >"$STUB_STATE/calls"
if [ "${STUB_FAIL_CALL:-0}" = "$n" ]; then echo "plan-run: call $n fails on purpose" >&2; exit 100; fi'''

STUBS = {
    # `-n` (never prompt) is what a run from the TUI passes.
    "sudo": '[ "${1:-}" = -n ] && shift; exec "$@"',
    "apt-get": FAIL + '''
if [ "$1" = install ]; then
  shift
  for a in "$@"; do
    case "$a" in -*) ;; *=*) echo "${a%%=*} ${a#*=}" >>"$STUB_STATE/packages" ;; *) echo "$a 1.0-1" >>"$STUB_STATE/packages" ;; esac
  done
fi''',
    "dpkg": FAIL + '\n[ "$1" = -i ] && echo "cuda-keyring 1.1-1" >>"$STUB_STATE/packages"; exit 0',
    "dpkg-query": '''format=$2; package=$3
line=$(grep -s "^$package " "$STUB_STATE/packages" | tail -n 1) || exit 1
[ -n "$line" ] || exit 1
case "$format" in *Status*) printf 'install ok installed' ;; *Version*) printf '%s' "${line#* }" ;; esac''',
    "wget": FAIL + '\n[ "$1" = -qO ] && : >"$2"; exit 0',
    "update-initramfs": FAIL,
    "modprobe": FAIL,
    # --import queues the key for the next boot; --test-key then says so, as mokutil 0.7 does.
    "mokutil": '''case "$1" in
  --test-key) if grep -sqxF -- "$2" "$STUB_STATE/mok-new"; then echo "$2 is already in the enrollment request"; exit 1; fi
    echo "$2 is not enrolled"; exit 0 ;;
esac
''' + FAIL + '''
[ "$1" = --import ] && printf '%s\\n' "$2" >>"$STUB_STATE/mok-new"; exit 0''',
    "usermod": FAIL,
    "amdgpu-install": FAIL,
    "conda": FAIL + '''
case "$1" in
  list) grep -sqxF -- "$3" "$STUB_STATE/conda-envs" ;;
  create) printf '%s\\n' "$4" >>"$STUB_STATE/conda-envs" ;;
  run) case " $* " in *" -c "*) exit 1 ;; esac ;;
esac''',
}
TOOLS = ["mkdir", "tee", "grep", "rm", "mktemp", "awk", "cat", "tail", "chmod", "sed", "head",
         "dirname", "basename", "env", "ln", "cp", "mv", "touch", "printf", "id", "sort", "tr", "cut"]


def cuda_minors():
    """`12.4`... every CUDA release cuda.toml lists."""
    out = []
    with open(os.path.join(ROOT, "manifests", "cuda.toml"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("version = "):
                v = line.split('"')[1].split(".")
                if len(v) >= 2 and f"{v[0]}.{v[1]}" not in out:
                    out.append(f"{v[0]}.{v[1]}")
    return out


CUDA_MINORS = cuda_minors()


def pyenv_pythons():
    """`3.10` -> its pyenv interpreter, for every pyenv Python 3."""
    out = {}
    for name in sorted(os.listdir(PYENV)) if os.path.isdir(PYENV) else []:
        parts = name.split(".")
        if len(parts) == 3 and parts[0] == "3":
            exe = os.path.join(PYENV, name, "bin", f"python{parts[0]}.{parts[1]}")
            if os.access(exe, os.X_OK):
                out[f"{parts[0]}.{parts[1]}"] = exe
    return out


def fixture_env(name):
    env = {}
    with open(os.path.join(FIXTURES, name, "env"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                env[k] = v
    return env


def fixture_arch(name):
    """The fixture machine's `uname -m` (its /proc/sys/kernel/arch), x86_64 when it has none."""
    path = os.path.join(FIXTURES, name, "root", "proc", "sys", "kernel", "arch")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or "x86_64"
    except OSError:
        return "x86_64"


def fixtures():
    return sorted(n for n in os.listdir(FIXTURES)
                  if os.path.isdir(os.path.join(FIXTURES, n, "root"))
                  and os.path.isfile(os.path.join(FIXTURES, n, "env")))


def copy_tree(src, dst, root):
    """Copies a fixture, re-pointing absolute links inside the copy (as --root reads them)."""
    os.makedirs(dst, exist_ok=True)
    for entry in os.scandir(src):
        target = os.path.join(dst, entry.name)
        if entry.is_symlink():
            link = os.readlink(entry.path)
            if os.path.isabs(link):
                link = os.path.join(root, link.lstrip("/"))
            os.symlink(link, target)
        elif entry.is_dir():
            copy_tree(entry.path, target, root)
        else:
            shutil.copyfile(entry.path, target)


def write_exec(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o755)


def doctor(binary, name):
    env = fixture_env(name)
    out = subprocess.run([binary, "--root", os.path.join(FIXTURES, name, "root"), "doctor", "--json"],
                         env=env, capture_output=True, text=True, timeout=120)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return {}


class Sandbox:
    """A copy of one fixture with the stand-ins, the Pythons and the pip stand-in in place."""

    def __init__(self, name, report, args, pythons):
        self.dir = tempfile.mkdtemp(prefix=f"plan-run-{name}-")
        self.root = os.path.join(self.dir, "root")
        copy_tree(os.path.join(FIXTURES, name, "root"), self.root, self.root)
        for sub in ("state", "tmp", "home", "work"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        stubs = os.path.join(self.root, "opt", "plan-run", "bin")
        tools = os.path.join(self.root, "opt", "plan-run", "tools")
        os.makedirs(stubs, exist_ok=True)
        os.makedirs(tools, exist_ok=True)
        for cmd, body in STUBS.items():
            write_exec(os.path.join(stubs, cmd), f"#!/bin/sh\n{LOG}\n{body}\n")
        for tool in TOOLS:
            real = shutil.which(tool)
            if real:
                os.symlink(real, os.path.join(tools, tool))
        kernel = (report.get("host") or {}).get("kernel_release") or "6.8.0-45-generic"
        write_exec(os.path.join(stubs, "uname"), f"#!/bin/sh\n[ \"$1\" = -r ] && echo {kernel} && exit 0\nexec {shutil.which('uname')} \"$@\"\n")
        # python3 is the target release's own; pythonX.Y each pyenv Python. The interpreters
        # are linked (hard links: same bytes, no copy) into the root, so an environment made
        # with one stays inside --root, as gpu-doctor requires before it runs a plan there.
        self.python3 = release_python(report, args, pythons)
        inside = {}
        for version, exe in pythons.items():
            home = os.path.dirname(os.path.dirname(exe))
            dest = os.path.join(self.root, "opt", "plan-run", "python", version)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            subprocess.run(["cp", "-al", home, dest], check=True)
            inside[version] = os.path.join(dest, "bin", os.path.basename(exe))
            write_exec(os.path.join(stubs, f"python{version}"), f"#!/bin/sh\nexec {inside[version]} \"$@\"\n")
        if self.python3 in inside:
            write_exec(os.path.join(stubs, "python3"), f"#!/bin/sh\nexec {inside[self.python3]} \"$@\"\n")
        self.real_envs(report, inside)
        # apt-cache madison: NCCL builds for every CUDA release (what repos.toml says NVIDIA's
        # repository carries was checked when the plan was made; the stand-in only answers).
        madison = "".join(f" libnccl2 | 2.99.9-1+cuda{c} | plan-run Packages\\n libnccl-dev | 2.99.9-1+cuda{c} | plan-run Packages\\n"
                          for c in CUDA_MINORS)
        # cuDNN 9.10.2, the line pre-Turing GPUs stay on (cudnn.toml), for each CUDA major.
        madison += "".join(f" {p}-cuda-{major} | 9.10.2.21-1 | plan-run Packages\\n"
                           for major in (11, 12, 13) for p in ("libcudnn9", "libcudnn9-dev"))
        write_exec(os.path.join(stubs, "apt-cache"), f"#!/bin/sh\n{LOG}\n[ \"$1\" = madison ] && printf '{madison}' | grep \"^ $2 \"\nexit 0\n")
        env = {k: v for k, v in fixture_env(name).items() if k != "PATH"}
        env.update({
            "PATH": "/opt/plan-run/bin:" + fixture_env(name).get("PATH", "/usr/bin:/bin") + ":/opt/plan-run/tools",
            "HOME": os.path.join(self.dir, "home"),
            "TMPDIR": os.path.join(self.dir, "tmp"),
            "STUB_LOG": os.path.join(self.dir, "calls.log"),
            "STUB_STATE": os.path.join(self.dir, "state"),
            "PYTHONPATH": SHIM,
            "PLANRUN_PIP_LOG": os.path.join(self.dir, "pip.log"),
            "PLANRUN_CACHE": CACHE,
            # An aarch64 fixture's pip lines are resolved for manylinux aarch64 wheels.
            "PLANRUN_PLATFORM": fixture_arch(name),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "UV_PYTHON_PREFERENCE": "only-system",
            "UV_PYTHON_DOWNLOADS": "never",
            # This machine reaches PyPI through a TLS proxy whose root is in the system store.
            "UV_NATIVE_TLS": "true",
        })
        self.env = env

    def real_envs(self, report, pythons):
        """The fixture's virtual environments get a real interpreter of their Python (their
        files stay), so pip and the plan's checks run in them."""
        for e in report.get("python_envs", []):
            if e.get("kind") != "venv" or not e.get("python_version"):
                continue
            mm = ".".join(e["python_version"].split(".")[:2])
            prefix = os.path.join(self.root, e["path"].lstrip("/"))
            if mm in pythons and os.path.isdir(prefix):
                for link in ("python", "python3", f"python{mm}"):
                    p = os.path.join(prefix, "bin", link)
                    if os.path.lexists(p):
                        os.remove(p)
                subprocess.run([pythons[mm], "-m", "venv", "--copies", "--without-pip", prefix],
                               capture_output=True, timeout=120)
                subprocess.run([os.path.join(prefix, "bin", "python"), "-m", "ensurepip"],
                               capture_output=True, timeout=300)

    def run(self, binary, args, fail_call=0):
        env = dict(self.env)
        if fail_call:
            env["STUB_FAIL_CALL"] = str(fail_call)
        if os.path.exists(os.path.join(self.dir, "state", "calls")):
            os.remove(os.path.join(self.dir, "state", "calls"))
        log = os.path.join(self.dir, "plan.log")
        out = subprocess.run([binary, "--root", self.root, "--timeout", "20", "plan", *args,
                              "--execute", "--yes", "--log", log],
                             env=env, cwd=os.path.join(self.dir, "work"), capture_output=True,
                             text=True, timeout=1800)
        return out

    def pip_lines(self):
        path = os.path.join(self.dir, "pip.log")
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def release_python(report, args, pythons):
    """The python3 the plan's target system has: the release named with --os, else the
    machine's (22.04: 3.10, 24.04: 3.12, as repos.toml says), else the machine's own."""
    os_arg = args[args.index("--os") + 1] if "--os" in args else None
    host = report.get("host") or {}
    system = os_arg or f"{host.get('os_id')}-{host.get('os_version')}"
    by_release = {"ubuntu-22.04": "3.10", "ubuntu-24.04": "3.12"}
    if system in by_release:
        return by_release[system]
    for e in report.get("python_envs", []):
        if e.get("kind") == "system" and e.get("python_version"):
            return ".".join(e["python_version"].split(".")[:2])
    return "3.10"


def steps_in(text):
    """`==> [k/n] id: title` lines: the steps a run started, and the ones it skipped."""
    started, skipped, done = [], [], []
    current = None
    for line in text.splitlines():
        if line.startswith("==> ["):
            current = line.split("] ", 1)[1].split(":", 1)[0]
            started.append(current)
        elif line.strip().startswith("skipped:") and current:
            skipped.append(current)
        elif line.strip() == "done" and current:
            done.append(current)
    return started, skipped, done


def one(binary, name, report, args, pythons, resume):
    """Plans and runs one target on one fixture; returns its record."""
    rec = {"fixture": name, "args": args}
    box = Sandbox(name, report, args, pythons)
    try:
        first = box.run(binary, args)
        rec["exit"] = first.returncode
        if first.returncode == 1 and "refused" in first.stderr:
            rec["refused"] = first.stderr.strip().splitlines()[0][:300]
            return rec
        started, skipped, done = steps_in(first.stdout)
        rec["steps"], rec["done"] = started, done
        rec["pip"] = box.pip_lines()
        if first.returncode != 0:
            rec["failure"] = "\n".join((first.stdout + first.stderr).strip().splitlines()[-12:])
            return rec
        with open(box.env["STUB_LOG"], encoding="utf-8") if os.path.exists(box.env["STUB_LOG"]) else open(os.devnull) as f:
            rec["calls"] = [line.rstrip("\n") for line in f]
        calls = int(open(os.path.join(box.dir, "state", "calls")).read()) if os.path.exists(os.path.join(box.dir, "state", "calls")) else 0
        second = box.run(binary, args)
        s_started, s_skipped, s_done = steps_in(second.stdout)
        rec["second"] = {"exit": second.returncode, "done": s_done}
        if second.returncode != 0 or s_done:
            rec["second"]["output"] = "\n".join((second.stdout + second.stderr).strip().splitlines()[-12:])
        if resume:
            rec["resume"] = []
            for n in range(1, calls + 1):
                again = Sandbox(name, report, args, pythons)
                try:
                    stopped = again.run(binary, args, fail_call=n)
                    _, _, stopped_done = steps_in(stopped.stdout)
                    after = again.run(binary, args)
                    _, after_skipped, after_done = steps_in(after.stdout)
                    # apt-update runs again while anything it serves is still to install.
                    ok = (stopped.returncode != 0 and after.returncode == 0
                          and all(s in after_skipped for s in stopped_done if s != "apt-update"))
                    rec["resume"].append({"call": n, "stopped_exit": stopped.returncode,
                                          "after_exit": after.returncode, "ok": ok,
                                          "stopped_done": stopped_done, "after_done": after_done})
                finally:
                    again.close()
        return rec
    finally:
        box.close()


def summary(records):
    plans = [r for r in records if "refused" not in r]
    pip = [p for r in plans for p in r.get("pip", []) if not p.get("real")]
    failed_pip = [p for p in pip if not p["ok"]]
    failures = [r for r in plans if r.get("exit") not in (0,)]
    second_bad = [r for r in plans if "second" in r and (r["second"]["exit"] != 0 or r["second"]["done"])]
    resumes = [x for r in plans for x in r.get("resume", [])]
    out = {
        "targets_tried": len(records),
        "refused": len(records) - len(plans),
        "plans_run": len(plans),
        "plans_finished": len(plans) - len(failures),
        "steps_run": sum(len(r.get("done", [])) for r in plans),
        "pip_lines_resolved": len(pip) - len(failed_pip),
        "pip_lines_failed": len(failed_pip),
        "pip_lines_from_pypi_instead_of_pytorch_index": sum(1 for p in pip if p.get("from_pypi_instead")),
        "second_runs_that_did_something": len(second_bad),
        "stop_resume_tries": len(resumes),
        "stop_resume_failed": sum(1 for x in resumes if not x["ok"]),
        "failures": [{"fixture": r["fixture"], "args": r["args"], "why": r.get("failure", "")[-600:]}
                     for r in failures],
        "failed_pip_lines": sorted({(" ".join(p["resolved_as"]), p["python"], p["error"].splitlines()[-1] if p["error"] else "")
                                    for p in failed_pip}),
    }
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "gpu-doctor"))
    ap.add_argument("--fixtures", default="")
    ap.add_argument("--targets", choices=["quick", "all"], default="quick")
    ap.add_argument("--target", action="append", default=[],
                    help="one target's plan arguments, quoted (\"--framework torch\"); repeatable, "
                         "replaces --targets")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    pythons = pyenv_pythons()
    if not pythons:
        print("plan-run: no pyenv Pythons under ~/.pyenv/versions", file=sys.stderr)
        return 2
    names = [n for n in a.fixtures.split(",") if n] or fixtures()
    targets = [t.split() for t in a.target] or (QUICK if a.targets == "quick" else ALL)
    reports = {n: doctor(a.bin, n) for n in names}
    jobs = [(n, t) for n in names for t in targets]
    records = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(one, a.bin, n, reports[n], t, pythons, a.resume): (n, t) for n, t in jobs}
        for fut in concurrent.futures.as_completed(futures):
            n, t = futures[fut]
            try:
                rec = fut.result()
            except Exception as e:  # a crash of this script's own, not of the plan
                rec = {"fixture": n, "args": t, "exit": -1, "failure": f"plan-run: {e!r}"}
            records.append(rec)
            state = "refused" if "refused" in rec else ("ok" if rec.get("exit") == 0 else f"FAILED ({rec.get('exit')})")
            print(f"{n} {' '.join(t) or '(plain)'}: {state}", file=sys.stderr, flush=True)
    records.sort(key=lambda r: (r["fixture"], r["args"]))
    figures = summary(records)
    print(json.dumps(figures, indent=1))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"figures": figures, "records": records}, f, indent=1)
    return 0 if not figures["failures"] and not figures["pip_lines_failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
