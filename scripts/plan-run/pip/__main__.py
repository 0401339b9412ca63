"""A stand-in for `python -m pip` inside scripts/plan-run.py's sandboxes (it comes first on
PYTHONPATH there). What a plan's pip line would install is resolved for real, by the real pip of
the same interpreter, against PyPI, with `--dry-run --report`; then the distributions it would
install are written into the environment as metadata only (a dist-info with the release's
METADATA and a RECORD, and for torch a module that answers `torch.version.cuda`), so the plan's
own checks that the GPU build landed, and a second run's guards, see what pip would have left.

Lines on PyTorch's own index (not reachable from where this runs) are resolved from PyPI: the
same release, its local tag (+cu126) kept from the index URL for the metadata written, and said
in the log. uv, which plans install to get a Python the system lacks, is installed for real.
Every line goes to $PLANRUN_PIP_LOG as one JSON object.

For a fixture of another machine type ($PLANRUN_PLATFORM=aarch64: Grace Hopper, Grace Blackwell,
DGX Spark) pip resolves for that platform instead of this machine's: `--platform
manylinux2014_aarch64` and the manylinux_2_17 to 2_35 aarch64 tags (Ubuntu 22.04's glibc is 2.35,
24.04's newer), `--python-version` of the interpreter, `--implementation cp`, `--only-binary=:all:`
(pip takes platform options only with `--target`, a throwaway folder here).
"""

import hashlib
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import sysconfig

SHIM = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = {"uv"}


def log(entry):
    path = os.environ.get("PLANRUN_PIP_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def real_pip(args):
    """Runs the interpreter's own pip with `args` (this folder off the path)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.abspath(p) != SHIM
    )
    return subprocess.run([sys.executable, "-m", "pip", *args], env=env, capture_output=True, text=True)


def split(argv):
    """The requirements of an install line, its index URL, and its other options."""
    reqs, index, rest = [], None, []
    it = iter(argv)
    for a in it:
        if a in ("--index-url", "-i", "--extra-index-url"):
            index = next(it, None)
        elif a.startswith("-"):
            rest.append(a)
        else:
            reqs.append(a)
    return reqs, index, rest


def variant(index):
    """PyTorch's index variant from its URL: cu126, rocm6.2, cpu."""
    if not index or "download.pytorch.org" not in index:
        return None
    return index.rstrip("/").rsplit("/", 1)[-1]


def platform_args(python):
    """pip's options to resolve for another machine type ($PLANRUN_PLATFORM), else none."""
    machine = os.environ.get("PLANRUN_PLATFORM", "")
    if machine != "aarch64":
        return []
    target = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"pip-target-{os.getpid()}")
    args = ["--target", target, "--platform", "manylinux2014_aarch64"]
    for minor in range(17, 36):
        args += ["--platform", f"manylinux_2_{minor}_aarch64"]
    return args + ["--python-version", python, "--implementation", "cp"]


def resolve(reqs):
    """pip's report for these requirements on this interpreter (and platform, when another
    machine type's), cached by Python, platform and lines."""
    python = "%d.%d" % sys.version_info[:2]
    cache = os.environ.get("PLANRUN_CACHE")
    platform = os.environ.get("PLANRUN_PLATFORM", "")
    key = hashlib.sha256(json.dumps([python, platform, sorted(reqs)] if platform else [python, sorted(reqs)]).encode()).hexdigest()[:24]
    path = os.path.join(cache, f"{key}.json") if cache else None
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    report = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"pip-report-{os.getpid()}.json")
    done = real_pip(["install", "--dry-run", "--quiet", "--ignore-installed", "--only-binary=:all:",
                     "--report", report, "--disable-pip-version-check", *platform_args(python), *reqs])
    if done.returncode != 0:
        result = {"ok": False, "error": (done.stderr or done.stdout).strip()[-2000:]}
    else:
        with open(report, encoding="utf-8") as f:
            data = json.load(f)
        result = {"ok": True, "install": [
            {"name": i["metadata"]["name"], "version": i["metadata"]["version"],
             "requires_dist": i["metadata"].get("requires_dist", []),
             "provides_extra": i["metadata"].get("provides_extra", [])}
            for i in data.get("install", [])]}
        os.remove(report)
    # Only answers from PyPI are kept: a failure to reach it is not a fact about the line.
    if path and (result["ok"] or "No matching distribution" in result.get("error", "")
                 or "ResolutionImpossible" in result.get("error", "")
                 or "conflict" in result.get("error", "")):
        os.makedirs(cache, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f)
    return result


