#!/usr/bin/env bash
# Packs the crate as crates.io would get it (`cargo package`), checks what it carries, and
# installs gpu-doctor from it with `cargo install --locked`, then runs `gpu-doctor doctor`:
#   in:   Cargo.toml, Cargo.lock, README.md, src/, every file the code embeds (manifests/*.toml,
#         schema/report.schema.json: cargo package's own build of the unpacked crate fails
#         without one), the Kubernetes examples
#   out:  tests/ (44 MB of fixtures), scripts/, .ci/, target/, editor and VCS files
#   metadata: description, readme, keywords, categories set; license and repository are the
#         owners' to choose (crates.io refuses a crate without a license): reported, not failed
#
#   scripts/package-crate.sh        # .crate in target/package/, installs under target/pkg-test/
#
# The install is a native release build (about 8 minutes on 2 busy cores); its target folder
# is target/ itself, so a second run reuses it.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "package-crate: $*" >&2; exit 1; }

list=$(cargo package --locked --list --allow-dirty)
for want in Cargo.toml Cargo.lock README.md src/main.rs src/lib.rs schema/report.schema.json \
  manifests/k8s/daemonset.yaml; do
  grep -qx "$want" <<< "$list" || fail "$want is not in the package"
done
# Every file the code embeds with include_str!/include_bytes! outside its tests.
embedded=$(grep -rhoE 'include_(str|bytes)!\("[^"]+"\)' src --include='*.rs' \
  | sed -E 's/.*\("(.*)"\)/\1/' | sort -u)
while read -r rel; do
  case "$rel" in *tests/*) continue ;; esac
  found=0
  while read -r source; do
    path=$(realpath -m --relative-to=. "$(dirname "$source")/$rel")
    [ -f "$path" ] && { grep -qx "$path" <<< "$list" || fail "$path (embedded by $source) is not in the package"; found=1; }
  done < <(grep -rlF "\"$rel\"" src --include='*.rs')
  [ "$found" = 1 ] || fail "embedded file $rel not found"
done <<< "$embedded"
bad=$(grep -E '^(tests/|scripts/|\.ci/|target/|\.device/|\.keys/)' <<< "$list" || true)
[ -z "$bad" ] || fail "the package carries files users do not need: $(head -n5 <<< "$bad" | tr '\n' ' ')"
echo "package-crate: $(wc -l <<< "$list") files, no tests/ or scripts/"

meta=$(cargo metadata --no-deps --format-version 1 --locked)
python3 - "$meta" <<'PY'
import json, sys
pkg = json.loads(sys.argv[1])["packages"][0]
missing = [k for k in ("description", "readme") if not pkg.get(k)]
missing += [k for k in ("keywords", "categories") if not pkg.get(k)]
if missing:
    sys.exit(f"package-crate: Cargo.toml lacks {', '.join(missing)}")
owners = [k for k in ("license", "repository") if not pkg.get(k)]
if owners:
    print(f"package-crate: note: no {' or '.join(owners)} in Cargo.toml yet (the owners' choice; "
          "crates.io refuses a crate without a license)", file=sys.stderr)
PY

# The .crate and its own build from the unpacked sources (what crates.io's users get).
cargo package --locked --allow-dirty
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
crate=target/package/gpu-doctor-$version.crate
echo "package-crate: built $crate ($(stat -c %s "$crate") bytes)"

test=target/pkg-test/crate
rm -rf "$test"
mkdir -p "$test/src"
tar -xzf "$crate" -C "$test/src"
cargo install --locked --path "$test/src/gpu-doctor-$version" --root "$test/root" --target-dir target
rc=0
"$test/root/bin/gpu-doctor" doctor > "$test/doctor.txt" 2>&1 || rc=$?
if [ "$rc" -gt 1 ] || ! grep -q '^GPUs' "$test/doctor.txt"; then
  cat "$test/doctor.txt" >&2
  fail "the installed gpu-doctor doctor failed (exit $rc)"
fi
echo "package-crate: cargo install --locked from the crate: gpu-doctor doctor exit $rc; ok"
