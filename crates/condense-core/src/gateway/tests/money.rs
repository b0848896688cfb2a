//! The gateway's books against an upstream that bills by Anthropic's cache rules with its own
//! token count (a block's characters over four, as `tests/servers/fixture_llm.py` counts): what a
//! session cost sent directly, what it cost through the gateway, and what the gateway says it
//! saved. (The cache rules are the core's [`PromptCache`]; the test against the fixture server,
//! `crates/condense-cli/tests/money.rs`, checks the books against rules written apart.)

use std::collections::BTreeMap;

use serde_json::Value;

use super::*;
use crate::agent::CondenseReason;
use crate::billing::{Billed, Block, CacheRules, PromptCache, Ttl, model_prices};
use crate::model::hash::{fnv1a, fnv1a_from};

/// An upstream that bills a Messages body by Anthropic's rules: tools, system blocks, then each
/// message's content blocks, a block's tokens its JSON (without `cache_control`) over four.
struct Upstream {
    cache: PromptCache,
}

impl Upstream {
    fn new() -> Upstream {
        Upstream { cache: PromptCache::new(CacheRules::Breakpoints { min_tokens: 1024 }) }
    }

    fn blocks(body: &str) -> Vec<Block> {
        let v: Value = serde_json::from_str(body).unwrap();
        let mut raw: Vec<(String, Value)> = Vec::new();
        for tool in v["tools"].as_array().into_iter().flatten() {
            raw.push(("tools".into(), tool.clone()));
        }
        match &v["system"] {
            Value::String(s) => raw.push(("system".into(), serde_json::json!({"type": "text", "text": s}))),
            Value::Array(blocks) => raw.extend(blocks.iter().map(|b| ("system".into(), b.clone()))),
            _ => {}
        }
        for m in v["messages"].as_array().unwrap() {
            let role = m["role"].as_str().unwrap().to_owned();
            match &m["content"] {
                Value::String(s) => raw.push((role, serde_json::json!({"type": "text", "text": s}))),
                Value::Array(blocks) => raw.extend(blocks.iter().map(|b| (role.clone(), b.clone()))),
                _ => {}
            }
        }
        let mut key = fnv1a(b"upstream");
        raw.into_iter()
            .map(|(role, mut block)| {
                let breakpoint =
                    block.as_object_mut().unwrap().remove("cache_control").map(|c| Ttl::of_cache_control(&c));
                let text = format!("{role}{block}");
                key = fnv1a_from(key, text.as_bytes());
                Block { key, tokens: (text.len() / 4) as f64, breakpoint }
            })
            .collect()
    }

    /// The usage of one request (100 tokens of answer).
    fn bill(&mut self, body: &str, now_ms: i64) -> GatewayUsage {
        let b = self.cache.bill(&Self::blocks(body), now_ms);
        GatewayUsage {
            input: b.uncached as u64,
            output: 100,
            cache_read: b.read as u64,
            cache_write: (b.write_5m + b.write_1h) as u64,
            cache_write_1h: b.write_1h as u64,
        }
    }
}

const SONNET: &str = "claude-sonnet-4-5-20250929";

fn cost(usage: &GatewayUsage) -> f64 {
    model_prices(SONNET).unwrap().cost(&usage.billed(), usage.output as f64)
}

/// What a session of `requests` cost sent directly, through a gateway (under `policy`, with
/// `window`), and what the gateway says it saved.
struct Run {
    direct: f64,
    through: f64,
    stats: SessionStats,
}

fn run_money(requests: &[(String, String)], policy: GatewayPolicy, window: usize) -> Run {
    let windows: BTreeMap<String, usize> = [("claude-".to_owned(), window)].into_iter().collect();
    let mut gw = Gateway::new(GatewayConfig { windows, policy, ..GatewayConfig::default() }).unwrap();
    let (mut direct, mut through) = (Upstream::new(), Upstream::new());
    let (mut direct_cost, mut through_cost) = (0.0, 0.0);
    let mut session = String::new();
    for (i, (body, _)) in requests.iter().enumerate() {
        let now = i as i64 * 20_000;
        direct_cost += cost(&direct.bill(body, now));
        let Decision::Forward { session: s, body: sent, bill, .. } =
            gw.request_at("/v1/messages", None, body.as_bytes(), now)
        else {
            panic!("not forwarded")
        };
        let usage = through.bill(std::str::from_utf8(&sent).unwrap(), now);
        through_cost += cost(&usage);
        gw.usage(&s, Some(bill), usage);
        session = s;
    }
    Run { direct: direct_cost, through: through_cost, stats: gw.stats().sessions[&session].clone() }
}

