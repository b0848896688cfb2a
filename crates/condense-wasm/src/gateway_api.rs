//! The methods of `Gateway` (see [`crate::gateway`]), for the extension host's HTTP server. The
//! host receives a request, asks where it goes (`route`), reads its body, asks what to send
//! (`request`), sends it with its own fetch, feeds the answer's bytes to a usage reader as they
//! pass (`answer`, `answerChunk`, `answerEnd`), and retries once after "prompt too long"
//! (`tooLong`), writing first the recall files each answer names (each condensation's hidden
//! messages, for the agent to read; `recallFailed` when it cannot). With `native`, a request that
//! crossed the threshold also hands out summary jobs, which the host runs in the background with
//! the model it picks (`summarize`) or gives up (`dropJob`). The rest is the Gateway view's: the
//! report, a session's condensations, and the per-session controls. Nothing here sees the
//! client's credentials but as headers passed through the core's filter.

use std::net::SocketAddr;
use std::rc::Rc;

use condense_core::ErrorKind;
use condense_core::gateway::{
    CONVERSATION_ACCEPT_ENCODING, GatewayPreview, GatewayReport, GatewaySessionView, MAX_BODY_BYTES,
    Outgoing, RecallOp, Routed, SetupClient, SummaryJob, UsageReader, Wire, answer_headers,
    error_body as wire_error_body, summarize as write_summary, summary_line, upstream_headers,
};
use condense_core::host::Clock;
use condense_core::provider::Services;
use condense_protocol::calls::LlmTarget;
use condense_protocol::gateway::{
    GatewayAnswer, GatewayAnswerHead, GatewayForward, GatewayHead, GatewayRecallOp, GatewayRequest,
    GatewayRetry, GatewayRouted, GatewaySessionFile, GatewaySetup, GatewayStarted, GatewayStateChanges,
    GatewaySummary, GatewayUndone, GatewayVariable,
};
use wasm_bindgen::prelude::*;

use crate::convert::error;
use crate::gateway::{Gateway, Running, invalid};
use crate::surface::{Bytes, engine_api};

crate::surface::data!(
    GatewayHead,
    GatewayRouted,
    GatewayRequest,
    GatewayForward,
    GatewayAnswer,
    GatewayAnswerHead,
    GatewaySetup,
    GatewayVariable,
    GatewayUndone,
    GatewayStateChanges,
    GatewaySummary,
    GatewayRetry,
    GatewayReport,
    GatewaySessionView,
    GatewayPreview
);

