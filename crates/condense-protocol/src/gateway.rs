//! The extension's gateway calls (issue 28): what `CondenseEngine`'s `gateway*` methods take and
//! answer. The host (Node's `http` in the extension host) moves bytes; every decision is the
//! core's `HostGateway`, as in `condense gateway`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the extension starts its gateway, from its `contextCondenser.gateway.*` settings.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewayStart {
    /// The port it listens on, on 127.0.0.1 (0 until bound: `gatewayBound` gives it).
    pub port: u16,
    /// The condensation provider: `smart`, or `native` (the ledger at once, an LLM summary written
    /// in the background: the host runs each job `gatewayRequest` hands out with
    /// `gatewaySummarize`).
    pub provider: String,
    /// The threshold, in percent of the model's window.
    pub threshold_percent: u8,
    /// When it condenses: `threshold` (at the threshold only) or `cache-aware` (also earlier,
    /// when it pays for the prompt cache it rewrites); `cache-aware` when absent.
    #[serde(default)]
    pub policy: condense_core::gateway::GatewayPolicy,
    /// Context windows by model id or prefix, over the core's table.
    #[serde(default)]
    pub windows: BTreeMap<String, usize>,
    /// Forward every request untouched and record what would have been done.
    #[serde(default)]
    pub observe: bool,
    /// The Anthropic API's URL.
    pub anthropic_upstream: String,
    /// The OpenAI API's URL.
    pub openai_upstream: String,
    /// The Gemini API's URL.
    pub gemini_upstream: String,
    /// The ChatGPT backend's URL (Codex signed in with ChatGPT); absent: ChatGPT's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chatgpt_upstream: Option<String>,
    /// The state it saved last time, if any: the index (`state.json`; or a state of one file,
    /// every session inline, as version 2 wrote it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The session files it saved last time (`sessions/*.json`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<GatewaySessionFile>,
    /// The absolute folder where each condensation's hidden messages are written for the agent
    /// to read (the gateway's state folder's `recall`); absent: no recall files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_dir: Option<String>,
    /// The most bytes of recall files one session keeps (the core's default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_max_bytes: Option<u64>,
}

/// What starting said.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewayStarted {
    /// The upstreams' origins, as the routes use them.
    pub anthropic: String,
    pub openai: String,
    pub gemini: String,
    pub chatgpt: String,
    /// Why the saved state was not used, if it was not: the host keeps the file's text aside
    /// before anything saves over it.
    pub state_refused: Option<String>,
    /// The saved sessions that could not be read (the others were): the host keeps each one's
    /// text aside, as `condense gateway` does.
    #[serde(default)]
    pub set_aside: Vec<GatewaySetAside>,
}

/// A saved session the gateway could not read, set aside rather than lost.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewaySetAside {
    /// Its position among the saved sessions.
    pub index: usize,
    /// The session file it was read from, when it was one: the host moves it aside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Why it could not be read.
    pub why: String,
    /// Its JSON as saved.
    pub raw: String,
}

/// A session's file of the gateway's state: its name in the state folder's `sessions`, and its
/// text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewaySessionFile {
    /// A plain file name (the core's: hex and `.json`).
    pub name: String,
    pub text: String,
}

/// What to do on disk to save the gateway's state (`gatewaySaveChanges`): the index to write,
/// the session files that changed, the files of sessions let go. Each file written whole, then
/// renamed over its name; a write that failed is told back (`gatewayUnsaved`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewayStateChanges {
    /// The index's JSON (`state.json`).
    pub index: String,
    pub write: Vec<GatewaySessionFile>,
    /// Names of session files to remove.
    pub remove: Vec<String>,
}

/// A request's head, as the host received it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewayHead {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The `Host`, `Origin` and gateway-token headers, if sent.
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub origin: Option<String>,
    #[serde(default)]
    pub token: Option<String>,
}

/// Where a request goes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GatewayRouted {
    /// Answer at once with this status and JSON body.
    Answer { status: u16, body: String },
    /// Read the body (at most `max_body_bytes`) and call `gatewayRequest`.
    Upstream {
        /// `anthropic` or `openai`.
        wire: String,
        /// The upstream URL.
        url: String,
        /// The path after the route's prefix (what the core reads).
        path: String,
        /// The largest body the gateway reads.
        max_body_bytes: u64,
        /// The answer when the body is larger (413 in the route's error shape).
        too_large: String,
    },
}

