//! The list/detail scaffold the list screens share (Diagnosis, GPUs, Drivers & CUDA,
//! Frameworks, and Plan's preview): a list pane, focused unless the detail is, titled with the
//! filter, its selected row kept in view by the table's own scrolling; and a detail pane with
//! the selected row in full, scrolled with the cursor. One component, so the screens cannot
//! drift in how focus, filtering and scrolling look.
//!
//! The list is a [`DataTable`] (bottom's `data_table` is the model): a screen names its columns
//! as an enum implementing [`Column`] (header and width) and maps an item and a column to a
//! cell; building the rows, marking the cursor's, the header and the pane are done here.
//! Adding a table is an enum, its `Column` impl and a cell function.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, StatefulWidget, Table, TableState, Widget};

use super::{detail_focused, list_title, pane};
use crate::tui::state::State;
use crate::tui::theme::Theme;

/// One column of a list screen's table. Each table is an enum of its columns; a variant may
/// carry what its header or width depends on (the GPUs' "CC" or "Target").
pub(super) trait Column: Copy {
    /// The header text (empty for a column of marks).
    fn header(self) -> &'static str;
    /// How wide the column is.
    fn width(self) -> Constraint;
}

/// A list pane as a table: its columns in order, whether it shows their headers, and the pane's
/// name (with the filter, and `suffix` after it).
pub(super) struct DataTable<'a, C> {
    pub name: &'a str,
    pub suffix: Option<&'a str>,
    pub columns: &'a [C],
    pub header: bool,
}

impl<C: Column> DataTable<'_, C> {
    /// Draws `items` one row each, `cell(item, column)` for each column; an item comes with its
    /// row number, which marks it when it is the cursor's.
    pub(super) fn render<'c, T>(
        &self,
        s: &State,
        t: Theme,
        items: impl IntoIterator<Item = (usize, T)>,
        cell: impl Fn(&T, C) -> Cell<'c>,
        area: Rect,
        buf: &mut Buffer,
    ) {
        let selected = s.cursor().selected;
        let rows: Vec<Row> = items
            .into_iter()
            .map(|(i, item)| {
                let row = Row::new(self.columns.iter().map(|&c| cell(&item, c)));
                t.mark_selected(row, i == selected)
            })
            .collect();
        let mut table = Table::new(rows, self.columns.iter().map(|c| c.width()));
        if self.header {
            table = table.header(Row::new(self.columns.iter().map(|c| c.header())).style(t.dim()));
        }
        list(s, t, self.name, self.suffix, table, area, buf);
    }
}

/// The list pane: `table` in a pane named `name` (with the filter, and `suffix` after it),
/// the cursor's row selected.
fn list(
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
