//! Compatibility tables loaded from `manifests/*.toml`, embedded in the binary.
//!
//! The doctor's knowledge (which driver a CUDA release needs, what a torch wheel bundles, which
//! GPU has which compute capability, ...) is data, not code: it changes with every NVIDIA and
//! framework release, and each fact must say where it came from. So every row carries `source`
//! and `checked`, and every file a `[meta]` table whose `gaps` list what the sources did not
//! say. Unknown values are absent (`None` / empty), never zero.
//!
//! Two ways in:
//! * [`embedded()`]: the set compiled into the binary, parsed once on first use.
//! * [`from_sources()`]: a set given as text (a downloaded update, `--manifests DIR`); it never
//!   panics and its errors name the file and the line.
//!
//! Parsing only checks shape. [`validate()`] checks content (sources present, versions
//! well-formed and sorted, no duplicate keys) and returns every problem at once, so an updater
//! can refuse a bad set and show all of its faults.
//!
//! Depends on: serde/toml, [`crate::version`]. Pure after load: no I/O here.

mod amd_gpu_ids;
mod arch_support;
mod cuda;
mod cudnn;
mod deferred;
mod errors;
mod extension_arch;
mod frameworks;
mod gpu_ids;
mod gpus;
mod in_use;
mod install;
mod matching;
mod memo;
mod pypi;
mod repos;
mod rocm;
mod validate;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use amd_gpu_ids::{AmdDeviceRow, AmdGpuIdTable, AmdGpuIds, AmdIdentity, AmdTarget};
pub use arch_support::{ArchSupport, Targeting};
pub use cuda::{
    ComputeCapabilityInfo, CudaMajor, CudaRelease, CudaTable, DriverBranch, DriverLifecycle,
    DriverRequirement, ForwardCompatHost, HostCompiler, L4tDriver, PtxJit,
};
pub use cudnn::{CudnnBuild, CudnnMajor, CudnnRelease, CudnnTable, SupportEnd, SupportStart};
pub use errors::{ErrorTable, Errors, KnownError, captured_number, pattern};
pub use extension_arch::{ExtensionArch, ExtensionArchTable};
pub use frameworks::{
    CupyPackage, CupyRelease, FrameworkTable, JaxExtra, JaxPluginCheck, JaxRequirement, NcclArch,
    PipWheel, TensorflowAndCuda, TensorflowConfig, TensorflowPip, TorchBuild, TorchGpuFloor,
    TorchIndex, TorchMatch, TorchRelease, TritonPtxas,
};
pub use gpu_ids::{Chip, DeviceRow, GpuIdTable, GpuIds, Identity, Match};
pub use gpus::{Gpu, GpuTable, Segment, Tflops, device_id, subsystem_id};
pub use in_use::{InUse, SetInUse};
pub use install::{
    AptKeyring, AptPackage, AptRepo, CdiEngine, Conda, CondaChannel, DriverFlavor, InstallTable,
    LocalRepo, Paths, RpmDriver, UbuntuTransition, UnfilledPlaceholder, fill,
};
pub use pypi::{PYTHONS, PypiRelease, PypiTable, python_satisfies};
pub use repos::{Carried, Repo, RepoPackage, RepoTable};
pub use rocm::{
    AmdgpuInstall, OverrideGroup, RocmInstallFacts, RocmTable, TargetCarried, TorchTargets,
    TorchWheel,
};
pub use validate::{ManifestProblem, ProblemKind, validate};

/// The manifest format this build reads. A file with another `schema` is refused with
/// [`ManifestError::UnsupportedSchema`] rather than half-read.
pub const SCHEMA: u32 = 1;

/// The `[meta]` table every manifest file starts with.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// Format version; see [`SCHEMA`].
    pub schema: u32,
    pub title: String,
    /// Date the file's facts were last brought up to date (`YYYY-MM-DD`).
    pub updated: String,
    /// Facts the sources did not give, so nobody mistakes their absence for "not applicable".
    #[serde(default)]
    pub gaps: Vec<String>,
}

/// Every compatibility table the doctor uses, one per manifest file.
#[derive(Debug, Clone, Serialize)]
pub struct Manifests {
    pub cuda: CudaTable,
    pub gpus: GpuTable,
    pub frameworks: FrameworkTable,
    pub cudnn: CudnnTable,
    pub install: InstallTable,
    pub errors: Errors,
    pub gpu_ids: GpuIds,
    /// AMD GPUs by PCI id: name, gfx target, family (`amd-gpu-ids.toml`).
    pub amd_gpu_ids: AmdGpuIds,
    /// ROCm releases, torch ROCm wheels and gfx targets (`rocm.toml`).
    pub rocm: RocmTable,
    /// What each repository a plan installs from carries (`repos.toml`).
    pub repos: RepoTable,
    /// What PyPI serves of the packages plans pip-install (`pypi.toml`, generated).
    pub pypi: PypiTable,
    /// The oldest GPU each release of a package with its own CUDA kernels runs on
    /// (`extension-arch.toml`, generated).
    pub extension_arch: ExtensionArchTable,
}

