#!/usr/bin/env python3
"""Writes the PCI ids of manifests/gpus.toml's rows from the id table and a hand-kept join.

The spec table (gpus.toml: bandwidth, TFLOP/s, memory per model) and the id table
(gpu-ids.toml, generated from pci.ids and NVIDIA's compatible-GPU list by gen-gpu-ids.py) name
products differently ("H100 SXM5" vs "NVIDIA H100 80GB HBM3"), and a product name can fit two
rows or the wrong one (an RTX 4090 Laptop GPU is not an RTX 4090). So which id is which spec row
is decided once, by a person, in scripts/gpu-ids-data/spec-join.csv:

  device,subsystem,spec_row,name,why
  0x2330,,H100 SXM5,NVIDIA H100 80GB HBM3,pci.ids: H100 SXM5 80GB; NVIDIA: H100 80GB HBM3 ...
  0x2321,,,NVIDIA H100 NVL,H100 NVL (94 GB): no row of its own ...

`subsystem` is empty for the id as a whole (then its subsystem rows in gpu-ids.toml follow it
unless listed themselves), or `vendor:device` for one subsystem row of an id NVIDIA shares
between products (A2 / A16). `spec_row` empty: the product has no row here, and `why` says so.
`name` must be the id table's name for that row, so a product renamed upstream asks again.

This script checks the join against both tables and fails (exit 1, every problem listed) when:
  - a key is not an id table row, or its `name` is not the table's name;
  - a spec row named does not exist, or its compute capability differs from the id's chip;
  - an id table row whose name (NVIDIA's, or pci.ids' bracketed one) fits a spec row by its
    words is decided by nothing: the words only ask for a decision, they never make one;
  - a subsystem row would follow its id to a row its own name does not fit.
Then it writes each row's `pci_device_ids` (ids joined as a whole) and `pci_subsystems`
([id, "vendor:device"] pairs joined one subsystem at a time), and the "PCI ids:" clause of its
`source`, into manifests/gpus.toml; every other line is left as it is.

usage: scripts/gen-gpu-spec-ids.py            rewrites manifests/gpus.toml
       scripts/gen-gpu-spec-ids.py --check    fails when manifests/gpus.toml is not current
       scripts/gen-gpu-spec-ids.py --counts   prints how many rows and ids are joined
"""

import csv
import importlib.util
import os
import re
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "gpu-ids-data")
JOIN = os.path.join(DATA, "spec-join.csv")
GPU_IDS = os.path.join(ROOT, "manifests", "gpu-ids.toml")
GPUS = os.path.join(ROOT, "manifests", "gpus.toml")
PCI_IDS = os.path.join(DATA, "pci.ids.nvidia")

SOURCE_CLAUSE = "PCI ids: gpu-ids.toml rows joined in scripts/gpu-ids-data/spec-join.csv"

# The word rule of GpuTable::by_name (src/manifest/gpus.rs): a row fits a name when every word
# of the row's name except its form factor is a word of the name. Used here only to find the id
# table rows that need a decision.
FORM_FACTORS = {"sxm", "sxm2", "sxm4", "sxm5", "pcie", "nvl"}
BRAND_WORDS = {"nvidia", "geforce", "tesla"}


def words(name):
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", name) if w and w.lower() not in BRAND_WORDS]


def fitting_rows(name, rows):
    have = set(words(name))
    out = set()
    for row in rows:
        core = [w for w in words(row["name"]) if w not in FORM_FACTORS]
        if core and all(w in have for w in core):
            out.add(row["name"])
    return out


