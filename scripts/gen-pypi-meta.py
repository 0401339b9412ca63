#!/usr/bin/env python3
"""Generates manifests/pypi.toml: what PyPI serves of the packages gpu-doctor's plans pip-install.

For each release of torch, jax, jaxlib, the JAX CUDA plugins, CuPy's CUDA wheels and TensorFlow:
its Requires-Python, the Python tags of its Linux wheels (x86_64 and aarch64), the build of torch's
and TensorFlow's aarch64 wheels (CPU-only or a CUDA variant, from the wheel's own build file), and the extras it
declares (jax[cuda12], tensorflow[and-cuda], cupy-cuda12x[ctk]). For torch's companions
(torchvision, torchaudio) also the exact torch each release requires (Requires-Dist), so a plan
that moves torch moves them with it; and uv, which plans install to get a Python the system lacks. The planner checks every pip line
against it: a pip that resolves an older release without the extra exits 0 with a CPU-only build,
which is what this table is there to prevent.

Inputs: scripts/pypi-data/<package>.json, trimmed copies of PyPI's JSON API answers
(/pypi/<package>/json for files and Requires-Python; the extras of each release the plans
can pick come from its wheel's METADATA, read with HTTP range requests). They are vendored so that --check and the tests run
offline; --fetch refreshes them.

usage: scripts/gen-pypi-meta.py > manifests/pypi.toml
       scripts/gen-pypi-meta.py --check          compares with manifests/pypi.toml
       scripts/gen-pypi-meta.py --fetch [NAME..] refreshes scripts/pypi-data/ from PyPI
Only the Python standard library is used.
"""

import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "pypi-data")
OUTPUT = os.path.join(ROOT, "manifests", "pypi.toml")
API = "https://pypi.org/pypi"

# Package -> the oldest release whose extras are fetched (older ones are never planned) and the
# extras the plans use (only those are kept, so the table stays small).
PACKAGES = {
    "torch": ("1.12.0", []),
    "jax": ("0.4.20", ["cuda", "cuda12", "cuda13", "cuda12-local", "cuda13-local"]),
    "jaxlib": ("0.4.20", []),
    "jax-cuda12-plugin": ("0.4.26", ["with-cuda"]),
    "jax-cuda13-plugin": ("0.7.0", ["with-cuda"]),
    "cupy-cuda11x": ("12.0.0", ["ctk"]),
    "cupy-cuda12x": ("12.0.0", ["ctk"]),
    "cupy-cuda13x": ("13.0.0", ["ctk"]),
    "tensorflow": ("2.12.0", ["and-cuda"]),
    "torchvision": ("0.13.0", []),
    "torchaudio": ("0.12.0", []),
    "uv": ("0.5.0", []),
}

# Package -> the distributions whose exact pins (Requires-Dist: torch==2.9.0) its METADATA gives.
PINS = {
    "torchvision": ["torch"],
    "torchaudio": ["torch"],
}
# Package -> the file in its wheels that says which build it is. PyPI's Linux aarch64 torch
# wheels were CPU-only builds up to some release and CUDA builds after it, and TensorFlow's are
# CPU-only builds (Grace Hopper, Grace Blackwell and DGX Spark are aarch64), which the wheels' names
# and tags do not say. Read from one aarch64 wheel of each release (HTTP range requests, a few
# kilobytes).
BUILD_FILES = {
    "torch": "torch/version.py",
    "tensorflow": "tensorflow/python/platform/build_info.py",
}
TORCH_CUDA = re.compile(r"""^cuda(?::\s*Optional\[str\])?\s*=\s*(?:'([^']*)'|"([^"]*)"|None)""", re.M)
TF_CUDA = re.compile(r"""\('cuda_version',\s*'(\d+)\.(\d+)""")
TF_IS_CUDA = re.compile(r"""\('is_cuda_build',\s*(True|False)\)""")

PIN = re.compile(r"^Requires-Dist:\s*([A-Za-z0-9_.-]+)\s*\(?\s*==\s*([0-9][0-9A-Za-z.+]*)")

WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<ver>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
FINAL = re.compile(r"^\d+(\.\d+)*$")
EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")


def version_key(v):
    return tuple(int(p) for p in v.split("."))


