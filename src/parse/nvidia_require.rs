//! An image's `NVIDIA_REQUIRE_*` conditions read and judged the way the NVIDIA Container
//! Toolkit judges them before it starts a container (libnvidia-container `src/cli/dsl.c` and
//! `src/cli/configure.c`; the Toolkit passes every `NVIDIA_REQUIRE_*` value but
//! `NVIDIA_REQUIRE_JETPACK` as one `--require`, `internal/config/image/cuda_image.go`). Pure: the
//! facts the conditions are judged against come in as [`Facts`].
//!
//! The grammar: a value is alternatives separated by spaces, any one of which may hold; an
//! alternative is conditions separated by commas, all of which must hold; a condition is
//! `name op value` with `name` one of `cuda`, `driver`, `arch`, `brand` (any case) and `op` one
//! of `=`, `!=`, `<`, `<=`, `>`, `>=`. Versions are dotted numbers compared part by part; a brand
//! is compared without case, by `=` and `!=` only. So `cuda>=12.8 brand=tesla,driver>=535,driver<536`
//! holds on a driver of CUDA 12.8 or newer, or on a Tesla-brand GPU whose driver is of the 535
//! branch (the branches an image's forward-compatibility package was built for).

use crate::version::Version;

/// A comparison of one condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    /// The operator exactly as written; a run of `<>=!` that is none of these is no operator.
    fn parse(text: &str) -> Option<Op> {
        Some(match text {
            "=" => Op::Eq,
            "!=" => Op::Ne,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            _ => return None,
        })
    }

    fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            Op::Eq => ordering == Equal,
            Op::Ne => ordering != Equal,
            Op::Lt => ordering == Less,
            Op::Le => ordering != Greater,
            Op::Gt => ordering == Greater,
            Op::Ge => ordering != Less,
        }
    }
}

/// What a condition is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// The highest CUDA the host driver supports (NVML's `nvmlSystemGetCudaDriverVersion`).
    Cuda,
    /// The host driver's version (`nvmlSystemGetDriverVersion`).
    Driver,
    /// The GPU's compute capability.
    Arch,
    /// The GPU's brand (`nvmlDeviceGetBrand`: Tesla, GeForce, ...).
    Brand,
}

/// One `name op value` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub subject: Subject,
    pub op: Op,
    pub value: String,
}

/// A parsed requirement: alternatives of conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub alternatives: Vec<Vec<Condition>>,
}

/// Why a value is not a requirement the Toolkit can judge: it refuses such an image with
/// "requirement error: invalid expression".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

/// Reads a requirement value.
///
/// # Errors
/// [`Invalid`] names the first condition the Toolkit would not read (an unknown name, no
/// operator, an empty value, a version with other than digits and dots).
pub fn parse(value: &str) -> Result<Requirement, Invalid> {
    let mut alternatives = Vec::new();
    for alternative in value.split(' ').filter(|a| !a.is_empty()) {
        let mut conditions = Vec::new();
        for text in alternative.split(',').filter(|c| !c.is_empty()) {
            conditions.push(condition(text).ok_or_else(|| Invalid(text.to_string()))?);
        }
        if !conditions.is_empty() {
            alternatives.push(conditions);
        }
    }
    Ok(Requirement { alternatives })
}

/// One condition: the name up to the first of `<>=!`, the operator (that whole run), the value.
fn condition(text: &str) -> Option<Condition> {
    let name_end = text.find(['<', '>', '=', '!'])?;
    if name_end == 0 {
        return None;
    }
    let (name, rest) = text.split_at(name_end);
    let op_end = rest
        .find(|c| !matches!(c, '<' | '>' | '=' | '!'))
        .unwrap_or(rest.len());
    let (op, value) = rest.split_at(op_end);
    let op = Op::parse(op)?;
    if value.is_empty() {
        return None;
    }
    let subject = match name.to_ascii_lowercase().as_str() {
        "cuda" => Subject::Cuda,
        "driver" => Subject::Driver,
        "arch" => Subject::Arch,
        "brand" => Subject::Brand,
        _ => return None,
    };
    let version_like = |v: &str| v.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if subject != Subject::Brand && !version_like(value) {
        return None;
    }
    if subject == Subject::Brand && !matches!(op, Op::Eq | Op::Ne) {
        return None;
    }
    Some(Condition {
        subject,
        op,
        value: value.to_string(),
    })
}

/// What the conditions are judged against. A fact that is not known makes its conditions hold,
/// as the Toolkit does when it sees no GPU or no brand (`configure.c`: "No device is visible,
/// assume the arch is ok").
#[derive(Clone, Default)]
pub struct Facts<'a> {
    pub cuda: Option<&'a Version>,
    pub driver: Option<&'a Version>,
    pub arch: Option<&'a Version>,
    /// Whether the GPU's brand is this one (lower case): `None` when the brand is not known.
    pub brand_is: Option<&'a dyn Fn(&str) -> bool>,
}

impl Condition {
    /// Whether this condition holds for `facts`; `None` when the comparison cannot be made
    /// (a value that is not a version), which the Toolkit treats as an invalid expression.
    fn holds(&self, facts: &Facts<'_>) -> Option<bool> {
        let version = |known: Option<&Version>| -> Option<bool> {
            let Some(known) = known else {
                return Some(true);
            };
            let wanted = Version::parse(&self.value)?;
            Some(self.op.holds(known.cmp(&wanted)))
        };
        match self.subject {
            Subject::Cuda => version(facts.cuda),
            Subject::Driver => version(facts.driver),
            Subject::Arch => version(facts.arch),
            Subject::Brand => Some(match facts.brand_is {
                None => true,
                Some(is) => {
                    let same = is(&self.value.to_ascii_lowercase());
                    if self.op == Op::Eq { same } else { !same }
                }
            }),
        }
    }
}

