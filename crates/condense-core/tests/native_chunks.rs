//! The native provider against a condensing model with a small window, over the scripted LLM (no
//! sockets): every request fits the model, a long span is summarized in parts then merged, a span
//! holding an earlier summary is summarized from the messages it hid, the prompt is shrunk
//! without touching the conversation, and what a failed run spent is reported.

use condense_core::llm::{Finish, LlmKind, LlmProfile, LlmProvider, PromptBundle, StreamEvent, Usage};
use condense_core::model::{ContentBlock, Message, Role, api_view, check_tool_pairs};
use condense_core::provider::METRIC_SUMMARY_TRUNCATED;
use condense_core::testing::{ScriptedLlm, StepClock};
use condense_core::tokens::{Encoding, TiktokenCounter, TokenCounter};
use condense_core::{CondensationManager, CondensationOptions, CondensationResult, Conversation, Services};
use futures::executor::block_on;

const WINDOW: usize = 4096;

fn small_model() -> LlmProfile {
    LlmProfile {
        price_input_per_mtok: 1.0,
        price_output_per_mtok: 2.0,
        ..LlmProfile::new("small", LlmKind::OpenaiCompatible, "smollm2-135m", WINDOW)
    }
}

const USAGE: Usage = Usage::new(1_000, 100);

/// A scripted condensing model that answers `n` requests with short summaries.
fn answers(n: usize) -> ScriptedLlm {
    (0..n).fold(ScriptedLlm::new(small_model()), |llm, i| {
        llm.then_answer(
            &format!("Summary {i}: the user asked to fix the parser; src/lib.rs was edited."),
            Some(USAGE),
        )
    })
}

/// A coding session: file reads with distinct contents, edits, test runs, user turns.
fn session(rounds: usize) -> Conversation {
    let mut messages = vec![Message::new(
        "m0",
        Role::User,
        vec![ContentBlock::text("Fix the parser in src/lib.rs. Never touch prod.toml.")],
    )];
    for r in 0..rounds {
        let call = format!("t{r}");
        let file: String = (0..40)
            .map(|line| {
                format!("fn helper_{r}_{line}(input: &str) -> usize {{ input.len() * {line} + {r} }}\n")
            })
            .collect();
        messages.push(Message::new(
            format!("a{r}"),
            Role::Assistant,
            vec![
                ContentBlock::text(format!("Reading module {r}.")),
                ContentBlock::ToolUse {
                    id: call.clone(),
                    name: "read_file".into(),
                    input: serde_json::json!({"path": format!("src/mod_{r}.rs")}),
                },
            ],
        ));
        messages.push(Message::new(
            format!("r{r}"),
            Role::User,
            vec![ContentBlock::tool_result_text(call, file)],
        ));
        messages.push(Message::new(
            format!("b{r}"),
            Role::Assistant,
            vec![ContentBlock::text(format!("Module {r} looks fine; the helper count is {}.", 40 + r))],
        ));
        messages.push(Message::new(
            format!("u{r}"),
            Role::User,
            vec![ContentBlock::text(format!("Good. Now check module {}.", r + 1))],
        ));
    }
    Conversation::new(messages)
}

fn counter() -> TiktokenCounter {
    TiktokenCounter::new(Encoding::O200kBase)
}

fn run(c: &Conversation, llm: &dyn LlmProvider) -> CondensationResult {
    let tokens = counter();
    let clock = StepClock::default();
    let manager = CondensationManager::with_builtin_providers();
    let services = Services::new(&tokens, &clock).with_llm(llm);
    block_on(manager.condense(c, Some("native"), CondensationOptions::default(), services)).unwrap()
}

/// The tokens of a request as the model gets it, by our counter.
fn request_tokens(llm: &dyn LlmProvider, bundle: &PromptBundle) -> usize {
    counter().count_text(&llm.adapter().render_for_display(bundle))
}

