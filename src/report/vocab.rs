//! The report's closed vocabularies (environment kinds, driver library kinds, library owners,
//! CUDA library families) as enums, so that a misspelt value is a compile error, not a rule that never fires.
//!
//! Each is written in JSON as the same string as before, and reads back any string: a value
//! this build does not know (a newer gpu-doctor's report, read by `report merge`) is kept as
//! `Other` and written out unchanged.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One vocabulary: the enum, its strings, serde as those strings, `Display`, and (for the
/// schema test) the JSON schema of a string.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this build does not know, kept as written.
            Other(String),
        }

        impl $name {
            /// The value as the report writes it.
            #[must_use]
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )+
                    Self::Other(text) => text,
                }
            }

            /// The variant a report's string names; any other string is kept as `Other`.
            #[must_use]
            pub fn from_text(text: &str) -> Self {
                match text {
                    $( $text => Self::$variant, )+
                    other => Self::Other(other.to_string()),
                }
            }
        }

        impl Default for $name {
            /// An empty `Other`, what a report without the field had.
            fn default() -> Self {
                Self::Other(String::new())
            }
        }

        /// Ordered as their strings, as the report's string fields were.
        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                Self::from_text(text)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
                Ok(Self::from_text(&text))
            }
        }

        #[cfg(test)]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                "String".into()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                String::json_schema(generator)
            }

            fn inline_schema() -> bool {
                true
            }
        }
    };
}

vocabulary! {
    /// How a GPU's compute capability (or, for AMD, its gfx target) is known.
    IdentifiedBy {
        /// The driver said so.
        Driver = "driver",
        /// The GPU id table by PCI id, or the GPU tables by name.
        Table = "table",
        /// Inferred from the PCI id's 128-id block: the id is newer than the table.
        IdBlock = "id-block",
        /// `GPU_DOCTOR_GPU_CC`.
        Override = "override",
        /// AMD: the KFD topology node's `gfx_target_version`.
        Kfd = "kfd",
    }
}

vocabulary! {
    /// A GPU's compute mode, in nvidia-smi's words.
    ComputeMode {
        /// Any number of processes.
        Default = "Default",
        /// One process at a time: a second gets "busy or unavailable".
        ExclusiveProcess = "Exclusive_Process",
        /// One thread at a time (deprecated by NVIDIA, still reported by old drivers).
        ExclusiveThread = "Exclusive_Thread",
        /// No process may use the GPU.
        Prohibited = "Prohibited",
    }
}

vocabulary! {
    /// Whether a GPU's MIG mode is on, in nvidia-smi's words.
    MigMode {
        Enabled = "Enabled",
        Disabled = "Disabled",
    }
}

vocabulary! {
    /// Where a GPU's facts came from.
    GpuSource {
        /// NVIDIA's management library, loaded in a child process.
        Nvml = "nvml",
        /// `nvidia-smi`'s output.
        NvidiaSmi = "nvidia-smi",
        /// The PCI bus only: no driver answered.
        Pci = "pci",
        /// `GPU_DOCTOR_GPU*` overrides, for a machine without the GPU.
        Override = "override",
        /// AMD: a KFD topology node (the kernel's compute driver sees it).
        Kfd = "kfd",
    }
}

vocabulary! {
    /// What kind of Python environment a prefix is.
    EnvKind {
        /// A virtual environment (`pyvenv.cfg`: venv, virtualenv, uv).
        Venv = "venv",
        /// A conda environment (`conda-meta/`).
        Conda = "conda",
        /// The system's own interpreter.
        System = "system",
    }
}

vocabulary! {
    /// What a user-space driver library file is.
    DriverLibraryKind {
        /// The driver's own library.
        Driver = "driver",
        /// A link-time stub (`.../stubs/`), which cannot run anything.
        Stub = "stub",
        /// The forward-compatibility package's copy (`cuda-compat`).
        Compat = "compat",
        /// The driver's own library in a folder the loader does not search: a driver mount
        /// such as GKE's `/usr/local/nvidia/lib64` in a container whose image sets no
        /// `LD_LIBRARY_PATH` for it. Listed after every loader folder; programs do not find it.
        OffPath = "off-path",
    }
}

vocabulary! {
    /// Who installed a library file, whatever the loader does with it.
    OwnerKind {
        /// A pip wheel (its `RECORD` or the wheel layout says so).
        Pip = "pip",
        /// A conda package (`conda-meta`).
        Conda = "conda",
        /// A CUDA toolkit's folder.
        Toolkit = "toolkit",
        /// Inside a framework's own folder.
        Bundled = "bundled",
        /// A Debian package.
        Dpkg = "dpkg",
        /// The driver.
        Driver = "driver",
        /// None of these says it is theirs.
        System = "system",
    }
}

vocabulary! {
    /// The CUDA library family a soname belongs to (`libcublasLt.so.13` is cuBLAS); how people
    /// write each is `parse::libfamily::display`.
    LibraryFamily {
        Cudart = "cudart",
        Cublas = "cublas",
        Cudnn = "cudnn",
        Nccl = "nccl",
        Nvjitlink = "nvjitlink",
        Nvrtc = "nvrtc",
        Cusparse = "cusparse",
        Cusparselt = "cusparselt",
        Cufft = "cufft",
        Cusolver = "cusolver",
        Curand = "curand",
        Cupti = "cupti",
        Cufile = "cufile",
        Nvshmem = "nvshmem",
        Tensorrt = "tensorrt",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_read_as_variants_and_unknown_ones_are_kept() {
        assert_eq!(EnvKind::from_text("conda"), EnvKind::Conda);
        let json = serde_json::to_string(&EnvKind::Venv).unwrap();
        assert_eq!(json, "\"venv\"");
        let newer: EnvKind = serde_json::from_str("\"pixi\"").unwrap();
        assert_eq!(newer, EnvKind::Other("pixi".to_string()));
        assert_eq!(serde_json::to_string(&newer).unwrap(), "\"pixi\"");
        assert_eq!(OwnerKind::from_text("bundled").as_str(), "bundled");
        assert_eq!(DriverLibraryKind::Compat.to_string(), "compat");
    }

    #[test]
    fn values_sort_as_their_strings() {
        // Declared cudart, cublas, ..., cufft, cusolver, curand: sorted as strings instead.
        let mut families = [
            LibraryFamily::Curand,
            LibraryFamily::Cusolver,
            LibraryFamily::Other("cuda".to_string()),
            LibraryFamily::Cudart,
            LibraryFamily::Cufft,
        ];
        families.sort();
        let names: Vec<&str> = families.iter().map(LibraryFamily::as_str).collect();
        assert_eq!(names, ["cuda", "cudart", "cufft", "curand", "cusolver"]);
    }
}
