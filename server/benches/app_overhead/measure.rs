//! Load from many callers, and its figures: calls per second, p50 and p99, and how a
//! way through strad compares with calling the upstream directly.

use super::*;

pub struct Figures {
    pub requests_per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
}

/// Runs `total` requests from `concurrency` callers; every request must succeed.
pub async fn measure<F, Fut>(total: usize, concurrency: usize, request: F) -> Figures
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let callers = (0..concurrency).map(|_| {
        let (next, request) = (next.clone(), request.clone());
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let at = Instant::now();
                request().await.expect("every benchmark request succeeds");
                latencies.push(at.elapsed());
            }
            latencies
        })
    });
    let mut latencies: Vec<Duration> = futures::future::join_all(callers)
        .await
        .into_iter()
        .flat_map(|l| l.unwrap())
        .collect();
    let elapsed = started.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Figures {
        requests_per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

/// The median of `values` (the upper one of an even count), sorting them in place.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `way` against `direct`, measured in the same round: its share of direct's calls/s, and
/// the milliseconds it adds at p50 and at p99.
pub fn against(direct: &Figures, way: &Figures) -> [f64; 3] {
    let added = |a: Duration, b: Duration| (a.as_secs_f64() - b.as_secs_f64()) * 1000.0;
    [
        100.0 * way.requests_per_second / direct.requests_per_second,
        added(way.p50, direct.p50),
        added(way.p99, direct.p99),
    ]
}

/// Those three figures as a table's cells.
pub fn cells([share, p50, p99]: [f64; 3]) -> String {
    format!(" {share:.0}% | {p50:+.2} ms | {p99:+.2} ms |")
}

/// Two ways through strad taking turns with direct, `ROUNDS` times at `concurrency`: each
/// one's share of direct's calls/s, its added p50 and p99, per round and the median round;
/// and each one's CPU per call (strad's threads, PostgreSQL) over all rounds.
pub async fn side_by_side<D, DFut, F, Fut>(
    node: u32,
    concurrency: usize,
    calls: usize,
    direct: &D,
    ways: [(&str, &F); 2],
) where
    D: Fn() -> DFut + Clone + Send + 'static,
    DFut: Future<Output = Result<(), String>> + Send,
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let [(a, _), (b, _)] = ways;
    println!(
        "| round | direct calls/s | p50 | p99 | {a}: share | added p50 | added p99 | {b}: share | added p50 | added p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut figures: [[Vec<f64>; 3]; 2] = Default::default();
    let mut cpu = [Cpu::default(); 2];
    for round in 1..=ROUNDS {
        let d = measure(calls, concurrency, direct.clone()).await;
        let mut row = format!(
            "| {round} | {:.0} | {} | {} |",
            d.requests_per_second,
            ms(d.p50),
            ms(d.p99)
        );
        for ((figures, cpu), (_, way)) in figures.iter_mut().zip(&mut cpu).zip(ways) {
            let (f, used) = with_cpu(node, measure(calls, concurrency, way.clone())).await;
            *cpu = cpu.plus(used);
            let compared = against(&d, &f);
            row.push_str(&cells(compared));
            for (list, value) in figures.iter_mut().zip(compared) {
                list.push(value);
            }
        }
        println!("{row}");
    }
    let mut row = "| median | | | |".to_string();
    for way in &mut figures {
        row.push_str(&cells(way.each_mut().map(|list| median(list))));
    }
    println!("{row}");
    let per = |ms: f64| ms / (ROUNDS * calls) as f64;
    println!(
        "CPU per call, strad's threads / PostgreSQL: {a} {:.3} / {:.3} ms, {b} {:.3} / {:.3} ms",
        per(cpu[0].strad),
        per(cpu[0].postgres),
        per(cpu[1].strad),
        per(cpu[1].postgres)
    );
}

pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