def get(url):
    req = urllib.request.Request(url, headers={"Accept": "application/json",
                                               "User-Agent": "gpu-doctor gen-pypi-meta"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


class RangeFile:
    """A remote file read with HTTP range requests, enough for zipfile to read one member: a
    wheel's METADATA costs a few kilobytes instead of the whole wheel."""

    def __init__(self, url, size):
        self.url = url
        self.pos = 0
        self.size = size

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=0):
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def read(self, n=-1):
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        req = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end - 1}",
                                                        "User-Agent": "gpu-doctor"})
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read()
        self.pos += len(data)
        return data


def wheel_member(url, size, member):
    """One file of a wheel on the index, read through range requests."""
    with zipfile.ZipFile(RangeFile(url, size)) as z:
        return z.read(member).decode("utf-8", "replace")


def build_of(name, text):
    """`cpu` or the CUDA variant (`cu130`) a torch/version.py or TensorFlow build_info.py says."""
    if name == "torch":
        m = TORCH_CUDA.search(text)
        cuda = m and (m.group(1) or m.group(2))
        return "cu" + cuda.replace(".", "") if cuda else "cpu"
    is_cuda = TF_IS_CUDA.search(text)
    version = TF_CUDA.search(text)
    if is_cuda and is_cuda.group(1) == "True" and version:
        return f"cu{version.group(1)}{version.group(2)}"
    return "cpu"


def wheel_metadata(url, size):
    """The METADATA text of a wheel on the index, read through range requests."""
    with zipfile.ZipFile(RangeFile(url, size)) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return z.read(name).decode("utf-8", "replace")


