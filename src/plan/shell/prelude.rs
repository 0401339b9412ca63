//! What the script carries before its steps: the preamble (strict mode, the step and exit
//! bookkeeping) and only the helper functions the steps use.

use std::collections::BTreeSet;

use super::super::cmd::{Check, Command, Landed, Word};

/// Which helper functions the steps use, so the script carries only those.
#[derive(Default)]
pub(super) struct Uses(pub(super) BTreeSet<&'static str>);

impl Uses {
    pub(super) fn check(&mut self, check: &Check) {
        match check {
            Check::DpkgInstalled(_) => {
                self.0.insert("has_package");
            }
            Check::RunningKernelHeaders => {
                self.0.insert("has_package");
                self.0.insert("kernel");
            }
            Check::DpkgVersion { .. } => {
                self.0.insert("has_package");
                self.0.insert("has_version");
            }
            Check::PythonDist { .. } => {
                self.0.insert("has_dist");
            }
            Check::CondaEnvExists(_) => {
                self.0.insert("has_conda_env");
            }
            Check::CondaPackage { .. } => {
                self.0.insert("has_conda_package");
            }
            Check::Any(list) | Check::All(list) => list.iter().for_each(|c| self.check(c)),
            _ => {}
        }
    }

    pub(super) fn command(&mut self, command: &Command) {
        fn has_kernel(w: &Word) -> bool {
            match w {
                Word::Var("kernel") => true,
                Word::Join(parts) => parts.iter().any(has_kernel),
                _ => false,
            }
        }
        match command {
            Command::AptInstallMatching { .. } => {
                self.0.insert("newest_version");
            }
            Command::Companions { .. } => {
                self.0.insert("has_dist");
            }
            Command::Run { argv, .. } if argv.iter().any(has_kernel) => {
                self.0.insert("kernel");
            }
            Command::Landed {
                check: Landed::ExtraWheels { .. },
                ..
            } => {
                self.0.insert("has_extra_wheels");
            }
            _ => {}
        }
    }
}

pub(super) const HELPERS: [(&str, &str); 9] = [
    (
        "refused",
        r#"# A step gpu-doctor would not write: a value it names would have had to be cleaned (a
# control or invisible character), or a name would read as an option. Its failure stops the
# plan (set -e), and the exit trap says which step it was.
refused() { printf 'gpu-doctor plan: %s\n' "$1" >&2; return 1; }
"#,
    ),
    (
        "has_extra_wheels",
        r#"# Whether every requirement extra $2 of distribution $1 adds is installed, for the Python the
# remaining arguments run: what shows that pip landed the GPU build, not an old release
# without the extra.
has_extra_wheels() {
  local dist=$1 extra=$2
  shift 2
  "$@" -c 'import re, sys
from importlib.metadata import PackageNotFoundError, requires, version
dist, extra = sys.argv[1], sys.argv[2]
try:
    reqs = requires(dist) or []
except PackageNotFoundError:
    sys.exit(1)
wanted = [r for r in reqs if re.search(r"extra\s*==\s*.%s." % re.escape(extra), r)]
missing = []
for r in wanted:
    name = re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0]
    try:
        version(name)
    except PackageNotFoundError:
        missing.append(name)
sys.exit(1 if missing or not wanted else 0)' "$dist" "$extra" >/dev/null 2>&1
}
"#,
    ),
    (
        "kernel",
        r#"# The release of the kernel this script runs on: its headers are the ones DKMS needs.
kernel="$(uname -r)"
"#,
    ),
    (
        "has_package",
        r#"# Whether a package is installed (a removed one keeps a status entry, so `dpkg -s` is not enough).
has_package() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = 'install ok installed' ]; }
"#,
    ),
    (
        "has_version",
        r#"# Whether package $1 is installed at a version that starts with $2 and ends with $3.
has_version() {
  local v
  has_package "$1" || return 1
  v="$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null)" || return 1
  [[ "$v" == "$2"* && "$v" == *"$3" ]]
}
"#,
    ),
    (
        "newest_version",
        r#"# The newest version of package $1 in the apt lists that starts with $2 and ends with $3
# (apt-cache madison lists the newest first).
newest_version() {
  apt-cache madison "$1" | awk -F ' [|] ' -v pre="$2" -v suf="$3" '
    { v = $2; gsub(/ /, "", v) }
    index(v, pre) == 1 && (suf == "" || substr(v, length(v) - length(suf) + 1) == suf) { print v; exit }'
}
"#,
    ),
    (
        "has_dist",
        r#"# Whether Python distribution $1 is installed at a version starting with $2 (and with the
# local tag +$3 when given), for the Python that the remaining arguments run.
has_dist() {
  local dist=$1 prefix=$2 tag=$3
  shift 3
  "$@" -c 'import sys
from importlib.metadata import version
public, _, tag = version(sys.argv[1]).partition("+")
ok = (public + ".").startswith(sys.argv[2]) and (not sys.argv[3] or tag == sys.argv[3])
sys.exit(0 if ok else 1)' "$dist" "$prefix" "$tag" >/dev/null 2>&1
}
"#,
    ),
    (
        "has_conda_env",
        r#"# Whether conda has an environment named $1.
has_conda_env() { conda list -n "$1" >/dev/null 2>&1; }
"#,
    ),
    (
        "has_conda_package",
        r#"# Whether conda environment $1 has package $2 at version $3 (or $3.*).
has_conda_package() {
  local name version _rest
  while read -r name version _rest; do
    if [ "$name" = "$2" ] && { [ "$version" = "$3" ] || [[ "$version" == "$3".* ]]; }; then
      return 0
    fi
  done < <(conda list -n "$1" 2>/dev/null)
  return 1
}
"#,
    ),
];

