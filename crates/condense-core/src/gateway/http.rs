//! What a gateway host does with HTTP, decided once for every host (`condense gateway`, the
//! extension's gateway): the routes, which headers pass each way, the gateway's own errors in
//! the shape of the route's API, and how an upstream says "prompt too long". The hosts own the
//! sockets; they ask here what to do with what passes through them, so two hosts given the same
//! requests send the same things.

use serde_json::json;

/// The header naming the session, for clients the core cannot tell apart by their bodies.
pub const SESSION_HEADER: &str = "x-context-condenser-session";

/// The header that carries the gateway's token. The client's own `Authorization` belongs to the
/// upstream and is forwarded untouched, so the token has a header of its own.
pub const TOKEN_HEADER: &str = "x-context-condenser-token";

/// Anthropic's token-count path, which the gateway answers for the request as it would forward it.
pub const COUNT_TOKENS: &str = "/v1/messages/count_tokens";

/// The largest request body, in bytes: the core's limit on a conversation.
pub const MAX_BODY_BYTES: u64 = crate::limits::MAX_CONVERSATION_BYTES;

/// The API a request speaks, by its route: it picks the shape of the gateway's own errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// `/anthropic/…`: the Anthropic API.
    Anthropic,
    /// `/openai/v1/…`: the OpenAI API (and OpenAI-compatible servers).
    OpenAi,
    /// `/gemini/…`: the Gemini API.
    Gemini,
}

/// The ChatGPT backend Codex talks to when signed in with ChatGPT (its Responses endpoint is
/// `{this}/responses`), the default upstream of `/chatgpt/…`.
pub const CHATGPT_BACKEND: &str = "https://chatgpt.com/backend-api/codex";

/// Google's Gemini API, the default upstream of `/gemini/…`.
pub const GEMINI_API: &str = "https://generativelanguage.googleapis.com";

/// The upstreams' origins (see [`upstream_origin`]), one per route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstreams {
    /// Where `/anthropic/…` goes.
    pub anthropic: String,
    /// Where `/openai/v1/…` goes.
    pub openai: String,
    /// Where `/gemini/…` goes.
    pub gemini: String,
    /// Where `/chatgpt/…` goes: the ChatGPT backend, for Codex signed in with ChatGPT.
    pub chatgpt: String,
}

/// Where a request to the gateway goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /healthz`.
    Health,
    /// `GET /stats`.
    Stats,
    /// To an upstream: its full URL, and the upstream path with its query (what the core reads).
    Upstream {
        /// The API.
        wire: Wire,
        /// The upstream's origin and the path, query included.
        url: String,
        /// The path after the route's prefix, query included, e.g. `/v1/messages?beta=true`.
        path: String,
    },
    /// A path with a dot segment or an encoded separator (see [`leaves_its_route`]): refused.
    BadPath,
    /// Anything else.
    NotFound,
}

/// Whether a request path (its query excluded) could leave its route's prefix at the upstream: a
/// `.` or `..` segment, raw or percent-encoded (`%2e`), or a separator a server may read as one
/// (`\`, `%2f`, `%5c`). The hosts build the upstream URL by appending the path to the upstream's
/// origin; a URL parser on the way (Node's `new URL`, the upstream's own router) resolves dot
/// segments, so `/anthropic/../../etc/passwd` would reach the upstream as `/etc/passwd` with the
/// client's credentials, and an upstream path prefix (`…/team-a/openai`) could be left for
/// another. No API the gateway serves has such a path.
pub fn leaves_its_route(path_and_query: &str) -> bool {
    let path = path_and_query.split(['?', '#']).next().unwrap_or_default();
    path.contains('\\')
        || path.split('/').any(|segment| {
            let decoded = percent_decoded(segment);
            decoded == "." || decoded == ".." || decoded.contains(['/', '\\'])
        })
}

