//! Prompt caching against the fixture LLM server over real HTTP (issue 29): the chat's Anthropic
//! breakpoints, OpenAI's `prompt_cache_key`, the cache usage read back and priced, a summary on the
//! chat model built on the last chat request byte for byte, and `condense replay`'s bill.

mod common;

use std::process::Command;
use std::rc::Rc;
use std::time::Duration;

use common::{Server, root};
use condense_cli::native::{NativeClock, NativeHttp, NativeTimer};
use condense_core::agent::{AgentEvent, AgentInput, ChatTask, CondenseOutcome, DefaultAgent};
use condense_core::llm::{HttpLlm, LlmKind, LlmProfile, RetryPolicy, Usage};
use condense_core::testing::TurnBench;
use serde_json::Value;

/// A system prompt of a realistic length: past the 1,024 tokens below which Anthropic (and the
/// fixture server) cache nothing.
const SYSTEM: &str = concat!(
    "You are a careful Rust reviewer. Always answer in English.\n",
    "Review for correctness first: ownership and borrowing, lifetimes that outlive their data, ",
    "integer overflow, panics on user input, unwrap and expect outside tests, blocking calls in ",
    "async code, locks held across await points, unbounded allocation from input sizes, and ",
    "error types that lose their cause. Then review for clarity: names that say what a value is, ",
    "functions that do one thing, comments that say why rather than what, tests that fail when ",
    "the behaviour they name breaks and pass otherwise. Then review for the project's own rules: ",
    "the core does no IO and reads no clock; every value crossing a boundary is typed once; no ",
    "global state; errors carry a kind and a message for people that names what to do next. ",
    "When you quote code, quote the smallest span that shows the problem, with its path and line. ",
    "When you suggest a change, show it as a diff against the code as it is, and say what test ",
    "would have caught the problem. Never suggest a dependency without saying why the standard ",
    "library or an existing dependency will not do. Keep the answer short: the three most ",
    "important findings first, each in one paragraph, then a list of smaller ones.\n",
    "Review for correctness first: ownership and borrowing, lifetimes that outlive their data, ",
    "integer overflow, panics on user input, unwrap and expect outside tests, blocking calls in ",
    "async code, locks held across await points, unbounded allocation from input sizes, and ",
    "error types that lose their cause. Then review for clarity: names that say what a value is, ",
    "functions that do one thing, comments that say why rather than what, tests that fail when ",
    "the behaviour they name breaks and pass otherwise. Then review for the project's own rules: ",
    "the core does no IO and reads no clock; every value crossing a boundary is typed once; no ",
    "global state; errors carry a kind and a message for people that names what to do next. ",
    "When you quote code, quote the smallest span that shows the problem, with its path and line. ",
    "When you suggest a change, show it as a diff against the code as it is, and say what test ",
    "would have caught the problem. Never suggest a dependency without saying why the standard ",
    "library or an existing dependency will not do. Keep the answer short: the three most ",
    "important findings first, each in one paragraph, then a list of smaller ones.\n",
);

/// Claude Sonnet's prices: $3 in, $15 out, cache writes $3.75, reads $0.30.
fn profile(server: &Server, kind: LlmKind, window: usize) -> LlmProfile {
    let base = match kind {
        LlmKind::Anthropic => format!("http://127.0.0.1:{}", server.port),
        _ => format!("http://127.0.0.1:{}/v1", server.port),
    };
    LlmProfile {
        base_url: Some(base),
        max_output: 400,
        price_input_per_mtok: 3.0,
        price_output_per_mtok: 15.0,
        price_cache_write_per_mtok: Some(3.75),
        price_cache_read_per_mtok: Some(0.3),
        ..LlmProfile::new("sonnet", kind, "claude-sonnet-4-5", window)
    }
}

