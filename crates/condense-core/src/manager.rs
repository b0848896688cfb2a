//! The condensation manager (seed 003): picks the provider (asked for, or the default), refuses an
//! unknown or disabled one with a typed error, hands it the registry's configuration and runs it
//! through the template.

use crate::error::CondenseError;
use crate::model::Conversation;
use crate::provider::{
    CondensationOptions, CondensationProvider, CondensationResult, Services, run_provider,
};
use crate::providers::{
    LosslessProvider, ManualProvider, MaskProvider, NativeProvider, SmartProvider, SupersededProvider,
    TruncationProvider,
};
use crate::registry::{ProviderConfig, ProviderInfo, ProviderRegistry};
use crate::tokens::TokenCounter;

/// Orchestrates condensations for one engine.
#[derive(Debug)]
pub struct CondensationManager {
    registry: ProviderRegistry,
    default_provider: String,
}

impl CondensationManager {
    /// A manager over a registry, with a default provider id.
    pub fn new(registry: ProviderRegistry, default_provider: impl Into<String>) -> Self {
        CondensationManager { registry, default_provider: default_provider.into() }
    }

    /// A manager with the built-in providers registered, `lossless` the default.
    pub fn with_builtin_providers() -> Self {
        let mut registry = ProviderRegistry::new();
        let builtin: [(Box<dyn crate::provider::CondensationProvider>, i32); 7] = [
            (Box::new(NativeProvider), 100),
            (Box::new(LosslessProvider), 80),
            (Box::new(TruncationProvider), 70),
            (Box::new(ManualProvider), 60),
            (Box::new(SupersededProvider), 55),
            (Box::new(MaskProvider), 50),
            (Box::new(SmartProvider), 40),
        ];
        for (provider, priority) in builtin {
            let config = ProviderConfig { enabled: true, priority, config: provider.default_config() };
            registry.register(provider, Some(config)).expect("built-in defaults are valid");
        }
        Self::new(registry, crate::limits::DEFAULT_PROVIDER)
    }

    /// The registry.
    pub fn registry(&self) -> &ProviderRegistry {
        &self.registry
    }

    /// The registry, to change.
    pub fn registry_mut(&mut self) -> &mut ProviderRegistry {
        &mut self.registry
    }

    /// The default provider's id.
    pub fn default_provider(&self) -> &str {
        &self.default_provider
    }

    /// Sets the default provider; it must be registered.
    pub fn set_default_provider(&mut self, id: &str) -> Result<(), CondenseError> {
        self.registry.get(id).ok_or_else(|| self.not_found(id))?;
        self.default_provider = id.to_owned();
        Ok(())
    }

    /// The providers, highest priority first.
    pub fn list_providers(&self, enabled_only: bool) -> Vec<ProviderInfo> {
        self.registry.list(enabled_only)
    }

    fn not_found(&self, id: &str) -> CondenseError {
        CondenseError::ProviderNotFound { id: id.to_owned(), known: self.registry.known_ids() }
    }

    /// The provider asked for (or the default one), enabled, with the registry's configuration put
    /// into `options` unless the call brings its own.
    fn resolve(
        &self,
        provider_id: Option<&str>,
        options: &mut CondensationOptions,
    ) -> Result<&dyn CondensationProvider, CondenseError> {
        let id = provider_id.unwrap_or(&self.default_provider);
        let provider = self.registry.get(id).ok_or_else(|| self.not_found(id))?;
        let config = self.registry.get_config(id).ok_or_else(|| self.not_found(id))?;
        if !config.enabled {
            return Err(CondenseError::ProviderDisabled(id.to_owned()));
        }
        if options.config.is_null() {
            options.config = config.config.clone();
        }
        Ok(provider)
    }

    /// Condenses a conversation with the provider asked for, or the default one. An unknown or
    /// disabled provider is an `Err`; a failed condensation is an `Ok` result carrying its error
    /// and the original messages.
    pub async fn condense(
        &self,
        conversation: &Conversation,
        provider_id: Option<&str>,
        mut options: CondensationOptions,
        services: Services<'_>,
    ) -> Result<CondensationResult, CondenseError> {
        let provider = self.resolve(provider_id, &mut options)?;
        Ok(run_provider(provider, &conversation.messages, conversation.system.as_deref(), &options, services)
            .await)
    }

    /// Whether the provider asked for (or the default one) would accept the conversation: it is
    /// registered and enabled, and its `validate` passes (a summary needs a few messages, …).
    /// What a policy asks before it starts a run on its own.
    pub fn accepts(
        &self,
        conversation: &Conversation,
        provider_id: Option<&str>,
        tokens: &dyn TokenCounter,
    ) -> bool {
        let mut options = CondensationOptions::default();
        let Ok(provider) = self.resolve(provider_id, &mut options) else { return false };
        let ctx = crate::provider::CondensationContext {
            messages: &conversation.messages,
            system: conversation.system.as_deref(),
            prev_context_tokens: tokens
                .count_request(conversation.system.as_deref(), &conversation.api_view()),
        };
        provider.validate(&ctx, &options).is_ok()
    }

    /// What a run of the provider would cost, in US dollars, before running it (the provider's
    /// `estimate_cost`, with its configuration from the registry). The same errors as
    /// [`CondensationManager::condense`] for an unknown or disabled provider.
    pub fn estimate(
        &self,
        conversation: &Conversation,
        provider_id: Option<&str>,
        mut options: CondensationOptions,
        services: Services<'_>,
    ) -> Result<f64, CondenseError> {
        let provider = self.resolve(provider_id, &mut options)?;
        let view = conversation.api_view();
        let before = services.tokens.count_request(conversation.system.as_deref(), &view);
        let ctx = crate::provider::CondensationContext {
            messages: &conversation.messages,
            system: conversation.system.as_deref(),
            prev_context_tokens: before,
        };
        Ok(provider.estimate_cost(&ctx, &options, services))
    }
}
