//! What the frameworks said when their environment's interpreter imported them (`doctor
//! --deep`, `smoke --frameworks`; the facts are `frameworks[].runtime`). Findings:
//! `framework-cannot-see-gpu`, `framework-import-failed`, `framework-probe-failed`,
//! `framework-smoke-failed`, `nccl-allreduce-failed`.
//!
//! A framework's own answer outranks what its files suggest: [`sees_gpu`] lets
//! `frameworks.rs` drop a file-based "this cannot work" that the framework disproved, and
//! [`arch_list`] gives it the build's real arch list; [`confirmation`] adds the framework's own
//! words to a file-based finding it confirms.
//!
//! A runtime symptom whose cause another rule already reports (no driver, a driver too old for
//! the build, a missing cuDNN, hidden GPUs) is not reported again: the cause is the finding, and
//! the framework's words are in its `runtime`. What the framework's words mean, and their fix
//! (a framework blind to the GPU, an import that fails, a matmul that raises), come from the
//! rows of `errors.toml` that `gpu-doctor explain` answers from: one table, no message kept
//! here.

use super::FindingBuilder;
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::{KnownError, Manifests};
use crate::report::GpuSource;
use crate::report::Subject;
use crate::report::runtime::{FrameworkRuntime, FrameworkSmoke};
use crate::report::{
    Finding, Framework, Gpu, ProbeStatus, PythonEnv, Report, Severity, framework_subject,
};

/// Lines of a framework's own output quoted as evidence, at most.
const QUOTED: usize = 4;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let asked = report
        .python_envs
        .iter()
        .flat_map(|e| e.frameworks.iter().map(move |f| (e, f)))
        .filter_map(|(e, f)| f.runtime.as_ref().map(|rt| (e, f, rt)));
    let mut causes: Option<Vec<Finding>> = None;
    let mut out = Vec::new();
    for (env, fw, rt) in asked {
        let subject = framework_subject(&env.path, &fw.name);
        // Whether another rule names the cause: one about this framework, or (`machine_wide`)
        // one about the whole machine (no driver, hidden GPUs). The other rules' findings are
        // made once, and only when a symptom needs them.
        let mut explained = |machine_wide: bool| {
            causes
                .get_or_insert_with(|| root_causes(report, manifests))
                .iter()
                .any(|c| {
                    c.subjects.contains(&subject)
                        || (machine_wide && !c.subjects.iter().any(|s| s.as_framework().is_some()))
                })
        };
        match rt.status {
            ProbeStatus::Skipped | ProbeStatus::Absent => {}
            ProbeStatus::TimedOut => out.push(probe_failed(env, fw, rt, Severity::Warning)),
            ProbeStatus::Failed if rt.import_error.is_some() => {
                // A missing GPU does not break an import; a missing library of its own does.
                if !explained(false) {
                    out.push(import_failed(env, fw, rt, manifests));
                }
            }
            ProbeStatus::Failed => out.push(probe_failed(env, fw, rt, Severity::Error)),
            ProbeStatus::Ok => {
                let gpus = driver_gpus(report);
                if rt.gpu_available == Some(false)
                    && cuda_build(fw, rt)
                    && !gpus.is_empty()
                    && !explained(true)
                {
                    out.push(cannot_see_gpu(env, fw, rt, &gpus, manifests));
                }
                if let Some(smoke) = &rt.smoke {
                    out.extend(smoke_failed(env, fw, rt, smoke, manifests, &mut explained));
                    out.extend(allreduce_failed(env, fw, smoke));
                }
            }
        }
    }
    out
}

/// Whether the framework, asked at run time, found a GPU: the strongest evidence there is that
/// its build and this driver work together.
pub(super) fn sees_gpu(fw: &Framework) -> bool {
    fw.runtime
        .as_ref()
        .is_some_and(|rt| rt.status == ProbeStatus::Ok && rt.gpu_available == Some(true))
}

/// The arch list the framework itself reported, with where it came from; `None` when it was not
/// asked or said nothing (torch returns `[]` without a usable GPU unless the build flags answer).
pub(super) fn arch_list(fw: &Framework) -> Option<(&[String], String)> {
    let rt = fw
        .runtime
        .as_ref()
        .filter(|rt| rt.status == ProbeStatus::Ok)?;
    if rt.arch_list.is_empty() {
        return None;
    }
    let call = match FrameworkName::from_report(&fw.name) {
        Some(FrameworkName::Torch) => "torch.cuda.get_arch_list()",
        Some(FrameworkName::Tensorflow) => "tf.sysconfig.get_build_info()",
        _ => "the framework's arch list",
    };
    let by = rt
        .interpreter
        .as_deref()
        .unwrap_or("the environment's python");
    Some((&rt.arch_list, format!("{call} run by {by}")))
}