fn client(profile: LlmProfile) -> HttpLlm {
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    let http = Rc::new(NativeHttp::new(Duration::from_secs(10)));
    HttpLlm::new(profile, Some("fixture-key".into()), http, Rc::new(NativeTimer), retry).unwrap()
}

fn say(text: &str) -> AgentInput {
    AgentInput::User { content: text.into() }
}

/// A chat with a system prompt and `n` long turns, about 110 tokens each.
fn chat(n: usize) -> ChatTask {
    let mut task = common::long_chat("chat-42", n);
    task.conversation.system = Some(SYSTEM.into());
    task
}

fn answers(events: &[AgentEvent]) -> Vec<(Usage, f64)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { usage: Some(u), cost, .. } => Some((*u, *cost)),
            _ => None,
        })
        .collect()
}

fn messages_requests(server: &Server) -> Vec<(usize, Value)> {
    server.requests().into_iter().enumerate().filter(|(_, r)| r["path"] == "/v1/messages").collect()
}

fn raw(server: &Server, index: usize) -> String {
    let mut r = ureq::get(&format!("http://127.0.0.1:{}/requests/{index}/raw", server.port)).call().unwrap();
    r.body_mut().read_to_string().unwrap()
}

fn cache_controls(v: &Value) -> usize {
    match v {
        Value::Object(o) => {
            usize::from(o.contains_key("cache_control")) + o.values().map(cache_controls).sum::<usize>()
        }
        Value::Array(a) => a.iter().map(cache_controls).sum(),
        _ => 0,
    }
}

#[test]
fn anthropic_chat_requests_carry_breakpoints_and_their_cache_usage_is_priced() {
    let server = Server::fixture_with(&["--summaries"]);
    let bench = TurnBench::with_clock(NativeClock::start());
    let p = profile(&server, LlmKind::Anthropic, 200_000);
    let llm = client(p.clone());
    let mut agent = DefaultAgent::new(chat(6));
    let mut events =
        bench.run(&mut agent, &llm, None, say("Where are nested groups dropped?"), 2_000, |_, _| {});
    events.extend(bench.run(&mut agent, &llm, None, say("And how do we fix it?"), 3_000, |_, _| {}));

    let requests = messages_requests(&server);
    assert_eq!(requests.len(), 2);
    for (_, r) in &requests {
        let body = &r["body"];
        // The system prompt and the last turn: two breakpoints of the four allowed.
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral", "{body}");
        assert_eq!(body["system"][0]["text"], SYSTEM);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.last().unwrap()["content"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(cache_controls(body), 2, "{body}");
        assert!(messages[..messages.len() - 1].iter().all(|m| m["content"].is_string()));
    }

    let answered = answers(&events);
    assert_eq!(answered.len(), 2);
    let (first, second) = (answered[0].0, answered[1].0);
    assert_eq!(first.cache_read_tokens, 0, "a cold cache: {first:?}");
    assert!(first.cache_write_tokens > 0, "the prefix is written: {first:?}");
    // The second request reads the first one's prefix (the system prompt and every turn up to
    // the first question) and writes what follows.
    assert_eq!(second.cache_read_tokens, first.cache_write_tokens, "{second:?}");
    assert!(second.cache_write_tokens > 0 && second.cache_write_tokens < first.cache_write_tokens);
    for (u, cost) in &answered {
        assert_eq!(u.input_tokens, u.uncached_tokens() + u.cache_read_tokens + u.cache_write_tokens);
        let by_hand = (u.uncached_tokens() as f64 * 3.0
            + u.cache_write_tokens as f64 * 3.75
            + u.cache_read_tokens as f64 * 0.3
            + u.output_tokens as f64 * 15.0)
            / 1e6;
        assert!((cost - by_hand).abs() < 1e-12, "{cost} vs {by_hand}");
    }
    // Reading is cheaper than sending again: the same prompt uncached costs more.
    let (u, cost) = answered[1];
    assert!(cost < (u.input_tokens as f64 * 3.0 + u.output_tokens as f64 * 15.0) / 1e6);
}

#[test]
fn openai_requests_carry_the_chat_s_cache_key_and_read_cached_tokens() {
    let server = Server::fixture();
    let bench = TurnBench::with_clock(NativeClock::start());
    let llm = client(profile(&server, LlmKind::Openai, 128_000));
    let mut agent = DefaultAgent::new(chat(6));
    let mut events =
        bench.run(&mut agent, &llm, None, say("Where are nested groups dropped?"), 2_000, |_, _| {});
    events.extend(bench.run(&mut agent, &llm, None, say("And how do we fix it?"), 3_000, |_, _| {}));
    let requests: Vec<Value> =
        server.requests().into_iter().filter(|r| r["path"] == "/v1/chat/completions").collect();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r["body"]["prompt_cache_key"] == "chat-42"));
    assert!(requests.iter().all(|r| cache_controls(&r["body"]) == 0), "no Anthropic breakpoints");
    let answered = answers(&events);
    assert_eq!(answered[0].0.cache_read_tokens, 0);
    assert!(answered[1].0.cache_read_tokens > 0, "{:?}", answered[1].0);
    assert_eq!(answered[1].0.cache_write_tokens, 0, "OpenAI bills no writes");
}

