//! Progress on stderr for a person waiting on a long command: `condense run` with an LLM or on a
//! big file, `eval` over many cases, `replay` of a long session.
//!
//! `condense eval: 3 of 12 · native on session.json · claude-haiku-4-5: 812 characters in · 4 s`
//!
//! One line, rewritten in place (`\r`), that says which step the command is at and how long it
//! has run. It appears only once the command has taken a second (quick work shows nothing) and
//! only when stderr is a terminal: a log, a pipe or a file behind stderr never gets a byte of it.
//! It is cleared before the command prints its report or a failure, so it leaves nothing behind.
//! It has no colour (so `NO_COLOR` has nothing to turn off); with `TERM=dumb` it is cleared by
//! writing spaces over it instead of the `ESC [ K` escape, and `$COLUMNS` (80 when unset) bounds
//! its width so that it never wraps. A command waiting for a person's input on stdin shows none.
//!
//! The core has no clock and reports no progress of its own: the command names each step
//! ([`Progress::step`]), a wrapper around the LLM ([`Progress::watch`]) says when the model is
//! asked and how much of its answer has come, and a thread of this module redraws the line every
//! tenth of a second while the main thread is blocked in the core. What is drawn is decided by
//! [`Line`], which takes the time as an argument, so its tests use no clock at all.

use std::cell::Cell;
use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use condense_cli::native::NativeClock;
use condense_core::AbortSignal;
use condense_core::Clock;
use condense_core::error::LlmError;
use condense_core::llm::{
    LlmProfile, LlmProvider, ModelUse, PromptAdapter, PromptBundle, ProviderCapabilities, ProviderResponse,
    StreamEvent, Usage,
};
use condense_core::providers::thousands;
use futures::StreamExt;
use futures::stream::LocalBoxStream;

/// A file as the line names it: its name without its folders (the line is short), `-` as it is.
pub(crate) fn name(file: &str) -> &str {
    std::path::Path::new(file).file_name().and_then(|n| n.to_str()).unwrap_or(file)
}

/// How long a command runs before its progress is shown, in milliseconds.
const DELAY_MS: f64 = 1000.0;

/// How often the line is redrawn while the command works.
const TICK: Duration = Duration::from_millis(100);

/// How the line is drawn on this terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Style {
    /// The widest line drawn, in characters: one less than the terminal's columns, so that the
    /// cursor never wraps to a second row `\r` cannot return from.
    pub(crate) width: usize,
    /// Whether `ESC [ K` (erase to the end of the line) may be written; else spaces clear.
    pub(crate) escapes: bool,
}

impl Style {
    /// The style for the terminal `$TERM` and `$COLUMNS` describe.
    pub(crate) fn of(term: Option<&str>, columns: Option<&str>) -> Style {
        let columns = columns.and_then(|c| c.trim().parse::<usize>().ok()).filter(|&c| c >= 20).unwrap_or(80);
        Style { width: columns - 1, escapes: term != Some("dumb") }
    }
}

/// The progress line: what it says, and what of it is on the screen. Pure but for `out`; the time
/// is passed in.
pub(crate) struct Line<W: Write> {
    /// `condense run`.
    command: &'static str,
    /// The step the command is at; `None` while nothing may be shown (a person typing on stdin).
    step: Option<String>,
    /// What the step is waiting for (the model's answer), when it is known.
    detail: Option<String>,
    /// The calls to the model the step has made.
    calls: usize,
    /// When the command (or its wait for stdin) ended, in the clock's milliseconds.
    started_ms: f64,
    /// The text last drawn, while it is on the screen.
    drawn: Option<String>,
    out: W,
    style: Style,
}

impl<W: Write> Line<W> {
    pub(crate) fn new(out: W, command: &'static str, started_ms: f64, style: Style) -> Line<W> {
        Line { command, step: None, detail: None, calls: 0, started_ms, drawn: None, out, style }
    }

    /// The step the command is now at (its detail forgotten); `None` hides the line.
    pub(crate) fn set_step(&mut self, step: Option<String>) {
        self.step = step;
        self.detail = None;
        self.calls = 0;
    }