/// Evidence lines from the framework's own answer that bear on a file-based finding about it:
/// that it sees no GPU, and its GPU-related warnings.
pub(super) fn confirmation(fw: &Framework) -> Vec<String> {
    let Some(rt) = fw
        .runtime
        .as_ref()
        .filter(|rt| rt.status == ProbeStatus::Ok)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if rt.gpu_available == Some(false) {
        out.push(format!("at run time: {}", question(&fw.name, rt)));
    }
    out.extend(quoted(rt));
    out
}

/// Error findings of the rules that name causes of a framework not working: the driver, the
/// build against the driver and GPU, its libraries, and what hides the GPU from processes.
fn root_causes(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    [
        super::driver::findings,
        super::frameworks::findings,
        super::libraries::findings,
        super::platform::findings,
    ]
    .iter()
    .flat_map(|rule| rule(report, manifests))
    .filter(|f| f.severity == Severity::Error)
    .collect()
}

/// GPUs a driver reported: the ones a framework should see. Overrides and the bare PCI bus
/// state nothing a framework could find.
fn driver_gpus(report: &Report) -> Vec<&Gpu> {
    report
        .gpus
        .iter()
        .filter(|g| g.source == GpuSource::Nvml || g.source == GpuSource::NvidiaSmi)
        .collect()
}

/// Whether this build is meant to use an NVIDIA GPU; what the framework said wins over its
/// files (a torch whose `torch.version.cuda` is None is a CPU build whatever its files said).
fn cuda_build(fw: &Framework, rt: &FrameworkRuntime) -> bool {
    let files_say = fw.variant.as_deref() == Some("cuda") || fw.cuda.is_some();
    match FrameworkName::from_report(&fw.name) {
        Some(FrameworkName::Torch) if rt.version.is_some() => rt.cuda.is_some(),
        Some(FrameworkName::Tensorflow) => {
            rt.cuda.is_some()
                || rt.build_info.get("is_cuda_build").map(String::as_str) == Some("True")
                || (rt.build_info.is_empty() && files_say)
        }
        Some(FrameworkName::Jax) => {
            rt.plugins.iter().any(|p| p.starts_with("jax-cuda")) || files_say
        }
        Some(FrameworkName::Cupy) => fw.variant.as_deref() != Some("rocm"),
        _ => files_say,
    }
}

/// The framework's own question and answer, in its own terms.
fn question(name: &str, rt: &FrameworkRuntime) -> String {
    let count = rt
        .device_count
        .map(|n| n.to_string())
        .unwrap_or_else(|| "?".into());
    match FrameworkName::from_report(name) {
        Some(FrameworkName::Torch) => {
            format!("torch.cuda.is_available() returned False (device_count() = {count})")
        }
        Some(FrameworkName::Tensorflow) => {
            "tf.config.list_physical_devices('GPU') returned no GPU".to_string()
        }
        Some(FrameworkName::Jax) => match &rt.gpu_error {
            Some(e) => format!(
                "jax.devices('gpu') raised {e}; default backend: {}",
                rt.backend.as_deref().unwrap_or("?")
            ),
            None => format!(
                "jax.devices('gpu') is empty; default backend: {}",
                rt.backend.as_deref().unwrap_or("?")
            ),
        },
        Some(FrameworkName::Cupy) => match &rt.gpu_error {
            Some(e) => format!("cupy.cuda.runtime.getDeviceCount() raised {e}"),
            None => "cupy.cuda.runtime.getDeviceCount() returned 0".to_string(),
        },
        None => format!("{name} reports no GPU"),
    }
}

/// Words that mark a line of a framework's output as being about the GPU stack.
const GPU_WORDS: [&str; 12] = [
    "cuda",
    "gpu",
    "driver",
    "nvidia",
    "cudnn",
    "dlopen",
    "libcu",
    "nccl",
    "sm_",
    "capability",
    "plugin",
    "backend",
];

fn about_gpu(line: &str) -> bool {
    let lower = line.to_lowercase();
    GPU_WORDS.iter().any(|w| lower.contains(w))
}

