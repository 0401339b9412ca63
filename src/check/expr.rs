//! Requirement expressions for `gpu-doctor check --require EXPR`: `driver>=535`, `cuda>=12.1`,
//! `gpu.memory>=40GiB`, `torch.cuda`, ... Parsing is strict: a typo is a usage error that
//! points at the bad part, never a requirement silently treated as met.

use std::fmt;

pub(crate) use crate::framework::FrameworkName;
use crate::version::{Version, package_version};

/// What a requirement is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// The driver's version (`550.54.15`).
    Driver,
    /// The highest CUDA the driver supports (nvidia-smi's "CUDA Version").
    Cuda,
    /// The newest installed CUDA toolkit.
    Toolkit,
    /// The newest cuDNN found.
    Cudnn,
    /// How many GPUs the driver reports.
    GpuCount,
    /// Memory of every GPU.
    GpuMemory,
    /// Compute capability of every GPU.
    GpuCc,
    /// Who made every GPU (`gpu.vendor==amd`).
    GpuVendor,
    /// The gfx target of every AMD GPU (`gpu.gfx==gfx1100`).
    GpuGfx,
    /// The ROCm `/opt/rocm` points at (`rocm>=6.2`).
    Rocm,
    /// A ROCm build that can use this machine's AMD GPU (`torch.rocm`).
    FrameworkRocm(FrameworkName),
    /// A framework's version (`torch>=2.4`) or mere presence (`torch`).
    Framework(FrameworkName),
    /// A framework build that can use this machine's GPU (`torch.cuda`, `tensorflow.gpu`).
    FrameworkGpu(FrameworkName),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
    Ne,
}

impl Op {
    #[must_use]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }

    /// Whether `ordering` (actual compared with wanted) satisfies the operator.
    #[must_use]
    pub(crate) fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            Op::Ge => ordering != Less,
            Op::Gt => ordering == Greater,
            Op::Le => ordering != Greater,
            Op::Lt => ordering == Less,
            Op::Eq => ordering == Equal,
            Op::Ne => ordering != Equal,
        }
    }
}

/// The right-hand side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Version(Version),
    /// A Python package version, compared as pip compares it (PEP 440: `2.4.0.dev1 <
    /// 2.4.0rc1 < 2.4.0 < 2.4.0.post1`; `==2.4.0` matches `2.4.0+cu121`).
    Package(pep440_rs::Version),
    Count(u64),
    MiB(u64),
    /// A word compared for equality only (`amd`, `gfx1100`), lower-cased.
    Word(String),
}

/// One parsed requirement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Requirement {
    /// The text as given, for messages and reports.
    pub text: String,
    pub subject: Subject,
    pub comparison: Option<(Op, Value)>,
}

/// Why an expression was refused; `Display` names the part that is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExprError {
    pub expr: String,
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid requirement '{}': {}", self.expr, self.message)
    }
}

impl std::error::Error for ExprError {}

/// The subjects a user can name, for the error message.
const KNOWN: &str = "driver, cuda, toolkit, cudnn, rocm, gpu.count, gpu.memory, gpu.cc, gpu.vendor, gpu.gfx, torch, tensorflow, jax, cupy, torch.cuda, tensorflow.gpu, jax.gpu, cupy.gpu, torch.rocm, tensorflow.rocm, jax.rocm, cupy.rocm";

/// Parses one `--require` expression: the subject, then (when it takes one) the comparison.
///
/// # Errors
/// An [`ExprError`] that quotes the expression and names the bad part.
pub(crate) fn parse(text: &str) -> Result<Requirement, ExprError> {
    let expr = text.trim();
    let err = |message: String| ExprError {
        expr: expr.to_string(),
        message,
    };
    let op_at = expr.find(['>', '<', '=', '!']);
    let (name, rest) = match op_at {
        Some(i) => (expr[..i].trim(), Some(&expr[i..])),
        None => (expr, None),
    };
    if name.is_empty() {
        return Err(err(
            "nothing before the operator; start with a subject such as driver or torch".into(),
        ));
    }
    let subject = subject(name).map_err(err)?;
    let Some(rest) = rest else {
        return match subject {
            Subject::Framework(_) | Subject::FrameworkGpu(_) | Subject::FrameworkRocm(_) => {
                Ok(Requirement {
                    text: expr.to_string(),
                    subject,
                    comparison: None,
                })
            }
            _ => Err(err(format!(
                "'{name}' needs a comparison, e.g. -r '{name}>=1' (quoted: unquoted, the shell \
                 takes >=1 as a redirection into a file named '=1' and passes only '{name}')"
            ))),
        };
    };
    if matches!(
        subject,
        Subject::FrameworkGpu(_) | Subject::FrameworkRocm(_)
    ) {
        return Err(err(format!(
            "'{name}' takes no comparison; use '{}>=VERSION' for a version",
            name.split('.').next().unwrap_or(name)
        )));
    }
    let (op, value_text) = split_op(rest).ok_or_else(|| {
        err(format!(
            "'{}' is not an operator (use >=, >, <=, <, ==, !=)",
            rest.chars()
                .take_while(|c| "<>=!".contains(*c))
                .collect::<String>()
        ))
    })?;
    let value_text = value_text.trim();
    if value_text.is_empty() {
        return Err(err(format!("nothing after '{}'", op.as_str())));
    }
    let value = value(subject, name, op, value_text).map_err(err)?;
    Ok(Requirement {
        text: expr.to_string(),
        subject,
        comparison: Some((op, value)),
    })
}