def fetch(only):
    os.makedirs(DATA, exist_ok=True)
    for name, (oldest, extras) in PACKAGES.items():
        if only and name not in only:
            continue
        project = get(f"{API}/{name}/json")
        releases = {}
        for version, files in project.get("releases", {}).items():
            if not FINAL.match(version) or version_key(version) < version_key(oldest):
                continue
            kept = [{"filename": f["filename"], "requires_python": f.get("requires_python"),
                     "yanked": bool(f.get("yanked"))}
                    for f in files if f["filename"].endswith(".whl")]
            if kept:
                releases[version] = {"files": kept}
        if extras or name in PINS:
            for version in sorted(releases, key=version_key):
                wheel = next((f for f in project["releases"][version]
                              if f["filename"].endswith(".whl") and not f.get("yanked")
                              and ("x86_64" in f["filename"] or "-any" in f["filename"])), None)
                if wheel is None:
                    continue
                declared = set()
                pins = set()
                for line in wheel_metadata(urllib.parse.urljoin(f"{API}/{name}/json", wheel["url"]),
                                           wheel["size"]).splitlines():
                    if line.startswith("Provides-Extra:"):
                        declared.add(line.split(":", 1)[1].strip())
                    elif line.startswith("Requires-Dist:"):
                        declared.update(EXTRA.findall(line))
                        pin = PIN.match(line)
                        if pin and pin.group(1).lower() in PINS.get(name, []) and "extra" not in line:
                            pins.add(f"{pin.group(1).lower()}=={pin.group(2)}")
                if extras:
                    releases[version]["extras"] = sorted(declared)
                if name in PINS:
                    releases[version]["pins"] = sorted(pins)
        if name in BUILD_FILES:
            for version in sorted(releases, key=version_key):
                wheel = next((f for f in project["releases"][version]
                              if f["filename"].endswith(".whl") and not f.get("yanked")
                              and re.search(r"manylinux[^-]*_aarch64\.whl$", f["filename"])), None)
                if wheel is None:
                    continue
                try:
                    text = wheel_member(urllib.parse.urljoin(f"{API}/{name}/json", wheel["url"]),
                                        wheel["size"], BUILD_FILES[name])
                    build = build_of(name, text)
                except KeyError:
                    # A shim: TensorFlow's aarch64 wheels up to 2.15 carry no code and require
                    # tensorflow-cpu-aws, a CPU build, on aarch64.
                    meta = wheel_metadata(urllib.parse.urljoin(f"{API}/{name}/json", wheel["url"]),
                                          wheel["size"])
                    if not re.search(r"^Requires-Dist:\s*tensorflow-cpu-aws\b", meta, re.M):
                        continue
                    build = "cpu"
                releases[version]["aarch64_build"] = build
        out = {"name": name, "fetched": time.strftime("%Y-%m-%d", time.gmtime()),
               "releases": releases}
        with open(os.path.join(DATA, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{name}: {len(releases)} releases", file=sys.stderr)


def tags(files, arch):
    """The Python tags of the release's Linux wheels for one machine type (`py3` for pure ones)."""
    out = set()
    for f in files:
        if f["yanked"]:
            continue
        m = WHEEL.match(f["filename"])
        if not m:
            continue
        plats = m.group("plat").split(".")
        if m.group("plat") == "any" or any(p.startswith(("manylinux", "linux")) and p.endswith(arch) for p in plats):
            for py in m.group("py").split("."):
                out.add(py)
    return sorted(out, key=lambda t: (len(t), t))


def requires_python(files):
    values = {f["requires_python"] for f in files if f["requires_python"]}
    return sorted(values)[0] if len(values) == 1 else (sorted(values)[-1] if values else None)


def quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def generate():
    packages = []
    for name, (_, wanted) in PACKAGES.items():
        path = os.path.join(DATA, f"{name}.json")
        with open(path, encoding="utf-8") as f:
            packages.append((name, wanted, json.load(f)))
    fetched = max(p[2]["fetched"] for p in packages)
    out = [
        "# What PyPI serves of the packages gpu-doctor's plans pip-install: per final release, its",
        "# Requires-Python, the Python tags of its Linux wheels and the extras it declares.",
        "#",
        "# GENERATED by scripts/gen-pypi-meta.py from scripts/pypi-data/ (trimmed answers of PyPI's JSON",
        "# API); do not edit. Refresh: scripts/gen-pypi-meta.py --fetch && scripts/gen-pypi-meta.py >",
        "# manifests/pypi.toml. Only the extras the plans use are kept.",
        "",
        "[meta]",
        "schema = 1",
        'title = "PyPI releases of the packages plans install: Requires-Python, wheel tags, extras"',
        f"updated = {quote(fetched)}",
        "gaps = [",
        '  "PyTorch\'s own index (download.pytorch.org/whl/cuXYZ) was not reachable when this was generated: the Python tags of its CUDA variants are taken to be those of the same release on PyPI",',
        '  "Pre-releases, yanked files and releases older than the oldest a plan picks are left out",',
        '  "The aarch64 variants of PyTorch\'s own index were not readable either: aarch64 plans use only releases whose PyPI aarch64 wheel is a CUDA build (aarch64_build); CUDA aarch64 wheels from that index seen in public reports but not planned: 2.6.0+cu126 on a GH200 (vllm-project/vllm#18390), 2.8 from whl/cu128 (pytorch/pytorch#160162)",',
        "]",
    ]
    for name, wanted, data in packages:
        for version in sorted(data["releases"], key=version_key):
            rel = data["releases"][version]
            files = [f for f in rel["files"] if not f["yanked"]]
            x86 = tags(files, "x86_64")
            arm = tags(files, "aarch64")
            if not x86 and not arm:
                continue
            out.append("")
            out.append("[[release]]")
            out.append(f"package = {quote(name)}")
            out.append(f"version = {quote(version)}")
            rp = requires_python(files)
            if rp:
                out.append(f"requires_python = {quote(rp)}")
            out.append("x86_64 = [" + ", ".join(quote(t) for t in x86) + "]")
            out.append("aarch64 = [" + ", ".join(quote(t) for t in arm) + "]")
            if "aarch64_build" in rel:
                out.append(f"aarch64_build = {quote(rel['aarch64_build'])}")
            if "extras" in rel:
                extras = [e for e in rel["extras"] if e in wanted]
                out.append("extras = [" + ", ".join(quote(e) for e in extras) + "]")
            if "pins" in rel:
                out.append("pins = [" + ", ".join(quote(p) for p in rel["pins"]) + "]")
            what = "pins" if "pins" in rel else "extras"
            metadata = f"; {what} from its wheel METADATA"
            if "aarch64_build" in rel:
                metadata += "; aarch64_build from its aarch64 wheel's own build file"
            out.append(f'source = "{API}/{name}/json (release {version}: its files and Requires-Python{metadata})"')
            out.append(f"checked = {quote(data['fetched'])}")
    return "\n".join(out) + "\n"


def main(args):
    if args[:1] == ["--fetch"]:
        fetch(set(args[1:]))
        return 0
    text = generate()
    if args[:1] == ["--check"]:
        with open(OUTPUT, encoding="utf-8") as f:
            if f.read() != text:
                print("manifests/pypi.toml differs from what scripts/gen-pypi-meta.py makes of "
                      "scripts/pypi-data/; regenerate it", file=sys.stderr)
                return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
