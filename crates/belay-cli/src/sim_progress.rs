//! A progress bar for `belay sim`, shown only when a run takes more than a second.

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use belay_sim::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Runs shorter than this never show a bar.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often the bar is redrawn.
const TICK: Duration = Duration::from_millis(100);

/// Run `work` with a fresh [`Progress`]; if it is still running after a
/// second, draw a bar of its virtual-time progress on stderr.
pub(crate) fn with_progress<T: Send>(work: impl FnOnce(&Progress) -> T + Send) -> T {
    let progress = Progress::new();
    let (finished, done) = channel::<()>();
    std::thread::scope(|scope| {
        let progress = &progress;
        scope.spawn(move || watch(progress, &done));
        let result = work(progress);
        // Dropping the sender wakes the watcher at once.
        drop(finished);
        result
    })
}

/// Sleep for up to `wait`; `true` once the work is finished.
fn finished_within(done: &Receiver<()>, wait: Duration) -> bool {
    !matches!(done.recv_timeout(wait), Err(RecvTimeoutError::Timeout))
}

fn watch(progress: &Progress, done: &Receiver<()>) {
    let started = Instant::now();
    if finished_within(done, SHOW_AFTER.saturating_sub(started.elapsed())) {
        return;
    }
    let bar = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} simulating [{bar:40}] {percent:>3}% of virtual time, {elapsed} elapsed",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    loop {
        let (position, total) = progress.snapshot();
        bar.set_length(total.max(1));
        bar.set_position(position);
        if finished_within(done, TICK) {
            break;
        }
    }
    bar.finish_and_clear();
}
