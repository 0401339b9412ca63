#!/usr/bin/env bash
# Runs gpu-doctor once on every node of the current Slurm allocation, one report per node in
# a folder on a shared filesystem, then merges them into a fleet summary (`--help` for more).
set -euo pipefail

prog=slurm-fleet.sh

usage() {
  cat <<'EOF'
Usage: slurm-fleet.sh [--smoke [--bench]] [--out DIR] [--bin PATH] [--srun-opt OPT]...
                      [--allow-missing-gpus]

Run inside a Slurm allocation (salloc, sbatch). On every node of the allocation, one task
each, runs `gpu-doctor doctor --json` (with --smoke: `gpu-doctor smoke --json`, which also
computes on each GPU; --bench adds throughput measurements) and writes DIR/<node>.json,
atomically: a hidden temporary file in DIR, renamed when complete. Then merges the reports
with `gpu-doctor report merge`: the summary goes to stdout, and to DIR/summary.md and
DIR/summary.json.

  --smoke          gpu-doctor smoke --json instead of doctor --json
  --bench          with --smoke, also measure throughput (implies --smoke)
  --out DIR        the folder for the reports, on a filesystem every node sees
                   [default: ./gpu-doctor-fleet-$SLURM_JOB_ID]
  --bin PATH       the gpu-doctor binary, the same path on every node [default: gpu-doctor]
  --srun-opt OPT   one more option for srun (repeatable), e.g. --srun-opt=--overlap inside
                   an interactive step, or --srun-opt=--gpus-per-node=8
  --allow-missing-gpus
                   a node showing fewer GPUs of a model than most nodes with that model
                   (a GPU lost from the bus) is named but does not make the exit code 1
  -h, --help       this help

Reports that this allocation's nodes left in DIR from an earlier run are removed first, so a
node that fails now is not hidden by its old report. Only this allocation's nodes are merged.

Exit codes: 0 every node reported and is healthy; 1 a node needs attention (an error finding
or a failed smoke test), shows fewer GPUs than its peers (unless --allow-missing-gpus), or
wrote no report (the missing nodes are named on stderr); 2 usage
error or not inside an allocation; 3 no report could be merged.
EOF
}

die() {
  printf '%s: %s\n' "$prog" "$1" >&2
  exit "${2:-2}"
}

bin=gpu-doctor
out=
smoke=0
bench=0
srun_opts=()
merge_opts=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --smoke) smoke=1 ;;
    --bench)
      smoke=1
      bench=1
      ;;
    --out)
      [ "$#" -ge 2 ] || die "--out needs a folder"
      out=$2
      shift
      ;;
    --out=*) out=${1#--out=} ;;
    --bin)
      [ "$#" -ge 2 ] || die "--bin needs a path"
      bin=$2
      shift
      ;;
    --bin=*) bin=${1#--bin=} ;;
    --srun-opt)
      [ "$#" -ge 2 ] || die "--srun-opt needs an option"
      srun_opts+=("$2")
      shift
      ;;
    --srun-opt=*) srun_opts+=("${1#--srun-opt=}") ;;
    --allow-missing-gpus) merge_opts+=(--allow-missing-gpus) ;;
    *)
      usage >&2
      die "unknown argument: $1"
      ;;
  esac
  shift
done

if [ -z "${SLURM_JOB_ID:-}" ]; then
  die "not inside a Slurm allocation (SLURM_JOB_ID is not set); run it from sbatch, or in a shell from salloc"
fi
nodelist=${SLURM_JOB_NODELIST:-${SLURM_NODELIST:-}}
[ -n "$nodelist" ] || die "SLURM_JOB_NODELIST is not set; cannot tell which nodes to expect"
[ -n "$bin" ] || die "--bin is empty"
[ -n "${out:-}" ] || out="./gpu-doctor-fleet-$SLURM_JOB_ID"

