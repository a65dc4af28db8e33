//! The guard between stdin and the MCP SDK: every message is read with a
//! size bound and parsed before rmcp sees it, so that what a client sends
//! wrong is answered, not dropped: a request with an id always gets a
//! response carrying that id.
//!
//! rmcp's stdio transport drops a line that is not JSON without a reply (a
//! message nested deeper than serde_json's recursion limit counts as not
//! JSON), answers one that is JSON but not a message it knows with an error
//! whose id is null (which no client can match to its request), and reads a
//! line of any length into memory; a client then waits for ever, and a large
//! enough line exhausts the host. Here a line longer than [`MAX_MESSAGE`] is
//! skipped as it streams (never held whole) and answered with an `Invalid
//! Request` error carrying its `id` when one is visible in its first bytes;
//! every other line is parsed as the very type rmcp parses
//! (`ClientJsonRpcMessage`), and one that does not parse is answered here
//! with its top-level `id` (found by a scan that neither recurses nor
//! allocates per level, so depth cannot stop it): `Parse error` (-32700) for
//! text that is not JSON, `Invalid Request` (-32600) for the rest, each
//! request of a batch (which MCP no longer has) answered the same way. Every
//! reply goes out through the same writer as rmcp's own messages, one whole
//! line at a time.

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ClientRequest, GetMeta, ProtocolVersion, RequestId};
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

/// What the guard tells the server of the requests it passes on and of the
/// answers it sees go out, as they cross it (`mcp/arrivals.rs` keeps each
/// call's place in line by these).
pub trait Requests: Send + Sync + 'static {
    /// Request `id` was read (`call`: a `tools/call`), before rmcp has it;
    /// `Err(why)` answers it with an Invalid Request error instead of
    /// passing it on (an id already in use by a request in flight).
    fn arrived(&self, id: &RequestId, call: bool) -> Result<(), String>;
    /// Request `id` needs nothing more: rmcp answered it, or the client
    /// cancelled it (rmcp then answers nothing).
    fn settled(&self, id: &RequestId);
}

/// Connects `input` and `output` (stdin and stdout) to the SDK through the
/// guard; returns the reader and writer to hand to rmcp. `requests` hears
/// of each request as it is read, before rmcp does, and of each answer
/// before the client does. Runs on the current tokio runtime until both
/// sides close.
pub fn guarded(
    input: impl AsyncRead + Send + Unpin + 'static,
    output: impl AsyncWrite + Send + Unpin + 'static,
    requests: std::sync::Arc<dyn Requests>,
) -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    let (to_sdk, sdk_reads) = tokio::io::duplex(64 << 10);
    let (sdk_writes, from_sdk) = tokio::io::duplex(64 << 10);
    let (replies, mut replies_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(read_messages(input, to_sdk, replies, requests.clone()));
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
                            // Settled before the client can reuse its id.
                            if let Some(id) = response_id(&line) {
                                requests.settled(&id);
                            }
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
    requests: std::sync::Arc<dyn Requests>,
) {
    let mut input = BufReader::with_capacity(64 << 10, input);
    // Whether rmcp has chosen its lifecycle (`chooses_lifecycle`).
    let mut lifecycle = false;
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
        // A request whose id is neither a string nor an integer (`2.5`,
        // `null`) is read by rmcp as something it never answers.
        if let Some(id) = unusable_id(text) {
            let why = "Invalid request: an id is a string or an integer";
            let _ = replies.send(error_line(id, INVALID_REQUEST, why));
            continue;
        }
        let message = match parsed(text) {
            Ok(message) => message,
            Err(refusals) => {
                for refusal in refusals {
                    let _ = replies.send(refusal);
                }
                continue;
            }
        };
        // Before a lifecycle is chosen rmcp ends the connection at any
        // message but a request: such a message belongs to nothing yet and
        // is dropped here.
        if !lifecycle {
            match &message {
                ClientJsonRpcMessage::Request(request) => lifecycle = chooses_lifecycle(&request.request),
                _ => continue,
            }
        }
        match &message {
            ClientJsonRpcMessage::Request(request) => {
                let call = matches!(request.request, ClientRequest::CallToolRequest(_));
                if let Err(why) = requests.arrived(&request.id, call) {
                    let id = serde_json::to_value(&request.id).unwrap_or_default();
                    let _ = replies.send(error_line(id, INVALID_REQUEST, &format!("Invalid request: {why}")));
                    continue;
                }
            }
            ClientJsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    requests.settled(id);
                }
            }
            _ => {}
        }
        if to_sdk.write_all(text).await.is_err() || to_sdk.write_all(b"\n").await.is_err() {
            break;
        }
    }
    // End of input: the SDK sees its stream close and shuts down.
    let _ = to_sdk.shutdown().await;
}

