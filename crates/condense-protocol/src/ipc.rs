//! The messages between the extension and its webviews (the chat view and the settings panel).
//! Declared here once; the TypeScript types and the zod validators both sides run on arrival are
//! generated from these types. Core values (messages, chat tasks, agent events) keep the core's
//! snake_case JSON; the envelopes are camelCase like any JS API.
//!
//! An optional field of an envelope is absent or has a value, never `null` (`schemars(with)` says
//! so to the generated validators; serde reads it into an `Option`).
//!
//! Field ids in the settings panel's `rejected` / `accepted` messages name what they are about:
//! `provider.<id>.enabled`, `provider.<id>.priority`, `provider.<id>.config.<key>`, `default`,
//! `shared.<key>`, `auto.enabled`, `auto.thresholdPercent`, `auto.minGainPercent`, `profile.<id>`
//! (`profile.new` for an added one), `key.<profileId>`.

use std::collections::BTreeMap;

use condense_core::ErrorInfo;
use condense_core::agent::{
    AgentEvent, ChatTask, CondensationPreview, ContextStatus, PreviewEstimate, PreviewFailure,
};
use condense_core::limits::Limits;
use condense_core::llm::{CondensePolicy, ConnectionReport, GenerationParams, LlmKind};
use condense_core::settings::{KindMetadata, ProviderEntry};
use condense_core::tools::ToolConfigError;

use crate::calls::ToolStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A chat in the Chats list.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChatSummary {
    /// The chat's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Last changed, in milliseconds since the Unix epoch.
    pub updated_ms: f64,
    /// How many messages it holds.
    pub messages: usize,
}

/// An LLM profile in the chat's profile picker.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProfileOption {
    /// The profile's id.
    pub id: String,
    /// Its model.
    pub model: String,
    /// Its context window, in tokens.
    pub context_window: usize,
}

/// A local OpenAI-compatible server that answered on its default port (Ollama, LM Studio, the
/// llama.cpp server), offered by the first-run welcome with the models it lists.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LocalServer {
    /// The server's name (`Ollama`).
    pub name: String,
    /// Its OpenAI-compatible base URL (`http://127.0.0.1:11434/v1`).
    pub base_url: String,
    /// The models its `/models` lists.
    pub models: Vec<String>,
}

/// Where the first-run setup is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SetupState {
    /// Test Connection is running.
    Testing,
    /// The profile failed its test (or the user gave no key): nothing was saved.
    Failed,
    /// The profile answered and was saved as the chat profile.
    Connected,
}

/// What a condensation preview is of.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum PreviewSource {
    /// The active chat.
    Chat,
    /// A conversation file open in the editor.
    File {
        /// The file's name, relative to the workspace.
        name: String,
    },
}

/// Extension → chat view.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ToWebview {
    /// The whole state of the view: sent on `ready`, after every turn and every change.
    State {
        /// The active chat.
        task: Option<ChatTask>,
        /// Every chat, for the Chats list.
        chats: Vec<ChatSummary>,
        /// The profiles a chat may use.
        profiles: Vec<ProfileOption>,
        /// The chat profile.
        #[serde(rename = "profileId")]
        profile_id: Option<String>,
        /// How full the active chat's context is.
        context: Option<ContextStatus>,
        /// Whether a turn is running.
        busy: bool,
        /// Why the input is disabled (no usable chat profile: the first-run welcome shows);
        /// absent when the chat can be used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String")]
        blocked: Option<String>,
    },
    /// What the first-run welcome can offer: the local servers that answered, and the CLI
    /// agents the engine knows (found or not).
    Welcome {
        /// The local servers that answered on their default ports.
        servers: Vec<LocalServer>,
        /// The CLI agents, with where their programs were found or looked for.
        tools: Vec<ToolStatus>,
        /// The agents found here that the gateway can condense (Claude Code and Codex on the
        /// PATH, the Cline, Roo Code and Continue extensions installed), by name.
        #[serde(default)]
        agents: Vec<String>,
    },
    /// How the first-run setup is going.
    Setup {
        /// Testing, failed or connected.
        state: SetupState,
        /// What to tell the user.
        message: String,
    },
    /// One agent event of the turn in flight, for streaming.
    Event {
        /// The chat the turn belongs to.
        #[serde(rename = "taskId")]
        task_id: String,
        /// The event.
        event: AgentEvent,
    },
    /// A condensation preview being made (`running`, with the provider's `estimate` once the
    /// core made it: tokens before and the estimated cost, before any LLM call), opened
    /// (`preview` set: its panel shows it with Apply and Discard), failed (`failure` set) or
    /// closed (none of them).
    Preview {
        /// What the preview is of: the chat, or a conversation file (its name, for the panel).
        source: PreviewSource,
        /// The provider's estimate, made before it runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "PreviewEstimate")]
        estimate: Option<PreviewEstimate>,
        /// The preview to show.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "CondensationPreview")]
        preview: Option<Box<CondensationPreview>>,
        /// Why there is nothing to show.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "PreviewFailure")]
        failure: Option<PreviewFailure>,
        /// Whether the preview is being made (the model is writing the summary).
        running: bool,
    },
    /// A request failed or was invalid. `draft`: the text of a message that could not be sent,
    /// for the input box, so that nothing typed is lost.
    Error {
        /// What went wrong.
        message: String,
        /// The unsent text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String")]
        draft: Option<String>,
    },
}