# The nodes of the allocation, to name the ones that wrote no report.
if ! node_text=$(scontrol show hostnames "$nodelist"); then
  die "scontrol show hostnames failed for $nodelist" 3
fi
expected=()
while IFS= read -r node; do
  [ -n "$node" ] && expected+=("$node")
done <<<"$node_text"
[ "${#expected[@]}" -gt 0 ] || die "scontrol listed no nodes for $nodelist" 3
nodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-${#expected[@]}}}

mkdir -p -- "$out" || die "cannot create $out" 3
# Absolute, so every task writes to the same place whatever its working folder.
out=$(cd -- "$out" && pwd -P)

# A file name for a node name: a `/` would be a folder.
file_of() {
  printf '%s/%s.json' "$out" "${1//\//_}"
}
for node in "${expected[@]}"; do
  rm -f -- "$(file_of "$node")"
done

if [ "$smoke" = 1 ]; then
  command=(smoke --json)
  [ "$bench" = 1 ] && command+=(--bench)
else
  command=(doctor --json)
fi

# What each task runs. gpu-doctor exits 1 when it finds a problem and `smoke` 3 when it
# could not run, with a report on stdout either way: any output is kept, and the merge
# judges it. The temporary name starts with `.`, which `report merge` passes over.
# shellcheck disable=SC2016 # expanded by the task's shell, not this one
node_script='
set -u
bin=$1
out=$2
shift 2
node=${SLURMD_NODENAME:-$(hostname)}
# The report names the node as Slurm does (cloned VMs and containers often share a hostname).
export GPU_DOCTOR_HOSTNAME="$node"
node=${node//\//_}
tmp=$(mktemp "$out/.$node.json.XXXXXX") || exit 3
"$bin" "$@" >"$tmp"
rc=$?
if [ -s "$tmp" ]; then
  mv -f -- "$tmp" "$out/$node.json" || { rm -f -- "$tmp"; exit 3; }
else
  rm -f -- "$tmp"
  printf "%s: %s: %s wrote no report (exit %s)\n" slurm-fleet.sh "$node" "$bin" "$rc" >&2
fi
exit "$rc"
'

printf '%s: running gpu-doctor %s on %s nodes into %s\n' "$prog" "${command[*]}" "$nodes" "$out" >&2
# --ntasks overrides an SLURM_NTASKS inherited from `sbatch --ntasks`; one task failing must
# not stop the others.
srun_rc=0
srun --nodes="$nodes" --ntasks="$nodes" --ntasks-per-node=1 --kill-on-bad-exit=0 \
  "${srun_opts[@]}" bash -c "$node_script" slurm-fleet-node "$bin" "$out" "${command[@]}" ||
  srun_rc=$?
[ "$srun_rc" = 0 ] || printf '%s: srun exited %s (a node found a problem or failed); merging what was written\n' "$prog" "$srun_rc" >&2

files=()
missing=()
for node in "${expected[@]}"; do
  file=$(file_of "$node")
  if [ -s "$file" ]; then
    files+=("$file")
  else
    missing+=("$node")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  printf '%s: %s of %s nodes wrote no report: %s\n' "$prog" "${#missing[@]}" "${#expected[@]}" "${missing[*]}" >&2
fi
[ "${#files[@]}" -gt 0 ] || die "no node wrote a report into $out" 3

rc=0
"$bin" report merge ${merge_opts[@]+"${merge_opts[@]}"} "${files[@]}" || rc=$?
"$bin" -q report merge ${merge_opts[@]+"${merge_opts[@]}"} --format markdown -o "$out/summary.md" "${files[@]}" || true
"$bin" -q report merge ${merge_opts[@]+"${merge_opts[@]}"} --json -o "$out/summary.json" "${files[@]}" || true
printf '%s: reports and summary.md, summary.json in %s\n' "$prog" "$out" >&2

if [ "${#missing[@]}" -gt 0 ] && [ "$rc" = 0 ]; then
  rc=1
fi
exit "$rc"
