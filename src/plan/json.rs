//! `plan --json`: the plan as data, for tools that review or apply plans themselves. The same
//! [`Plan`] the script is rendered from; checks and commands appear as the shell text the
//! script runs (with `$root` empty), so the two cannot disagree. Versioned with
//! [`SCHEMA_VERSION`]; additions keep the number. Pure.

use serde::Serialize;

use super::cmd::Outcome;
use super::machine::Machine;
use super::shell::{check_text, command_lines, shell_quote, step_refusal};
use super::{FindingNote, Plan, PlanFile, Serves, Target};

/// Bumped when a key changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct JsonPlan<'a> {
    schema_version: u32,
    tool_version: &'a str,
    machine: &'a Machine,
    target: &'a Target,
    summary: &'a [String],
    addresses: &'a [FindingNote],
    leaves: &'a [FindingNote],
    untouched: &'a [String],
    notes: &'a [String],
    options: &'a [String],
    reboot: bool,
    steps: Vec<JsonStep<'a>>,
    files: &'a [PlanFile],
}

#[derive(Serialize)]
struct JsonStep<'a> {
    id: std::borrow::Cow<'static, str>,
    title: &'a str,
    why: &'a str,
    needs_root: bool,
    reboot: bool,
    /// The finding ids the step fixes, or `request: ...`.
    serves: &'a [Serves],
    guards: Vec<JsonGuard<'a>>,
    /// Shell lines, in order.
    commands: Vec<String>,
    /// Why the step is refused (a value it names would need cleaning, or a name reads as an
    /// option): then its only line is the one that stops the plan, as in the script, and no
    /// guard or command shows the value.
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<String>,
}

#[derive(Serialize)]
struct JsonGuard<'a> {
    /// The shell condition.
    check: String,
    /// `skip` or `fail` when the condition holds.
    outcome: &'static str,
    message: &'a str,
}

/// A guard as its shell condition and what follows when it holds.
fn json_guard(g: &super::cmd::Guard) -> JsonGuard<'_> {
    let (outcome, message) = match &g.outcome {
        Outcome::Skip(m) => ("skip", m.as_str()),
        Outcome::Fail(m) => ("fail", m.as_str()),
    };
    JsonGuard {
        check: check_text(&g.check),
        outcome,
        message,
    }
}

/// The plan as pretty JSON, with a final newline.
#[must_use]
pub fn render(plan: &Plan) -> String {
    let steps = plan
        .steps
        .iter()
        .map(|s| {
            // A refused step is, as in the script, only the line that stops the plan.
            let refused = step_refusal(s);
            let (guards, commands) = match &refused {
                Some(reason) => (Vec::new(), vec![format!("refused {}", shell_quote(reason))]),
                None => (
                    s.guards.iter().map(json_guard).collect(),
                    s.commands.iter().flat_map(command_lines).collect(),
                ),
            };
            JsonStep {
                id: s.id(),
                title: &s.title,
                why: &s.why,
                needs_root: s.needs_root,
                reboot: s.reboot,
                serves: &s.serves,
                guards,
                commands,
                refused,
            }
        })
        .collect();
    let json = JsonPlan {
        schema_version: SCHEMA_VERSION,
        tool_version: &plan.tool_version,
        machine: &plan.machine,
        target: &plan.target,
        summary: &plan.summary,
        addresses: &plan.addresses,
        leaves: &plan.leaves,
        untouched: &plan.untouched,
        notes: &plan.notes,
        options: &plan.options,
        reboot: plan.reboots(),
        steps,
        files: &plan.files,
    };
    let mut text = serde_json::to_string_pretty(&json).unwrap_or_else(|e| {
        format!(
            "{{\"error\": {}}}",
            serde_json::Value::String(e.to_string())
        )
    });
    text.push('\n');
    crate::sanitize::json_controls(text)
}
