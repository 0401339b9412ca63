//! The list/detail scaffold the list screens share (Diagnosis, GPUs, Drivers & CUDA,
//! Frameworks, and Plan's preview): a list pane, focused unless the detail is, titled with the
//! filter, its selected row kept in view by the table's own scrolling; and a detail pane with
//! the selected row in full, scrolled with the cursor. One component, so the screens cannot
//! drift in how focus, filtering and scrolling look.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, StatefulWidget, Table, TableState, Widget};

use super::{detail_focused, list_title, pane};
use crate::tui::state::State;
use crate::tui::theme::Theme;

/// The list pane: `table` in a pane named `name` (with the filter, and `suffix` after it),
/// the cursor's row selected.
pub(super) fn list(
    s: &State,
    t: Theme,
    name: &str,
    suffix: Option<&str>,
    table: Table<'_>,
    area: Rect,
    buf: &mut Buffer,
) {
    let mut title = list_title(s, name);
    if let Some(suffix) = suffix {
        title.push_str(" · ");
        title.push_str(suffix);
    }
    let table = table.block(pane(title, !detail_focused(s), t));
    let mut state = TableState::default().with_selected(Some(s.cursor().selected));
    StatefulWidget::render(table, area, buf, &mut state);
}

/// The detail pane: the lines `body` writes for the pane's inner width, in a pane named
/// `title`, scrolled with the cursor.
pub(super) fn detail(
    s: &State,
    t: Theme,
    title: &str,
    area: Rect,
    buf: &mut Buffer,
    body: impl FnOnce(u16) -> Vec<Line<'static>>,
) {
    let block = pane(title, detail_focused(s), t);
    let inner = block.inner(area);
    block.render(area, buf);
    Paragraph::new(body(inner.width))
        .scroll((s.cursor().scroll, 0))
        .render(inner, buf);
}