engine_api! {
    impl Gateway;

    /// Why the gateway started as it did: the upstreams' origins, and why the saved state was not
    /// used, if it was not.
    sync fn started = started() -> GatewayStarted;

    /// Stops the gateway: its background work is cancelled and its sessions are dropped (save
    /// them first); every call after fails with `gateway_stopped`. Stopping again does nothing.
    sync fn stop = stop() -> ();

    /// The port the host's server bound, which the guard takes as the gateway's own.
    sync fn bound = bound(port: f64) -> ();

    /// Where a request goes: answered at once (health, statistics, a refusal, not found) or
    /// upstream.
    sync fn route = route(head: GatewayHead) -> GatewayRouted;

    /// What to send upstream for a request routed there, given its whole body: the headers,
    /// the body when rewritten, or an answer at once (a token count).
    sync fn request = forward_request(request: GatewayRequest, body: Bytes) -> GatewayForward;

    /// Writes the summary of job `job` with `llm` (`native`), off the request path, and gives it
    /// to the session: its next request carries it. A failure keeps the ledger and says why.
    async fn summarize = summarize(job: f64, llm: LlmTarget) -> GatewaySummary;

    /// Gives up job `job` (no model to write it): the ledger stays, and the figures say why.
    sync fn dropJob = drop_job(job: f64, reason: String) -> GatewaySummary;

    /// The upstream answered `status` with `answer` before any byte reached the client: the
    /// body to retry with once when it says the prompt is too long, and the recall files to
    /// write before.
    sync fn tooLong = too_long(session: String, status: f64, answer: Bytes, client_body: Bytes) -> Option<GatewayRetry>;

    /// The host could not write the recall file at `path` of `session`: the figures say why.
    sync fn recallFailed = recall_failed(session: String, path: String, why: String) -> ();

    /// An upstream's answer arrived: the headers to pass on, and a usage reader for its body.
    sync fn answer = answer_head(answer: GatewayAnswer) -> GatewayAnswerHead;

    /// A chunk of an answer's body, after it was passed on.
    sync fn answerChunk = answer_chunk(reader: f64, chunk: Bytes) -> ();

    /// The answer ended (or was cut off): its usage is counted.
    sync fn answerEnd = answer_end(reader: f64) -> ();

    /// The figures: per session and in total, the configuration, the host's counts.
    sync fn report = report() -> GatewayReport;

    /// A session's window and condensations.
    sync fn session = session_view(session: String) -> GatewaySessionView;

    /// What the session's next condensation would be if made now.
    sync fn preview = preview(session: String) -> GatewayPreview;

    /// Condenses the session's next request, threshold or not.
    sync fn condenseNext = condense_next(session: String) -> ();

    /// Pauses the session (forwarded untouched) or resumes it.
    sync fn pause = pause(session: String, paused: bool) -> ();

    /// Undoes the session's latest condensation: its next request goes out without it.
    sync fn undo = undo(session: String) -> GatewayUndone;

    /// What to write and remove to save the state: the index and the session files that changed
    /// since the last call (taken as written), to pass back as `GatewayStart.state` and
    /// `GatewayStart.sessions`.
    sync fn saveChanges = save_changes() -> GatewayStateChanges;

    /// The host could not write (or remove) the session file `name`: the next save does it again.
    sync fn unsaved = unsaved(name: String) -> ();

    /// The gateway's own error for a route's API (`anthropic` or `openai`), as that API shapes
    /// its errors: the JSON body.
    sync fn errorBody = error_body(wire: String, status: f64, message: String) -> String;

    /// How to point each client at a gateway at `base` (`http://127.0.0.1:4141`).
    sync fn setup = setup(base: String) -> Vec<GatewaySetup>;

    /// The variables that send the agents started in a terminal through a gateway at `base`,
    /// for the terminals the host opens while the gateway runs.
    sync fn terminalVariables = terminal_variables(base: String) -> Vec<GatewayVariable>;
}

fn started(gw: &Rc<Running>) -> Result<GatewayStarted, JsValue> {
    Ok(gw.started.clone())
}

fn stop(gw: &Rc<Running>) -> Result<(), JsValue> {
    gw.stop();
    Ok(())
}

/// The outcome of job `id` given to the core, and what it says of it.
fn summary_done(
    gw: &Rc<Running>,
    id: u64,
    session: String,
    outcome: Result<condense_core::gateway::SummaryDone, String>,
) -> Result<GatewaySummary, JsValue> {
    let (output_tokens, cost_usd, error) = match &outcome {
        Ok(done) => (Some(done.output_tokens), Some(done.cost_usd), None),
        Err(why) => (None, None, Some(why.clone())),
    };
    let used = gw.with(|g| Ok(g.host.gateway().summary_done(id, outcome)))?;
    let written = output_tokens.zip(cost_usd).ok_or(error.as_deref().unwrap_or_default());
    let line = summary_line(&session, written, used);
    Ok(GatewaySummary { session, output_tokens, cost_usd, error, used, line })
}

fn take_job(gw: &Rc<Running>, job: f64) -> Result<SummaryJob, JsValue> {
    gw.with(|g| g.jobs.remove(&(job as u64)).ok_or_else(|| invalid(format!("no summary job {job}"))))
}

