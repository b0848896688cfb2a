//! No degenerate summary is applied (issue 25): over the scripted LLM, `native` asks again once at
//! temperature 0 when an answer repeats itself or was cut before its sections, applies a good
//! retry, and refuses with `degenerate_summary` — the conversation unchanged, both calls paid
//! for — when the retry is degenerate too; `smart` then moves on and lands on its target by
//! truncation, its native row saying why.

mod common;

use common::{StepClock, block_on, counter};
use condense_core::llm::{Finish, LlmKind, LlmProfile, LlmProvider, StreamEvent, Usage};
use condense_core::model::{ContentBlock, Message, Role, api_view, check_tool_pairs};
use condense_core::testing::ScriptedLlm;
use condense_core::{
    CondensationManager, CondensationOptions, CondensationResult, Conversation, ErrorKind, Services,
    TokenCounter,
};

const USAGE: Usage = Usage::new(2_000, 900);

/// A small model behind an OpenAI-compatible server, with prices so that cost is visible and a
/// window that takes the chat in one request (the 4k window of the issue would split it in parts).
fn small_model() -> LlmProfile {
    LlmProfile {
        price_input_per_mtok: 1.0,
        price_output_per_mtok: 2.0,
        ..LlmProfile::new("small", LlmKind::OpenaiCompatible, "smollm2-135m", 16_384)
    }
}

/// A coding chat of about 5k tokens (13 rounds): reads, edits, test runs, the user's follow-ups.
fn coding_chat() -> Conversation {
    let mut messages = vec![Message::new(
        "m0",
        Role::User,
        vec![ContentBlock::text("Port the CSV importer in src/import/ to the Reader API. Keep the names.")],
    )];
    for r in 0..13 {
        let file: String = (0..12)
            .map(|l| {
                format!(
                    "pub fn parse_field_{r}_{l}(row: &Row) -> Result<Field, ImportError> {{ row.get({l}) }}\n"
                )
            })
            .collect();
        messages.extend([
            Message::new(
                format!("a{r}"),
                Role::Assistant,
                vec![
                    ContentBlock::text(format!("Reading src/import/mod_{r}.rs.")),
                    ContentBlock::ToolUse {
                        id: format!("t{r}"),
                        name: "read_file".into(),
                        input: serde_json::json!({"path": format!("src/import/mod_{r}.rs")}),
                    },
                ],
            ),
            Message::new(
                format!("r{r}"),
                Role::User,
                vec![ContentBlock::tool_result_text(format!("t{r}"), file)],
            ),
            Message::new(
                format!("s{r}"),
                Role::Assistant,
                vec![ContentBlock::text(format!("Module {r} ported; cargo test passes."))],
            ),
            Message::new(
                format!("u{r}"),
                Role::User,
                vec![ContentBlock::text(format!("Good, go on with mod_{}.", r + 1))],
            ),
        ]);
    }
    Conversation::new(messages)
}

/// What the small model wrote: one line until its output limit.
fn looped() -> Vec<StreamEvent> {
    answer(&format!("Summary:\n{}", "[tool result]\n".repeat(300)), "length")
}

/// A summary in the sections the prompt asks for.
const GOOD: &str = "\
## 1. Primary request and intent
Port the CSV importer in src/import/ to the Reader API; keep the names.
## 3. Files and code
- src/import/mod_0.rs to mod_12.rs: ported.
## 7. Pending tasks
- mod_13
## 9. Next step
Port src/import/mod_13.rs.";

fn answer(text: &str, finish: &str) -> Vec<StreamEvent> {
    vec![
        StreamEvent::Delta(text.to_owned()),
        StreamEvent::Done(Finish {
            usage: Some(USAGE),
            finish_reason: Some(finish.into()),
            model: None,
            cost_usd: None,
        }),
    ]
}

fn run(
    c: &Conversation,
    provider: &str,
    options: CondensationOptions,
    llm: &dyn LlmProvider,
) -> CondensationResult {
    let tokens = counter();
    let clock = StepClock::default();
    let manager = CondensationManager::with_builtin_providers();
    let services = Services::new(&tokens, &clock).with_llm(llm);
    block_on(manager.condense(c, Some(provider), options, services)).unwrap()
}

fn native(c: &Conversation, llm: &dyn LlmProvider) -> CondensationResult {
    run(c, "native", CondensationOptions::default(), llm)
}