/// The breakpoint Claude Code puts on a request's last message.
const MARK: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// Claude Code's requests with `SONNET` as the model, each with a breakpoint on its last
/// message's last block (which moves on with the next request), as Claude Code sends them.
fn sonnet_requests(rounds: usize) -> Vec<(String, String)> {
    let turns = super::claude_turns(rounds);
    (1..=rounds)
        .map(|r| {
            let mut these = turns[..1 + 2 * r].to_vec();
            let last = these.last_mut().unwrap();
            last.insert_str(last.len() - 3, MARK);
            let body = super::claude_body(&these).replace("claude-sonnet-4-5-20250929", SONNET);
            (body, these[2 * r - 1..].join(","))
        })
        .collect()
}

#[test]
fn a_condensation_followed_by_few_requests_is_booked_as_the_loss_it_is() {
    // 80% of 40,000 is crossed at request 19; the session ends three requests later.
    let requests = sonnet_requests(22);
    let run = run_money(&requests, GatewayPolicy::Threshold, 40_000);
    assert_eq!(run.stats.condensations, 1);
    let real = run.direct - run.through;
    assert!(real < 0.0, "condensing cost more than it saved: {real}");
    assert!(
        (run.stats.cost_saved_usd - real).abs() <= real.abs() * 0.01,
        "{} vs {real}",
        run.stats.cost_saved_usd
    );
    assert!(run.stats.payback_requests.is_some_and(|n| n > 3), "{:?}", run.stats.payback_requests);
    assert!(run.stats.saved_last_usd > 0.0, "each request after it saves");
}

#[test]
fn a_long_session_after_its_condensation_is_booked_as_the_saving_it_is() {
    let requests = sonnet_requests(60);
    let run = run_money(&requests, GatewayPolicy::Threshold, 40_000);
    assert!(run.stats.condensations >= 1);
    let real = run.direct - run.through;
    assert!(real > 0.0, "{real}");
    assert!(
        (run.stats.cost_saved_usd - real).abs() <= real.abs() * 0.01,
        "{} vs {real}",
        run.stats.cost_saved_usd
    );
    assert_eq!(run.stats.payback_requests, None);
}

#[test]
fn the_books_of_a_session_never_condensed_show_nothing_saved() {
    let run = run_money(&sonnet_requests(12), GatewayPolicy::Threshold, 200_000);
    assert_eq!(run.direct, run.through);
    assert_eq!(run.stats.cost_saved_usd, 0.0);
    assert!((run.stats.cost_usd - run.through).abs() < 1e-9, "the bill shown is the upstream's usage priced");
}

#[test]
fn the_cache_aware_policy_condenses_before_the_threshold_when_it_pays_and_bills_less() {
    let requests = sonnet_requests(60);
    let threshold = run_money(&requests, GatewayPolicy::Threshold, 200_000);
    let aware = run_money(&requests, GatewayPolicy::CacheAware, 200_000);
    assert_eq!(threshold.stats.condensations, 0, "60 rounds stay under 80% of 200k");
    assert!(aware.stats.condensations >= 1);
    let note = &aware.stats.condensation_notes[0];
    assert_eq!(note.reason, CondenseReason::Cache);
    let estimate = note.estimate.expect("the policy's figures");
    assert!(estimate.condense && estimate.saving >= estimate.cost_now, "{estimate:?}");
    assert!(estimate.describe().starts_with("costs $"), "{}", estimate.describe());
    assert!(aware.through < threshold.through, "{} vs {}", aware.through, threshold.through);
    let real = aware.direct - aware.through;
    assert!(
        (aware.stats.cost_saved_usd - real).abs() <= real.abs() * 0.01,
        "{} vs {real}",
        aware.stats.cost_saved_usd
    );
}

#[test]
fn a_young_session_and_a_model_without_a_price_are_not_condensed_early() {
    let young = run_money(&sonnet_requests(8), GatewayPolicy::CacheAware, 200_000);
    assert_eq!(young.stats.condensations, 0);
    let windows: BTreeMap<String, usize> = [("my-".to_owned(), 200_000)].into_iter().collect();
    let mut gw = Gateway::new(GatewayConfig { windows, ..GatewayConfig::default() }).unwrap();
    for (body, _) in &sonnet_requests(60) {
        gw.request("/v1/messages", None, body.replace(SONNET, "my-local-model").as_bytes());
    }
    let totals = gw.stats().totals;
    assert_eq!(totals.condensations, 0, "no price: nothing is known to pay");
}