/// `segment` with its `%XX` escapes decoded as bytes (read lossily), repeatedly, so that a double
/// encoding (`%252e`) is seen through too.
fn percent_decoded(segment: &str) -> String {
    let mut text = segment.to_owned();
    for _ in 0..4 {
        if !text.contains('%') {
            break;
        }
        let bytes = text.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex))
            {
                (b'%', Some(hi), Some(lo)) => {
                    out.push((hi * 16 + lo) as u8);
                    i += 3;
                }
                (b, _, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        let decoded = String::from_utf8_lossy(&out).into_owned();
        if decoded == text {
            break;
        }
        text = decoded;
    }
    text
}

/// The route of a request to the gateway (its path and query), given the upstreams' origins
/// (without a trailing `/` or `/v1`).
pub fn route(upstreams: &Upstreams, path_and_query: &str) -> Route {
    let Upstreams { anthropic, openai, gemini, chatgpt } = upstreams;
    let path = path_and_query.split('?').next().unwrap_or_default();
    if leaves_its_route(path_and_query) {
        Route::BadPath
    } else if path == "/healthz" {
        Route::Health
    } else if path == "/stats" {
        Route::Stats
    } else if let Some(rest) = path_and_query.strip_prefix("/anthropic").filter(|r| r.starts_with('/')) {
        Route::Upstream { wire: Wire::Anthropic, url: format!("{anthropic}{rest}"), path: rest.into() }
    } else if let Some(rest) = path_and_query.strip_prefix("/openai").filter(|r| r.starts_with("/v1/")) {
        Route::Upstream { wire: Wire::OpenAi, url: format!("{openai}{rest}"), path: rest.into() }
    } else if let Some(rest) = path_and_query.strip_prefix("/gemini").filter(|r| r.starts_with("/v1")) {
        Route::Upstream { wire: Wire::Gemini, url: format!("{gemini}{rest}"), path: rest.into() }
    } else if let Some(rest) = path_and_query.strip_prefix("/chatgpt").filter(|r| r.starts_with('/')) {
        // The ChatGPT backend speaks OpenAI's Responses API under a path of its own.
        Route::Upstream { wire: Wire::OpenAi, url: format!("{chatgpt}{rest}"), path: rest.into() }
    } else {
        Route::NotFound
    }
}

/// What the gateway says for a path with a dot segment or an encoded separator.
pub const BAD_PATH: &str = "the path has a `.` or `..` segment or an encoded `/` or `\\` (raw or percent-encoded); the gateway refuses it";

/// What the gateway says for a path it does not serve.
pub const NOT_FOUND: &str =
    "the gateway serves /anthropic/…, /openai/v1/…, /gemini/v1…, /chatgpt/…, /healthz and /stats";

/// An upstream origin as the routes use it: an http or https URL, without a trailing `/` or
/// `/v1` (the routes carry the API's path). The error says what is wrong.
pub fn upstream_origin(url: &str) -> Result<String, String> {
    let url = url.trim();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("{url}: expected an http:// or https:// URL"))?;
    if rest.split(['/', '?', '#']).next().is_none_or(str::is_empty) {
        return Err(format!("{url}: the URL names no host"));
    }
    let url = url.trim_end_matches('/');
    Ok(url.strip_suffix("/v1").unwrap_or(url).to_owned())
}

/// Headers that belong to one connection, never passed on (RFC 9110 §7.6.1): the first of
/// [`NEVER_UPSTREAM`].
pub const HOP_BY_HOP: &[&str] = NEVER_UPSTREAM.split_at(8).0;

/// The header names a message's `Connection` header lists (its values, as received): they are
/// hop-by-hop too.
pub fn connection_named<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    values.into_iter().flat_map(|v| v.split(',')).map(|n| n.trim().to_ascii_lowercase()).collect()
}

/// The client's headers never passed upstream, whatever the request: the hop-by-hop ones, `Host`
/// and `Content-Length` (the upstream's own, and the body's as sent), `Expect` (answered for this
/// hop), the gateway's own. The TypeScript host's fallback for a trapped engine reads the
/// generated copy (`NEVER_UPSTREAM` in the protocol package). The hop-by-hop ones first.
pub const NEVER_UPSTREAM: [&str; 13] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "expect",
    SESSION_HEADER,
    TOKEN_HEADER,
];

