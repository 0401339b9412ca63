//! Where a binding applies: the states of the TUI the keymap's `when` column names (typing a
//! filter, the Plan screen with a run going, a detail open).

use crate::tui::state::{Focus, Mode, State, Tab};

pub(super) fn always(_: &State) -> bool {
    true
}
pub(super) fn normal(s: &State) -> bool {
    s.mode == Mode::Normal
}
pub(super) fn normal_or_help(s: &State) -> bool {
    matches!(s.mode, Mode::Normal | Mode::Help)
}
pub(super) fn help(s: &State) -> bool {
    s.mode == Mode::Help
}
pub(super) fn typing(s: &State) -> bool {
    matches!(s.mode, Mode::Filter | Mode::SavePath | Mode::ExplainInput)
}
pub(super) fn explained(s: &State) -> bool {
    s.mode == Mode::Explained
}
pub(super) fn scrolls(s: &State) -> bool {
    normal_or_help(s) || explained(s)
}
pub(super) fn diagnosis(s: &State) -> bool {
    normal(s) && s.tab == Tab::Diagnosis && s.report.is_some()
}
pub(super) fn saving_path(s: &State) -> bool {
    s.mode == Mode::SavePath
}
pub(super) fn confirming(s: &State) -> bool {
    s.mode == Mode::ConfirmOverwrite
}
pub(super) fn plan_fields(s: &State) -> bool {
    normal(s) && s.tab == Tab::Plan && s.focus == Focus::List
}
pub(super) fn smoke_screen(s: &State) -> bool {
    normal(s) && s.tab == Tab::Smoke && s.smoke_unavailable().is_none()
}
pub(super) fn overview(s: &State) -> bool {
    normal(s) && s.tab == Tab::Overview && s.report.as_ref().is_some_and(|r| !r.findings.is_empty())
}
pub(super) fn plan_screen(s: &State) -> bool {
    normal(s) && s.tab == Tab::Plan
}
fn plan_running(s: &State) -> bool {
    s.plan
        .run
        .as_ref()
        .is_some_and(crate::tui::run::PlanRun::active)
}
pub(super) fn plan_idle(s: &State) -> bool {
    plan_screen(s) && !plan_running(s) && s.plan.run.is_none()
}
pub(super) fn plan_ended(s: &State) -> bool {
    plan_screen(s) && s.plan.run.as_ref().is_some_and(|r| !r.active())
}
pub(super) fn plan_stoppable(s: &State) -> bool {
    plan_screen(s) && plan_running(s)
}
pub(super) fn confirming_run(s: &State) -> bool {
    s.mode == Mode::ConfirmRun
}
pub(super) fn quit_while_running(s: &State) -> bool {
    normal(s) && plan_running(s)
}
pub(super) fn filterable(s: &State) -> bool {
    normal(s) && s.tab.filterable()
}
pub(super) fn back_useful(s: &State) -> bool {
    normal(s)
        && (s.focus == Focus::Detail
            || !s.cursor().filter.is_empty()
            || s.status.is_some()
            || plan_ended(s))
}
pub(super) fn opens_detail(s: &State) -> bool {
    normal(s) && !matches!(s.tab, Tab::Overview | Tab::Smoke) && s.focus == Focus::List
}
