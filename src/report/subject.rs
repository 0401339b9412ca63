//! What a finding is about ([`super::Finding::subjects`]), typed: the diagnosis builds a
//! [`Subject::Gpu`] from a GPU's index and `check`, `smoke`, the Prometheus face and the TUI
//! match on it, where they used to write `"gpu:N"` with `format!` and take it apart again.
//!
//! The JSON keeps the strings it always had (`gpu:0`, `framework:/opt/venv:torch`, `driver`),
//! and reads back any string: one this build does not know is kept as [`Subject::Other`] and
//! written out unchanged, so `report merge` of a newer report loses nothing.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One part of the machine a finding names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A GPU, by its index in the report's `gpus` (`gpu:0`).
    Gpu(u32),
    /// A framework build in one Python environment (`framework:/opt/venv:torch`); the name is
    /// what follows the last `:`, so an environment path may hold one.
    Framework { env: String, name: String },
    /// A CUDA toolkit, by its folder (`toolkit:/usr/local/cuda-12.4`).
    Toolkit(String),
    /// A library file (`library:/usr/lib/x86_64-linux-gnu/libcuda.so.1`).
    Library(String),
    /// An environment variable (`env:CUDA_VISIBLE_DEVICES`).
    EnvVar(String),
    /// A device node (`device:/dev/kfd`).
    Device(String),
    /// A system service (`service:nvidia-fabricmanager`).
    Service(String),
    /// The host, of one kind (`host:wsl`).
    Host(String),
    /// The kernel driver: NVIDIA's (`driver`) or one named (`driver:amdgpu`).
    Driver(Option<String>),
    /// The container, or one container runtime (`container`, `container:docker`).
    Container(Option<String>),
    /// The manifest set the diagnosis used (`manifests`).
    Manifests,
    /// A subject this build does not know, kept as written.
    Other(String),
}

impl Subject {
    /// The framework `name` in the environment at `env`.
    #[must_use]
    pub fn framework(env: &str, name: &str) -> Subject {
        Subject::Framework {
            env: env.to_string(),
            name: name.to_string(),
        }
    }

    /// The subject a report's string names; a string no variant writes back the same is kept
    /// as [`Subject::Other`], so `from_text(s).to_string() == s` for every `s`.
    #[must_use]
    pub fn from_text(text: &str) -> Subject {
        Subject::known(text).unwrap_or_else(|| Subject::Other(text.to_string()))
    }

    fn known(text: &str) -> Option<Subject> {
        let (kind, value) = match text.split_once(':') {
            Some((kind, value)) => (kind, Some(value)),
            None => (text, None),
        };
        let owned = |v: &str| v.to_string();
        Some(match (kind, value) {
            ("gpu", Some(n)) => {
                let index: u32 = n.parse().ok()?;
                // "gpu:01" or "gpu:+1" would come back as "gpu:1".
                if index.to_string() != n {
                    return None;
                }
                Subject::Gpu(index)
            }
            ("framework", Some(rest)) => {
                let (env, name) = rest.rsplit_once(':')?;
                Subject::framework(env, name)
            }
            ("toolkit", Some(v)) => Subject::Toolkit(owned(v)),
            ("library", Some(v)) => Subject::Library(owned(v)),
            ("env", Some(v)) => Subject::EnvVar(owned(v)),
            ("device", Some(v)) => Subject::Device(owned(v)),
            ("service", Some(v)) => Subject::Service(owned(v)),
            ("host", Some(v)) => Subject::Host(owned(v)),
            ("driver", v) => Subject::Driver(v.map(owned)),
            ("container", v) => Subject::Container(v.map(owned)),
            ("manifests", None) => Subject::Manifests,
            _ => return None,
        })
    }

    /// The GPU index, when the subject is a GPU.
    #[must_use]
    pub fn gpu(&self) -> Option<u32> {
        match self {
            Subject::Gpu(index) => Some(*index),
            _ => None,
        }
    }