#[test]
fn a_summary_by_the_chat_model_extends_the_last_chat_request_byte_for_byte() {
    let server = Server::fixture_with(&["--summaries"]);
    let bench = TurnBench::with_clock(NativeClock::start());
    let llm = client(profile(&server, LlmKind::Anthropic, 200_000));
    let mut agent = DefaultAgent::new(chat(10));
    bench.run(&mut agent, &llm, None, say("Where are nested groups dropped?"), 2_000, |_, _| {});
    let events = bench.run(&mut agent, &llm, None, AgentInput::Condense, 3_000, |_, _| {});

    let requests = messages_requests(&server);
    assert_eq!(requests.len(), 2, "the chat request, then one summary request");
    let (chat_at, summary_at) = (requests[0].0, requests[1].0);
    let (chat_body, summary_body) = (raw(&server, chat_at), raw(&server, summary_at));
    // The chat request's system prompt and every turn, breakpoints included, are the summary
    // request's first bytes; the summary's own turns follow.
    let end = chat_body.find(r#"],"max_tokens""#).expect("the messages end before max_tokens");
    assert!(
        summary_body.starts_with(&chat_body[..end]),
        "the summary request does not begin with the chat request:\n{}\n---\n{}",
        &chat_body[..end.min(400)],
        &summary_body[..end.min(400)]
    );
    assert_eq!(&summary_body[end..end + 1], ",", "more turns follow the chat's");
    let summary: Value = serde_json::from_str(&summary_body).unwrap();
    let last = summary["messages"].as_array().unwrap().last().unwrap().clone();
    let instruction = last["content"].as_str().unwrap_or_default();
    assert!(instruction.contains("Write a detailed summary of the conversation above"), "{last}");
    assert!(instruction.contains("messages stay as they are"), "{instruction}");
    // The summary's prefix was read from the cache, and its row says how much.
    let record = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::CondenseEnd(CondenseOutcome::Applied { record, .. }) => Some(record.clone()),
            _ => None,
        })
        .expect("the condensation was applied");
    let share = record.cached_share.expect("the summary call reported its cache reads");
    assert!(share > 0.5 && share < 1.0, "{share}");
}

