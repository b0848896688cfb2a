//! The agent's turn logic without sockets: a scripted LLM (`condense_core::testing`) answers, so
//! each test states exactly what the model says and checks the events, the history and the
//! requests. The same paths over real HTTP are tested in the CLI crate (`tests/agent.rs`).

use condense_core::ErrorKind;
use condense_core::agent::{AgentEvent, AgentInput, ChatTask, CondenseOutcome, CondenseReason, DefaultAgent};
use condense_core::llm::{LlmKind, LlmProfile, LlmProvider, Usage};
use condense_core::model::{ContentBlock, Message, Role};
use condense_core::testing::{ScriptedLlm, TurnBench, event_shape as names};

/// The inputs' wall-clock time.
const NOW: i64 = 1_700_000_000_000;

fn profile(window: usize) -> LlmProfile {
    LlmProfile {
        max_output: 1_000,
        price_input_per_mtok: 1.0,
        price_output_per_mtok: 2.0,
        ..LlmProfile::new("scripted", LlmKind::Openai, "gpt-4o", window)
    }
}

fn say(text: &str) -> AgentInput {
    AgentInput::User { content: text.into() }
}

/// A chat of `n` messages, long enough for a summary.
fn long_chat(n: usize) -> ChatTask {
    let mut task = ChatTask::new("t", 0);
    for i in 1..=n {
        let role = if i % 2 == 1 { Role::User } else { Role::Assistant };
        let text = format!(
            "Turn {i}: {}",
            "the parser keeps its state between calls and the tests cover it ".repeat(8)
        );
        task.conversation.messages.push(Message::new(format!("m{i}"), role, vec![ContentBlock::text(text)]));
    }
    task
}

fn text_of(m: &Message) -> String {
    m.content
        .iter()
        .filter_map(|b| if let ContentBlock::Text { text, .. } = b { Some(text.as_str()) } else { None })
        .collect()
}

#[test]
fn a_turn_streams_the_answer_into_the_history_with_usage_and_cost() {
    let bench = TurnBench::new();
    let usage = Usage::new(1_000, 500);
    let llm = ScriptedLlm::new(profile(128_000)).then_answer("Hello from the model.", Some(usage));
    let mut agent = DefaultAgent::new(ChatTask::new("t", 0));
    let events = bench.run(&mut agent, &llm, None, say("Hi there"), NOW, |_, _| {});
    assert_eq!(
        names(&events),
        ["ThinkingStart", "UserMessage", "MessageStart", "MessageContent*", "MessageEnd", "ThinkingEnd"]
    );
    let AgentEvent::MessageEnd { interrupted, kept, usage: reported, cost, .. } = &events[events.len() - 2]
    else {
        panic!("{events:?}")
    };
    assert_eq!((interrupted, *kept, *reported), (&None, true, Some(usage)));
    assert!((cost - 0.002).abs() < 1e-12, "1000 in at $1/M + 500 out at $2/M, got {cost}");
    let task = agent.task();
    assert_eq!(task.title, "Hi there");
    assert_eq!(text_of(&task.conversation.messages[1]), "Hello from the model.");
    assert_eq!(task.reported.as_ref().map(|r| (r.through.as_str(), r.tokens)), Some(("m2", 1_500)));
    let sent = llm.requests();
    assert_eq!((sent.len(), sent[0].request.as_str()), (1, "Hi there"));
    assert!(sent[0].conversation_history.is_empty());
}

