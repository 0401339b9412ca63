//! Assertions and small machines the rule families' unit tests share.

use crate::report::{Component, Finding, Framework, Gpu, GpuVendor, PythonEnv};

/// The IDs of `found`, in order.
pub(crate) fn ids(found: &[Finding]) -> Vec<&str> {
    found.iter().map(|f| f.id.as_str()).collect()
}

/// The one finding with `id`; fails the test when there are none or several.
pub(crate) fn one<'a>(found: &'a [Finding], id: &str) -> &'a Finding {
    let hits: Vec<&Finding> = found.iter().filter(|f| f.id == id).collect();
    assert_eq!(hits.len(), 1, "{id} in {found:#?}");
    hits[0]
}

/// Whether any evidence line of `f` contains `text`.
pub(crate) fn has_evidence(f: &Finding, text: &str) -> bool {
    f.evidence.iter().any(|e| e.contains(text))
}

/// One environment with a CUDA 12 JAX of these versions: jaxlib and the plugins as components.
pub(crate) fn jax_env(
    python: &str,
    jax: &str,
    jaxlib: &str,
    plugins: &[(&str, &str)],
) -> PythonEnv {
    let mut components = vec![Component {
        name: "jaxlib".into(),
        version: jaxlib.into(),
    }];
    components.extend(plugins.iter().map(|(n, v)| Component {
        name: (*n).into(),
        version: (*v).into(),
    }));
    PythonEnv {
        path: "/venv".into(),
        python_version: Some(python.into()),
        frameworks: vec![Framework {
            name: "jax".into(),
            version: Some(jax.into()),
            cuda: Some("12".into()),
            variant: Some("cuda".into()),
            components,
            ..Framework::default()
        }],
        ..PythonEnv::default()
    }
}

/// GPU 0, an AMD GPU of the gfx target `gfx`, for the AMD rules' unit machines.
pub(crate) fn amd_gpu(gfx: &str) -> Gpu {
    Gpu {
        index: 0,
        vendor: GpuVendor::Amd,
        gfx_target: Some(gfx.to_string()),
        ..Gpu::default()
    }
}