/// The framework's GPU-related warnings, then stderr lines, then failed questions, at most
/// [`QUOTED`], each once.
fn quoted(rt: &FrameworkRuntime) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let lines = rt
        .warnings
        .iter()
        .chain(rt.stderr.iter())
        .chain(rt.probe_errors.iter());
    for line in lines.filter(|l| about_gpu(l)) {
        if out.len() == QUOTED {
            break;
        }
        let line = format!("said: {line}");
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// The row of `errors.toml` (the table `gpu-doctor explain` answers from) that explains the
/// framework's own output: its `meaning` is the cause and its `fix` the fix, so `doctor --deep`
/// and `explain` say the same about the same words ([`known_in`]: a fatal row before a
/// warning, then the earliest in the output); a message never the machine's fault (the
/// workload's out-of-memory) explains nothing here.
/// The table is parsed only when a framework's answer needs it.
fn known<'m>(rt: &FrameworkRuntime, manifests: &'m Manifests) -> Option<&'m KnownError> {
    let text = rt
        .warnings
        .iter()
        .chain(&rt.stderr)
        .chain(&rt.probe_errors)
        .chain(&rt.gpu_error)
        .chain(&rt.import_error)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n");
    known_in(&text, manifests)
}

/// The row of `errors.toml` that explains `text`, as [`known`] picks it: a fatal row before a
/// warning, then the earliest in the text, then the earlier row. The table's own search
/// (`ErrorTable::matching`): the framework's words come straight from its interpreter, with
/// none of the prefixes, wraps and colours a paste carries (explain's index is not used here:
/// `diagnose` importing `explain` would close an import cycle).
fn known_in<'m>(text: &str, manifests: &'m Manifests) -> Option<&'m KnownError> {
    manifests
        .errors
        .matching(text)
        .into_iter()
        .enumerate()
        .filter(|(_, (row, _))| !row.not_the_machine)
        .min_by_key(|(order, (row, found))| (!row.fatal, found.start, *order))
        .map(|(_, (row, _))| row)
}

fn label(fw: &Framework, rt: &FrameworkRuntime) -> String {
    let version = rt
        .version
        .as_deref()
        .or(fw.version.as_deref())
        .unwrap_or("(version unknown)");
    format!("{} {version}", fw.name)
}

fn imported_by(fw: &Framework, rt: &FrameworkRuntime) -> String {
    let cuda = rt
        .cuda
        .as_deref()
        .or(fw.cuda.as_deref())
        .map(|c| format!(", built for CUDA {c}"))
        .unwrap_or_default();
    format!(
        "{}{cuda}, imported by {}",
        label(fw, rt),
        rt.interpreter
            .as_deref()
            .unwrap_or("the environment's python")
    )
}

fn cannot_see_gpu(
    env: &PythonEnv,
    fw: &Framework,
    rt: &FrameworkRuntime,
    gpus: &[&Gpu],
    manifests: &Manifests,
) -> Finding {
    let known = known(rt, manifests);
    let mut f = FindingBuilder::new(
        &ids::FRAMEWORK_CANNOT_SEE_GPU,
        Severity::Error,
        format!("{} in {} cannot see the GPU", label(fw, rt), env.path),
    )
    .detail(format!(
        "Imported by the environment's own interpreter, {} reports no usable GPU although the \
         driver reports {} GPU(s), so it runs everything on the CPU or fails. {}",
        fw.name,
        gpus.len(),
        known.map_or("Its own messages below are the evidence.", |k| k
            .meaning
            .as_str())
    ))
    .evidence(question(&fw.name, rt))
    .evidence(imported_by(fw, rt));
    for line in quoted(rt) {
        f = f.evidence(line);
    }
    for gpu in gpus {
        f = f.evidence(format!(
            "the driver reports GPU {}: {} ({})",
            gpu.index,
            gpu.name.as_deref().unwrap_or("unnamed"),
            gpu.source
        ));
    }
    f.subject(framework_subject(&env.path, &fw.name))
        .fix_on_host_if(known.is_some_and(|k| k.fix_on_host))
        .fix(known.map_or_else(
            || {
                format!(
                    "Run {} in this environment with its logs on (TF_CPP_MIN_LOG_LEVEL=0 for \
                     TensorFlow and JAX) and read the first CUDA error; `gpu-doctor plan \
                     --framework {}` gives an install that works with this driver.",
                    fw.name, fw.name
                )
            },
            |k| k.fix.clone(),
        ))
        .build()
}

