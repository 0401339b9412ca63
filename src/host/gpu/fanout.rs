//! Per-GPU work spread over a few threads, its answers kept in index order.
//!
//! NVML answers a GPU's questions in a few milliseconds (about 24 ms for all of an H200's), one
//! GPU after another: on an 8-GPU HGX the child's queries would take eight times as long as on
//! one. NVML is thread-safe ("safe to make simultaneous NVML calls from multiple threads", its
//! API reference; nvml-wrapper's `Nvml` and `Device` are `Send + Sync`), so each GPU is asked
//! on its own thread, at most [`MAX_WORKERS`] at once so a 1024-device answer does not start
//! 1024 threads. Pure apart from the threads: the query is passed in, so tests use a fake.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// The most threads that ask GPUs at once: an 8-GPU node gets one each, a bigger answer waits
/// in turn.
pub(super) const MAX_WORKERS: usize = 8;

/// One GPU's answer and how long it took.
#[derive(Debug)]
pub(super) struct Answer<T> {
    pub value: T,
    pub ms: f64,
}

/// Asks `query` for every index below `count` on at most `workers` threads, and returns the
/// answers in index order with the number of threads that ran. A query that panics gives
/// `lost(index)` in its place and the others go on; if no thread can be started, the indices
/// are asked on this one.
pub(super) fn in_index_order<T: Send>(
    count: u32,
    workers: usize,
    query: impl Fn(u32) -> T + Sync,
    lost: impl Fn(u32) -> T,
) -> (Vec<Answer<T>>, usize) {
    let timed = |index: u32| {
        let start = Instant::now();
        let value = catch_unwind(AssertUnwindSafe(|| query(index))).ok();
        (value, start.elapsed().as_secs_f64() * 1000.0)
    };
    let wanted = workers.clamp(1, MAX_WORKERS).min(count as usize);
    let next = AtomicU32::new(0);
    let mut slots: Vec<Option<(Option<T>, f64)>> = (0..count).map(|_| None).collect();
    let mut ran = 0;
    if wanted > 1 {
        std::thread::scope(|scope| {
            let worker = || {
                let mut done = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count {
                        return done;
                    }
                    done.push((index, timed(index)));
                }
            };
            let handles: Vec<_> = (0..wanted)
                .filter_map(|n| {
                    std::thread::Builder::new()
                        .name(format!("nvml-{n}"))
                        .spawn_scoped(scope, worker)
                        .ok()
                })
                .collect();
            ran = handles.len();
            for handle in handles {
                // A worker's own panics are caught per query; a join error loses nothing more.
                for (index, answer) in handle.join().unwrap_or_default() {
                    if let Some(slot) = slots.get_mut(index as usize) {
                        *slot = Some(answer);
                    }
                }
            }
        });
    }
    // Whatever no thread asked (one GPU, or no thread could start) is asked here, in order.
    for (index, slot) in (0..count).zip(slots.iter_mut()) {
        if slot.is_none() && next.load(Ordering::Relaxed) <= index {
            *slot = Some(timed(index));
        }
    }
    let answers = (0..count)
        .zip(slots)
        .map(|(index, slot)| match slot {
            Some((Some(value), ms)) => Answer { value, ms },
            Some((None, ms)) => Answer {
                value: lost(index),
                ms,
            },
            None => Answer {
                value: lost(index),
                ms: 0.0,
            },
        })
        .collect();
    (answers, ran.max(1))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    use super::{MAX_WORKERS, in_index_order};

    /// Counts how many queries run at once, the highest count seen, and lets the first ones
    /// wait (up to a safety timeout, never asserted on) until `meet` of them are inside.
    struct Gate {
        inside: AtomicUsize,
        most: AtomicUsize,
        arrived: Mutex<usize>,
        all_in: Condvar,
        meet: usize,
    }

    impl Gate {
        fn new(meet: usize) -> Gate {
            Gate {
                inside: AtomicUsize::new(0),
                most: AtomicUsize::new(0),
                arrived: Mutex::new(0),
                all_in: Condvar::new(),
                meet,
            }
        }

        fn enter(&self) {
            let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            let mut arrived = self.arrived.lock().unwrap();
            *arrived += 1;
            self.all_in.notify_all();
            let _ = self
                .all_in
                .wait_timeout_while(arrived, Duration::from_secs(10), |n| *n < self.meet)
                .unwrap();
            self.inside.fetch_sub(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn answers_come_back_in_index_order_whatever_order_they_finish_in() {
        // Every query waits until all four are inside, so they end in whatever order the
        // threads happen to run.
        let gate = Gate::new(4);
        let (answers, ran) = in_index_order(
            4,
            4,
            |i| {
                gate.enter();
                format!("gpu{i}")
            },
            |i| format!("lost{i}"),
        );
        let values: Vec<_> = answers.iter().map(|a| a.value.as_str()).collect();
        assert_eq!(values, ["gpu0", "gpu1", "gpu2", "gpu3"]);
        assert_eq!(ran, 4);
        // All four were inside at once: the queries ran side by side.
        assert_eq!(gate.most.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn no_more_queries_run_at_once_than_workers_allow() {
        for (count, workers, most) in [(16, 3, 3), (40, 64, MAX_WORKERS), (5, 1, 1), (2, 8, 2)] {
            let gate = Gate::new(most);
            let (answers, ran) = in_index_order(count, workers, |i| (gate.enter(), i).1, |_| 0);
            assert_eq!(
                answers.iter().map(|a| a.value).collect::<Vec<_>>(),
                (0..count).collect::<Vec<_>>()
            );
            assert_eq!(ran, most, "{count} GPUs, {workers} workers");
            assert!(
                gate.most.load(Ordering::SeqCst) <= most,
                "{count}/{workers}"
            );
        }
    }

    #[test]
    fn a_query_that_panics_loses_only_its_own_gpu() {
        for workers in [1, 4] {
            let (answers, _) = in_index_order(
                5,
                workers,
                |i| {
                    assert_ne!(i, 2, "a wedged GPU");
                    i * 10
                },
                |i| 1000 + i,
            );
            let values: Vec<_> = answers.iter().map(|a| a.value).collect();
            assert_eq!(values, [0, 10, 1002, 30, 40], "{workers} workers");
        }
    }

    #[test]
    fn no_gpus_means_no_answers_and_no_threads() {
        let (answers, ran) = in_index_order(0, 8, |i| i, |i| i);
        assert!(answers.is_empty());
        assert_eq!(ran, 1);
    }
}
