#!/usr/bin/env python3
"""Writes the fixture machines' HIP libraries: minimal ELF64 objects whose `.hip_fatbin` section
holds one clang offload bundle (`__CLANG_OFFLOAD_BUNDLE__`, an entry count, then per entry its
offset, size and id), as clang lays it out for `-x hip --offload-arch=...`. Only the bundle's
header is written (no code objects): it is all gpu-doctor reads (`parse::offload_bundle`).

Each file's target list is the one its fixture's README gives. `--check` compares instead of
writing (tests/it/hip_code.rs runs it).
"""
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")

FILES = {
    "held-out-amd-krackan-llamacpp-no-gfx1152/root/home/clee/llama.cpp/build/bin/libggml-hip.so":
        ["gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201"],
    "amd-strix-halo-llamacpp-gpu-targets-ignored/root/app/libggml-hip.so":
        ["gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"],
    "amd-ollama-012-hip-code-without-gfx906/root/usr/local/lib/ollama/libggml-hip.so":
        ["gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1151",
         "gfx1200", "gfx1201"],
}


def bundle(ids):
    b = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(ids))
    for i in ids:
        b += struct.pack("<QQQ", 0, 0, len(i)) + i.encode()
    return b


def elf(fatbin):
    names = b"\0.shstrtab\0.hip_fatbin\0"
    f = bytearray(64)
    f[0:4] = b"\x7fELF"
    f[4], f[5], f[6] = 2, 1, 1
    struct.pack_into("<HH", f, 0x10, 3, 62)
    names_off = len(f)
    f += names
    while len(f) % 8:
        f += b"\0"
    fat_off = len(f)
    f += fatbin
    while len(f) % 8:
        f += b"\0"
    shoff = len(f)

    def sh(name, off, size, typ):
        e = bytearray(64)
        struct.pack_into("<II", e, 0, name, typ)
        struct.pack_into("<QQ", e, 24, off, size)
        return e

    f += sh(0, 0, 0, 0) + sh(1, names_off, len(names), 3) + sh(11, fat_off, len(fatbin), 1)
    struct.pack_into("<Q", f, 0x28, shoff)
    struct.pack_into("<HHH", f, 0x3A, 64, 3, 1)
    return bytes(f)


def content(targets):
    ids = ["host-x86_64-unknown-linux-gnu-"] + ["hipv4-amdgcn-amd-amdhsa--" + t for t in targets]
    return elf(bundle(ids))


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for rel, targets in FILES.items():
        path = os.path.join(ROOT, rel)
        want = content(targets)
        if check:
            try:
                with open(path, "rb") as fh:
                    if fh.read() != want:
                        stale.append(rel)
            except OSError:
                stale.append(rel)
        else:
            with open(path, "wb") as fh:
                fh.write(want)
    if stale:
        sys.exit("out of date (run scripts/gen-hip-fatbin-elf.py): " + ", ".join(stale))


if __name__ == "__main__":
    main()
