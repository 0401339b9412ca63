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

A module whose path ends in `.ko.zst`, `.ko.xz` or `.ko.gz` is written compressed, the way
DKMS, akmods and Gentoo's linux-mod-r1 install them for a kernel that compresses its modules.
The compressed forms are written by hand, byte for byte, in each format's simplest valid
encoding, so that the output never depends on a compressor's version (`--check` must hold on
every machine) and only the standard library is needed:
- zstd (RFC 8878): one frame of Raw blocks, no checksum;
- xz (the .xz file format 1.2.1): one block of one LZMA2 filter whose chunks are stored
  uncompressed (control byte 1, then 2), CRC32 check, its index and footer;
- gzip (RFC 1952): a DEFLATE stream of stored blocks (RFC 1951 3.2.4), mtime 0.
`zstd -t`, `xz -t` and `gzip -t` accept each, and decompress each to the ELF object.

usage: scripts/gen-module-elf.py           writes the files
       scripts/gen-module-elf.py --check   fails if a file differs from what it would write
Only the Python standard library is used.
"""

import os
import struct
import sys
import zlib

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
    # The .run installer's DKMS build on Ubuntu 24.04, proprietary flavour chosen at its
    # "NVIDIA Proprietary / MIT/GPL" prompt (Zeckmathederg/glfs#18), 580.95.05 (the driver of
    # aikitoria/open-gpu-kernel-modules#10, RTX 5090s on 6.8.0-87-generic); DKMS compresses it
    # like the kernel's own modules. The strings a proprietary nvidia.ko carries (as above).
    "tests/fixtures/ubuntu2404-run-dkms-zst-proprietary-rtx5090/root/usr/lib/modules/"
    "6.8.0-87-generic/updates/dkms/nvidia.ko.zst": (
        62,
        [
            "version=580.95.05",
            "supported=external",
            "license=NVIDIA",
            "firmware=nvidia/580.95.05/gsp_ga10x.bin",
            "firmware=nvidia/580.95.05/gsp_tu10x.bin",
            "alias=char-major-195-*",
            "alias=pci:v000010DEd*sv*sd*bc03sc02i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc00i00*",
            "depends=",
            "retpoline=Y",
            "name=nvidia",
            "vermagic=6.8.0-87-generic SMP preempt mod_unload modversions ",
        ],
    ),
    # NVIDIA/open-gpu-kernel-modules#635: `modinfo nvidia` of the open 550.78 module on Fedora
    # 40's 6.8.9-300.fc40.x86_64, in its order (the signature's sig_* lines are not .modinfo).
    "tests/fixtures/fedora40-akmods-xz-open-secure-boot/root/usr/lib/modules/"
    "6.8.9-300.fc40.x86_64/extra/nvidia/nvidia.ko.xz": (
        62,
        [
            "import_ns=DMA_BUF",
            "alias=char-major-195-*",
            "version=550.78",
            "supported=external",
            "license=Dual MIT/GPL",
            "firmware=nvidia/550.78/gsp_tu10x.bin",
            "firmware=nvidia/550.78/gsp_ga10x.bin",
            "softdep=pre: ecdh_generic,ecdsa_generic",
            "rhelversion=9.99",
            "srcversion=559B949A4E28E211ED21D4D",
            "alias=pci:v000010DEd*sv*sd*bc06sc80i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc02i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc00i00*",
            "depends=",
            "retpoline=Y",
            "name=nvidia",
            "vermagic=6.8.9-300.fc40.x86_64 SMP preempt mod_unload ",
        ],
    ),
    # Gentoo's nvidia-drivers with USE=kernel-open, installed by linux-mod-r1 into `video/`
    # and gzipped because the kernel sets CONFIG_MODULE_COMPRESS_GZIP (gentoo/gentoo
    # eclass/linux-mod-r1.eclass `_modules_process_compress`). The open module's strings, as
    # the Fedora one above, for 580.105.08 (no srcversion: none was seen for this build).
    "tests/fixtures/gentoo-kernel-open-gz-gtx1080/root/usr/lib/modules/"
    "6.12.58-gentoo/video/nvidia.ko.gz": (
        62,
        [
            "import_ns=DMA_BUF",
            "alias=char-major-195-*",
            "version=580.105.08",
            "supported=external",
            "license=Dual MIT/GPL",
            "firmware=nvidia/580.105.08/gsp_tu10x.bin",
            "firmware=nvidia/580.105.08/gsp_ga10x.bin",
            "softdep=pre: ecdh_generic,ecdsa_generic",
            "alias=pci:v000010DEd*sv*sd*bc06sc80i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc02i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc00i00*",
            "depends=",
            "retpoline=Y",
            "name=nvidia",
            "vermagic=6.12.58-gentoo SMP preempt mod_unload ",
        ],
    ),
    # ublue-os/aurora#1924: the aurora-dx-nvidia-open image's open module, built by akmods into
    # `extra/nvidia/` and xz-compressed like every Fedora kernel's modules. The report names the
    # flavour (open); the version (580.119.02) and kernel are the fixture's assumption.
    "tests/fixtures/held-out-aurora-f43-nvidia-open-mx350/root/usr/lib/modules/"
    "6.18.13-200.fc43.x86_64/extra/nvidia/nvidia.ko.xz": (
        62,
        [
            "import_ns=DMA_BUF",
            "alias=char-major-195-*",
            "version=580.119.02",
            "supported=external",
            "license=Dual MIT/GPL",
            "firmware=nvidia/580.119.02/gsp_tu10x.bin",
            "firmware=nvidia/580.119.02/gsp_ga10x.bin",
            "depends=",
            "name=nvidia",
            "vermagic=6.18.13-200.fc43.x86_64 SMP preempt mod_unload ",
        ],
    ),
    # NVIDIA/yum-packaging-precompiled-kmod#62: NVIDIA's precompiled kmod-nvidia 575.57.08 for
    # RHEL 9.6's 5.14.0-570.23.1 kernel, the proprietary flavour (the open one is only built by
    # DKMS there), linked into `extra/drivers/video/nvidia/`.
    "tests/fixtures/held-out-rhel9-rtx5070ti-precompiled-kmod-575/root/usr/lib/modules/"
    "5.14.0-570.23.1.el9_6.x86_64/extra/drivers/video/nvidia/nvidia.ko": (
        62,
        [
            "version=575.57.08",
            "supported=external",
            "license=NVIDIA",
            "alias=char-major-195-*",
            "alias=pci:v000010DEd*sv*sd*bc03sc02i00*",
            "alias=pci:v000010DEd*sv*sd*bc03sc00i00*",
            "depends=",
            "rhelversion=9.6",
            "name=nvidia",
            "vermagic=5.14.0-570.23.1.el9_6.x86_64 SMP preempt mod_unload modversions ",
        ],
    ),
    # Start9Labs/start-technologies#3702: the DKMS-built and signed open module of a StartOS
    # 0.4.0.2 aarch64-nvidia install on a DGX Spark (open flavour and 580.173.02 as the image's
    # #3693 fix ships; the report names DKMS and signing, not the version).
    "tests/fixtures/held-out-startos-gb10-secure-boot-mok-unstaged/root/usr/lib/modules/"
    "7.0.4+deb13-arm64/updates/dkms/nvidia.ko": (
        183,
        [
            "import_ns=DMA_BUF",
            "alias=char-major-195-*",
            "version=580.173.02",
            "supported=external",
            "license=Dual MIT/GPL",
            "firmware=nvidia/580.173.02/gsp_ga10x.bin",
            "depends=",
            "name=nvidia",
            "vermagic=7.0.4+deb13-arm64 SMP preempt mod_unload modversions aarch64",
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


def zstd_frame(data):
    """A zstd frame holding `data` in Raw blocks of at most 128 KiB."""
    # Frame header descriptor 0: no content size, no checksum, no dictionary; a window
    # descriptor follows. Window descriptor 0x38: 2^(10+7) = 128 KiB, the largest block.
    out = b"\x28\xb5\x2f\xfd" + bytes([0x00, 0x38])
    step = 128 * 1024
    chunks = [data[i : i + step] for i in range(0, len(data), step)] or [b""]
    for i, chunk in enumerate(chunks):
        last = 1 if i == len(chunks) - 1 else 0
        header = last | (0 << 1) | (len(chunk) << 3)
        out += struct.pack("<I", header)[:3] + chunk
    return out


def varint(n):
    """The xz format's multibyte integer."""
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def pad4(b):
    return b + b"\0" * (-len(b) % 4)


