//! Compiles `proto/messaging.proto` (the 5.x client protocol, written for rocketpy) into the
//! message types and the MessagingService server with tonic; protox parses it, so no protoc
//! is needed. The client is generated only with the `client` feature (benchmarks' drivers).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/messaging.proto");
    let files = protox::compile(["messaging.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(std::env::var_os("CARGO_FEATURE_CLIENT").is_some())
        .build_server(true)
        // Written by hand: a received message is carried as its encoded bytes
        // (src/receive_response.rs).
        .extern_path(
            ".apache.rocketmq.v2.ReceiveMessageResponse",
            "crate::receive_response::ReceiveMessageResponse",
        )
        // Written by hand: an ack's entries are slices of the request (src/ack_wire.rs).
        .extern_path(
            ".apache.rocketmq.v2.AckMessageRequest",
            "crate::ack_wire::AckMessageRequest",
        )
        .extern_path(
            ".apache.rocketmq.v2.AckMessageResponse",
            "crate::ack_wire::AckMessageResponse",
        )
        .compile_fds(files)?;
    Ok(())
}
