//! `DefaultAgent` against the fixture LLM server over real HTTP (the native client): the event
//! sequences of a normal turn, a cancel mid-stream, an error mid-stream, an automatic
//! condensation, overflow → condense → retry, and the loop guard stopping a thrash.

mod common;

use std::rc::Rc;
use std::time::Duration;

use common::Server;
use condense_cli::native::{NativeClock, NativeHttp, NativeTimer};
use condense_core::agent::{AgentEvent, AgentInput, ChatTask, CondenseOutcome, CondenseReason, DefaultAgent};
use condense_core::llm::{HttpLlm, LlmKind, LlmProfile, RetryPolicy};
use condense_core::model::Role;
use condense_core::testing::{TurnBench, event_shape as shape};
use serde_json::Value;

/// The fixture's default answer, as the deltas add up.
const ANSWER_START: &str = "## 1. Primary request";
const MINUTE: i64 = 60_000;

fn profile(server: &Server, model: &str, window: usize) -> LlmProfile {
    LlmProfile {
        base_url: Some(format!("http://127.0.0.1:{}/v1", server.port)),
        max_output: 200,
        price_input_per_mtok: 3.0,
        price_output_per_mtok: 15.0,
        ..LlmProfile::new("fixture", LlmKind::OpenaiCompatible, model, window)
    }
}

fn client(profile: LlmProfile) -> HttpLlm {
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    let http = Rc::new(NativeHttp::new(Duration::from_secs(5)));
    HttpLlm::new(profile, Some("fixture-key".into()), http, Rc::new(NativeTimer), retry).unwrap()
}

fn say(text: &str) -> AgentInput {
    AgentInput::User { content: text.into() }
}

