//! SQL92 filter cost per message (`rocketpy-filter`): compiling a subscription once, and
//! evaluating it on a stored message's properties read in place (the broker's per-message
//! work when a group filters by SQL), for a match and a miss.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rocketpy_filter::{EncodedProperties, Filter};

const SQL: &str = "a BETWEEN 5 AND 9 AND region IN ('eu', 'us') AND TAGS <> 'Debug'";

fn properties(a: i32) -> String {
    format!(
        "TAGS\u{1}TagA\u{2}KEYS\u{1}order-{a}\u{2}a\u{1}{a}\u{2}region\u{1}eu\u{2}\
         UNIQ_KEY\u{1}0123456789ABCDEF0123456789ABCDEF\u{2}"
    )
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("sql_filter");
    group.bench_function("compile", |b| {
        b.iter(|| Filter::compile(SQL).expect("compiles"))
    });
    let filter = Filter::compile(SQL).expect("compiles");
    group.throughput(Throughput::Elements(1));
    for (name, a) in [("evaluate_match", 7), ("evaluate_miss", 2)] {
        let props = properties(a);
        assert_eq!(filter.matches(&EncodedProperties(&props)), a >= 5);
        group.bench_function(name, |b| {
            b.iter(|| filter.matches(&EncodedProperties(std::hint::black_box(&props))))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