def pci_ids_names():
    """{device id "0x2330": pci.ids bracketed product name}, through gen-gpu-ids.py's reader."""
    spec = importlib.util.spec_from_file_location("gen_gpu_ids", os.path.join(HERE, "gen-gpu-ids.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _, gpus = mod.read_pci_ids(PCI_IDS, mod.Problems())
    return {f"0x{d:04x}": product for d, (_, product) in gpus.items() if product}


def read_join(problems):
    decisions = {}
    with open(JOIN, encoding="utf-8", newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    for n, row in enumerate(csv.DictReader(lines), start=2):
        key = (row["device"], row["subsystem"])
        if key in decisions:
            problems.append(f"spec-join.csv: {key[0]} {key[1] or '(any subsystem)'} is decided twice")
        if not row["why"].strip():
            problems.append(f"spec-join.csv: {key[0]} {key[1]}: `why` is empty")
        decisions[key] = row
    return decisions


def join(problems):
    ids = tomllib.load(open(GPU_IDS, "rb"))
    spec = tomllib.load(open(GPUS, "rb"))["gpu"]
    by_name = {row["name"]: row for row in spec}
    chip_cc = {c["chip"]: c.get("compute_capability") for c in ids["chip"]}
    table = {(r[0], r[1]): r for r in ids["devices"]["rows"]}
    pci_names = pci_ids_names()
    decisions = read_join(problems)

    for (device, sub), row in sorted(decisions.items()):
        label = f"{device} {sub}".strip()
        own = table.get((device, sub))
        if own is None:
            problems.append(f"spec-join.csv: {label} is not a row of gpu-ids.toml")
            continue
        if own[5] != row["name"]:
            problems.append(f"spec-join.csv: {label} is called {own[5]!r} in gpu-ids.toml, not {row['name']!r}: decide it again")
        target = row["spec_row"]
        if not target:
            continue
        if target not in by_name:
            problems.append(f"spec-join.csv: {label}: no gpus.toml row is called {target!r}")
            continue
        cc = chip_cc.get(own[2])
        if cc is not None and cc != by_name[target]["compute_capability"]:
            problems.append(
                f"spec-join.csv: {label} is a {own[2]} (compute capability {cc}) but {target!r} says {by_name[target]['compute_capability']}"
            )

    def decided(device, sub):
        """(decision row, inherited?) for an id table row, or (None, False)."""
        if (device, sub) in decisions:
            return decisions[(device, sub)], False
        if sub and (device, "") in decisions:
            return decisions[(device, "")], True
        return None, False

    for (device, sub), own in sorted(table.items()):
        names = [own[5]] + ([pci_names[device]] if not sub and device in pci_names else [])
        fits = set()
        for name in names:
            for part in re.split(r" / |/", name):
                fits |= fitting_rows(part, spec)
        decision, inherited = decided(device, sub)
        label = f"{device} {sub}".strip()
        if decision is None:
            if fits:
                problems.append(
                    f"gpu-ids.toml {label} ({' | '.join(names)}) fits {sorted(fits)}: decide it in spec-join.csv"
                )
            continue
        if inherited and decision["spec_row"] and decision["spec_row"] not in fits:
            problems.append(
                f"gpu-ids.toml {label} ({own[5]}) would follow {device} to {decision['spec_row']!r}, which its name does not fit: decide it in spec-join.csv"
            )

    device_ids = {}
    subsystems = {}
    for (device, sub), row in sorted(decisions.items()):
        target = row["spec_row"]
        if not target:
            if sub and decisions.get((device, ""), {}).get("spec_row"):
                problems.append(f"spec-join.csv: {device} {sub} cannot opt out of the row its id is joined to")
            continue
        if not sub:
            device_ids.setdefault(target, []).append(device)
        elif decisions.get((device, ""), {}).get("spec_row") != target:
            subsystems.setdefault(target, []).append((device, sub))
    return spec, decisions, device_ids, subsystems


def rewrite(text, device_ids, subsystems):
    out = []
    current = None
    for line in text.splitlines():
        m = re.match(r'^name = "(.*)"$', line)
        if m:
            current = m.group(1)
        if line.startswith("[[gpu]]"):
            current = None
        if current is not None and line.startswith("pci_subsystems = "):
            continue
        if current is not None and line.startswith("pci_device_ids = "):
            ids = sorted(device_ids.get(current, []), key=lambda d: int(d, 16))
            out.append("pci_device_ids = [" + ", ".join(f'"{d}"' for d in ids) + "]")
            subs = sorted(subsystems.get(current, []), key=lambda p: (int(p[0], 16), p[1]))
            if subs:
                out.append("pci_subsystems = [" + ", ".join(f'["{d}", "{s}"]' for d, s in subs) + "]")
            continue
        if current is not None and line.startswith("source = "):
            body = re.sub(r"; PCI ids: [^\"]*", "", line[len('source = "'):-1])
            if current in device_ids or current in subsystems:
                body = f"{body}; {SOURCE_CLAUSE}"
            line = f'source = "{body}"'
        out.append(line)
    return "\n".join(out) + "\n"


def counts(spec, decisions, device_ids, subsystems):
    rows = sum(1 for r in spec if r["name"] in device_ids or r["name"] in subsystems)
    joined = sum(1 for r in decisions.values() if r["spec_row"])
    left = sum(1 for r in decisions.values() if not r["spec_row"])
    return f"{rows} of {len(spec)} spec rows carry PCI ids; {joined} id table rows joined to a row, {left} decided to have none"


def main(argv):
    problems = []
    spec, decisions, device_ids, subsystems = join(problems)
    if problems:
        for p in problems:
            print(f"gen-gpu-spec-ids: {p}", file=sys.stderr)
        return 1
    with open(GPUS, encoding="utf-8") as f:
        text = f.read()
    new = rewrite(text, device_ids, subsystems)
    if "--counts" in argv:
        print(counts(spec, decisions, device_ids, subsystems))
        return 0
    if "--check" in argv:
        if new != text:
            print("gen-gpu-spec-ids: manifests/gpus.toml's PCI ids are not what spec-join.csv says; run scripts/gen-gpu-spec-ids.py", file=sys.stderr)
            return 1
        return 0
    with open(GPUS, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
