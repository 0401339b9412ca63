//! `gpu-doctor manifest` subcommands and options.

use std::path::PathBuf;

/// `gpu-doctor manifest` actions.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum ManifestCommand {
    /// The manifest set in use (built in or downloaded): its version, date, and each file's
    /// source and row count.
    Show {
        /// Print JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Download a newer signed manifest set and install it for this user.
    #[command(
        after_help = "Exit codes: 0 installed, or already up to date; 1 the download was \
refused or failed (the set in use is unchanged); 2 usage error (URL, key file, config file)."
    )]
    Update(UpdateArgs),
    /// Check the installed set against its signed index: signature, sizes, sha256, and that
    /// it loads and validates. Exit 1 when it does not.
    Verify {
        /// Trust the public keys in FILE (one a line); repeat to trust several files, e.g. the
        /// old and the new key during a rotation. Required: no key is built in.
        #[arg(long, value_name = "FILE")]
        pubkey: Vec<PathBuf>,
        /// Print the outcome as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Write the manifest files with a signed index into OUTDIR (scripts/publish-manifests.sh).
    #[command(hide = true)]
    Publish {
        /// The folder to write (created if missing).
        #[arg(value_name = "OUTDIR")]
        out: PathBuf,
        /// The folder holding the manifest files.
        #[arg(long, value_name = "DIR", default_value = "manifests")]
        from: PathBuf,
        /// The secret key file (ed25519 seed, hex or base64); without it, a throw-away key
        /// signs and its public key is left in OUTDIR.
        #[arg(long, value_name = "FILE")]
        key: Option<PathBuf>,
    },
    /// Make a signing key pair: `SECRET_FILE` (mode 0600) and its `.pub` next to it.
    #[command(hide = true)]
    Keygen {
        #[arg(value_name = "SECRET_FILE")]
        secret: PathBuf,
    },
}

/// `manifest update` options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct UpdateArgs {
    /// Where to download from: the https URL of the folder holding index.json, or a local
    /// folder.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Never use the network: install from a local folder given with --url.
    #[arg(long)]
    pub offline: bool,
    /// Trust the public keys in FILE (one a line): the publisher's key file. Repeat to trust
    /// several files, e.g. the old and the new key during a rotation. Required until the
    /// project publishes sets: no key is built in.
    #[arg(long, value_name = "FILE")]
    pub pubkey: Vec<PathBuf>,
    /// Seconds allowed to connect to the server.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub connect_timeout: f64,
    /// Seconds allowed for the whole download.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub max_time: f64,
    /// Print the outcome as JSON on stdout, and nothing on stderr.
    #[arg(long)]
    pub json: bool,
}