fn streamed_text(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageContent { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn chat_requests(server: &Server) -> Vec<Value> {
    server.requests().into_iter().filter(|r| r["path"] == "/v1/chat/completions").collect()
}

#[test]
fn a_normal_turn_streams_the_answer_into_the_history() {
    let server = Server::fixture();
    let bench = TurnBench::with_clock(NativeClock::start());
    let llm = client(profile(&server, "fixture", 128_000));
    let mut agent = DefaultAgent::new(ChatTask::new("t1", 1_000));
    let events = bench.run(&mut agent, &llm, None, say("Why are nested groups dropped?"), 2_000, |_, _| {});
    assert_eq!(
        shape(&events),
        ["ThinkingStart", "UserMessage", "MessageStart", "MessageContent*", "MessageEnd", "ThinkingEnd"]
    );
    assert!(events.iter().filter(|e| matches!(e, AgentEvent::MessageContent { .. })).count() > 5);
    let text = streamed_text(&events);
    assert!(text.starts_with(ANSWER_START), "{text}");
    let Some(AgentEvent::MessageEnd { interrupted, kept, usage, cost, .. }) = events.get(events.len() - 2)
    else {
        panic!("{events:?}")
    };
    assert_eq!((interrupted, kept), (&None, &true));
    assert!(usage.is_some() && *cost > 0.0);

    let task = agent.task();
    assert_eq!(task.title, "Why are nested groups dropped?");
    let messages = &task.conversation.messages;
    assert_eq!(messages.len(), 2);
    assert_eq!((messages[0].role, messages[1].role), (Role::User, Role::Assistant));
    assert_eq!(messages[1].text(), text);
    assert_eq!(messages[1].ts, 2_000);
    // The server's usage is preferred over the tokenizer while it describes the history.
    let (_, source) = task.context_tokens(&bench.counter);
    assert_eq!(source, condense_core::agent::TokenSource::Reported);

    // The next turn sends the whole history.
    bench.run(&mut agent, &llm, None, say("And trailing commas?"), 3_000, |_, _| {});
    let sent = chat_requests(&server);
    assert_eq!(sent.len(), 2);
    let roles: Vec<&str> =
        sent[1]["body"]["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(agent.task().conversation.messages.len(), 4);
}

#[test]
fn a_cancel_mid_stream_keeps_and_marks_the_partial_answer_and_retry_replaces_it() {
    let server = Server::fixture();
    let bench = TurnBench::with_clock(NativeClock::start());
    let llm = client(profile(&server, "fixture", 128_000));
    let mut agent = DefaultAgent::new(ChatTask::new("t1", 1_000));
    let events = bench.run(&mut agent, &llm, None, say("Explain the fix"), 2_000, |e, abort| {
        if matches!(e, AgentEvent::MessageContent { .. }) {
            abort.abort();
        }
    });
    assert_eq!(
        shape(&events),
        [
            "ThinkingStart",
            "UserMessage",
            "MessageStart",
            "MessageContent*",
            "Error",
            "MessageEnd",
            "ThinkingEnd"
        ]
    );
    assert_eq!(events.iter().filter(|e| matches!(e, AgentEvent::MessageContent { .. })).count(), 1);
    let partial = streamed_text(&events);
    let AgentEvent::Error { error, partial: reported, retryable } = &events[4] else { panic!() };
    assert_eq!(
        (error.kind.as_str(), reported.as_str(), *retryable),
        ("llm_cancelled", partial.as_str(), true)
    );
    let AgentEvent::MessageEnd { interrupted, kept, .. } = &events[5] else { panic!() };
    assert_eq!((interrupted.as_deref(), *kept), (Some("cancelled"), true));
    let last = agent.task().conversation.messages.last().unwrap();
    assert_eq!((last.text(), last.interrupted.as_deref()), (partial.clone(), Some("cancelled")));

    let events = bench.run(&mut agent, &llm, None, AgentInput::Retry, 3_000, |_, _| {});
    assert_eq!(
        shape(&events),
        ["ThinkingStart", "MessageStart", "MessageContent*", "MessageEnd", "ThinkingEnd"]
    );
    let messages = &agent.task().conversation.messages;
    assert_eq!(messages.len(), 2, "the cut answer is replaced, not stacked");
    assert!(messages[1].text().starts_with(ANSWER_START) && messages[1].interrupted.is_none());
    // Nothing is left to retry once the answer is complete.
    let events = bench.run(&mut agent, &llm, None, AgentInput::Retry, 4_000, |_, _| {});
    assert_eq!(shape(&events), ["Error"]);
}

#[test]
fn an_error_mid_stream_ends_the_turn_with_the_partial_text_kept() {
    let server = Server::fixture();
    let bench = TurnBench::with_clock(NativeClock::start());
    for (model, kind) in [("fault-stream-error", "llm_server"), ("fault-cut", "llm_malformed_stream")] {
        let llm = client(profile(&server, model, 128_000));
        let mut agent = DefaultAgent::new(ChatTask::new("t1", 1_000));
        let events = bench.run(&mut agent, &llm, None, say("Go on"), 2_000, |_, _| {});
        assert_eq!(
            shape(&events),
            [
                "ThinkingStart",
                "UserMessage",
                "MessageStart",
                "MessageContent*",
                "Error",
                "MessageEnd",
                "ThinkingEnd"
            ],
            "{model}"
        );
        let Some(AgentEvent::Error { error, partial, .. }) =
            events.iter().find(|e| matches!(e, AgentEvent::Error { .. }))
        else {
            panic!("{model}: {events:?}")
        };
        assert_eq!(error.kind, kind, "{model}");
        assert!(partial.starts_with("Partial"), "{model}: {partial}");
        let last = agent.task().conversation.messages.last().unwrap();
        assert_eq!(last.interrupted.as_deref(), Some(kind), "{model}");
        assert_eq!(&last.text(), partial);
    }
    // An error before any text keeps no empty answer.
    let llm = client(profile(&server, "fault-401", 128_000));
    let mut agent = DefaultAgent::new(ChatTask::new("t1", 1_000));
    let events = bench.run(&mut agent, &llm, None, say("Hello"), 2_000, |_, _| {});
    assert_eq!(
        shape(&events),
        ["ThinkingStart", "UserMessage", "MessageStart", "Error", "MessageEnd", "ThinkingEnd"]
    );
    let AgentEvent::MessageEnd { kept, .. } = &events[4] else { panic!() };
    assert!(!kept);
    assert_eq!(agent.task().conversation.messages.len(), 1);
}

#[test]
fn the_context_past_the_threshold_is_condensed_before_the_request() {
    let server = Server::fixture();
    let bench = TurnBench::with_clock(NativeClock::start());
    // About 1,190 tokens in a 1,400-token window: past 80%.
    let llm = client(profile(&server, "fixture", 1_400));
    let mut agent = DefaultAgent::new(common::long_chat("t1", 12));
    let before = agent.task().context_status(llm_profile(&llm), &bench.auto, &bench.counter);
    assert_eq!(before.reason(), Some(CondenseReason::Threshold), "{before:?}");

    let events = bench.run(&mut agent, &llm, None, say("What is left to do?"), 2_000, |_, _| {});
    assert_eq!(
        shape(&events),
        [
            "ThinkingStart",
            "UserMessage",
            "CondenseStart",
            "CondenseEnd",
            "MessageStart",
            "MessageContent*",
            "MessageEnd",
            "ThinkingEnd"
        ]
    );
    let AgentEvent::CondenseStart { reason, provider, automatic, .. } = &events[2] else { panic!() };
    assert_eq!((*reason, provider.as_str(), *automatic), (CondenseReason::Threshold, "native", true));
    let AgentEvent::CondenseEnd(CondenseOutcome::Applied { record, .. }) = &events[3] else {
        panic!("{:?}", events[3])
    };
    assert_eq!(record.condense_id, "c1");
    assert!(record.tokens_after < record.tokens_before && record.cost > 0.0);
    assert!(record.summary.as_deref().unwrap().starts_with(ANSWER_START));

    // The summary (in parts then merged: the history does not fit one summary request to this
    // 1,400-token model), then the answer over the condensed history.
    let sent = chat_requests(&server);
    let AgentEvent::CondenseEnd(CondenseOutcome::Applied { metrics: Some(metrics), .. }) = &events[3] else {
        panic!()
    };
    let calls = metrics.extra["llm_calls"].as_u64().unwrap() as usize;
    assert!(calls > 1, "{metrics:?}");
    assert_eq!(sent.len(), calls + 1);
    let answer_request = sent[calls]["body"]["messages"].to_string();
    assert!(answer_request.contains("Primary request"), "the summary is in the request");
    assert!(!answer_request.contains("Turn 5:"), "hidden messages are not");
    // The user's own words of the hidden messages are, in the state ledger.
    assert!(answer_request.contains("context_condenser_ledger") && answer_request.contains("Turn 4:"));
    let task = agent.task();
    assert_eq!(task.condensations.len(), 1);
    assert!(task.conversation.messages.iter().any(|m| m.condense_parent.as_deref() == Some("c1")));
    let after = task.context_status(llm_profile(&llm), &bench.auto, &bench.counter);
    assert!(after.tokens < before.tokens);

    // Saved and loaded again, Undo brings every message back.
    let mut reloaded: ChatTask = serde_json::from_str(&serde_json::to_string(task).unwrap()).unwrap();
    assert_eq!(reloaded.undo(None, 9_000).as_deref(), Some("c1"));
    assert!(reloaded.condensations.is_empty());
    assert!(reloaded.conversation.messages.iter().all(|m| m.condense_parent.is_none() && !m.is_summary));
    assert_eq!(reloaded.conversation.messages.len(), 14);
    assert_eq!(reloaded.undo(None, 9_000), None);
}

fn llm_profile(llm: &HttpLlm) -> &LlmProfile {
    use condense_core::llm::LlmProvider;
    llm.profile()
}

#[test]
fn an_overflow_answer_condenses_and_retries_once() {
    let server = Server::fixture();
    let bench = TurnBench::with_clock(NativeClock::start());
    // The chat model refuses requests over 5,000 characters (the chat has about 7,500; the
    // condensed one, with the ledger quoting the user's hidden words, about 4,000); the window is
    // large, so only the API's answer tells the agent. The summary is written by a model without
    // that limit.
    let llm = client(profile(&server, "fault-overflow-above-5000", 128_000));
    let writer = client(profile(&server, "fixture", 128_000));
    let mut agent = DefaultAgent::new(common::long_chat("t1", 12));
    let events = bench.run(&mut agent, &llm, Some(&writer as _), say("Summarize the plan"), 2_000, |_, _| {});
    assert_eq!(
        shape(&events),
        [
            "ThinkingStart",
            "UserMessage",
            "MessageStart",
            "MessageEnd",
            "CondenseStart",
            "CondenseEnd",
            "MessageStart",
            "MessageContent*",
            "MessageEnd",
            "ThinkingEnd"
        ]
    );
    let AgentEvent::MessageEnd { interrupted, kept, .. } = &events[3] else { panic!() };
    assert_eq!((interrupted.as_deref(), *kept), (Some("llm_context_overflow"), false));
    let AgentEvent::CondenseStart { reason, .. } = &events[4] else { panic!() };
    assert_eq!(*reason, CondenseReason::Overflow);
    assert!(matches!(&events[5], AgentEvent::CondenseEnd(CondenseOutcome::Applied { .. })));
    let models: Vec<String> =
        chat_requests(&server).iter().map(|r| r["body"]["model"].as_str().unwrap().to_owned()).collect();
    assert_eq!(models, ["fault-overflow-above-5000", "fixture", "fault-overflow-above-5000"]);
    assert!(agent.task().conversation.messages.last().unwrap().text().starts_with(ANSWER_START));
}

#[test]
fn the_loop_guard_stops_a_thrash_and_says_why() {
    let server = Server::fixture();
    let bench = TurnBench::with_clock(NativeClock::start());
    // Every request overflows: one condensation and one retry, then the error.
    let llm = client(profile(&server, "fault-overflow", 128_000));
    let writer = client(profile(&server, "fixture", 128_000));
    let mut agent = DefaultAgent::new(common::long_chat("t1", 12));
    let events = bench.run(&mut agent, &llm, Some(&writer as _), say("Next?"), 2_000, |_, _| {});
    assert_eq!(
        shape(&events),
        [
            "ThinkingStart",
            "UserMessage",
            "MessageStart",
            "MessageEnd",
            "CondenseStart",
            "CondenseEnd",
            "MessageStart",
            "MessageEnd",
            "Error",
            "ThinkingEnd"
        ]
    );
    let AgentEvent::Error { error, .. } = &events[8] else { panic!() };
    assert_eq!(error.kind, "llm_context_overflow");
    // Retrying without a new message: no second automatic condensation, and the user is told.
    let events = bench.run(&mut agent, &llm, Some(&writer as _), AgentInput::Retry, 3_000, |_, _| {});
    assert_eq!(
        shape(&events),
        ["ThinkingStart", "MessageStart", "MessageEnd", "CondenseSkipped", "Error", "ThinkingEnd"]
    );
    let AgentEvent::CondenseSkipped { reason, .. } = &events[3] else { panic!() };
    assert!(reason.contains("since the last message"), "{reason}");
    assert_eq!(agent.task().condensations.len(), 1);

    // A threshold every turn crosses: at most three automatic condensations a minute.
    // (10% of 2,000 tokens is 200: every turn of this chat is past it.)
    let mut low = profile(&server, "fixture", 2_000);
    low.max_output = 128;
    low.threshold_percent = Some(10);
    let llm = client(low);
    let mut agent = DefaultAgent::new(common::long_chat("t1", 12));
    let mut skipped = Vec::new();
    for (i, now) in [10_000, 20_000, 30_000, 40_000, 40_000 + MINUTE].into_iter().enumerate() {
        let events = bench.run(&mut agent, &llm, None, say(&format!("Question {i}")), now, |_, _| {});
        let started = events.iter().any(|e| matches!(e, AgentEvent::CondenseStart { .. }));
        let skip = events.iter().find_map(|e| match e {
            AgentEvent::CondenseSkipped { reason, .. } => Some(reason.clone()),
            _ => None,
        });
        assert_eq!(started, skip.is_none(), "turn {i}: {events:?}");
        skipped.push(skip);
    }
    assert!(skipped[..3].iter().all(Option::is_none), "{skipped:?}");
    assert!(skipped[3].as_deref().unwrap().contains("3 automatic condensations in the last minute"));
    assert!(skipped[4].is_none(), "a minute later the guard lets one through");

    // A condensation that saves less than the minimum gain is not applied.
    let mut bench = TurnBench::with_clock(NativeClock::start());
    bench.auto.min_gain_percent = 100.0;
    let mut low = profile(&server, "fixture", 2_000);
    low.threshold_percent = Some(10);
    let llm = client(low);
    let mut agent = DefaultAgent::new(common::long_chat("t1", 12));
    let events = bench.run(&mut agent, &llm, None, say("Next?"), 2_000, |_, _| {});
    let AgentEvent::CondenseEnd(CondenseOutcome::NotApplied { error, .. }) = &events[3] else {
        panic!("{events:?}")
    };
    assert_eq!(error.kind, "insufficient_gain");
    assert!(agent.task().condensations.is_empty());
    assert!(agent.task().conversation.messages.iter().all(|m| m.condense_parent.is_none()));

    // With the off switch, nothing is condensed automatically, and an overflow says so.
    let mut bench = TurnBench::with_clock(NativeClock::start());
    bench.auto.enabled = false;
    let llm = client(profile(&server, "fault-overflow", 128_000));
    let mut agent = DefaultAgent::new(common::long_chat("t1", 12));
    let events = bench.run(&mut agent, &llm, None, say("Next?"), 2_000, |_, _| {});
    assert_eq!(
        shape(&events),
        [
            "ThinkingStart",
            "UserMessage",
            "MessageStart",
            "MessageEnd",
            "CondenseSkipped",
            "Error",
            "ThinkingEnd"
        ]
    );
    let events = bench.run(&mut agent, &llm, None, AgentInput::Shutdown, 3_000, |_, _| {});
    assert_eq!(shape(&events), ["StatusShutdown"]);
}
