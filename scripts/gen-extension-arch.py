#!/usr/bin/env python3
"""Generates manifests/extension-arch.toml: the oldest GPU each release of a package that ships
its own CUDA kernels can run on, read from the package's own sources at its release tags.

flash-attn (github.com/Dao-AILab/flash-attention, tags `v2.X.Y`): the lowest architecture that
setup.py compiles (`cc_flag.append("arch=compute_NN,code=sm_NN")`, commented lines left out) and
whether csrc/flash_attn/flash_api.cpp refuses older GPUs at run time ("FlashAttention only
supports Ampere GPUs or newer."). Consecutive releases with equal values become one row
(`first`..`last`, inclusive).

bitsandbytes (github.com/bitsandbytes-foundation/bitsandbytes, tags `X.Y.Z` from 0.43.1, the first
with .github/scripts/build-cuda.sh): the wheels carry one library per CUDA version, and the script
picks the architectures per CUDA version; the x86-64 branch's default list and its
`[[ "${cuda_version}" == 12.8.* ... ]] && build_capability="..."` overrides give one row per CUDA
group (`cuda`: the CUDA versions, `major.minor` or a bare major, whose library it describes; the
row without `cuda` holds for every other). bitsandbytes loads the library of torch's CUDA; which
CUDA versions a release carries a library for is the cuda_version matrix of
.github/workflows/python-package.yml, and whether it falls back to another of the same major is
bitsandbytes/cextension.py's (`[[bitsandbytes_libraries]]`).

xformers (github.com/facebookresearch/xformers, tags `vX.Y.Z[.postN]`): the base
TORCH_CUDA_ARCH_LIST of .github/workflows/wheels_build.yml, the workflow that builds the PyPI
wheels; its lowest entry (a `+PTX` entry counts: the driver JIT-compiles it for newer GPUs, never
for older ones). Read and vendored, but not made rows (the table's gaps say why).

vllm (PyPI wheels, the last patch release of each minor from 0.5): the compute capabilities of
the SASS and PTX in the fatbin of its core library (vllm/_C.abi3.so, from 0.33
vllm/_C_stable_libtorch.abi3.so), per compilation unit; the lowest architecture that at least a
tenth of the units carry is the release's minimum (the build's general list, CMakeLists.txt's
CUDA_SUPPORTED_ARCHS as the build applied it; units for newer GPUs only, FP8/FP4 and Marlin
kernels, are narrower, and a unit built apart with the compiler's default is left out). `cuda` is the CUDA major the library links (`libcudart.so.N`). A row covers
every patch release of its minors.

The facts read from the tags are vendored in scripts/extension-arch-data/NAME.json so that
--check runs offline; --extract refreshes one package's from a clone (vllm: from the wheels
named, downloaded with `pip download --no-deps vllm==X`).

usage: scripts/gen-extension-arch.py                          prints the table
       scripts/gen-extension-arch.py --write                  writes manifests/extension-arch.toml
       scripts/gen-extension-arch.py --check                  compares with manifests/extension-arch.toml
       scripts/gen-extension-arch.py --extract NAME GIT_DIR   refreshes NAME.json from a clone
                                                              (NAME: flash-attn, bitsandbytes, xformers)
       scripts/gen-extension-arch.py --extract vllm WHEEL...  adds the wheels' releases to vllm.json
Only the Python standard library is used.
"""

import collections
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA_DIR = os.path.join(HERE, "extension-arch-data")
PACKAGES = ("flash-attn", "bitsandbytes", "xformers", "vllm")
BNB_REPO = "https://github.com/bitsandbytes-foundation/bitsandbytes"
XFORMERS_REPO = "https://github.com/facebookresearch/xformers"
OUTPUT = os.path.join(ROOT, "manifests", "extension-arch.toml")
REPO = "https://github.com/Dao-AILab/flash-attention"
RUNTIME_CHECK = "FlashAttention only supports Ampere GPUs or newer."


def vkey(v):
    return tuple(int(x) for x in v.split("."))