/// Whether rmcp chooses its lifecycle at `request` (as its
/// `serve_server` does): at `initialize`, or at the first request but a
/// `ping` or `server/discover` that carries complete inline metadata of a
/// version it supports. Until then it ends the connection at anything but a
/// request.
fn chooses_lifecycle(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.missing_required_keys(&ProtocolVersion::V_2026_07_28).is_empty()
                && meta
                    .protocol_version()
                    .is_some_and(|v| ProtocolVersion::KNOWN_VERSIONS.contains(&v))
        }
    }
}

/// The line as rmcp reads it, or the replies it gets here instead (none for
/// a notification or a client's response that rmcp would not read: a
/// notification is never answered).
fn parsed(text: &[u8]) -> Result<ClientJsonRpcMessage, Vec<String>> {
    serde_json::from_slice::<ClientJsonRpcMessage>(text).map_err(|error| refusals(text, &error))
}

/// The replies a line that rmcp cannot read gets here.
fn refusals(text: &[u8], error: &serde_json::Error) -> Vec<String> {
    let syntax = matches!(
        error.classify(),
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof
    );
    // Nested past serde_json's limit is a syntax error to it, but JSON.
    let why = if syntax && serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err() {
        (PARSE_ERROR, "Parse error".to_string())
    } else {
        (INVALID_REQUEST, format!("Invalid request: {error}"))
    };
    if text.first() == Some(&b'[') {
        let items: Vec<serde_json::Value> = serde_json::from_slice(text).unwrap_or_default();
        let answered: Vec<String> = items
            .iter()
            .filter_map(|item| item.get("id").filter(|id| is_id(id)))
            .map(|id| {
                error_line(
                    id.clone(),
                    INVALID_REQUEST,
                    "Invalid request: a batch of messages (MCP has none since 2025-06-18)",
                )
            })
            .collect();
        return if answered.is_empty() {
            vec![error_line(serde_json::Value::Null, why.0, &why.1)]
        } else {
            answered
        };
    }
    // A response of the client's (to a question of ours) is never answered:
    // that is how error storms start.
    let response = ["result", "error"].iter().any(|k| top_level_member(text, k).is_some())
        && top_level_member(text, "method").is_none();
    match top_level_id(text) {
        _ if response => Vec::new(),
        Some(id) => vec![error_line(id, why.0, &why.1)],
        // A notification (no id) that rmcp would not read: nothing to answer.
        None if text.first() == Some(&b'{') && !syntax => Vec::new(),
        None => vec![error_line(serde_json::Value::Null, why.0, &why.1)],
    }
}

/// The `id` of a request (a message with a `method`) that no request id can
/// be made of, as the client wrote it.
fn unusable_id(text: &[u8]) -> Option<serde_json::Value> {
    top_level_member(text, "method")?;
    let raw = top_level_member(text, "id")?;
    let mut values = serde_json::Deserializer::from_slice(raw).into_iter::<serde_json::Value>();
    let value = values.next()?.ok()?;
    serde_json::from_value::<RequestId>(value.clone())
        .is_err()
        .then_some(value)
}

