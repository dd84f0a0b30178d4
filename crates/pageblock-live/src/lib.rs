//! # pageblock-live: the running kernel's memory
//!
//! What pageblock reads from, and does to, the machine it runs on (never a simulation):
//! [`inspect`] classifies every pageblock by content from `/proc/kpageflags` (or a snapshot
//! of `/proc`); [`exporter`] serves that as Prometheus metrics over HTTP; [`record`] records
//! the kernel's page-allocator tracepoints through [`tracefs`] while a command runs, into the
//! directory `pageblock-trace` reads and the lab replays; [`real`] runs pressure workloads
//! under chosen `defrag_mode` and THP settings and records each run that way. It depends on neither the
//! simulator nor the lab, and they do not depend on it.

pub mod exporter;
pub mod inspect;
pub mod meminfo;
pub mod real;
pub mod record;
mod state_file;
pub mod tracefs;