async fn summarize(gw: Rc<Running>, job: f64, llm: LlmTarget) -> Result<GatewaySummary, JsValue> {
    let job = take_job(&gw, job)?;
    let client = match gw.engine.client(llm) {
        Ok(client) => client,
        Err(e) => {
            let why = e.dyn_ref::<js_sys::Error>().map_or_else(
                || "the summary's model cannot be used".to_owned(),
                |e| String::from(e.message()),
            );
            return summary_done(&gw, job.id, job.session, Err(why));
        }
    };
    let counter = gw.engine.counter(&client.profile().model);
    let abort = gw.engine.begin(Some(&gw.scope));
    let services = Services::new(counter.as_ref(), gw.engine.host.as_ref())
        .with_abort(&abort)
        .with_timer(&crate::host::JsTimer)
        .with_llm(client.as_ref());
    // No borrow of the gateway is held meanwhile: requests go on while the model writes.
    let outcome = write_summary(&job, services).await;
    gw.engine.end(&abort);
    summary_done(&gw, job.id, job.session, outcome)
}

fn drop_job(gw: &Rc<Running>, job: f64, reason: String) -> Result<GatewaySummary, JsValue> {
    let job = take_job(gw, job)?;
    summary_done(gw, job.id, job.session, Err(reason))
}

fn bound(gw: &Rc<Running>, port: f64) -> Result<(), JsValue> {
    let port = u16::try_from(port as i64).map_err(|_| invalid("port must be 1 to 65535"))?;
    gw.with(|g| {
        g.host.bound(SocketAddr::from(([127, 0, 0, 1], port)));
        Ok(())
    })
}

fn wire_name(wire: Wire) -> &'static str {
    match wire {
        Wire::Anthropic => "anthropic",
        Wire::OpenAi => "openai",
        Wire::Gemini => "gemini",
    }
}

fn wire_of(name: &str) -> Result<Wire, JsValue> {
    match name {
        "anthropic" => Ok(Wire::Anthropic),
        "openai" => Ok(Wire::OpenAi),
        "gemini" => Ok(Wire::Gemini),
        other => Err(invalid(format!("wire must be anthropic, openai or gemini, not {other:?}"))),
    }
}