/// Chat view → extension.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ToHost {
    /// The view is ready for its state.
    Ready,
    /// A new user message.
    Send {
        /// Its text.
        #[schemars(length(min = 1, max = 1_000_000))]
        text: String,
    },
    /// Stop the turn in flight.
    Stop,
    /// Ask again after a failure or a Stop.
    Retry,
    /// Condense the chat now.
    Condense,
    /// Condense the chat now with a provider the user picks (a quick pick of the enabled ones).
    CondenseWith,
    /// Preview a condensation of the chat (or of the conversation file in the editor).
    Preview,
    /// Condense the chat manually: its summary request out, an editor for the pasted answer.
    CondenseManually,
    /// Apply the preview shown, as it is.
    ApplyPreview,
    /// Close the preview without applying it.
    DiscardPreview,
    /// Pin or unpin a message of the active chat.
    Pin {
        /// The message.
        #[schemars(length(min = 1))]
        id: String,
        /// Pin (`true`) or unpin.
        pinned: bool,
    },
    /// Undo a condensation.
    Undo {
        /// The condensation.
        #[serde(rename = "condenseId")]
        #[schemars(length(min = 1))]
        condense_id: String,
    },
    /// Start a new chat.
    NewChat,
    /// Open a saved chat.
    OpenChat {
        /// Its id.
        #[schemars(length(min = 1))]
        id: String,
    },
    /// Make a profile the chat profile.
    SelectProfile {
        /// Its id.
        #[schemars(length(min = 1))]
        id: String,
    },
    /// Ask again which local servers answer and which CLI agents are installed.
    ProbeLocal,
    /// "Condense the agent you already use": start the gateway and show the setup of the agents
    /// found.
    UseGateway,
    /// The first-run welcome's choice: the extension asks for the key where one is needed (into
    /// the secret storage), runs Test Connection, and saves the profile as the chat profile.
    SetUp {
        /// The client.
        kind: LlmKind,
        /// The endpoint's base URL (local servers); the kind's default when absent.
        #[serde(default, rename = "baseUrl", skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String")]
        base_url: Option<String>,
        /// The model.
        #[schemars(length(min = 1, max = 200))]
        model: String,
        /// The tool entry of a `cli` profile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String")]
        tool: Option<String>,
    },
    /// Rename a saved chat (the extension asks for the new title).
    RenameChat {
        /// Its id.
        #[schemars(length(min = 1))]
        id: String,
    },
    /// Delete a saved chat (the extension asks for confirmation).
    DeleteChat {
        /// Its id.
        #[schemars(length(min = 1))]
        id: String,
    },
    /// The webview got a message it could not accept; the extension logs it.
    Error {
        /// What was wrong.
        message: String,
    },
}