#[test]
fn a_separate_condensing_model_gets_the_span_prompt_as_before() {
    let server = Server::fixture_with(&["--summaries"]);
    let bench = TurnBench::with_clock(NativeClock::start());
    let llm = client(profile(&server, LlmKind::Anthropic, 200_000));
    let condensing =
        client(LlmProfile { id: "haiku".into(), ..profile(&server, LlmKind::Anthropic, 200_000) });
    let mut agent = DefaultAgent::new(chat(10));
    bench.run(&mut agent, &llm, None, say("Where are nested groups dropped?"), 2_000, |_, _| {});
    bench.run(&mut agent, &llm, Some(&condensing), AgentInput::Condense, 3_000, |_, _| {});
    let requests = messages_requests(&server);
    let summary = &requests[1].1["body"];
    assert!(summary["system"].as_str().is_some_and(|s| s.contains("You summarize")), "{summary}");
    assert_eq!(cache_controls(summary), 0);
}

#[test]
fn replay_bills_each_policy_and_cache_aware_is_cheapest_within_the_window() {
    let server = Server::fixture_with(&["--summaries"]);
    let out = Command::new(env!("CARGO_BIN_EXE_condense"))
        .args([
            "replay",
            "--profile",
            &root("tests/fixtures/replay/sonnet.json"),
            "--provider",
            "native",
            "--json",
        ])
        .arg(root("tests/fixtures/real/codex-shaped-cli-port.jsonl"))
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{}", server.port))
        .env("ANTHROPIC_API_KEY", "fixture-key")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reports: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let policies: Vec<&str> = reports.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(policies, ["none", "threshold", "cache-aware"]);
    for r in &reports {
        for key in [
            "input_cost",
            "cache_read_tokens",
            "cache_write_tokens",
            "uncached_tokens",
            "peak_context",
            "condensations",
            "retention",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
        assert_eq!(r["over_limit"], 0);
    }
    let cost = |r: &Value| r["input_cost"].as_f64().unwrap();
    let tokens = |r: &Value, k: &str| r[k].as_f64().unwrap();
    // Without condensations the bill is the cache's arithmetic alone.
    let none = &reports[0];
    let by_hand = (tokens(none, "cache_read_tokens") * 0.3
        + tokens(none, "cache_write_tokens") * 3.75
        + tokens(none, "uncached_tokens") * 3.0)
        / 1e6;
    assert!((cost(none) - by_hand).abs() < 1e-9, "{} vs {by_hand}", cost(none));
    let aware = &reports[2];
    assert!(aware["condensations"].as_u64().unwrap() > 0);
    assert!(aware["summary_cost"].as_f64().unwrap() > 0.0);
    // With the client's own system prompt and tools read on every turn (the file's
    // `.context.json`), what condensing saves is a smaller share of the bill than without them.
    assert!(cost(aware) < cost(&reports[1]), "{aware} vs {}", reports[1]);
    assert_eq!(aware["retention"], reports[1]["retention"]);
    assert!(aware["peak_context"].as_u64().unwrap() < none["peak_context"].as_u64().unwrap());
}

#[test]
fn the_cache_aware_policy_condenses_a_chat_before_its_threshold_when_it_pays() {
    use condense_core::agent::CondenseReason;
    use condense_core::llm::CondensePolicy;
    let server = Server::fixture_with(&["--summaries"]);
    let bench = TurnBench::with_clock(NativeClock::start());
    let run = |policy: Option<CondensePolicy>| {
        let p = LlmProfile { condense_policy: policy, ..profile(&server, LlmKind::Anthropic, 200_000) };
        let llm = client(p);
        let mut agent = DefaultAgent::new(chat(200));
        let mut events =
            bench.run(&mut agent, &llm, None, say("Where are nested groups dropped?"), 2_000, |_, _| {});
        events.extend(bench.run(&mut agent, &llm, None, say("And how do we fix it?"), 3_000, |_, _| {}));
        events.into_iter().find_map(|e| match e {
            AgentEvent::CondenseEnd(CondenseOutcome::Applied { record, .. }) => Some(record),
            _ => None,
        })
    };
    // About 22,000 tokens, far below 80% of 200,000: the threshold waits.
    assert_eq!(run(Some(CondensePolicy::Threshold)), None);
    // With cache prices the default is cache-aware: the chat was loaded with a cold cache, so the
    // first request writes it whole anyway, and re-reading 20,000 tokens on each of the turns
    // expected costs more than the summary and the smaller rewrite.
    let record = run(None).expect("the cache-aware policy condensed");
    assert_eq!(record.reason, CondenseReason::Cache);
    let estimate = record.estimate.expect("the row carries the policy's figures");
    assert!(estimate.condense && estimate.saving > estimate.cost_now, "{estimate:?}");
    assert!(record.tokens_after < record.tokens_before / 2);
}

#[test]
fn the_cache_aware_policy_leaves_alone_a_chat_its_provider_would_refuse() {
    use condense_core::ProviderConfigUpdate;
    let server = Server::fixture_with(&["--summaries"]);
    let mut bench = TurnBench::with_clock(NativeClock::start());
    let llm = client(profile(&server, LlmKind::Anthropic, 200_000));
    // The chat where condensing pays (above), with its provider turned off in the settings: the
    // policy starts no run bound to fail, so no failure is shown at every turn.
    let off = ProviderConfigUpdate { enabled: Some(false), ..ProviderConfigUpdate::default() };
    bench.manager.registry_mut().update_config("native", off).unwrap();
    let mut agent = DefaultAgent::new(chat(200));
    let mut events =
        bench.run(&mut agent, &llm, None, say("Where are nested groups dropped?"), 2_000, |_, _| {});
    events.extend(bench.run(&mut agent, &llm, None, say("And how do we fix it?"), 3_000, |_, _| {}));
    let runs: Vec<&AgentEvent> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::CondenseStart { .. } | AgentEvent::CondenseEnd(_)))
        .collect();
    assert!(runs.is_empty(), "{runs:?}");
    assert_eq!(answers(&events).len(), 2);
}