/// The subject a name (before any operator) stands for; aliases included (`nvcc`, `gpus`).
fn subject(name: &str) -> Result<Subject, String> {
    let unknown_framework =
        |fw: &str| format!("unknown framework '{fw}' (known: torch, tensorflow, jax, cupy)");
    Ok(match name.to_ascii_lowercase().as_str() {
        "driver" => Subject::Driver,
        "cuda" => Subject::Cuda,
        "toolkit" | "nvcc" => Subject::Toolkit,
        "cudnn" => Subject::Cudnn,
        "gpu.count" | "gpus" => Subject::GpuCount,
        "gpu.memory" | "gpu.mem" => Subject::GpuMemory,
        "gpu.cc" | "gpu.compute_capability" => Subject::GpuCc,
        "gpu.vendor" => Subject::GpuVendor,
        "gpu.gfx" | "gpu.gfx_target" => Subject::GpuGfx,
        "rocm" => Subject::Rocm,
        other => match other.split_once('.') {
            Some((fw, "rocm")) => Subject::FrameworkRocm(
                FrameworkName::parse(fw).ok_or_else(|| unknown_framework(fw))?,
            ),
            Some((fw, "cuda" | "gpu")) => Subject::FrameworkGpu(
                FrameworkName::parse(fw).ok_or_else(|| unknown_framework(fw))?,
            ),
            Some((_, attr)) => {
                return Err(format!(
                    "unknown attribute '{attr}' in '{name}'; known subjects: {KNOWN}"
                ));
            }
            None => Subject::Framework(
                FrameworkName::parse(other)
                    .ok_or_else(|| format!("unknown subject '{name}'; known subjects: {KNOWN}"))?,
            ),
        },
    })
}

/// The value after the operator, read as the subject's kind of value: a version, a count, an
/// amount of memory, a vendor or gfx target (compared with `==`/`!=` only), a PEP 440 version.
fn value(subject: Subject, name: &str, op: Op, text: &str) -> Result<Value, String> {
    Ok(match subject {
        Subject::GpuVendor | Subject::GpuGfx if !matches!(op, Op::Eq | Op::Ne) => {
            return Err(format!(
                "'{name}' is compared with == or != only (a vendor or a target has no order)"
            ));
        }
        Subject::GpuVendor => match text.to_ascii_lowercase().as_str() {
            v @ ("amd" | "nvidia") => Value::Word(v.to_string()),
            other => return Err(format!("'{other}' is not a GPU vendor (amd, nvidia)")),
        },
        Subject::GpuGfx => {
            let target = crate::version::GfxTarget::parse(text)
                .ok_or_else(|| format!("'{text}' is not a gfx target like gfx1100"))?;
            Value::Word(target.to_string())
        }
        Subject::Driver
        | Subject::Cuda
        | Subject::Toolkit
        | Subject::Cudnn
        | Subject::GpuCc
        | Subject::Rocm => Value::Version(
            strict_version(text).ok_or_else(|| format!("'{text}' is not a version number"))?,
        ),
        Subject::GpuCount => Value::Count(
            text.parse()
                .map_err(|_| format!("'{text}' is not a whole number"))?,
        ),
        Subject::GpuMemory => Value::MiB(memory_mib(text)?),
        Subject::Framework(_) => Value::Package(package_version(text).ok_or_else(|| {
            format!(
                "'{text}' is not a Python package version (PEP 440: 2.4, 2.4.0rc1, 2.4.0+cu121)"
            )
        })?),
        Subject::FrameworkGpu(_) | Subject::FrameworkRocm(_) => unreachable_value(),
    })
}

/// Framework GPU requirements return early above; kept total without a panic.
fn unreachable_value() -> Value {
    Value::Count(0)
}