    /// Counts a call to the model in this step: its number.
    pub(crate) fn call(&mut self) -> usize {
        self.calls += 1;
        self.calls
    }

    /// What the step is waiting for.
    pub(crate) fn set_detail(&mut self, detail: Option<String>) {
        self.detail = detail;
    }

    /// Counts the delay from `now_ms` again (after a wait for a person's input).
    pub(crate) fn restart(&mut self, now_ms: f64) {
        self.started_ms = now_ms;
    }

    /// The text for the time `now_ms`, when the line is to be shown. Too long for the terminal,
    /// the step is cut first (its start says the most: `2 of 12`), then whatever is left; the
    /// time always stays.
    fn text(&self, now_ms: f64) -> Option<String> {
        let elapsed = now_ms - self.started_ms;
        let step = self.step.as_deref()?;
        if elapsed < DELAY_MS {
            return None;
        }
        let prefix = format!("{}: ", self.command);
        let detail = self.detail.as_deref().map_or_else(String::new, |d| format!(" · {d}"));
        let tail = format!(" · {}", elapsed_text(elapsed));
        let width = |s: &str| s.chars().count();
        let fixed = width(&prefix) + width(&detail) + width(&tail);
        let room = self.style.width.saturating_sub(fixed).max(MIN_STEP);
        let step = if width(step) > room { cut(step, room) } else { step.to_owned() };
        let head = prefix + &step + &detail;
        let room = self.style.width.saturating_sub(width(&tail));
        let head = if width(&head) > room { cut(&head, room) } else { head };
        Some(head + &tail)
    }

    /// Draws the line as it reads at `now_ms`, if that differs from what is on the screen.
    pub(crate) fn tick(&mut self, now_ms: f64) {
        let text = self.text(now_ms);
        if text == self.drawn {
            return;
        }
        match text {
            Some(text) => {
                let mut bytes = format!("\r{text}");
                match (&self.drawn, self.style.escapes) {
                    (_, true) => bytes.push_str("\x1b[K"),
                    (Some(old), false) => {
                        let (new, old) = (text.chars().count(), old.chars().count());
                        if old > new {
                            bytes.push_str(&" ".repeat(old - new));
                            bytes.push('\r');
                            bytes.push_str(&text);
                        }
                    }
                    (None, false) => {}
                }
                self.write(&bytes);
                self.drawn = Some(text);
            }
            None => self.finish(),
        }
    }

    /// Clears the line if it is on the screen, leaving the cursor at the start of an empty row.
    pub(crate) fn finish(&mut self) {
        let Some(old) = self.drawn.take() else { return };
        let bytes = match self.style.escapes {
            true => "\r\x1b[K".to_owned(),
            false => format!("\r{}\r", " ".repeat(old.chars().count())),
        };
        self.write(&bytes);
    }

    /// Writes to stderr (or the test's sink); a failure is ignored, as `out::note`'s is.
    fn write(&mut self, bytes: &str) {
        let _ = self.out.write_all(bytes.as_bytes()).and_then(|()| self.out.flush());
    }
}

/// The fewest characters of a step kept when the line is cut (then the detail's end is cut too).
const MIN_STEP: usize = 20;

/// `text` in at most `room` characters: its start, and `…` where it was cut.
fn cut(text: &str, room: usize) -> String {
    let kept: String = text.chars().take(room.saturating_sub(1)).collect();
    kept.trim_end_matches([' ', '·', ',']).to_owned() + "…"
}

/// `4 s`, `2 min 05 s`.
fn elapsed_text(ms: f64) -> String {
    let seconds = (ms / 1000.0).floor() as u64;
    match seconds {
        0..60 => format!("{seconds} s"),
        _ => format!("{} min {:02} s", seconds / 60, seconds % 60),
    }
}

/// The line behind a lock (the redrawing thread and the command share it) and its clock; the
/// parts of [`Progress`] that the LLM wrapper holds too.
#[derive(Clone, Default)]
pub(crate) struct Handle {
    /// `None` when no progress is shown (stderr is not a terminal).
    shared: Option<Arc<Shared>>,
}

struct Shared {
    line: Mutex<Line<Box<dyn Write + Send>>>,
    clock: Arc<dyn Clock + Send + Sync>,
}