def normalise(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def write_metadata(item, local):
    """A dist-info for one distribution pip would install (metadata only), replacing the one
    already there as pip's upgrade would."""
    site = sysconfig.get_paths()["purelib"]
    name, version = item["name"], item["version"]
    for entry in os.listdir(site) if os.path.isdir(site) else []:
        # `torch-2.11.0.dist-info`: the name is before the version's dash, not dist-info's.
        if entry.endswith(".dist-info") and normalise(entry[:-len(".dist-info")].rsplit("-", 1)[0]) == normalise(name):
            shutil.rmtree(os.path.join(site, entry), ignore_errors=True)
    if local and normalise(name) in ("torch", "torchvision", "torchaudio") and "+" not in version:
        version = f"{version}+{local}"
    info = f"{normalise(name)}-{version}.dist-info"
    os.makedirs(os.path.join(site, info), exist_ok=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Provides-Extra: {e}" for e in item["provides_extra"]]
    lines += [f"Requires-Dist: {r}" for r in item["requires_dist"]]
    files = {f"{info}/METADATA": "\n".join(lines) + "\n", f"{info}/INSTALLER": "plan-run\n"}
    if normalise(name) == "torch":
        cuda = None
        if local and local.startswith("cu") and local[2:].isdigit():
            cuda = f"{local[2:-1]}.{local[-1]}"
        elif local is None:
            cuda = "default"
        files["torch/__init__.py"] = "from . import version\n"
        files["torch/version.py"] = f"__version__ = {version!r}\ncuda = {cuda!r}\nhip = None\n"
    for rel, text in files.items():
        full = os.path.join(site, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    record = [f"{rel},," for rel in files] + [f"{info}/RECORD,,"]
    with open(os.path.join(site, info, "RECORD"), "w", encoding="utf-8") as f:
        f.write("\n".join(record) + "\n")


def install(argv):
    reqs, index, _ = split(argv)
    if reqs and all(normalise(r.split("=")[0].split("[")[0]) in REAL for r in reqs):
        done = real_pip(["install", "--quiet", "--disable-pip-version-check", *reqs])
        log({"python": "%d.%d" % sys.version_info[:2], "line": argv, "real": True,
             "ok": done.returncode == 0, "error": done.stderr[-2000:] if done.returncode else None})
        sys.stderr.write(done.stderr)
        return done.returncode
    local = variant(index)
    # PyPI has no local versions: `torch==2.5.1+cu124` is resolved as 2.5.1.
    asked = [re.sub(r"\+[A-Za-z0-9.]+$", "", r) for r in reqs]
    result = resolve(asked)
    log({"python": "%d.%d" % sys.version_info[:2], "platform": os.environ.get("PLANRUN_PLATFORM") or None,
         "line": argv, "resolved_as": asked,
         "index": index, "from_pypi_instead": bool(local), "ok": result["ok"],
         "error": result.get("error"),
         "installs": [f"{i['name']}=={i['version']}" for i in result.get("install", [])]})
    if not result["ok"]:
        sys.stderr.write(result["error"] + "\n")
        return 1
    for item in result["install"]:
        write_metadata(item, local)
    print(f"plan-run: resolved {' '.join(asked)} on PyPI for Python "
          f"{sys.version_info[0]}.{sys.version_info[1]}: {len(result['install'])} distributions")
    return 0


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["install"]:
        return install(argv[1:])
    # uninstall, list, show: the real pip (it removes the metadata-only installs by RECORD).
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != SHIM]
    for k in [k for k in sys.modules if k == "pip" or k.startswith("pip.")]:
        del sys.modules[k]
    sys.argv = ["pip", *argv]
    runpy.run_module("pip", run_name="__main__", alter_sys=True)
    return 0


sys.exit(main())
