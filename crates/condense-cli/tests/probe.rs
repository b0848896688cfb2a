//! Test Connection (`llm::test_connection`) over real HTTP against the fixture server, through both
//! wire formats: latency by the clock, the model the server names, and typed errors.

mod common;

use std::rc::Rc;
use std::time::Duration;

use common::Server;
use condense_cli::native::{NativeClock, NativeHttp, NativeTimer};
use condense_core::llm::{HttpLlm, LlmKind, LlmProfile, PROBE_REQUEST, RetryPolicy, test_connection};
use condense_core::{AbortSignal, ErrorKind};

fn client(server: &Server, kind: LlmKind, model: &str, key: Option<&str>) -> HttpLlm {
    let base = match kind {
        LlmKind::Anthropic => format!("http://127.0.0.1:{}", server.port),
        _ => format!("http://127.0.0.1:{}/v1", server.port),
    };
    let profile =
        LlmProfile { base_url: Some(base), max_output: 200, ..LlmProfile::new("p", kind, model, 8_000) };
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    let http = Rc::new(NativeHttp::new(Duration::from_secs(5)));
    HttpLlm::new(profile, key.map(str::to_owned), http, Rc::new(NativeTimer), retry).unwrap()
}

fn probe(llm: &HttpLlm) -> Result<condense_core::llm::ConnectionReport, condense_core::LlmError> {
    futures::executor::block_on(test_connection(llm, &[], &NativeClock::start(), &AbortSignal::new()))
}

#[test]
fn a_probe_reports_latency_model_and_reply_through_both_wires() {
    let server = Server::fixture();
    for kind in [LlmKind::OpenaiCompatible, LlmKind::Anthropic] {
        let report = probe(&client(&server, kind, "fixture-model", Some("fixture-key"))).unwrap();
        assert_eq!(report.model, "fixture-model", "{kind:?}: the model the server named");
        assert!(report.latency_ms > 0.0, "{kind:?}: {report:?}");
        assert!(!report.reply.is_empty(), "{kind:?}: {report:?}");
        assert!(report.usage.is_some(), "{kind:?}: {report:?}");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        let body = &r["body"];
        assert!(body.to_string().contains(PROBE_REQUEST), "{body}");
        assert!(
            body["max_tokens"].as_u64().is_some_and(|n| n <= 8)
                || body["max_completion_tokens"].as_u64().is_some_and(|n| n <= 8),
            "{body}"
        );
    }
}

#[test]
fn a_failed_probe_is_the_typed_error() {
    let server = Server::fixture();
    let err = probe(&client(&server, LlmKind::OpenaiCompatible, "fault-401", Some("k"))).unwrap_err();
    assert_eq!(err.kind, ErrorKind::LlmAuth);
    let err = probe(&client(&server, LlmKind::Anthropic, "fault-500", Some("k"))).unwrap_err();
    assert_eq!(err.kind, ErrorKind::LlmServer);
    drop(server);
    let gone = Server::fixture();
    let port = gone.port;
    drop(gone);
    let profile = LlmProfile {
        base_url: Some(format!("http://127.0.0.1:{port}/v1")),
        max_output: 200,
        ..LlmProfile::new("p", LlmKind::OpenaiCompatible, "m", 8_000)
    };
    let llm = HttpLlm::new(
        profile,
        None,
        Rc::new(NativeHttp::new(Duration::from_secs(5))),
        Rc::new(NativeTimer),
        RetryPolicy { max_retries: 0, ..RetryPolicy::default() },
    )
    .unwrap();
    assert_eq!(probe(&llm).unwrap_err().kind, ErrorKind::LlmNetwork);
}
