//! The template that runs every provider: [`run_provider`] validates, times and calls the
//! provider's hook, then builds the output list from what the hook returned (kept input messages
//! moved, not copied) and counts it with one cached counter. The checks it ends with are in
//! `checks`.

use crate::error::CondenseError;
use crate::model::{ContentBlock, Message};
use crate::tokens::{PositionCounter, TokenCounter};

use super::checks::{check_result, keep_what_matters, ledger_on, ledger_reserve};
use super::input::RunInput;
use super::{
    CondensationContext, CondensationOptions, CondensationProvider, CondensationResult, Condensed,
    METRIC_NOTE, Metrics, Services, SpendMeter, TemplateToken,
};

/// How many more runs a provider without an LLM gets to land its context, ledger included,
/// within the target.
const ROOM_TRIES: usize = 4;
/// A run within its target lands at this share of it or more, in percent, when it can.
const LAND_PERCENT: usize = 80;

/// Runs a provider the one way providers run.
pub async fn run_provider(
    provider: &dyn CondensationProvider,
    messages: &[Message],
    system: Option<&str>,
    options: &CondensationOptions,
    services: Services<'_>,
) -> CondensationResult {
    let input = RunInput::new(messages, system, services.tokens);
    let before = input.tokens();
    services.pause().await;
    let ctx = CondensationContext { messages, system, prev_context_tokens: before };
    // Every run has its own meter: what the provider spent before failing is the failure's cost.
    let meter = SpendMeter::default();
    // The input messages' counts are known now; a provider asking for one gets it by position.
    let counter = PositionCounter::new(services.tokens, input.messages, &input);
    let services = Services { meter: Some(&meter), tokens: &counter, ..services };
    let failed = |error: CondenseError, elapsed: f64| CondensationResult {
        messages: messages.to_vec(),
        summary: None,
        cost: meter.total(),
        new_context_tokens: None,
        error: Some(error.to_info()),
        metrics: Some(Metrics {
            provider_id: provider.id().to_owned(),
            time_elapsed_ms: elapsed,
            tokens_saved: None,
            extra: Default::default(),
        }),
    };
    if let Err(e) = provider.validate(&ctx, options) {
        return failed(e, 0.0);
    }
    // A target asked for below the floor is refused up front; an automatic run, or one with the
    // provider's own target (a share of the context), works to the floor.
    let floor = match options.floor_checked {
        true => Ok(None),
        false => provider.target_and_floor(&ctx, options, services.tokens),
    };
    let floor = match floor {
        Ok(floor) => floor,
        Err(e) => return failed(e, 0.0),
    };
    // (A floor at or above the context means nothing can go: the provider says why.)
    let floor = floor.filter(|f| f.floor < ctx.prev_context_tokens);
    let raised;
    let options = match floor {
        Some(f) if f.target < f.floor && !options.is_automatic && options.target_tokens.is_some() => {
            let e =
                CondenseError::TargetBelowFloor { target: f.target, floor: f.floor, keep_last: f.keep_last };
            return failed(e, 0.0);
        }
        Some(f) if f.target < f.floor => {
            raised = CondensationOptions { target_tokens: Some(f.floor), ..options.clone() };
            &raised
        }
        _ => options,
    };
    // The ledger's room comes out of the target, so the context with it still lands within.
    let keep = ledger_on(options);
    let reserved = if keep { ledger_reserve(&ctx, options, services.tokens) } else { 0 };
    let lowered = CondensationOptions {
        target_tokens: options.target_tokens.map(|t| t.saturating_sub(reserved)),
        ceiling_tokens: options.ceiling_tokens.map(|t| t.saturating_sub(reserved)),
        ..options.clone()
    };
    let start = services.clock.now_ms();
    let outcome = attempt(provider, &input, &ctx, &lowered, options, services, keep).await;
    services.pause().await;
    let (mut condensed, mut after) = match outcome {
        Ok((c, origin)) => {
            let tokens = input.tokens_of(&c.messages, &origin, services.tokens);
            (c, tokens)
        }
        Err(e) => return failed(e, (services.clock.now_ms() - start).max(0.0)),
    };
    // A provider that calls no LLM (no summary, no cost) and whose ledger took another room than
    // the one kept for it runs again with the room the ledger took: with part of the room unused,
    // the context lands nearer the target; over the target because the ledger took more (it
    // grows with what is hidden), it runs with its target lowered by the overshoot, up to
    // [`ROOM_TRIES`] times. The best run is kept: within the target and the largest, else the
    // smallest.
    let llm_free = condensed.summary.is_none() && condensed.cost == 0.0;
    if let (Some(target), true) = (options.target_tokens, reserved > 0 && llm_free) {
        // Rooms known to land over the target (`over`) and within it (`within`): the next room
        // tried lies between them, or past the one known by the overshoot, or at the size the
        // ledger took.
        let ledger_of =
            |c: &Condensed| c.metrics.get("ledger").and_then(|l| l["tokens"].as_u64()).unwrap_or(0) as usize;
        let (mut over, mut within) =
            if after > target { (Some(reserved), None) } else { (None, Some(reserved)) };
        let (mut room, mut last, mut used) = (reserved, after, ledger_of(&condensed));
        for _ in 0..ROOM_TRIES {
            let whole = condensed.metrics.get("ledger").is_none_or(|l| l["squeezed"] != true);
            if after <= target && after >= target * LAND_PERCENT / 100 && whole {
                break;
            }
            let next = match (over, within) {
                (Some(o), Some(w)) => (o + w) / 2,
                (Some(o), None) => o + last.saturating_sub(target).max(1),
                (None, _) if used < room => used,
                (None, _) => room / 2,
            };
            if next == room || next >= target {
                break;
            }
            room = next;
            let again = CondensationOptions { target_tokens: Some(target - room), ..options.clone() };
            let Ok((c, origin)) = attempt(provider, &input, &ctx, &again, options, services, keep).await
            else {
                break;
            };
            let second = input.tokens_of(&c.messages, &origin, services.tokens);
            last = second;
            used = ledger_of(&c);
            if second > target {
                over = Some(room);
            } else {
                within = Some(room);
            }
            // Within the target, a run that lands in its band (80–100% of it) is better; then one
            // whose working state got its share rather than one that kept more of the rest by
            // squeezing it; then the one nearer the target.
            let squeezed = |c: &Condensed| c.metrics.get("ledger").is_some_and(|l| l["squeezed"] == true);
            let band = |t: usize| t >= target * LAND_PERCENT / 100;
            let better = match (second <= target, after <= target) {
                (true, true) => {
                    (band(second), !squeezed(&c), second) > (band(after), !squeezed(&condensed), after)
                }
                (true, false) => true,
                (false, true) => false,
                (false, false) => second < after,
            };
            if better {
                condensed = c;
                after = second;
            }
        }
    }
    let elapsed = (services.clock.now_ms() - start).max(0.0);
    if after > before {
        return failed(CondenseError::ContextGrew { before, after }, elapsed);
    }
    let tokens_saved = i64::try_from(before).unwrap_or(i64::MAX) - i64::try_from(after).unwrap_or(0);
    let mut extra = condensed.metrics;
    // A run of passes reports what each saved; the ledger the template added is a row of its
    // own, so the rows add up to the run's saving.
    if let Some(serde_json::Value::Array(rows)) = extra.get_mut(super::METRIC_PASSES) {
        let counted: i64 = rows.iter().filter_map(|r| r["tokens_saved"].as_i64()).sum();
        if counted != tokens_saved {
            let row = super::PassMetric {
                pass: "ledger".into(),
                tokens_saved: tokens_saved - counted,
                time_ms: 0.0,
                cost: 0.0,
                skipped: None,
            };
            rows.push(serde_json::to_value(row).expect("a pass metric serializes"));
        }
    }
    // A provider that worked to the lowered target is judged against the caller's.
    if let (Some(target), true) = (options.target_tokens, reserved > 0) {
        if extra.contains_key("target_tokens") {
            extra.insert("target_tokens".into(), target.into());
            extra.insert("target_met".into(), (after <= target).into());
        }
        extra.insert("ledger_reserved_tokens".into(), reserved.into());
    }
    extra.insert("tokens_before".into(), before.into());
    extra.insert("tokens_after".into(), after.into());
    if let Some(f) = floor {
        extra.insert("floor_tokens".into(), f.floor.into());
    }
    // Over the target: never in silence. The run kept what must stay (the floor) and the ledger
    // of what it hid, and says so.
    if let Some(target) = options.target_tokens
        && after > target
    {
        let ledger = extra.get("ledger").and_then(|l| l["tokens"].as_u64()).unwrap_or(0);
        let what = match (floor, ledger) {
            // A provider without a floor condenses only some kinds of content (masking tool
            // results): it stopped when it had none left.
            (None, _) => format!("as {} condenses no further", provider.id()),
            (Some(f), 0) => format!(
                "for the floor of {} tokens (the system prompt, the first message's own words, the last {} messages, the pinned ones)",
                f.floor, f.keep_last
            ),
            (Some(f), l) => format!(
                "for the floor of {} tokens (the system prompt, the first message's own words, the last {} messages, the pinned ones) and the ledger of what it hid ({l} tokens)",
                f.floor, f.keep_last
            ),
        };
        extra.insert("target_met".into(), false.into());
        extra.insert(
            METRIC_NOTE.into(),
            format!("the target of {target} tokens was not met: {after} tokens are left, {what}").into(),
        );
    }
    CondensationResult {
        messages: condensed.messages,
        summary: condensed.summary,
        cost: condensed.cost,
        new_context_tokens: Some(after),
        error: None,
        metrics: Some(Metrics {
            provider_id: provider.id().to_owned(),
            time_elapsed_ms: elapsed,
            tokens_saved: Some(tokens_saved),
            extra,
        }),
    }
}