fn split_op(rest: &str) -> Option<(Op, &str)> {
    for (token, op) in [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ] {
        if let Some(value) = rest.strip_prefix(token) {
            if value.starts_with(['>', '<', '=', '!']) {
                return None;
            }
            return Some((op, value));
        }
    }
    None
}

/// A version made only of dotted numbers: `12.4`, `550.54.15`; `12.4abc` is refused.
fn strict_version(text: &str) -> Option<Version> {
    let ok = !text.is_empty()
        && text
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    ok.then(|| Version::parse(text)).flatten()
}

/// Whether an installed package version meets `op want` the way pip decides it: through a
/// PEP 440 specifier, so `==2.4.0` accepts the local build `2.4.0+cu121` and `>=2.4` refuses
/// `2.4.0rc1`. A `want` with a local tag (`==2.4.0+cu121`) can only be compared exactly.
#[must_use]
pub(crate) fn package_meets(have: &pep440_rs::Version, op: Op, want: &pep440_rs::Version) -> bool {
    use pep440_rs::Operator;
    let operator = match op {
        Op::Ge => Operator::GreaterThanEqual,
        Op::Gt => Operator::GreaterThan,
        Op::Le => Operator::LessThanEqual,
        Op::Lt => Operator::LessThan,
        Op::Eq => Operator::Equal,
        Op::Ne => Operator::NotEqual,
    };
    match pep440_rs::VersionSpecifier::from_version(operator, want.clone()) {
        Ok(spec) => spec.contains(have),
        Err(_) => op.holds(have.cmp(want)),
    }
}