def git(gitdir, *args):
    r = subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def extract_bitsandbytes(gitdir):
    """Per release: the x86-64 default architecture list's lowest and each CUDA group's."""
    tags = [t for t in (git(gitdir, "tag") or "").split() if re.fullmatch(r"\d+\.\d+\.\d+", t)]
    out = []
    for tag in sorted(tags, key=vkey):
        script = git(gitdir, "show", f"{tag}:.github/scripts/build-cuda.sh")
        if script is None:
            continue
        lines = script.splitlines()
        # With an aarch64/ARM64 branch, the x86-64 one is the last top-level `else` .. `fi`.
        arm = next((i for i, l in enumerate(lines) if "aarch64" in l or "ARM64" in l), None)
        if arm is not None:
            start = next(i for i in range(arm, len(lines)) if lines[i].rstrip() == "else")
            end = next(i for i in range(start, len(lines)) if lines[i].startswith("fi"))
            lines = lines[start + 1 : end]
        default, groups = None, []
        for line in lines:
            code = line.strip()
            if code.startswith("#"):
                continue
            m = re.search(r'build_capability="([0-9;]+)"', code)
            if not m:
                continue
            low = min(int(x) for x in m.group(1).split(";") if x)
            if code.startswith("build_capability="):
                default = low
            else:
                cudas = [
                    f"{a}.{b}" if b != "*" else a
                    for a, b in re.findall(r'== "?(\d+)\.(\d+|\*)\.\*', code)
                ]
                groups.append({"cuda": cudas, "min_sm": low})
        workflow = git(gitdir, "show", f"{tag}:.github/workflows/python-package.yml") or ""
        loader = git(gitdir, "show", f"{tag}:bitsandbytes/cextension.py") or ""
        out.append({
            "version": tag,
            "min_sm": default,
            "by_cuda": groups,
            "libraries": bnb_libraries(workflow),
            "same_major_fallback": BNB_FALLBACK in loader,
        })
    return out


# bitsandbytes/cextension.py's docstring from 0.50.0 on, where a missing library of torch's CUDA
# falls back to another of the same major instead of failing.
BNB_FALLBACK = "Highest packaged version <= runtime version, same major"


def bnb_libraries(workflow):
    """The CUDA versions (`major.minor`) of the Linux x86-64 libraries a release's wheel carries:
    the `cuda_version` matrix of the job that builds them in .github/workflows/python-package.yml
    (the first `cuda_version:` list; the line after the key, or the key's own line)."""
    lines = workflow.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"\s*cuda_version:\s*(\[.*)?$", line):
            text = line if "[" in line else (lines[i + 1] if i + 1 < len(lines) else "")
            found = re.findall(r'"(\d+)\.(\d+)\.\d+"', text)
            if found:
                return [f"{a}.{b}" for a, b in found]
    return []


def extract_xformers(gitdir):
    """Per release: the lowest entry of the wheel workflow's base TORCH_CUDA_ARCH_LIST."""
    tags = [
        t for t in (git(gitdir, "tag") or "").split()
        if re.fullmatch(r"v\d+\.\d+\.\d+(\.post\d+)?", t)
    ]
    out = []
    for tag in sorted(tags, key=lambda t: vkey(t[1:].replace(".post", "."))):
        wf = git(gitdir, "show", f"{tag}:.github/workflows/wheels_build.yml")
        if wf is None:
            continue
        line = next((l for l in wf.splitlines() if re.match(r"\s*TORCH_CUDA_ARCH_LIST:", l)), None)
        if line is None:
            continue
        # The first quoted list with numbers in it is the base list.
        lists = [q for q in re.findall(r"[\"']([^\"']*)[\"']", line) if re.search(r"\d\.\d", q)]
        if not lists:
            continue
        low = min(
            (int(a), int(b)) for a, b in re.findall(r"(\d+)\.(\d+)", lists[0])
        )
        out.append({"version": tag[1:], "min_sm": low[0] * 10 + low[1]})
    return out


def extract(gitdir):
    tags = [t for t in (git(gitdir, "tag") or "").split() if re.fullmatch(r"v2\.\d+\.\d+", t)]
    out = []
    for tag in sorted(tags, key=lambda t: vkey(t[1:])):
        setup = git(gitdir, "show", f"{tag}:setup.py") or ""
        archs = [
            int(m.group(1))
            for line in setup.splitlines()
            if not line.strip().startswith("#")
            for m in re.finditer(r'cc_flag\.append\("arch=compute_(\d+),code=sm_\d+"\)', line)
        ]
        api = git(gitdir, "show", f"{tag}:csrc/flash_attn/flash_api.cpp") or ""
        out.append(
            {
                "version": tag[1:],
                "min_sm": min(archs) if archs else None,
                "runtime_check": RUNTIME_CHECK in api,
            }
        )
    return out