#[test]
fn usage_is_priced_by_the_exact_model_and_a_one_hour_write_at_twice_the_input() {
    let mut gw = Gateway::new(GatewayConfig::default()).unwrap();
    let body = super::claude_requests(1)[0].0.replace("claude-sonnet-4-5-20250929", "claude-opus-4-6");
    let Decision::Forward { session, bill, .. } = gw.request("/v1/messages", None, body.as_bytes()) else {
        panic!()
    };
    let usage = GatewayUsage {
        input: 1_000,
        output: 2_000,
        cache_read: 10_000,
        cache_write: 5_000,
        cache_write_1h: 4_000,
    };
    gw.usage(&session, Some(bill), usage);
    // Opus 4.6: $5 in, $25 out, 5-minute writes $6.25, 1-hour writes $10, hits $0.50.
    let expected = (1_000.0 * 5.0 + 2_000.0 * 25.0 + 1_000.0 * 6.25 + 4_000.0 * 10.0 + 10_000.0 * 0.5) / 1e6;
    let stats = gw.stats();
    assert!(
        (stats.sessions[&session].cost_usd - expected).abs() < 1e-12,
        "{}",
        stats.sessions[&session].cost_usd
    );
    // A model whose price is unknown costs nothing it does not know: counted, flagged.
    let body = super::claude_requests(1)[0].0.replace("claude-sonnet-4-5-20250929", "claude-opus-4-9");
    let Decision::Forward { session, bill, .. } = gw.request("/v1/messages", Some("other"), body.as_bytes())
    else {
        panic!()
    };
    gw.usage(&session, Some(bill), usage);
    let s = &gw.stats().sessions[&session];
    assert_eq!((s.cost_usd, s.unpriced_requests, s.usage.cache_write_1h), (0.0, 1, 4_000));
}

#[test]
fn the_late_answer_of_a_forgotten_session_is_priced_with_its_model() {
    let limits = Limits { max_sessions: 1, ..Limits::default() };
    let mut gw = Gateway::new(GatewayConfig { limits, ..GatewayConfig::default() }).unwrap();
    let body = super::claude_requests(1)[0].0.clone();
    let Decision::Forward { session: first, bill, .. } =
        gw.request("/v1/messages", Some("a"), body.as_bytes())
    else {
        panic!()
    };
    gw.request("/v1/messages", Some("b"), body.as_bytes());
    assert!(!gw.stats().sessions.contains_key(&first), "forgotten");
    let usage = GatewayUsage { input: 100_000, ..GatewayUsage::default() };
    gw.usage(&first, Some(bill), usage);
    assert!((gw.stats().totals.cost_usd - 0.3).abs() < 1e-12, "Sonnet 4.5's input price");
    gw.usage(&first, None, usage);
    assert!((gw.stats().totals.cost_usd - 0.6).abs() < 1e-12, "known without its bill too");
}

#[test]
fn a_summary_waits_for_a_free_moment_under_the_cache_aware_policy() {
    let windows: BTreeMap<String, usize> = [("claude-".to_owned(), 30_000)].into_iter().collect();
    let config = GatewayConfig { windows, provider: "native".into(), ..GatewayConfig::default() };
    let mut gw = Gateway::new(config).unwrap();
    let requests = sonnet_requests(40);
    let mut upstream = Upstream::new();
    let mut at = None;
    let mut i = 0;
    while at.is_none() {
        let now = i as i64 * 20_000;
        let Decision::Forward { session, body, bill, condensed_now, .. } =
            gw.request_at("/v1/messages", None, requests[i].0.as_bytes(), now)
        else {
            panic!()
        };
        gw.usage(&session, Some(bill), upstream.bill(std::str::from_utf8(&body).unwrap(), now));
        if condensed_now {
            at = Some(i);
        }
        i += 1;
    }
    let job = gw.take_jobs().pop().expect("a summary job");
    assert!(!gw.summary_done(job.id, super::written(&job, "They read modules one by one.")), "it waits");
    let note = gw.stats().totals.summary_note.unwrap();
    assert!(note.contains("next condensation"), "{note}");
    // The next request, a few seconds later, carries the ledger still: the cache is warm.
    let now = i as i64 * 20_000;
    let Decision::Forward { body, condensed_now, .. } =
        gw.request_at("/v1/messages", None, requests[i].0.as_bytes(), now)
    else {
        panic!()
    };
    assert!(!condensed_now && !String::from_utf8(body).unwrap().contains("They read modules"));
    // Ten minutes later the cache has gone cold: the summary goes in.
    let later = now + 10 * 60_000;
    let Decision::Forward { body, condensed_now, .. } =
        gw.request_at("/v1/messages", None, requests[i + 1].0.as_bytes(), later)
    else {
        panic!()
    };
    assert!(condensed_now && String::from_utf8(body).unwrap().contains("They read modules"));
    let totals = gw.stats().totals;
    assert_eq!(totals.summaries, 1);
    assert!(totals.summary_note.unwrap().contains("gone cold"));
}

#[test]
fn billed_tokens_add_up() {
    let b = Billed { read: 1.0, write_5m: 2.0, write_1h: 3.0, uncached: 4.0 };
    assert_eq!(b.total(), 10.0);
}
