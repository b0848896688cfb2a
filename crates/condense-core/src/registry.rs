//! The provider registry (seed 003): providers keyed by id with their `{enabled, priority,
//! config}`. One registry per engine instance; no global.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::CondenseError;
use crate::provider::CondensationProvider;

/// A provider's registry entry settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProviderConfig {
    /// Whether the provider may run.
    pub enabled: bool,
    /// Higher runs first in lists and pickers.
    pub priority: i32,
    /// The provider's own configuration.
    pub config: serde_json::Value,
}

/// A partial update of a [`ProviderConfig`]; absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfigUpdate {
    /// New enabled state.
    pub enabled: Option<bool>,
    /// New priority.
    pub priority: Option<i32>,
    /// New provider configuration, replacing the old one whole.
    pub config: Option<serde_json::Value>,
}

/// What lists show of a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProviderInfo {
    /// Stable id.
    pub id: String,
    /// Name for people.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Whether it may run.
    pub enabled: bool,
    /// Sort key, higher first.
    pub priority: i32,
}

/// A configuration checked against the provider's form, then by the provider itself: a provider
/// that writes its own `validate_config` cannot skip the form (for the built-in ones, whose
/// `validate_config` is the form's, the fields are read twice; they are few).
fn check_provider_config(
    provider: &dyn CondensationProvider,
    config: &serde_json::Value,
) -> Result<(), String> {
    crate::config::check_config(&provider.config_schema(), config)?;
    provider.validate_config(config)
}

struct Entry {
    provider: Box<dyn CondensationProvider>,
    config: ProviderConfig,
}

/// The providers of one engine.
#[derive(Default)]
pub struct ProviderRegistry {
    entries: BTreeMap<String, Entry>,
}

impl std::fmt::Debug for ProviderRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries.keys()).finish()
    }
}

impl ProviderRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a provider, replacing one with the same id. Without a config it starts enabled, at
    /// priority 0, with the provider's default configuration.
    pub fn register(
        &mut self,
        provider: Box<dyn CondensationProvider>,
        config: Option<ProviderConfig>,
    ) -> Result<(), CondenseError> {
        let config = config.unwrap_or_else(|| ProviderConfig {
            enabled: true,
            priority: 0,
            config: provider.default_config(),
        });
        check_provider_config(provider.as_ref(), &config.config)
            .map_err(|message| CondenseError::InvalidConfig { id: provider.id().to_owned(), message })?;
        self.entries.insert(provider.id().to_owned(), Entry { provider, config });
        Ok(())
    }

    /// Removes a provider; whether it was there.
    pub fn unregister(&mut self, id: &str) -> bool {
        self.entries.remove(id).is_some()
    }

    /// The provider with this id.
    pub fn get(&self, id: &str) -> Option<&dyn CondensationProvider> {
        self.entries.get(id).map(|e| e.provider.as_ref())
    }

    /// The registered ids, comma-separated, for error messages.
    pub fn known_ids(&self) -> String {
        self.entries.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The providers, highest priority first (ties by id), only the enabled ones if asked.
    pub fn list(&self, enabled_only: bool) -> Vec<ProviderInfo> {
        let mut out: Vec<ProviderInfo> = self
            .entries
            .values()
            .filter(|e| !enabled_only || e.config.enabled)
            .map(|e| ProviderInfo {
                id: e.provider.id().to_owned(),
                name: e.provider.name().to_owned(),
                description: e.provider.description().to_owned(),
                enabled: e.config.enabled,
                priority: e.config.priority,
            })
            .collect();
        out.sort_by(|a, b| b.priority.cmp(&a.priority).then_with(|| a.id.cmp(&b.id)));
        out
    }

    /// Applies a partial update; an unknown id or an invalid configuration changes nothing.
    pub fn update_config(&mut self, id: &str, update: ProviderConfigUpdate) -> Result<(), CondenseError> {
        let known = self.known_ids();
        let entry = self
            .entries
            .get_mut(id)
            .ok_or_else(|| CondenseError::ProviderNotFound { id: id.to_owned(), known })?;
        if let Some(config) = &update.config {
            check_provider_config(entry.provider.as_ref(), config)
                .map_err(|message| CondenseError::InvalidConfig { id: id.to_owned(), message })?;
        }
        if let Some(enabled) = update.enabled {
            entry.config.enabled = enabled;
        }
        if let Some(priority) = update.priority {
            entry.config.priority = priority;
        }
        if let Some(config) = update.config {
            entry.config.config = config;
        }
        Ok(())
    }

    /// Whether a provider would accept this configuration: the message to show if not. Nothing
    /// changes.
    pub fn check_config(&self, id: &str, config: &serde_json::Value) -> Result<(), String> {
        let entry = self.entries.get(id).ok_or_else(|| {
            CondenseError::ProviderNotFound { id: id.to_owned(), known: self.known_ids() }.to_string()
        })?;
        check_provider_config(entry.provider.as_ref(), config)
    }

    /// A provider's settings.
    pub fn get_config(&self, id: &str) -> Option<&ProviderConfig> {
        self.entries.get(id).map(|e| &e.config)
    }

    /// Removes every provider.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}