#[test]
fn stop_mid_stream_keeps_the_partial_answer_marked_and_retry_replaces_it() {
    let bench = TurnBench::new();
    let llm = ScriptedLlm::new(profile(128_000))
        .then_answer("Partial answer that goes on", None)
        .then_answer("A whole answer.", None);
    let mut agent = DefaultAgent::new(ChatTask::new("t", 0));
    let events = bench.run(&mut agent, &llm, None, say("Tell me"), NOW, |e, abort| {
        if matches!(e, AgentEvent::MessageContent { .. }) {
            abort.abort();
        }
    });
    let deltas: Vec<&AgentEvent> =
        events.iter().filter(|e| matches!(e, AgentEvent::MessageContent { .. })).collect();
    assert_eq!(deltas.len(), 1, "the abort is checked between events: {events:?}");
    let Some(AgentEvent::Error { error, partial, retryable }) =
        events.iter().find(|e| matches!(e, AgentEvent::Error { .. }))
    else {
        panic!("{events:?}")
    };
    assert_eq!((error.kind, partial.as_str(), *retryable), (ErrorKind::LlmCancelled, "Partial ", true));
    let last = agent.task().conversation.messages.last().unwrap();
    assert_eq!((text_of(last).as_str(), last.interrupted.as_deref()), ("Partial ", Some("cancelled")));

    let bench = TurnBench::new();
    let events = bench.run(&mut agent, &llm, None, AgentInput::Retry, NOW, |_, _| {});
    assert_eq!(
        names(&events),
        ["ThinkingStart", "MessageStart", "MessageContent*", "MessageEnd", "ThinkingEnd"]
    );
    let messages = &agent.task().conversation.messages;
    assert_eq!(messages.len(), 2, "the cut answer was replaced");
    assert_eq!(
        (text_of(&messages[1]).as_str(), messages[1].interrupted.as_deref()),
        ("A whole answer.", None)
    );
}

#[test]
fn an_overflow_condenses_with_the_condensing_model_and_sends_once_more() {
    let bench = TurnBench::new();
    let chat = ScriptedLlm::new(profile(128_000))
        .then_fail("", ErrorKind::LlmContextOverflow, "prompt is too long")
        .then_answer("Done, with room to spare.", None);
    let writer = ScriptedLlm::new(profile(128_000)).then_answer("SUMMARY: the parser work so far.", None);
    let mut agent = DefaultAgent::new(long_chat(12));
    let events = bench.run(&mut agent, &chat, Some(&writer as _), say("Next?"), NOW, |_, _| {});
    assert_eq!(
        names(&events),
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
    let AgentEvent::MessageEnd { interrupted, kept, .. } = &events[3] else { panic!("{events:?}") };
    assert_eq!((interrupted.as_deref(), *kept), (Some("llm_context_overflow"), false));
    let AgentEvent::CondenseStart { reason, automatic, .. } = &events[4] else { panic!() };
    assert_eq!((*reason, *automatic), (CondenseReason::Overflow, true));
    let AgentEvent::CondenseEnd(CondenseOutcome::Applied { record, .. }) = &events[5] else {
        panic!("{:?}", events[5])
    };
    assert!(record.tokens_after < record.tokens_before);
    assert_eq!(writer.requests().len(), 1, "the condensing model wrote the summary");
    let sent = chat.requests();
    assert_eq!(sent.len(), 2);
    let retried: String = sent[1].conversation_history.iter().map(|m| m.content.as_str()).collect();
    assert!(retried.contains("SUMMARY: the parser work so far."), "the summary is in the retried request");
    assert!(!retried.contains("Turn 4:"), "hidden messages are not");
    // The user's own words of the hidden messages are, in the state ledger.
    assert!(retried.contains("<context_condenser_ledger>") && retried.contains("Turn 5:"));
    assert_eq!(agent.task().condensations.len(), 1);
}

/// Issue 25: a threshold run for a message, then the model answering "too long" anyway — the
/// overflow is condensed once more and the request sent again (the loop guard allows the run
/// after an overflow once per message), not refused as a second run without a new message.
#[test]
fn an_overflow_after_a_threshold_run_is_condensed_and_sent_once_more() {
    let bench = TurnBench::new();
    // The chat (1,269 tokens) is past 1% of 60,000.
    let mut small = profile(60_000);
    small.threshold_percent = Some(1);
    let chat = ScriptedLlm::new(small)
        .then_fail("", ErrorKind::LlmContextOverflow, "prompt is too long")
        .then_answer("Done, with room to spare.", None);
    let writer = ScriptedLlm::new(profile(128_000))
        .then_answer("SUMMARY: the parser work so far.", None)
        .then_answer("SUMMARY: shorter still.", None);
    let mut agent = DefaultAgent::new(long_chat(12));
    let events = bench.run(&mut agent, &chat, Some(&writer as _), say("Next?"), NOW, |_, _| {});
    let reasons: Vec<CondenseReason> = events
        .iter()
        .filter_map(|e| if let AgentEvent::CondenseStart { reason, .. } = e { Some(*reason) } else { None })
        .collect();
    assert_eq!(reasons, [CondenseReason::Threshold, CondenseReason::Overflow], "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::CondenseSkipped { .. })), "{events:?}");
    assert_eq!(chat.requests().len(), 2, "the request was sent once more");
    let last = agent.task().conversation.messages.last().unwrap();
    assert_eq!(text_of(last), "Done, with room to spare.");
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::Error { .. })), "{events:?}");
}