def xz_stream(data):
    """An .xz stream holding `data` in one block of stored LZMA2 chunks, CRC32 check."""
    crc = lambda b: struct.pack("<I", zlib.crc32(b) & 0xFFFFFFFF)
    flags = b"\x00\x01"  # check type 1: CRC32
    out = b"\xfd7zXZ\x00" + flags + crc(flags)
    # Block header: size, flags (one filter, no sizes), LZMA2 (0x21) with one property byte,
    # dictionary 1 MiB (0x10, as the kernel's `xz --lzma2=dict=1MiB`), padding, CRC32.
    fields = bytes([0x00, 0x21, 0x01, 0x10])
    size = len(pad4(b"\0" + fields)) + 4
    head = pad4(bytes([size // 4 - 1]) + fields)
    head += crc(head)
    step = 64 * 1024
    chunks = [data[i : i + step] for i in range(0, len(data), step)]
    packed = b""
    for i, chunk in enumerate(chunks):
        # 1: uncompressed chunk, dictionary reset; 2: uncompressed chunk, no reset.
        packed += bytes([1 if i == 0 else 2]) + struct.pack(">H", len(chunk) - 1) + chunk
    packed += b"\x00"
    unpadded = len(head) + len(packed) + 4
    block = pad4(head + packed) + crc(data)
    index = b"\x00" + varint(1) + varint(unpadded) + varint(len(data))
    index = pad4(index)
    index += crc(index)
    backward = struct.pack("<I", len(index) // 4 - 1)
    footer = crc(backward + flags) + backward + flags + b"YZ"
    return out + block + index + footer


def gzip_member(data):
    """A gzip member holding `data` in stored DEFLATE blocks, mtime 0, OS Unix."""
    out = b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + b"\x00\x03"
    step = 0xFFFF
    chunks = [data[i : i + step] for i in range(0, len(data), step)] or [b""]
    for i, chunk in enumerate(chunks):
        final = 1 if i == len(chunks) - 1 else 0
        n = len(chunk)
        out += bytes([final]) + struct.pack("<HH", n, n ^ 0xFFFF) + chunk
    return out + struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)


def packed(rel, elf):
    """The file's bytes: the ELF object, compressed as the name says."""
    if rel.endswith(".ko.zst"):
        return zstd_frame(elf)
    if rel.endswith(".ko.xz"):
        return xz_stream(elf)
    if rel.endswith(".ko.gz"):
        return gzip_member(elf)
    return elf


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for rel, (machine, strings) in MODULES.items():
        path = os.path.join(ROOT, rel)
        want = packed(rel, module(machine, strings))
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
