//! Owning the terminal: raw mode, the alternate screen, mouse-wheel reporting and bracketed
//! paste (a pasted traceback arrives as one text, not as keys whose newlines would press
//! Enter) on the way in, and all four undone on the way out, whether the app quits, returns
//! an error or panics.
//!
//! `ratatui::init` would do most of this, but it panics without a TTY and does not turn on the
//! mouse, so the steps are spelled out here with `try` semantics. Only wheel and button reports
//! are requested (xterm modes 1000 and 1006), not every mouse movement (1003, which crossterm's
//! `EnableMouseCapture` adds): an idle app should not wake each time the pointer crosses it.

use std::fmt;
use std::io::{self, Stdout, stdout};
use std::panic::{self, PanicHookInfo};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::Command;
use crossterm::cursor::{MoveTo, Show};
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::execute;
use crossterm::style::ResetColor;
use crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Button and wheel reports in SGR encoding (xterm modes 1000 and 1006).
struct EnableWheel;
/// Turns [`EnableWheel`] off again.
struct DisableWheel;

impl Command for EnableWheel {
    fn write_ansi(&self, f: &mut impl fmt::Write) -> fmt::Result {
        f.write_str("\x1b[?1000h\x1b[?1006h")
    }
}

impl Command for DisableWheel {
    fn write_ansi(&self, f: &mut impl fmt::Write) -> fmt::Result {
        f.write_str("\x1b[?1006l\x1b[?1000l")
    }
}

/// The terminal while the TUI owns it; dropping it gives the terminal back.
pub(super) struct Guard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
    previous_hook: Arc<Hook>,
}

impl Guard {
    /// Takes the terminal over. The panic hook goes in first, so a failure half-way still
    /// leaves a usable terminal.
    ///
    /// # Errors
    /// When the terminal refuses raw mode or the escape sequences cannot be written.
    pub(super) fn enter() -> io::Result<Guard> {
        let previous_hook = install_hook();
        TAKEN.store(true, Ordering::SeqCst);
        let entered = enable_raw_mode()
            .and_then(|()| {
                execute!(
                    stdout(),
                    EnterAlternateScreen,
                    EnableWheel,
                    EnableBracketedPaste
                )
            })
            .and_then(|()| Terminal::new(CrosstermBackend::new(stdout())));
        match entered {
            Ok(terminal) => Ok(Guard {
                terminal,
                previous_hook,
            }),
            Err(e) => {
                let _ = restore();
                reinstate(previous_hook);
                Err(e)
            }
        }
    }
}

impl Guard {
    /// Gives the terminal back for a while (sudo asks for a password on it), runs `f`, and
    /// takes it over again with a full redraw next frame.
    ///
    /// # Errors
    /// When the terminal cannot be taken over again.
    pub(super) fn suspended<T>(&mut self, f: impl FnOnce() -> T) -> io::Result<T> {
        let _ = restore();
        let out = f();
        TAKEN.store(true, Ordering::SeqCst);
        enable_raw_mode()?;
        execute!(
            stdout(),
            EnterAlternateScreen,
            EnableWheel,
            EnableBracketedPaste
        )?;
        self.terminal.clear()?;
        Ok(out)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = restore();
        // std refuses to change the hook while a thread unwinds, and a panic inside this drop
        // would abort the process; after a panic the hook has restored the terminal already
        // and the process is on its way out.
        if !std::thread::panicking() {
            reinstate(Arc::clone(&self.previous_hook));
        }
    }
}

/// Whether the terminal is ours right now. Giving it back twice is not harmless: leaving the
/// alternate screen again restores the cursor saved on entry, so text printed in between (a
/// panic message) would be overwritten.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Gives the terminal back, once: cooked mode, the main screen, no mouse reports, a visible
/// cursor. Every step is tried even when an earlier one fails.
pub(super) fn restore() -> io::Result<()> {
    if !TAKEN.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let raw = disable_raw_mode();
    // The alternate screen is cleared before it is left: a terminal that resized it (tmux
    // after a window resize) or has none can otherwise show the app's last frame, box borders
    // and all, on the shell's screen after quitting.
    let screen = execute!(
        stdout(),
        DisableBracketedPaste,
        DisableWheel,
        ResetColor,
        Clear(ClearType::All),
        MoveTo(0, 0),
        LeaveAlternateScreen,
        Show
    );
    raw.and(screen)
}

/// A panic on the UI thread restores the terminal before the message is printed, so the
/// message lands on the user's screen and not in the alternate one that is about to vanish.
/// Panics on other threads (the TUI's workers, the probes' threads) are caught where they
/// happen and reported in the app; printing them would scribble over the screen.
fn install_hook() -> Arc<Hook> {
    let previous: Arc<Hook> = Arc::new(panic::take_hook());
    let ui = std::thread::current().id();
    let chained = Arc::clone(&previous);
    panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == ui {
            let _ = restore();
            chained(info);
        }
    }));
    previous
}

fn reinstate(previous: Arc<Hook>) {
    let _ = panic::take_hook();
    panic::set_hook(Box::new(move |info| previous(info)));
}
