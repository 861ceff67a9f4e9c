//! `rocketpy._native`: the thin PyO3 layer over the Rust crates. Public Python API lives in
//! `python/rocketpy/`; everything here is small and internal.

mod batcher;
mod buffer;
mod bulk_send;
mod callbacks;
mod client;
mod client_metrics;
mod columnar;
mod columns;
mod controller;
mod direct_send;
mod errors;
mod header;
mod json;
mod logging;
mod memory;
mod message;
mod outgoing;
mod pending;
mod process;
mod producer_core;
mod protocol;
mod runtime;
mod send_answers;
mod send_lanes;
mod send_results;
mod server;
mod store;
mod unique_id;

use pyo3::prelude::*;

/// Every Rust allocation of the extension (servers and clients; Python's own objects stay on
/// its allocators). Why not glibc's: see the workspace's Cargo.toml at `mimalloc`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logging::install();
    // Runs before finalization (atexit hooks registered later, e.g. the clients', run
    // first): see `process` for why native threads must stop attaching by then.
    let at_exit = wrap_pyfunction!(callbacks::at_exit, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (at_exit,))?;
    errors::register(m)?;
    protocol::register(m)?;
    m.add_class::<client::RemotingClient>()?;
    m.add_class::<client::RemotingResponse>()?;
    m.add_class::<producer_core::ProducerCore>()?;
    m.add_class::<direct_send::SendOutcome>()?;
    m.add_class::<bulk_send::ArrowColumn>()?;
    m.add_class::<unique_id::UniqueIds>()?;
    m.add_class::<header::Header>()?;
    m.add_class::<message::MessageExt>()?;
    m.add_class::<outgoing::Message>()?;
    m.add_class::<pending::PendingMessages>()?;
    m.add_class::<buffer::BytesView>()?;
    m.add_class::<server::NameServer>()?;
    m.add_class::<server::Broker>()?;
    m.add_class::<controller::Controller>()?;
    m.add_class::<store::EmbeddedStore>()?;
    m.add_class::<columns::StoreReader>()?;
    m.add_function(wrap_pyfunction!(callbacks::on_callback_thread, m)?)?;
    m.add_function(wrap_pyfunction!(message::decode_messages, m)?)?;
    m.add_function(wrap_pyfunction!(message::encode_properties, m)?)?;
    m.add_function(wrap_pyfunction!(message::decode_properties, m)?)?;
    m.add_function(wrap_pyfunction!(message::java_string_hash, m)?)?;
    m.add_function(wrap_pyfunction!(message::encode_batch, m)?)?;
    m.add_function(wrap_pyfunction!(logging::init_logging, m)?)?;
    m.add_function(wrap_pyfunction!(json::fastjson_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(process::release_free_memory, m)?)?;
    m.add_function(wrap_pyfunction!(client_metrics::enable_send_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(client_metrics::record_send, m)?)?;
    m.add_function(wrap_pyfunction!(client_metrics::send_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(client_metrics::send_metric_buckets, m)?)?;
    m.add_function(wrap_pyfunction!(client_metrics::record_process, m)?)?;
    m.add_function(wrap_pyfunction!(client_metrics::process_metrics, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
