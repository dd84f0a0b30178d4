//! The exporter (`pageblock exporter`): Prometheus metrics of the live machine. Scrapes share
//! inspections (`scrapes.rs`) and hyper serves them with bounded connections and threads
//! (`http.rs`): `/metrics`, a landing page at `/`, 405 for anything but GET.

mod http;
mod scrapes;

use std::time::Duration;

use std::path::PathBuf;

use crate::inspect::metrics::Family;
use http::{Request, Response};
use scrapes::Scrapes;

/// The exposition format's content type.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The page at `/`.
const LANDING: &str =
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pageblock exporter</title></head>\n\
<body><h1>pageblock exporter</h1><p>This machine's free blocks, pageblocks by type and content, \
fragmentation indices and compaction counters: <a href=\"/metrics\">/metrics</a>.</p></body></html>\n";

/// The exporter's options (`pageblock exporter`'s flags).
#[derive(Clone, Debug)]
pub struct ExporterConfig {
    /// Address to listen on (port 0: any free port, printed on stderr).
    pub listen: String,
    /// Where to read /proc's files from (a snapshot directory works too).
    pub proc: PathBuf,
    /// One scrape's text, no server.
    pub once: bool,
    /// Seconds an inspection serves later scrapes (0: every scrape inspects afresh).
    pub cache_seconds: f64,
    /// Do not read kpageflags: the cheap metrics only.
    pub no_kpageflags: bool,
    /// Threads answering requests.
    pub workers: u16,
}

/// Serve until killed; with `once`, return one scrape's text.
pub fn run(args: &ExporterConfig) -> Result<String, String> {
    let max_age = Duration::try_from_secs_f64(args.cache_seconds)
        .map_err(|_| format!("--cache-seconds {}: not a number of seconds", args.cache_seconds))?;
    let scrapes = Scrapes::new(args.proc.clone(), args.no_kpageflags, max_age);
    if args.once {
        return scrapes.get().0.map(|text| text.to_string());
    }
    let listener =
        std::net::TcpListener::bind(&args.listen).map_err(|e| format!("listen on {}: {e}", args.listen))?;
    match listener.local_addr() {
        Ok(addr) => eprintln!("listening on http://{addr}/metrics"),
        Err(_) => eprintln!("listening on {}", args.listen),
    }
    let scrapes = std::sync::Arc::new(scrapes);
    http::serve(
        listener,
        usize::from(args.workers),
        std::sync::Arc::new(move |request| respond(request, &scrapes)),
    )?;
    Ok(String::new())
}

fn respond(request: &Request, scrapes: &Scrapes) -> Response {
    if request.method != "GET" {
        let mut r = Response::text(405, "pageblock exporter: only GET\n");
        r.headers.push(("Allow", "GET"));
        return r;
    }
    match request.path.as_str() {
        "/" => Response { content_type: "text/html; charset=utf-8", ..Response::text(200, LANDING) },
        "/metrics" => match scrapes.get() {
            (Ok(text), inspections) => {
                let mut body = String::with_capacity(text.len() + 256);
                body.push_str(&text);
                let help = "Inspections of /proc since the exporter started (concurrent scrapes share one; --cache-seconds reuses it).";
                Family::new(&mut body, "pageblock_exporter_inspections_total", "counter", help)
                    .sample(&[], inspections as f64);
                Response { content_type: CONTENT_TYPE, ..Response::text(200, body) }
            }
            (Err(e), _) => Response::text(500, format!("inspect failed: {e}\n")),
        },
        _ => Response::text(404, "pageblock exporter: metrics are at /metrics\n"),
    }
}
