//! A recorded session replayed through the gateway (issue 40, `condense replay --through-gateway`):
//! each assistant answer is a request, shaped as Claude Code sends it — the client's system prompt
//! and tool definitions ([`ClientContext`]) with a breakpoint on the system prompt, the
//! conversation so far with one on its last message — and decided by the core's [`Gateway`]
//! under a policy; the request as forwarded (or, with no policy, as the client sent it) is billed
//! by an upstream modelled with Anthropic's cache rules ([`PromptCache`]), its usage handed back
//! to the gateway as a host would. The report is what the session cost each way, and what the
//! gateway's own books said it saved, so the two can be checked against each other.
//!
//! The upstream counts tokens with the core's counter, block by block; everything is
//! deterministic. The gateway condenses with `smart` (no model), as it does by default.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::decide::{Decision, Gateway, GatewayConfig};
use super::stats::{GatewayPolicy, GatewayUsage};
use crate::agent::CondenseReason;
use crate::agent::replay::ClientContext;
use crate::billing::{Billed, Block, CacheRules, ModelPrices, PromptCache, Ttl, model_prices};
use crate::formats::to_anthropic;
use crate::model::hash::{fnv1a, fnv1a_from};
use crate::model::{Conversation, Role};
use crate::tokens::TokenCounter;

/// The time between two requests of a session whose messages carry no time.
const UNTIMED_TURN_MS: i64 = 30_000;

/// What to replay.
#[derive(Debug, Clone)]
pub struct GatewayReplay<'a> {
    /// The recorded session.
    pub session: &'a Conversation,
    /// The client's system prompt and tools.
    pub context: Option<&'a ClientContext>,
    /// The model asked for: its published prices bill the session.
    pub model: &'a str,
    /// Its window, and the share of it the gateway condenses at.
    pub window: usize,
    pub threshold: f64,
}

/// What one replay billed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayReplayReport {
    /// `none` (every request as the client sent it), `threshold` or `cache-aware`.
    pub policy: String,
    /// US dollars of input billed (uncached, written, read).
    pub input_cost: f64,
    /// Tokens read from the cache, written to it, neither.
    pub cache_read_tokens: usize,
    pub cache_write_tokens: usize,
    pub uncached_tokens: usize,
    /// Requests sent.
    pub requests: usize,
    /// The largest request sent, in the upstream's tokens.
    pub peak_tokens: usize,
    /// Condensations made: at the threshold (forced), and earlier because they paid.
    pub forced: usize,
    pub early: usize,
    /// What the gateway's books said condensing saved (`/stats`' `cost_saved_usd`).
    pub books_saved_usd: f64,
}

/// The upstream: Anthropic's cache rules over the blocks of a Messages body, a block's tokens the
/// core's count of its JSON.
struct Upstream<'c> {
    cache: PromptCache,
    counter: &'c dyn TokenCounter,
}

impl Upstream<'_> {
    fn blocks(&self, body: &str) -> Vec<Block> {
        let v: Value = serde_json::from_str(body).expect("the replay writes JSON");
        let mut raw: Vec<(&str, Value)> = Vec::new();
        for tool in v["tools"].as_array().into_iter().flatten() {
            raw.push(("tools", tool.clone()));
        }
        for b in v["system"].as_array().into_iter().flatten() {
            raw.push(("system", b.clone()));
        }
        for m in v["messages"].as_array().into_iter().flatten() {
            let role = if m["role"] == "assistant" { "assistant" } else { "user" };
            for b in m["content"].as_array().into_iter().flatten() {
                raw.push((role, b.clone()));
            }
        }
        let mut key = fnv1a(b"upstream");
        raw.into_iter()
            .map(|(role, mut block)| {
                let control = block.as_object_mut().and_then(|o| o.remove("cache_control"));
                let text = block.to_string();
                key = fnv1a_from(fnv1a_from(key, role.as_bytes()), text.as_bytes());
                let tokens = self.counter.count_text(&text) as f64;
                Block { key, tokens, breakpoint: control.map(|c| Ttl::of_cache_control(&c)) }
            })
            .collect()
    }

    fn bill(&mut self, body: &str, now_ms: i64) -> Billed {
        let blocks = self.blocks(body);
        self.cache.bill(&blocks, now_ms)
    }
}