/// A request to forward, its body passed beside it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewayRequest {
    pub method: String,
    /// The upstream path (from `GatewayRouted::Upstream`).
    pub path: String,
    /// `anthropic` or `openai`.
    pub wire: String,
    /// The `x-context-condenser-session` header, if sent.
    #[serde(default)]
    pub session: Option<String>,
    /// The `User-Agent` header, if sent.
    #[serde(default)]
    pub user_agent: Option<String>,
    /// The client's headers, as received (names lower-case).
    pub headers: Vec<(String, String)>,
}

/// What to send upstream, or to answer at once.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewayForward {
    /// Answer with this JSON body (status 200) instead of forwarding: a token count.
    pub answer: Option<String>,
    /// The headers to send upstream.
    pub headers: Vec<(String, String)>,
    /// The body to send when the gateway rewrote it (UTF-8 JSON); absent: the client's bytes.
    pub body: Option<String>,
    /// The session, when the request was one.
    pub session: Option<String>,
    /// What the log says went out.
    pub log: String,
    /// The summaries this request queued (`native`): each job's id, for `gatewaySummarize`.
    #[serde(default)]
    pub jobs: Vec<u64>,
    /// What to write and remove for the recall files, done before the request is sent.
    #[serde(default)]
    pub recall: Vec<GatewayRecallOp>,
    /// The request's bill, to pass back with its answer (`GatewayAnswer.bill`): the books price
    /// the answer's usage against what the client's own request would have cost.
    #[serde(default)]
    pub bill: Option<u64>,
    /// Whether this request carries a condensation made for it: the host saves the state (whole,
    /// on disk) before sending it, so a gateway killed after it left replays the same bytes.
    #[serde(default)]
    pub condensed_now: bool,
}

/// What the host does on disk for a recall file, as the core decided.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GatewayRecallOp {
    /// Write `text` to `path` (its folders created), readable by the user alone (0600).
    Write { path: String, text: String },
    /// Remove the file at `path` (gone already is fine), and its folder once empty.
    Remove { path: String },
}

/// The body to retry with after "prompt too long", and the recall files to write before.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewayRetry {
    /// The body (UTF-8 JSON).
    pub body: String,
    /// See [`GatewayForward::recall`].
    pub recall: Vec<GatewayRecallOp>,
    /// The retry's bill (see [`GatewayForward::bill`]).
    pub bill: u64,
}

/// A background summary's outcome (`gatewaySummarize`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewaySummary {
    /// The session it was written for.
    pub session: String,
    /// What the model wrote it with, when it did: its output tokens and its cost.
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// Why there is no summary, when there is none (the ledger stays).
    pub error: Option<String>,
    /// Whether the session's next request carries it (false when the session moved past it).
    pub used: bool,
    /// The log line of the outcome, as every host writes it (the core's `summary_line`).
    pub line: String,
}

/// An upstream's answer as received, before its body.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewayAnswer {
    /// The session of the request it answers, if it was one.
    #[serde(default)]
    pub session: Option<String>,
    /// The request's bill (`GatewayForward.bill`, `GatewayRetry.bill`), if it had one.
    #[serde(default)]
    pub bill: Option<u64>,
    /// Its headers (names lower-case).
    pub headers: Vec<(String, String)>,
}

/// An answer from the upstream, before its body.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewayAnswerHead {
    /// The headers to pass to the client.
    pub headers: Vec<(String, String)>,
    /// The usage reader to feed the body to (`gatewayAnswerChunk`), for a session's answer.
    pub reader: Option<u32>,
}

/// One client the setup is written for.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewaySetup {
    /// `claude-code`, `codex`, `cline`, `roo`, `continue`, `openai`, `anthropic`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Where the lines go.
    pub place: String,
    /// The lines to copy.
    pub lines: String,
}

/// A variable of the environment of the terminals a host opens while the gateway runs.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewayVariable {
    /// Its name (`ANTHROPIC_BASE_URL`).
    pub name: String,
    /// Its value.
    pub value: String,
    /// The agents that read it.
    pub read_by: String,
}

/// A condensation undone.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GatewayUndone {
    /// The original messages it had replaced.
    pub start: usize,
    pub end: usize,
}