fn import_failed(
    env: &PythonEnv,
    fw: &Framework,
    rt: &FrameworkRuntime,
    manifests: &Manifests,
) -> Finding {
    let error = rt.import_error.as_deref().unwrap_or("unknown error");
    // What the import error means and its fix are errors.toml's (a missing shared library, a
    // symbol of another version, ...), as `explain` would say of the same words.
    let row = known_in(error, manifests);
    let (cause, fix) = match row {
        Some(row) => (row.meaning.clone(), row.fix.clone()),
        None => (
            "The package's files are there but Python cannot import it.".to_string(),
            format!(
                "Reinstall it in this environment (`pip install --force-reinstall {}`).",
                fw.name
            ),
        ),
    };
    let mut f = FindingBuilder::new(
        &ids::FRAMEWORK_IMPORT_FAILED,
        Severity::Error,
        format!("`import {}` fails in {}", fw.name, env.path),
    )
    .detail(format!(
        "{} {} is installed, but importing it with the environment's interpreter raised an \
         error, so no program in this environment can use it. {cause}",
        fw.name,
        fw.version.as_deref().unwrap_or("(version unknown)")
    ))
    .evidence(format!(
        "{}: {error}",
        rt.interpreter.as_deref().unwrap_or("python")
    ));
    for line in quoted(rt) {
        f = f.evidence(line);
    }
    f.subject(framework_subject(&env.path, &fw.name))
        .fix_on_host_if(row.is_some_and(|r| r.fix_on_host))
        .fix(fix)
        .build()
}

/// A probe that hung (warning: a slow disk can do it) or died without answering (error: the
/// framework's native code crashed the interpreter, as it would any program).
fn probe_failed(
    env: &PythonEnv,
    fw: &Framework,
    rt: &FrameworkRuntime,
    severity: Severity,
) -> Finding {
    let hung = rt.status == ProbeStatus::TimedOut;
    let title = if hung {
        format!("Asking {} in {} did not finish", fw.name, env.path)
    } else {
        format!("{} crashed the Python interpreter in {}", fw.name, env.path)
    };
    let mut f = FindingBuilder::new(&ids::FRAMEWORK_PROBE_FAILED, severity, title)
        .detail(if hung {
            "Importing the framework or its first CUDA call hung past the deadline. A hung CUDA \
             call points at the driver or the GPU; a slow import at a slow or network disk."
        } else {
            "The interpreter died while importing the framework or making its first CUDA call, \
             without a Python error: native code crashed, and any program using it will too."
        })
        .evidence(format!(
            "{}: {}",
            rt.interpreter.as_deref().unwrap_or("python"),
            rt.detail.as_deref().unwrap_or("no answer")
        ));
    let skip = rt.stderr.len().saturating_sub(3);
    for line in rt.stderr.iter().skip(skip) {
        f = f.evidence(format!("stderr: {line}"));
    }
    let python = rt.interpreter.as_deref().unwrap_or("python");
    f.subject(framework_subject(&env.path, &fw.name))
        .fix(if hung {
            format!(
                "Time the import by hand (`{python} -X importtime -c 'import {}'`); if a CUDA \
                 call hangs, look for Xid errors (`sudo dmesg | grep -i xid`) and reset the GPU. \
                 On a slow disk, raise `--deep-timeout`.",
                fw.name
            )
        } else {
            format!(
                "Run `{python} -X faulthandler -c 'import {}'` to see where it crashes, then \
                 reinstall the framework with its CUDA wheels.",
                fw.name
            )
        })
        .build()
}

