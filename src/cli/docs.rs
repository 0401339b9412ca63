//! Documents generated from the clap definitions in [`crate::cli`], so they never drift from
//! the real options: shell completion scripts (clap_complete) and man pages (clap_mangen).
//!
//! Side effects: [`write_man_pages`] writes into the folder it is given; the rest is pure.

use std::path::Path;

/// The binary's name as users type it.
const BIN: &str = "gpu-doctor";

/// The completion script for `shell`.
#[must_use]
pub(crate) fn completions(shell: super::CompletionShell) -> String {
    use super::CompletionShell as S;
    use clap_complete::Shell;
    let mut command = super::command_documented();
    let mut out = Vec::new();
    match shell {
        S::Bash => clap_complete::generate(Shell::Bash, &mut command, BIN, &mut out),
        S::Zsh => clap_complete::generate(Shell::Zsh, &mut command, BIN, &mut out),
        S::Fish => clap_complete::generate(Shell::Fish, &mut command, BIN, &mut out),
        S::Elvish => clap_complete::generate(Shell::Elvish, &mut command, BIN, &mut out),
        S::Powershell => clap_complete::generate(Shell::PowerShell, &mut command, BIN, &mut out),
        S::Nushell => {
            clap_complete::generate(clap_complete_nushell::Nushell, &mut command, BIN, &mut out);
        }
    }
    let script = String::from_utf8_lossy(&out).into_owned();
    if shell == S::Bash {
        // clap_complete 4.6's bash script spells the state of a hyphenated binary two ways:
        // the loop that walks the words sets `gpu__doctor__subcmd__check`, the arms that offer
        // a subcommand's options match `gpu__subcmd__doctor__subcmd__check`, so no subcommand
        // option or value ever completes (clap-rs/clap#6421, open). Spell the arms the loop's
        // way; the bash completion test in tests/it/conventions.rs fails if this goes wrong.
        let wrong = BIN.replace('-', "__subcmd__");
        let right = BIN.replace('-', "__");
        return script.replace(&wrong, &right);
    }
    script
}

/// Every man page: `gpu-doctor.1`, then one per visible subcommand at any depth
/// (`gpu-doctor-report-merge.1`), as (file name, roff text), in command order.
#[must_use]
pub(crate) fn man_pages() -> Vec<(String, String)> {
    let command = super::command_documented();
    let mut pages = Vec::new();
    collect(&command, BIN, BIN, &mut pages);
    pages
}

/// Adds `command`'s page, named `name` (`gpu-doctor-report-merge`), whose SYNOPSIS starts with
/// what a user types (`typed`: `gpu-doctor report merge`), then its subcommands' pages.
fn collect(command: &clap::Command, name: &str, typed: &str, pages: &mut Vec<(String, String)>) {
    let page = command
        .clone()
        .name(name.to_string())
        .bin_name(typed.to_string());
    let mut roff = Vec::new();
    // Rendering into a Vec cannot fail for lack of space; an error here would be clap's bug.
    if clap_mangen::Man::new(page)
        .title(name.to_uppercase())
        .section("1")
        .manual("gpu-doctor manual")
        .render(&mut roff)
        .is_ok()
    {
        pages.push((
            format!("{name}.1"),
            String::from_utf8_lossy(&roff).into_owned(),
        ));
    }
    for sub in command.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        collect(
            sub,
            &format!("{name}-{}", sub.get_name()),
            &format!("{typed} {}", sub.get_name()),
            pages,
        );
    }
}

/// `gpu-doctor man --out DIR`: writes every page into DIR (made if missing) and names them on
/// stderr with `-v`.
///
/// # Errors
/// What could not be made or written.
pub(crate) fn write_man_pages(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    for (name, roff) in man_pages() {
        crate::outfile::replace(&dir.join(&name), &roff)?;
        crate::term::verbose(&format!("wrote {}", dir.join(&name).display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_subcommand_has_a_page_and_help_none() {
        let names: Vec<String> = man_pages().into_iter().map(|(n, _)| n).collect();
        for expected in [
            "gpu-doctor.1",
            "gpu-doctor-doctor.1",
            "gpu-doctor-check.1",
            "gpu-doctor-smoke.1",
            "gpu-doctor-report-merge.1",
            "gpu-doctor-completions.1",
            "gpu-doctor-manifest-update.1",
            "gpu-doctor-man.1",
        ] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} in {names:?}"
            );
        }
        assert!(!names.iter().any(|n| n.contains("-help")), "{names:?}");
    }

    #[test]
    fn pages_carry_the_options_of_their_command() {
        let pages = man_pages();
        let page = |name: &str| {
            pages
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, r)| r.clone())
                .unwrap_or_default()
        };
        let check = page("gpu-doctor-check.1");
        assert!(check.starts_with(".ie \\n(.g .ds Aq"), "{check:.80}");
        assert!(check.contains(".TH GPU-DOCTOR-CHECK 1"), "{check:.400}");
        assert!(check.contains("fail\\-on"), "check's page lists --fail-on");
        assert!(
            page("gpu-doctor.1").contains("\\-\\-root"),
            "global options on the main page"
        );
    }

    #[test]
    fn pages_have_a_name_a_description_and_the_typed_synopsis() {
        let pages = man_pages();
        let page = |name: &str| {
            pages
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, r)| r.clone())
                .unwrap_or_default()
        };
        // The section after `.SH NAME` / `.SH SYNOPSIS` / `.SH DESCRIPTION`, up to the next.
        let section = |roff: &str, title: &str| -> String {
            roff.split(&format!(".SH {title}\n"))
                .nth(1)
                .and_then(|rest| rest.split("\n.SH ").next())
                .unwrap_or_default()
                .to_string()
        };
        let top = page("gpu-doctor.1");
        assert!(
            section(&top, "NAME").contains("gpu\\-doctor \\- Finds out why a GPU"),
            "{top:.600}"
        );
        assert!(
            section(&top, "DESCRIPTION").contains("reads files"),
            "{top:.1500}"
        );
        let synopsis = section(&top, "SYNOPSIS");
        assert!(synopsis.starts_with("\\fBgpu\\-doctor\\fR"), "{synopsis}");
        let merge = section(&page("gpu-doctor-report-merge.1"), "SYNOPSIS");
        assert!(
            merge.starts_with("\\fBgpu\\-doctor report merge\\fR"),
            "{merge}"
        );
        // Every option keeps its text on a subcommand's page (none hidden as in `-h`).
        let check = page("gpu-doctor-check.1");
        assert!(check.contains("Say less on stderr"), "{check}");
        for (name, roff) in &pages {
            assert!(
                !section(roff, "NAME").trim().ends_with("\\-"),
                "{name}: empty NAME"
            );
        }
    }

    #[test]
    fn completions_name_the_subcommands_for_each_shell() {
        for shell in [
            super::super::CompletionShell::Bash,
            super::super::CompletionShell::Zsh,
            super::super::CompletionShell::Fish,
            super::super::CompletionShell::Nushell,
        ] {
            let script = completions(shell);
            for word in ["doctor", "check", "merge", "--fail-on", "prometheus"] {
                assert!(script.contains(word), "{shell:?}: {word} missing");
            }
        }
    }
}