/// Why a manifest set could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("`{file}` is not a manifest file (expected one of: {expected})", expected = FILE_NAMES.join(", "))]
    UnknownFile { file: String },
    #[error("manifest file `{file}` is given more than once")]
    DuplicateFile { file: &'static str },
    #[error("manifest file `{file}` is missing from the set")]
    MissingFile { file: &'static str },
    #[error("{file}: schema {found} is not supported (this build reads schema {SCHEMA})")]
    UnsupportedSchema { file: &'static str, found: u32 },
    /// The text is not valid TOML or does not fit the table's shape. `message` is the TOML
    /// parser's report: line, column, the offending line and what is wrong with it.
    #[error("{file}: {message}")]
    Parse { file: &'static str, message: String },
}

/// The file names of a manifest set, in the order [`Manifests`] holds them.
pub const FILE_NAMES: [&str; 12] = [
    CudaTable::FILE,
    GpuTable::FILE,
    FrameworkTable::FILE,
    CudnnTable::FILE,
    InstallTable::FILE,
    ErrorTable::FILE,
    GpuIdTable::FILE,
    AmdGpuIdTable::FILE,
    RocmTable::FILE,
    RepoTable::FILE,
    PypiTable::FILE,
    ExtensionArchTable::FILE,
];

/// The set compiled into the binary.
const EMBEDDED: [(&str, &str); 12] = [
    (CudaTable::FILE, include_str!("../../manifests/cuda.toml")),
    (GpuTable::FILE, include_str!("../../manifests/gpus.toml")),
    (
        FrameworkTable::FILE,
        include_str!("../../manifests/frameworks.toml"),
    ),
    (CudnnTable::FILE, include_str!("../../manifests/cudnn.toml")),
    (
        InstallTable::FILE,
        include_str!("../../manifests/install.toml"),
    ),
    (
        ErrorTable::FILE,
        include_str!("../../manifests/errors.toml"),
    ),
    (
        GpuIdTable::FILE,
        include_str!("../../manifests/gpu-ids.toml"),
    ),
    (
        AmdGpuIdTable::FILE,
        include_str!("../../manifests/amd-gpu-ids.toml"),
    ),
    (RocmTable::FILE, include_str!("../../manifests/rocm.toml")),
    (RepoTable::FILE, include_str!("../../manifests/repos.toml")),
    (PypiTable::FILE, include_str!("../../manifests/pypi.toml")),
    (
        ExtensionArchTable::FILE,
        include_str!("../../manifests/extension-arch.toml"),
    ),
];

/// The manifest set built into the binary, parsed on first use and shared afterwards.
///
/// # Panics
///
/// If the embedded files do not parse. They are fixed at compile time and this module's tests
/// parse and validate exactly these bytes, so a tested build cannot reach the panic; failing
/// loudly there is better than diagnosing against empty tables. This is the module's only panic.
#[expect(
    clippy::panic,
    reason = "fixed at compile time and tested; see # Panics"
)]
#[must_use]
pub fn embedded() -> &'static Manifests {
    static PARSED: OnceLock<Manifests> = OnceLock::new();
    PARSED.get_or_init(|| {
        // The large or rarely needed tables are parsed on first use: the GPU id tables when a
        // GPU is first looked up, the error table when `explain` first asks.
        let lazy = [GpuIdTable::FILE, AmdGpuIdTable::FILE, ErrorTable::FILE];
        let (held, rest): (Vec<_>, Vec<_>) =
            EMBEDDED.iter().partition(|(name, _)| lazy.contains(name));
        let text = |file: &str| {
            held.iter()
                .find(|(name, _)| *name == file)
                .map(|(_, text)| *text)
                .unwrap_or_default()
        };
        let unparsed = |file: &'static str| ManifestError::Parse {
            file,
            message: "its [meta] table does not parse".to_string(),
        };
        let loaded = from_texts(&rest, |_| {
            Ok(Deferred {
                errors: Errors::lazy(text(ErrorTable::FILE)).ok_or(unparsed(ErrorTable::FILE))?,
                gpu_ids: GpuIds::lazy(text(GpuIdTable::FILE)).ok_or(unparsed(GpuIdTable::FILE))?,
                amd_gpu_ids: AmdGpuIds::lazy(text(AmdGpuIdTable::FILE))
                    .ok_or(unparsed(AmdGpuIdTable::FILE))?,
            })
        });
        match loaded {
            Ok(manifests) => manifests,
            Err(error) => panic!("the manifests built into gpu-doctor do not load: {error}"),
        }
    })
}

