#!/usr/bin/env python3
"""Generates manifests/amd-gpu-ids.toml: AMD GPUs by PCI device id, with their gfx target.

The AMD twin of scripts/gen-gpu-ids.py. A Radeon or Instinct card is named and placed from
/sys/bus/pci alone (no driver, no ROCm): its name from pci.ids, its per-revision product name
from libdrm's amdgpu.ids (0x744c rev 0xc8 is the RX 7900 XTX, 0xcc the XT), and its gfx target
(the ISA ROCm builds code for) from sourced tables. On a machine whose KFD topology answers, the
KFD node's `gfx_target_version` wins over this table at run time.

Inputs (the folder given as the first argument, default scripts/amd-gpu-ids-data):
  pci.ids.amd   pci.ids' header and AMD (1002) section: names and chip codenames per device id
  amdgpu.ids    libdrm's (device id, revision) -> product name list
  targets.csv   gfx target -> family, APU or not, whether amdkfd drives it, sources
  chips.csv     pci.ids codename ("Navi 31") -> gfx target, sources; an empty gfx means the
                codename covers several targets (Aqua Vanjaram: MI300 gfx942, MI350 gfx950)
                or none is sourced yet, so only ids.csv places its ids
  ids.csv       device id -> gfx target (and an APU override), sources

Source words (expanded in the output's [sources]): K amdkfd's kgd2kfd_probe, D the kernel's
amdgpu ASIC tables, L LLVM AMDGPUUsage, E rocm_agent_enumerator ISA_TO_ID, A ROCm's
gpu-arch-specs, R shared/reference/rocm.md section 2.

The generator fails (exit 1, every problem listed) when the sources disagree: an id whose
ids.csv target differs from its codename's, a target no targets.csv row describes, a malformed row.

usage: scripts/gen-amd-gpu-ids.py [DATA_DIR] > manifests/amd-gpu-ids.toml
       scripts/gen-amd-gpu-ids.py --check [DATA_DIR]   compares with manifests/amd-gpu-ids.toml
       scripts/gen-amd-gpu-ids.py --vendor PCI_IDS      refreshes pci.ids.amd from a full pci.ids
"""

import csv
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_DATA = os.path.join(HERE, "amd-gpu-ids-data")
OUTPUT = os.path.join(ROOT, "manifests", "amd-gpu-ids.toml")
UPDATED = "2026-12-01"

AMD = "1002"
# pci.ids entries of AMD chips that are not the GPU: audio, USB, bridges, switch ports, crypto.
NOT_A_GPU = re.compile(r"Audio|USB|[Bb]ridge|Port|Switch|Controller|Coprocessor|UCSI")
SOURCE_WORDS = {
    "K": "kfd",
    "D": "kernel_docs",
    "L": "llvm",
    "E": "enumerator",
    "A": "rocm_docs",
    "R": "reference",
}
SOURCES = [
    ("pci_ids", "pci.ids version {version} (github.com/pciutils/pciids @ c1c12547d626), BSD-3-Clause option"),
    ("amdgpu_ids", "libdrm data/amdgpu.ids (gitlab.freedesktop.org/mesa/drm, mirrored at github.com/X11Libre/mirror.fdo.drm @ 369990d9660a, 2025-12-19): product name per device id and revision"),
    ("kfd", "Linux amdkfd drivers/gpu/drm/amd/amdkfd/kfd_device.c kgd2kfd_probe(): GC IP version -> gfx_target_version, and which chips KFD drives (github.com/ROCm/amdgpu @ 006ab9293ad5)"),
    ("kernel_docs", "Linux Documentation/gpu/amdgpu/apu-asic-info-table.csv and dgpu-asic-info-table.csv: product and code name -> GC version, APU or discrete (github.com/torvalds/linux)"),
    ("llvm", "LLVM docs/AMDGPUUsage.rst, processors table: gfx target -> code names, dGPU or APU, example products (llvm/llvm-project)"),
    ("enumerator", "ROCm rocminfo rocm_agent_enumerator ISA_TO_ID: PCI device id -> gfx target (github.com/ROCm/rocminfo @ c6f7a17c85e0)"),
    ("rocm_docs", "ROCm docs/reference/gpu-arch-specs.rst: product -> gfx target and architecture (github.com/ROCm/ROCm @ e396b489), as quoted in shared/reference/rocm.md"),
    ("reference", "shared/reference/rocm.md section 2 (MI300/MI325/MI350 ids, Strix Halo gfx1151, Granite Ridge gfx1036), with the public sources it cites"),
]

NOTICE = """\
# Device ids, chip codenames and names from pci.ids, the PCI ID database, used under its
# 3-clause BSD licence option (the database is a compilation of factual data; the copyright
# covers only its aggregation and formatting, held by Martin Mares and Albert Pool).
# Names per revision from libdrm's amdgpu.ids (MIT licence of libdrm)."""


