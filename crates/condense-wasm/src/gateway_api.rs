//! `CondenseEngine`'s gateway (issue 28): the core's `HostGateway`, held by the engine, for the
//! extension host's HTTP server. The host receives a request, asks where it goes
//! (`gatewayRoute`), reads its body, asks what to send (`gatewayRequest`), sends it with its own
//! fetch, feeds the answer's bytes to a usage reader as they pass (`gatewayAnswer`,
//! `gatewayAnswerChunk`, `gatewayAnswerEnd`), and retries once after "prompt too long"
//! (`gatewayTooLong`), writing first the recall files each answer names (each condensation's
//! hidden messages, for the agent to read; `gatewayRecallFailed` when it cannot). With `native`, a request that crossed the threshold also hands out summary
//! jobs, which the host runs in the background with the model it picks (`gatewaySummarize`) or
//! gives up (`gatewayDropJob`). The rest is the Gateway view's: the report, a session's
//! condensations, and the per-session controls. Nothing here sees the client's credentials but
//! as headers passed through the core's filter.

use std::net::SocketAddr;
use std::rc::Rc;

use condense_core::ErrorKind;
use condense_core::gateway::{
    CONVERSATION_ACCEPT_ENCODING, GatewayConfig, GatewayPreview, GatewayReport, GatewaySessionView, Guard,
    HostGateway, MAX_BODY_BYTES, Outgoing, RECALL_SESSION_BYTES, RecallConfig, RecallOp, Routed, SetupClient,
    SummaryJob, UsageReader, Wire, connection_named, error_body, forwards_answer, forwards_upstream,
    summarize, upstream_origin,
};
use condense_core::host::Clock;
use condense_core::provider::Services;
use condense_protocol::calls::LlmTarget;
use condense_protocol::gateway::{
    GatewayAnswer, GatewayAnswerHead, GatewayForward, GatewayHead, GatewayRecallOp, GatewayRequest,
    GatewayRetry, GatewayRouted, GatewaySetup, GatewayStart, GatewayStarted, GatewaySummary, GatewayUndone,
};
use wasm_bindgen::prelude::*;

use crate::convert::error;
use crate::engine::{CondenseEngine, Inner};
use crate::gateway_state::RunningGateway;
use crate::surface::{Bytes, engine_api};

crate::surface::data!(
    GatewayStart,
    GatewayStarted,
    GatewayHead,
    GatewayRouted,
    GatewayRequest,
    GatewayForward,
    GatewayAnswer,
    GatewayAnswerHead,
    GatewaySetup,
    GatewayUndone,
    GatewaySummary,
    GatewayRetry,
    GatewayReport,
    GatewaySessionView,
    GatewayPreview
);

/// The scope of the gateway's background work, which stopping it cancels.
const SCOPE: &str = "gateway";

