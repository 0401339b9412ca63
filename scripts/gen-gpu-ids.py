#!/usr/bin/env python3
"""Generates manifests/gpu-ids.toml: every NVIDIA GPU from Kepler on, by PCI device id.

Inputs (the folder given as the first argument, default ../shared/data/gpu-ids):
  pci.ids                                         chip codename and product name per device id
  nvidia-open-kernel-modules-compatible-gpus.csv  NVIDIA's names, subsystem ids, first release
  README.md                                       chip -> architecture -> compute capability

The output is a manifest of the signed set, embedded in the binary: gpu-doctor never reads
pci.ids at run time. Each device row keeps its source; each chip row the chip table's sources.

The generator fails (exit 1, every problem listed) when the sources disagree: a 128-id block
(from 0x1b00 on) holding two chips, an NVIDIA id pci.ids lacks or names with an unknown chip,
an NVIDIA product name that names another architecture than its chip's, a chip codename nobody
has placed. pci.ids has been wrong about unreleased chips before (0x2302 called GA103).

usage: scripts/gen-gpu-ids.py [DATA_DIR] > manifests/gpu-ids.toml
       scripts/gen-gpu-ids.py --check [DATA_DIR]     compares with manifests/gpu-ids.toml
       scripts/gen-gpu-ids.py --vendor SHARED_DIR    refreshes scripts/gpu-ids-data/ from the
                                                     full inputs (pci.ids is cut to its header
                                                     and NVIDIA section; the README to its chip table)
DATA_DIR defaults to scripts/gpu-ids-data, so the generator runs offline and in CI.
"""

import csv
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The inputs as vendored: pci.ids' header and NVIDIA section, NVIDIA's table, the chip table.
DEFAULT_DATA = os.path.join(HERE, "gpu-ids-data")
PCI_IDS_FILES = ("pci.ids", "pci.ids.nvidia")
CHIP_TABLE_FILES = ("README.md", "chips.md")
OUTPUT = os.path.join(ROOT, "manifests", "gpu-ids.toml")

NVIDIA = "10de"
# First id of the range where every aligned 128-id block holds one chip (README "Device-id blocks").
BLOCK_RULE_FROM = 0x1B00
# Chip codename families from Kepler on (Fermi GF and older are out of scope).
CHIP_TOKEN = re.compile(r"^(GK|GM|GP|GV|TU|GA|AD|GH|GB|GR)[0-9][0-9A-Za-z]*$")
# pci.ids suffixes after the chip: GL professional, M/BM mobile (README "Files").
CHIP_SUFFIXES = ("GLM", "GL", "BM", "M")
# pci.ids entries of a chip that are not its GPU: audio, USB, bridges, NVSwitch.
NOT_A_GPU = re.compile(r"Audio|USB|UCSI|[Hh]ost|[Bb]ridge|NVSwitch|Controller|Root|Endpoint")
# pci.ids codenames that name no chip of the table: an FPGA / pre-silicon entry and two
# engineering samples without a product. Listed so any other unknown codename fails loudly.
IGNORED_TOKENS = {"GK11x", "GB6-128", "GB6-256(N22W-ES-A1)"}
# Architecture words NVIDIA's product names carry, to cross-check the chip's architecture.
NAME_ARCH_WORDS = [("Blackwell", "Blackwell"), ("Ada Generation", "Ada"), ("Hopper", "Hopper")]
# Architectures whose every GPU came out after NVIDIA's open kernel modules did (515, 2022): for
# them the first release listing an id is the first driver that knows it. Turing and Ampere
# GPUs were served by the proprietary driver long before the open modules listed them (Tesla
# T4: R410, but listed from 575.51.02), so their first listing says nothing about the driver.
FIRST_DRIVER_ARCHS = {"Ada", "Hopper", "Blackwell"}
# The README's names, shortened to the ones gpus.toml uses.
ARCH_NAMES = {"Ada Lovelace": "Ada"}