fn smoke_failed(
    env: &PythonEnv,
    fw: &Framework,
    rt: &FrameworkRuntime,
    smoke: &FrameworkSmoke,
    manifests: &Manifests,
    explained: &mut dyn FnMut(bool) -> bool,
) -> Option<Finding> {
    let failed: Vec<_> = smoke.matmuls.iter().filter(|m| !m.passed).collect();
    let first = failed.first()?;
    let raised = failed.iter().any(|m| m.error.is_some());
    // A known cause explains an error (no kernels for the GPU, hidden GPUs), never a wrong
    // number.
    if raised && explained(true) {
        return None;
    }
    // What the error means and its fix are errors.toml's (no kernel image for the GPU, ...).
    let errors = failed
        .iter()
        .filter_map(|m| m.error.as_deref())
        .collect::<Vec<_>>()
        .join("\n");
    let known = if errors.is_empty() {
        None
    } else {
        known_in(&errors, manifests)
    };
    let mut f = FindingBuilder::new(
        &ids::FRAMEWORK_SMOKE_FAILED,
        Severity::Error,
        if raised {
            format!(
                "{} in {} fails to compute on GPU {}",
                label(fw, rt),
                env.path,
                first.device
            )
        } else {
            format!(
                "{} in {} computes a wrong matmul on GPU {}",
                label(fw, rt),
                env.path,
                first.device
            )
        },
    )
    .detail(if let Some(row) = known {
        format!(
            "The framework sees the GPU, but a small fp32 matmul on it raised an error. {}",
            row.meaning
        )
    } else if raised {
        "The framework sees the GPU, but a small fp32 matmul on it raised an error.".to_string()
    } else {
        "A small fp32 matmul on the GPU differs from the same product on the CPU beyond rounding: \
         the GPU, its driver or the framework's libraries compute wrongly."
            .to_string()
    });
    for m in &failed {
        f = f.evidence(match &m.error {
            Some(e) => format!(
                "GPU {} {}x{}x{}: {e}",
                m.device, m.size[0], m.size[1], m.size[2]
            ),
            None => format!(
                "GPU {} {}x{}x{}: max relative error {} (tolerance {:.0e})",
                m.device,
                m.size[0],
                m.size[1],
                m.size[2],
                m.max_rel_error
                    .map_or_else(|| "not finite".to_string(), |e| format!("{e:.2e}")),
                m.tolerance
            ),
        });
    }
    f = f.evidence(imported_by(fw, rt));
    Some(
        f.subject(framework_subject(&env.path, &fw.name))
            .fix_on_host_if(known.is_some_and(|r| r.fix_on_host))
            .fix(if let Some(row) = known {
                row.fix.clone()
            } else if raised {
                "Run the same computation by hand with CUDA_LAUNCH_BLOCKING=1 to see the first \
                 failing call; reinstall the framework with its CUDA wheels."
                    .to_string()
            } else {
                "Run `gpu-doctor smoke` to test the GPU without the framework; if that passes, \
                 reinstall the framework, else check `nvidia-smi -q -d ECC` and the kernel log."
                    .to_string()
            })
            .build(),
    )
}

