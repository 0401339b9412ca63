#!/usr/bin/env bash
# Writes gpu-doctor's man pages (gpu-doctor.1 and one per subcommand, e.g.
# gpu-doctor-report-merge.1) from the same clap definitions as --help, so they never drift.
#
#   scripts/gen-man.sh [DIR]        # default DIR: target/man
#   GPU_DOCTOR=path/to/gpu-doctor scripts/gen-man.sh DIR   # use a built binary, skip cargo
#
# Install for one user:  scripts/gen-man.sh ~/.local/share/man/man1 && man gpu-doctor
# Packagers: gzip the pages into /usr/share/man/man1/.
set -euo pipefail

usage() {
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
}

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$repo/target/man}"

if [ -n "${GPU_DOCTOR:-}" ]; then
  bin="$GPU_DOCTOR"
else
  cargo build --release --quiet --manifest-path "$repo/Cargo.toml"
  bin="$repo/target/release/gpu-doctor"
fi

"$bin" man --out "$out"
echo "man pages in $out:" >&2
ls "$out" >&2
