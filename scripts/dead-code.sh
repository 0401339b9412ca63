#!/usr/bin/env bash
# Reports the items the gpu-doctor binary never uses.
#
# The library is `pub` for main.rs and the integration tests, so rustc's dead-code lint cannot
# see an item that only a test (or nothing) calls. This script compiles the same sources as one
# binary crate: a copy of src/lib.rs with main() appended, as a hidden sibling in src/ (so every
# `mod` and include_str! path resolves as in the library). In a binary every item is private to
# the crate, and each warning is an item no path from main() reaches.
#
# Usage: scripts/dead-code.sh            list them; exit 1 when there are any
#        scripts/dead-code.sh --report   list them; exit 0
set -euo pipefail
cd "$(dirname "$0")/.."

report_only=0
[ "${1:-}" = "--report" ] && report_only=1

root=src/.dead-code-root.rs
work=target/dead-code
trap 'rm -f "$root"' EXIT
mkdir -p "$work"
{
  # Inner attributes and docs of the library root first, then its modules, then main().
  cat src/lib.rs
  printf '\nfn main() -> std::process::ExitCode {\n    commands::main()\n}\n'
} >"$root"

# The package of Cargo.toml as a binary of that root: same dependencies, features and lints.
awk '
  /^\[package\]/ { print; print "name = \"gpu-doctor-dead-code\""; skip = 1; next }
  /^\[/ { skip = 0 }
  skip && /^name *=/ { next }
  /^\[lib\]/ || /^\[\[bin\]\]/ || /^\[\[test\]\]/ || /^\[\[bench\]\]/ { drop = 1; next }
  /^\[/ { drop = 0 }
  !drop { print }
' Cargo.toml | sed 's/^unreachable_pub = .*//' >"$work/Cargo.toml"
cat >>"$work/Cargo.toml" <<TOML

[[bin]]
name = "gpu-doctor-dead-code"
path = "../../$root"

[workspace]
TOML
cp Cargo.lock "$work/Cargo.lock"

out=$(CARGO_TARGET_DIR="$PWD/target" cargo check --quiet --manifest-path "$work/Cargo.toml" \
  --message-format short 2>&1 || true)
dead=$(printf '%s\n' "$out" | grep -E 'warning: .*(never used|never read|never constructed)' \
  | sed "s#^src/#src/#" | sort -u || true)
if [ -z "$dead" ]; then
  echo "dead code: none (every item is reached from main)"
  exit 0
fi
printf '%s\n' "$dead"
echo "dead code: $(printf '%s\n' "$dead" | wc -l) items the binary never uses" >&2
[ "$report_only" -eq 1 ] && exit 0
exit 1
