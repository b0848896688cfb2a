//! What a settings panel needs from the core: the cards it renders from the registry (each
//! provider with its configuration and form, see [`crate::config`]), and the checks a setting must
//! pass before a host saves it. Pure: the host reads and writes its own settings store; this module only describes
//! and judges.

use serde::{Deserialize, Serialize};

use crate::config::ConfigField;
use crate::error::CondenseError;
use crate::limits::{AutoCondense, Limits};
use crate::llm::{LlmKind, LlmProfile};
use crate::manager::CondensationManager;
use crate::profile::{KeyNeed, ModelUse};
use crate::registry::ProviderConfigUpdate;
use crate::tools::ToolRegistry;

/// A card of the settings panel: one registered provider with its registry entry and form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProviderEntry {
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
    /// Its configuration, as the registry holds it.
    pub config: serde_json::Map<String, serde_json::Value>,
    /// The form of its configuration.
    pub schema: Vec<ConfigField>,
}

/// The cards of the settings panel, highest priority first.
pub fn provider_entries(manager: &CondensationManager) -> Vec<ProviderEntry> {
    let registry = manager.registry();
    registry
        .list(false)
        .into_iter()
        .filter_map(|info| {
            let provider = registry.get(&info.id)?;
            let config = registry.get_config(&info.id)?;
            Some(ProviderEntry {
                schema: provider.config_schema(),
                config: config.config.as_object().cloned().unwrap_or_default(),
                id: info.id,
                name: info.name,
                description: info.description,
                enabled: info.enabled,
                priority: info.priority,
            })
        })
        .collect()
}

/// What a host needs to read and check its settings without copies of the core's rules: the
/// limits and defaults, and each kind of LLM profile with its default base URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostMetadata {
    /// The threshold range, the defaults and the other numbers the core owns.
    pub limits: Limits,
    /// Every kind of LLM profile, in the order a settings panel lists them.
    pub kinds: Vec<KindMetadata>,
}

/// One kind of LLM profile, as a host shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KindMetadata {
    /// The kind, as settings spell it (`openai`, `openai-compatible`, …).
    pub kind: LlmKind,
    /// The base URL used when a profile names none; `None` when the profile must name one (or
    /// uses no API).
    pub default_base_url: Option<String>,
    /// The context window a new profile of the kind starts with, in tokens.
    pub default_context_window: usize,
    /// Whether a profile of the kind needs an API key.
    pub key: KeyNeed,
}

/// The core's limits and per-kind metadata, for hosts (see [`HostMetadata`]).
pub fn host_metadata() -> HostMetadata {
    HostMetadata {
        limits: Limits::current(),
        kinds: LlmKind::ALL
            .into_iter()
            .map(|kind| KindMetadata {
                kind,
                default_base_url: kind.default_base_url().map(str::to_owned),
                default_context_window: kind.default_context_window(),
                key: kind.key_need(),
            })
            .collect(),
    }
}

/// A setting a host is about to save.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "setting", content = "value", rename_all = "snake_case")]
pub enum SettingChange {
    /// The provider used when none is asked for.
    DefaultProvider(String),
    /// One provider's registry entry (its whole configuration when `config` is there).
    Provider {
        /// The provider's id.
        id: String,
        /// The change.
        update: ProviderConfigUpdate,
    },
    /// Automatic condensation.
    AutoCondense(AutoCondense),
    /// An LLM profile, new or edited.
    Profile(Box<LlmProfile>),
    /// An LLM profile chosen for a use: the chat profile (`chat`) or the condensing profile
    /// (`summarize`). A `cli` profile's tool must list the use among its capabilities.
    ProfileUse {
        /// The profile.
        profile: Box<LlmProfile>,
        /// What it is chosen for.
        used: ModelUse,
    },
}

