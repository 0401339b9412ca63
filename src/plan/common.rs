//! Steps both planners write: the package that sets up a vendor's apt repository
//! (`cuda-keyring` for NVIDIA, `amdgpu-install` for AMD), fetched with wget from the vendor and
//! installed; the `apt-get update` that lets apt see what the repository offers; and
//! `apt-get install -y`. One builder, so the two plans fetch, guard and install the same way;
//! what differs is a parameter. Pure.

use super::cmd::{Check, Command, Guard, Word, words};
use super::{Step, StepKind};

/// A vendor's repository-setup package, as a step: fetched from `url` into the script's
/// temporary folder, installed, and skipped when `installed` holds.
pub(super) struct RepoPackage {
    pub kind: StepKind,
    pub title: String,
    pub why: String,
    /// The `.deb`'s file name, and the folder URL it is fetched from (ending in `/`).
    pub deb: String,
    pub folder: String,
    /// When the step has nothing to do, and the words the script says then.
    pub installed: Check,
    pub installed_says: String,
    /// How the fetched file is installed: `dpkg -i` for a package with no dependencies
    /// (`cuda-keyring`), `apt-get install -y` for one that has some (`amdgpu-install`).
    pub install_with: &'static [&'static str],
    /// Whether the package lists are read again in this step (AMD's installer step does; the
    /// NVIDIA plan has an `apt-update` step of its own, [`apt_update`]).
    pub then_update: bool,
}

impl RepoPackage {
    pub(super) fn step(self) -> Step {
        let url = format!("{}{}", self.folder, self.deb);
        let file = Word::Join(vec![Word::Var("tmp"), Word::lit(format!("/{}", self.deb))]);
        let mut install = words(self.install_with.iter().copied());
        install.push(file.clone());
        let mut commands = vec![
            Command::Run {
                argv: vec![Word::lit("wget"), Word::lit("-qO"), file, Word::lit(&url)],
                sudo: false,
            },
            Command::Run {
                argv: install,
                sudo: true,
            },
        ];
        if self.then_update {
            commands.push(apt_update());
        }
        Step {
            kind: self.kind,
            title: self.title,
            why: self.why,
            guards: vec![
                Guard::skip(self.installed, self.installed_says),
                Guard::fail(
                    Check::CommandMissing("wget".to_string()),
                    format!("wget is needed to fetch {url}; install it and run the plan again"),
                ),
            ],
            commands,
            needs_root: true,
            reboot: false,
            serves: Vec::new(),
        }
    }
}

/// `sudo apt-get update`: apt reads the package lists again, the new repository's included.
pub(super) fn apt_update() -> Command {
    Command::Run {
        argv: words(["apt-get", "update"]),
        sudo: true,
    }
}

/// `sudo apt-get install -y` the packages, in the order given.
pub(super) fn apt_install(packages: &[String]) -> Command {
    let mut argv = words(["apt-get", "install", "-y"]);
    argv.extend(packages.iter().map(|p| Word::lit(p.clone())));
    Command::Run { argv, sudo: true }
}
