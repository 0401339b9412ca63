#!/usr/bin/env bash
# The smoke test's speed goals, measured in one go on one GPU machine: gpu-doctor and the
# PyTorch reference run back to back on the same card, and the ratios are printed.
#   - `gpu-doctor smoke` wall time (goal <= 1.0 s), median of several runs
#   - cuBLASLt bf16 8192^3 GEMM vs torch.matmul bf16 (goal >= 1.0x)
#   - device-to-device copy vs a torch 1 GiB copy (goal >= 0.95x)
#   - the PTX fp32 kernel vs torch fp32 with TF32 off (goal >= 0.5x)
# usage: scripts/bench-smoke.sh [path/to/gpu-doctor] [runs]   (PYTHON=... for torch)
set -euo pipefail
bin=${1:-target/release/gpu-doctor}
runs=${2:-5}
python=${PYTHON:-python3}
[ -x "$bin" ] || { echo "no executable at $bin" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

walls=()
for ((i = 0; i < runs; i++)); do
  s=$(date +%s%N); "$bin" smoke >/dev/null 2>&1 || true; e=$(date +%s%N)
  walls+=($(( (e - s) / 1000000 )))
done
wall=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "gpu-doctor smoke wall: median ${wall} ms of ${runs} runs (${walls[*]} ms)"

"$bin" smoke --bench --json > "$tmp/smoke.json" || true
cat > "$tmp/ref.py" <<'PY'
import json, sys, torch
def bench(fn, iters=10):
    for _ in range(3): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts) // 2]
n = 8192
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.randn(n, n, device="cuda"); b = torch.randn(n, n, device="cuda")
fp32 = 2 * n**3 / (bench(lambda: a @ b) * 1e-3) / 1e12
a = a.bfloat16(); b = b.bfloat16()
bf16 = 2 * n**3 / (bench(lambda: a @ b) * 1e-3) / 1e12
x = torch.empty(1 << 28, device="cuda"); y = torch.empty_like(x)
copy = 2 * (1 << 30) / (bench(lambda: y.copy_(x), 20) * 1e-3) / 1e9
d = json.load(open(sys.argv[1]))["smoke"]["devices"][0]
t = d.get("throughput") or {}; bw = d.get("bandwidth") or {}
def row(name, ours, ref, goal):
    if ours is None: print(f"{name:34} not measured"); return
    print(f"{name:34} gpu-doctor {ours:9.1f}  torch {ref:9.1f}  ratio {ours / ref:5.2f}  (goal >= {goal})")
row("bf16 8192^3 GEMM TFLOP/s", t.get("cublaslt_bf16_tflops"), bf16, "1.0")
row("device copy GB/s (read+write)", bw.get("device_to_device_gbs"), copy, "0.95")
row("fp32 GEMM TFLOP/s (TF32 off)", t.get("ptx_fp32_tflops"), fp32, "0.5")
PY
"$python" "$tmp/ref.py" "$tmp/smoke.json"
