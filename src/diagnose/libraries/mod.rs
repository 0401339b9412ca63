//! The CUDA libraries a framework loads: cuDNN present and of the right version, no other copy
//! put ahead of the one it ships, and frameworks in one environment agreeing on their wheels.
//! Findings: `cudnn-missing`, `cudnn-version-mismatch`, `library-path-shadowing`,
//! `framework-wheels-conflict`.
//!
//! Load order matters: pip wheels find their libraries through RUNPATH, which the loader
//! searches *after* `LD_LIBRARY_PATH`. So a cuDNN on `LD_LIBRARY_PATH` wins over the one in
//! `nvidia/cudnn/lib` (the cause of PyTorch's "cuDNN version incompatibility" error).
//!
//! One file per question: [`need`] (which cuDNN a framework was built for), [`cudnn`] (the
//! copy it loads against that), [`shadowing`] (`LD_LIBRARY_PATH` ahead of a wheel),
//! [`wheels`] (two frameworks pinning one wheel differently), [`torch_upgrade`] (a published
//! torch that resolves it) and [`pins`] (reading the wheel pins all of them compare).

mod cudnn;
mod need;
mod pins;
mod shadowing;
#[cfg(test)]
mod tests;
mod torch_upgrade;
mod wheels;

use crate::report::GpuSource;
use std::path::Path;

use crate::manifest::Manifests;
use crate::report::{Finding, PythonEnv, Report};

pub(super) use pins::spec_allows;
use wheels::conflicts;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    let has_gpu = report.nvidia_gpus().any(|g| g.source != GpuSource::Pci);
    for env in &report.python_envs {
        // A framework whose cuDNN wheel another framework here pins differently has that
        // conflict as its root cause; its own cuDNN finding would only send the user in circles.
        let contested: Vec<&str> = conflicts(env)
            .iter()
            .filter(|c| c.wheel.starts_with("nvidia-cudnn"))
            .flat_map(|c| {
                c.pins
                    .iter()
                    .map(|(f, _)| f.name.as_str())
                    .collect::<Vec<_>>()
            })
            .collect();
        if has_gpu {
            for fw in env
                .frameworks
                .iter()
                .filter(|f| f.cuda.is_some() && !contested.contains(&f.name.as_str()))
            {
                out.extend(cudnn::cudnn(report, manifests, env, fw));
            }
        }
        // With the loader's resolution at hand, `loading` says which copy shadows which.
        if !crate::diagnose::loading::resolved(report, env) {
            out.extend(shadowing::shadowing(report, env));
        }
        out.extend(wheels::wheels_conflict(report, manifests, env));
    }
    out
}

fn in_env(env: &PythonEnv, path: &str) -> bool {
    env.site_packages
        .iter()
        .any(|s| Path::new(path).starts_with(s))
}
