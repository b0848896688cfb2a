//! `Gateway`, the class of a running gateway (issue 39): made by the engine (`startGateway`),
//! stopped by the host (`stop`), which frees what it holds — the core's `HostGateway`, the usage
//! readers of the answers passing through it, the summary jobs handed out and not yet taken — and
//! cancels its background work. A stopped gateway's calls fail with `gateway_stopped`. Its
//! methods are described in `gateway_api`; this file holds the class, its state and its start.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;

use condense_core::ErrorKind;
use condense_core::gateway::{
    CHATGPT_BACKEND, GatewayConfig, Guard, HostGateway, RECALL_SESSION_BYTES, RecallConfig, SavedFiles,
    SessionFile, SummaryJob, Upstreams, UsageReader, upstream_origin,
};
use condense_protocol::gateway::{GatewaySetAside, GatewayStart, GatewayStarted};
use wasm_bindgen::prelude::*;

use crate::convert::error;
use crate::engine::{CondenseEngine, Inner};
use crate::surface::{IntoJs, engine_api};

crate::surface::data!(GatewayStart, GatewayStarted);

/// A gateway the engine runs for the host's HTTP server, until the host stops it.
#[wasm_bindgen]
pub struct Gateway {
    pub(crate) inner: Rc<Running>,
}

/// A gateway's engine, the scope of its background work, and its state while it runs.
pub(crate) struct Running {
    pub(crate) engine: Rc<Inner>,
    /// What `stop` cancels: this gateway's summaries, not another's nor the chats'.
    pub(crate) scope: String,
    /// Why the gateway started as it did (`startGateway`'s result, kept for `started`).
    pub(crate) started: GatewayStarted,
    /// `None` once stopped.
    state: RefCell<Option<GatewayState>>,
}

/// What a running gateway holds between the host's calls.
pub(crate) struct GatewayState {
    pub(crate) host: HostGateway,
    /// Each answer's reader by id: its session, its bill, the reader.
    pub(crate) readers: HashMap<u32, (String, Option<u64>, UsageReader)>,
    pub(crate) next_reader: u32,
    /// What the host last wrote of each session's file.
    pub(crate) saved: SavedFiles,
    pub(crate) jobs: HashMap<u64, SummaryJob>,
}

impl Running {
    /// Runs `f` on the gateway's state; `gateway_stopped` once it was stopped.
    pub(crate) fn with<R>(
        &self,
        f: impl FnOnce(&mut GatewayState) -> Result<R, JsValue>,
    ) -> Result<R, JsValue> {
        let mut slot = self.state.borrow_mut();
        let state = slot
            .as_mut()
            .ok_or_else(|| error(ErrorKind::GatewayStopped, "the gateway was stopped: start a new one"))?;
        f(state)
    }

    /// Cancels the gateway's background work and frees its state; again, nothing.
    pub(crate) fn stop(&self) {
        self.engine.cancel(Some(self.scope.clone()));
        self.state.borrow_mut().take();
    }
}

impl IntoJs for Gateway {
    fn into_js(self) -> Result<JsValue, JsValue> {
        Ok(JsValue::from(self))
    }
    fn ts() -> String {
        "Gateway".into()
    }
}

/// An invalid input's error.
pub(crate) fn invalid(message: impl Into<String>) -> JsValue {
    error(ErrorKind::InvalidInput, &message.into())
}

thread_local! {
    /// The gateways started so far: each one's scope is its own.
    static STARTED: Cell<u32> = const { Cell::new(0) };
}

engine_api! {
    impl CondenseEngine;

    /// Starts a gateway, restoring `options.state` when it is a state this gateway can read
    /// (`started()` says why not otherwise). It runs until `stop()`: the host stops one before
    /// starting the next on the same port.
    sync fn startGateway = start_gateway(options: GatewayStart) -> Gateway;
}

fn start_gateway(inner: &Rc<Inner>, options: GatewayStart) -> Result<Gateway, JsValue> {
    if !matches!(options.provider.as_str(), "smart" | "native") {
        return Err(invalid(format!(
            "the extension's gateway condenses with smart or native, not {:?}",
            options.provider
        )));
    }
    let anthropic = upstream_origin(&options.anthropic_upstream)
        .map_err(|e| invalid(format!("anthropicUpstream: {e}")))?;
    let openai =
        upstream_origin(&options.openai_upstream).map_err(|e| invalid(format!("openaiUpstream: {e}")))?;
    let gemini =
        upstream_origin(&options.gemini_upstream).map_err(|e| invalid(format!("geminiUpstream: {e}")))?;
    let recall = options.recall_dir.map(|dir| RecallConfig {
        dir,
        max_session_bytes: options.recall_max_bytes.map_or(RECALL_SESSION_BYTES, |b| b as usize),
    });
    let config = GatewayConfig {
        provider: options.provider,
        threshold: f64::from(options.threshold_percent) / 100.0,
        policy: options.policy,
        windows: options.windows,
        observe: options.observe,
        recall,
        ..GatewayConfig::default()
    };
    let guard = Guard { bound: SocketAddr::from(([127, 0, 0, 1], options.port)), token: None };
    let chatgpt = options.chatgpt_upstream.as_deref().unwrap_or(CHATGPT_BACKEND);
    let chatgpt = upstream_origin(chatgpt).map_err(|e| invalid(format!("chatgptUpstream: {e}")))?;
    let upstreams = Upstreams { anthropic, openai, gemini, chatgpt };
    let mut host = HostGateway::new(config, upstreams.clone(), guard).map_err(invalid)?;
    let files: Vec<SessionFile> = options
        .sessions
        .into_iter()
        .map(|f| SessionFile { name: f.name, bytes: f.text.into_bytes() })
        .collect();
    let (state_refused, set_aside, saved) =
        match host.load_files(options.state.as_deref().map(str::as_bytes), &files) {
            Ok(aside) => {
                let saved = SavedFiles::loaded(&files, &aside);
                let aside = aside
                    .into_iter()
                    .map(|s| GatewaySetAside { index: s.index, file: s.file, why: s.why, raw: s.raw })
                    .collect();
                (None, aside, saved)
            }
            // A refused state's files are not this gateway's: its saves neither remove nor count them.
            Err(e) => (Some(e.to_string()), Vec::new(), SavedFiles::default()),
        };
    let n = STARTED.with(|s| {
        s.set(s.get().wrapping_add(1));
        s.get()
    });
    let state = GatewayState { host, readers: HashMap::new(), next_reader: 0, jobs: HashMap::new(), saved };
    Ok(Gateway {
        inner: Rc::new(Running {
            engine: Rc::clone(inner),
            scope: format!("gateway {n}"),
            started: GatewayStarted {
                anthropic: upstreams.anthropic,
                openai: upstreams.openai,
                gemini: upstreams.gemini,
                chatgpt: upstreams.chatgpt,
                state_refused,
                set_aside,
            },
            state: RefCell::new(Some(state)),
        }),
    })
}