engine_api! {
    /// Starts the gateway (a running one is replaced), restoring `options.state` when it is a
    /// state this gateway can read; why not otherwise.
    sync fn gatewayStart = gateway_start(options: GatewayStart) -> GatewayStarted;

    /// Stops the gateway: its sessions are dropped (save them first).
    sync fn gatewayStop = gateway_stop() -> ();

    /// The port the host's server bound, which the guard takes as the gateway's own.
    sync fn gatewayBound = gateway_bound(port: f64) -> ();

    /// Where a request goes: answered at once (health, statistics, a refusal, not found) or
    /// upstream.
    sync fn gatewayRoute = gateway_route(head: GatewayHead) -> GatewayRouted;

    /// What to send upstream for a request routed there, given its whole body: the headers,
    /// the body when rewritten, or an answer at once (a token count).
    sync fn gatewayRequest = gateway_request(request: GatewayRequest, body: Bytes) -> GatewayForward;

    /// Writes the summary of job `job` with `llm` (`native`), off the request path, and gives it
    /// to the session: its next request carries it. A failure keeps the ledger and says why.
    async fn gatewaySummarize = gateway_summarize(job: f64, llm: LlmTarget) -> GatewaySummary;

    /// Gives up job `job` (no model to write it): the ledger stays, and the figures say why.
    sync fn gatewayDropJob = gateway_drop_job(job: f64, reason: String) -> GatewaySummary;

    /// The upstream answered `status` with `answer` before any byte reached the client: the
    /// body to retry with once when it says the prompt is too long, and the recall files to
    /// write before.
    sync fn gatewayTooLong = gateway_too_long(session: String, status: f64, answer: Bytes, client_body: Bytes) -> Option<GatewayRetry>;

    /// The host could not write the recall file at `path` of `session`: the figures say why.
    sync fn gatewayRecallFailed = gateway_recall_failed(session: String, path: String, why: String) -> ();

    /// An upstream's answer arrived: the headers to pass on, and a usage reader for its body.
    sync fn gatewayAnswer = gateway_answer(answer: GatewayAnswer) -> GatewayAnswerHead;

    /// A chunk of an answer's body, after it was passed on.
    sync fn gatewayAnswerChunk = gateway_answer_chunk(reader: f64, chunk: Bytes) -> ();

    /// The answer ended (or was cut off): its usage is counted.
    sync fn gatewayAnswerEnd = gateway_answer_end(reader: f64) -> ();

    /// The figures: per session and in total, the configuration, the host's counts.
    sync fn gatewayReport = gateway_report() -> GatewayReport;

    /// A session's window and condensations.
    sync fn gatewaySession = gateway_session(session: String) -> GatewaySessionView;

    /// What the session's next condensation would be if made now.
    sync fn gatewayPreview = gateway_preview(session: String) -> GatewayPreview;

    /// Condenses the session's next request, threshold or not.
    sync fn gatewayCondenseNext = gateway_condense_next(session: String) -> ();

    /// Pauses the session (forwarded untouched) or resumes it.
    sync fn gatewayPause = gateway_pause(session: String, paused: bool) -> ();

    /// Undoes the session's latest condensation: its next request goes out without it.
    sync fn gatewayUndo = gateway_undo(session: String) -> GatewayUndone;

    /// The state to save (JSON), to pass back as `GatewayStart.state`.
    sync fn gatewaySave = gateway_save() -> String;

    /// The gateway's own error for a route's API (`anthropic` or `openai`), as that API shapes
    /// its errors: the JSON body.
    sync fn gatewayErrorBody = gateway_error_body(wire: String, status: f64, message: String) -> String;

    /// How to point each client at a gateway at `base` (`http://127.0.0.1:4141`).
    sync fn gatewaySetup = gateway_setup(base: String) -> Vec<GatewaySetup>;
}

fn invalid(message: impl Into<String>) -> JsValue {
    error(ErrorKind::InvalidInput, &message.into())
}

/// Runs `f` on the running gateway; an error when none runs.
fn with<R>(
    inner: &Rc<Inner>,
    f: impl FnOnce(&mut RunningGateway) -> Result<R, JsValue>,
) -> Result<R, JsValue> {
    let mut slot = inner.gateway.borrow_mut();
    let running = slot.as_mut().ok_or_else(|| invalid("the gateway is not running"))?;
    f(running)
}

fn gateway_start(inner: &Rc<Inner>, options: GatewayStart) -> Result<GatewayStarted, JsValue> {
    if !matches!(options.provider.as_str(), "smart" | "native") {
        return Err(invalid(format!(
            "the extension's gateway condenses with smart or native, not {:?}",
            options.provider
        )));
    }
    let anthropic = upstream_origin(&options.anthropic_upstream)
        .map_err(|e| invalid(format!("anthropicUpstream: {e}")))?;
    let openai =
        upstream_origin(&options.openai_upstream).map_err(|e| invalid(format!("openaiUpstream: {e}")))?;
    let recall = options.recall_dir.map(|dir| RecallConfig {
        dir,
        max_session_bytes: options.recall_max_bytes.map_or(RECALL_SESSION_BYTES, |b| b as usize),
    });
    let config = GatewayConfig {
        provider: options.provider,
        threshold: f64::from(options.threshold_percent) / 100.0,
        policy: options.policy,
        windows: options.windows,
        observe: options.observe,
        recall,
        ..GatewayConfig::default()
    };
    let guard = Guard { bound: SocketAddr::from(([127, 0, 0, 1], options.port)), token: None };
    let mut host = HostGateway::new(config, anthropic.clone(), openai.clone(), guard).map_err(invalid)?;
    let state_refused = options.state.and_then(|state| host.load(state.as_bytes()).err());
    inner.cancel(Some(SCOPE.to_owned()));
    *inner.gateway.borrow_mut() = Some(RunningGateway::new(host));
    Ok(GatewayStarted { anthropic, openai, state_refused })
}