/// `40GiB`, `141GB`, `81920MiB` → MiB, each unit as its name says: GiB and MiB are powers of
/// two (what nvidia-smi's MiB add up to), GB and MB powers of ten (what a data sheet says: an
/// H200 is sold as 141 GB and has 143,771 MiB). `estimate` and `advise` read GB the same way.
/// A figure without a unit, or with a bare `G`/`M`, is refused: guessing costs 7%.
fn memory_mib(text: &str) -> Result<u64, String> {
    const MIB: f64 = 1_048_576.0;
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' does not start with a number"))?;
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "tib" => 1024.0 * 1024.0,
        "gib" => 1024.0,
        "mib" => 1.0,
        "tb" => 1e12 / MIB,
        "gb" => 1e9 / MIB,
        "mb" => 1e6 / MIB,
        "" => {
            return Err(format!(
                "'{text}' has no unit: write {text}GiB or {text}GB (GiB = 2^30 bytes, GB = 10^9 bytes)"
            ));
        }
        "g" | "m" | "t" => {
            return Err(format!(
                "'{text}' is ambiguous: write {number}{u}iB or {number}{u}B (GiB = 2^30 bytes, GB = 10^9 bytes)",
                u = unit.trim().to_ascii_uppercase()
            ));
        }
        other => return Err(format!("unknown unit '{other}' (use GiB, GB, MiB or MB)")),
    };
    let mib = (number * factor).ceil();
    if !(0.0..=1e12).contains(&mib) {
        return Err(format!("'{text}' is out of range"));
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "range checked above"
    )]
    Ok(mib as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subject_parses() {
        let cases = [
            ("driver>=535", Subject::Driver),
            ("cuda>=12.1", Subject::Cuda),
            ("toolkit>=12.4", Subject::Toolkit),
            ("cudnn>=9", Subject::Cudnn),
            ("gpu.count>=2", Subject::GpuCount),
            ("gpu.memory>=40GiB", Subject::GpuMemory),
            ("gpu.cc>=8.0", Subject::GpuCc),
            ("torch>=2.4", Subject::Framework(FrameworkName::Torch)),
            ("torch.cuda", Subject::FrameworkGpu(FrameworkName::Torch)),
            (
                "tensorflow.gpu",
                Subject::FrameworkGpu(FrameworkName::Tensorflow),
            ),
            ("jax.gpu", Subject::FrameworkGpu(FrameworkName::Jax)),
        ];
        for (text, subject) in cases {
            assert_eq!(parse(text).unwrap().subject, subject, "{text}");
        }
    }

    #[test]
    fn values_are_typed() {
        assert_eq!(
            parse("gpu.memory>=40GiB").unwrap().comparison,
            Some((Op::Ge, Value::MiB(40 * 1024)))
        );
        assert_eq!(
            parse("gpu.count == 2").unwrap().comparison,
            Some((Op::Eq, Value::Count(2)))
        );
        let torch = parse("torch>=2.4").unwrap().comparison.unwrap();
        assert_eq!(
            torch,
            (Op::Ge, Value::Package(package_version("2.4").unwrap()))
        );
        // 141 GB is 141e9 bytes: 134,469 MiB (rounded up), under an H200's 143,771 MiB.
        assert_eq!(
            parse("gpu.memory>=141GB").unwrap().comparison,
            Some((Op::Ge, Value::MiB(134_469)))
        );
        assert_eq!(
            parse("gpu.memory>=141GiB").unwrap().comparison,
            Some((Op::Ge, Value::MiB(141 * 1024)))
        );
    }

    /// PEP 440 order and matching, as pip applies them to an installed version.
    #[test]
    fn package_versions_compare_as_pip_does() {
        let meets = |have: &str, op: Op, want: &str| {
            package_meets(
                &package_version(have).unwrap(),
                op,
                &package_version(want).unwrap(),
            )
        };
        // Pre- and dev-releases come before the release.
        assert!(!meets("2.4.0rc1", Op::Ge, "2.4"));
        assert!(!meets("2.4.0.dev20240601", Op::Ge, "2.4"));
        assert!(!meets("2.4.0a0+git1234", Op::Ge, "2.4"));
        assert!(!meets("2.4.0rc1", Op::Eq, "2.4.0"));
        assert!(meets("2.4.0rc1", Op::Lt, "2.4") || meets("2.4.0rc1", Op::Le, "2.4"));
        // Local tags are ignored against a specifier without one; post-releases come after.
        assert!(meets("2.4.0+cu121", Op::Ge, "2.4"));
        assert!(meets("2.4.0+cu121", Op::Eq, "2.4.0"));
        assert!(meets("2.4.1", Op::Ge, "2.4"));
        // PEP 440: `>2.9.0` excludes 2.9.0's own post-releases.
        assert!(!meets("2.9.0.post0", Op::Gt, "2.9.0"));
        assert!(meets("2.9.0.post0", Op::Ge, "2.9"));
        assert!(!meets("2.4.0+cu121", Op::Ne, "2.4.0"));
        // A local tag in the requirement is compared exactly.
        assert!(meets("2.4.0+cu121", Op::Eq, "2.4.0+cu121"));
        assert!(!meets("2.4.0+cpu", Op::Eq, "2.4.0+cu121"));
        // Order: dev < a < rc < final < post.
        let order = [
            "2.4.0.dev1",
            "2.4.0a1",
            "2.4.0rc1",
            "2.4.0",
            "2.4.0.post1",
            "2.4.1",
            "2.10.0",
        ];
        for pair in order.windows(2) {
            assert!(
                package_version(pair[0]).unwrap() < package_version(pair[1]).unwrap(),
                "{pair:?}"
            );
        }
        assert!(package_version("2.4.x").is_none());
    }

    #[test]
    fn memory_without_a_clear_unit_is_refused_with_a_hint() {
        let msg = |t: &str| parse(t).unwrap_err().to_string();
        assert!(
            msg("gpu.memory>=80").contains("write 80GiB or 80GB"),
            "{}",
            msg("gpu.memory>=80")
        );
        assert!(
            msg("gpu.memory>=80G").contains("ambiguous"),
            "{}",
            msg("gpu.memory>=80G")
        );
        assert!(msg("gpu.memory>=80G").contains("80GiB or 80GB"));
        assert_eq!(
            parse("gpu.memory>=80000MB").unwrap().comparison,
            Some((Op::Ge, Value::MiB(76_294)))
        );
    }

    #[test]
    fn errors_point_at_the_bad_part() {
        let msg = |t: &str| parse(t).unwrap_err().to_string();
        assert!(
            msg("drivr>=535").contains("unknown subject 'drivr'"),
            "{}",
            msg("drivr>=535")
        );
        assert!(msg("driver>=abc").contains("'abc' is not a version"));
        assert!(
            msg("driver=>535").contains("'=>' is not an operator"),
            "{}",
            msg("driver=>535")
        );
        assert!(msg("gpu.memory>=40XB").contains("unknown unit 'xb'"));
        assert!(msg("driver").contains("needs a comparison"));
        assert!(
            msg("driver").contains("-r 'driver>=1' (quoted"),
            "{}",
            msg("driver")
        );
        assert!(msg("torch.cuda>=12").contains("takes no comparison"));
        assert!(msg("keras.gpu").contains("unknown framework 'keras'"));
        assert!(msg(">=1").contains("nothing before the operator"));
        assert!(msg("cuda>=").contains("nothing after '>='"));
        assert!(msg("gpu.count>=two").contains("not a whole number"));
    }
}
