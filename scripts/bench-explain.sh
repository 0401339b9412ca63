#!/usr/bin/env bash
# Times `gpu-doctor explain --log` on a large training log whose error is on its last line,
# against `doctor --json` on the same fixture machine (what explain does besides reading the
# log) and `grep -F` for the message over the same file (the least any search has to do).
# One warm-up, then several timed runs each in one go; prints medians (wall and, with GNU
# time, CPU = user + sys, which a loaded machine inflates far less) and ratios.
#
# usage: scripts/bench-explain.sh [path/to/gpu-doctor] [megabytes] [runs]
#   megabytes  size of the generated log (default 10)
#   runs       timed runs of each command after one warm-up (default 11)
set -euo pipefail

bin=${1:-target/release/gpu-doctor}
mb=${2:-10}
runs=${3:-11}
here=$(cd "$(dirname "$0")/.." && pwd)
machine=$here/tests/fixtures/rtx5090-torch-cu126

[ -x "$bin" ] || { echo "no executable at $bin (build with: cargo build --release)" >&2; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
log=$dir/train.log

# A training log: progress lines (with the escape codes and carriage returns of a progress bar
# every hundredth line), then the error.
line='2026-12-02 10:31:22 INFO step 1234/100000 loss=2.3456 lr=3.0e-04 grad_norm=1.023 tokens/s=51234 [rank0] mem=12.3GiB'
bar=$'\e[32m 42%|####      | 420/1000 [01:02<01:26,  6.71it/s]\e[0m\r'
awk -v line="$line" -v bar="$bar" -v bytes=$((mb * 1000 * 1000)) 'BEGIN {
  n = 0
  while (n < bytes) { s = (NR_ % 100 == 0) ? bar line : line; print s; n += length(s) + 1; NR_++ }
}' >"$log"
echo 'RuntimeError: CUDA error: no kernel image is available for execution on the device' >>"$log"
message='no kernel image is available for execution on the device'

env_of() { grep -v '^#' "$machine/env" | grep -v '^$'; }
mapfile -t envs < <(env_of)
run_bin() { env -i "${envs[@]}" "$bin" --root "$machine/root" --timeout 2 "$@"; }

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

# cpu_of CMD...: the median CPU seconds (user + sys) of $runs runs, with GNU time.
cpu_of() {
  [ -x /usr/bin/time ] || { echo "n/a"; return; }
  local i
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -f '%U %S' -o "$dir/time" "$@" >/dev/null 2>&1 || true
    awk '{ print $1 + $2 }' "$dir/time"
  done | sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.3f\n", m }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

cause=$(run_bin explain --json --log "$log" | python3 -c 'import json,sys; e=json.load(sys.stdin)["explain"]; print(e["cause"], "at line", e["signatures"][0]["line"])')
echo "machine: $(uname -n) $(uname -r), $(nproc) cores; $runs runs each, median wall seconds"
echo "log: $(du -k "$log" | cut -f1) KiB, $(wc -l <"$log") lines; explain names: $cause"

explain=$(median_of run_bin explain --json --log "$log")
doctor=$(median_of run_bin doctor --json)
grep=$(median_of grep -F -c "$message" "$log")
explain_cpu=$(cpu_of env -i "${envs[@]}" "$bin" --root "$machine/root" --timeout 2 explain --json --log "$log")
doctor_cpu=$(cpu_of env -i "${envs[@]}" "$bin" --root "$machine/root" --timeout 2 doctor --json)

printf '%-44s %s s\n' "gpu-doctor explain --json --log (${mb} MB)" "$explain"
printf '%-44s %s s\n' "gpu-doctor doctor --json (same machine)" "$doctor"
printf '%-44s %s s\n' "grep -F -c <message> (same log)" "$grep"
printf 'explain - doctor (reading and searching the log): %s s\n' "$(awk -v a="$explain" -v b="$doctor" 'BEGIN { printf "%.4f", a - b }')"
printf 'explain / doctor: %s   explain / grep: %s\n' "$(ratio "$explain" "$doctor")" "$(ratio "$explain" "$grep")"
printf 'CPU (user + sys): explain %s s, doctor %s s; load average %s\n' "$explain_cpu" "$doctor_cpu" "$(cut -d' ' -f1-3 /proc/loadavg)"
