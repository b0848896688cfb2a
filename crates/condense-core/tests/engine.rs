//! The template, the registry and the manager, driven through the public API with test providers
//! that misbehave on purpose.

mod common;

use std::cell::Cell;

use common::{StepClock, block_on, counter, text};
use condense_core::provider::{CondensationContext, Condensed, Needs, ProviderMeta, TemplateToken};
use condense_core::{
    CondensationManager, CondensationOptions, CondensationProvider, CondenseError, Conversation, Message,
    ProviderConfig, ProviderConfigUpdate, ProviderRegistry, Role, Services, run_provider,
};

/// What the test provider's `condense_internal` does.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Hides the first message (a valid condensation).
    HideFirst,
    /// Returns an error.
    Fail,
    /// Drops a message outright.
    Lose,
    /// Edits a message in place.
    EditInPlace,
    /// Adds a long message.
    Grow,
}

struct TestProvider {
    behaviour: Behaviour,
    reject: bool,
    ran: Cell<bool>,
}

impl TestProvider {
    fn new(behaviour: Behaviour) -> Self {
        TestProvider { behaviour, reject: false, ran: Cell::new(false) }
    }
}

/// What lists show of the provider, and what it needs.
const META: ProviderMeta =
    ProviderMeta { id: "test", name: "Test", description: "misbehaves on purpose", needs: Needs::Nothing };

#[async_trait::async_trait(?Send)]
impl CondensationProvider for TestProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }
    fn validate_config(&self, config: &serde_json::Value) -> Result<(), String> {
        match config.get("bad") {
            Some(_) => Err("`bad` is not allowed".into()),
            None => Ok(()),
        }
    }
    fn validate(&self, ctx: &CondensationContext<'_>, _: &CondensationOptions) -> Result<(), CondenseError> {
        if self.reject {
            return Err(CondenseError::InvalidInput(format!("{} messages is too few", ctx.messages.len())));
        }
        Ok(())
    }
    fn estimate_cost(&self, _: &CondensationContext<'_>, _: &CondensationOptions, _: Services<'_>) -> f64 {
        0.25
    }
    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        _: &CondensationOptions,
        _: Services<'_>,
        _: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        self.ran.set(true);
        let mut messages = ctx.messages.to_vec();
        match self.behaviour {
            Behaviour::HideFirst => messages[0].condense_parent = Some("c1".into()),
            Behaviour::Fail => return Err(CondenseError::NothingToCondense("on purpose".into())),
            Behaviour::Lose => {
                messages.remove(1);
            }
            Behaviour::EditInPlace => {
                messages[0].content = vec![condense_core::ContentBlock::text("changed")]
            }
            Behaviour::Grow => messages.push(text("extra", Role::User, &"many words ".repeat(200))),
        }
        let mut metrics = serde_json::Map::new();
        metrics.insert("custom".into(), 7.into());
        Ok(Condensed { messages, summary: None, cost: 0.5, metrics })
    }
}

fn conversation() -> Conversation {
    Conversation::new(vec![
        text("a", Role::User, "first question, fairly long so hiding it saves tokens"),
        text("b", Role::Assistant, "an answer"),
        text("c", Role::User, "another question"),
    ])
}

fn run(provider: &TestProvider) -> condense_core::CondensationResult {
    let c = conversation();
    let tokens = counter();
    let clock = StepClock::default();
    let services = Services::new(&tokens, &clock);
    // These tests are about the template's checks; the ledger (which would not fit in so small a
    // conversation) has its own tests in `properties.rs`.
    let options = CondensationOptions { config: serde_json::json!({"ledger": false}), ..Default::default() };
    block_on(run_provider(provider, &c.messages, None, &options, services))
}

#[test]
fn a_good_run_gets_metrics_from_the_template() {
    let result = run(&TestProvider::new(Behaviour::HideFirst));
    assert!(result.is_ok(), "{:?}", result.error);
    let metrics = result.metrics.unwrap();
    assert_eq!(metrics.provider_id, "test");
    // The step clock advances 5 ms per read; the template reads it once before and once after.
    assert_eq!(metrics.time_elapsed_ms, 5.0);
    let before = metrics.extra["tokens_before"].as_i64().unwrap();
    let after = metrics.extra["tokens_after"].as_i64().unwrap();
    assert_eq!(metrics.tokens_saved, Some(before - after));
    assert!(after < before);
    assert_eq!(metrics.extra["custom"], 7);
    assert_eq!(result.cost, 0.5);
    assert_eq!(result.new_context_tokens, Some(after as usize));
}

#[test]
fn a_rejected_input_never_reaches_the_hook() {
    let provider = TestProvider { reject: true, ..TestProvider::new(Behaviour::HideFirst) };
    let result = run(&provider);
    assert!(!provider.ran.get());
    let error = result.error.unwrap();
    assert_eq!(error.kind, "invalid_input");
    assert_eq!(error.message, "invalid input: 3 messages is too few");
    assert_eq!(result.messages, conversation().messages);
}