/// Parses a manifest set from `(file name, TOML text)` pairs.
///
/// File names are matched on their last path component, so `manifests/cuda.toml` works too.
/// All twelve files of [`FILE_NAMES`] are required: a partial set would silently drop facts.
/// Content is not checked here; run [`validate()`] on the result before trusting a set that did
/// not come with the binary.
///
/// # Errors
///
/// [`ManifestError`] naming the file (and, for TOML errors, the line) of the first problem.
pub fn from_sources(files: &[(&str, &str)]) -> Result<Manifests, ManifestError> {
    from_texts(files, |texts| {
        Ok(Deferred {
            errors: parse_deferred(texts)?,
            gpu_ids: parse_deferred(texts)?,
            amd_gpu_ids: parse_deferred(texts)?,
        })
    })
}

/// The tables the built-in set parses on first use (see [`embedded`]).
struct Deferred {
    errors: Errors,
    gpu_ids: GpuIds,
    amd_gpu_ids: AmdGpuIds,
}

/// [`from_sources`] with the deferred tables made by `deferred` (at once, or lazily for the
/// built-in set, whose deferred files are left out of `files`).
fn from_texts(
    files: &[(&str, &str)],
    deferred: impl FnOnce(&BTreeMap<&'static str, &str>) -> Result<Deferred, ManifestError>,
) -> Result<Manifests, ManifestError> {
    let mut texts: BTreeMap<&'static str, &str> = BTreeMap::new();
    for &(name, text) in files {
        let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
        let Some(&file) = FILE_NAMES.iter().find(|known| **known == base) else {
            return Err(ManifestError::UnknownFile {
                file: name.to_string(),
            });
        };
        if texts.insert(file, text).is_some() {
            return Err(ManifestError::DuplicateFile { file });
        }
    }
    let Deferred {
        errors,
        gpu_ids,
        amd_gpu_ids,
    } = deferred(&texts)?;
    Ok(Manifests {
        cuda: parse_table(&texts)?,
        gpus: parse_table(&texts)?,
        frameworks: parse_table(&texts)?,
        cudnn: parse_table(&texts)?,
        install: parse_table(&texts)?,
        errors,
        gpu_ids,
        amd_gpu_ids,
        rocm: parse_table(&texts)?,
        repos: parse_table(&texts)?,
        pypi: parse_table(&texts)?,
        extension_arch: parse_table(&texts)?,
    })
}

/// A table that is one manifest file.
trait ManifestFile: DeserializeOwned {
    /// The file's name in a manifest set.
    const FILE: &'static str;
    fn meta(&self) -> &Meta;
}

/// [`parse_table`] for a table the built-in set parses on first use: given parsed.
fn parse_deferred<T: ManifestFile + deferred::Rows>(
    texts: &BTreeMap<&'static str, &str>,
) -> Result<deferred::Deferred<T>, ManifestError> {
    let table: T = parse_table(texts)?;
    Ok(deferred::Deferred::parsed(table.meta().clone(), table))
}

/// Parses the table's file from the set and refuses schemas this build does not know.
fn parse_table<T: ManifestFile>(texts: &BTreeMap<&'static str, &str>) -> Result<T, ManifestError> {
    let text = texts
        .get(T::FILE)
        .ok_or(ManifestError::MissingFile { file: T::FILE })?;
    match toml::from_str::<T>(text) {
        Ok(table) if table.meta().schema == SCHEMA => Ok(table),
        Ok(table) => Err(ManifestError::UnsupportedSchema {
            file: T::FILE,
            found: table.meta().schema,
        }),
        Err(error) => Err(
            schema_error::<T>(text).unwrap_or_else(|| ManifestError::Parse {
                file: T::FILE,
                message: error.to_string().trim_end().to_string(),
            }),
        ),
    }
}

/// After a failed parse: reports a newer or older schema instead of the field errors it causes,
/// which would send the reader hunting for typos in a file that is simply from another version.
fn schema_error<T: ManifestFile>(text: &str) -> Option<ManifestError> {
    #[derive(Deserialize)]
    struct Header {
        meta: SchemaOnly,
    }
    #[derive(Deserialize)]
    struct SchemaOnly {
        schema: u32,
    }
    let found = toml::from_str::<Header>(text).ok()?.meta.schema;
    (found != SCHEMA).then_some(ManifestError::UnsupportedSchema {
        file: T::FILE,
        found,
    })
}

/// Serde default for `verified`: a row is a sourced fact unless it says otherwise.
fn verified_default() -> bool {
    true
}
