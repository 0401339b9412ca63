//! What `gpu-doctor explain` made of an error text: the messages it recognised and the
//! finding on this machine that explains them. Joins the report as `explain` (absent from
//! every other command's report).
//!
//! # JSON contract
//! `explain.text`, `explain.signatures[].id`, `explain.signatures[].matched` and
//! `explain.cause` are the public interface; the rest says why, and may grow.
//! `signatures` lists the first signature explained (the first fatal message of the text,
//! else the first message) first, then the others in the order the text shows them; each
//! signature appears once, with how often it matched. `matched` is a verbatim slice of
//! `text`. `cause` is a finding ID of this report's `findings`, or null when no finding on
//! this machine explains the text.

use serde::{Deserialize, Serialize};

/// The answer to one error text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Explain {
    /// The text as read and cleaned: escape sequences (colours), carriage returns and other
    /// control characters removed, everything else verbatim. Over 64 KiB, only the lines
    /// around each recognised message, each left-out stretch marked `[... N lines left out ...]`
    /// (`text_cut` is then true).
    pub text: String,
    /// `text` is an excerpt of what was read.
    pub text_cut: bool,
    /// Bytes read from the arguments, the log file or standard input.
    pub bytes_read: u64,
    /// Lines read (of the text before any excerpt was taken: a 100,000-line log is 100,000
    /// lines even when `text` is an excerpt of it).
    #[serde(default)]
    pub lines_read: u64,
    /// How the input was shortened before it was read whole (a log over the size limit is read
    /// as its head and its tail); null when it was read whole.
    pub input_cut: Option<String>,
    /// The width at which a terminal hard-wrapped the text (every line of the widest length
    /// was joined to the next before matching); null when the text was not wrapped.
    pub wrap_width: Option<u32>,
    /// The messages recognised, the first explained first (see the module's documentation).
    pub signatures: Vec<Signature>,
    /// The finding on this machine that explains the text (the first signature's cause, else
    /// the first other signature that has one); null when none does.
    pub cause: Option<String>,
    /// The signature whose cause `cause` is; null with `cause`.
    pub cause_for: Option<String>,
}

/// One recognised message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// The row of `manifests/errors.toml` ("cuda-no-kernel-image").
    pub id: String,
    /// The part of the text the signature recognised, verbatim (line breaks included when a
    /// terminal wrapped it).
    pub matched: String,
    /// The line of `text` where it starts (1 is the first); the first occurrence.
    pub line: u32,
    /// How many times the text has it.
    pub count: u32,
    /// What prints it ("torch", "cuda", "loader", "xid", ...).
    pub family: String,
    /// Where the message comes from: the library, file or function that prints it.
    pub printed_by: String,
    /// It stops the program, rather than warning.
    pub fatal: bool,
    /// The message is the program's, the cluster's or the installer's own, never a fault of
    /// this machine unless `cause` names a finding (errors.toml's `not_the_machine`).
    #[serde(default)]
    pub not_the_machine: bool,
    /// What it means.
    pub meaning: String,
    /// The finding IDs that can cause it, as the table lists them.
    pub causes: Vec<String>,
    /// The finding on this machine that explains this message; null when none does.
    pub cause: Option<String>,
    /// What the message says set against this machine ("the message is about sm_120; this
    /// machine's GPUs are 9.0"), and advice worked out for it (what fits in memory).
    pub notes: Vec<String>,
    /// Which facts decide between the causes.
    pub decide: String,
    /// What else causes it that this machine's files cannot show.
    pub elsewhere: Vec<Elsewhere>,
    /// Which gpu-doctor check would tell ("doctor --deep: ...").
    pub checks: Vec<String>,
    /// The standard fix when no finding names one.
    pub fix: String,
}

/// A cause beyond this machine's files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Elsewhere {
    /// "another machine or node", "another Python environment, container image or install",
    /// "only while the program runs", "the GPU, its memory or its link", "the program or a
    /// library it built".
    pub kind: String,
    pub text: String,
}