# NVIDIA's CUDA Compatibility guide, "Forward Compatibility": the cuda-compat package "is
# applicable only for systems with NVIDIA Data Center GPUs, select NGC Server Ready SKUs of RTX
# cards, Jetson boards". The guide names no SKUs, so a data-center part is told by NVIDIA's own
# product name (the NVIDIA table's, else pci.ids' bracketed one): the lines below, first match.
FORWARD_COMPAT_SOURCE = (
    "NVIDIA CUDA Compatibility guide, Forward Compatibility "
    "(https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html): "
    "'applicable only for systems with NVIDIA Data Center GPUs, select NGC Server Ready SKUs "
    "of RTX cards, Jetson boards'; data-center parts told by NVIDIA's product names "
    "(Tesla/GRID, the A/AX/B/H/L/T<=2-digit series, GH/GB superchips, HGX, PG5xx boards, "
    "RTX PRO Server Edition) in the NVIDIA table and pci.ids"
)
NOT_DATA_CENTER = re.compile(
    r"GeForce|Quadro|TITAN|Titan|Laptop|Mobile|Max-Q|\bCMP\b|DRIVE|Display|Matrox|\bNVS\b|Jetson"
)
DATA_CENTER = re.compile(
    r"^(Tesla|GRID|HGX|PG5[0-9]{2})\b"
    r"|^(A|AX|B|H|L)[0-9]+"
    r"|^T[0-9]{1,2}G?\b"
    r"|^(GH|GB)[0-9]+"
)


def data_center(name):
    """Whether NVIDIA's product name is a data-center part (forward compatibility applies)."""
    name = re.sub(r"^NVIDIA\s+", "", name.strip())
    if "Server Edition" in name:
        return True
    if NOT_DATA_CENTER.search(name) or name.startswith("RTX"):
        return False
    return bool(DATA_CENTER.search(name))


PCI_IDS_NOTICE = """\
# Device ids, chip codenames and product names from pci.ids, the PCI ID database, used under
# its 3-clause BSD licence option. Its notice:
#   This file can be distributed under either the GNU General Public License
#   (version 2 or higher) or the 3-clause BSD License.
#   The database is a compilation of factual data, and as such the copyright
#   only covers the aggregation and formatting. The copyright is held by
#   Martin Mares and Albert Pool.
# NVIDIA's names, subsystem ids and first releases: the "Compatible GPUs" table of
# github.com/NVIDIA/open-gpu-kernel-modules (MIT), union over its tagged releases."""


class Problems(list):
    def add(self, text):
        self.append(text)


def read_pci_ids(path, problems):
    """(version, {device id: (chip, product or None)}) for NVIDIA GPUs from Kepler on."""
    version = None
    gpus = {}
    in_nvidia = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^#\s*Version:\s*(\S+)", line)
            if m and version is None:
                version = m.group(1)
            if not line or line.startswith("#"):
                continue
            if not line.startswith("\t"):
                in_nvidia = line.startswith(NVIDIA + "  ")
                continue
            if not in_nvidia or line.startswith("\t\t"):
                continue
            m = re.match(r"^\t([0-9a-f]{4})  (.*)$", line)
            if not m:
                continue
            device = int(m.group(1), 16)
            text = m.group(2).strip()
            token = text.split(" ", 1)[0]
            if token in IGNORED_TOKENS:
                continue
            if not CHIP_TOKEN.match(token):
                continue
            rest = text[len(token):].strip()
            if NOT_A_GPU.search(rest.split("[", 1)[0]) or "NVSwitch" in rest:
                continue
            product = None
            b = re.search(r"\[(.*)\]\s*$", rest)
            if b:
                product = b.group(1).strip()
            gpus[device] = (token, product)
    if version is None:
        problems.add("pci.ids: no '# Version:' line")
    return version, gpus


