#!/usr/bin/env python3
"""Writes the fixture machines' kernel module files as minimal well-formed ELF objects.

A kernel module is a relocatable ELF object (`ET_REL`) whose `.modinfo` section holds the
NUL-separated `key=value` strings that `modinfo` prints. The one that tells the module's
flavour is `license=`: `NVIDIA` for the proprietary flavour, `Dual MIT/GPL` for the open one
(NVIDIA's driver README, "Open Linux Kernel Modules" chapter: "the proprietary flavor will
report `license: NVIDIA` ... the open flavor will report `license: Dual MIT/GPL`").

Each module below is written with the strings its fixture's report quotes (or the README says
are assumed). The layout: ELF64 little-endian header, `.text` (two NOPs), `.modinfo`,
`.shstrtab`, then the section header table; the same layout `src/parse/modinfo.rs`'s
`test_object` builds.

usage: scripts/gen-module-elf.py           writes the files
       scripts/gen-module-elf.py --check   fails if a file differs from what it would write
Only the Python standard library is used.
"""

import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# fixture module path (relative to the repository) -> machine (e_machine), .modinfo strings
MODULES = {
    # Start9Labs/start-technologies#3465: `modinfo` of the shipped nvidia.ko, x86_64 image.
    "tests/fixtures/held-out-startos-debian13-proprietary-blackwell/root/usr/lib/modules/"
    "7.0.4+deb13-amd64/kernel/drivers/video/nvidia.ko": (
        62,
        [
            "version=580.159.03",
            "supported=external",
            "license=NVIDIA",
            "firmware=nvidia/580.159.03/gsp_ga10x.bin",
            "firmware=nvidia/580.159.03/gsp_tu10x.bin",
            "alias=char-major-195-*",
            "alias=pci:v000010DEd*sv*sd*bc03sc02i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc00i00*",
            "depends=",
            "name=nvidia",
            "vermagic=7.0.4+deb13-amd64 SMP preempt mod_unload modversions ",
        ],
    ),
    # Start9Labs/start-technologies#3693: the aarch64 image's proprietary 580.173.02 module
    # (the strings a proprietary nvidia.ko carries; the report names flavour and version).
    "tests/fixtures/held-out-startos-gb10-proprietary-580-173/root/usr/lib/modules/"
    "7.0.4+deb13-arm64/kernel/drivers/video/nvidia.ko": (
        183,
        [
            "version=580.173.02",
            "supported=external",
            "license=NVIDIA",
            "alias=char-major-195-*",
            "alias=pci:v000010DEd*sv*sd*bc03sc02i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc00i00*",
            "depends=",
            "name=nvidia",
            "vermagic=7.0.4+deb13-arm64 SMP preempt mod_unload modversions aarch64",
        ],
    ),
    # LowryConor/gpu_passthrough README: `modinfo nvidia-current` on Debian 12 (Debian's DKMS
    # names the module file nvidia-current.ko).
    "tests/fixtures/debian12-nvidia-current-secure-boot/root/usr/lib/modules/"
    "6.1.0-10-amd64/updates/dkms/nvidia-current.ko": (
        62,
        [
            "firmware=nvidia/525.125.06/gsp_tu10x.bin",
            "firmware=nvidia/525.125.06/gsp_ad10x.bin",
            "alias=char-major-195-*",
            "version=525.125.06",
            "supported=external",
            "license=NVIDIA",
            "alias=pci:v000010DEd*sv*sd*bc06sc80i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc02i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc00i00*",
            "depends=drm",
            "retpoline=Y",
            "name=nvidia",
            "vermagic=6.1.0-10-amd64 SMP preempt mod_unload modversions ",
        ],
    ),
}


def module(machine, strings):
    """The bytes of a relocatable ELF64 LE object with .text and .modinfo."""
    sections = [(".text", b"\x90\x90"), (".modinfo", b"".join(s.encode() + b"\0" for s in strings))]
    names = b"\0"
    data = b""
    headers = [(0, 0, 0, 0)]
    for name, body in sections:
        headers.append((len(names), 1, 64 + len(data), len(body)))
        names += name.encode() + b"\0"
        data += body
    headers.append((len(names), 3, 64 + len(data), len(names) + len(b".shstrtab\0")))
    names += b".shstrtab\0"
    data += names
    shoff = 64 + len(data)
    head = b"\x7fELF\x02\x01\x01\0" + b"\0" * 8
    head += struct.pack("<HHI", 1, machine, 1)
    head += struct.pack("<QQQ", 0, 0, shoff)
    head += struct.pack("<IHHHHHH", 0, 64, 0, 0, 64, len(headers), len(headers) - 1)
    table = b"".join(
        struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, off, size, 0, 0, 1 if kind else 0, 0)
        for name, kind, off, size in headers
    )
    return head + data + table


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for rel, (machine, strings) in MODULES.items():
        path = os.path.join(ROOT, rel)
        want = module(machine, strings)
        if check:
            try:
                with open(path, "rb") as f:
                    have = f.read()
            except OSError:
                have = None
            if have != want:
                stale.append(rel)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(want)
    if stale:
        sys.stderr.write(
            "stale module files (run scripts/gen-module-elf.py):\n  " + "\n  ".join(stale) + "\n"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