fn gateway_stop(inner: &Rc<Inner>) -> Result<(), JsValue> {
    inner.cancel(Some(SCOPE.to_owned()));
    inner.gateway.borrow_mut().take();
    Ok(())
}

/// The outcome of job `id` given to the core, and what it says of it.
fn summary_done(
    inner: &Rc<Inner>,
    id: u64,
    session: String,
    outcome: Result<condense_core::gateway::SummaryDone, String>,
) -> Result<GatewaySummary, JsValue> {
    let (output_tokens, cost_usd, error) = match &outcome {
        Ok(done) => (Some(done.output_tokens), Some(done.cost_usd), None),
        Err(why) => (None, None, Some(why.clone())),
    };
    let used = with(inner, |g| Ok(g.host.gateway().summary_done(id, outcome)))?;
    Ok(GatewaySummary { session, output_tokens, cost_usd, error, used })
}

fn take_job(inner: &Rc<Inner>, job: f64) -> Result<SummaryJob, JsValue> {
    with(inner, |g| g.jobs.remove(&(job as u64)).ok_or_else(|| invalid(format!("no summary job {job}"))))
}

async fn gateway_summarize(inner: Rc<Inner>, job: f64, llm: LlmTarget) -> Result<GatewaySummary, JsValue> {
    let job = take_job(&inner, job)?;
    let client = match inner.client(llm) {
        Ok(client) => client,
        Err(e) => {
            let why = e.dyn_ref::<js_sys::Error>().map_or_else(
                || "the summary's model cannot be used".to_owned(),
                |e| String::from(e.message()),
            );
            return summary_done(&inner, job.id, job.session, Err(why));
        }
    };
    let counter = inner.counter(&client.profile().model);
    let abort = inner.begin(Some(SCOPE));
    let services = Services::new(counter.as_ref(), inner.host.as_ref())
        .with_abort(&abort)
        .with_timer(&crate::host::JsTimer)
        .with_llm(client.as_ref());
    // No borrow of the gateway is held meanwhile: requests go on while the model writes.
    let outcome = summarize(&job, services).await;
    inner.end(&abort);
    summary_done(&inner, job.id, job.session, outcome)
}

fn gateway_drop_job(inner: &Rc<Inner>, job: f64, reason: String) -> Result<GatewaySummary, JsValue> {
    let job = take_job(inner, job)?;
    summary_done(inner, job.id, job.session, Err(reason))
}

fn gateway_bound(inner: &Rc<Inner>, port: f64) -> Result<(), JsValue> {
    let port = u16::try_from(port as i64).map_err(|_| invalid("port must be 1 to 65535"))?;
    with(inner, |g| {
        g.host.bound(SocketAddr::from(([127, 0, 0, 1], port)));
        Ok(())
    })
}

fn wire_name(wire: Wire) -> &'static str {
    match wire {
        Wire::Anthropic => "anthropic",
        Wire::OpenAi => "openai",
    }
}

fn wire_of(name: &str) -> Result<Wire, JsValue> {
    match name {
        "anthropic" => Ok(Wire::Anthropic),
        "openai" => Ok(Wire::OpenAi),
        other => Err(invalid(format!("wire must be anthropic or openai, not {other:?}"))),
    }
}