/// Whether a client's header goes on to the upstream: not one of [`NEVER_UPSTREAM`], nor named by
/// the request's `Connection` (`named`, its [`connection_named`]). A conversation's
/// `Accept-Encoding` is replaced by [`CONVERSATION_ACCEPT_ENCODING`] ([`upstream_headers`]).
pub fn forwards_upstream(name: &str, named: &[String]) -> bool {
    let name = name.to_ascii_lowercase();
    !NEVER_UPSTREAM.contains(&name.as_str()) && !named.contains(&name)
}

/// The `Connection` header's named headers among `headers`, a message's (name, value) pairs;
/// `text` reads a value as text.
fn named_in<N: AsRef<str>, V>(headers: &[(N, V)], text: &impl Fn(&V) -> Option<&str>) -> Vec<String> {
    connection_named(
        headers
            .iter()
            .filter(|(n, _)| n.as_ref().eq_ignore_ascii_case("connection"))
            .filter_map(|(_, v)| text(v)),
    )
}

/// The headers a request sends upstream, the one rule of every host: of the client's (name,
/// value) pairs as received, those [`forwards_upstream`] passes, in order; for a conversation,
/// `Accept-Encoding` replaced by `identity` (the host's value of
/// [`CONVERSATION_ACCEPT_ENCODING`]), so that its answer's usage can be read as it passes. `text`
/// reads a value as text (for `Connection`).
pub fn upstream_headers<N: AsRef<str>, V: Clone>(
    headers: &[(N, V)],
    text: impl Fn(&V) -> Option<&str>,
    conversation: bool,
    identity: V,
) -> Vec<(String, V)> {
    let named = named_in(headers, &text);
    let mut out: Vec<(String, V)> = headers
        .iter()
        .filter(|(name, _)| forwards_upstream(name.as_ref(), &named))
        .filter(|(name, _)| !(conversation && name.as_ref().eq_ignore_ascii_case("accept-encoding")))
        .map(|(name, value)| (name.as_ref().to_owned(), value.clone()))
        .collect();
    if conversation {
        out.push(("accept-encoding".to_owned(), identity));
    }
    out
}

/// The headers of an upstream's answer the client gets, the one rule of every host: of its
/// (name, value) pairs, those [`forwards_answer`] passes, in order. `text` reads a value as text
/// (for `Connection`).
pub fn answer_headers<N: AsRef<str>, V: Clone>(
    headers: &[(N, V)],
    text: impl Fn(&V) -> Option<&str>,
) -> Vec<(String, V)> {
    let named = named_in(headers, &text);
    headers
        .iter()
        .filter(|(name, _)| forwards_answer(name.as_ref(), &named))
        .map(|(name, value)| (name.as_ref().to_owned(), value.clone()))
        .collect()
}

/// A conversation's answer is asked for without compression, so that its usage can be read as
/// it passes; every other request keeps the client's `Accept-Encoding`.
pub const CONVERSATION_ACCEPT_ENCODING: &str = "identity";

/// Whether an upstream's answer header goes on to the client: not hop-by-hop, and not
/// `Content-Length` (the body is re-framed for the client's connection).
pub fn forwards_answer(name: &str, named: &[String]) -> bool {
    let name = name.to_ascii_lowercase();
    !HOP_BY_HOP.contains(&name.as_str()) && !named.contains(&name) && name != "content-length"
}