/// On each real session (with its client's system prompt and tools), through the core's gateway:
/// the cache-aware policy bills no more than threshold, and no more than sending every request as
/// the client sent it unless the threshold forced a condensation; and the gateway's books say
/// what it saved to within 5% (or $0.002) of what the replay billed (`scripts/replay-table`
/// prints the same figures).
#[test]
fn through_the_gateway_on_the_real_sessions_cache_aware_bills_no_more_than_none_or_threshold() {
    let sessions = [
        "claude-code-python-to-rust-port.jsonl",
        "claude-code-coverage-test-fix.jsonl",
        "codex-shaped-cli-port.jsonl",
        "cline-shaped-phased-refactor.json",
    ];
    for profile in ["sonnet.json", "sonnet-threshold-25.json"] {
        for session in sessions {
            let out = Command::new(env!("CARGO_BIN_EXE_condense"))
                .args([
                    "replay",
                    "--profile",
                    &root(&format!("tests/fixtures/replay/{profile}")),
                    "--through-gateway",
                    "--json",
                ])
                .arg(root(&format!("tests/fixtures/real/{session}")))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let reports: Vec<Value> = String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let by = |policy: &str| reports.iter().find(|r| r["policy"] == policy).unwrap().clone();
            let (none, threshold, aware) = (by("none"), by("threshold"), by("cache-aware"));
            let cost = |r: &Value| r["input_cost"].as_f64().unwrap();
            assert!(none["requests"].as_u64().unwrap() > 10, "{session}: {none}");
            assert!(cost(&aware) <= cost(&threshold) + 1e-9, "{profile} {session}: {aware} vs {threshold}");
            if aware["forced"] == 0 {
                assert!(cost(&aware) <= cost(&none) + 1e-9, "{profile} {session}: {aware} vs {none}");
            }
            for r in [&threshold, &aware] {
                let real = cost(&none) - cost(r);
                let books = r["books_saved_usd"].as_f64().unwrap();
                assert!(
                    (books - real).abs() <= (0.05 * real.abs()).max(0.002),
                    "{profile} {session}: books {books}, really {real}: {r}"
                );
            }
        }
    }
}