pub(super) const PREAMBLE: &str = r#"set -euo pipefail

say() { printf '%s\n' "$*"; }
fail() { printf 'gpu-doctor plan: %s\n' "$1" >&2; exit 1; }

# As root without sudo (minimal images and containers), run the commands directly.
if [ "$EUID" -eq 0 ] && ! command -v sudo >/dev/null 2>&1; then
  sudo() { "$@"; }
fi

# A program that watches the run (gpu-doctor's TUI) sets these: GPU_DOCTOR_EVENTS, a tag that
# starts its progress lines; GPU_DOCTOR_STOP, a file whose existence stops the run before the
# next step; GPU_DOCTOR_NO_PROMPT, when no one can answer a password prompt (sudo was asked
# beforehand). Run by hand, none is set and the script behaves as written.
event() { if [ -n "${GPU_DOCTOR_EVENTS:-}" ]; then printf '%s %s\n' "$GPU_DOCTOR_EVENTS" "$*"; fi; }
if [ -n "${GPU_DOCTOR_NO_PROMPT:-}" ] && ! declare -F sudo >/dev/null; then
  sudo() { command sudo -n "$@"; }
fi

current=''
done_steps=()
reboot_needed=0
stopped=''
step() {
  if [ -n "${GPU_DOCTOR_STOP:-}" ] && [ -e "$GPU_DOCTOR_STOP" ]; then
    stopped=$1; event stopped "$1"; exit 3
  fi
  current=$2; event start "$1"; printf '\n==> [%s/%s] %s: %s\n' "$1" "${#steps[@]}" "$2" "$3"
}
skipped() { printf '    skipped: %s\n' "$1"; event skipped "$1"; done_steps+=("$current"); current=''; }
finished() { printf '    done\n'; event finished; done_steps+=("$current"); current=''; }

tmp="$(mktemp -d)"
on_exit() {
  local status=$? id rest=()
  rm -rf -- "$tmp"
  [ "$status" -eq 0 ] && return 0
  for id in "${steps[@]}"; do
    case " ${done_steps[*]:-} " in *" $id "*) ;; *) rest+=("$id") ;; esac
  done
  if [ -n "$stopped" ]; then
    printf '\ngpu-doctor plan: stopped before step %s, as asked; run it again to go on.\n' "$stopped" >&2
  else
    event failed "$status"
    printf '\ngpu-doctor plan: FAILED in step %s (exit status %s).\n' "${current:-?}" "$status" >&2
  fi
  printf 'Done: %s\n' "${done_steps[*]:-nothing}" >&2
  printf 'Not done: %s\n' "${rest[*]:-nothing}" >&2
}
trap on_exit EXIT
"#;