#[test]
fn a_degenerate_summary_is_asked_again_greedily_and_a_good_retry_is_applied() {
    let c = coding_chat();
    let llm = ScriptedLlm::new(small_model()).then(looped()).then(answer(GOOD, "stop"));
    let result = native(&c, &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    assert_eq!(result.summary.as_deref(), Some(GOOD));
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    // The same request, at temperature 0 the second time; the condense phase's other settings kept.
    let condense = llm.profile().condense;
    assert_eq!(condense.temperature, Some(0.2));
    assert_eq!(requests[0].generation_params, Some(condense));
    let greedy = requests[1].generation_params.unwrap();
    assert_eq!(greedy.temperature, Some(0.0));
    assert_eq!(
        (greedy.max_output_tokens, greedy.max_input_tokens),
        (condense.max_output_tokens, condense.max_input_tokens)
    );
    assert_eq!(requests[1].conversation_history, requests[0].conversation_history);
    assert_eq!(requests[1].request, requests[0].request);
    let metrics = result.metrics.as_ref().unwrap();
    assert_eq!(metrics.extra["llm_calls"], 2);
    assert_eq!(metrics.extra["degenerate_answers"], 1);
    assert_eq!(metrics.extra["greedy_retries"], 1);
    assert_eq!(metrics.extra["usage"]["output_tokens"], 2 * USAGE.output_tokens);
    // The answer applied finished on its own: not flagged as cut.
    assert_eq!(metrics.extra["finish_reason"], "stop");
    assert!(!metrics.summary_truncated());
    assert!((result.cost - 2.0 * llm.cost(&USAGE)).abs() < 1e-12, "both calls are paid for: {}", result.cost);
}

#[test]
fn a_summary_degenerate_twice_is_refused_and_the_conversation_is_unchanged() {
    let c = coding_chat();
    let llm = ScriptedLlm::new(small_model()).then(looped()).then(looped());
    let result = native(&c, &llm);
    let error = result.error.as_ref().expect("refused");
    assert_eq!(error.kind, ErrorKind::DegenerateSummary);
    assert!(error.message.starts_with("degenerate summary: "), "{}", error.message);
    assert!(error.message.contains("it repeats \"[tool result]\""), "{}", error.message);
    assert!(error.message.contains("greedy retry at temperature 0"), "{}", error.message);
    assert_eq!(result.messages, c.messages, "the originals come back");
    assert!(result.summary.is_none());
    assert_eq!(llm.requests().len(), 2);
    assert_eq!(llm.remaining(), 0);
    assert!((result.cost - 2.0 * llm.cost(&USAGE)).abs() < 1e-12, "both calls are counted: {}", result.cost);
}

#[test]
fn a_summary_cut_before_its_sections_is_asked_again_and_one_cut_after_some_is_kept() {
    let c = coding_chat();
    let prose = "The user and the assistant ported the importer module by module, reading each file and then";
    let llm = ScriptedLlm::new(small_model()).then(answer(prose, "length")).then(answer(GOOD, "length"));
    let result = native(&c, &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    assert_eq!(llm.requests().len(), 2);
    assert_eq!(result.summary.as_deref(), Some(GOOD));
    // Cut, but with its sections: applied and flagged.
    assert!(result.metrics.as_ref().unwrap().summary_truncated());
    // Cut before its sections twice: refused with the reason.
    let llm = ScriptedLlm::new(small_model()).then(answer(prose, "length")).then(answer(prose, "length"));
    let result = native(&c, &llm);
    let error = result.error.unwrap();
    assert_eq!(error.kind, ErrorKind::DegenerateSummary);
    assert!(error.message.contains("before any of the 9 sections asked for"), "{}", error.message);
    assert_eq!(result.messages, c.messages);
}

#[test]
fn no_retry_where_the_model_takes_no_temperature_or_was_greedy_already() {
    let c = coding_chat();
    // OpenAI's reasoning models take no temperature.
    let reasoning =
        LlmProfile { price_input_per_mtok: 1.0, ..LlmProfile::new("o", LlmKind::Openai, "o3-mini", 128_000) };
    assert!(!reasoning.capabilities().supports_temperature);
    let greedy = {
        let mut p = small_model();
        p.condense.temperature = Some(0.0);
        p
    };
    for (profile, why) in [
        (reasoning, "the condensing model takes no temperature, so it was not retried"),
        (greedy, "it was written at temperature 0 already, so it was not retried"),
    ] {
        let llm = ScriptedLlm::new(profile).then(looped()).then(answer(GOOD, "stop"));
        let result = native(&c, &llm);
        let error = result.error.as_ref().expect("refused");
        assert_eq!(error.kind, ErrorKind::DegenerateSummary);
        assert!(error.message.contains(why), "{}", error.message);
        assert_eq!(llm.requests().len(), 1, "one call");
        assert_eq!(result.messages, c.messages);
        assert!((result.cost - llm.cost(&USAGE)).abs() < 1e-12);
    }
}

#[test]
fn smart_moves_on_to_the_llm_free_passes_when_its_summary_is_refused() {
    let c = coding_chat();
    let before = counter().count_request(None, &c.api_view());
    assert!((4_000..7_000).contains(&before), "{before} tokens");
    let target = before / 3;
    let llm = ScriptedLlm::new(small_model()).then(looped()).then(looped());
    let options = CondensationOptions { target_tokens: Some(target), ..Default::default() };
    let result = run(&c, "smart", options, &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    let after = result.new_context_tokens.unwrap();
    assert!(after <= target, "{after} tokens for a target of {target}");
    let metrics = result.metrics.as_ref().unwrap();
    let passes = metrics.passes();
    let native = passes.iter().find(|p| p.pass == "native").expect("a native row");
    let reason = native.skipped.as_deref().expect("the native pass says why it did not apply");
    assert!(reason.starts_with("degenerate summary: "), "{reason}");
    assert!(reason.contains("[tool result]"), "{reason}");
    assert!((native.cost - 2.0 * llm.cost(&USAGE)).abs() < 1e-12, "{}", native.cost);
    // The passes after the summary met the target: older turns handed over to the ledger.
    let handover = passes.iter().find(|p| p.pass == "handover").expect("a handover row");
    assert!(handover.skipped.is_none() && handover.tokens_saved > 0, "{handover:?}");
    assert_eq!(metrics.extra["target_met"], true);
    // No summary went in; the refused calls are in the run's cost.
    assert!(result.summary.is_none());
    assert!(result.messages.iter().all(|m| !m.is_summary));
    assert!((result.cost - 2.0 * llm.cost(&USAGE)).abs() < 1e-12, "{}", result.cost);
    check_tool_pairs(&api_view(&result.messages)).unwrap();
}
