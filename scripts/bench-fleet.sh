#!/usr/bin/env bash
# Times the fleet faces: `report merge` over N node reports against only parsing the same files
# with Python's json module (the least any merge has to do), and, on a live machine,
# `doctor --format prometheus` against `doctor --json`. Several runs each in one go; prints
# medians and ratios.
#
# usage: scripts/bench-fleet.sh [path/to/gpu-doctor] [nodes] [runs] [report.json]
#   nodes   how many node reports to merge (default 1000)
#   runs    timed runs of each command after one warm-up (default 7)
#   report  the report copied to every node, each with its own hostname and a tenth of them
#           with another driver (default tests/fixtures/real/h200-smoke.json)
set -euo pipefail

bin=${1:-target/release/gpu-doctor}
nodes=${2:-1000}
runs=${3:-7}
report=${4:-$(dirname "$0")/../tests/fixtures/real/h200-smoke.json}
python=${PYTHON:-python3}

[ -x "$bin" ] || { echo "no executable at $bin (build with: cargo build --release)" >&2; exit 2; }
[ -r "$report" ] || { echo "cannot read $report" >&2; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# One report per node: its own hostname, every tenth node on another driver (a drifted stack).
for ((i = 1; i <= nodes; i++)); do
  node=$(printf 'node%04d' "$i")
  if ((i % 10 == 0)); then
    sed -e "s/\"hostname\": \"[^\"]*\"/\"hostname\": \"$node\"/" \
      -e 's/"version": "580.159.04"/"version": "580.95.05"/' "$report" >"$dir/$node.json"
  else
    sed -e "s/\"hostname\": \"[^\"]*\"/\"hostname\": \"$node\"/" "$report" >"$dir/$node.json"
  fi
done

now_ns() { date +%s%N; }

# median_of CMD...: one warm-up, then $runs timed runs; prints the median in seconds.
median_of() {
  local times=() start end i
  "$@" >/dev/null 2>&1 || true
  for ((i = 0; i < runs; i++)); do
    start=$(now_ns)
    "$@" >/dev/null 2>&1 || true
    end=$(now_ns)
    times+=($(((end - start) / 1000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.4f\n", m / 1e6 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

size=$(du -sk "$dir" | cut -f1)
echo "machine: $(uname -n) $(uname -r), $(nproc) cores; $runs runs each, median wall seconds"
echo "fleet: $nodes reports of $(basename "$report"), ${size} KiB in all"

groups=$("$bin" report merge "$dir" --json | "$python" -c 'import json,sys; s=json.load(sys.stdin); print(s["counts"]["nodes"], "nodes,", s["counts"]["groups"], "stacks")')
echo "merge sees: $groups"
merge=$(median_of "$bin" report merge "$dir")
merge_json=$(median_of "$bin" report merge "$dir" --json)
parse=$(median_of "$python" -c 'import json,sys,glob; [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/*.json")]' "$dir")
printf '%-44s %8s s\n' "python json.load of every file (reference)" "$parse"
printf '%-44s %8s s   merge/parse = %s\n' "gpu-doctor report merge (text)" "$merge" "$(ratio "$merge" "$parse")"
printf '%-44s %8s s   merge/parse = %s\n' "gpu-doctor report merge --json" "$merge_json" "$(ratio "$merge_json" "$parse")"

if command -v nvidia-smi >/dev/null 2>&1; then
  json=$(median_of "$bin" doctor --json)
  prom=$(median_of "$bin" doctor --format prometheus)
  printf '%-44s %8s s\n' "gpu-doctor doctor --json" "$json"
  printf '%-44s %8s s   prometheus/json = %s\n' "gpu-doctor doctor --format prometheus" "$prom" "$(ratio "$prom" "$json")"
else
  echo "doctor --format prometheus vs --json      not timed (no GPU machine here)"
fi