/// The requests of a session as Claude Code sends them, with their times.
fn requests(r: &GatewayReplay<'_>) -> Vec<(String, i64)> {
    let system = match r.context {
        Some(c) => c.system_with(r.session.system.as_deref()),
        None => r.session.system.clone().unwrap_or_default(),
    };
    let tools: Vec<Value> = r.context.map(|c| c.tools.clone()).unwrap_or_default();
    let visible: Vec<_> = r.session.messages.iter().filter(|m| m.is_visible()).cloned().collect();
    let mut out = Vec::new();
    let mut now = 0i64;
    for (i, message) in visible.iter().enumerate() {
        now = if message.ts > now { message.ts } else { now + UNTIMED_TURN_MS };
        if message.role != Role::Assistant || i == 0 {
            continue;
        }
        let head = Conversation::new(visible[..i].to_vec());
        let mut messages = to_anthropic(&head)["messages"].clone();
        let Some(list) = messages.as_array_mut() else { continue };
        if list.is_empty() || list[0]["role"] != "user" {
            continue;
        }
        // Claude Code's moving breakpoint: on the last block of the last message.
        if let Some(last) = list.last_mut() {
            if let Some(text) = last["content"].as_str().map(str::to_owned) {
                last["content"] = json!([{"type": "text", "text": text}]);
            }
            if let Some(block) = last["content"].as_array_mut().and_then(|b| b.last_mut()) {
                block["cache_control"] = json!({"type": "ephemeral"});
            }
        }
        let mut body = json!({
            "model": r.model,
            "max_tokens": 32000,
            "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools.clone());
        }
        out.push((body.to_string(), now));
    }
    out
}

fn prices_of(model: &str) -> Result<ModelPrices, String> {
    model_prices(model)
        .ok_or_else(|| format!("the price of {model} is unknown: the replay bills by published prices"))
}

/// Replays `r` under `policy` (`None`: every request as the client sent it).
pub fn replay_through_gateway(
    r: &GatewayReplay<'_>,
    policy: Option<GatewayPolicy>,
    counter: &dyn TokenCounter,
) -> Result<GatewayReplayReport, String> {
    let prices = prices_of(r.model)?;
    let rules = match prices.cache {
        rules @ CacheRules::Breakpoints { .. } => rules,
        CacheRules::Automatic { .. } => CacheRules::Breakpoints { min_tokens: 1024 },
    };
    let mut upstream = Upstream { cache: PromptCache::new(rules), counter };
    let mut gateway = match policy {
        Some(policy) => {
            let windows: BTreeMap<String, usize> = [(r.model.to_owned(), r.window)].into_iter().collect();
            let config =
                GatewayConfig { windows, policy, threshold: r.threshold, ..GatewayConfig::default() };
            Some(Gateway::new(config)?)
        }
        None => None,
    };
    let mut report = GatewayReplayReport {
        policy: policy.map_or("none", GatewayPolicy::as_str).to_owned(),
        input_cost: 0.0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        uncached_tokens: 0,
        requests: 0,
        peak_tokens: 0,
        forced: 0,
        early: 0,
        books_saved_usd: 0.0,
    };
    let mut total = Billed::default();
    for (body, now) in requests(r) {
        let (sent, handed) = match gateway.as_mut() {
            None => (body, None),
            Some(gw) => match gw.request_at("/v1/messages", None, body.as_bytes(), now) {
                Decision::Forward { session, body: sent, bill, .. } => {
                    (String::from_utf8(sent).expect("the gateway writes UTF-8"), Some((session, bill)))
                }
                Decision::Untouched { reason, .. } => {
                    return Err(format!("the gateway did not read a request: {reason}"));
                }
            },
        };
        let billed = upstream.bill(&sent, now);
        report.input_cost += prices.cost(&billed, 0.0);
        report.peak_tokens = report.peak_tokens.max(billed.total() as usize);
        report.requests += 1;
        total.add(&billed);
        if let (Some(gw), Some((session, bill))) = (gateway.as_mut(), handed) {
            let usage = GatewayUsage {
                input: billed.uncached as u64,
                output: 0,
                cache_read: billed.read as u64,
                cache_write: (billed.write_5m + billed.write_1h) as u64,
                cache_write_1h: billed.write_1h as u64,
            };
            gw.usage(&session, Some(bill), usage);
        }
    }
    report.cache_read_tokens = total.read as usize;
    report.cache_write_tokens = (total.write_5m + total.write_1h) as usize;
    report.uncached_tokens = total.uncached as usize;
    if let Some(gw) = gateway {
        let stats = gw.stats();
        report.books_saved_usd = stats.totals.cost_saved_usd;
        for s in stats.sessions.values() {
            for note in &s.condensation_notes {
                match note.reason {
                    CondenseReason::Cache => report.early += 1,
                    _ => report.forced += 1,
                }
            }
        }
    }
    Ok(report)
}
