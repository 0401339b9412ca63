#!/usr/bin/env bash
# Compares two gpu-doctor builds on this machine: `doctor --json` run alternately (the order
# flips every round, so drift and caches hit both alike), with `nvidia-smi -q` in the same
# rounds when it exists. Prints the median wall time of each, the ratios, and the median of each
# probe's own `duration_ms`, so a slower build shows where it is slower.
#
# usage: scripts/bench-ab.sh OLD_BINARY NEW_BINARY [rounds]   (default 31 rounds)
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY [rounds]" >&2; exit 2; }
for b in "$1" "$2"; do [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }; done
exec python3 - "$1" "$2" "${3:-31}" <<'PY'
import collections, json, shutil, statistics, subprocess, sys, time

old, new, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
cmds = {"old": [old, "doctor", "--json"], "new": [new, "doctor", "--json"]}
if shutil.which("nvidia-smi"):
    cmds["nvidia-smi -q"] = ["nvidia-smi", "-q"]
wall = collections.defaultdict(list)
probes = {"old": collections.defaultdict(list), "new": collections.defaultdict(list)}
for c in cmds.values():  # warm-up
    subprocess.run(c, capture_output=True)
for i in range(rounds):
    order = list(cmds) if i % 2 == 0 else list(reversed(cmds))
    for name in order:
        start = time.perf_counter()
        out = subprocess.run(cmds[name], capture_output=True, text=True).stdout
        wall[name].append((time.perf_counter() - start) * 1000)
        if name in probes:
            try:
                for p in json.loads(out).get("probes", []):
                    probes[name][p["name"]].append(p["duration_ms"])
            except ValueError:
                pass
med = {k: statistics.median(v) for k, v in wall.items()}
print(f"{rounds} rounds, median wall ms")
for name, m in med.items():
    print(f"  {name:14} {m:8.1f}  (min {min(wall[name]):.1f}, max {max(wall[name]):.1f})")
print(f"  new / old      {med['new'] / med['old']:.3f}")
if "nvidia-smi -q" in med:
    print(f"  old / smi      {med['old'] / med['nvidia-smi -q']:.3f}")
    print(f"  new / smi      {med['new'] / med['nvidia-smi -q']:.3f}")
print("probe medians, ms (old -> new)")
for name in sorted(set(probes["old"]) | set(probes["new"])):
    a = statistics.median(probes["old"][name]) if probes["old"][name] else float("nan")
    b = statistics.median(probes["new"][name]) if probes["new"][name] else float("nan")
    print(f"  {name:20} {a:6.1f} -> {b:6.1f}")
PY
