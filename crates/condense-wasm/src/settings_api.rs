//! `CondenseEngine`'s providers and settings: the registry's providers and their configurations,
//! the default provider, and what the settings panel needs (its cards, the judge of a change, the
//! core's limits and per-kind metadata).

use condense_core::settings::{SettingChange, check_setting, host_metadata, provider_entries};
use condense_core::{CondenseError, ProviderConfigUpdate};
use wasm_bindgen::prelude::*;

use crate::convert::{core_error, from_js, to_js};
use crate::engine::CondenseEngine;

#[wasm_bindgen]
impl CondenseEngine {
    /// The providers, highest priority first.
    #[wasm_bindgen(js_name = listProviders, unchecked_return_type = "ProviderInfo[]")]
    pub fn list_providers(&self, enabled_only: Option<bool>) -> Result<JsValue, JsValue> {
        to_js(&self.inner.manager().list_providers(enabled_only.unwrap_or(false)))
    }

    /// A provider's `{enabled, priority, config}`.
    #[wasm_bindgen(js_name = providerConfig, unchecked_return_type = "ProviderConfig")]
    pub fn provider_config(&self, id: &str) -> Result<JsValue, JsValue> {
        let manager = self.inner.manager();
        let config = manager.registry().get_config(id).ok_or_else(|| {
            core_error(&CondenseError::ProviderNotFound {
                id: id.to_owned(),
                known: manager.registry().known_ids(),
            })
        })?;
        to_js(config)
    }

    /// Changes a provider's settings; a bad configuration changes nothing.
    #[wasm_bindgen(js_name = updateProviderConfig)]
    pub fn update_provider_config(
        &self,
        id: &str,
        #[wasm_bindgen(unchecked_param_type = "ProviderConfigUpdateInput")] update: JsValue,
    ) -> Result<(), JsValue> {
        let update: ProviderConfigUpdate = from_js(&update, "the provider update")?;
        self.inner.manager_mut()?.registry_mut().update_config(id, update).map_err(|e| core_error(&e))
    }

    /// The provider used when a call names none.
    #[wasm_bindgen(getter, js_name = defaultProvider)]
    pub fn default_provider(&self) -> String {
        self.inner.manager().default_provider().to_owned()
    }

    /// Sets the default provider; it must be registered.
    #[wasm_bindgen(js_name = setDefaultProvider)]
    pub fn set_default_provider(&self, id: &str) -> Result<(), JsValue> {
        self.inner.manager_mut()?.set_default_provider(id).map_err(|e| core_error(&e))
    }

    /// The settings panel's cards: every registered provider, highest priority first, with its
    /// configuration and the schema of its configuration form.
    #[wasm_bindgen(js_name = providerEntries, unchecked_return_type = "ProviderEntry[]")]
    pub fn provider_entries(&self) -> Result<JsValue, JsValue> {
        to_js(&provider_entries(&self.inner.manager()))
    }

    /// The core's limits and defaults (threshold range, default threshold, minimum gain and
    /// provider, …) and each kind of LLM profile with its default base URL: what a host reads and
    /// checks its settings with, instead of copies.
    #[wasm_bindgen(js_name = hostMetadata, unchecked_return_type = "HostMetadata")]
    pub fn host_metadata(&self) -> Result<JsValue, JsValue> {
        to_js(&host_metadata())
    }

    /// Whether a setting may be saved: `undefined` when it may, else the message to show beside
    /// the field. Nothing changes; an unreadable change is an `invalid_input` error.
    #[wasm_bindgen(js_name = checkSetting, unchecked_return_type = "string | undefined")]
    pub fn check_setting(
        &self,
        #[wasm_bindgen(unchecked_param_type = "SettingChangeInput")] change: JsValue,
    ) -> Result<JsValue, JsValue> {
        let change: SettingChange = from_js(&change, "the setting")?;
        Ok(match check_setting(&self.inner.manager(), &self.inner.tools(), &change) {
            Ok(()) => JsValue::UNDEFINED,
            Err(message) => message.into(),
        })
    }
}
