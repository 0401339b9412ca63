//! Renders a [`Plan`] as a bash script: a header that says what it was made for, helpers, then
//! one block per step that checks whether the step is done, runs it, and reports. Pure.
//!
//! Safety rests on two rules. Every value goes through [`shell_quote`] (single quotes, nothing
//! expands inside) or, in comments, through [`comment_lines`] (no line break can end a comment).
//! And the script resolves every command through PATH (no `/usr/bin/...`), writes machine paths
//! below `$root`, and runs with `set -euo pipefail`, so the first failing command stops it and
//! the exit trap says which step failed, which were done and which were not.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::cmd::{Check, Command, Guard, Landed, Outcome, Python, Word};
use super::{Plan, Step, Target};

/// How to render: the folder machine paths are written below (`--root`; empty for `/`).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub root: String,
}

/// Width that comments are wrapped to.
const WIDTH: usize = 96;

/// Quotes a value for bash so it stays one word and nothing in it expands: plain words as
/// they are, everything else in single quotes (a `'` inside becomes `'\''`). NUL bytes, which
/// no argument can carry, are dropped, and every other control character but a tab or a line
/// break becomes `?`: the script is printed, saved and echoed as it runs, and a value from the
/// machine must not drive a terminal on any of those ways.
#[must_use]
pub fn shell_quote(value: &str) -> String {
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"-_./:=+,@%".contains(&b);
    if !value.is_empty() && value.bytes().all(safe) && !value.starts_with('=') {
        return value.to_string();
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\'' => out.push_str("'\\''"),
            '\0' => {}
            '\t' | '\n' => out.push(c),
            c if c.is_control() => out.push('?'),
            c if crate::sanitize::is_invisible(c) => {
                out.push_str(&format!("<U+{:04X}>", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Text as `#` comment lines, wrapped; line breaks start new comment lines and other control
/// characters become `?`, so no value can end a comment and become a command.
#[must_use]
pub fn comment_lines(text: &str, indent: &str) -> Vec<String> {
    // Each line cleaned as every face cleans text (invisible characters shown escaped).
    let clean = crate::sanitize::clean_lines(text);
    let mut out = Vec::new();
    for paragraph in clean.split('\n') {
        let mut line = format!("#{indent}");
        let bare = line.len();
        for word in paragraph.split(' ').filter(|w| !w.is_empty()) {
            if line.len() > bare && line.len() + 1 + word.len() > WIDTH {
                out.push(line.trim_end().to_string());
                line = format!("#{indent}  ");
            }
            if line.len() > bare && !line.ends_with("  ") {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push(line.trim_end().to_string());
    }
    out
}

fn word(w: &Word) -> String {
    match w {
        Word::Lit(text) => shell_quote(text),
        Word::Path(path) if path.starts_with('/') => format!("\"$root\"{}", shell_quote(path)),
        Word::Path(path) if path.starts_with("./") || path.starts_with("../") => shell_quote(path),
        Word::Path(path) => shell_quote(&format!("./{path}")),
        Word::Var(name) => format!("\"${name}\""),
        Word::Join(parts) => parts.iter().map(word).collect(),
    }
}

fn line(words: &[Word]) -> String {
    words.iter().map(word).collect::<Vec<_>>().join(" ")
}

/// The words that run a step's Python.
fn python_words(python: &Python) -> Vec<Word> {
    match python {
        Python::Prefix(prefix) => vec![Word::Join(vec![
            Word::path(prefix.trim_end_matches('/')),
            Word::lit("/bin/python"),
        ])],
        Python::CondaEnv(name) => vec![
            Word::lit("conda"),
            Word::lit("run"),
            Word::lit("-n"),
            Word::lit(name.clone()),
            Word::lit("python"),
        ],
    }
}

/// Whether `value` holds a character [`shell_quote`] would have to change (NUL, a control
/// character, tab and line break included, or an invisible one): written cleaned, a user name
/// or an environment path would name another user or interpreter.
fn needs_cleaning(value: &str) -> bool {
    value
        .chars()
        .any(|c| c.is_control() || crate::sanitize::is_invisible(c))
}

/// Every value `command` passes to a program, with what it is; and the names that must not
/// read as an option (a word after `--`, a conda environment's name).
fn command_values(command: &Command) -> (Vec<(&'static str, &str)>, Vec<&str>) {
    fn words<'a>(w: &'a Word, out: &mut Vec<(&'static str, &'a str)>) {
        match w {
            Word::Lit(text) => out.push(("the word", text)),
            Word::Path(path) => out.push(("the path", path)),
            Word::Var(_) => {}
            Word::Join(parts) => parts.iter().for_each(|p| words(p, out)),
        }
    }
    fn python<'a>(p: &'a Python, out: &mut Vec<(&'static str, &'a str)>, names: &mut Vec<&'a str>) {
        match p {
            Python::Prefix(prefix) => out.push(("the environment", prefix)),
            Python::CondaEnv(name) => {
                out.push(("the conda environment", name));
                names.push(name);
            }
        }
    }
    let (mut out, mut names): (Vec<(&'static str, &str)>, Vec<&str>) = (Vec::new(), Vec::new());
    match command {
        Command::Run { argv, .. } => {
            argv.iter().for_each(|w| words(w, &mut out));
            let after = argv
                .iter()
                .position(|w| matches!(w, Word::Lit(l) if l == "--"))
                .map_or(argv.len(), |i| i + 1);
            for w in &argv[after..] {
                if let Word::Lit(name) = w {
                    names.push(name.as_str());
                }
            }
            // The value of a naming option (`conda create -n NAME`).
            for pair in argv.windows(2) {
                if let [Word::Lit(option), Word::Lit(name)] = pair
                    && matches!(option.as_str(), "-n" | "--name")
                {
                    names.push(name.as_str());
                }
            }
        }
        Command::WriteFile { path, lines } => {
            out.push(("the path", path));
            out.extend(lines.iter().map(|l| ("the line", l.as_str())));
        }
        Command::AptInstallMatching {
            packages,
            prefix,
            suffix,
        } => {
            out.extend(packages.iter().map(|p| ("the package", p.as_str())));
            out.push(("the version prefix", prefix));
            out.push(("the version suffix", suffix));
        }
        Command::Pip {
            python: p, args, ..
        } => {
            python(p, &mut out, &mut names);
            args.iter().for_each(|w| words(w, &mut out));
        }
        Command::Companions { python: p, dists } => {
            python(p, &mut out, &mut names);
            out.extend(dists.iter().map(|d| ("the distribution", d.as_str())));
        }
        Command::Say(_) => {}
        Command::Landed {
            python: p, check, ..
        } => {
            python(p, &mut out, &mut names);
            if let Landed::ExtraWheels { dist, extra } = check {
                out.push(("the distribution", dist));
                out.push(("the extra", extra));
            }
        }
    }
    (out, names)
}

/// Why `command` is refused, if it is (#40): a value it names holds a character that
/// [`shell_quote`] would change, or a name reads as an option. The value is checked, never
/// cleaned into the command.
#[must_use]
pub fn refused(command: &Command) -> Option<String> {
    let (values, names) = command_values(command);
    let shown = |v: &str| crate::sanitize::clean(v);
    if let Some((what, value)) = values.iter().find(|(_, v)| needs_cleaning(v)) {
        return Some(format!(
            "refused: {what} '{}' holds a control or invisible character; gpu-doctor does not \
             write a cleaned value into a command (it would name something else)",
            shown(value)
        ));
    }
    names.iter().find(|n| n.starts_with('-')).map(|name| {
        format!(
            "refused: the name '{}' starts with '-', which the command would read as an option",
            shown(name)
        )
    })
}

/// Why `step` is refused, if it is: a value one of its guards or commands names needs
/// cleaning, or a name reads as an option ([`refused`]). The step's block is then only the
/// line that stops the plan with the reason.
pub(crate) fn step_refusal(step: &Step) -> Option<String> {
    let guard = step.guards.iter().find_map(|g| {
        check_values(&g.check)
            .into_iter()
            .find(|v| needs_cleaning(v))
            .map(|v| {
                format!(
                    "refused: the value '{}' holds a control or invisible character; gpu-doctor \
                     does not write a cleaned value into a command (it would name something else)",
                    crate::sanitize::clean(v)
                )
            })
    });
    let named = step.guards.iter().find_map(|g| {
        guard_names(&g.check)
            .into_iter()
            .find(|n| n.starts_with('-'))
            .map(|name| {
                format!(
                    "refused: the name '{}' starts with '-', which the command would read as an \
                     option",
                    crate::sanitize::clean(name)
                )
            })
    });
    guard
        .or(named)
        .or_else(|| step.commands.iter().find_map(refused))
}

/// The conda environment names a check passes to conda.
fn guard_names(check: &Check) -> Vec<&str> {
    match check {
        Check::CondaEnvExists(name) | Check::CondaPackage { env: name, .. } => vec![name],
        Check::PythonDist {
            python: Python::CondaEnv(name),
            ..
        } => vec![name],
        Check::Any(list) | Check::All(list) => list.iter().flat_map(guard_names).collect(),
        _ => Vec::new(),
    }
}

/// A command as the lines of shell that run it; a refused one ([`refused`]) as the line that
/// stops the plan with the reason.
#[must_use]
pub fn command_lines(command: &Command) -> Vec<String> {
    if let Some(reason) = refused(command) {
        return vec![format!("refused {}", shell_quote(&reason))];
    }
    let sudo = |yes: bool| if yes { "sudo " } else { "" };
    match command {
        Command::Run { argv, sudo: s } => vec![format!("{}{}", sudo(*s), line(argv))],
        Command::WriteFile { path, lines } => {
            let parent = path.rsplit_once('/').map_or("/", |(dir, _)| dir);
            let mut printf = String::from("printf '%s\\n'");
            for l in lines {
                printf.push(' ');
                printf.push_str(&shell_quote(l));
            }
            vec![
                format!("sudo mkdir -p -- {}", word(&Word::path(parent))),
                format!(
                    "{printf} | sudo tee -- {} >/dev/null",
                    word(&Word::path(path.clone()))
                ),
            ]
        }
        Command::AptInstallMatching {
            packages,
            prefix,
            suffix,
        } => {
            let first = packages.first().cloned().unwrap_or_default();
            let pinned: Vec<Word> = packages
                .iter()
                .map(|p| Word::Join(vec![Word::lit(format!("{p}=")), Word::Var("version")]))
                .collect();
            let wanted = match (prefix.is_empty(), suffix.is_empty()) {
                (false, false) => format!("starting with {prefix} and ending with {suffix}"),
                (false, true) => format!("starting with {prefix}"),
                (true, false) => format!("ending with {suffix}"),
                (true, true) => "at all".to_string(),
            };
            vec![
                format!(
                    "version=\"$(newest_version {} {} {})\"",
                    shell_quote(&first),
                    shell_quote(prefix),
                    shell_quote(suffix)
                ),
                format!(
                    "[ -n \"$version\" ] || fail {}",
                    shell_quote(&format!("the apt lists have no {first} version {wanted}"))
                ),
                format!("sudo apt-get install -y {}", line(&pinned)),
            ]
        }
        Command::Pip {
            python,
            args,
            companions,
            ..
        } => {
            let mut all = python_words(python);
            all.extend([Word::lit("-m"), Word::lit("pip")]);
            all.extend(args.iter().cloned());
            let mut text = line(&all);
            if *companions {
                text.push_str(" \"${companions[@]}\"");
            }
            vec![text]
        }
        Command::Companions { python, dists } => {
            let py = line(&python_words(python));
            let names: Vec<String> = dists.iter().map(|d| shell_quote(d)).collect();
            vec![
                "companions=()".to_string(),
                format!(
                    "for dist in {}; do has_dist \"$dist\" '' '' {py} && companions+=(\"$dist\"); done",
                    names.join(" ")
                ),
            ]
        }
        Command::Say(text) => vec![format!("say {}", shell_quote(text))],
        Command::Landed {
            python,
            check,
            message,
        } => {
            let py = line(&python_words(python));
            let test = match check {
                Landed::TorchCuda => format!(
                    "{py} -c {} >/dev/null 2>&1",
                    shell_quote("import sys, torch; sys.exit(0 if torch.version.cuda else 1)")
                ),
                Landed::ExtraWheels { dist, extra } => format!(
                    "has_extra_wheels {} {} {py}",
                    shell_quote(dist),
                    shell_quote(extra)
                ),
            };
            vec![format!("{test} || fail {}", shell_quote(message))]
        }
    }
}

/// Every value a check passes to a program.
fn check_values(check: &Check) -> Vec<&str> {
    fn python(p: &Python) -> &str {
        match p {
            Python::Prefix(s) | Python::CondaEnv(s) => s,
        }
    }
    match check {
        Check::DpkgInstalled(v)
        | Check::Executable(v)
        | Check::CommandMissing(v)
        | Check::Missing(v)
        | Check::MokKeyKnown(v) => vec![v],
        Check::CondaEnvExists(v) => vec![v],
        Check::DpkgVersion {
            package,
            prefix,
            suffix,
        } => vec![package, prefix, suffix],
        Check::FileHasLine { path, line: text } | Check::FileContains { path, text } => {
            vec![path, text]
        }
        Check::PythonDist {
            python: p,
            dist,
            prefix,
            local,
        } => {
            let mut v = vec![python(p), dist.as_str(), prefix.as_str()];
            v.extend(local.as_deref());
            v
        }
        Check::CondaPackage {
            env,
            package,
            version,
        } => vec![env, package, version],
        Check::RebootPending | Check::RunningKernelHeaders => Vec::new(),
        Check::Any(list) | Check::All(list) => list.iter().flat_map(check_values).collect(),
    }
}

/// A check as a shell condition.
#[must_use]
pub fn check_text(check: &Check) -> String {
    match check {
        Check::DpkgInstalled(p) => format!("has_package {}", shell_quote(p)),
        Check::DpkgVersion {
            package,
            prefix,
            suffix,
        } => format!(
            "has_version {} {} {}",
            shell_quote(package),
            shell_quote(prefix),
            shell_quote(suffix)
        ),
        Check::FileHasLine { path, line } => format!(
            "grep -qsxF -- {} {}",
            shell_quote(line),
            word(&Word::path(path.clone()))
        ),
        Check::FileContains { path, text } => format!(
            "grep -qsF -- {} {}",
            shell_quote(text),
            word(&Word::path(path.clone()))
        ),
        Check::Executable(path) => format!("[ -x {} ]", word(&Word::path(path.clone()))),
        Check::Missing(path) => format!("[ ! -e {} ]", word(&Word::path(path.clone()))),
        // `--test-key` exits 1 when the key is known, so its status is kept out of pipefail.
        Check::MokKeyKnown(path) => format!(
            "{{ sudo mokutil --test-key {} 2>/dev/null || true; }} | grep -q ' is already '",
            word(&Word::path(path.clone()))
        ),
        Check::CommandMissing(name) => {
            format!("! command -v {} >/dev/null 2>&1", shell_quote(name))
        }
        Check::PythonDist {
            python,
            dist,
            prefix,
            local,
        } => format!(
            "has_dist {} {} {} {}",
            shell_quote(dist),
            shell_quote(prefix),
            shell_quote(local.as_deref().unwrap_or("")),
            line(&python_words(python))
        ),
        Check::CondaEnvExists(name) => format!("has_conda_env {}", shell_quote(name)),
        Check::CondaPackage {
            env,
            package,
            version,
        } => format!(
            "has_conda_package {} {} {}",
            shell_quote(env),
            shell_quote(package),
            shell_quote(version)
        ),
        Check::RebootPending => "[ \"$reboot_needed\" = 1 ]".to_string(),
        Check::RunningKernelHeaders => "has_package \"linux-headers-$kernel\"".to_string(),
        Check::Any(list) => group(list, " || "),
        Check::All(list) => group(list, " && "),
    }
}

fn group(list: &[Check], op: &str) -> String {
    match list {
        [] if op == " && " => "true".to_string(),
        [] => "false".to_string(),
        [one] => check_text(one),
        many => format!(
            "{{ {}; }}",
            many.iter().map(check_text).collect::<Vec<_>>().join(op)
        ),
    }
}

/// Which helper functions the steps use, so the script carries only those.
#[derive(Default)]
struct Uses(BTreeSet<&'static str>);

impl Uses {
    fn check(&mut self, check: &Check) {
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

    fn command(&mut self, command: &Command) {
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

const HELPERS: [(&str, &str); 9] = [
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

const PREAMBLE: &str = r#"set -euo pipefail

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

/// The target as it was asked, in the CLI's words.
fn asked(target: &Target) -> String {
    let flags = flags(target);
    if flags.is_empty() {
        "nothing named: fix what the doctor found".to_string()
    } else {
        flags
    }
}

/// The options that name the target (`--via pip --framework torch`), empty for none.
#[must_use]
pub fn flags(target: &Target) -> String {
    let mut parts = Vec::new();
    if let Some(via) = target.via {
        parts.push(format!("--via {}", via.as_str()));
    }
    if let Some(cuda) = &target.cuda {
        parts.push(format!("--cuda {cuda}"));
    }
    match target.driver {
        super::DriverChoice::Branch(b) => parts.push(format!("--driver {b}")),
        super::DriverChoice::Auto => parts.push("--driver auto".to_string()),
        super::DriverChoice::Keep => {}
    }
    if let Some(c) = target.cudnn {
        parts.push(format!("--cudnn {c}"));
    }
    if let Some(fw) = &target.framework {
        let extra = fw
            .extra
            .as_deref()
            .map(|e| format!("[{e}]"))
            .unwrap_or_default();
        let version = fw
            .version
            .as_deref()
            .map(|v| format!("=={v}"))
            .unwrap_or_default();
        parts.push(format!(
            "--framework {}",
            shell_quote(&format!("{}{extra}{version}", fw.name.as_str()))
        ));
    }
    if let Some(p) = &target.python {
        parts.push(format!("--python {p}"));
    }
    if let Some(e) = &target.env {
        parts.push(format!("--env {e}"));
    }
    if let Some(os) = &target.os {
        parts.push(format!("--os {os}"));
    }
    parts.join(" ")
}

fn push_comments(out: &mut String, text: &str, indent: &str) {
    for l in comment_lines(text, indent) {
        out.push_str(&l);
        out.push('\n');
    }
}

fn header(plan: &Plan) -> String {
    // Single quotes that keep `${PATH...}` and dpkg-query's `${Status}` literal are the point.
    let mut out = String::from("#!/usr/bin/env bash\n# shellcheck disable=SC2016\n");
    push_comments(
        &mut out,
        &format!(
            "gpu-doctor plan, made by gpu-doctor {} for the machine below. Read it before you run \
             it. Running it again is safe: every step first checks whether it is already done.",
            plan.tool_version
        ),
        " ",
    );
    out.push_str("#\n# Machine\n");
    for l in plan.machine.gpu_lines() {
        push_comments(&mut out, &l, "   ");
    }
    push_comments(
        &mut out,
        &format!("driver: {}", plan.machine.driver_line()),
        "   ",
    );
    push_comments(
        &mut out,
        &format!("system: {}", plan.machine.os_line()),
        "   ",
    );
    out.push_str("#\n# Target\n");
    push_comments(&mut out, &format!("asked: {}", asked(&plan.target)), "   ");
    for l in &plan.summary {
        push_comments(&mut out, l, "   ");
    }
    if !plan.addresses.is_empty() {
        out.push_str("#\n# Findings it fixes\n");
        for f in &plan.addresses {
            push_comments(&mut out, &format!("{}: {}", f.id, f.title), "   ");
        }
    }
    if !plan.leaves.is_empty() {
        out.push_str("#\n# Findings it leaves alone\n");
        for f in &plan.leaves {
            push_comments(&mut out, &format!("{}: {}", f.id, f.title), "   ");
            if let Some(fix) = &f.fix {
                push_comments(&mut out, &format!("fix: {fix}"), "     ");
            }
        }
    }
    out.push_str("#\n# It will not touch\n");
    for l in &plan.untouched {
        push_comments(&mut out, l, "   ");
    }
    if !plan.notes.is_empty() {
        out.push_str("#\n# Notes\n");
        for l in &plan.notes {
            push_comments(&mut out, l, "   ");
        }
    }
    if !plan.options.is_empty() {
        out.push_str("#\n# Options it leaves out (run the command to plan one)\n");
        for l in &plan.options {
            push_comments(&mut out, l, "   ");
        }
    }
    out.push_str("#\n# Steps\n");
    for (n, s) in plan.steps.iter().enumerate() {
        let mut flags = Vec::new();
        if s.needs_root {
            flags.push("root");
        }
        if s.reboot {
            flags.push("reboot");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        };
        push_comments(
            &mut out,
            &format!("{:>2}. {}: {}{flags}", n + 1, s.id(), s.title),
            "  ",
        );
    }
    out.push_str("#\n");
    push_comments(
        &mut out,
        "Run it with bash (or gpu-doctor plan --execute). It stops at the first failure and says \
         which steps were done and which were not.",
        " ",
    );
    out
}

fn step_block(out: &mut String, n: usize, step: &Step) {
    let rule = "-".repeat(WIDTH - 2);
    let _ = writeln!(out, "\n# {rule}");
    push_comments(
        out,
        &format!("Step {n}: {} ({})", step.title, step.id()),
        " ",
    );
    push_comments(out, &format!("Why: {}", step.why), " ");
    if !step.serves.is_empty() {
        let serves: Vec<String> = step.serves.iter().map(ToString::to_string).collect();
        push_comments(out, &format!("Serves: {}", serves.join(", ")), " ");
    }
    let _ = writeln!(
        out,
        "step {n} {} {}",
        shell_quote(&step.id()),
        shell_quote(&step.title)
    );
    if let Some(reason) = step_refusal(step) {
        let _ = writeln!(out, "refused {}", shell_quote(&reason));
        return;
    }
    let mut body = String::new();
    for c in &step.commands {
        for l in command_lines(c) {
            let _ = writeln!(body, "  {l}");
        }
    }
    if step.reboot {
        body.push_str("  reboot_needed=1\n");
    }
    body.push_str("  finished\n");
    if step.guards.is_empty() {
        for l in body.lines() {
            let _ = writeln!(out, "{}", l.trim_start());
        }
        return;
    }
    for (i, Guard { check, outcome }) in step.guards.iter().enumerate() {
        let kw = if i == 0 { "if" } else { "elif" };
        let _ = writeln!(out, "{kw} {}; then", check_text(check));
        match outcome {
            Outcome::Skip(reason) => {
                let _ = writeln!(out, "  skipped {}", shell_quote(reason));
            }
            Outcome::Fail(message) => {
                let _ = writeln!(out, "  fail {}", shell_quote(message));
            }
        }
    }
    out.push_str("else\n");
    out.push_str(&body);
    out.push_str("fi\n");
}

/// The whole script.
#[must_use]
pub fn render(plan: &Plan, options: &Options) -> String {
    let mut out = header(plan);
    out.push('\n');
    out.push_str(PREAMBLE);
    let _ = writeln!(
        out,
        "\n# Machine paths are written below this folder; empty means this machine's own /.\n\
         # shellcheck disable=SC2034 # (not every plan writes a file)\nroot={}",
        shell_quote(&options.root)
    );
    let ids: Vec<String> = plan.steps.iter().map(|s| shell_quote(&s.id())).collect();
    let _ = writeln!(out, "steps=({})", ids.join(" "));
    let mut uses = Uses::default();
    for s in &plan.steps {
        if step_refusal(s).is_some() {
            uses.0.insert("refused");
            continue;
        }
        s.guards.iter().for_each(|g| uses.check(&g.check));
        s.commands.iter().for_each(|c| uses.command(c));
    }
    for (name, text) in HELPERS {
        if uses.0.contains(name) {
            out.push('\n');
            out.push_str(text);
        }
    }
    if !plan.notes.is_empty() {
        out.push('\n');
        for note in &plan.notes {
            let _ = writeln!(out, "say {}", shell_quote(&format!("Note: {note}")));
        }
    }
    for (n, s) in plan.steps.iter().enumerate() {
        step_block(&mut out, n + 1, s);
    }
    out.push_str(
        "\nprintf '\\ngpu-doctor plan: all %s steps done.\\n' \"${#steps[@]}\"\n\
         if [ \"$reboot_needed\" = 1 ]; then\n  \
         say 'Reboot to finish (sudo reboot), then check with: gpu-doctor doctor && gpu-doctor smoke'\n\
         fi\n",
    );
    // Every value went through `shell_quote` or `comment_lines`; this last pass holds for
    // whatever a future step writes without them: no control character but line breaks and
    // tabs reaches the script (the plan JSON and text faces print it too).
    let mut script = String::with_capacity(out.len());
    for c in out.chars() {
        match c {
            '\n' | '\t' => script.push(c),
            c if c.is_control() => script.push('?'),
            c if crate::sanitize::is_invisible(c) => {
                script.push_str(&format!("<U+{:04X}>", u32::from(c)));
            }
            c => script.push(c),
        }
    }
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every control character (Cc), every invisible / format character gpu-doctor knows
    /// (`sanitize::is_invisible`: Cf and the other invisible ones), the line and paragraph
    /// separators.
    fn hostile_chars() -> Vec<char> {
        (0u32..=0x10_ffff)
            .filter_map(char::from_u32)
            .filter(|c| c.is_control() || crate::sanitize::is_invisible(*c))
            .collect()
    }

    /// #40: a user name, an environment path, a conda environment's name or an interpreter's
    /// prefix holding any such character is never written cleaned into a command: the
    /// command becomes the line that refuses it, which names the value cleaned, for people.
    #[test]
    fn values_that_would_need_cleaning_refuse_the_command() {
        let chars = hostile_chars();
        assert!(chars.len() > 200, "{}", chars.len());
        for c in chars {
            let commands = [
                Command::Run {
                    argv: vec![
                        Word::lit("usermod"),
                        Word::lit("-a"),
                        Word::lit("-G"),
                        Word::lit("render,video"),
                        Word::lit("--"),
                        Word::lit(format!("bd{c}4")),
                    ],
                    sudo: true,
                },
                Command::Run {
                    argv: vec![
                        Word::lit("python3"),
                        Word::lit("-m"),
                        Word::lit("venv"),
                        Word::path(format!("/home/u/ml{c}env")),
                    ],
                    sudo: false,
                },
                Command::Pip {
                    python: Python::Prefix(format!("/opt/venv{c}")),
                    args: vec![Word::lit("install"), Word::lit("torch")],
                    version: None,
                    companions: false,
                },
                Command::Pip {
                    python: Python::CondaEnv(format!("ml{c}")),
                    args: vec![Word::lit("install"), Word::lit("torch")],
                    version: None,
                    companions: false,
                },
                Command::WriteFile {
                    path: "/etc/profile.d/gpu-doctor-cuda.sh".to_string(),
                    lines: vec![format!("export PATH=/usr/local/cuda{c}/bin:$PATH")],
                },
            ];
            for command in &commands {
                let lines = command_lines(command);
                assert_eq!(lines.len(), 1, "{c:?}: {lines:?}");
                assert!(
                    lines[0].starts_with("refused 'refused: "),
                    "{c:?}: {lines:?}"
                );
                assert!(!lines[0].contains(c), "{c:?} shown raw: {lines:?}");
            }
        }
    }

    #[test]
    fn names_that_read_as_options_refuse_the_command_and_plain_ones_do_not() {
        let usermod = |name: &str| Command::Run {
            argv: vec![
                Word::lit("usermod"),
                Word::lit("-a"),
                Word::lit("-G"),
                Word::lit("render"),
                Word::lit("--"),
                Word::lit(name),
            ],
            sudo: true,
        };
        assert_eq!(
            command_lines(&usermod("bd4")),
            vec!["sudo usermod -a -G render -- bd4".to_string()]
        );
        assert!(
            command_lines(&usermod("-o"))
                .concat()
                .starts_with("refused ")
        );
        let conda = |name: &str| Command::Run {
            argv: vec![
                Word::lit("conda"),
                Word::lit("create"),
                Word::lit("-y"),
                Word::lit("-n"),
                Word::lit(name),
            ],
            sudo: false,
        };
        assert!(
            command_lines(&conda("-rf"))
                .concat()
                .starts_with("refused ")
        );
        assert_eq!(
            command_lines(&conda("ml")),
            vec!["conda create -y -n ml".to_string()]
        );
        // Quoting alone still serves values that need no cleaning.
        assert_eq!(
            command_lines(&conda("it's $HOME")),
            vec!["conda create -y -n 'it'\\''s $HOME'".to_string()]
        );
    }

    #[test]
    fn quoting_keeps_plain_words_and_neutralises_the_rest() {
        assert_eq!(shell_quote("cuda-toolkit-12-4"), "cuda-toolkit-12-4");
        assert_eq!(
            shell_quote("libnccl2=2.21.5-1+cuda12.4"),
            "libnccl2=2.21.5-1+cuda12.4"
        );
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("x; rm -rf /"), "'x; rm -rf /'");
        assert_eq!(shell_quote("$(touch /tmp/pwned)"), "'$(touch /tmp/pwned)'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("a\nb"), "'a\nb'");
        assert_eq!(shell_quote("`id`"), "'`id`'");
        assert_eq!(shell_quote("~root"), "'~root'");
        assert_eq!(shell_quote("=x"), "'=x'");
        assert_eq!(shell_quote("a\0b"), "'ab'");
        // Escape sequences cannot reach a terminal through the script.
        assert_eq!(shell_quote("a\u{1b}[2J\u{9b}b\r"), "'a?[2J?b?'");
    }

    /// Bash itself reads each quoted value back as exactly one argument, unchanged.
    #[test]
    fn bash_reads_hostile_values_back_unchanged() {
        let hostile = [
            "x; rm -rf /",
            "$(touch /tmp/gpu-doctor-pwned)",
            "`touch /tmp/gpu-doctor-pwned`",
            "quote ' and \" and \\",
            "new\nline",
            "${HOME}",
            "*",
            "-rf",
            " spaced ",
            "",
            "tab\there",
            "!event",
        ];
        let mut script = String::from("printf '%s\\0'");
        for h in hostile {
            script.push(' ');
            script.push_str(&shell_quote(h));
        }
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .output()
            .expect("bash");
        let got: Vec<String> = out
            .stdout
            .split(|b| *b == 0)
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
        assert_eq!(&got[..hostile.len()], hostile);
    }

    #[test]
    fn comments_cannot_be_ended_by_a_value() {
        let lines = comment_lines("GPU: evil\nrm -rf /\r$(id)", " ");
        assert!(lines.iter().all(|l| l.starts_with('#')), "{lines:?}");
        assert!(
            lines.iter().any(|l| l.contains("# rm -rf /?$(id)")),
            "{lines:?}"
        );
    }

    #[test]
    fn paths_go_below_root_and_relative_ones_cannot_be_options() {
        assert_eq!(word(&Word::path("/etc/x.conf")), "\"$root\"/etc/x.conf");
        assert_eq!(word(&Word::path("-rf")), "./-rf");
        assert_eq!(word(&Word::path("my env")), "'./my env'");
    }
}