/// An LLM profile as settings hold it (never a key: keys live in the secret storage).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileSettings {
    /// Stable id.
    pub id: String,
    /// The client.
    pub kind: LlmKind,
    /// The endpoint's base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub base_url: Option<String>,
    /// The model id sent to the API (or passed to the tool).
    pub model: String,
    /// The tool entry a `cli` profile runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub tool: Option<String>,
    /// The context window, in tokens.
    pub context_window: f64,
    /// The longest answer, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub max_output: Option<f64>,
    /// US dollars per million input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub price_input_per_mtok: Option<f64>,
    /// US dollars per million output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub price_output_per_mtok: Option<f64>,
    /// US dollars per million input tokens written to the prompt cache; absent: the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub price_cache_write_per_mtok: Option<f64>,
    /// US dollars per million input tokens read from the prompt cache; absent: the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub price_cache_read_per_mtok: Option<f64>,
    /// When automatic condensations run; absent: `cache-aware` with a cache price, else
    /// `threshold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "CondensePolicy")]
    pub condense_policy: Option<CondensePolicy>,
    /// −1 or absent: the global threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub threshold_percent: Option<f64>,
    /// The chat phase's output budget and temperature; absent: the model's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "GenerationParams")]
    pub chat: Option<GenerationParams>,
    /// The condense phase's output budget and temperature; absent: the core's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "GenerationParams")]
    pub condense: Option<GenerationParams>,
}

/// A setting settings.json holds but that could not be used, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SettingProblem {
    /// The setting, e.g. `contextCondenser.profiles[2]`.
    pub setting: String,
    /// Why it was not used.
    pub message: String,
}

/// The automatic-condensation settings as the panel shows them.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoSettings {
    /// The off switch.
    pub enabled: bool,
    /// The global threshold, in percent of the window.
    pub threshold_percent: f64,
    /// The minimum gain of an automatic condensation, in percent of the window.
    pub min_gain_percent: f64,
}