/// The gateway's own error for `wire` (or none: the gateway's own routes), in the shape that API
/// uses for its errors, so that the client shows it as it shows the API's: the JSON body.
pub fn error_body(wire: Option<Wire>, status: u16, message: &str) -> String {
    let value = match wire {
        Some(Wire::Anthropic) => {
            let kind = match status {
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                400..=499 => "invalid_request_error",
                _ => "api_error",
            };
            json!({ "type": "error", "error": { "type": kind, "message": message } })
        }
        Some(Wire::Gemini) => {
            // Google's shape: the status code, the message, and the canonical status name.
            let kind = match status {
                401 => "UNAUTHENTICATED",
                403 => "PERMISSION_DENIED",
                404 => "NOT_FOUND",
                408 => "DEADLINE_EXCEEDED",
                429 => "RESOURCE_EXHAUSTED",
                400..=499 => "INVALID_ARGUMENT",
                503 => "UNAVAILABLE",
                _ => "INTERNAL",
            };
            json!({ "error": { "code": status, "message": message, "status": kind } })
        }
        Some(Wire::OpenAi) | None => {
            let kind = if status >= 500 { "server_error" } else { "invalid_request_error" };
            json!({ "error": { "message": message, "type": kind, "param": null, "code": null } })
        }
    };
    value.to_string()
}

/// The most characters of a client's value (a path, a model, a session id) a log line or
/// `/stats` shows.
pub const SHOWN_CHARS: usize = 200;

/// A value from a client as a log line or `/stats` shows it: control characters, line and
/// paragraph separators and the bidirectional overrides written as escapes (`\n`, `\u{202e}`),
/// never as themselves, so no value can forge a log line or reorder one; cut at `max` characters,
/// with `…` after.
pub fn shown(value: &str, max: usize) -> String {
    let mut out = String::with_capacity(value.len().min(max * 2));
    let mut count = 0;
    for c in value.chars() {
        let piece = match c {
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\t' => "\\t".to_owned(),
            c if needs_escape(c) => format!("\\u{{{:x}}}", c as u32),
            c => c.to_string(),
        };
        let len = piece.chars().count();
        if count + len > max {
            out.push('…');
            break;
        }
        out.push_str(&piece);
        count += len;
    }
    out
}

/// Whether `c` would act on a log rather than be read in it.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `value` is shown as it is (see [`shown`]).
pub(super) fn shows_as_is(value: &str) -> bool {
    value.chars().count() <= SHOWN_CHARS && !value.chars().any(needs_escape)
}

/// A host's log line for one request: its method, its path without the query, the status, the
/// session and what went out, every value from the client shown by [`shown`]. Never a header.
pub fn log_line(method: &str, path: &str, status: u16, session: Option<&str>, what: &str) -> String {
    let path = path.split('?').next().unwrap_or_default();
    let session = session.map(|s| format!(" [{}]", shown(s, SHOWN_CHARS))).unwrap_or_default();
    format!(
        "gateway: {} {} → {status}{session}: {}",
        shown(method, 16),
        shown(path, SHOWN_CHARS),
        shown(what, 2 * SHOWN_CHARS)
    )
}

/// Whether an upstream's answer of `status` may be a "prompt too long" worth one condensed retry.
pub fn may_be_too_long(status: u16) -> bool {
    status == 400 || status == 413
}

