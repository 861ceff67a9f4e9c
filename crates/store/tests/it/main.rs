//! Store integration tests: real files in temporary directories, and a simulated disk for
//! power-loss cases.

mod common;
mod crash_loop;
mod delay;
mod disk_full;
mod ext;
mod group_commit;
mod index;
mod offline_reader;
mod power_loss;
mod put_get;
mod recovery;
mod replica;
mod retention;
