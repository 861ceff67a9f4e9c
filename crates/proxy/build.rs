//! Compiles `proto/messaging.proto` (the 5.x client protocol, written for rocketpy) into the
//! message types and the MessagingService server with tonic; protox parses it, so no protoc
//! is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/messaging.proto");
    let files = protox::compile(["messaging.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .compile_fds(files)?;
    Ok(())
}