    /// The environment and name, when the subject is a framework.
    #[must_use]
    pub fn as_framework(&self) -> Option<(&str, &str)> {
        match self {
            Subject::Framework { env, name } => Some((env, name)),
            _ => None,
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let with = |f: &mut fmt::Formatter<'_>, kind: &str, value: &Option<String>| match value {
            Some(v) => write!(f, "{kind}:{v}"),
            None => f.write_str(kind),
        };
        match self {
            Subject::Gpu(index) => write!(f, "gpu:{index}"),
            Subject::Framework { env, name } => write!(f, "framework:{env}:{name}"),
            Subject::Toolkit(v) => write!(f, "toolkit:{v}"),
            Subject::Library(v) => write!(f, "library:{v}"),
            Subject::EnvVar(v) => write!(f, "env:{v}"),
            Subject::Device(v) => write!(f, "device:{v}"),
            Subject::Service(v) => write!(f, "service:{v}"),
            Subject::Host(v) => write!(f, "host:{v}"),
            Subject::Driver(v) => with(f, "driver", v),
            Subject::Container(v) => with(f, "container", v),
            Subject::Manifests => f.write_str("manifests"),
            Subject::Other(v) => f.write_str(v),
        }
    }
}

/// Code written before subjects were typed (`.subject(format!(..))`) still builds the typed
/// value.
impl From<&str> for Subject {
    fn from(text: &str) -> Subject {
        Subject::from_text(text)
    }
}

impl From<String> for Subject {
    fn from(text: String) -> Subject {
        Subject::from_text(&text)
    }
}

/// Compared as the report writes it, so a test can say `assert_eq!(f.subjects, ["gpu:0"])`.
impl PartialEq<str> for Subject {
    fn eq(&self, other: &str) -> bool {
        *self == Subject::from_text(other)
    }
}

impl PartialEq<&str> for Subject {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl Serialize for Subject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Subject::from_text(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::Subject;

    #[test]
    fn each_subject_writes_the_string_it_always_had() {
        let cases = [
            (Subject::Gpu(3), "gpu:3"),
            (
                Subject::framework("/opt/venv", "torch"),
                "framework:/opt/venv:torch",
            ),
            (
                Subject::Toolkit("/usr/local/cuda-12.4".into()),
                "toolkit:/usr/local/cuda-12.4",
            ),
            (
                Subject::EnvVar("CUDA_VISIBLE_DEVICES".into()),
                "env:CUDA_VISIBLE_DEVICES",
            ),
            (Subject::Driver(None), "driver"),
            (Subject::Driver(Some("amdgpu".into())), "driver:amdgpu"),
            (Subject::Container(None), "container"),
            (Subject::Manifests, "manifests"),
        ];
        for (subject, text) in cases {
            assert_eq!(subject.to_string(), text);
            assert_eq!(Subject::from_text(text), subject, "{text}");
            assert_eq!(
                serde_json::to_string(&subject).unwrap(),
                format!("\"{text}\"")
            );
        }
    }

    #[test]
    fn any_string_reads_back_and_writes_out_unchanged() {
        for text in [
            "gpu:01",
            "gpu:+1",
            "gpu:",
            "gpu:-1",
            "gpu:99999999999",
            "gpu",
            "framework:/venv",
            "framework:/a:b:torch",
            "manifests:x",
            "",
            ":",
            "nic:mlx5_0",
            "driver:",
            "env:",
        ] {
            let subject = Subject::from_text(text);
            assert_eq!(subject.to_string(), text);
            let back: Subject =
                serde_json::from_str(&serde_json::to_string(&text).unwrap()).unwrap();
            assert_eq!(back, subject);
        }
        assert_eq!(
            Subject::from_text("gpu:01"),
            Subject::Other("gpu:01".into())
        );
        assert_eq!(
            Subject::from_text("framework:/a:b:torch").as_framework(),
            Some(("/a:b", "torch"))
        );
    }
}