/// One run of a provider's hook with `run_options`, checked, with the ledger kept; with the
/// input position of each message of the result that is an input message (see `check_result`).
async fn attempt(
    provider: &dyn CondensationProvider,
    input: &RunInput<'_>,
    ctx: &CondensationContext<'_>,
    run_options: &CondensationOptions,
    options: &CondensationOptions,
    services: Services<'_>,
    keep: bool,
) -> Result<(Condensed, Vec<Option<usize>>), CondenseError> {
    let c = provider.condense_internal(ctx, run_options, services, TemplateToken(())).await?;
    let (c, origin) = check_result(ctx, c, input.pairs_valid, None)?;
    let (c, kept) = keep_what_matters(input, ctx, options, services.tokens, c, origin, keep);
    // The messages the last step moved over unchanged were compared above; the ones it made
    // (a ledger's host hidden, its copy) are compared now, with everything else checked again.
    check_result(ctx, c, input.pairs_valid, Some(&kept))
}

/// Tokens of `message` with `content` in place of its own, as the counter counts messages (its
/// cache included). The content is moved into a message with the other fields and handed back,
/// never copied.
pub(crate) fn count_with_content(
    tokens: &dyn TokenCounter,
    message: &Message,
    content: Vec<ContentBlock>,
) -> (usize, Vec<ContentBlock>) {
    let edited = Message {
        id: message.id.clone(),
        ts: message.ts,
        role: message.role,
        content,
        is_summary: message.is_summary,
        condense_id: message.condense_id.clone(),
        condense_parent: message.condense_parent.clone(),
        interrupted: message.interrupted.clone(),
        pinned: message.pinned,
    };
    (tokens.count_message(&edited), edited.content)
}
