//! The exporter's HTTP/1.1 server: hyper on a small tokio runtime. Connections are bounded
//! ([`MAX_CONNECTIONS`] open at once; further clients wait in the kernel's listen backlog),
//! a client has [`HEAD_TIMEOUT`] to send its request head, and the handler, which may read
//! kpageflags for a while, runs on the runtime's blocking pool of `workers` threads, so the
//! threads stay bounded however many clients connect.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};

/// Time to send the request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 512;

/// A request: its method and path (the query string dropped).
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// `/metrics`, …
    pub path: String,
}

/// A response.
pub struct Response {
    /// Status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Further headers.
    pub headers: Vec<(&'static str, &'static str)>,
    /// The body.
    pub body: String,
}

impl Response {
    /// A plain-text response.
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response { status, content_type: "text/plain; charset=utf-8", headers: Vec::new(), body: body.into() }
    }
}

/// What answers a request.
pub type Handler = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// Serve `handle` on `listener` with `workers` threads, until the process ends.
pub fn serve(listener: std::net::TcpListener, workers: usize, handle: Handler) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .max_blocking_threads(workers)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("starting the server: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| format!("listen: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| format!("listen: {e}"))?;
        let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        loop {
            let Ok(permit) = open.clone().acquire_owned().await else { return Ok(()) };
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    eprintln!("pageblock exporter: accept: {e}");
                    // Out of file descriptors and the like: let it pass, do not spin.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| answer(request, handle.clone()));
                // A client that hung up or stalled is its own problem; keep serving.
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEAD_TIMEOUT)
                    .keep_alive(false)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                drop(permit);
            });
        }
    })
}

/// One request through `handle`, on the blocking pool.
async fn answer(
    request: hyper::Request<Incoming>,
    handle: Handler,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let request =
        Request { method: request.method().as_str().to_owned(), path: request.uri().path().to_owned() };
    let response = tokio::task::spawn_blocking(move || handle(&request))
        .await
        .unwrap_or_else(|e| Response::text(500, format!("pageblock exporter: {e}\n")));
    let mut out = hyper::Response::builder()
        .status(response.status)
        .header(hyper::header::CONTENT_TYPE, response.content_type);
    for (name, value) in response.headers {
        out = out.header(name, value);
    }
    Ok(out.body(Full::new(Bytes::from(response.body))).unwrap_or_else(|_| {
        let mut r = hyper::Response::new(Full::new(Bytes::from_static(b"bad response\n")));
        *r.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        r
    }))
}