def read_chip_table(path, problems):
    """{chip: (architecture, cc or None)} from the README's chip table."""
    chips = {}
    in_table = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## Chip"):
                in_table = True
                continue
            if in_table and line.startswith("## "):
                break
            if not in_table or not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 3 or cells[0] in ("chips", "") or set(cells[0]) <= set("- "):
                continue
            names = re.sub(r"\(.*?\)", "", cells[0])
            arch = ARCH_NAMES.get(cells[1], cells[1])
            m = re.match(r"^([0-9]+\.[0-9]+)\b", cells[2])
            cc = m.group(1) if m else None
            if cc is None and not cells[2].startswith("unknown"):
                problems.add(f"README chip table: cannot read the compute capability {cells[2]!r}")
            for chip in names.split(","):
                chip = chip.strip()
                if not chip:
                    continue
                if chip in chips:
                    problems.add(f"README chip table: {chip} is listed twice")
                chips[chip] = (arch, cc)
    if not chips:
        problems.add("README.md: no chip table found")
    return chips


def base_chip(token, chips):
    """The chip of a pci.ids codename: the longest known prefix once the GL/M/BM suffix goes."""
    if token in chips:
        return token
    for suffix in CHIP_SUFFIXES:
        if token.endswith(suffix) and token[: -len(suffix)] in chips:
            return token[: -len(suffix)]
    return None


def version_key(v):
    return tuple(int(p) for p in v.split("."))


def read_nvidia_table(path, problems):
    """{(device, subsystem or ''): (name, first, last)} and {device: first release}."""
    rows = {}
    first_by_device = {}
    with open(path, encoding="utf-8") as f:
        for row in csv.DictReader(f):
            try:
                device = int(row["device_id"], 16)
            except ValueError:
                problems.add(f"NVIDIA table: bad device id {row['device_id']!r}")
                continue
            sv, sd = row["subsystem_vendor_id"], row["subsystem_device_id"]
            sub = f"{int(sv, 16):04x}:{int(sd, 16):04x}" if sv and sd else ""
            name = row["product_name"].strip()
            first = row["first_release_listing_it"]
            last = row["last_release_listing_it"]
            key = (device, sub)
            old = rows.get(key)
            if old is None:
                rows[key] = (name, first, last)
            else:
                # The same product renamed across releases ("GH200 120GB" -> "NVIDIA GH200
                # 120GB"): keep the newest name and the oldest first release.
                newest = name if version_key(last) > version_key(old[2]) else old[0]
                rows[key] = (
                    newest,
                    min(first, old[1], key=version_key),
                    max(last, old[2], key=version_key),
                )
            f0 = first_by_device.get(device)
            if f0 is None or version_key(first) < version_key(f0):
                first_by_device[device] = first
    return rows, first_by_device


