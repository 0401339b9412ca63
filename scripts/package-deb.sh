#!/usr/bin/env bash
# Builds gpu-doctor's Debian package (this machine's architecture: amd64, arm64) from the glibc
# 2.17 build, then installs it with
# dpkg -i, checks what it put where, runs `gpu-doctor doctor`, and removes it with dpkg -r/-P,
# checking that nothing it installed is left.
#
#   scripts/package-deb.sh [BINARY]     # default BINARY: the cargo-zigbuild glibc 2.17 build
#                                       # (made when missing); .deb in target/debian/
#   GPU_DOCTOR_DEB_SYSTEM=1 scripts/package-deb.sh   # install into the real / (a throwaway
#                                       # container or VM); default: a scratch root under target/
#
# The package (dpkg-deb, no cargo-deb needed): /usr/bin/gpu-doctor; a man page per command in
# /usr/share/man/man1/ (gzipped); completions for bash, zsh, fish and nushell where each shell
# looks for packaged ones; README.md in /usr/share/doc/gpu-doctor/. Depends: libc6 (>= 2.17).
set -euo pipefail
cd "$(dirname "$0")/.."

triple=$(uname -m)-unknown-linux-gnu
arch=$(dpkg --print-architecture)
bin=${1:-target/$triple/release/gpu-doctor}
if [ -z "${1:-}" ]; then
  # shellcheck source=scripts/package-tools.sh
  . scripts/package-tools.sh
  cargo zigbuild --release --locked --target "$triple.2.17"
fi
scripts/glibc-floor.sh "$bin" 2.17

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
pkg=target/debian/gpu-doctor_${version}_$arch
rm -rf "$pkg" "$pkg.deb"
mkdir -p "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/share/man/man1" "$pkg/usr/share/doc/gpu-doctor" \
  "$pkg/usr/share/bash-completion/completions" "$pkg/usr/share/zsh/vendor-completions" \
  "$pkg/usr/share/fish/vendor_completions.d" "$pkg/usr/share/nushell/vendor/autoload"
install -m 755 "$bin" "$pkg/usr/bin/gpu-doctor"
"$bin" man --out "$pkg/usr/share/man/man1"
gzip -9n "$pkg"/usr/share/man/man1/*.1
"$bin" completions bash > "$pkg/usr/share/bash-completion/completions/gpu-doctor"
"$bin" completions zsh > "$pkg/usr/share/zsh/vendor-completions/_gpu-doctor"
"$bin" completions fish > "$pkg/usr/share/fish/vendor_completions.d/gpu-doctor.fish"
"$bin" completions nushell > "$pkg/usr/share/nushell/vendor/autoload/gpu-doctor.nu"
gzip -9n < README.md > "$pkg/usr/share/doc/gpu-doctor/README.md.gz"
find "$pkg/usr" -type f ! -path '*/usr/bin/*' -exec chmod 644 {} +
find "$pkg" -type d -exec chmod 755 {} +

installed_kb=$(du -sk "$pkg/usr" | cut -f1)
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: gpu-doctor
Version: $version
Architecture: $arch
Maintainer: gpu-doctor maintainers <maintainers@users.noreply.a-seed-468b5981.example>
Installed-Size: $installed_kb
Depends: libc6 (>= 2.17)
Section: utils
Priority: optional
Description: find out why a GPU does not work with an ML framework
 gpu-doctor looks at a Linux machine (GPUs, the kernel driver, NVML, the CUDA
 and ROCm libraries, every Python environment with its PyTorch, TensorFlow,
 JAX and CuPy builds), says what is wrong and why, explains error messages,
 and writes the install plan that fixes it. It runs without a GPU too.
CONTROL
(cd "$pkg" && find usr -type f -exec md5sum {} + | sort -k2 > DEBIAN/md5sums)
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$pkg.deb" >/dev/null
echo "package-deb: built $pkg.deb ($(stat -c %s "$pkg.deb") bytes)"
dpkg-deb --contents "$pkg.deb" | awk '{ print "  " $NF }'

# Install. A scratch root has its own dpkg database, seeded with this machine's libc6 entry so
# `Depends: libc6` is checked against the real libc6; GPU_DOCTOR_DEB_SYSTEM=1 uses / itself.
if [ "${GPU_DOCTOR_DEB_SYSTEM:-}" = 1 ]; then
  root=/
  dpkg=(dpkg)
else
  root=$PWD/target/pkg-test/deb-root
  rm -rf "$root"
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/usr/bin"
  dpkg-query -s "libc6:$arch" > "$root/var/lib/dpkg/status"
  touch "$root/var/lib/dpkg/info/libc6:$arch.list"
  dpkg=(dpkg --root="$root" --force-not-root --force-script-chrootless)
fi
"${dpkg[@]}" -i "$pkg.deb"
files=$("${dpkg[@]}" -L gpu-doctor)
for want in /usr/bin/gpu-doctor /usr/share/man/man1/gpu-doctor.1.gz \
  /usr/share/man/man1/gpu-doctor-check.1.gz /usr/share/bash-completion/completions/gpu-doctor \
  /usr/share/zsh/vendor-completions/_gpu-doctor /usr/share/fish/vendor_completions.d/gpu-doctor.fish \
  /usr/share/nushell/vendor/autoload/gpu-doctor.nu; do
  grep -qx "$want" <<< "$files" || { echo "package-deb: $want not installed" >&2; exit 1; }
  [ -e "$root$want" ] || { echo "package-deb: $want listed but missing" >&2; exit 1; }
done
# The man page renders with a name and a synopsis (man reads the gzipped file as installed).
page=$(MANWIDTH=200 man -l "$root/usr/share/man/man1/gpu-doctor.1.gz" 2>/dev/null | col -b | tr -s ' ' || true)
grep -q 'gpu-doctor - Finds out why a GPU' <<< "$page" || { echo "package-deb: man page NAME:" >&2; echo "$page" | head -12 >&2; exit 1; }
rc=0
"$root/usr/bin/gpu-doctor" doctor > target/pkg-test/deb-doctor.txt 2>&1 || rc=$?
if [ "$rc" -gt 1 ] || ! grep -q '^GPUs' target/pkg-test/deb-doctor.txt; then
  echo "package-deb: gpu-doctor doctor failed (exit $rc)" >&2
  cat target/pkg-test/deb-doctor.txt >&2
  exit 1
fi
echo "package-deb: installed; gpu-doctor doctor: exit $rc"

"${dpkg[@]}" -r gpu-doctor >/dev/null
# Nothing is left for a purge (no conffiles); it must still succeed.
"${dpkg[@]}" -P gpu-doctor >/dev/null 2>&1
left=""
while read -r f; do
  [ -f "$root$f" ] && left="$left $f"
done <<< "$files"
if [ -n "$left" ] || "${dpkg[@]}" -s gpu-doctor >/dev/null 2>&1; then
  echo "package-deb: dpkg -r/-P left:$left" >&2
  exit 1
fi
echo "package-deb: removed cleanly; ok"
