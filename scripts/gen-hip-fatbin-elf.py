#!/usr/bin/env python3
"""Writes the fixture machines' HIP libraries: minimal ELF64 objects whose `.hip_fatbin` section
holds one clang offload bundle (`__CLANG_OFFLOAD_BUNDLE__`, an entry count, then per entry its
offset, size and id), as clang lays it out for `-x hip --offload-arch=...`. Only the bundle's
header is written (no code objects): it is all gpu-doctor reads (`parse::offload_bundle`).

A file listed in COMPRESSED holds a compressed bundle instead (`CCOB`, clang's
`--offload-compress`), laid out as clang/lib/Driver/OffloadBundler.cpp's
`CompressedOffloadBundle::compress` writes it (llvm/llvm-project @000390203c87): "CCOB", the
format version (u16), the method (u16: `llvm::compression::Format`, zlib 0, zstd 1), then by
version the total size with the header (v2 u32, v3 u64; none in v1), the uncompressed size (v1
and v2 u32, v3 u64) and the MD5 of the uncompressed bundle truncated to its low 8 bytes read
little-endian (`MD5Result::low`), then the stream. The streams are written by hand in each
format's simplest valid encoding, so the output never depends on a compressor's version
(`--check` must hold on every machine): zstd (RFC 8878) one frame of Raw blocks, zlib (RFC 1950)
a DEFLATE stream of stored blocks with its Adler-32. `zstd -t` accepts the one, Python's
`zlib.decompress` the other. The unit tests of src/parse/offload_bundle.rs and
src/probe/rocm.rs read the test vectors in tests/data/hip-fatbin/ (every version and method).

Each file's target list is the one its fixture's README gives. `--check` compares instead of
writing (tests/it/hip_code.rs runs it).
"""
import hashlib
import os
import struct
import sys
import zlib

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
ROOT = os.path.join(HERE, "fixtures")

FILES = {
    "held-out-amd-krackan-llamacpp-no-gfx1152/root/home/clee/llama.cpp/build/bin/libggml-hip.so":
        ["gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201"],
    "amd-strix-halo-llamacpp-gpu-targets-ignored/root/app/libggml-hip.so":
        ["gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"],
    "amd-ollama-012-hip-code-without-gfx906/root/usr/local/lib/ollama/libggml-hip.so":
        ["gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1151",
         "gfx1200", "gfx1201"],
}


# Fixture libraries whose bundle is compressed: path -> (targets, version, method). Version 3
# and zstd, as hipfire's report shows nixpkgs' ROCm 7.2.3 clang writing them (warpfront/hipfire#569:
# "CCOB....", version 3, method 1, then the zstd magic).
COMPRESSED = {
    "held-out-amd-strix-halo-nixos-rocm723-llamacpp-healthy/root/nix/store/7k2b9q1x0m4lzd3v8f6h5c2n1p0r9s8t-llama-cpp-rocm-10566/lib/libggml-hip.so":
        (["gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201"], 3, 1),
    # Version 2, zlib: the other header and method, end to end (the fixture's README says why).
    "amd-strix-halo-llamacpp-compressed-bundle-no-gfx1151/root/app/libggml-hip.so":
        (["gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"], 2, 0),
}

# Test vectors (relative to tests/): one library per version and method, each for gfx1100 and
# gfx1151 beside the host entry.
VECTORS = {
    "data/hip-fatbin/ccob-v%d-%s.so" % (v, name): (["gfx1100", "gfx1151"], v, m)
    for v in (1, 2, 3)
    for name, m in (("zlib", 0), ("zstd", 1))
}


def zstd_frame(data):
    """A zstd frame holding `data` in Raw blocks of at most 128 KiB (as gen-module-elf.py)."""
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


def zlib_stream(data):
    """A zlib stream holding `data` in stored DEFLATE blocks (RFC 1951 3.2.4)."""
    # CMF 0x78: DEFLATE, 32 KiB window; FLG 0x01: no dictionary, level 0, (CMF*256+FLG) % 31 == 0.
    out = b"\x78\x01"
    step = 0xFFFF
    chunks = [data[i : i + step] for i in range(0, len(data), step)] or [b""]
    for i, chunk in enumerate(chunks):
        final = 1 if i == len(chunks) - 1 else 0
        n = len(chunk)
        out += bytes([final]) + struct.pack("<HH", n, n ^ 0xFFFF) + chunk
    return out + struct.pack(">I", zlib.adler32(data) & 0xFFFFFFFF)


def ccob(inner, version, method):
    """The compressed bundle of the uncompressed bundle `inner`."""
    stream = zstd_frame(inner) if method == 1 else zlib_stream(inner)
    digest = struct.unpack("<Q", hashlib.md5(inner).digest()[:8])[0]
    if version == 1:
        head = struct.pack("<HHIQ", 1, method, len(inner), digest)
    elif version == 2:
        head = struct.pack("<HHIIQ", 2, method, 4 + 20 + len(stream), len(inner), digest)
    else:
        head = struct.pack("<HHQQQ", 3, method, 4 + 28 + len(stream), len(inner), digest)
    return b"CCOB" + head + stream


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


def content(targets, packed=None):
    ids = ["host-x86_64-unknown-linux-gnu-"] + ["hipv4-amdgcn-amd-amdhsa--" + t for t in targets]
    if packed is None:
        return elf(bundle(ids))
    return elf(ccob(bundle(ids), *packed))


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    items = [(os.path.join(ROOT, rel), rel, t, None) for rel, t in FILES.items()]
    items += [(os.path.join(ROOT, rel), rel, t, (v, m)) for rel, (t, v, m) in COMPRESSED.items()]
    items += [(os.path.join(HERE, rel), rel, t, (v, m)) for rel, (t, v, m) in VECTORS.items()]
    for path, rel, targets, packed in items:
        want = content(targets, packed)
        if check:
            try:
                with open(path, "rb") as fh:
                    if fh.read() != want:
                        stale.append(rel)
            except OSError:
                stale.append(rel)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(want)
    if stale:
        sys.exit("out of date (run scripts/gen-hip-fatbin-elf.py): " + ", ".join(stale))


if __name__ == "__main__":
    main()
