#!/usr/bin/env bash
# Times `gpu-doctor doctor --json` against the tools users run today: `nvidia-smi -q` and
# `python3 -m torch.utils.collect_env`, several runs each on the same machine, and prints the
# median wall time of each and the ratios. A reference that is missing is reported, not faked.
#
# usage: scripts/bench-doctor.sh [path/to/gpu-doctor] [runs]
#   env PYTHON=...  the interpreter that has torch (default: python3)
set -euo pipefail

bin=${1:-target/release/gpu-doctor}
runs=${2:-7}
python=${PYTHON:-python3}

[ -x "$bin" ] || { echo "no executable at $bin (build with: cargo build --release)" >&2; exit 2; }

now_ns() { date +%s%N; }

# median_of CMD...: runs CMD $runs times (after one warm-up) and prints the median in seconds.
median_of() {
  local times=() start end i
  "$@" >/dev/null 2>&1 || return 1
  for ((i = 0; i < runs; i++)); do
    start=$(now_ns)
    "$@" >/dev/null 2>&1 || true
    end=$(now_ns)
    times+=($(( (end - start) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.4f\n", m / 1e6 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }

echo "machine: $(uname -n) $(uname -r), $(nproc) cores; $runs runs each, median wall seconds"
doctor=$(median_of "$bin" doctor --json)
printf '%-40s %8s s\n' "gpu-doctor doctor --json" "$doctor"

if command -v nvidia-smi >/dev/null 2>&1 && smi=$(median_of nvidia-smi -q); then
  printf '%-40s %8s s   doctor/smi = %s\n' "nvidia-smi -q" "$smi" "$(ratio "$doctor" "$smi")"
else
  echo "nvidia-smi -q                            not available here"
fi

if "$python" -c 'import torch' >/dev/null 2>&1 && ce=$(median_of "$python" -m torch.utils.collect_env); then
  printf '%-40s %8s s   doctor/collect_env = %s\n' "python -m torch.utils.collect_env" "$ce" "$(ratio "$doctor" "$ce")"
else
  echo "python -m torch.utils.collect_env        not available here (no torch for $python)"
fi
