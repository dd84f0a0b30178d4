//! `pageblock exporter`: Prometheus metrics of the live machine, one inspection per scrape.

use pageblock_lab::inspect;

use crate::cli::ExporterArgs;

/// The exposition format's content type.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Serve until killed; with `--once`, return one scrape's text.
pub fn run(args: &ExporterArgs) -> Result<String, String> {
    if args.once {
        return inspect::inspect(&args.proc).map(|i| i.prometheus()).map_err(|e| e.to_string());
    }
    let server =
        tiny_http::Server::http(&args.listen).map_err(|e| format!("listen on {}: {e}", args.listen))?;
    match server.server_addr().to_ip() {
        Some(addr) => eprintln!("listening on http://{addr}/metrics"),
        None => eprintln!("listening on {}", args.listen),
    }
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], CONTENT_TYPE.as_bytes())
        .map_err(|()| "bad content-type header".to_owned())?;
    for request in server.incoming_requests() {
        let path = request.url().split('?').next().unwrap_or("").to_owned();
        let response = if path != "/metrics" {
            tiny_http::Response::from_string("pageblock exporter: metrics are at /metrics\n")
                .with_status_code(404)
        } else {
            match inspect::inspect(&args.proc) {
                Ok(i) => tiny_http::Response::from_string(i.prometheus()).with_header(header.clone()),
                Err(e) => {
                    tiny_http::Response::from_string(format!("inspect failed: {e}\n")).with_status_code(500)
                }
            }
        };
        // A client that hung up is its own problem; keep serving.
        let _ = request.respond(response);
    }
    Ok(String::new())
}
