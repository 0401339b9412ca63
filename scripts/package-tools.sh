# Sourced by scripts/package-*.sh: the packaging tools, from PyPI into a virtual environment of
# their own (PACKAGE_VENV, default target/pkg-venv), pinned so a new release cannot change a
# build overnight. ziglang is Zig's compiler as a wheel: cargo-zigbuild links through it against
# glibc 2.17's symbol versions, so no old distribution or container image is needed.
#   ziglang        the Zig toolchain (zig cc: C compiler and linker for any glibc)
#   cargo-zigbuild `cargo zigbuild --target x86_64-unknown-linux-gnu.2.17`
#   maturin        builds the wheel (bindings = "bin"; pyproject.toml)
#   uv, pipx       install the built wheel the ways users do (scripts/package-wheel.sh)
# shellcheck shell=bash
pkg_venv=${PACKAGE_VENV:-target/pkg-venv}
pkg_pins=(ziglang==0.17.1 cargo-zigbuild==0.24.1 maturin==1.16.0 uv==0.13.9 pipx==1.18.4)
if ! "$pkg_venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  python3 -m venv "$pkg_venv"
fi
if ! "$pkg_venv/bin/python" -m pip install -q --disable-pip-version-check "${pkg_pins[@]}" >/dev/null 2>&1; then
  echo "$(basename "$0"): could not install ${pkg_pins[*]} from PyPI" >&2
  exit 2
fi
PATH="$PWD/$pkg_venv/bin:$PATH"
export PATH