/// Extension → settings panel.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SettingsToWebview {
    /// Everything the panel shows: sent on `ready` and after every change, wherever it came from
    /// (the panel or settings.json).
    #[serde(rename_all = "camelCase")]
    State {
        /// The registry's providers, highest priority first, with their forms.
        providers: Vec<ProviderEntry>,
        /// The default provider.
        default_provider: String,
        /// Automatic condensation.
        auto: AutoSettings,
        /// Values shared by providers (`custom_prompt`, `condensing_profile`).
        shared: BTreeMap<String, String>,
        /// The LLM profiles.
        profiles: Vec<ProfileSettings>,
        /// The chat profile.
        chat_profile: String,
        /// Whether each profile has a key in the secret storage. Never the key.
        keys: BTreeMap<String, bool>,
        /// Settings that settings.json holds but could not be used.
        problems: Vec<SettingProblem>,
        /// The core's ranges and defaults: the page checks what is typed against them.
        // Boxed so that the other messages stay small; the JSON is the same.
        limits: Box<Limits>,
        /// The kinds of LLM profile, with their default base URLs, in the order the panel lists
        /// them.
        kinds: Vec<KindMetadata>,
        /// The CLI tools `cli` profiles may run, each with where its program was found.
        tools: Vec<ToolStatus>,
        /// The tool files that could not be used, with where and why.
        tool_errors: Vec<ToolConfigError>,
    },
    /// A change was refused and not saved: the inline message for the field.
    Rejected {
        /// The field.
        field: String,
        /// Why.
        message: String,
    },
    /// A change was saved.
    Accepted {
        /// The field.
        field: String,
    },
    /// What Test Connection found.
    #[serde(rename_all = "camelCase")]
    TestResult {
        /// The profile tested.
        profile_id: String,
        /// The report, when it worked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "ConnectionReport")]
        report: Option<ConnectionReport>,
        /// The typed error, when it did not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "ErrorInfo")]
        error: Option<ErrorInfo>,
    },
    /// A request failed or was invalid.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// Settings panel → extension.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SettingsToHost {
    /// The panel is ready for its state.
    Ready,
    /// Changes a provider's registry entry; `config` holds only the keys that change (null: back
    /// to the provider's default).
    UpdateProvider {
        /// The provider.
        #[schemars(length(min = 1))]
        id: String,
        /// The new switch.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "bool")]
        enabled: Option<bool>,
        /// The new priority.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "f64")]
        priority: Option<f64>,
        /// The configuration keys that change.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "BTreeMap<String, serde_json::Value>")]
        config: Option<BTreeMap<String, serde_json::Value>>,
    },
    /// Makes a provider the default.
    SetDefault {
        /// The provider.
        #[schemars(length(min = 1))]
        id: String,
    },
    /// Sets a value shared by providers.
    SetShared {
        /// `custom_prompt` or `condensing_profile`.
        #[schemars(length(min = 1))]
        key: String,
        /// The value.
        #[schemars(length(max = 100_000))]
        value: String,
    },
    /// Changes automatic condensation.
    #[serde(rename_all = "camelCase")]
    SetAuto {
        /// The off switch.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "bool")]
        enabled: Option<bool>,
        /// The global threshold.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "f64")]
        threshold_percent: Option<f64>,
        /// The minimum gain.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "f64")]
        min_gain_percent: Option<f64>,
    },
    /// Adds a profile (no `originalId`) or replaces the one with `originalId`.
    #[serde(rename_all = "camelCase")]
    SaveProfile {
        /// The profile.
        // Boxed: it would make every message as large as this one.
        profile: Box<ProfileSettings>,
        /// The id of the profile it replaces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String")]
        original_id: Option<String>,
    },
    /// Removes a profile and its key.
    RemoveProfile {
        /// The profile.
        #[schemars(length(min = 1))]
        id: String,
    },
    /// Stores a key in the secret storage. The panel clears its field at once and never shows it.
    #[serde(rename_all = "camelCase")]
    SetKey {
        /// The profile.
        #[schemars(length(min = 1))]
        profile_id: String,
        /// The key.
        #[schemars(length(min = 1, max = 10_000))]
        key: String,
    },
    /// Removes a profile's key.
    #[serde(rename_all = "camelCase")]
    ClearKey {
        /// The profile.
        #[schemars(length(min = 1))]
        profile_id: String,
    },
    /// Runs Test Connection for a profile.
    #[serde(rename_all = "camelCase")]
    TestConnection {
        /// The profile.
        #[schemars(length(min = 1))]
        profile_id: String,
    },
    /// The webview got a message it could not accept; the extension logs it.
    Error {
        /// What was wrong.
        message: String,
    },
}

/// Extension → Gateway view.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum GatewayToWebview {
    /// Everything the view shows: sent on `ready`, and whenever the gateway starts, stops, or
    /// its figures change.
    State {
        /// The port it listens on, while it runs.
        port: Option<u16>,
        /// Its figures, while it runs (boxed so that the other messages stay small; the JSON is
        /// the same).
        report: Option<Box<condense_core::gateway::GatewayReport>>,
        /// Each session's window and condensations, while it runs.
        sessions: Vec<condense_core::gateway::GatewaySessionView>,
    },
    /// The next condensation a session would make, as asked.
    Preview {
        /// What it would replace, and the ledger.
        preview: condense_core::gateway::GatewayPreview,
    },
    /// What was asked could not be done.
    Error {
        /// Why.
        message: String,
    },
}

/// Gateway view → extension.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum GatewayToHost {
    /// The view is ready for its state.
    Ready,
    /// Start the gateway.
    Start,
    /// Stop the gateway.
    Stop,
    /// Copy the setup for an agent (the quick pick).
    CopySetup,
    /// Show what the session's next condensation would be.
    Preview {
        /// The session.
        #[schemars(length(min = 1))]
        session: String,
    },
    /// Condense the session's next request.
    CondenseNext {
        #[schemars(length(min = 1))]
        session: String,
    },
    /// Pause (true) or resume (false) the session.
    Pause {
        #[schemars(length(min = 1))]
        session: String,
        paused: bool,
    },
    /// Undo the session's latest condensation.
    Undo {
        #[schemars(length(min = 1))]
        session: String,
    },
}