#[test]
fn every_failure_hands_back_the_originals_with_a_typed_error() {
    for (behaviour, kind, says) in [
        (Behaviour::Fail, "nothing_to_condense", "on purpose"),
        (Behaviour::Lose, "internal", "message b was lost"),
        (Behaviour::EditInPlace, "internal", "changed in place"),
        (Behaviour::Grow, "context_grew", "context grew"),
    ] {
        let result = run(&TestProvider::new(behaviour));
        let error = result.error.expect("an error");
        assert_eq!(error.kind, kind);
        assert!(error.message.contains(says), "{}", error.message);
        assert_eq!(result.messages, conversation().messages);
        assert_eq!(result.cost, 0.0);
        assert_eq!(result.new_context_tokens, None);
        let metrics = result.metrics.unwrap();
        assert_eq!(metrics.tokens_saved, None);
        assert_eq!(metrics.provider_id, "test");
    }
}

#[test]
fn a_run_that_hides_a_pinned_message_is_rejected() {
    let mut c = conversation();
    c.messages[0].pinned = true;
    let tokens = counter();
    let clock = StepClock::default();
    let options = CondensationOptions { config: serde_json::json!({"ledger": false}), ..Default::default() };
    let provider = TestProvider::new(Behaviour::HideFirst);
    let result =
        block_on(run_provider(&provider, &c.messages, None, &options, Services::new(&tokens, &clock)));
    let error = result.error.expect("rejected");
    assert_eq!(error.kind, "internal");
    assert!(error.message.contains("message a is pinned"), "{}", error.message);
    assert_eq!(result.messages, c.messages);
}

#[test]
fn the_registry_lists_by_priority_and_filters_disabled() {
    let mut manager = CondensationManager::with_builtin_providers();
    let ids = |m: &CondensationManager, enabled| {
        m.list_providers(enabled).into_iter().map(|p| p.id).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&manager, false),
        ["native", "lossless", "truncation", "manual", "superseded", "mask", "smart"]
    );
    let registry = manager.registry_mut();
    registry.register(Box::new(TestProvider::new(Behaviour::HideFirst)), None).unwrap();
    assert_eq!(registry.get_config("test").unwrap().priority, 0);
    registry
        .update_config("test", ProviderConfigUpdate { priority: Some(90), ..Default::default() })
        .unwrap();
    registry
        .update_config("lossless", ProviderConfigUpdate { enabled: Some(false), ..Default::default() })
        .unwrap();
    assert_eq!(
        ids(&manager, false),
        ["native", "test", "lossless", "truncation", "manual", "superseded", "mask", "smart"]
    );
    assert_eq!(
        ids(&manager, true),
        ["native", "test", "truncation", "manual", "superseded", "mask", "smart"]
    );
    assert!(manager.registry_mut().unregister("test"));
    assert!(!manager.registry_mut().unregister("test"));
    assert!(manager.registry().get("test").is_none());
    manager.registry_mut().clear();
    assert!(manager.list_providers(false).is_empty());
}

#[test]
fn invalid_configurations_change_nothing() {
    let mut registry = ProviderRegistry::new();
    let bad = ProviderConfig { enabled: true, priority: 1, config: serde_json::json!({"bad": 1}) };
    let err = registry.register(Box::new(TestProvider::new(Behaviour::HideFirst)), Some(bad)).unwrap_err();
    assert_eq!(err.kind(), "invalid_config");
    assert!(registry.get("test").is_none());

    registry.register(Box::new(TestProvider::new(Behaviour::HideFirst)), None).unwrap();
    let update = ProviderConfigUpdate {
        enabled: Some(false),
        config: Some(serde_json::json!({"bad": true})),
        ..Default::default()
    };
    let err = registry.update_config("test", update).unwrap_err();
    assert_eq!(err.to_string(), "invalid configuration for provider 'test': `bad` is not allowed");
    assert!(registry.get_config("test").unwrap().enabled, "a rejected update applies nothing");
    let err = registry.update_config("nope", ProviderConfigUpdate::default()).unwrap_err();
    assert_eq!(err.to_string(), "provider 'nope' not found; known providers: test");
}

#[test]
fn unknown_and_disabled_providers_are_typed_errors() {
    let mut manager = CondensationManager::with_builtin_providers();
    let tokens = counter();
    let clock = StepClock::default();
    let services = Services::new(&tokens, &clock);
    let c = conversation();
    let err =
        block_on(manager.condense(&c, Some("magic"), CondensationOptions::default(), services)).unwrap_err();
    assert_eq!(
        err,
        CondenseError::ProviderNotFound {
            id: "magic".into(),
            known: "lossless, manual, mask, native, smart, superseded, truncation".into()
        }
    );
    manager
        .registry_mut()
        .update_config("truncation", ProviderConfigUpdate { enabled: Some(false), ..Default::default() })
        .unwrap();
    let err = block_on(manager.condense(&c, Some("truncation"), CondensationOptions::default(), services))
        .unwrap_err();
    assert_eq!(err.kind(), "provider_disabled");
    assert_eq!(manager.default_provider(), "smart");
    assert_eq!(manager.set_default_provider("magic").unwrap_err().kind(), "provider_not_found");
}

