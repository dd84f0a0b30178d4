//! The exporter's HTTP/1.1 server, small on purpose: a fixed pool of worker threads share the
//! listening socket and each serves one connection at a time (one request, then
//! `Connection: close`). Threads and open connections stay bounded however many clients
//! connect: the others wait in the kernel's listen backlog. A client has [`HEAD_TIMEOUT`] to
//! send a request head of at most [`MAX_HEAD`] bytes, so an idle connection holds a worker
//! for that long at most.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Time to send the request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request head accepted.
pub const MAX_HEAD: usize = 8 << 10;
/// Time to take the response.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// Serve `handle` on `listener` with `workers` threads, until the process ends.
pub fn serve(listener: &TcpListener, workers: usize, handle: &(dyn Fn(&Request) -> Response + Sync)) {
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                match listener.accept() {
                    // A client that hung up or stalled is its own problem; keep serving.
                    Ok((stream, _)) => drop(serve_one(stream, handle)),
                    Err(e) => {
                        eprintln!("pageblock exporter: accept: {e}");
                        // Out of file descriptors and the like: let it pass, do not spin.
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            });
        }
    });
}

fn serve_one(mut stream: TcpStream, handle: &(dyn Fn(&Request) -> Response + Sync)) -> std::io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let response = match read_head(&mut stream)? {
        Some(head) => match parse(&head) {
            Some(request) => handle(&request),
            None => Response::text(400, "bad request\n"),
        },
        None => Response::text(431, "request head too large\n"),
    };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    for (name, value) in &response.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    stream.write_all(out.as_bytes())?;
    stream.write_all(response.body.as_bytes())?;
    stream.flush()
}

/// The request head, up to its blank line (`None`: longer than [`MAX_HEAD`]); an error if the
/// client is slower than [`HEAD_TIMEOUT`] or hangs up first.
fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<String>> {
    let deadline = Instant::now() + HEAD_TIMEOUT;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Ok(None);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => head.extend_from_slice(&buf[..n]),
        }
    }
    Ok(Some(String::from_utf8_lossy(&head).into_owned()))
}

/// The request line `METHOD TARGET HTTP/x.y`.
fn parse(head: &str) -> Option<Request> {
    let mut words = head.lines().next()?.split(' ');
    let (method, target, version) = (words.next()?, words.next()?, words.next()?);
    if words.next().is_some() || !version.starts_with("HTTP/1.") || method.is_empty() {
        return None;
    }
    let path = target.split('?').next().unwrap_or("").to_owned();
    Some(Request { method: method.to_owned(), path })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_parse_and_nonsense_does_not() {
        let r = parse("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/metrics"));
        assert!(parse("GET /metrics\r\n\r\n").is_none());
        assert!(parse("GET / HTTP/2 extra\r\n\r\n").is_none());
        assert!(parse("\r\n\r\n").is_none());
    }
}
