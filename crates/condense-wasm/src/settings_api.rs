//! `CondenseEngine`'s providers and settings: the registry's providers and their configurations,
//! the default provider, and what the settings panel needs (its cards, the judge of a change, the
//! core's limits and per-kind metadata).

use std::rc::Rc;

use condense_core::settings::{
    HostMetadata, ProviderEntry, SettingChange, check_setting, host_metadata, provider_entries,
};
use condense_core::{ProviderConfigUpdate, ProviderInfo};
use wasm_bindgen::prelude::*;

use crate::convert::core_error;
use crate::engine::{CondenseEngine, Inner};
use crate::surface::engine_api;

crate::surface::data!(ProviderInfo, ProviderConfigUpdate, ProviderEntry, HostMetadata, SettingChange);

engine_api! {
    impl CondenseEngine;

    /// The providers, highest priority first.
    sync fn listProviders = list_providers(enabled_only: Option<bool>) -> Vec<ProviderInfo>;

    /// Changes a provider's settings; a bad configuration changes nothing.
    sync fn updateProviderConfig = update_provider_config(id: String, update: ProviderConfigUpdate) -> ();

    /// Sets the default provider; it must be registered.
    sync fn setDefaultProvider = set_default_provider(id: String) -> ();

    /// The settings panel's cards: every registered provider, highest priority first, with its
    /// configuration and the schema of its configuration form.
    sync fn providerEntries = entries() -> Vec<ProviderEntry>;

    /// The core's limits and defaults (threshold range, default threshold, minimum gain and
    /// provider, …) and each kind of LLM profile with its default base URL, window and whether it
    /// needs a key: what a host reads and checks its settings with, instead of copies.
    sync fn hostMetadata = metadata() -> HostMetadata;

    /// Whether a setting may be saved: `undefined` when it may, else the message to show beside
    /// the field. Nothing changes; an unreadable change is an `invalid_input` error.
    sync fn checkSetting = check(change: SettingChange) -> Option<String>;
}

#[wasm_bindgen]
impl CondenseEngine {
    /// The provider used when a call names none.
    #[wasm_bindgen(getter, js_name = defaultProvider)]
    pub fn default_provider(&self) -> String {
        self.inner.manager().default_provider().to_owned()
    }
}

fn list_providers(inner: &Rc<Inner>, enabled_only: Option<bool>) -> Result<Vec<ProviderInfo>, JsValue> {
    Ok(inner.manager().list_providers(enabled_only.unwrap_or(false)))
}

fn update_provider_config(
    inner: &Rc<Inner>,
    id: String,
    update: ProviderConfigUpdate,
) -> Result<(), JsValue> {
    inner.manager_mut()?.registry_mut().update_config(&id, update).map_err(|e| core_error(&e))
}

fn set_default_provider(inner: &Rc<Inner>, id: String) -> Result<(), JsValue> {
    inner.manager_mut()?.set_default_provider(&id).map_err(|e| core_error(&e))
}

fn entries(inner: &Rc<Inner>) -> Result<Vec<ProviderEntry>, JsValue> {
    Ok(provider_entries(&inner.manager()))
}

fn metadata(_inner: &Rc<Inner>) -> Result<HostMetadata, JsValue> {
    Ok(host_metadata())
}

fn check(inner: &Rc<Inner>, change: SettingChange) -> Result<Option<String>, JsValue> {
    Ok(check_setting(&inner.manager(), &inner.tools(), &change).err())
}
