//! The guard between stdin and the MCP SDK: every message is read with a
//! size bound and parsed before rmcp sees it, so that what a client sends
//! wrong is answered, not dropped.
//!
//! rmcp's stdio transport drops a line that is not JSON without a reply and
//! reads a line of any length into memory; a client then waits for ever, and
//! a large enough line exhausts the host. Here a line longer than
//! [`MAX_MESSAGE`] is skipped as it streams (never held whole) and answered
//! with an `Invalid Request` error carrying its `id` when one is visible in
//! its first bytes; a line that is not JSON gets JSON-RPC's `Parse error`
//! (-32700). Both replies go out through the same writer as rmcp's own
//! messages, one whole line at a time.

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The largest message accepted, in bytes (4 MiB).
pub const MAX_MESSAGE: usize = 4 << 20;

/// How much of an oversized message is kept to find its `id`.
const ID_WINDOW: usize = 64 << 10;

/// JSON-RPC's code for text that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for a message that is not a valid request.
pub const INVALID_REQUEST: i64 = -32600;

/// Connects `input` and `output` (stdin and stdout) to the SDK through the
/// guard; returns the reader and writer to hand to rmcp. Runs on the current
/// tokio runtime until both sides close.
pub fn guarded(
    input: impl AsyncRead + Send + Unpin + 'static,
    output: impl AsyncWrite + Send + Unpin + 'static,
) -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    let (to_sdk, sdk_reads) = tokio::io::duplex(64 << 10);
    let (sdk_writes, from_sdk) = tokio::io::duplex(64 << 10);
    let (replies, mut replies_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(read_messages(input, to_sdk, replies));
    tokio::spawn(async move {
        let mut output = output;
        let mut from_sdk = BufReader::new(from_sdk);
        let mut line = Vec::new();
        let mut sdk_open = true;
        loop {
            tokio::select! {
                read = from_sdk.read_until(b'\n', &mut line), if sdk_open => {
                    match read {
                        Ok(0) | Err(_) => sdk_open = false,
                        Ok(_) => {
                            if output.write_all(&line).await.is_err() {
                                break;
                            }
                            let _ = output.flush().await;
                            line.clear();
                        }
                    }
                }
                reply = replies_rx.recv() => {
                    let Some(reply) = reply else {
                        if !sdk_open { break; }
                        continue;
                    };
                    if output.write_all(reply.as_bytes()).await.is_err() {
                        break;
                    }
                    let _ = output.flush().await;
                }
            }
            if !sdk_open && replies_rx.is_closed() && replies_rx.is_empty() {
                break;
            }
        }
    });
    (sdk_reads, sdk_writes)
}

/// Reads `input` line by line, each at most [`MAX_MESSAGE`] bytes; forwards
/// the JSON ones to the SDK and answers the rest.
async fn read_messages(
    input: impl AsyncRead + Unpin,
    mut to_sdk: tokio::io::DuplexStream,
    replies: tokio::sync::mpsc::UnboundedSender<String>,
) {
    let mut input = BufReader::with_capacity(64 << 10, input);
    loop {
        let (line, oversized) = match read_bounded_line(&mut input).await {
            Ok(Some(read)) => read,
            Ok(None) | Err(_) => break,
        };
        if oversized {
            let id = visible_id(&line);
            let _ = replies.send(error_line(
                id,
                INVALID_REQUEST,
                &format!("message too large: over {MAX_MESSAGE} bytes (the limit of iota-host serve)"),
            ));
            continue;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        if serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err() {
            let _ = replies.send(error_line(serde_json::Value::Null, PARSE_ERROR, "Parse error"));
            continue;
        }
        if to_sdk.write_all(text).await.is_err() || to_sdk.write_all(b"\n").await.is_err() {
            break;
        }
    }
    // End of input: the SDK sees its stream close and shuts down.
    let _ = to_sdk.shutdown().await;
}

/// One line of `input` without its newline; `None` at the end. A line over
/// [`MAX_MESSAGE`] is consumed to its end but only its first [`ID_WINDOW`]
/// bytes are kept, and it is returned with `true`.
async fn read_bounded_line(input: &mut (impl AsyncBufReadExt + Unpin)) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    let mut line = Vec::new();
    let mut length = 0usize;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok((length > 0).then_some((line, length > MAX_MESSAGE)));
        }
        let (chunk, done) = match memchr::memchr(b'\n', buffer) {
            Some(end) => (&buffer[..end], Some(end + 1)),
            None => (buffer, None),
        };
        length += chunk.len();
        let keep = if length > MAX_MESSAGE { ID_WINDOW } else { MAX_MESSAGE };
        let room = keep.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if length > MAX_MESSAGE {
            line.truncate(ID_WINDOW);
        }
        let consumed = done.unwrap_or(buffer.len());
        input.consume(consumed);
        if done.is_some() {
            return Ok(Some((line, length > MAX_MESSAGE)));
        }
    }
}

/// The request id in the first bytes of a message, when one is there.
fn visible_id(prefix: &[u8]) -> serde_json::Value {
    static ID: std::sync::LazyLock<regex::bytes::Regex> = std::sync::LazyLock::new(|| {
        regex::bytes::Regex::new(r#""id"\s*:\s*(-?[0-9]{1,18}|"(?:[^"\\]|\\.){0,256}")"#).expect("a valid pattern")
    });
    ID.captures(prefix)
        .and_then(|c| serde_json::from_slice(&c[1]).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// A JSON-RPC error response line.
fn error_line(id: serde_json::Value, code: i64, message: &str) -> String {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string();
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_found_in_a_prefix() {
        assert_eq!(visible_id(br#"{"jsonrpc":"2.0","id":7,"method":"x""#), json!(7));
        assert_eq!(visible_id(br#"{"id": "a\"b", "method""#), json!("a\"b"));
        assert_eq!(visible_id(br#"{"method":"x","params":{"#), serde_json::Value::Null);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lines_are_bounded_and_the_stream_goes_on() {
        let big = format!("{{\"id\":3,\"x\":\"{}\"}}\n", "a".repeat(MAX_MESSAGE));
        let text = format!("{{\"a\":1}}\n{big}not json\n{{\"b\":2}}");
        let mut input = BufReader::with_capacity(4096, text.as_bytes());
        let mut lines = Vec::new();
        while let Some((line, oversized)) = read_bounded_line(&mut input).await.unwrap() {
            lines.push((String::from_utf8(line).unwrap(), oversized));
        }
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], ("{\"a\":1}".to_string(), false));
        assert!(lines[1].1 && lines[1].0.len() == ID_WINDOW);
        assert_eq!(visible_id(lines[1].0.as_bytes()), json!(3));
        assert_eq!(lines[2], ("not json".to_string(), false));
        assert_eq!(lines[3], ("{\"b\":2}".to_string(), false));
    }
}