fn route(gw: &Rc<Running>, head: GatewayHead) -> Result<GatewayRouted, JsValue> {
    gw.with(|g| {
        let token = head.token.as_deref().map(str::as_bytes);
        Ok(
            match g.host.route(&head.method, &head.path, head.host.as_deref(), head.origin.as_deref(), token)
            {
                Routed::Answer { status, body } => GatewayRouted::Answer { status, body },
                Routed::Upstream { wire, url, path } => {
                    let limit = MAX_BODY_BYTES >> 20;
                    let too_large = wire_error_body(
                        Some(wire),
                        413,
                        &format!("request bodies are limited to {limit} MB"),
                    );
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

fn forward_request(
    gw: &Rc<Running>,
    request: GatewayRequest,
    body: Bytes,
) -> Result<GatewayForward, JsValue> {
    let wire = wire_of(&request.wire)?;
    gw.with(|g| {
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
                condensed_now: false,
            });
        }
        let now = gw.engine.host.now_ms() as i64;
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
        let headers = upstream_headers(
            &request.headers,
            |v: &String| Some(v.as_str()),
            conversation,
            CONVERSATION_ACCEPT_ENCODING.to_owned(),
        );
        let log = outgoing.describe();
        let session = outgoing.session().map(str::to_owned);
        let (body, condensed_now) = match outgoing {
            Outgoing::Rewritten { body, condensed_now, .. } => (Some(body), condensed_now),
            Outgoing::Client { .. } => (None, false),
        };
        Ok(GatewayForward { answer: None, headers, body, session, log, jobs, recall, bill, condensed_now })
    })
}

fn too_long(
    gw: &Rc<Running>,
    session: String,
    status: f64,
    answer: Bytes,
    client_body: Bytes,
) -> Result<Option<GatewayRetry>, JsValue> {
    gw.with(|g| {
        let retry = g.host.too_long(&session, status as u16, &answer.0, &client_body.0);
        Ok(retry.map(|r| GatewayRetry { body: r.body, recall: recall_ops(r.recall), bill: r.bill }))
    })
}

fn recall_failed(gw: &Rc<Running>, session: String, path: String, why: String) -> Result<(), JsValue> {
    gw.with(|g| {
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

fn answer_head(gw: &Rc<Running>, answer: GatewayAnswer) -> Result<GatewayAnswerHead, JsValue> {
    gw.with(|g| {
        let content_type = answer
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.clone());
        let headers = answer_headers(&answer.headers, |v: &String| Some(v.as_str()));
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

fn answer_chunk(gw: &Rc<Running>, reader: f64, chunk: Bytes) -> Result<(), JsValue> {
    gw.with(|g| {
        if let Some((_, _, r)) = g.readers.get_mut(&(reader as u32)) {
            r.feed(&chunk.0);
        }
        Ok(())
    })
}

fn answer_end(gw: &Rc<Running>, reader: f64) -> Result<(), JsValue> {
    gw.with(|g| {
        if let Some((session, bill, r)) = g.readers.remove(&(reader as u32))
            && let Some(usage) = r.finish()
        {
            g.host.usage(&session, bill, usage);
        }
        Ok(())
    })
}

fn report(gw: &Rc<Running>) -> Result<GatewayReport, JsValue> {
    gw.with(|g| Ok(g.host.report()))
}

fn session_view(gw: &Rc<Running>, session: String) -> Result<GatewaySessionView, JsValue> {
    gw.with(|g| g.host.gateway().session_view(&session).map_err(invalid))
}

fn preview(gw: &Rc<Running>, session: String) -> Result<GatewayPreview, JsValue> {
    gw.with(|g| g.host.gateway().preview(&session).map_err(invalid))
}

fn condense_next(gw: &Rc<Running>, session: String) -> Result<(), JsValue> {
    gw.with(|g| g.host.gateway().condense_next(&session).map_err(invalid))
}

fn pause(gw: &Rc<Running>, session: String, paused: bool) -> Result<(), JsValue> {
    gw.with(|g| g.host.gateway().pause(&session, paused).map_err(invalid))
}

fn undo(gw: &Rc<Running>, session: String) -> Result<GatewayUndone, JsValue> {
    gw.with(|g| {
        let range = g.host.gateway().undo_last(&session).map_err(invalid)?;
        Ok(GatewayUndone { start: range.start, end: range.end })
    })
}

fn save_changes(gw: &Rc<Running>) -> Result<GatewayStateChanges, JsValue> {
    gw.with(|g| {
        let files = g.host.snapshot().files();
        let changes = g.saved.changes(files);
        let text =
            |bytes: Vec<u8>| String::from_utf8(bytes).map_err(|e| error(ErrorKind::Internal, &e.to_string()));
        Ok(GatewayStateChanges {
            index: text(changes.index)?,
            write: changes
                .write
                .into_iter()
                .map(|f| Ok(GatewaySessionFile { name: f.name, text: text(f.bytes)? }))
                .collect::<Result<_, JsValue>>()?,
            remove: changes.remove,
        })
    })
}

fn unsaved(gw: &Rc<Running>, name: String) -> Result<(), JsValue> {
    gw.with(|g| {
        g.saved.unsaved(&name);
        Ok(())
    })
}

fn terminal_variables(_gw: &Rc<Running>, base: String) -> Result<Vec<GatewayVariable>, JsValue> {
    Ok(condense_core::gateway::terminal_variables(&base)
        .into_iter()
        .map(|v| GatewayVariable { name: v.name.into(), value: v.value, read_by: v.read_by.into() })
        .collect())
}

fn setup(gw: &Rc<Running>, base: String) -> Result<Vec<GatewaySetup>, JsValue> {
    // The running gateway's recall folder, which Claude Code is told it may read.
    let recall = gw.with(|g| {
        let config = g.host.gateway_config();
        Ok(config.recall.as_ref().filter(|_| !config.observe).map(|r| r.dir.clone()))
    })?;
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

fn error_body(_: &Rc<Running>, wire: String, status: f64, message: String) -> Result<String, JsValue> {
    Ok(wire_error_body(Some(wire_of(&wire)?), status as u16, &message))
}