class Problems(list):
    def add(self, text):
        self.append(text)


def read_pci_ids(path, problems):
    """(version, {device id: text}) for every AMD device entry."""
    version = None
    devices = {}
    inside = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^#\s*Version:\s*(\S+)", line)
            if m and version is None:
                version = m.group(1)
            if not line or line.startswith("#"):
                continue
            if not line.startswith("\t"):
                inside = line.startswith(AMD + "  ")
                continue
            if not inside or line.startswith("\t\t"):
                continue
            m = re.match(r"^\t([0-9a-f]{4})  (.*)$", line)
            if m:
                devices[int(m.group(1), 16)] = m.group(2).strip()
    if version is None:
        problems.add("pci.ids: no '# Version:' line")
    return version, devices


def read_amdgpu_ids(path, problems):
    """{device id: {revision: name}} from libdrm's list (`ID,\\tREV,\\tNAME`)."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#") or re.match(r"^[0-9]+\.[0-9]+\.[0-9]+$", line):
                continue
            parts = [p.strip() for p in line.split(",", 2)]
            if len(parts) != 3 or not re.match(r"^[0-9A-Fa-f]{4}$", parts[0]) or not re.match(r"^[0-9A-Fa-f]{2}$", parts[1]):
                problems.add(f"amdgpu.ids line {n}: not `ID, REV, NAME`: {line!r}")
                continue
            out.setdefault(int(parts[0], 16), {})[parts[1].lower()] = parts[2]
    return out


def read_csv(path, columns, problems):
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        if set(row) != set(columns):
            problems.add(f"{os.path.basename(path)}: columns {sorted(row)} are not {columns}")
            return []
    return rows


def check_sources(label, words, problems):
    for word in words.split("+"):
        if word not in SOURCE_WORDS:
            problems.add(f"{label}: unknown source {word!r} (one of {', '.join(SOURCE_WORDS)})")


def codename_of(text, chips):
    """The chips.csv codename a pci.ids entry is, if it is a GPU of one: the entry's text before
    its bracket equals the codename or goes on with a space, dash or slash ("Navi 21 GL-XL")."""
    head = text.split("[", 1)[0].strip()
    if NOT_A_GPU.search(head):
        return None
    best = None
    for name in chips:
        if head == name or re.match(re.escape(name) + r"[ /-]", head):
            if best is None or len(name) > len(best):
                best = name
    return best


def generate(data_dir):
    problems = Problems()
    version, pci = read_pci_ids(os.path.join(data_dir, "pci.ids.amd"), problems)
    revisions = read_amdgpu_ids(os.path.join(data_dir, "amdgpu.ids"), problems)
    targets = {}
    for row in read_csv(os.path.join(data_dir, "targets.csv"), ["gfx", "family", "apu", "kfd", "source"], problems):
        if not re.match(r"^gfx[0-9]{1,2}[0-9a-f]{2}$", row["gfx"]):
            problems.add(f"targets.csv: {row['gfx']!r} is not a gfx target name")
        if row["apu"] not in ("yes", "no") or row["kfd"] not in ("yes", "no", "experimental"):
            problems.add(f"targets.csv {row['gfx']}: apu must be yes/no, kfd yes/no/experimental")
        check_sources(f"targets.csv {row['gfx']}", row["source"], problems)
        if row["gfx"] in targets:
            problems.add(f"targets.csv: {row['gfx']} twice")
        targets[row["gfx"]] = row
    chips = {}
    for row in read_csv(os.path.join(data_dir, "chips.csv"), ["codename", "gfx", "source"], problems):
        check_sources(f"chips.csv {row['codename']}", row["source"], problems)
        if row["gfx"] and row["gfx"] not in targets:
            problems.add(f"chips.csv {row['codename']}: {row['gfx']} has no targets.csv row")
        chips[row["codename"]] = row
    ids = {}
    for row in read_csv(os.path.join(data_dir, "ids.csv"), ["id", "gfx", "apu", "source"], problems):
        if not re.match(r"^0x[0-9a-f]{4}$", row["id"]):
            problems.add(f"ids.csv: {row['id']!r} is not 0x and four lowercase hex digits")
            continue
        check_sources(f"ids.csv {row['id']}", row["source"], problems)
        if row["gfx"] not in targets:
            problems.add(f"ids.csv {row['id']}: {row['gfx']} has no targets.csv row")
        if row["apu"] not in ("", "yes", "no"):
            problems.add(f"ids.csv {row['id']}: apu must be empty, yes or no")
        ids[int(row["id"], 16)] = row

    rows = {}
    for device, text in pci.items():
        code = codename_of(text, chips)
        if code is not None:
            rows[device] = code
    for device in ids:
        rows.setdefault(device, codename_of(pci.get(device, ""), chips))

    out_rows = []
    for device in sorted(rows):
        code = rows[device]
        by_chip = chips[code]["gfx"] if code else ""
        by_id = ids.get(device)
        gfx, sources, apu = by_chip, [], ""
        if code and by_chip:
            sources.append(chips[code]["source"])
        if by_id:
            if by_chip and by_id["gfx"] != by_chip:
                problems.add(
                    f"0x{device:04x} ({pci.get(device, 'not in pci.ids')}): ids.csv says {by_id['gfx']} "
                    f"but its codename {code!r} is {by_chip} in chips.csv"
                )
            gfx = by_id["gfx"]
            apu = by_id["apu"]
            sources.append(by_id["source"])
        words = ["pci.ids"] if device in pci else []
        for s in sources:
            for w in s.split("+"):
                if w not in words:
                    words.append(w)
        name = pci.get(device, "")
        out_rows.append((device, "", gfx, apu, "+".join(words), name))
        for rev, rev_name in sorted(revisions.get(device, {}).items()):
            out_rows.append((device, rev, gfx, apu, "amdgpu.ids", rev_name))

    if problems:
        for p in problems:
            print(f"gen-amd-gpu-ids: {p}", file=sys.stderr)
        sys.exit(1)

    out = []
    w = out.append
    w("# AMD GPU ids: Radeon, Radeon PRO and Instinct GPUs by PCI device id (and revision), with the")
    w("# gfx target ROCm builds code for, its family, and whether it is an APU's integrated GPU.")
    w("#")
    w("# GENERATED by scripts/gen-amd-gpu-ids.py from scripts/amd-gpu-ids-data; do not edit by hand:")
    w("# change the inputs or the generator and run it again (tests check the output is current).")
    w("#")
    w(NOTICE)
    w("#")
    w("# `device` rows: [id, revision (two lowercase hex digits, or \"\" for every other), gfx target")
    w("# (\"\" = not known from these sources: the KFD node tells at run time), APU override (\"\" = the")
    w("# target's), source words, name]. A revision row names one product of an id several share.")
    w("")
    w("[meta]")
    w("schema = 1")
    w('title = "AMD GPUs by PCI device id"')
    w(f'updated = "{UPDATED}"')
    w("gaps = [")
    w('  "gfx target of Krackan (0x1114, 0x1902; Radeon 820M/840M/860M) and of ids whose codename covers several targets without a per-id source (Aqua Vanjaram 0x74a2 MI308X, 0x75a8 MI350P): left empty, the KFD node names it on a running system",')
    w('  "Chips older than GCN 1 (R600 to Northern Islands, radeon driver only) are not listed: no ROCm ever ran on them",')
    w('  "gfx1152 and gfx1153 (GC 11.5.2 and 11.5.3 in amdkfd) are known targets whose products the sources here do not name",')
    w("]")
    w("")
    w("[sources]")
    w(f'pci_ids = "{SOURCES[0][1].format(version=version)}"')
    for key, text in SOURCES[1:]:
        w(f"{key} = {toml_str(text)}")
    w("")
    for gfx in sorted(targets, key=gfx_key):
        t = targets[gfx]
        w("[[target]]")
        w(f'gfx = "{gfx}"')
        w(f'family = "{t["family"]}"')
        w(f'apu = {"true" if t["apu"] == "yes" else "false"}')
        w(f'kfd = "{t["kfd"]}"')
        w(f'source = "{t["source"]}"')
        w("")
    w("[devices]")
    w("rows = [")
    for device, rev, gfx, apu, source, name in out_rows:
        w(f'  ["0x{device:04x}", "{rev}", "{gfx}", "{apu}", "{source}", {toml_str(name)}],')
    w("]")
    return "\n".join(out) + "\n"


def gfx_key(gfx):
    digits = gfx[3:]
    return (int(digits[:-2]), int(digits[-2:], 16))


def toml_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def vendor(pci_ids):
    """Cuts a full pci.ids to its header and AMD section, into amd-gpu-ids-data/pci.ids.amd."""
    with open(pci_ids, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    header = []
    for line in lines:
        if line.startswith("#") or not line:
            header.append(line)
        else:
            break
    section, inside = [], False
    for line in lines:
        if re.match(r"^[0-9a-f]{4}  ", line):
            inside = line.startswith(AMD + "  ")
        if inside:
            section.append(line)
    note = "# (cut to the AMD section by scripts/gen-amd-gpu-ids.py --vendor)"
    with open(os.path.join(DEFAULT_DATA, "pci.ids.amd"), "w", encoding="utf-8") as f:
        f.write("\n".join(header + [note, ""] + section) + "\n")


def main(argv):
    if argv[:1] == ["--vendor"] and len(argv) == 2:
        vendor(argv[1])
        return 0
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    text = generate(args[0] if args else DEFAULT_DATA)
    if check:
        with open(OUTPUT, encoding="utf-8") as f:
            if f.read() != text:
                print("manifests/amd-gpu-ids.toml is not what scripts/gen-amd-gpu-ids.py makes: run it again", file=sys.stderr)
                return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