#[test]
fn a_second_overflow_is_not_condensed_again_and_reports_the_error() {
    let bench = TurnBench::new();
    let chat = ScriptedLlm::new(profile(128_000))
        .then_fail("", ErrorKind::LlmContextOverflow, "prompt is too long")
        .then_fail("", ErrorKind::LlmContextOverflow, "still too long");
    let writer = ScriptedLlm::new(profile(128_000)).then_answer("SUMMARY.", None);
    let mut agent = DefaultAgent::new(long_chat(12));
    let events = bench.run(&mut agent, &chat, Some(&writer as _), say("Next?"), NOW, |_, _| {});
    let condensations = events.iter().filter(|e| matches!(e, AgentEvent::CondenseStart { .. })).count();
    assert_eq!(condensations, 1, "{events:?}");
    let Some(AgentEvent::Error { error, .. }) =
        events.iter().rev().find(|e| matches!(e, AgentEvent::Error { .. }))
    else {
        panic!("{events:?}")
    };
    assert_eq!(error.kind, ErrorKind::LlmContextOverflow);
    assert_eq!((chat.remaining(), writer.remaining()), (0, 0));
}

#[test]
fn a_threshold_condensation_that_saves_too_little_is_not_applied() {
    let mut bench = TurnBench::new();
    bench.auto.min_gain_percent = 100.0;
    let mut small = profile(4_000);
    small.threshold_percent = Some(10);
    let chat = ScriptedLlm::new(small).then_answer("Answer.", None);
    let writer = ScriptedLlm::new(profile(128_000)).then_answer("SUMMARY.", None);
    let mut agent = DefaultAgent::new(long_chat(12));
    let before = agent.task().conversation.clone();
    let events = bench.run(&mut agent, &chat, Some(&writer as _), say("Next?"), NOW, |_, _| {});
    let Some(AgentEvent::CondenseEnd(CondenseOutcome::NotApplied { error, metrics, .. })) =
        events.iter().find(|e| matches!(e, AgentEvent::CondenseEnd(_)))
    else {
        panic!("{events:?}")
    };
    assert_eq!(error.kind, ErrorKind::InsufficientGain);
    assert!(metrics.is_some(), "the provider ran");
    assert!(agent.task().condensations.is_empty());
    let kept = &agent.task().conversation.messages[..before.messages.len()];
    assert_eq!(kept, &before.messages[..], "the chat is unchanged but for the new turn");
    assert!(matches!(events.last(), Some(AgentEvent::ThinkingEnd)));
}

#[test]
fn chat_requests_carry_the_chat_phase_settings_of_the_chat_profile() {
    let bench = TurnBench::new();
    let mut p = profile(128_000);
    p.chat = condense_core::llm::GenerationParams {
        max_input_tokens: None,
        max_output_tokens: Some(321),
        temperature: Some(0.7),
    };
    let llm = ScriptedLlm::new(p.clone()).then_answer("Hi.", None);
    let mut agent = DefaultAgent::new(ChatTask::new("t", 0));
    bench.run(&mut agent, &llm, None, say("Hello"), NOW, |_, _| {});
    assert_eq!(llm.requests()[0].generation_params, Some(p.chat));
}