def generate(data_dir):
    problems = Problems()
    version, pci = read_pci_ids(first_existing(data_dir, PCI_IDS_FILES), problems)
    chips = read_chip_table(first_existing(data_dir, CHIP_TABLE_FILES), problems)
    nv_rows, nv_first = read_nvidia_table(
        os.path.join(data_dir, "nvidia-open-kernel-modules-compatible-gpus.csv"), problems
    )

    # device -> chip, from pci.ids; every codename must be a chip of the table.
    device_chip = {}
    for device, (token, _) in sorted(pci.items()):
        chip = base_chip(token, chips)
        if chip is None:
            problems.add(f"pci.ids 0x{device:04x}: chip codename {token!r} is not in the chip table")
            continue
        device_chip[device] = chip

    # NVIDIA's ids must be GPUs pci.ids knows, and their names must fit the chip's architecture.
    for (device, _sub), (name, _, _) in sorted(nv_rows.items()):
        chip = device_chip.get(device)
        if chip is None:
            problems.add(f"NVIDIA table 0x{device:04x} ({name}): pci.ids has no GPU chip for this id")
            continue
        arch = chips[chip][0]
        for word, named in NAME_ARCH_WORDS:
            if word in name and named != arch:
                problems.add(
                    f"0x{device:04x}: NVIDIA names it {name!r} ({named}) but pci.ids says {chip} ({arch})"
                )

    # From 0x1b00 on, one chip per aligned 128-id block.
    blocks = {}
    for device, chip in sorted(device_chip.items()):
        if device < BLOCK_RULE_FROM:
            continue
        block = device & 0xFF80
        other = blocks.setdefault(block, chip)
        if other != chip:
            problems.add(
                f"block 0x{block:04x}: 0x{device:04x} is {chip} but the block already holds {other} "
                "(pci.ids or the block rule is wrong; check NVIDIA's gpu-admin-tools ranges)"
            )

    if problems:
        for p in problems:
            print(f"gen-gpu-ids: {p}", file=sys.stderr)
        sys.exit(1)

    out = []
    w = out.append
    w("# GPU ids: every NVIDIA GPU from Kepler on, by PCI device id, with its chip, architecture,")
    w("# compute capability, NVIDIA's name(s) and the first driver release that lists it.")
    w("#")
    w("# GENERATED by scripts/gen-gpu-ids.py from ../shared/data/gpu-ids; do not edit by hand:")
    w("# change the inputs or the generator and run it again (tests check the output is current).")
    w("#")
    w(PCI_IDS_NOTICE)
    w("#")
    w("# `device` rows: [id, subsystem (vendor:device, or \"\" for every other), chip, first driver")
    w("# release listing the id (\"\" = not in NVIDIA's table: pre-Turing, or not yet), source, name].")
    w("# A subsystem row names a product that shares its device id with others (A2 vs A16).")
    w("# `block`: 128-id blocks (id & 0xff80, from 0x1b00 on) that hold only one chip, so an id")
    w("# newer than this table still gets its chip, marked inferred.")
    w("# `forward_compat`: the ids whose every name is a data-center part, so the cuda-compat")
    w("# package serves them (`devices`), and ids that name a data-center part and another")
    w("# (`mixed`: told apart only by subsystem). An id in neither is not a data-center part.")
    w("")
    w("[meta]")
    w("schema = 1")
    w('title = "NVIDIA GPUs by PCI device id"')
    w(f'updated = "{UPDATED}"')
    w("gaps = [")
    w('  "First driver release: only for Ada, Hopper and Blackwell ids. NVIDIA\'s open-kernel-modules table lists Turing and newer only, and Turing/Ampere GPUs appear there later than the proprietary driver served them (Tesla T4: listed from 575.51.02); Kepler to Volta ids have none (their last branches: Kepler R470, Maxwell/Pascal/Volta R580)",')
    w('  "Compute capability of GB112, GB120 (Blackwell) and GR100, GR102 (Rubin): no product named yet",')
    w('  "Ids below 0x1b00 share blocks between chips (0x1300 holds GK110 and GM108): an unknown id there gets no chip",')
    w("]")
    w("")
    w("[sources]")
    w(f'pci_ids = "pci.ids version {version} (github.com/pciutils/pciids @ c1c12547d626), BSD-3-Clause option"')
    w('nvidia = "NVIDIA open-gpu-kernel-modules README \\"Compatible GPUs\\", union over 193 tagged releases 515.43.04 to 595.45.04 (github.com/NVIDIA/open-gpu-kernel-modules, MIT)"')
    w('chips = "chip -> architecture -> compute capability: developer.nvidia.com/cuda-gpus and the CUDA programming guide compute-capability table; chip per product from pci.ids and NVIDIA product names (shared/data/gpu-ids/README.md)"')
    w("")
    used = sorted(set(device_chip.values()), key=lambda c: min(d for d, x in device_chip.items() if x == c))
    for chip in used:
        arch, cc = chips[chip]
        w("[[chip]]")
        w(f'chip = "{chip}"')
        w(f'architecture = "{arch}"')
        if cc is not None:
            w(f'compute_capability = "{cc}"')
        own = sorted(b for b, c in blocks.items() if c == chip)
        if own:
            w("blocks = [" + ", ".join(f'"0x{b:04x}"' for b in own) + "]")
        w('source = "chips"')
        w("")
    w("[devices]")
    w("rows = [")
    ids = sorted(set(device_chip) | {d for d, _ in nv_rows})
    for device in ids:
        chip = device_chip[device]
        token, pci_name = pci[device]
        known_first = chips[chip][0] in FIRST_DRIVER_ARCHS
        first = nv_first.get(device, "") if known_first else ""
        default = nv_rows.get((device, ""))
        subs = sorted((s, v) for (d, s), v in nv_rows.items() if d == device and s)
        if default is not None:
            name, source = default[0], "pci.ids+nvidia"
        elif subs and len({v[0] for _, v in subs}) == 1:
            # Every listed subsystem carries one name: it is the id's name.
            name, source = subs[0][1][0], "pci.ids+nvidia"
        elif pci_name:
            name, source = pci_name, ("pci.ids+nvidia" if device in nv_first else "pci.ids")
        else:
            name, source = "", ("pci.ids+nvidia" if device in nv_first else "pci.ids")
        w(f'  ["0x{device:04x}", "", "{chip}", "{first}", "{source}", {toml_str(name)}],')
        for sub, (sub_name, sub_first, _) in subs:
            if sub_name == name:
                continue
            sub_first = sub_first if known_first else ""
            w(f'  ["0x{device:04x}", "{sub}", "{chip}", "{sub_first}", "nvidia", {toml_str(sub_name)}],')
    w("]")
    w("")
    write_forward_compat(w, ids, pci, nv_rows)
    return "\n".join(out) + "\n"