fn gateway_route(inner: &Rc<Inner>, head: GatewayHead) -> Result<GatewayRouted, JsValue> {
    with(inner, |g| {
        let token = head.token.as_deref().map(str::as_bytes);
        Ok(
            match g.host.route(&head.method, &head.path, head.host.as_deref(), head.origin.as_deref(), token)
            {
                Routed::Answer { status, body } => GatewayRouted::Answer { status, body },
                Routed::Upstream { wire, url, path } => {
                    let limit = MAX_BODY_BYTES >> 20;
                    let too_large =
                        error_body(Some(wire), 413, &format!("request bodies are limited to {limit} MB"));
                    GatewayRouted::Upstream {
                        wire: wire_name(wire).into(),
                        url,
                        path,
                        max_body_bytes: MAX_BODY_BYTES,
                        too_large,
                    }
                }
            },
        )
    })
}

fn gateway_request(
    inner: &Rc<Inner>,
    request: GatewayRequest,
    body: Bytes,
) -> Result<GatewayForward, JsValue> {
    let wire = wire_of(&request.wire)?;
    with(inner, |g| {
        // With the gateway borrowed: a test build's panic leaves the instance as a real bug would.
        crate::panic::test_panic(std::str::from_utf8(&body.0).unwrap_or_default());
        let session = request.session.as_deref();
        if let Some(answer) = g.host.count_tokens(wire, &request.method, &request.path, session, &body.0) {
            let log = "counted as it will be forwarded".to_owned();
            return Ok(GatewayForward {
                answer: Some(answer),
                headers: Vec::new(),
                body: None,
                session: None,
                log,
                jobs: Vec::new(),
                recall: Vec::new(),
                bill: None,
            });
        }
        let now = inner.host.now_ms() as i64;
        let decided = g.host.decide(
            &request.method,
            &request.path,
            session,
            request.user_agent.as_deref(),
            &body.0,
            now,
        );
        let bill = decided.bill;
        let (outgoing, queued) = (decided.outgoing, decided.jobs);
        let recall = recall_ops(decided.recall);
        let jobs = queued.iter().map(|job| job.id).collect();
        g.jobs.extend(queued.into_iter().map(|job| (job.id, job)));
        let conversation = !matches!(
            outgoing,
            Outgoing::Client { reason: condense_core::gateway::Untouched::NotAConversation, .. }
        );
        let named = connection_named(
            request.headers.iter().filter(|(n, _)| n == "connection").map(|(_, v)| v.as_str()),
        );
        let mut headers: Vec<(String, String)> = request
            .headers
            .into_iter()
            .filter(|(name, _)| forwards_upstream(name, &named))
            .filter(|(name, _)| !(conversation && name.eq_ignore_ascii_case("accept-encoding")))
            .collect();
        if conversation {
            headers.push(("accept-encoding".into(), CONVERSATION_ACCEPT_ENCODING.into()));
        }
        let log = outgoing.describe();
        let session = outgoing.session().map(str::to_owned);
        let body = match outgoing {
            Outgoing::Rewritten { body, .. } => Some(body),
            Outgoing::Client { .. } => None,
        };
        Ok(GatewayForward { answer: None, headers, body, session, log, jobs, recall, bill })
    })
}

fn gateway_too_long(
    inner: &Rc<Inner>,
    session: String,
    status: f64,
    answer: Bytes,
    client_body: Bytes,
) -> Result<Option<GatewayRetry>, JsValue> {
    with(inner, |g| {
        let retry = g.host.too_long(&session, status as u16, &answer.0, &client_body.0);
        Ok(retry.map(|r| GatewayRetry { body: r.body, recall: recall_ops(r.recall), bill: r.bill }))
    })
}

fn gateway_recall_failed(
    inner: &Rc<Inner>,
    session: String,
    path: String,
    why: String,
) -> Result<(), JsValue> {
    with(inner, |g| {
        g.host.recall_failed(&session, &path, &why);
        Ok(())
    })
}

/// The core's recall operations as the host reads them.
fn recall_ops(ops: Vec<RecallOp>) -> Vec<GatewayRecallOp> {
    ops.into_iter()
        .map(|op| match op {
            RecallOp::Write { path, text } => GatewayRecallOp::Write { path, text },
            RecallOp::Remove { path } => GatewayRecallOp::Remove { path },
        })
        .collect()
}

