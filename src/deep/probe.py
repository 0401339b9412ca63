# gpu-doctor's deep probe (embedded in the binary by src/deep/run.rs).
#
# Run as `python -I -c <this file> FRAMEWORK MODE BUDGET` from a fresh empty working folder:
# imports one framework (torch, tensorflow, jax or cupy), asks it what it sees, and with MODE
# "smoke" also runs a small matmul on each GPU it sees (and, for torch on two or more GPUs, an
# NCCL all-reduce in two processes). Prints progress lines and one result line, each starting
# with a marker, on stdout; everything else the framework prints is left alone.
#
# It must run on Python 3.8 to 3.13 and never stop on a missing attribute: every question is
# asked through `ask`, which records a failure as text and goes on. Nothing here may use
# syntax newer than 3.8.

import json
import os
import sys
import time
import traceback
import warnings

STEP = "GPU_DOCTOR_STEP "
RESULT = "GPU_DOCTOR_RESULT "

# The matmul checked against the CPU: M, N, K. Not square, so a transposed operand fails.
SIZE = (256, 192, 320)
# Norm-wise relative error allowed: fp32 with K=320 stays below ~1e-6; TF32 (if a framework
# uses it despite being told not to) below ~2e-4; a wrong kernel gives errors near 1.
TOLERANCE = 1e-3
# Elements of the all-reduced tensor (4 MiB of fp32).
ALLREDUCE_ELEMENTS = 1 << 20

# Warnings about code rather than the machine (deprecations in a framework's own imports).
CODE_WARNINGS = (
    DeprecationWarning,
    PendingDeprecationWarning,
    FutureWarning,
    ImportWarning,
    ResourceWarning,
    SyntaxWarning,
)

MODULES = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax", "cupy": "cupy"}


def step(name):
    """Says what is about to run, so a hang can be placed."""
    sys.stdout.write(STEP + name + "\n")
    sys.stdout.flush()


def one_line(text, limit=2000):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(exc):
    """`Type: message`, on one line."""
    name = type(exc).__name__
    text = one_line(exc)
    return name + ": " + text if text else name


def text_or_none(value):
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return one_line(value, 500)


def int_or_none(value):
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except Exception:
        return None


class Probe(object):
    def __init__(self, framework, budget):
        self.out = {
            "framework": framework,
            "python": sys.version.split()[0],
            "executable": sys.executable,
            "devices": [],
            "arch_list": [],
            "plugins": [],
            "build_info": {},
            "warnings": [],
            "errors": [],
        }
        self.started = time.time()
        self.deadline = self.started + budget

    def ask(self, what, fn, default=None):
        """fn() or `default`; a failure is recorded under `errors` as `what: Type: message`."""
        try:
            return fn()
        except BaseException as exc:  # noqa: B902 - SystemExit from a framework is a fact too
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.out["errors"].append(what + ": " + describe(exc))
            return default

    def left(self):
        return self.deadline - time.time()


def capture_logging(sink):
    """WARNING and worse log records (JAX reports its CUDA plugin's failure this way) go to
    `sink` as text, not to stderr only."""
    import logging

    class Sink(logging.Handler):
        def emit(self, record):
            try:
                text = record.getMessage()
                if record.exc_info and record.exc_info[1] is not None:
                    text = text + " (" + describe(record.exc_info[1]) + ")"
                sink.append(record.levelname + " " + record.name + ": " + one_line(text))
            except Exception:
                pass

    handler = Sink(logging.WARNING)
    logging.getLogger().addHandler(handler)


def device_entry(index, name=None, cc=None, memory=None, platform=None):
    return {
        "index": index,
        "name": text_or_none(name),
        "compute_capability": text_or_none(cc),
        "memory_total_mib": memory,
        "platform": text_or_none(platform),
    }


# --- torch ---------------------------------------------------------------------------------


