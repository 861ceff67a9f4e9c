//! Honest timing on a noisy machine: a warm-up pass first (a VM touches fresh memory slowly
//! the first time), then rounds that alternate the contenders, reporting medians.

use std::time::Instant;

/// Median of `xs`.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

/// Runs `work` and returns `items / seconds`.
pub fn rate(items: usize, work: impl FnOnce()) -> f64 {
    let start = Instant::now();
    work();
    items as f64 / start.elapsed().as_secs_f64()
}

/// Medians of alternating rounds, and the median of the per-round ratios.
#[derive(Debug, Clone, Copy)]
pub struct Paired {
    /// Median rate of the first contender.
    pub a: f64,
    /// Median rate of the second contender.
    pub b: f64,
    /// Median of a/b taken round by round: rounds run back to back, so machine-wide drift
    /// (page-cache reclaim, other load) affects both sides of a ratio alike.
    pub ratio: f64,
}

/// Runs both once to warm up, then `rounds` rounds of `a` then `b`.
pub fn paired(rounds: usize, a: &mut dyn FnMut() -> f64, b: &mut dyn FnMut() -> f64) -> Paired {
    a();
    b();
    let (mut xs, mut ys, mut rs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (x, y) = (a(), b());
        xs.push(x);
        ys.push(y);
        rs.push(x / y);
    }
    Paired {
        a: median(xs),
        b: median(ys),
        ratio: median(rs),
    }
}
