#!/usr/bin/env bash
# Reports the items the gpu-doctor binary never uses.
#
# The library is `pub` for main.rs and the integration tests, so rustc's dead-code lint cannot
# see an item that only a test (or nothing) calls. This script compiles a copy of the same
# sources, under target/dead-code/, as one binary crate: src/lib.rs with main() appended, every
# `pub` made `pub(crate)`. Each dead-code warning is then an item no path from main() reaches.
#
# Usage: scripts/dead-code.sh            list them; exit 1 when one is not in dead-code.allow
#        scripts/dead-code.sh --report   list them; exit 0
set -euo pipefail
cd "$(dirname "$0")/.."

report_only=0
[ "${1:-}" = "--report" ] && report_only=1

work=target/dead-code
rm -rf "$work/src"
mkdir -p "$work"
cp -R src "$work/src"
# Every `pub` becomes `pub(crate)`: rustc counts a binary's `pub` items as used.
find "$work/src" -name '*.rs' -exec perl -pi -e 's/\bpub(?=\s)/pub(crate)/g' {} +
{
  perl -pe 's/\bpub(?=\s)/pub(crate)/g' src/lib.rs
  printf '\nfn main() -> std::process::ExitCode {\n    commands::main()\n}\n'
} >"$work/src/main.rs"
rm -f "$work/src/lib.rs"
# What include_str! reaches above src/.
for d in manifests schema tests README.md; do ln -sfn "../../$d" "$work/$d"; done

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
path = "src/main.rs"

[workspace]
TOML
cp Cargo.lock "$work/Cargo.lock"

out=$(CARGO_TARGET_DIR="$PWD/target" cargo check --quiet --manifest-path "$work/Cargo.toml" \
  --message-format short 2>&1 || true)
# One line per item, without line numbers: `src/date.rs: method `next_day``.
dead=$(printf '%s\n' "$out" | grep -E 'warning: .*(never used|never read|never constructed)' \
  | sed -E "s#^$work/##; s#^(src/[^:]+):[0-9]+:[0-9]+: warning: (.*) (is|are) never (used|read|constructed)#\1: \2#" \
  | sort -u || true)
if [ -z "$dead" ]; then
  echo "dead code: none (every item is reached from main)"
  exit 0
fi
printf '%s\n' "$dead"
echo "dead code: $(printf '%s\n' "$dead" | wc -l) items the binary never uses" >&2
[ "$report_only" -eq 1 ] && exit 0
# Items kept on purpose (each with its reason) are listed in scripts/dead-code.allow; any other
# fails the check.
new=$(printf '%s\n' "$dead" | grep -vxF -f <(grep -v '^#' scripts/dead-code.allow | sed '/^$/d') || true)
if [ -n "$new" ]; then
  echo "dead code not in scripts/dead-code.allow (delete it, use it, or list it there with why):" >&2
  printf '%s\n' "$new" >&2
  exit 1
fi