#[test]
fn a_failed_native_run_that_the_model_answered_counts_its_cost_in_the_chat() {
    let bench = TurnBench::new();
    // The summary is longer than what it replaces: the run fails with `context_grew`, after the
    // condensing model answered (and was paid).
    let usage = Usage::new(2_000, 3_000);
    let long: String = (0..900).map(|i| format!("step {i} of a far too long summary ")).collect();
    let writer = ScriptedLlm::new(profile(128_000)).then_answer(&long, Some(usage));
    let chat = ScriptedLlm::new(profile(128_000));
    let mut agent = DefaultAgent::new(long_chat(12));
    let events = bench.run(&mut agent, &chat, Some(&writer as _), AgentInput::Condense, NOW, |_, _| {});
    let Some(AgentEvent::CondenseEnd(CondenseOutcome::NotApplied { error, cost, .. })) =
        events.iter().find(|e| matches!(e, AgentEvent::CondenseEnd(_)))
    else {
        panic!("{events:?}")
    };
    assert_eq!(error.kind, ErrorKind::ContextGrew);
    let expected = writer.cost(&usage);
    assert!(expected > 0.0 && (cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    assert!((agent.task().unapplied_cost - expected).abs() < 1e-12);
    assert!(agent.task().condensations.is_empty());
}

#[test]
fn a_run_dropped_for_too_little_gain_counts_its_cost_in_the_chat() {
    let mut bench = TurnBench::new();
    bench.auto.min_gain_percent = 100.0;
    let mut small = profile(4_000);
    small.threshold_percent = Some(10);
    let usage = Usage::new(1_500, 20);
    let chat = ScriptedLlm::new(small).then_answer("Answer.", None);
    let writer = ScriptedLlm::new(profile(128_000)).then_answer("SUMMARY.", Some(usage));
    let mut agent = DefaultAgent::new(long_chat(12));
    let events = bench.run(&mut agent, &chat, Some(&writer as _), say("Next?"), NOW, |_, _| {});
    let Some(AgentEvent::CondenseEnd(CondenseOutcome::NotApplied { error, cost, .. })) =
        events.iter().find(|e| matches!(e, AgentEvent::CondenseEnd(_)))
    else {
        panic!("{events:?}")
    };
    assert_eq!(error.kind, ErrorKind::InsufficientGain);
    let expected = writer.cost(&usage);
    assert!((cost - expected).abs() < 1e-12 && (agent.task().unapplied_cost - expected).abs() < 1e-12);
}

/// Preview then apply: one LLM call writes the summary; the applied chat is what the preview
/// showed, with its record; a second apply, or an apply after the chat changed, fails clearly.
#[test]
fn a_preview_is_applied_as_shown_with_one_llm_call() {
    let bench = TurnBench::new();
    let usage = Usage::new(2_000, 100);
    let llm = ScriptedLlm::new(profile(128_000)).then_answer("Summary of the early turns.", Some(usage));
    let task = long_chat(10);
    // The estimate comes first, before any call: what the panel shows while the model writes.
    let mut estimates = Vec::new();
    let preview = bench
        .preview(&task, &llm, NOW, |e| estimates.push((e.clone(), llm.requests().len())))
        .expect("a preview");
    assert_eq!(llm.requests().len(), 1);
    let [(estimate, calls_by_then)] = estimates.as_slice() else { panic!("one estimate: {estimates:?}") };
    assert_eq!(*calls_by_then, 0, "the estimate is made before the LLM call");
    assert_eq!((estimate.task_id.as_str(), estimate.provider_id.as_str()), ("t", "native"));
    assert_eq!(estimate.needs, condense_core::provider::Needs::Llm);
    assert!(estimate.estimated_cost > 0.0, "native estimates before the call");
    assert_eq!(estimate.estimated_cost, preview.estimated_cost);
    assert_eq!(estimate.tokens_before, preview.tokens_before);
    assert!(preview.estimated_cost > 0.0, "native estimates before the call");
    assert!(preview.result.cost > 0.0);
    assert!(preview.tokens_after < preview.tokens_before);
    assert!(!preview.hidden.is_empty());
    assert!(preview.added.iter().any(|m| m.is_summary && m.text.contains("Summary of the early turns.")));
    let hidden_tokens: usize = preview.hidden.iter().map(|m| m.tokens).sum();
    assert!(hidden_tokens > 0);

    let mut applied = task.clone();
    let record = applied.apply_preview(&preview, NOW + 1).expect("applies");
    assert_eq!(llm.requests().len(), 1, "no second call");
    assert_eq!(applied.conversation.messages, preview.result.messages);
    assert_eq!(record.tokens_after, preview.tokens_after);
    assert_eq!(record.reason, CondenseReason::Manual);
    assert_eq!(applied.condensations, [record]);
    let err = applied.apply_preview(&preview, NOW + 2).unwrap_err();
    assert!(err.to_string().contains("the conversation changed since this preview"), "{err}");

    // A chat changed after the preview (here: a pin) refuses it.
    let mut pinned = task.clone();
    pinned.pin("m4", true, NOW).unwrap();
    assert!(pinned.apply_preview(&preview, NOW).is_err());
    assert_eq!(pinned.conversation.messages.iter().filter(|m| m.pinned).count(), 1);
}

/// A preview that cannot run says why, with the estimate, and the chat is untouched.
#[test]
fn a_preview_with_nothing_to_condense_says_why() {
    let bench = TurnBench::new();
    let llm = ScriptedLlm::new(profile(128_000));
    let mut estimates = Vec::new();
    let failure = bench.preview(&long_chat(3), &llm, NOW, |e| estimates.push(e.clone())).unwrap_err();
    assert_eq!(failure.error.kind, ErrorKind::NothingToCondense.as_str());
    assert_eq!(llm.requests().len(), 0);
    // The estimate was shown first (the provider could make one); the run then found nothing.
    assert_eq!(estimates.len(), 1);
    assert_eq!(estimates[0].estimated_cost, failure.estimated_cost);

    // An unknown provider has no estimate to show: it fails before.
    let bench = TurnBench { provider: "nope", ..TurnBench::new() };
    let mut shown = 0;
    let failure = bench.preview(&long_chat(10), &llm, NOW, |_| shown += 1).unwrap_err();
    assert_eq!((failure.error.kind, shown), (ErrorKind::ProviderNotFound, 0));
}

/// A pinned message survives a chat's condensation and shows in the history as pinned.
#[test]
fn a_pinned_message_survives_a_condensation() {
    let bench = TurnBench::new();
    let llm = ScriptedLlm::new(profile(128_000)).then_answer("Summary.", None);
    let mut task = long_chat(10);
    assert_eq!(task.pin("m3", true, NOW).unwrap(), ["m3"]);
    let pinned = task.conversation.messages[2].clone();
    let mut agent = DefaultAgent::new(task);
    bench.run(&mut agent, &llm, None, AgentInput::Condense, NOW, |_, _| {});
    let task = agent.task();
    assert_eq!(task.condensations.len(), 1);
    let view = task.conversation.api_view();
    assert!(view.iter().any(|m| **m == pinned), "m3 is in the view as it was");
    assert!(view.iter().any(|m| m.is_summary));
}

#[test]
fn an_automatic_summary_past_the_request_limit_keeps_a_shorter_tail_and_lands_under_it() {
    // Short early turns, then two long ones and a long new message: the last three messages
    // (native's keep-last) alone leave no room under the request limit, so the summary also
    // stands in for the two long ones and only the new message stays.
    let bench = TurnBench::new();
    let small = LlmProfile { max_output: 200, ..profile(3_000) };
    let limit = condense_core::limits::request_limit(small.context_window, small.output_limit());
    let chat = ScriptedLlm::new(small).then_answer("Answer.", None);
    let mut writing = profile(128_000);
    writing.condense.max_output_tokens = Some(200);
    let writer = ScriptedLlm::new(writing).then_answer("SUMMARY: the parser work so far.", None);
    let mut task = long_chat(10);
    let words = "the parser keeps its state between calls and the tests cover it ";
    for (id, role, marker) in [("m11", Role::User, "ELEVEN"), ("m12", Role::Assistant, "TWELVE")] {
        let text = format!("{marker} {}", words.repeat(58));
        task.conversation.messages.push(Message::new(id, role, vec![ContentBlock::text(text)]));
    }
    let mut agent = DefaultAgent::new(task);
    let events = bench.run(&mut agent, &chat, Some(&writer as _), say(&words.repeat(100)), NOW, |_, _| {});
    let Some(AgentEvent::CondenseEnd(CondenseOutcome::Applied { record, .. })) =
        events.iter().find(|e| matches!(e, AgentEvent::CondenseEnd(_)))
    else {
        panic!("{events:?}")
    };
    assert!(
        record.tokens_before > limit,
        "the chat starts past the limit ({} ≤ {limit})",
        record.tokens_before
    );
    assert!(record.tokens_after <= limit, "{} tokens after, over the limit of {limit}", record.tokens_after);
    let sent: String = chat.requests()[0].conversation_history.iter().map(|m| m.content.as_str()).collect();
    assert!(sent.contains("SUMMARY: the parser work so far."));
    assert!(!sent.contains("TWELVE"), "the long answer is summarized, not kept");
    // The message being answered is the request itself, whole.
    assert_eq!(chat.requests()[0].request, words.repeat(100).trim(), "the new message is sent whole");
}