/// The id of the response (or error response) `line` is, one rmcp sends.
/// rmcp's own messages are well formed: one with a `result` or an `error`
/// is a response, so no scan of the whole line (results run to megabytes)
/// looks for a `method` beside it.
fn response_id(line: &[u8]) -> Option<RequestId> {
    if !["result", "error"].iter().any(|k| top_level_member(line, k).is_some()) {
        return None;
    }
    serde_json::Deserializer::from_slice(top_level_member(line, "id")?)
        .into_iter::<RequestId>()
        .next()?
        .ok()
}

/// Whether `value` can be a JSON-RPC request id: a string or an integer.
fn is_id(value: &serde_json::Value) -> bool {
    value.is_string() || value.is_i64() || value.is_u64()
}

/// The `id` member of the object `text` is, when it is one with a string or
/// integer id.
fn top_level_id(text: &[u8]) -> Option<serde_json::Value> {
    let value = top_level_member(text, "id")?;
    let mut values = serde_json::Deserializer::from_slice(value).into_iter::<serde_json::Value>();
    values.next()?.ok().filter(is_id)
}

/// What follows the colon of the member `key` of the object `text` is,
/// found by one pass over the bytes that tracks nesting by a counter, so no
/// depth or size of the rest stops it.
fn top_level_member<'a>(text: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let (mut depth, mut at) = (0usize, 0usize);
    // Whether the string that starts at depth 1 is a key: it follows `{` or `,`.
    let mut expecting_key = false;
    while at < text.len() {
        match text[at] {
            b'"' => {
                let end = string_end(text, at)?;
                if depth == 1 && expecting_key && text[at + 1..end - 1] == *key.as_bytes() {
                    let rest = &text[end..];
                    let colon = rest.iter().position(|b| !b.is_ascii_whitespace())?;
                    return (rest[colon] == b':').then(|| &rest[colon + 1..]);
                }
                expecting_key = false;
                at = end;
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                expecting_key = depth == 1 && text[at] == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => expecting_key = depth == 1,
            _ => {}
        }
        at += 1;
    }
    None
}

/// Where the JSON string starting at `start` (its opening quote) ends: the
/// index after its closing quote.
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    while at < text.len() {
        match text[at] {
            b'\\' => at += 2,
            b'"' => return Some(at + 1),
            _ => at += 1,
        }
    }
    None
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
    fn the_top_level_id_is_found_at_any_depth_of_the_rest() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","params":{{"id":9,"arguments":{}{}}},"id":"x\"y","method":"tools/call"}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(top_level_id(deep.as_bytes()), Some(json!("x\"y")));
        assert_eq!(
            top_level_id(br#"{"params":{"id":9}}"#),
            None,
            "a nested id is not the request's"
        );
        assert_eq!(top_level_id(br#"{"id": 7 , "m":1}"#), Some(json!(7)));
        assert_eq!(top_level_id(br#"{"a":"\"id\":3","id":4}"#), Some(json!(4)));
        assert_eq!(top_level_id(br#"{"id":1e400}"#), None, "not an id a reply could carry");
        assert_eq!(top_level_id(br#"{"id":{"x":1}}"#), None);
        let refused = parsed(deep.as_bytes()).unwrap_err();
        assert_eq!(refused.len(), 1);
        assert!(refused[0].contains(r#""id":"x\"y""#), "{}", refused[0]);
        assert!(parsed(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_ok());
        let wrong = parsed(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":7}"#).unwrap_err();
        assert!(
            wrong[0].contains(r#""id":2"#) && wrong[0].contains("-32600"),
            "{}",
            wrong[0]
        );
        let batch = parsed(br#"[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","method":"x"},{"id":"b"}]"#)
            .unwrap_err();
        assert_eq!(batch.len(), 2);
        for response in [
            &br#"{"jsonrpc":"2.0","id":4,"result":7}"#[..],
            br#"{"jsonrpc":"2.0","id":5,"error":"not an error object"}"#,
        ] {
            let answered = parsed(response).err().unwrap_or_default();
            assert!(answered.is_empty(), "a response is never answered: {answered:?}");
        }
    }

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