#[test]
fn a_conversation_six_times_the_window_is_summarized_in_parts_then_merged() {
    let c = session(40);
    let before = counter().count_request(None, &c.api_view());
    assert!(before > 6 * WINDOW, "{before} tokens");
    let llm = answers(60);
    let result = run(&c, &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    let metrics = &result.metrics.as_ref().unwrap().extra;
    let chunks = metrics["chunks"].as_u64().unwrap() as usize;
    let calls = metrics["llm_calls"].as_u64().unwrap() as usize;
    let sent = llm.requests();
    assert!(chunks > 1, "{metrics:?}");
    assert_eq!(calls, sent.len());
    assert!(calls > chunks, "the parts and at least one merge");
    // Every request fits the model: the prompt and the answer it may write, within the window.
    let output = llm.profile().output_limit();
    for (i, bundle) in sent.iter().enumerate() {
        let size = request_tokens(&llm, bundle);
        assert!(size + output <= WINDOW, "request {i}: {size} + {output} tokens");
        assert_eq!(bundle.generation_params, Some(llm.profile().condense), "the condense phase's settings");
    }
    assert!(sent[0].request.contains(&format!("part 1 of {chunks}")), "{}", sent[0].request);
    assert!(sent[chunks - 1].request.contains(&format!("part {chunks} of {chunks}")));
    assert!(sent.last().unwrap().request.contains("partial summaries above"), "the last call merges");
    // Usage and cost are the sum of every call.
    let usage = &metrics["usage"];
    assert_eq!(usage["input_tokens"], USAGE.input_tokens * calls as u64);
    assert_eq!(usage["output_tokens"], USAGE.output_tokens * calls as u64);
    assert!((result.cost - llm.cost(&USAGE) * calls as f64).abs() < 1e-12);
    assert_eq!(
        result.summary.as_deref(),
        Some(
            format!("Summary {}: the user asked to fix the parser; src/lib.rs was edited.", calls - 1)
                .as_str()
        )
    );
    assert!(result.new_context_tokens.unwrap() < before / 4);
    check_tool_pairs(&api_view(&result.messages)).unwrap();
    assert_eq!(metrics[METRIC_SUMMARY_TRUNCATED], false);
}

#[test]
fn a_span_that_fits_is_one_request_as_before() {
    let c = session(3);
    let big = LlmProfile { context_window: 32_000, ..small_model() };
    let llm = ScriptedLlm::new(big).then_answer("Summary.", Some(USAGE));
    let result = run(&c, &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    let metrics = &result.metrics.as_ref().unwrap().extra;
    assert_eq!((metrics["chunks"].as_u64(), metrics["llm_calls"].as_u64()), (Some(1), Some(1)));
    assert_eq!(metrics["prompt_shrunk"], false);
    let sent = llm.requests();
    // The whole span, word for word.
    let prompt: String = sent[0].conversation_history.iter().map(|m| m.content.as_str()).collect();
    assert!(prompt.contains("fn helper_1_39(input: &str)"));
}

#[test]
fn the_prompt_is_shrunk_but_the_conversation_is_not() {
    // A big window, but a read repeated three times: the prompt references the repeats.
    let mut c = session(12);
    let same = "the same long listing of a directory entry\n".repeat(200);
    for (i, m) in c.messages.iter_mut().enumerate().filter(|(_, m)| m.id.starts_with('r')) {
        if i % 2 == 0 {
            let ContentBlock::ToolResult { tool_use_id, .. } = &m.content[0] else { panic!() };
            m.content = vec![ContentBlock::tool_result_text(tool_use_id.clone(), same.clone())];
        }
    }
    let llm = answers(60);
    let result = run(&c, &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    let metrics = &result.metrics.as_ref().unwrap().extra;
    assert_eq!(metrics["prompt_shrunk"], true);
    let prompt: String = llm
        .requests()
        .iter()
        .flat_map(|b| b.conversation_history.iter().map(|m| m.content.clone()))
        .collect();
    assert!(prompt.contains("tokens omitted]"), "long tool results cut to head and tail");
    assert!(prompt.contains("as the output of read_file src/mod_"), "a repeated output is referenced");
    // The originals are all still there, untouched (the template checks it too).
    for original in &c.messages {
        let kept = result.messages.iter().find(|m| m.id == original.id).unwrap();
        assert_eq!(kept.content, original.content);
    }
}

fn with_earlier_summary(hidden_text: &str) -> Conversation {
    let mut messages = vec![Message::new("m0", Role::User, vec![ContentBlock::text("Build the importer.")])];
    for i in 1..=4 {
        let role = if i % 2 == 1 { Role::Assistant } else { Role::User };
        let mut m =
            Message::new(format!("h{i}"), role, vec![ContentBlock::text(format!("{hidden_text} {i}"))]);
        m.condense_parent = Some("c1".into());
        messages.push(m);
    }
    let mut s = Message::new(
        "c1.summary",
        Role::Assistant,
        vec![ContentBlock::text("EARLIER SUMMARY of the importer work.")],
    );
    s.is_summary = true;
    s.condense_id = Some("c1".into());
    messages.push(s);
    for i in 0..8 {
        let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
        let text = format!("Step {i}: {}", "the importer reads rows and checks each header ".repeat(12));
        messages.push(Message::new(format!("n{i}"), role, vec![ContentBlock::text(text)]));
    }
    Conversation::new(messages)
}

#[test]
fn a_new_summary_is_written_from_the_originals_an_earlier_summary_hid() {
    let c = with_earlier_summary("The user said: keep the CSV header order, ORIGINAL-DETAIL");
    let llm = answers(1);
    let result = run(&c, &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    assert_eq!(result.metrics.as_ref().unwrap().extra["from_originals"], true);
    let prompt: String = llm.requests()[0].conversation_history.iter().map(|m| m.content.clone()).collect();
    assert!(prompt.contains("ORIGINAL-DETAIL 4"), "the hidden originals are in the request");
    assert!(!prompt.contains("EARLIER SUMMARY"), "not the summary of them");
    // Undo still works step by step: the new condensation, then the old one.
    let (_, undone) = condense_core::model::undo_last(&result.messages).unwrap();
    assert_eq!(undone, c.messages);
}

#[test]
fn originals_too_big_for_one_request_fall_back_to_the_summary_text() {
    let c = with_earlier_summary(&"a very long original message about the importer ".repeat(400));
    let llm = answers(60);
    let result = run(&c, &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    let metrics = &result.metrics.as_ref().unwrap().extra;
    assert_eq!(metrics["from_originals"], false);
    let prompt: String = llm
        .requests()
        .iter()
        .flat_map(|b| b.conversation_history.iter().map(|m| m.content.clone()))
        .collect();
    assert!(prompt.contains("EARLIER SUMMARY"));
}

#[test]
fn a_failing_later_part_reports_what_the_earlier_parts_cost() {
    let c = session(40);
    let llm = ScriptedLlm::new(small_model())
        .then_answer("Part one summary.", Some(USAGE))
        .then_answer("Part two summary.", Some(USAGE))
        .then_fail("", condense_core::ErrorKind::LlmServer, "overloaded");
    let result = run(&c, &llm);
    assert_eq!(result.error.as_ref().unwrap().kind, condense_core::ErrorKind::LlmServer);
    assert_eq!(result.messages, c.messages, "the originals come back");
    assert!((result.cost - 2.0 * llm.cost(&USAGE)).abs() < 1e-12, "{}", result.cost);
    assert_eq!(llm.requests().len(), 3);
}

#[test]
fn an_answer_cut_by_its_limit_is_flagged() {
    let c = session(3);
    // Cut in its second section: kept and flagged. (One cut before any section is degenerate.)
    let cut = vec![
        StreamEvent::Delta(
            "## 1. Primary request and intent\nFix the parser in src/lib.rs.\n## 2. Key technical concepts\nA summary that stops mid".into(),
        ),
        StreamEvent::Done(Finish {
            usage: Some(USAGE),
            finish_reason: Some("length".into()),
            model: None,
            cost_usd: None,
        }),
    ];
    let llm = ScriptedLlm::new(small_model()).then(cut);
    let result = run(&c, &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    assert!(result.metrics.as_ref().unwrap().summary_truncated());
}

#[test]
fn a_window_too_small_for_the_answer_is_refused_before_any_call() {
    let c = session(3);
    let tiny =
        LlmProfile { max_output: 900, ..LlmProfile::new("tiny", LlmKind::OpenaiCompatible, "m", 1_000) };
    let llm = ScriptedLlm::new(tiny);
    let result = run(&c, &llm);
    let error = result.error.unwrap();
    assert_eq!(error.kind, condense_core::ErrorKind::InvalidConfig);
    assert!(error.message.contains("window of 1000 tokens"), "{}", error.message);
    assert!(llm.requests().is_empty());
}

/// The gateway's summary of a span (`summarize_span`): one tool round under its task is summary
/// enough (no guard of a run's size), a span that needs parts is summarized in parts and merged,
/// and the cost is the calls'.
#[test]
fn a_span_as_short_as_one_tool_round_is_summarized_and_a_long_one_in_parts() {
    use condense_core::providers::native::summarize_span;
    let counter = TiktokenCounter::new(Encoding::O200kBase);
    let clock = StepClock::new(1.0);
    let one_round = &session(1).messages[..3];
    assert!(
        one_round[2].content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. })),
        "the task, a call and its result"
    );
    let llm = answers(1);
    let done = block_on(summarize_span(one_round, Services::new(&counter, &clock).with_llm(&llm))).unwrap();
    assert!(done.text.starts_with("Summary 0"));
    assert_eq!(done.usage, USAGE);
    assert!(done.cost > 0.0);
    let asked = llm.requests();
    assert_eq!(asked.len(), 1);
    let prompt: String = asked[0].conversation_history.iter().map(|m| m.content.clone()).collect();
    assert!(prompt.contains("src/mod_0.rs"), "the round is in the prompt");

    let long = &session(30).messages;
    let llm = answers(12);
    let done = block_on(summarize_span(long, Services::new(&counter, &clock).with_llm(&llm))).unwrap();
    let requests = llm.requests();
    assert!(requests.len() >= 3, "parts, then a merge: {}", requests.len());
    let window = |b: &PromptBundle| {
        counter.count_text(&b.conversation_history.iter().map(|m| m.content.as_str()).collect::<String>())
    };
    assert!(requests.iter().all(|b| window(b) < WINDOW), "every request fits the model");
    assert_eq!(done.usage.input_tokens, USAGE.input_tokens * requests.len() as u64);

    let nothing = block_on(summarize_span(&one_round[..1], Services::new(&counter, &clock).with_llm(&llm)));
    assert!(nothing.is_err(), "a span of the first message alone has nothing to summarize");
    // A summary longer than the messages it would stand in for is refused.
    let rambling: String =
        (0..400).map(|i| format!("Point {i}: module {} holds value {}. ", i % 7, i * 13)).collect();
    let llm = ScriptedLlm::new(small_model()).then_answer(&rambling, Some(USAGE));
    let grew = block_on(summarize_span(one_round, Services::new(&counter, &clock).with_llm(&llm)));
    assert!(matches!(grew, Err(condense_core::CondenseError::ContextGrew { .. })), "{grew:?}");
}