impl Handle {
    fn with_line(&self, f: impl FnOnce(&mut Line<Box<dyn Write + Send>>, f64)) {
        if let Some(shared) = &self.shared {
            let now = shared.clock.now_ms();
            f(&mut shared.line.lock().unwrap_or_else(PoisonError::into_inner), now);
        }
    }

    /// The step the command is now at.
    pub(crate) fn step(&self, text: impl Into<String>) {
        let text = text.into();
        self.with_line(|line, _| line.set_step(Some(text)));
    }

    /// What the step is waiting for.
    pub(crate) fn detail(&self, text: Option<String>) {
        self.with_line(|line, _| line.set_detail(text));
    }

    /// Counts a call to the model in the current step: its number (0 when nothing is shown).
    fn call(&self) -> usize {
        let mut n = 0;
        self.with_line(|line, _| n = line.call());
        n
    }

    /// Redraws the line as it reads now.
    pub(crate) fn tick(&self) {
        self.with_line(|line, now| line.tick(now));
    }

    /// Runs `wait` (a read of stdin, where a person may be typing) with the line hidden, and
    /// counts the delay from its end.
    pub(crate) fn hidden<T>(&self, wait: impl FnOnce() -> T) -> T {
        self.with_line(|line, _| {
            line.set_step(None);
            line.finish();
        });
        let value = wait();
        self.with_line(|line, now| line.restart(now));
        value
    }

    /// Runs `print` (a write to the terminal, such as a report line) with the line cleared first;
    /// the next redraw puts it back below what was printed.
    pub(crate) fn above<T>(&self, print: impl FnOnce() -> T) -> T {
        let Some(shared) = &self.shared else { return print() };
        // The lock is held while printing, so that no redraw comes in between.
        let mut line = shared.line.lock().unwrap_or_else(PoisonError::into_inner);
        line.finish();
        print()
    }

    /// Reads an input file with the step `reading FILE`; stdin (`-`) with the line hidden.
    pub(crate) fn read<T>(&self, file: &str, read: impl FnOnce() -> T) -> T {
        if file == "-" {
            return self.hidden(read);
        }
        self.step(format!("reading {}", name(file)));
        read()
    }

    /// An LLM that reports its calls on this line: the model asked, and the characters of its
    /// answer come so far.
    pub(crate) fn watch(&self, llm: Box<dyn LlmProvider>) -> Box<dyn LlmProvider> {
        match self.shared {
            None => llm,
            Some(_) => Box::new(Watched { inner: llm, progress: self.clone() }),
        }
    }
}

/// A command's progress line and the thread that redraws it. Dropping it (or
/// [`Progress::finish`]) stops the thread and clears the line.
pub(crate) struct Progress {
    handle: Handle,
    /// Dropped to stop the thread.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::ops::Deref for Progress {
    type Target = Handle;
    fn deref(&self) -> &Handle {
        &self.handle
    }
}

impl Progress {
    /// The progress of `command` (`condense run`) on stderr, if stderr is a terminal; else a
    /// progress that writes nothing.
    pub(crate) fn start(command: &'static str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress::off();
        }
        let style =
            Style::of(std::env::var("TERM").ok().as_deref(), std::env::var("COLUMNS").ok().as_deref());
        Progress::with(
            command,
            Box::new(std::io::stderr()),
            Arc::new(NativeClock::start()),
            style,
            Some(TICK),
        )
    }

    /// A progress that writes nothing.
    pub(crate) fn off() -> Progress {
        Progress { handle: Handle::default(), stop: None, thread: None }
    }

    /// A progress writing to `out`, timed by `clock`, redrawn every `tick` by a thread (never,
    /// when `None`: the caller ticks).
    pub(crate) fn with(
        command: &'static str,
        out: Box<dyn Write + Send>,
        clock: Arc<dyn Clock + Send + Sync>,
        style: Style,
        tick: Option<Duration>,
    ) -> Progress {
        let line = Mutex::new(Line::new(out, command, clock.now_ms(), style));
        let handle = Handle { shared: Some(Arc::new(Shared { line, clock })) };
        let Some(period) = tick else {
            return Progress { handle, stop: None, thread: None };
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let redraw = handle.clone();
        let thread = std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                redraw.tick();
            }
        });
        Progress { handle, stop: Some(stop), thread: Some(thread) }
    }

    /// Stops the redrawing and clears the line: called before the command prints its output.
    pub(crate) fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.handle.with_line(|line, _| {
            line.set_step(None);
            line.finish();
        });
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.end();
    }
}

