#!/usr/bin/env python3
"""Issue 29's measurements in one go on a GPU machine, each against its reference in the same run.

  smoke   `gpu-doctor smoke --json`, the new build and a reference build alternately (the order
          flips every round); median wall time, median `wall_ms` and context time, and the new
          build's per-phase medians (`phases_ms`).
  scan    `doctor --json` of a reference build, of the new build (interpreter cache warm), of the
          new build with `--no-cache`, and `nvidia-smi -q`, alternately, on every GPU of the
          machine; medians and ratios, the medians of each probe's own `duration_ms`, the GPU
          count, and the NVML child's phases (each GPU's query time, the threads).
  tui     `gpu-doctor tui` in a pseudo-terminal on the GPUs screen for SECONDS: the CPU time of
          the TUI and every process it started (live ones read from /proc, finished ones from
          its cutime/cstime), as a share of one core; then that the streaming child is gone
          after the TUI quits and after it is killed (SIGKILL).

usage: scripts/bench-fast.py --new NEW [--old-smoke OLD]... [--old-scan OLD] [--old-tui OLD]
                             [--smoke-rounds 9] [--scan-rounds 21] [--tui-seconds 30] [--json FILE]
"""
import argparse
import json
import os
import pty
import select
import shutil
import signal
import statistics
import subprocess
import sys
import termios
import threading
import time
import fcntl
import struct

TICK = os.sysconf("SC_CLK_TCK")