def write_forward_compat(w, ids, pci, nv_rows):
    """The `[forward_compat]` section: device ids by whether every name is a data-center part."""
    devices, mixed = [], []
    for device in ids:
        names = [v[0] for (d, _), v in nv_rows.items() if d == device]
        if not names and pci[device][1]:
            names = [pci[device][1]]
        if not names:
            continue
        verdicts = {data_center(n) for n in names}
        row = f'  ["0x{device:04x}", {toml_str(sorted(names)[0])}],'
        if verdicts == {True}:
            devices.append(row)
        elif True in verdicts:
            mixed.append(row)
    w("[forward_compat]")
    w(f"source = {toml_str(FORWARD_COMPAT_SOURCE)}")
    w("devices = [")
    for row in devices:
        w(row)
    w("]")
    w("mixed = [")
    for row in mixed:
        w(row)
    w("]")


UPDATED = "2026-12-01"


def toml_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def first_existing(data_dir, names):
    for name in names:
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    print(f"gen-gpu-ids: {data_dir} has none of {', '.join(names)}", file=sys.stderr)
    sys.exit(1)


def vendor(shared_dir):
    """Copies the parts of the full inputs the generator reads into scripts/gpu-ids-data/."""
    os.makedirs(DEFAULT_DATA, exist_ok=True)
    with open(os.path.join(shared_dir, "pci.ids"), encoding="utf-8", errors="replace") as f:
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
            inside = line.startswith(NVIDIA + "  ")
        if inside:
            section.append(line)
    with open(os.path.join(DEFAULT_DATA, "pci.ids.nvidia"), "w", encoding="utf-8") as f:
        f.write("\n".join(header + ["# (cut to the NVIDIA section by scripts/gen-gpu-ids.py --vendor)", ""] + section) + "\n")
    name = "nvidia-open-kernel-modules-compatible-gpus.csv"
    with open(os.path.join(shared_dir, name), encoding="utf-8") as f:
        table = f.read()
    with open(os.path.join(DEFAULT_DATA, name), "w", encoding="utf-8") as f:
        f.write(table)
    with open(os.path.join(shared_dir, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    m = re.search(r"^## Chip.*?(?=^## )", readme, re.S | re.M)
    if not m:
        print("gen-gpu-ids: no chip table in README.md", file=sys.stderr)
        sys.exit(1)
    with open(os.path.join(DEFAULT_DATA, "chips.md"), "w", encoding="utf-8") as f:
        f.write(m.group(0).rstrip() + "\n")


def main(argv):
    if argv[:1] == ["--vendor"] and len(argv) == 2:
        vendor(argv[1])
        return 0
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    data_dir = args[0] if args else DEFAULT_DATA
    text = generate(data_dir)
    if check:
        with open(OUTPUT, encoding="utf-8") as f:
            current = f.read()
        if current != text:
            print("manifests/gpu-ids.toml is not what scripts/gen-gpu-ids.py makes: run it again", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
