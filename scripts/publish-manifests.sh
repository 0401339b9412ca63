#!/usr/bin/env bash
# Writes a signed manifest set into OUTDIR, ready to serve from any static host:
# index.json, index.json.sig and the manifest files (cuda.toml, gpus.toml, ...).
#
#   scripts/publish-manifests.sh OUTDIR [--key SECRET_KEY_FILE] [--from DIR]
#
# --key   the ed25519 secret key (32-byte seed as hex or base64 text). Clients trust its public
#         half with `gpu-doctor manifest update --pubkey FILE` or `manifest_pubkey` in their
#         config file; gpu-doctor has no built-in key. Without --key a throw-away key pair is
#         made, the set is signed with it, and only its public key is kept, as
#         OUTDIR/manifest-signing.pub: for tests and private mirrors.
# --from  the folder of manifest files to publish (default: manifests/ of this repository).
#
# The set is checked exactly as `gpu-doctor manifest update` checks a download (it must load and
# validate); a set that fails is not written. Signing is done by the gpu-doctor binary (hidden
# subcommand `manifest publish`): set GPU_DOCTOR to a built binary to skip `cargo build`.
#
# Upload the folder as a whole; if the host serves it while it is being copied, copy the
# manifest files first and index.json.sig and index.json last, so a client sees the old set, the
# new set, or a mismatch it refuses, never a mix it accepts.
#
# THE SIGNING KEY. Make it on an offline machine that never builds or tests gpu-doctor (a
# laptop kept off the network, or a hardware-backed vault), with a gpu-doctor binary copied there:
#   gpu-doctor manifest keygen /media/offline/gpu-doctor-manifests-2027.key
# which writes the secret (mode 0600, never overwritten) and gpu-doctor-manifests-2027.pub. Only
# the .pub leaves that machine: publish it where users fetch it over a channel other than the
# manifest host (the README, a release note), and they pass it with --pubkey. The secret is never
# committed, never copied to a CI runner, a build host or a developer machine, and never given to
# tests: the test suite signs only with throw-away keys this script (or keygen into a temporary
# folder) makes. Sign on the offline machine: copy OUTDIR's manifest files there, run this
# script with --key, and bring the signed folder back.
#
# ROTATING. 1) Make the new key pair offline as above. 2) Publish the new .pub next to the old,
# with the date the old one stops, and ask users to trust both: a key file may list several
# keys, one a line (or repeat --pubkey), and sets signed by either install. 3) After that
# hand-over window, sign new sets with the new key only. 4) Then drop the old key from the
# published key file and destroy its secret. If a secret leaks, skip the window: publish a key
# file without the leaked key at once and say so where users fetch keys.
set -euo pipefail

usage() {
  sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

repo="$(cd "$(dirname "$0")/.." && pwd)"
out=""
key=""
from="$repo/manifests"
while [ "$#" -gt 0 ]; do
  case "$1" in
    --key) [ "$#" -ge 2 ] || usage; key="$2"; shift 2 ;;
    --key=*) key="${1#--key=}"; shift ;;
    --from) [ "$#" -ge 2 ] || usage; from="$2"; shift 2 ;;
    --from=*) from="${1#--from=}"; shift ;;
    -h | --help) usage ;;
    -*) echo "publish-manifests.sh: unknown option $1" >&2; usage ;;
    *)
      [ -z "$out" ] || { echo "publish-manifests.sh: more than one OUTDIR" >&2; usage; }
      out="$1"; shift ;;
  esac
done
[ -n "$out" ] || usage
if [ -n "$key" ] && [ ! -r "$key" ]; then
  echo "publish-manifests.sh: cannot read the key file $key" >&2
  exit 2
fi

bin="${GPU_DOCTOR:-}"
if [ -z "$bin" ]; then
  cargo build --quiet --manifest-path "$repo/Cargo.toml"
  bin="$repo/target/debug/gpu-doctor"
fi

args=(manifest publish "$out" --from "$from")
if [ -n "$key" ]; then
  args+=(--key "$key")
fi
exec "$bin" "${args[@]}"