def elf_sections(data):
    """{name: (offset, size)} of an ELF64 little-endian file's sections."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx][4]
    name = lambda n: data[strtab + n:data.index(b"\0", strtab + n)].decode()
    return {name(s[0]): (s[4], s[5]) for s in secs}, secs


def elf_needed(data):
    """The DT_NEEDED names of an ELF64 little-endian shared object (from .dynamic/.dynstr)."""
    secs, _ = elf_sections(data)
    dyn_off, dyn_size = secs[".dynamic"]
    str_off, _ = secs[".dynstr"]
    out = []
    for i in range(dyn_size // 16):
        tag, val = struct.unpack_from("<qQ", data, dyn_off + i * 16)
        if tag == 0:
            break
        if tag == 1:
            out.append(data[str_off + val:data.index(b"\0", str_off + val)].decode())
    return out


def fatbin_units(data):
    """Per compilation unit (one fatbin container of .nv_fatbin): its SASS and PTX architectures.
    A container is a 16-byte header (magic 0xBA55ED50, version, header size, payload size) and
    entries, each a header (kind 1 = PTX, 2 = ELF/SASS; its size; the payload size; the
    architecture as a u32 at offset 28, 70 for sm_70) and its payload."""
    off, size = elf_sections(data)[0][".nv_fatbin"]
    p, end = off, off + size
    while p + 16 <= end:
        magic, _, hsize, fsize = struct.unpack_from("<IHHQ", data, p)
        if magic != 0xBA55ED50:
            p += 8
            continue
        q, cend, ents = p + hsize, p + hsize + fsize, []
        while q < cend:
            kind, _, ehsize, psize = struct.unpack_from("<HHIQ", data, q)
            arch, = struct.unpack_from("<I", data, q + 28)
            ents.append((kind, arch))
            q += ehsize + psize
        yield sorted({a for k, a in ents if k == 2}), sorted({a for k, a in ents if k == 1})
        p = cend


VLLM_CORE = ("vllm/_C.abi3.so", "vllm/_C_stable_libtorch.abi3.so")


def extract_vllm(wheels):
    """Each wheel's release, name, sha256, core library, its CUDA sonames and fatbin units."""
    facts = {f["version"]: f for f in load_one("vllm")}
    for path in wheels:
        name = os.path.basename(path)
        with open(path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        with zipfile.ZipFile(path) as z:
            core = next(n for n in VLLM_CORE if n in z.namelist())
            data = z.read(core)
        units = collections.Counter(json.dumps(u) for u in fatbin_units(data))
        facts[name.split("-")[1]] = {
            "version": name.split("-")[1],
            "wheel": name,
            "sha256": sha,
            "module": core,
            "cuda_needed": sorted(n for n in elf_needed(data) if n.startswith("libcudart.so.")),
            "units": sorted(([*json.loads(k), v] for k, v in units.items()), key=lambda u: (-u[2], u[0], u[1])),
        }
    return sorted(facts.values(), key=lambda f: vkey_loose(f["version"]))


def vkey_loose(v):
    return tuple(int(x) for x in re.findall(r"\d+", v))


def vllm_min_sm(f):
    """The lowest architecture that at least a tenth of the compilation units carry (SASS or
    PTX): the build's general list. A unit built apart with the compiler's default (0.11.2's
    one sm_52 unit) is left out; units for newer GPUs only do not raise it."""
    total = sum(u[2] for u in f["units"])
    carried = collections.Counter()
    for sass, ptx, n in f["units"]:
        for arch in set(sass) | set(ptx):
            carried[arch] += n
    return min(a for a, n in carried.items() if n * 10 >= total)


def load_one(name):
    path = os.path.join(DATA_DIR, f"{name}.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return json.load(f)


def minor(v):
    return ".".join(v.split(".")[:2])


def rows(facts, key):
    """Consecutive releases with equal facts as one group: (facts, first, last)."""
    groups = []
    for f in facts:
        k = key(f)
        if groups and groups[-1][0] == k:
            groups[-1][2] = f["version"]
        else:
            groups.append([k, f["version"], f["version"]])
    return groups


def cc(sm):
    return f"{sm // 10}.{sm % 10}"


def package_rows(name, first, last, min_sm, source, error=None, cuda=None):
    lines = ["[[package]]", f'name = "{name}"', f'first = "{first}"', f'last = "{last}"']
    if cuda:
        lines.append("cuda = [" + ", ".join(f'"{c}"' for c in cuda) + "]")
    lines.append(f'min_cc = "{cc(min_sm)}"')
    if error:
        lines.append(f'error = "{error}"')
    lines += [f'source = "{source}"', ""]
    return lines


def render(data):
    lines = [
        "# The oldest GPU each release of a package with its own CUDA kernels runs on.",
        "#",
        "# GENERATED by scripts/gen-extension-arch.py from scripts/extension-arch-data; do not edit by",
        "# hand: change the inputs or the generator and run it again (tests check the output is current).",
        "#",
        "# `[[package]]` rows: the distribution name, the releases `first`..`last` (inclusive), the",
        "# lowest compute capability its build compiles kernels for (`min_cc`), and the error it raises",
        "# on an older GPU where its sources have one. `cuda`: the row holds only for the library the",
        "# package loads for these CUDA versions (`major.minor`, or a bare major for all its minors);",
        "# bitsandbytes loads the one of torch's CUDA. A release's row without `cuda` holds otherwise.",
        "",
        "[meta]",
        "schema = 1",
        'title = "Minimum compute capability of packages that ship their own CUDA kernels"',
        'updated = "2026-12-07"',
        "gaps = [",
        '  "vLLM: read from its PyPI wheels (the last patch release of each minor from 0.5 (0.4 and older name their library per Python version; 0.21 has no x86-64 wheel pip takes); a row covers the patch releases of its minors), not from CMakeLists.txt (the repository is over the size this project can fetch); its other CUDA builds (vLLM\'s own index, +cu126/+cu129/+cu130 wheels) are not in this table, and are judged from their installed core library\'s own fatbin instead (src/parse/fatbin.rs, src/diagnose/compiled.rs); min_cc is the core library\'s general architecture list: its narrower kernels (FP8, FP4, Marlin, FlashAttention, FlashMLA) need newer GPUs, below which vLLM picks other kernels or refuses the model",',
        '  "DeepSpeed: its PyPI package compiles its CUDA ops on the machine when first used (JIT, unless built with DS_BUILD_OPS), so a release has no fixed minimum; not listed",',
        '  "bitsandbytes before 0.43.1 (no .github/scripts/build-cuda.sh; built from a Makefile per CUDA version) and its aarch64 and Windows builds are not listed",',
        '  "xformers: its wheels\' base TORCH_CUDA_ARCH_LIST is read (scripts/extension-arch-data/xformers.json: 5.0 to 0.0.26.post1, 6.0 to 0.0.30, 7.5 from 0.0.31) but gives no rows: its attention also dispatches to PyTorch\'s own kernels (xformers.info of 0.0.28.post3 lists cutlassF-pt, huggingface/diffusers#10070), so a GPU below the list may still run it",',
        '  "flash-attn 1.x and the FlashAttention-3 hopper/ package are not listed",',
        '  "No maximum is in this table (a release older than the GPU): the installed package\'s own fatbin (SASS and PTX architectures of its compiled files, src/parse/fatbin.rs) is compared with the GPU instead",',
        "]",
        "",
    ]
    for (sm, check), first, last in rows(data["flash-attn"], lambda f: (f["min_sm"], f["runtime_check"])):
        if sm is None:
            continue
        lines += package_rows(
            "flash-attn", first, last, sm,
            f"{REPO} setup.py (cc_flag arch=compute_{sm}) and csrc/flash_attn/flash_api.cpp at tags v{first} to v{last}",
            error=RUNTIME_CHECK if check else None,
        )
    bnb_key = lambda f: (f["min_sm"], tuple((tuple(g["cuda"]), g["min_sm"]) for g in f["by_cuda"]))
    for (sm, groups), first, last in rows(data["bitsandbytes"], bnb_key):
        where = f"{BNB_REPO} .github/scripts/build-cuda.sh at tags {first} to {last}"
        if sm is not None:
            lines += package_rows("bitsandbytes", first, last, sm, f"{where}: the x86-64 default build_capability")
        for cudas, low in groups:
            lines += package_rows(
                "bitsandbytes", first, last, low,
                f"{where}: build_capability for CUDA " + ", ".join(cudas), cuda=list(cudas),
            )
    lines += [
        "# `[[bitsandbytes_libraries]]` rows: the CUDA versions (`major.minor`) bitsandbytes releases",
        "# `first`..`last` carry one Linux x86-64 library for (`libbitsandbytes_cudaXYZ.so`), and whether",
        "# the release falls back to another library of the same major when torch's is missing",
        "# (`same_major_fallback`); before that, it loads exactly the library of torch's CUDA",
        "# (or of `BNB_CUDA_VERSION`) and fails without it (\"Configured CUDA binary not found\").",
        "",
    ]
    bnb_libs = [f for f in data["bitsandbytes"] if f.get("libraries")]
    for (libs, fallback), first, last in rows(bnb_libs, lambda f: (tuple(f["libraries"]), f["same_major_fallback"])):
        lines += [
            "[[bitsandbytes_libraries]]",
            f'first = "{first}"',
            f'last = "{last}"',
            "cuda = [" + ", ".join(f'"{c}"' for c in libs) + "]",
            f"same_major_fallback = {'true' if fallback else 'false'}",
            f'source = "{BNB_REPO} .github/workflows/python-package.yml (the cuda_version matrix) and bitsandbytes/cextension.py at tags {first} to {last}"',
            "",
        ]
    # xformers' facts are read (xformers.json) but give no rows: see the gap above.
    vkey_of = lambda f: (vllm_min_sm(f), f["cuda_needed"][0].split(".so.")[1].split(".")[0])
    # Only releases of adjacent minors share a row: a minor not read (0.21: no x86-64 wheel
    # pip takes) is in none.
    groups = []
    for f in data["vllm"]:
        k = vkey_of(f)
        adjacent = groups and vkey_loose(minor(f["version"]))[1] - vkey_loose(minor(groups[-1][2]))[1] <= 1
        if groups and groups[-1][0] == k and adjacent:
            groups[-1][2] = f["version"]
        else:
            groups.append([k, f["version"], f["version"]])
    for (sm, cuda), first, last in groups:
        wheels = [f["wheel"] for f in data["vllm"] if vkey_loose(first) <= vkey_loose(f["version"]) <= vkey_loose(last)]
        # A row covers its minors' patch releases unless another row holds a release of the minor.
        shared = lambda v: sum(minor(v) in (minor(a), minor(b)) for _, a, b in groups) > 1
        lo = first if shared(first) else minor(first)
        hi = last if shared(last) else minor(last)
        modules = sorted({f["module"] for f in data["vllm"] if f["wheel"] in wheels})
        lines += package_rows(
            "vllm", lo, hi, sm,
            f"PyPI vllm wheels {', '.join(wheels)}: the fatbin of {' / '.join(modules)} "
            "(the lowest architecture a tenth of its compilation units carry)",
            cuda=[cuda],
        )
    return "\n".join(lines)


def load():
    return {name: load_one(name) for name in PACKAGES}


def main(argv):
    extractors = {
        "flash-attn": extract,
        "bitsandbytes": extract_bitsandbytes,
        "xformers": extract_xformers,
    }
    if len(argv) >= 4 and argv[1:3] == ["--extract", "vllm"]:
        facts = extract_vllm(argv[3:])
        with open(os.path.join(DATA_DIR, "vllm.json"), "w") as f:
            json.dump(facts, f, indent=1)
            f.write("\n")
        return 0
    if len(argv) == 4 and argv[1] == "--extract" and argv[2] in extractors:
        facts = extractors[argv[2]](argv[3])
        with open(os.path.join(DATA_DIR, f"{argv[2]}.json"), "w") as f:
            json.dump(facts, f, indent=1)
            f.write("\n")
        return 0
    text = render(load())
    if len(argv) == 2 and argv[1] == "--write":
        with open(OUTPUT, "w") as f:
            f.write(text)
        return 0
    if len(argv) == 2 and argv[1] == "--check":
        try:
            with open(OUTPUT) as f:
                current = f.read()
        except OSError:
            current = ""
        if current != text:
            sys.stderr.write(f"{OUTPUT} is stale: run scripts/gen-extension-arch.py --write\n")
            return 1
        return 0
    if len(argv) == 1:
        sys.stdout.write(text)
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