impl Requirement {
    /// Whether some alternative holds entirely. An empty requirement holds.
    #[must_use]
    pub fn holds(&self, facts: &Facts<'_>) -> bool {
        self.alternatives.is_empty()
            || self
                .alternatives
                .iter()
                .any(|conditions| conditions.iter().all(|c| c.holds(facts).unwrap_or(true)))
    }

    /// The `cuda>=X.Y` of the first alternative: the CUDA the image asks of a driver that does
    /// not rely on forward compatibility (the Toolkit's message names it: "unsatisfied
    /// condition: cuda>=12.8").
    #[must_use]
    pub fn cuda_floor(&self) -> Option<&str> {
        let first = self.alternatives.first()?;
        first
            .iter()
            .find(|c| c.subject == Subject::Cuda && matches!(c.op, Op::Ge | Op::Gt))
            .map(|c| c.value.as_str())
    }

    /// The driver branches the alternatives with a brand accept (`driver>=535,driver<536` gives
    /// 535), in order, without repeats: the host branches an image's forward-compatibility
    /// package was made for.
    #[must_use]
    pub fn compat_branches(&self) -> Vec<u64> {
        let mut out: Vec<u64> = Vec::new();
        for conditions in &self.alternatives {
            if !conditions.iter().any(|c| c.subject == Subject::Brand) {
                continue;
            }
            let floor = conditions
                .iter()
                .find(|c| c.subject == Subject::Driver && c.op == Op::Ge)
                .and_then(|c| Version::parse(&c.value));
            if let Some(branch) = floor.map(|v| v.major())
                && !out.contains(&branch)
            {
                out.push(branch);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value nvidia/cuda:12.8.1 images carry (shortened to two branches and three brands).
    const CUDA_128: &str = "cuda>=12.8 brand=unknown,driver>=470,driver<471 \
        brand=tesla,driver>=470,driver<471 brand=nvidia,driver>=470,driver<471 \
        brand=unknown,driver>=535,driver<536 brand=tesla,driver>=535,driver<536 \
        brand=nvidia,driver>=535,driver<536";

    fn v(text: &str) -> Version {
        Version::parse(text).expect("version")
    }

    fn geforce(brand: &str) -> bool {
        brand == "geforce"
    }

    fn tesla(brand: &str) -> bool {
        brand != "geforce" && brand != "titan"
    }

    #[test]
    fn reads_alternatives_of_conditions() {
        let r = parse(CUDA_128).expect("valid");
        assert_eq!(r.alternatives.len(), 7);
        assert_eq!(r.cuda_floor(), Some("12.8"));
        assert_eq!(r.compat_branches(), [470, 535]);
        assert_eq!(
            r.alternatives[1][1],
            Condition {
                subject: Subject::Driver,
                op: Op::Ge,
                value: "470".into()
            }
        );
    }

    #[test]
    fn a_new_enough_driver_meets_it_whatever_the_gpu() {
        let r = parse(CUDA_128).expect("valid");
        let (cuda, driver) = (v("12.8"), v("570.124.06"));
        let facts = Facts {
            cuda: Some(&cuda),
            driver: Some(&driver),
            brand_is: Some(&geforce),
            ..Facts::default()
        };
        assert!(r.holds(&facts));
    }

    #[test]
    fn an_older_driver_fails_on_geforce_and_holds_on_a_listed_branch_of_a_data_center_gpu() {
        let r = parse(CUDA_128).expect("valid");
        let (cuda, driver) = (v("12.2"), v("535.183.01"));
        let mut facts = Facts {
            cuda: Some(&cuda),
            driver: Some(&driver),
            brand_is: Some(&geforce),
            ..Facts::default()
        };
        assert!(!r.holds(&facts));
        facts.brand_is = Some(&tesla);
        assert!(r.holds(&facts));
        // 550 is not a branch this image's compat package lists.
        let (cuda, driver) = (v("12.4"), v("550.144.03"));
        facts.cuda = Some(&cuda);
        facts.driver = Some(&driver);
        assert!(!r.holds(&facts));
    }

    #[test]
    fn unknown_facts_make_their_conditions_hold() {
        let r = parse("cuda>=12.8 brand=tesla,driver>=535,driver<536").expect("valid");
        let (cuda, driver) = (v("12.2"), v("535.104.05"));
        let facts = Facts {
            cuda: Some(&cuda),
            driver: Some(&driver),
            ..Facts::default()
        };
        assert!(r.holds(&facts), "no brand known: the brand condition holds");
        assert!(parse("").expect("empty").holds(&facts));
    }

    #[test]
    fn versions_compare_part_by_part_with_missing_parts_zero() {
        let r = parse("cuda>=12.10").expect("valid");
        let cuda = v("12.9");
        assert!(!r.holds(&Facts {
            cuda: Some(&cuda),
            ..Facts::default()
        }));
        let r = parse("cuda>=12.0").expect("valid");
        let cuda = v("12");
        assert!(r.holds(&Facts {
            cuda: Some(&cuda),
            ..Facts::default()
        }));
    }

    #[test]
    fn what_the_toolkit_refuses_to_read_is_invalid() {
        for bad in [
            "cuda>=12.8 foo=bar",
            "cuda=>12.8",
            "cuda>=",
            ">=12.8",
            "cuda>=12.8a",
            "brand>tesla",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse("CUDA>=11.0").expect("any case").cuda_floor(),
            Some("11.0")
        );
        assert_eq!(
            parse("  cuda>=11.0  ,  ")
                .expect("extra separators")
                .alternatives
                .len(),
            1
        );
    }
}