fn gateway_answer(inner: &Rc<Inner>, answer: GatewayAnswer) -> Result<GatewayAnswerHead, JsValue> {
    with(inner, |g| {
        let named = connection_named(
            answer.headers.iter().filter(|(n, _)| n == "connection").map(|(_, v)| v.as_str()),
        );
        let content_type = answer
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.clone());
        let headers = answer.headers.into_iter().filter(|(name, _)| forwards_answer(name, &named)).collect();
        let reader = answer.session.map(|session| {
            let id = g.next_reader;
            g.next_reader = g.next_reader.wrapping_add(1);
            let reader = UsageReader::new(content_type.as_deref().unwrap_or_default());
            g.readers.insert(id, (session, answer.bill, reader));
            id
        });
        Ok(GatewayAnswerHead { headers, reader })
    })
}

fn gateway_answer_chunk(inner: &Rc<Inner>, reader: f64, chunk: Bytes) -> Result<(), JsValue> {
    with(inner, |g| {
        if let Some((_, _, r)) = g.readers.get_mut(&(reader as u32)) {
            r.feed(&chunk.0);
        }
        Ok(())
    })
}

fn gateway_answer_end(inner: &Rc<Inner>, reader: f64) -> Result<(), JsValue> {
    with(inner, |g| {
        if let Some((session, bill, r)) = g.readers.remove(&(reader as u32))
            && let Some(usage) = r.finish()
        {
            g.host.usage(&session, bill, usage);
        }
        Ok(())
    })
}

fn gateway_report(inner: &Rc<Inner>) -> Result<GatewayReport, JsValue> {
    with(inner, |g| Ok(g.host.report()))
}

fn gateway_session(inner: &Rc<Inner>, session: String) -> Result<GatewaySessionView, JsValue> {
    with(inner, |g| g.host.gateway().session_view(&session).map_err(invalid))
}

fn gateway_preview(inner: &Rc<Inner>, session: String) -> Result<GatewayPreview, JsValue> {
    with(inner, |g| g.host.gateway().preview(&session).map_err(invalid))
}

fn gateway_condense_next(inner: &Rc<Inner>, session: String) -> Result<(), JsValue> {
    with(inner, |g| g.host.gateway().condense_next(&session).map_err(invalid))
}

fn gateway_pause(inner: &Rc<Inner>, session: String, paused: bool) -> Result<(), JsValue> {
    with(inner, |g| g.host.gateway().pause(&session, paused).map_err(invalid))
}

fn gateway_undo(inner: &Rc<Inner>, session: String) -> Result<GatewayUndone, JsValue> {
    with(inner, |g| {
        let range = g.host.gateway().undo_last(&session).map_err(invalid)?;
        Ok(GatewayUndone { start: range.start, end: range.end })
    })
}

fn gateway_save(inner: &Rc<Inner>) -> Result<String, JsValue> {
    with(inner, |g| {
        let mut out = Vec::new();
        g.host.save_to(&mut out).map_err(|e| error(ErrorKind::Internal, &e.to_string()))?;
        String::from_utf8(out).map_err(|e| error(ErrorKind::Internal, &e.to_string()))
    })
}

fn gateway_setup(inner: &Rc<Inner>, base: String) -> Result<Vec<GatewaySetup>, JsValue> {
    // The running gateway's recall folder, which Claude Code is told it may read.
    let recall = inner.gateway.borrow().as_ref().and_then(|g| {
        let config = g.host.gateway_config();
        config.recall.as_ref().filter(|_| !config.observe).map(|r| r.dir.clone())
    });
    Ok(SetupClient::ALL
        .into_iter()
        .map(|c| GatewaySetup {
            id: c.id().into(),
            name: c.name().into(),
            place: c.place().into(),
            lines: c.lines(&base, false, recall.as_deref()),
        })
        .collect())
}

fn gateway_error_body(_: &Rc<Inner>, wire: String, status: f64, message: String) -> Result<String, JsValue> {
    Ok(error_body(Some(wire_of(&wire)?), status as u16, &message))
}
