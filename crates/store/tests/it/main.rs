//! Store integration tests: real files in temporary directories.

mod common;
mod put_get;
mod recovery;