/// Whether an upstream's error answer says the prompt is longer than the model's window
/// (Anthropic's `prompt is too long`, OpenAI's `context_length_exceeded`, Gemini's "input token
/// count … exceeds the maximum number of tokens allowed").
pub fn says_too_long(answer: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&answer[..answer.len().min(64 << 10)]).to_ascii_lowercase();
    [
        "prompt is too long",
        "context_length_exceeded",
        "maximum context length",
        "context window",
        "exceeds the maximum number of tokens",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstreams(anthropic: &str, openai: &str) -> Upstreams {
        Upstreams {
            anthropic: anthropic.into(),
            openai: openai.into(),
            gemini: "https://g.example".into(),
            chatgpt: "https://c.example/backend-api/codex".into(),
        }
    }

    #[test]
    fn one_rule_for_the_headers_passed_on_whatever_the_host() {
        let client = [
            ("Host", "x"),
            ("Connection", "close, x-hop"),
            ("x-hop", "1"),
            ("x-api-key", "k"),
            (SESSION_HEADER, "s"),
            ("Accept-Encoding", "gzip"),
        ];
        fn text<'a>(v: &'a &str) -> Option<&'a str> {
            Some(v)
        }
        let passed = upstream_headers(&client, text, false, "identity");
        assert_eq!(passed, [("x-api-key".to_owned(), "k"), ("Accept-Encoding".to_owned(), "gzip")]);
        let conversation = upstream_headers(&client, text, true, "identity");
        assert_eq!(conversation, [("x-api-key".to_owned(), "k"), ("accept-encoding".to_owned(), "identity")]);
        let answer = [("content-length", "3"), ("content-type", "text/event-stream"), ("te", "x")];
        assert_eq!(answer_headers(&answer, text), [("content-type".to_owned(), "text/event-stream")]);
    }

    #[test]
    fn routes_keep_the_path_and_query_after_their_prefix() {
        let up = upstreams("https://a.example", "https://o.example");
        let r = |p| route(&up, p);
        assert_eq!(
            r("/anthropic/v1/messages?beta=true"),
            Route::Upstream {
                wire: Wire::Anthropic,
                url: "https://a.example/v1/messages?beta=true".into(),
                path: "/v1/messages?beta=true".into()
            }
        );
        assert_eq!(
            r("/openai/v1/responses"),
            Route::Upstream {
                wire: Wire::OpenAi,
                url: "https://o.example/v1/responses".into(),
                path: "/v1/responses".into()
            }
        );
        assert_eq!(
            r("/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"),
            Route::Upstream {
                wire: Wire::Gemini,
                url: "https://g.example/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse".into(),
                path: "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse".into()
            }
        );
        assert_eq!(
            r("/chatgpt/responses"),
            Route::Upstream {
                wire: Wire::OpenAi,
                url: "https://c.example/backend-api/codex/responses".into(),
                path: "/responses".into()
            }
        );
        assert_eq!(r("/healthz?x=1"), Route::Health);
        assert_eq!(r("/stats"), Route::Stats);
        for other in ["/openai/chat/completions", "/anthropicx/v1/messages", "/v1/messages", "/gemini/x", "/"]
        {
            assert_eq!(r(other), Route::NotFound, "{other}");
        }
    }

    #[test]
    fn a_path_that_could_leave_its_route_is_refused_before_routing() {
        let up = upstreams("https://a.example/team-a", "https://o.example/team-a/openai");
        let r = |p| route(&up, p);
        for bad in [
            "/anthropic/../../etc/passwd",
            "/anthropic/v1/./messages",
            "/openai/v1/../../../team-b/openai/v1/responses",
            "/openai/v1/%2e%2e/%2E%2E/team-b",
            "/openai/v1/.%2e/x",
            "/openai/v1/%252e%252e/x",
            "/anthropic/v1/..%2f..%2fetc",
            "/anthropic/v1/%5c..%5cetc",
            "/anthropic/v1\\..\\etc",
            "/..",
            "/healthz/..",
        ] {
            assert_eq!(r(bad), Route::BadPath, "{bad}");
        }
        // A dot inside a name, a query with dots, an encoded space: fine.
        for good in [
            "/anthropic/v1/messages?x=../..",
            "/openai/v1/models/gpt-4.1",
            "/openai/v1/files/a%20b",
            "/anthropic/v1/.well",
            "/gemini/v1beta/models/gemini-2.5-pro:generateContent?key=a.b",
        ] {
            assert!(matches!(r(good), Route::Upstream { .. }), "{good}");
        }
    }

    #[test]
    fn a_clients_values_cannot_forge_a_log_line_or_fill_it() {
        let line = log_line(
            "POST",
            "/anthropic/v1/messages?key=secret",
            200,
            Some("header:a\r\nX-Injected: 1\u{0}\u{202e}"),
            "observe: model probe\ngateway: POST /forged → 200",
        );
        assert!(!line.contains(['\r', '\n', '\u{0}', '\u{202e}']), "{line}");
        assert!(line.contains("a\\r\\nX-Injected: 1\\u{0}\\u{202e}"), "{line}");
        assert!(!line.contains("secret"), "the query is never logged");
        let long = log_line(
            "POST",
            &format!("/anthropic/{}", "a".repeat(100_000)),
            200,
            Some(&"s".repeat(100_000)),
            "x",
        );
        assert!(long.chars().count() < 3 * SHOWN_CHARS, "{}", long.len());
        assert_eq!(shown("claude-sonnet-4-5", SHOWN_CHARS), "claude-sonnet-4-5");
        assert!(shows_as_is("claude-sonnet-4-5") && !shows_as_is("a\nb") && !shows_as_is(&"a".repeat(201)));
    }

    #[test]
    fn the_hop_by_hop_headers_are_the_connections_own_and_never_go_upstream() {
        assert!(HOP_BY_HOP.contains(&"transfer-encoding") && HOP_BY_HOP.contains(&"upgrade"));
        assert!(!HOP_BY_HOP.contains(&"host") && !HOP_BY_HOP.contains(&"content-length"));
        assert!(HOP_BY_HOP.iter().all(|h| !forwards_upstream(h, &[])));
    }

    #[test]
    fn an_upstream_is_an_origin_without_v1() {
        assert_eq!(upstream_origin("https://api.openai.com/v1/").unwrap(), "https://api.openai.com");
        assert_eq!(upstream_origin("http://127.0.0.1:11434/v1").unwrap(), "http://127.0.0.1:11434");
        assert_eq!(upstream_origin("https://api.anthropic.com").unwrap(), "https://api.anthropic.com");
        for bad in ["ftp://x", "api.openai.com", "http://", "https:///v1"] {
            assert!(upstream_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hop_by_hop_and_the_gateways_own_headers_stay_here_and_credentials_go_on() {
        let named = connection_named(["keep-alive, X-Hop"]);
        let passes = |n: &str| forwards_upstream(n, &named);
        for kept in ["x-api-key", "authorization", "anthropic-beta", "accept-encoding", "X-Api-Key"] {
            assert!(passes(kept), "{kept}");
        }
        for dropped in
            ["host", "connection", "x-hop", "keep-alive", "transfer-encoding", "content-length", "expect"]
        {
            assert!(!passes(dropped), "{dropped}");
        }
        assert!(!passes(SESSION_HEADER) && !passes(TOKEN_HEADER));
        assert!(forwards_answer("content-type", &[]) && forwards_answer("retry-after", &[]));
        assert!(!forwards_answer("Content-Length", &[]) && !forwards_answer("transfer-encoding", &[]));
    }

    #[test]
    fn errors_take_the_shape_of_the_routes_api() {
        let anthropic: serde_json::Value =
            serde_json::from_str(&error_body(Some(Wire::Anthropic), 413, "big")).unwrap();
        assert_eq!(anthropic["error"]["type"], "request_too_large");
        assert_eq!(anthropic["type"], "error");
        let openai: serde_json::Value =
            serde_json::from_str(&error_body(Some(Wire::OpenAi), 502, "down")).unwrap();
        assert_eq!(openai["error"]["type"], "server_error");
        assert_eq!(openai["error"]["message"], "down");
        let gemini: serde_json::Value =
            serde_json::from_str(&error_body(Some(Wire::Gemini), 401, "no token")).unwrap();
        assert_eq!(gemini["error"]["code"], 401);
        assert_eq!(gemini["error"]["status"], "UNAUTHENTICATED");
        assert_eq!(gemini["error"]["message"], "no token");
    }

    #[test]
    fn too_long_answers_are_recognised_in_every_api() {
        assert!(says_too_long(br#"{"error":{"message":"prompt is too long: 210000 tokens > 200000"}}"#));
        assert!(says_too_long(
            br#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#
        ));
        assert!(says_too_long(br#"{"error":{"code":"context_length_exceeded"}}"#));
        assert!(!says_too_long(br#"{"error":{"message":"max_tokens: Field required"}}"#));
        assert!(may_be_too_long(400) && may_be_too_long(413) && !may_be_too_long(500));
    }
}