/// An LLM whose calls are reported on the progress line. Everything else is the inner LLM's.
struct Watched {
    inner: Box<dyn LlmProvider>,
    progress: Handle,
}

#[async_trait::async_trait(?Send)]
impl LlmProvider for Watched {
    fn profile(&self) -> &LlmProfile {
        self.inner.profile()
    }

    fn adapter(&self) -> &dyn PromptAdapter {
        self.inner.adapter()
    }

    fn capabilities(&self) -> ProviderCapabilities {
        self.inner.capabilities()
    }

    fn serves(&self, used: ModelUse) -> Result<(), LlmError> {
        self.inner.serves(used)
    }

    fn cost(&self, usage: &Usage) -> f64 {
        self.inner.cost(usage)
    }

    fn answer_cost(&self, answer: &ProviderResponse) -> f64 {
        self.inner.answer_cost(answer)
    }

    fn stream_completion<'a>(
        &'a self,
        bundle: &PromptBundle,
        abort: &AbortSignal,
    ) -> LocalBoxStream<'a, StreamEvent> {
        // `gpt-4o`, `claude-code` (a CLI tool), and from a step's second call on `gpt-4o (call 2)`.
        let profile = self.inner.profile();
        let mut model = profile.tool.clone().unwrap_or_else(|| profile.model.clone());
        match self.progress.call() {
            0 | 1 => {}
            n => model.push_str(&format!(" (call {n})")),
        }
        self.progress.detail(Some(format!("asking {model}")));
        let received = Cell::new(0usize);
        let progress = self.progress.clone();
        self.inner
            .stream_completion(bundle, abort)
            .map(move |event| {
                match &event {
                    StreamEvent::Delta(text) => {
                        received.set(received.get() + text.chars().count());
                        let chars = thousands(received.get());
                        progress.detail(Some(format!("{model}: {chars} characters in")));
                    }
                    StreamEvent::Done(_) | StreamEvent::Failed(_) => progress.detail(None),
                    StreamEvent::Start { .. } => {}
                }
                event
            })
            .boxed_local()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// What was written, shared with the test.
    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Screen {
        /// Takes what was written since the last call.
        fn take(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
        }
    }

    /// A clock that moves only when told.
    #[derive(Default)]
    struct FakeClock(AtomicU64);

    impl FakeClock {
        fn set(&self, ms: u64) {
            self.0.store(ms, Ordering::SeqCst);
        }
    }

    impl Clock for FakeClock {
        fn now_ms(&self) -> f64 {
            self.0.load(Ordering::SeqCst) as f64
        }
    }

    fn profile() -> LlmProfile {
        LlmProfile::new("p", condense_core::llm::LlmKind::OpenaiCompatible, "scripted-model", 128_000)
    }

    const WIDE: Style = Style { width: 79, escapes: true };

    #[test]
    fn nothing_is_shown_in_the_first_second_then_the_step_and_the_time() {
        let screen = Screen::default();
        let mut line = Line::new(screen.clone(), "condense run", 0.0, WIDE);
        line.set_step(Some("smart on session.json".into()));
        for now in [0.0, 500.0, 999.0] {
            line.tick(now);
        }
        assert_eq!(screen.take(), "", "quick work shows nothing");
        line.tick(1000.0);
        assert_eq!(screen.take(), "\rcondense run: smart on session.json · 1 s\x1b[K");
        line.tick(1500.0);
        assert_eq!(screen.take(), "", "the same text is not drawn again");
        line.set_detail(Some("asking gpt-4o".into()));
        line.tick(2100.0);
        assert_eq!(screen.take(), "\rcondense run: smart on session.json · asking gpt-4o · 2 s\x1b[K");
        line.finish();
        assert_eq!(screen.take(), "\r\x1b[K", "cleared at the end");
        line.finish();
        assert_eq!(screen.take(), "", "once");
    }

    #[test]
    fn a_line_never_shown_is_never_cleared() {
        let screen = Screen::default();
        let mut line = Line::new(screen.clone(), "condense count", 0.0, WIDE);
        line.set_step(Some("counting tokens".into()));
        line.tick(300.0);
        line.finish();
        assert_eq!(screen.take(), "");
    }

    #[test]
    fn a_wait_for_stdin_hides_the_line_and_restarts_the_delay() {
        let screen = Screen::default();
        let mut line = Line::new(screen.clone(), "condense run", 0.0, WIDE);
        line.set_step(None);
        line.tick(5000.0);
        assert_eq!(screen.take(), "", "no step, no line");
        line.restart(5000.0);
        line.set_step(Some("lossless on -".into()));
        line.tick(5900.0);
        assert_eq!(screen.take(), "");
        line.tick(6000.0);
        assert_eq!(screen.take(), "\rcondense run: lossless on - · 1 s\x1b[K");
        line.set_step(None);
        line.tick(6100.0);
        assert_eq!(screen.take(), "\r\x1b[K", "hidden again");
    }

    #[test]
    fn a_dumb_terminal_gets_spaces_and_a_narrow_one_a_shorter_line() {
        let screen = Screen::default();
        let dumb = Style::of(Some("dumb"), Some("40"));
        assert_eq!(dumb, Style { width: 39, escapes: false });
        let mut line = Line::new(screen.clone(), "condense eval", 0.0, dumb);
        line.set_step(Some("12 of 40 · truncation on a-very-long-file-name.json".into()));
        line.tick(61_000.0);
        let first = "condense eval: 12 of 40… · 1 min 01 s";
        assert_eq!(screen.take(), format!("\r{first}"), "cut to the width, the time kept");
        assert!(first.chars().count() <= 39);
        line.set_step(Some("13 of 40".into()));
        line.tick(62_000.0);
        let second = "condense eval: 13 of 40 · 1 min 02 s";
        assert_eq!(screen.take(), format!("\r{second} \r{second}"), "a space over the longer line's end");
        line.finish();
        assert_eq!(screen.take(), format!("\r{}\r", " ".repeat(second.chars().count())));
    }

    #[test]
    fn a_long_step_is_cut_before_the_models_call() {
        let screen = Screen::default();
        let mut line = Line::new(screen.clone(), "condense eval", 0.0, Style::of(None, None));
        line.set_step(Some("3 of 12 · native on a-session-with-a-long-name.jsonl".into()));
        line.set_detail(Some("claude-haiku-4-5 (call 2): 1,234 characters in".into()));
        line.tick(48_000.0);
        let drawn = screen.take();
        assert_eq!(
            drawn,
            "\rcondense eval: 3 of 12 · native on… · claude-haiku-4-5 (call 2): 1,234… · 48 s\x1b[K"
        );
        assert!(drawn.chars().count() - 4 <= 79, "no wider than the terminal, less a column");
        // Narrower still: the detail's end goes too, the time stays.
        let mut line = Line::new(screen.clone(), "condense eval", 0.0, Style::of(None, Some("60")));
        line.set_step(Some("3 of 12 · native on a-session-with-a-long-name.jsonl".into()));
        line.set_detail(Some("claude-haiku-4-5 (call 2): 1,234 characters in".into()));
        line.tick(48_000.0);
        assert_eq!(screen.take(), "\rcondense eval: 3 of 12 · native on… · claude-haiku-… · 48 s\x1b[K");
    }

    #[test]
    fn the_widths_and_times_people_read() {
        assert_eq!(Style::of(None, None), Style { width: 79, escapes: true });
        assert_eq!(Style::of(Some("xterm-256color"), Some("120")), Style { width: 119, escapes: true });
        assert_eq!(Style::of(None, Some("nonsense")).width, 79);
        assert_eq!(Style::of(None, Some("3")).width, 79, "too narrow to believe");
        assert_eq!(elapsed_text(1999.0), "1 s");
        assert_eq!(elapsed_text(125_000.0), "2 min 05 s");
        assert_eq!(name("tests/fixtures/real/claude-code.jsonl"), "claude-code.jsonl");
        assert_eq!(name("-"), "-");
    }

    #[test]
    fn progress_with_a_fake_clock_shows_after_a_second_and_clears_when_done() {
        let screen = Screen::default();
        let clock = Arc::new(FakeClock::default());
        let progress = Progress::with("condense replay", Box::new(screen.clone()), clock.clone(), WIDE, None);
        progress.step("threshold (2 of 3)");
        progress.tick();
        assert_eq!(screen.take(), "");
        clock.set(1200);
        progress.tick();
        assert_eq!(screen.take(), "\rcondense replay: threshold (2 of 3) · 1 s\x1b[K");
        // A report line printed meanwhile goes above the line, which comes back below it.
        let printed = progress.above(|| {
            let mut out = screen.clone();
            out.write_all(b"threshold   input $0.1276\n").map(|()| 3)
        });
        assert_eq!(printed.unwrap(), 3);
        assert_eq!(screen.take(), "\r\x1b[Kthreshold   input $0.1276\n");
        progress.tick();
        assert_eq!(screen.take(), "\rcondense replay: threshold (2 of 3) · 1 s\x1b[K");
        progress.finish();
        assert_eq!(screen.take(), "\r\x1b[K");
    }

    #[test]
    fn progress_that_is_off_writes_nothing_and_lends_the_llm_unwrapped() {
        let progress = Progress::off();
        progress.step("anything");
        progress.tick();
        let read = progress.read("-", || 7);
        assert_eq!(read, 7);
        let llm: Box<dyn LlmProvider> = Box::new(condense_core::testing::ScriptedLlm::new(profile()));
        let watched = progress.watch(llm);
        assert_eq!(watched.profile().model, "scripted-model");
        progress.finish();
    }

    #[test]
    fn the_watched_llm_says_which_call_and_how_much_has_come() {
        use condense_core::llm::{Finish, collect};
        use condense_core::testing::ScriptedLlm;
        let screen = Screen::default();
        let clock = Arc::new(FakeClock::default());
        let progress = Progress::with("condense run", Box::new(screen.clone()), clock.clone(), WIDE, None);
        progress.step("native");
        clock.set(3000);
        let answer = |text: &str| {
            vec![
                StreamEvent::Delta(text.into()),
                StreamEvent::Delta("world".into()),
                StreamEvent::Done(Finish::default()),
            ]
        };
        let llm =
            progress.watch(Box::new(ScriptedLlm::new(profile()).then(answer("Hello, ")).then(answer("Hi "))));
        let abort = AbortSignal::new();
        // What the line says before the answer's first words, and after each of them.
        let call = || {
            let mut seen = Vec::new();
            let stream = llm.stream_completion(&PromptBundle::default(), &abort);
            progress.tick();
            seen.push(screen.take());
            let answer = futures::executor::block_on(collect(stream, &abort, |_| {
                progress.tick();
                seen.push(screen.take());
            }))
            .unwrap();
            (answer.content, seen)
        };
        let (first, seen) = call();
        assert_eq!(first, "Hello, world", "the answer is the inner LLM's");
        assert_eq!(
            seen,
            [
                "\rcondense run: native · asking scripted-model · 3 s\x1b[K",
                "\rcondense run: native · scripted-model: 7 characters in · 3 s\x1b[K",
                "\rcondense run: native · scripted-model: 12 characters in · 3 s\x1b[K",
            ]
        );
        let (_, seen) = call();
        assert_eq!(seen[0], "\rcondense run: native · asking scripted-model (call 2) · 3 s\x1b[K");
        assert_eq!(seen[2], "\rcondense run: native · scripted-model (call 2): 8 characters in · 3 s\x1b[K");
        progress.tick();
        assert_eq!(screen.take(), "\rcondense run: native · 3 s\x1b[K", "the call is over");
        // A new step counts its calls from one again.
        progress.step("native again");
        drop(llm.stream_completion(&PromptBundle::default(), &abort));
        progress.tick();
        assert_eq!(screen.take(), "\rcondense run: native again · asking scripted-model · 3 s\x1b[K");
    }
}
