//! Settings and profile JSON, as the extension hands them over: an LLM profile, a provider's
//! configuration, a settings change; each is accepted or refused with a message, never a panic.
#![no_main]
use condense_core::CondensationManager;
use condense_core::llm::LlmProfile;
use condense_core::settings::{SettingChange, check_setting};
use condense_core::tools::ToolRegistry;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(profile) = serde_json::from_str::<LlmProfile>(text) {
        let _ = profile.validate();
        let _ = profile.capabilities();
    }
    let manager = CondensationManager::with_builtin_providers();
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        for info in manager.registry().list(false) {
            let _ = manager.registry().check_config(&info.id, &value);
        }
    }
    if let Ok(change) = serde_json::from_str::<SettingChange>(text) {
        // The shipped CLI tools: a `profile_use` change names one of them, or one that is not there.
        let _ = check_setting(&manager, &ToolRegistry::shipped(), &change);
    }
});
