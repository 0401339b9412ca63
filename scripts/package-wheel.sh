#!/usr/bin/env bash
# Builds the Python wheel that carries the gpu-doctor binary (maturin, bindings = "bin",
# manylinux2014 through cargo-zigbuild), then installs it the three ways users do, each into a
# fresh, empty place, and runs `gpu-doctor doctor` from each:
#   pip install WHEEL   into a new virtual environment
#   pipx install WHEEL  with its own PIPX_HOME and PIPX_BIN_DIR
#   uvx --from WHEEL gpu-doctor doctor   with its own cache
# The binary inside the wheel is checked against the glibc 2.17 floor (scripts/glibc-floor.sh).
#
#   scripts/package-wheel.sh            # wheel in target/wheels/, installs under target/pkg-test/
#
# Release build: about 10 minutes on 2 busy cores (figures in BENCHMARKS.md, "Packages").
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/package-tools.sh
. scripts/package-tools.sh

out=target/wheels
rm -f "$out"/gpu_doctor-*.whl
maturin build --release --locked --zig --compatibility manylinux2014 --out "$out"
wheel=$(ls "$out"/gpu_doctor-*.whl)
echo "package-wheel: built $wheel ($(stat -c %s "$wheel") bytes)"
case "$wheel" in
  *manylinux_2_17_x86_64*|*manylinux2014_x86_64*) ;;
  *) echo "package-wheel: $wheel is not tagged manylinux2014 (glibc 2.17)" >&2; exit 1 ;;
esac

test=target/pkg-test/wheel
rm -rf "$test"
mkdir -p "$test"
# What the wheel holds: the binary as a script (maturin's "bin"), the metadata, nothing else.
python3 - "$wheel" "$test/gpu-doctor" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
names = zipfile.ZipFile(wheel).namelist()
bins = [n for n in names if n.endswith(".data/scripts/gpu-doctor")]
others = [n for n in names if ".dist-info/" not in n and n not in bins]
assert len(bins) == 1, names
assert not others, f"the wheel holds more than the binary: {others}"
with open(dest, "wb") as f:
    f.write(zipfile.ZipFile(wheel).read(bins[0]))
print("package-wheel: wheel holds", ", ".join(names))
PY
scripts/glibc-floor.sh "$test/gpu-doctor" 2.17

# Each install runs `doctor`: exit 0 (healthy) or 1 (a finding) is a working gpu-doctor; 2 or
# 3, or a crash, is not. Nothing here has a GPU, so the report says none was found.
doctor() {
  local rc=0
  "$@" doctor > "$test/doctor.txt" 2>&1 || rc=$?
  if [ "$rc" -gt 1 ] || ! grep -q '^GPUs' "$test/doctor.txt"; then
    echo "package-wheel: '$*' doctor failed (exit $rc):" >&2
    cat "$test/doctor.txt" >&2
    exit 1
  fi
  echo "package-wheel: $1 doctor: exit $rc, $(wc -l < "$test/doctor.txt") lines"
}

python3 -m venv "$test/venv"
"$test/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel"
doctor "$test/venv/bin/gpu-doctor"
"$test/venv/bin/python" -m pip uninstall -q -y gpu-doctor
[ ! -e "$test/venv/bin/gpu-doctor" ] || { echo "package-wheel: pip uninstall left the binary" >&2; exit 1; }

PIPX_HOME="$PWD/$test/pipx" PIPX_BIN_DIR="$PWD/$test/pipx-bin" PIPX_MAN_DIR="$PWD/$test/pipx-man" \
  pipx install --quiet "$wheel"
doctor "$test/pipx-bin/gpu-doctor"

UV_CACHE_DIR="$PWD/$test/uv-cache" UV_TOOL_DIR="$PWD/$test/uv-tools" \
  doctor uvx --offline --from "$wheel" gpu-doctor
echo "package-wheel: ok"
