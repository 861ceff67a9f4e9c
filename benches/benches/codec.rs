//! Remoting frame encode and decode of a SEND_MESSAGE_V2 request with a 1 KiB body.

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rocketpy_protocol::frame;
use rocketpy_protocol::RemotingCommand;
use rocketpy_protocol::SerializeType;

fn request(st: SerializeType) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(310)
        .with_body(vec![b'x'; 1024])
        .with_field("a", "producer-group")
        .with_field("b", "TopicTest")
        .with_field("c", "TBW102")
        .with_field("d", 4)
        .with_field("e", 1)
        .with_field("f", 0)
        .with_field("g", 1_700_000_000_000i64)
        .with_field("h", 0)
        .with_field(
            "i",
            "TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}0123456789ABCDEF0123456789ABCDEF\u{2}",
        )
        .with_field("j", 0);
    cmd.serialize_type = st;
    cmd
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("codec");
    for (name, st) in [
        ("json", SerializeType::Json),
        ("rocketmq", SerializeType::RocketMq),
    ] {
        let cmd = request(st);
        let encoded = frame::encode_to_bytes(&cmd).expect("encode");
        group.throughput(Throughput::Bytes(encoded.len() as u64));
        group.bench_function(format!("encode_{name}"), |b| {
            b.iter(|| frame::encode_to_bytes(&cmd).expect("encode"))
        });
        group.bench_function(format!("decode_{name}"), |b| {
            b.iter(|| {
                let mut buf = BytesMut::from(&encoded[..]);
                frame::decode(&mut buf).expect("decode").expect("frame")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