#[test]
fn separate_engines_do_not_share_registries() {
    let mut a = CondensationManager::with_builtin_providers();
    let b = CondensationManager::with_builtin_providers();
    a.registry_mut().unregister("lossless");
    assert_eq!(a.list_providers(false).len(), 6);
    assert_eq!(b.list_providers(false).len(), 7);
}

#[test]
fn the_counter_recounts_only_new_messages() {
    let tokens = counter();
    assert!(!tokens.is_loaded(), "constructing a counter loads nothing");
    let mut messages: Vec<Message> =
        (0..20).map(|i| text(&format!("m{i}"), Role::User, &format!("message number {i}"))).collect();
    let view: Vec<&Message> = messages.iter().collect();
    let first = condense_core::TokenCounter::count_request(&tokens, None, &view);
    assert_eq!(tokens.encoded_messages(), 20);
    messages.push(text("m20", Role::Assistant, "one more"));
    let view: Vec<&Message> = messages.iter().collect();
    let second = condense_core::TokenCounter::count_request(&tokens, None, &view);
    assert_eq!(tokens.encoded_messages(), 21);
    assert!(second > first);
}

#[test]
fn lossless_de_duplicates_only_what_its_configuration_names() {
    use condense_core::model::ContentBlock;
    let file = "fn main() { println!(\"hello\"); }\n".repeat(20);
    let log = "error: connection refused (os error 111)\n".repeat(10);
    let tool_use =
        |id: &str| ContentBlock::ToolUse { id: id.into(), name: "read".into(), input: serde_json::json!({}) };
    let messages = vec![
        text("u1", Role::User, "Read main.rs"),
        Message::new("a1", Role::Assistant, vec![tool_use("t1")]),
        Message::new("u2", Role::User, vec![ContentBlock::tool_result_text("t1", &file)]),
        text("a2", Role::Assistant, &log),
        Message::new("a3", Role::Assistant, vec![tool_use("t2")]),
        Message::new("u3", Role::User, vec![ContentBlock::tool_result_text("t2", &file)]),
        text("a4", Role::Assistant, &log),
    ];
    let c = Conversation { messages, ..Default::default() };
    let tokens = counter();
    let clock = StepClock::default();
    let services = Services::new(&tokens, &clock);
    let mut manager = CondensationManager::with_builtin_providers();
    let mut replaced = |config: serde_json::Value| {
        manager
            .registry_mut()
            .update_config("lossless", ProviderConfigUpdate { config: Some(config), ..Default::default() })
            .unwrap();
        let result =
            block_on(manager.condense(&c, Some("lossless"), CondensationOptions::default(), services))
                .unwrap();
        assert!(result.error.is_none(), "{:?}", result.error);
        let edited: Vec<String> =
            result.messages.iter().filter(|m| m.condense_parent.is_some()).map(|m| m.id.clone()).collect();
        edited
    };
    assert_eq!(replaced(serde_json::json!({})), ["u2", "a2"]);
    assert_eq!(replaced(serde_json::json!({"text_blocks": false})), ["u2"]);
    assert_eq!(replaced(serde_json::json!({"tool_results": false})), ["a2"]);
    let err = manager
        .registry_mut()
        .update_config(
            "lossless",
            ProviderConfigUpdate {
                config: Some(serde_json::json!({"tool_results": false, "text_blocks": false})),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("nothing to de-duplicate"), "{err}");
    let err = manager
        .registry_mut()
        .update_config(
            "lossless",
            ProviderConfigUpdate { config: Some(serde_json::json!({"min_bytes": -1})), ..Default::default() },
        )
        .unwrap_err();
    assert!(err.to_string().contains("min_bytes must be a whole number of 0 or more, got -1"), "{err}");
}

/// A timer that counts the turns a run gives its host.
#[derive(Default)]
struct TurnCounter(Cell<usize>);

#[async_trait::async_trait(?Send)]
impl condense_core::host::Timer for TurnCounter {
    async fn sleep(&self, _ms: u64, _abort: &condense_core::host::AbortSignal) {}

    async fn turn(&self) {
        self.0.set(self.0.get() + 1);
    }
}

/// With a timer, the template gives the host a turn after counting the input and after the
/// provider ran (issue 24: a large run in one slice stalled the extension host); without, none,
/// and the result is the same.
#[test]
fn the_template_gives_the_host_turns_between_its_steps() {
    let provider = TestProvider::new(Behaviour::HideFirst);
    let c = conversation();
    let tokens = counter();
    let options = CondensationOptions { config: serde_json::json!({"ledger": false}), ..Default::default() };
    let turns = TurnCounter::default();
    let clock = StepClock::default();
    let with = block_on(run_provider(
        &provider,
        &c.messages,
        None,
        &options,
        Services::new(&tokens, &clock).with_timer(&turns),
    ));
    assert_eq!(turns.0.get(), 2);
    let clock = StepClock::default();
    let without =
        block_on(run_provider(&provider, &c.messages, None, &options, Services::new(&tokens, &clock)));
    assert_eq!(with.messages, without.messages);
    assert_eq!(with.new_context_tokens, without.new_context_tokens);
}