fn allreduce_failed(env: &PythonEnv, fw: &Framework, smoke: &FrameworkSmoke) -> Option<Finding> {
    let a = smoke.allreduce.as_ref().filter(|a| !a.passed)?;
    let mut f = FindingBuilder::new(
        &ids::NCCL_ALLREDUCE_FAILED,
        Severity::Error,
        format!(
            "An NCCL all-reduce across {} GPUs with torch.distributed fails in {}",
            a.world_size, env.path
        ),
    )
    .detail(
        "Two processes, started the way torchrun starts multi-GPU training (env:// rendezvous on \
         127.0.0.1), could not all-reduce a tensor over NCCL, so data-parallel training will \
         hang or fail at its first step.",
    )
    .evidence(a.error.clone().unwrap_or_else(|| "wrong sum".to_string()));
    for gpu in 0..a.world_size {
        f = f.subject(Subject::Gpu(gpu));
    }
    Some(
        f.subject(framework_subject(&env.path, &fw.name))
            .fix(
                "Rerun with NCCL_DEBUG=INFO to see NCCL's reason; try NCCL_P2P_DISABLE=1 to rule \
                 out peer-to-peer, check `nvidia-smi topo -m`, and on NVSwitch systems that \
                 nvidia-fabricmanager runs.",
            )
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::runtime::FrameworkMatmul;

    const TOO_OLD: &str = "UserWarning: CUDA initialization: The NVIDIA driver on your system is \
        too old (found version 12080). Please update your GPU driver by downloading and installing \
        a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go \
        to: https://pytorch.org to install a PyTorch version that has been compiled with your \
        version of the CUDA driver.";

    fn h200() -> Gpu {
        Gpu {
            index: 0,
            name: Some("NVIDIA H200".into()),
            compute_capability: Some("9.0".into()),
            source: "nvml".into(),
            ..Gpu::default()
        }
    }

    fn blind_torch() -> FrameworkRuntime {
        FrameworkRuntime {
            status: ProbeStatus::Ok,
            interpreter: Some("/venv/bin/python3".into()),
            version: Some("2.11.0+cu130".into()),
            cuda: Some("13.0".into()),
            gpu_available: Some(false),
            device_count: Some(0),
            warnings: vec![
                TOO_OLD.into(),
                "UserWarning: something else entirely".into(),
            ],
            ..FrameworkRuntime::default()
        }
    }

    fn machine(driver: &str, driver_cuda: &str, gpus: Vec<Gpu>, fw: Framework) -> Report {
        let mut r = Report {
            gpus,
            python_envs: vec![PythonEnv {
                path: "/venv".into(),
                kind: "venv".into(),
                interpreter: Some("/venv/bin/python3".into()),
                frameworks: vec![fw],
                ..PythonEnv::default()
            }],
            ..Report::default()
        };
        r.driver.version = Some(driver.into());
        r.driver.cuda_version = Some(driver_cuda.into());
        r.driver.source = Some("nvml".into());
        r
    }

    /// A torch whose files the manifests do not know (so no file rule fires) but whose runtime
    /// says it cannot see the GPU.
    fn unknown_torch(rt: FrameworkRuntime) -> Framework {
        Framework {
            name: "torch".into(),
            version: Some("2.99.0+cu130".into()),
            cuda: Some("13.0".into()),
            variant: Some("cuda".into()),
            source: "/venv/lib/python3.12/site-packages/torch/version.py".into(),
            runtime: Some(rt),
            ..Framework::default()
        }
    }

    fn all(r: &Report) -> Vec<Finding> {
        super::super::diagnose(r)
    }

    fn ids(r: &Report) -> Vec<String> {
        all(r).into_iter().map(|f| f.id).collect()
    }

    #[test]
    fn torch_that_cannot_see_the_gpu_quotes_its_warning() {
        let r = machine(
            "580.159.04",
            "13.0",
            vec![h200()],
            unknown_torch(blind_torch()),
        );
        let found = all(&r);
        assert_eq!(ids(&r), ["framework-cannot-see-gpu"], "{found:#?}");
        let f = &found[0];
        assert_eq!(f.severity, Severity::Error);
        assert_eq!(f.subjects, ["framework:/venv:torch"]);
        assert!(f.evidence[0].contains("torch.cuda.is_available() returned False"));
        assert!(
            f.evidence.iter().any(|e| e.contains("found version 12080")),
            "{:?}",
            f.evidence
        );
        assert!(
            !f.evidence.iter().any(|e| e.contains("something else")),
            "only GPU-related lines are quoted: {:?}",
            f.evidence
        );
        assert!(f.detail.contains("12080 = CUDA 12.8"), "{}", f.detail);
        assert!(
            f.evidence
                .iter()
                .any(|e| e.contains("GPU 0: NVIDIA H200 (nvml)"))
        );
    }

    #[test]
    fn the_frameworks_words_are_read_with_explains_table() {
        // The texts doctor --deep once kept in its own table: each is now a row of errors.toml,
        // and a fatal row outranks a warning before it.
        let manifests = crate::manifest::embedded();
        for (line, row) in [
            (TOO_OLD, "torch-driver-too-old"),
            (
                "CUDA driver version is insufficient for CUDA runtime version",
                "cuda-insufficient-driver",
            ),
            (
                "Cannot dlopen some GPU libraries.",
                "tf-cannot-dlopen-gpu-libraries",
            ),
            (
                "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
                "jax-fell-back-to-cpu",
            ),
            (
                "forward compatibility was attempted on non supported HW",
                "cuda-compat-unsupported",
            ),
            (
                "system has unsupported display driver / cuda driver combination",
                "cuda-driver-mismatch",
            ),
            ("CUDA_ERROR_NO_DEVICE", "cuda-no-device"),
        ] {
            let rt = FrameworkRuntime {
                warnings: vec!["UserWarning: something else entirely".into(), line.into()],
                ..blind_torch()
            };
            assert_eq!(
                known(&rt, manifests).map(|k| k.id.as_str()),
                Some(row),
                "{line}"
            );
        }
    }

    #[test]
    fn without_a_driver_the_driver_rules_speak_not_this_one() {
        // No GPU answers through a driver: the machine's own findings say why.
        let mut r = machine("580.159.04", "13.0", vec![], unknown_torch(blind_torch()));
        assert!(!ids(&r).contains(&"framework-cannot-see-gpu".to_string()));
        // An NVIDIA GPU on the bus with no module loaded: no-driver is the cause.
        r.pci_devices = vec![crate::report::PciDevice {
            vendor: "nvidia".into(),
            device_id: "0x2335".into(),
            ..crate::report::PciDevice::default()
        }];
        r.driver = crate::report::DriverInfo::default();
        assert_eq!(ids(&r), ["no-driver"]);
    }

    #[test]
    fn a_file_based_cause_wins_and_gets_the_frameworks_words() {
        // torch 2.11 cu130 on a CUDA 12.4 driver: the file rule knows why.
        let mut fw = unknown_torch(blind_torch());
        fw.version = Some("2.11.0+cu130".into());
        let r = machine("550.54.15", "12.4", vec![h200()], fw);
        let found = all(&r);
        assert_eq!(ids(&r), ["driver-too-old-for-framework"], "{found:#?}");
        assert!(
            found[0]
                .evidence
                .iter()
                .any(|e| e.contains("found version 12080")),
            "{:?}",
            found[0].evidence
        );
    }

    #[test]
    fn hidden_gpus_explain_a_blind_framework() {
        let mut r = machine(
            "580.159.04",
            "13.0",
            vec![h200()],
            unknown_torch(blind_torch()),
        );
        r.environment = vec![crate::report::EnvVar {
            name: "CUDA_VISIBLE_DEVICES".into(),
            value: String::new(),
        }];
        let ids = ids(&r);
        assert!(
            ids.contains(&"visible-devices-hides-gpus".to_string()),
            "{ids:?}"
        );
        assert!(
            !ids.contains(&"framework-cannot-see-gpu".to_string()),
            "{ids:?}"
        );
    }

    #[test]
    fn a_framework_that_sees_the_gpu_overrides_a_file_based_too_old() {
        // The files say cu130 on a CUDA 12.4 driver, but torch found the GPU (a compat libcuda,
        // say): the framework's answer wins.
        let mut fw = unknown_torch(FrameworkRuntime {
            gpu_available: Some(true),
            device_count: Some(1),
            warnings: Vec::new(),
            ..blind_torch()
        });
        fw.version = Some("2.11.0+cu130".into());
        let r = machine("550.54.15", "12.4", vec![h200()], fw);
        assert!(ids(&r).is_empty(), "{:?}", ids(&r));
    }

    #[test]
    fn the_runtime_arch_list_decides_arch_not_in_build() {
        // The manifests do not know torch 2.99; its own arch list lacks sm_90 and has no PTX.
        let fw = unknown_torch(FrameworkRuntime {
            gpu_available: Some(true),
            device_count: Some(1),
            warnings: Vec::new(),
            arch_list: vec!["sm_80".into(), "sm_86".into()],
            ..blind_torch()
        });
        let r = machine("580.159.04", "13.0", vec![h200()], fw.clone());
        let found = all(&r);
        assert_eq!(ids(&r), ["arch-not-in-build"], "{found:#?}");
        assert!(
            found[0]
                .evidence
                .iter()
                .any(|e| e.contains("torch.cuda.get_arch_list() run by /venv/bin/python3")),
            "{:?}",
            found[0].evidence
        );
        let mut covered = fw;
        if let Some(rt) = covered.runtime.as_mut() {
            rt.arch_list = vec!["sm_80".into(), "sm_90".into(), "compute_90".into()];
        }
        let r = machine("580.159.04", "13.0", vec![h200()], covered);
        assert!(ids(&r).is_empty(), "{:?}", ids(&r));
    }

    #[test]
    fn a_cpu_build_that_sees_no_gpu_is_not_blind_but_cpu_only() {
        let fw = Framework {
            name: "torch".into(),
            version: Some("2.11.0+cpu".into()),
            variant: Some("cpu".into()),
            runtime: Some(FrameworkRuntime {
                cuda: None,
                warnings: Vec::new(),
                ..blind_torch()
            }),
            ..Framework::default()
        };
        let r = machine("580.159.04", "13.0", vec![h200()], fw);
        assert_eq!(ids(&r), ["cpu-only-framework-build"]);
    }

    #[test]
    fn import_errors_hangs_and_crashes() {
        let rt = |status, import_error: Option<&str>, detail: &str| FrameworkRuntime {
            status,
            import_error: import_error.map(str::to_string),
            detail: Some(detail.to_string()),
            interpreter: Some("/venv/bin/python3".into()),
            stderr: vec!["Fatal Python error: Segmentation fault".into()],
            ..FrameworkRuntime::default()
        };
        let import = rt(
            ProbeStatus::Failed,
            Some(
                "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
            ),
            "import failed",
        );
        let found = all(&machine(
            "580.159.04",
            "13.0",
            vec![h200()],
            unknown_torch(import),
        ));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].id, "framework-import-failed");
        assert!(found[0].evidence[0].contains("libcudnn.so.9"));
        // What the import error means, and its fix, are the row `explain` names for it.
        let table = crate::manifest::embedded().errors.table();
        let row = table.by_id("loader-cudnn-missing").unwrap();
        assert!(
            found[0].detail.ends_with(&row.meaning),
            "{}",
            found[0].detail
        );
        assert_eq!(found[0].fix.as_deref(), Some(row.fix.as_str()));
        // Words no row knows: the generic reinstall.
        let odd = rt(
            ProbeStatus::Failed,
            Some("SyntaxError: invalid syntax"),
            "import failed",
        );
        let found = all(&machine(
            "580.159.04",
            "13.0",
            vec![h200()],
            unknown_torch(odd),
        ));
        assert!(
            found[0]
                .fix
                .as_deref()
                .unwrap_or("")
                .contains("--force-reinstall torch")
        );

        let hung = rt(ProbeStatus::TimedOut, None, "did not finish within 60 s");
        let found = all(&machine(
            "580.159.04",
            "13.0",
            vec![h200()],
            unknown_torch(hung),
        ));
        assert_eq!(
            (found[0].id.as_str(), found[0].severity),
            ("framework-probe-failed", Severity::Warning)
        );

        let crashed = rt(
            ProbeStatus::Failed,
            None,
            "the probe gave no answer: killed by a signal",
        );
        let found = all(&machine(
            "580.159.04",
            "13.0",
            vec![h200()],
            unknown_torch(crashed),
        ));
        assert_eq!(
            (found[0].id.as_str(), found[0].severity),
            ("framework-probe-failed", Severity::Error)
        );
        assert!(
            found[0]
                .evidence
                .iter()
                .any(|e| e.contains("Segmentation fault"))
        );

        let skipped = rt(
            ProbeStatus::Skipped,
            None,
            "interpreters are not run under --root",
        );
        assert!(
            ids(&machine(
                "580.159.04",
                "13.0",
                vec![h200()],
                unknown_torch(skipped)
            ))
            .is_empty()
        );
    }

    #[test]
    fn smoke_failures_and_a_failed_allreduce() {
        let matmul = |device, passed, error: Option<&str>| FrameworkMatmul {
            device,
            passed,
            size: [256, 192, 320],
            max_rel_error: passed.then_some(1e-7),
            tolerance: 1e-3,
            error: error.map(str::to_string),
        };
        let fw = unknown_torch(FrameworkRuntime {
            gpu_available: Some(true),
            device_count: Some(2),
            warnings: Vec::new(),
            smoke: Some(FrameworkSmoke {
                matmuls: vec![
                    matmul(0, true, None),
                    matmul(
                        1,
                        false,
                        Some(
                            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
                        ),
                    ),
                ],
                allreduce: Some(crate::report::runtime::AllReduceCheck {
                    passed: false,
                    world_size: 2,
                    elements: 1 << 20,
                    ms: None,
                    error: Some(
                        "rank 0: DistBackendError: NCCL error: unhandled system error".into(),
                    ),
                    transports: Vec::new(),
                }),
                error: None,
            }),
            ..blind_torch()
        });
        let found = all(&machine("580.159.04", "13.0", vec![h200()], fw));
        let ids: Vec<&str> = found.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(
            ids,
            ["framework-smoke-failed", "nccl-allreduce-failed"],
            "{found:#?}"
        );
        assert!(
            found[0].title.contains("fails to compute on GPU 1"),
            "{}",
            found[0].title
        );
        let row = crate::manifest::embedded()
            .errors
            .table()
            .by_id("cuda-no-kernel-image")
            .unwrap();
        assert!(
            found[0].detail.ends_with(&row.meaning),
            "{}",
            found[0].detail
        );
        assert_eq!(found[0].fix.as_deref(), Some(row.fix.as_str()));
        assert!(found[1].subjects.contains(&Subject::Gpu(1)));
    }
}