/// Whether a setting may be saved, judged against the engine's registry and its CLI tools: `Err`
/// carries the message to show beside the field. Nothing is changed.
pub fn check_setting(
    manager: &CondensationManager,
    tools: &ToolRegistry,
    change: &SettingChange,
) -> Result<(), String> {
    let registry = manager.registry();
    let known = |id: &str| {
        registry.get(id).map(|_| ()).ok_or_else(|| {
            CondenseError::ProviderNotFound { id: id.to_owned(), known: registry.known_ids() }.to_string()
        })
    };
    match change {
        SettingChange::DefaultProvider(id) => known(id),
        SettingChange::Provider { id, update } => {
            known(id)?;
            if let Some(config) = &update.config {
                registry.check_config(id, config)?;
            }
            Ok(())
        }
        SettingChange::AutoCondense(auto) => auto.validate(),
        SettingChange::Profile(profile) => profile.validate().map_err(|e| e.message),
        SettingChange::ProfileUse { profile, used } => {
            profile.validate().map_err(|e| e.message)?;
            match (&profile.kind, &profile.tool) {
                (LlmKind::Cli, Some(tool)) => tools
                    .get(tool)
                    .and_then(|entry| entry.require(*used))
                    .map_err(|e| format!("profile '{}': {}", profile.id, e.message)),
                _ => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn manager() -> CondensationManager {
        CondensationManager::with_builtin_providers()
    }

    fn tools() -> ToolRegistry {
        ToolRegistry::shipped()
    }

    #[test]
    fn every_builtin_provider_describes_its_form() {
        let entries = provider_entries(&manager());
        let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["native", "lossless", "truncation", "manual", "superseded", "mask", "smart"]);
        for e in &entries {
            assert!(!e.schema.is_empty(), "{} has no form", e.id);
            // Every field the form shows reads back from the configuration (or is shared).
            for f in e.schema.iter().filter(|f| !f.shared) {
                let value = e.config.get(&f.key).cloned().unwrap_or(serde_json::Value::Null);
                f.check(&value).unwrap_or_else(|m| panic!("{}: default {m}", e.id));
            }
        }
        let native = &entries[0];
        let prompt = native.schema.iter().find(|f| f.key == "custom_prompt").unwrap();
        assert!(prompt.shared && prompt.multiline);
        assert!(prompt.default.as_str().unwrap().contains("summary"), "the default is the built-in prompt");
    }

    #[test]
    fn bad_settings_are_refused_with_a_message_for_the_field() {
        let m = manager();
        let refuse = |change: SettingChange| check_setting(&m, &tools(), &change).unwrap_err();
        let auto =
            |t| SettingChange::AutoCondense(AutoCondense { threshold_percent: t, ..AutoCondense::default() });
        assert!(refuse(auto(150)).contains("10 to 100"), "{}", refuse(auto(150)));
        assert!(check_setting(&m, &tools(), &auto(60)).is_ok());
        let provider = |id: &str, config| SettingChange::Provider {
            id: id.into(),
            update: ProviderConfigUpdate { config: Some(config), ..Default::default() },
        };
        let msg = refuse(provider("truncation", json!({"keep_last": -2, "target_percent": 50})));
        assert!(msg.contains("keep_last must be a whole number of 0 or more"), "{msg}");
        let msg = refuse(provider("truncation", json!({"keep_last": 2, "target_percent": 150})));
        assert!(msg.contains("target_percent"), "{msg}");
        assert!(
            check_setting(
                &m,
                &tools(),
                &provider("truncation", json!({"keep_last": 2, "target_percent": 40}))
            )
            .is_ok()
        );
        let msg = refuse(SettingChange::DefaultProvider("smart2".into()));
        assert!(msg.contains("smart2") && msg.contains("lossless"), "{msg}");
        let msg = refuse(provider("nope", json!({})));
        assert!(msg.contains("nope"), "{msg}");
        let mut p = LlmProfile::new("local", crate::llm::LlmKind::OpenaiCompatible, "llama3", 8192);
        p.base_url = Some("localhost:11434".into());
        assert!(refuse(SettingChange::Profile(Box::new(p.clone()))).contains("http://"));
        p.base_url = Some("http://127.0.0.1:11434/v1".into());
        assert!(check_setting(&m, &tools(), &SettingChange::Profile(Box::new(p))).is_ok());
    }

    /// A `cli` profile chosen for a use its tool does not list is refused, naming the tool and
    /// what it supports; any other profile, or a tool that lists the use, passes.
    #[test]
    fn a_profile_is_chosen_only_for_what_its_tool_can_do() {
        use crate::tools::ToolSource;
        let summarize_only = "tools:\n  notes:\n    binary: notes\n    command_template: \"{binary} {prompt}\"\n    \
            prompt_via: argument\n    models: [m]\n    capabilities: [summarize]\n    output: { format: text }\n";
        let tools =
            ToolRegistry::strict(&[ToolSource { origin: "tools.yaml".into(), text: summarize_only.into() }])
                .unwrap();
        let mut cli = LlmProfile::new("notes-cli", LlmKind::Cli, "m", 8192);
        cli.tool = Some("notes".into());
        let choose = |profile: &LlmProfile, used| {
            check_setting(
                &manager(),
                &tools,
                &SettingChange::ProfileUse { profile: Box::new(profile.clone()), used },
            )
        };
        let e = choose(&cli, ModelUse::Chat).unwrap_err();
        assert_eq!(
            e,
            "profile 'notes-cli': tool 'notes' cannot be the chat model: its entry's capabilities are [summarize], \
             without chat; choose a profile whose tool lists chat"
        );
        assert!(choose(&cli, ModelUse::Summarize).is_ok());
        let api = LlmProfile::new("gpt", LlmKind::Openai, "gpt-4o", 128_000);
        assert!(choose(&api, ModelUse::Chat).is_ok() && choose(&api, ModelUse::Summarize).is_ok());
        // A tool the registry does not have is refused for either use.
        cli.tool = Some("gone".into());
        assert!(choose(&cli, ModelUse::Summarize).unwrap_err().contains("gone"));
        // As the host sends it.
        let change: SettingChange = serde_json::from_value(json!({"setting": "profile_use",
            "value": {"profile": serde_json::to_value(LlmProfile { tool: Some("notes".into()), ..cli }).unwrap(), "used": "chat"}}))
        .unwrap();
        assert!(check_setting(&manager(), &tools, &change).is_err());
    }

    #[test]
    fn hosts_get_the_limits_and_each_kind_with_its_base_url_window_and_key() {
        let value = serde_json::to_value(host_metadata()).unwrap();
        assert_eq!(value["limits"]["threshold_min"], json!(crate::limits::THRESHOLD_MIN));
        assert_eq!(value["limits"]["threshold_max"], json!(crate::limits::THRESHOLD_MAX));
        assert_eq!(value["limits"]["default_threshold_percent"], json!(80));
        assert_eq!(value["limits"]["default_min_gain_percent"], json!(5.0));
        assert_eq!(value["limits"]["default_provider"], json!("smart"));
        assert_eq!(
            value["kinds"],
            json!([
                {"kind": "openai", "default_base_url": "https://api.openai.com/v1", "default_context_window": 128_000, "key": "required"},
                {"kind": "anthropic", "default_base_url": "https://api.anthropic.com", "default_context_window": 200_000, "key": "required"},
                {"kind": "openai-compatible", "default_base_url": null, "default_context_window": 8_192, "key": "optional"},
                {"kind": "cli", "default_base_url": null, "default_context_window": 200_000, "key": "none"},
                {"kind": "manual", "default_base_url": null, "default_context_window": 128_000, "key": "none"},
            ])
        );
        // The default provider is one the engine has.
        assert!(manager().registry().get(&host_metadata().limits.default_provider).is_some());
    }

    #[test]
    fn a_change_arrives_as_tagged_json() {
        let change: SettingChange = serde_json::from_value(
            json!({"setting": "provider", "value": {"id": "native", "update": {"enabled": false}}}),
        )
        .unwrap();
        assert!(matches!(change, SettingChange::Provider { ref id, .. } if id == "native"));
        assert!(check_setting(&manager(), &tools(), &change).is_ok());
    }
}