def nccl_text(version):
    """torch.cuda.nccl.version(): a tuple (2, 28, 9[, suffix]) in recent torch, an int before
    (2708 = 2.7.8 below NCCL 2.9, 22809 = 2.28.9 from 2.9 on)."""
    if isinstance(version, (tuple, list)):
        return ".".join(str(part) for part in version[:3])
    number = int_or_none(version)
    if number is None:
        return None
    if number >= 10000:
        return "%d.%d.%d" % (number // 10000, number % 10000 // 100, number % 100)
    return "%d.%d.%d" % (number // 1000, number % 1000 // 100, number % 100)


def probe_torch(p, torch):
    out = p.out
    out["version"] = p.ask("torch.__version__", lambda: text_or_none(torch.__version__))
    out["cuda"] = p.ask("torch.version.cuda", lambda: text_or_none(torch.version.cuda))
    out["hip"] = p.ask("torch.version.hip", lambda: text_or_none(getattr(torch.version, "hip", None)))
    out["cudnn"] = p.ask(
        "torch.backends.cudnn.version()", lambda: int_or_none(torch.backends.cudnn.version())
    )
    step("torch.cuda.is_available()")
    out["gpu_available"] = p.ask("torch.cuda.is_available()", lambda: bool(torch.cuda.is_available()))
    count = p.ask("torch.cuda.device_count()", lambda: int(torch.cuda.device_count()), 0) or 0
    out["device_count"] = count
    if out["gpu_available"]:
        # Initialising CUDA is where torch checks the GPUs against its build ("sm_XX is not
        # compatible with the current PyTorch installation").
        step("torch.cuda.init()")
        p.ask("torch.cuda.init()", lambda: torch.cuda.init())
    for i in range(count):
        step("torch.cuda.get_device_properties(%d)" % i)
        props = p.ask("torch.cuda.get_device_properties(%d)" % i, lambda: torch.cuda.get_device_properties(i))
        name = cc = memory = None
        if props is not None:
            name = getattr(props, "name", None)
            if getattr(props, "major", None) is not None:
                cc = "%s.%s" % (props.major, props.minor)
            total = int_or_none(getattr(props, "total_memory", None))
            memory = total // (1024 * 1024) if total is not None else None
        out["devices"].append(device_entry(i, name, cc, memory))
    arch = p.ask("torch.cuda.get_arch_list()", lambda: list(torch.cuda.get_arch_list()), [])
    if not arch:
        # get_arch_list() is [] whenever is_available() is False; the build's list is still
        # there, and it is the evidence for a GPU the build has no kernels for.
        flags = p.ask("torch._C._cuda_getArchFlags()", lambda: getattr(torch._C, "_cuda_getArchFlags", lambda: None)())
        arch = flags.split() if isinstance(flags, str) else []
    out["arch_list"] = [str(a) for a in arch]
    if out["cuda"]:
        out["nccl"] = p.ask("torch.cuda.nccl.version()", lambda: nccl_text(torch.cuda.nccl.version()))


def matmul_inputs():
    """Inputs in [-1, 1) from a fixed seed, without numpy (torch does not require it)."""
    import random

    rng = random.Random(20261129)
    m, n, k = SIZE
    a = [[rng.uniform(-1.0, 1.0) for _ in range(k)] for _ in range(m)]
    b = [[rng.uniform(-1.0, 1.0) for _ in range(n)] for _ in range(k)]
    return a, b


def check_entry(device, error=None, rel=None):
    passed = error is None and rel is not None and rel == rel and rel <= TOLERANCE
    entry = {"device": device, "size": list(SIZE), "tolerance": TOLERANCE, "passed": bool(passed)}
    entry["max_rel_error"] = rel if (rel is not None and rel == rel and rel != float("inf")) else None
    if error is not None:
        entry["error"] = error
    elif rel is None or rel != rel:
        entry["error"] = "the result holds NaN or infinity"
    return entry


def smoke_torch(p, torch):
    smoke = {"matmuls": []}
    if not p.out.get("gpu_available"):
        smoke["error"] = "torch.cuda.is_available() is False"
        return smoke
    a_list, b_list = matmul_inputs()
    a = torch.tensor(a_list, dtype=torch.float32)
    b = torch.tensor(b_list, dtype=torch.float32)
    ref = a.double() @ b.double()
    scale = float(ref.abs().max())
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
    except Exception:
        pass
    for i in range(p.out.get("device_count") or 0):
        step("torch matmul on cuda:%d" % i)
        try:
            dev = torch.device("cuda", i)
            c = (a.to(dev) @ b.to(dev)).cpu().double()
            rel = float((c - ref).abs().max()) / scale
            smoke["matmuls"].append(check_entry(i, rel=rel))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            smoke["matmuls"].append(check_entry(i, error=describe(exc)))
    if (p.out.get("device_count") or 0) >= 2:
        smoke["allreduce"] = allreduce(p)
    return smoke


# The all-reduce worker: one process per GPU, started the way torchrun starts training
# (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE in the environment, env:// rendezvous).
WORKER = r"""
import json, os, sys, time
sys.path[:] = [x for x in sys.path if x not in ("", ".", os.getcwd())]
rank = int(sys.argv[1]); world = int(sys.argv[2]); elements = int(sys.argv[3]); timeout = float(sys.argv[4])
out = {"rank": rank}
try:
    import datetime
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))
    t = torch.full((elements,), float(rank + 1), device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    want = float(world * (world + 1) // 2)
    out["ok"] = bool((t == want).all().item())
    out["value"] = float(t[0].item())
    out["want"] = want
    t.fill_(1.0)
    torch.cuda.synchronize()
    start = time.time()
    dist.all_reduce(t)
    torch.cuda.synchronize()
    out["ms"] = (time.time() - start) * 1000.0
    dist.destroy_process_group()
except BaseException as exc:
    out["error"] = type(exc).__name__ + ": " + " ".join(str(exc).split())[:2000]
sys.stdout.write("GPU_DOCTOR_RESULT " + json.dumps(out) + "\n")
sys.stdout.flush()
os._exit(0)
"""


def free_port():
    import socket

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def allreduce(p):
    import subprocess

    world = 2
    result = {"world_size": world, "elements": ALLREDUCE_ELEMENTS, "passed": False}
    # Leave time to report: the parent's deadline would discard everything torch said.
    timeout = p.left() - 3.0
    if timeout < 5.0:
        result["error"] = "not enough time left before the deadline (%.0f s)" % max(p.left(), 0)
        return result
    step("torch NCCL all-reduce on %d GPUs" % world)
    env = dict(os.environ)
    env.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": str(world)})
    # NCCL names the transport of each channel ("via P2P/CUMEM/read", "via SHM/...", "via NET/...")
    # at INFO level, on stdout unless NCCL_DEBUG_FILE sends it elsewhere.
    env.update({"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"})
    env.pop("NCCL_DEBUG_FILE", None)
    procs = []
    nccl_log = []
    result["nccl_log"] = nccl_log
    try:
        for rank in range(world):
            env_rank = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
            args = [sys.executable, "-I", "-c", WORKER, str(rank), str(world), str(ALLREDUCE_ELEMENTS), str(int(timeout))]
            procs.append(
                subprocess.Popen(
                    args, env=env_rank, cwd=os.getcwd(), stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                )
            )
        answers = []
        for proc in procs:
            try:
                stdout, stderr = proc.communicate(timeout=max(p.left() - 2.0, 1.0))
            except subprocess.TimeoutExpired:
                result["error"] = "the all-reduce did not finish within %.0f s" % timeout
                return result
            answer = {}
            for line in stdout.decode("utf-8", "replace").splitlines():
                if line.startswith(RESULT):
                    try:
                        answer = json.loads(line[len(RESULT):])
                    except ValueError:
                        pass
                elif " NCCL INFO " in line and (" via " in line or "NET/" in line) and len(nccl_log) < 256:
                    nccl_log.append(line[:400])
            if not answer:
                tail = [l for l in stderr.decode("utf-8", "replace").splitlines() if l.strip()][-3:]
                answer = {"error": "rank exited with status %s: %s" % (proc.returncode, one_line(" | ".join(tail)))}
            answers.append(answer)
        errors = ["rank %d: %s" % (i, a["error"]) for i, a in enumerate(answers) if a.get("error")]
        if errors:
            result["error"] = "; ".join(errors)
        elif not all(a.get("ok") for a in answers):
            result["error"] = "wrong sum: got %s, want %s" % (
                [a.get("value") for a in answers], answers[0].get("want"))
        else:
            result["passed"] = True
            times = [a.get("ms") for a in answers if isinstance(a.get("ms"), (int, float))]
            result["ms"] = max(times) if times else None
        return result
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


# --- tensorflow ----------------------------------------------------------------------------


def probe_tensorflow(p, tf):
    out = p.out
    out["version"] = p.ask("tf.__version__", lambda: text_or_none(tf.__version__))
    info = p.ask("tf.sysconfig.get_build_info()", lambda: dict(tf.sysconfig.get_build_info()), {}) or {}
    for key, value in info.items():
        if isinstance(value, (list, tuple)):
            out["build_info"][str(key)] = ", ".join(str(v) for v in value)
        else:
            out["build_info"][str(key)] = one_line(value, 500)
    out["cuda"] = text_or_none(info.get("cuda_version"))
    out["cudnn"] = text_or_none(info.get("cudnn_version"))
    caps = info.get("cuda_compute_capabilities")
    if isinstance(caps, (list, tuple)):
        out["arch_list"] = [str(c) for c in caps]
    step("tf.config.list_physical_devices('GPU')")
    def list_gpus():
        # tf.config.list_physical_devices is 2.1+; 2.0 had it under experimental.
        lister = getattr(tf.config, "list_physical_devices", None)
        if lister is None:
            lister = tf.config.experimental.list_physical_devices
        return list(lister("GPU"))

    gpus = p.ask("tf.config.list_physical_devices('GPU')", list_gpus)
    if gpus is None:
        return
    out["gpu_available"] = len(gpus) > 0
    out["device_count"] = len(gpus)
    for i, gpu in enumerate(gpus):
        details = p.ask(
            "tf.config.experimental.get_device_details(GPU:%d)" % i,
            lambda: dict(tf.config.experimental.get_device_details(gpu)),
            {},
        ) or {}
        cc = details.get("compute_capability")
        cc = "%s.%s" % tuple(cc[:2]) if isinstance(cc, (list, tuple)) and len(cc) >= 2 else None
        out["devices"].append(device_entry(i, details.get("device_name") or getattr(gpu, "name", None), cc))


def smoke_tensorflow(p, tf):
    smoke = {"matmuls": []}
    if not p.out.get("gpu_available"):
        smoke["error"] = "tf.config.list_physical_devices('GPU') is empty"
        return smoke
    import numpy as np

    try:
        tf.config.experimental.enable_tensor_float_32_execution(False)
    except Exception:
        pass
    a, b, ref, scale = numpy_inputs(np)
    for i in range(p.out.get("device_count") or 0):
        step("tensorflow matmul on GPU:%d" % i)
        try:
            with tf.device("/GPU:%d" % i):
                c = tf.linalg.matmul(tf.constant(a), tf.constant(b))
            where = str(getattr(c, "device", ""))
            if "GPU" not in where.upper():
                # Soft placement would quietly run it on the CPU.
                smoke["matmuls"].append(check_entry(i, error="the matmul ran on %s, not on the GPU" % (where or "an unknown device")))
                continue
            rel = float(np.abs(c.numpy().astype(np.float64) - ref).max()) / scale
            smoke["matmuls"].append(check_entry(i, rel=rel))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            smoke["matmuls"].append(check_entry(i, error=describe(exc)))
    return smoke


def numpy_inputs(np):
    rng = np.random.RandomState(20261129)
    m, n, k = SIZE
    a = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, (k, n)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return a, b, ref, float(np.abs(ref).max())


# --- jax -----------------------------------------------------------------------------------


def jax_plugins():
    """Installed JAX CUDA/ROCm plugin distributions with their versions."""
    try:
        from importlib import metadata
    except ImportError:
        return []
    found = set()
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"] or ""
        except Exception:
            continue
        norm = name.lower().replace("_", "-")
        if norm.startswith("jax-cuda") or norm.startswith("jax-rocm") or norm.startswith("jaxlib"):
            found.add("%s %s" % (norm, dist.version))
    return sorted(found)


def probe_jax(p, jax):
    out = p.out
    out["version"] = p.ask("jax.__version__", lambda: text_or_none(jax.__version__))
    out["plugins"] = p.ask("importlib.metadata", jax_plugins, []) or []
    step("jax.default_backend()")
    out["backend"] = p.ask("jax.default_backend()", lambda: text_or_none(jax.default_backend()))
    step("jax.devices('gpu')")
    try:
        gpus = list(jax.devices("gpu"))
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        out["gpu_error"] = describe(exc)
        gpus = []
    out["gpu_available"] = len(gpus) > 0
    out["device_count"] = len(gpus)
    for i, d in enumerate(gpus):
        index = int_or_none(getattr(d, "id", None))
        out["devices"].append(
            device_entry(
                i if index is None else index,
                getattr(d, "device_kind", None),
                getattr(d, "compute_capability", None),
                None,
                getattr(d, "platform", None),
            )
        )


def smoke_jax(p, jax):
    smoke = {"matmuls": []}
    if not p.out.get("gpu_available"):
        smoke["error"] = "jax.devices('gpu') is empty or failed"
        return smoke
    import numpy as np
    import jax.numpy as jnp

    a, b, ref, scale = numpy_inputs(np)
    highest = getattr(getattr(jax, "lax", None), "Precision", None)
    highest = getattr(highest, "HIGHEST", None)
    for i, d in enumerate(jax.devices("gpu")):
        step("jax matmul on %s" % d)
        index = int_or_none(getattr(d, "id", None))
        try:
            x = jax.device_put(a, d)
            y = jax.device_put(b, d)
            c = jnp.matmul(x, y, precision=highest) if highest is not None else jnp.matmul(x, y)
            c = np.asarray(c.block_until_ready()).astype(np.float64)
            rel = float(np.abs(c - ref).max()) / scale
            smoke["matmuls"].append(check_entry(i if index is None else index, rel=rel))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            smoke["matmuls"].append(check_entry(i if index is None else index, error=describe(exc)))
    return smoke


# --- cupy ----------------------------------------------------------------------------------


def probe_cupy(p, cupy):
    out = p.out
    out["version"] = p.ask("cupy.__version__", lambda: text_or_none(cupy.__version__))
    runtime = p.ask("cupy.cuda.runtime", lambda: cupy.cuda.runtime)
    if runtime is None:
        return
    out["cuda_runtime_version"] = p.ask("cupy.cuda.runtime.runtimeGetVersion()", lambda: int_or_none(runtime.runtimeGetVersion()))
    out["cuda_driver_version"] = p.ask("cupy.cuda.runtime.driverGetVersion()", lambda: int_or_none(runtime.driverGetVersion()))
    step("cupy.cuda.runtime.getDeviceCount()")
    try:
        count = int(runtime.getDeviceCount())
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        out["gpu_error"] = describe(exc)
        count = 0
    out["gpu_available"] = count > 0
    out["device_count"] = count
    for i in range(count):
        props = p.ask("cupy.cuda.runtime.getDeviceProperties(%d)" % i, lambda: dict(runtime.getDeviceProperties(i)), {}) or {}
        cc = None
        if props.get("major") is not None:
            cc = "%s.%s" % (props.get("major"), props.get("minor"))
        total = int_or_none(props.get("totalGlobalMem"))
        out["devices"].append(device_entry(i, props.get("name"), cc, total // (1024 * 1024) if total is not None else None))
    if count:
        def nccl():
            from cupy.cuda import nccl as cupy_nccl

            return nccl_text(cupy_nccl.get_version())

        out["nccl"] = p.ask("cupy.cuda.nccl.get_version()", nccl)


def smoke_cupy(p, cupy):
    smoke = {"matmuls": []}
    if not p.out.get("gpu_available"):
        smoke["error"] = "cupy.cuda.runtime.getDeviceCount() found no GPU"
        return smoke
    import numpy as np

    a, b, ref, scale = numpy_inputs(np)
    for i in range(p.out.get("device_count") or 0):
        step("cupy matmul on device %d" % i)
        try:
            with cupy.cuda.Device(i):
                c = cupy.asnumpy(cupy.asarray(a) @ cupy.asarray(b)).astype(np.float64)
            rel = float(np.abs(c - ref).max()) / scale
            smoke["matmuls"].append(check_entry(i, rel=rel))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            smoke["matmuls"].append(check_entry(i, error=describe(exc)))
    return smoke


PROBES = {
    "torch": (probe_torch, smoke_torch),
    "tensorflow": (probe_tensorflow, smoke_tensorflow),
    "jax": (probe_jax, smoke_jax),
    "cupy": (probe_cupy, smoke_cupy),
}


def main():
    # The working folder is fresh and empty, and `-I` keeps it off sys.path on 3.11+; this
    # keeps it off on 3.8-3.10 too, so a stray `torch.py` is never what gets imported.
    try:
        here = os.getcwd()
    except OSError:
        here = ""
    sys.path[:] = [x for x in sys.path if x not in ("", ".", here)]
    framework = sys.argv[1] if len(sys.argv) > 1 else ""
    mode = sys.argv[2] if len(sys.argv) > 2 else "probe"
    try:
        budget = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
    except ValueError:
        budget = 60.0
    p = Probe(framework, budget)
    if framework not in PROBES:
        p.out["errors"].append("unknown framework %r" % framework)
        return p.out
    probe, smoke = PROBES[framework]
    logs = []
    capture_logging(logs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        step("import " + MODULES[framework])
        start = time.time()
        try:
            module = __import__(MODULES[framework])
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            module = None
            p.out["import_error"] = describe(exc)
        p.out["import_seconds"] = time.time() - start
        if module is not None:
            p.out["module_path"] = text_or_none(os.path.dirname(getattr(module, "__file__", "") or "") or None)
            try:
                probe(p, module)
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                p.out["errors"].append("probe: " + describe(exc) + " at " + where(exc))
            if mode == "smoke":
                try:
                    p.out["smoke"] = smoke(p, module)
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    p.out["smoke"] = {"matmuls": [], "error": describe(exc)}
        seen = set()
        for w in caught:
            if issubclass(w.category, CODE_WARNINGS):
                continue
            text = "%s: %s" % (getattr(w.category, "__name__", "Warning"), one_line(w.message))
            if text not in seen:
                seen.add(text)
                p.out["warnings"].append(text)
    for text in logs:
        if text not in seen:
            seen.add(text)
            p.out["warnings"].append(text)
    return p.out


def where(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    last = frames[-1]
    return "%s:%s" % (os.path.basename(last[0]), last[1])


def finite(value):
    """The result with NaN and infinities as null: JSON has no spelling for them."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return dict((str(k), finite(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


if __name__ == "__main__":
    result = main()
    sys.stdout.write(RESULT + json.dumps(finite(result), default=str) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: CUDA libraries that crash or hang at exit must not turn a
    # complete answer into a failure.
    os._exit(0)