def run_timed(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    return (time.perf_counter() - start) * 1000, out.stdout


def med(values):
    return statistics.median(values) if values else float("nan")


def bench_smoke(bins, rounds):
    names = list(bins)
    for n in names:  # warm-up: the driver's PTX JIT cache, the interpreter cache
        run_timed([bins[n], "smoke", "--json"])
    wall = {n: [] for n in names}
    inner = {n: [] for n in names}
    context = {n: [] for n in names}
    phases = {n: {} for n in names}
    status = {n: set() for n in names}
    for i in range(rounds):
        for n in names if i % 2 == 0 else reversed(names):
            ms, out = run_timed([bins[n], "smoke", "--json"])
            wall[n].append(ms)
            try:
                s = json.loads(out)["smoke"]
            except (ValueError, KeyError, TypeError):
                status[n].add("unreadable")
                continue
            status[n].add(s.get("status"))
            inner[n].append(s.get("wall_ms") or 0)
            for key, value in (s.get("phases_ms") or {}).items():
                phases[n].setdefault("run." + key, []).append(value)
            for d in s.get("devices", []):
                if d.get("context_ms") is not None:
                    context[n].append(d["context_ms"])
                for key, value in (d.get("phases_ms") or {}).items():
                    phases[n].setdefault(f"gpu{d.get('index')}.{key}", []).append(value)
    print(f"\n== smoke: {rounds} rounds, medians (ms)")
    for n in names:
        print(f"  {n:10} wall {med(wall[n]):7.1f} (min {min(wall[n]):.1f}, max {max(wall[n]):.1f})"
              f"  wall_ms {med(inner[n]):6.1f}  context {med(context[n]):6.1f}  status {sorted(map(str, status[n]))}")
    if "old" in wall and "new" in wall:
        print(f"  new / old wall {med(wall['new']) / med(wall['old']):.3f}")
    for n in names:
        if phases[n]:
            print(f"  phases of {n} (median ms):")
            for key in phases[n]:
                print(f"    {key:34} {med(phases[n][key]):8.2f}")
    return {"wall": wall, "wall_ms": inner, "context": context, "phases": phases}


def bench_scan(cmds, rounds):
    names = list(cmds)
    for n in names:
        run_timed(cmds[n])
    wall = {n: [] for n in names}
    probes = {n: {} for n in names}
    gpus = {n: set() for n in names}
    driver_detail = {}
    for i in range(rounds):
        for n in names if i % 2 == 0 else reversed(names):
            ms, out = run_timed(cmds[n])
            wall[n].append(ms)
            if cmds[n][0] != "nvidia-smi":
                try:
                    report = json.loads(out)
                except ValueError:
                    continue
                gpus[n].add(len(report.get("gpus", [])))
                for p in report.get("probes", []):
                    probes[n].setdefault(p["name"], []).append(p["duration_ms"])
                    if p["name"] == "driver" and p.get("detail"):
                        driver_detail[n] = p["detail"]
    m = {n: med(v) for n, v in wall.items()}
    counts = sorted({c for n in names for c in gpus[n]})
    print(f"\n== scan: {rounds} rounds, median wall ms, GPUs in the report: {counts}")
    for n in names:
        ratio = f"  / smi {m[n] / m['nvidia-smi -q']:.3f}" if "nvidia-smi -q" in m else ""
        print(f"  {n:22} {m[n]:8.1f}  (min {min(wall[n]):.1f}, max {max(wall[n]):.1f}){ratio}")
    keys = sorted({k for n in names for k in probes[n]})
    if keys:
        shown = [n for n in names if probes[n]]
        print("  probe medians, ms: " + " | ".join(shown))
        for k in keys:
            print(f"    {k:22} " + " | ".join(f"{med(probes[n].get(k, [])):6.1f}" for n in shown))
    # The NVML child's own phases (last run of each build): nvmlInit, the per-GPU queries side
    # by side with each GPU's time, libcuda. Compare one kind's N-GPU run with its 1-GPU run.
    for n, detail in driver_detail.items():
        print(f"  driver probe, {n}: {detail}")
    return {"wall": wall, "probes": probes, "gpus": {n: sorted(v) for n, v in gpus.items()},
            "driver_detail": driver_detail}


def descendants(root):
    kids = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for c in kids.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def cpu_ticks(pid, with_children=True):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    # fields[0] is state (field 3); utime is field 14, stime 15, cutime 16, cstime 17
    ticks = int(fields[11]) + int(fields[12])
    if with_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks


def tree_ticks(pid):
    return cpu_ticks(pid) + sum(cpu_ticks(c) for c in descendants(pid))


def cmdlines(pids):
    out = {}
    for p in pids:
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                out[p] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            pass
    return out


def streamers():
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"__gpu-stream" in f.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found


def open_tui(binary):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execv(binary, [binary, "tui"])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    stop = threading.Event()

    def drain():
        while not stop.is_set():
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    if not os.read(fd, 65536):
                        return
                except OSError:
                    return

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    return pid, fd, stop


def bench_tui(name, binary, seconds):
    pid, fd, stop = open_tui(binary)
    time.sleep(4.0)  # the scan
    os.write(fd, b"2")  # the GPUs screen
    time.sleep(3.0)  # the first readings
    kids_before = cmdlines(descendants(pid))
    t0, c0 = time.monotonic(), tree_ticks(pid)
    time.sleep(seconds)
    t1, c1 = time.monotonic(), tree_ticks(pid)
    kids_after = cmdlines(descendants(pid))
    share = (c1 - c0) / TICK / (t1 - t0) * 100
    os.write(fd, b"q")
    deadline = time.time() + 5
    code = None
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = status
            break
        time.sleep(0.05)
    if code is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    stop.set()
    time.sleep(1.5)
    left = streamers()
    print(f"\n== tui {name}: {share:.2f}% of one core over {t1 - t0:.1f} s on the GPUs screen "
          f"({c1 - c0} ticks of 1/{TICK} s)")
    print(f"  processes under the TUI at the start: {sorted(kids_before.values())}")
    print(f"  at the end: {sorted(kids_after.values())}")
    print(f"  quit with q: exit status {code}; streaming children left 1.5 s later: {left}")
    return {"cpu_percent": share, "seconds": t1 - t0, "ticks": c1 - c0, "left_after_quit": left,
            "children": list(kids_after.values())}


def tui_killed(binary):
    pid, fd, stop = open_tui(binary)
    time.sleep(4.0)
    os.write(fd, b"2")
    time.sleep(3.0)
    before = streamers()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    stop.set()
    os.close(fd)
    time.sleep(2.5)
    after = streamers()
    print(f"\n== tui killed with SIGKILL: streaming children before {before}, 2.5 s after {after}")
    return {"before": before, "after": after}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--new", required=True)
    ap.add_argument("--old-smoke", action="append", default=[],
                    help="a reference build for smoke (repeatable: old, old2, ...)")
    ap.add_argument("--old-scan")
    ap.add_argument("--old-tui")
    ap.add_argument("--smoke-rounds", type=int, default=9)
    ap.add_argument("--scan-rounds", type=int, default=21)
    ap.add_argument("--tui-seconds", type=float, default=30)
    ap.add_argument("--skip", default="", help="comma-separated: smoke,scan,tui")
    ap.add_argument("--json")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    print(f"machine: {os.uname().nodename}, {os.cpu_count()} cores, load {os.getloadavg()}")
    results = {}
    if "smoke" not in skip:
        bins = {("old" if i == 0 else f"old{i + 1}"): b for i, b in enumerate(a.old_smoke)}
        bins["new"] = a.new
        for name, b in bins.items():
            print(f"smoke {name}: {b}")
        results["smoke"] = bench_smoke(bins, a.smoke_rounds)
    if "scan" not in skip:
        cmds = {}
        if a.old_scan:
            cmds["old"] = [a.old_scan, "doctor", "--json"]
        cmds["new"] = [a.new, "doctor", "--json"]
        cmds["new --no-cache"] = [a.new, "--no-cache", "doctor", "--json"]
        if shutil.which("nvidia-smi"):
            cmds["nvidia-smi -q"] = ["nvidia-smi", "-q"]
        results["scan"] = bench_scan(cmds, a.scan_rounds)
    if "tui" not in skip:
        results["tui_new"] = bench_tui("new", a.new, a.tui_seconds)
        if a.old_tui:
            results["tui_old"] = bench_tui("old", a.old_tui, a.tui_seconds)
        results["tui_killed"] = tui_killed(a.new)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
