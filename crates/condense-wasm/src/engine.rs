//! The engine: one registry of providers, one of CLI tools, one set of token counters and the work
//! in flight, shared by the method groups of the other files through [`Inner`].

use std::cell::{OnceCell, Ref, RefCell, RefMut};
use std::collections::HashMap;
use std::rc::Rc;

use condense_core::host::{AbortSignal, Clock};
use condense_core::llm::{CliLlm, HttpLlm, LlmKind, LlmProvider, RetryPolicy};
use condense_core::tools::ToolRegistry;
use condense_core::{CondensationManager, Encoding, ErrorKind, LlmError, TiktokenCounter};
use condense_protocol::calls::LlmTarget;
use wasm_bindgen::prelude::*;

use crate::convert::{error, llm_error};
use crate::held::HeldTasks;
use crate::host::{JsHost, JsHttp, JsRunner, JsTimer};

pub(crate) struct Inner {
    pub(crate) host: Rc<JsHost>,
    /// The providers and their settings, built on first use (`manager`, `manager_mut`): an engine
    /// that only counts never builds them.
    manager: RefCell<OnceCell<CondensationManager>>,
    /// The CLI tools `cli` profiles run: the shipped entries, then the host's sources. Read on
    /// first use (an empty cell: the shipped entries, not parsed yet), so an engine that never
    /// runs a tool never parses their YAML.
    tools: RefCell<OnceCell<ToolRegistry>>,
    /// The abort signals of work in flight, each with its scope (a chat's id), fired by `cancel`.
    running: RefCell<Vec<(Option<String>, AbortSignal)>>,
    /// One counter per encoding, kept across calls: its per-message cache makes the check after
    /// a new message cost only that message.
    counters: RefCell<HashMap<Encoding, Rc<TiktokenCounter>>>,
    /// The model of the last `counter` call and its counter: a host counting text after text
    /// for one model resolves the model's name once.
    last_counter: RefCell<Option<(String, Rc<TiktokenCounter>)>>,
    /// The chats and conversation files the host named by handle.
    pub(crate) held: RefCell<HeldTasks>,
}

impl Inner {
    /// The tool registry, the shipped entries parsed on the first call.
    pub(crate) fn tools(&self) -> Ref<'_, ToolRegistry> {
        Ref::map(self.tools.borrow(), |tools| tools.get_or_init(ToolRegistry::shipped))
    }

    /// Replaces the tool registry; `None`: the shipped entries alone, parsed on first use.
    pub(crate) fn set_tools(&self, registry: Option<ToolRegistry>) {
        *self.tools.borrow_mut() = registry.map_or_else(OnceCell::new, OnceCell::from);
    }

    /// The engine's counter for a model's encoding.
    pub(crate) fn counter(&self, model: &str) -> Rc<TiktokenCounter> {
        if let Some((last, counter)) = &*self.last_counter.borrow()
            && last == model
        {
            return Rc::clone(counter);
        }
        let encoding = Encoding::for_model(model);
        let counter = Rc::clone(
            self.counters
                .borrow_mut()
                .entry(encoding)
                .or_insert_with(|| Rc::new(TiktokenCounter::new(encoding))),
        );
        *self.last_counter.borrow_mut() = Some((model.to_owned(), Rc::clone(&counter)));
        counter
    }

    /// The LLM of a target: an HTTP client for the API kinds, the tool's adapter for `cli`.
    pub(crate) fn client(&self, target: LlmTarget) -> Result<Box<dyn LlmProvider>, JsValue> {
        if target.profile.kind == LlmKind::Cli {
            let runner = JsRunner::of(&self.host).ok_or_else(|| {
                llm_error(&LlmError::new(ErrorKind::LlmConfig, "this host cannot run programs"))
            })?;
            let llm =
                CliLlm::new(target.profile, &self.tools(), Rc::new(runner)).map_err(|e| llm_error(&e))?;
            return Ok(Box::new(llm));
        }
        let retry = RetryPolicy {
            max_retries: target.max_retries.unwrap_or(RetryPolicy::default().max_retries),
            jitter_seed: self.host.now_ms().to_bits(),
            ..RetryPolicy::default()
        };
        HttpLlm::new(
            target.profile,
            target.api_key,
            Rc::new(JsHttp(Rc::clone(&self.host))),
            Rc::new(JsTimer),
            retry,
        )
        // Timed by the host's clock: a request past the profile's deadline ends in llm_timeout.
        .map(|llm| Box::new(llm.with_clock(Rc::clone(&self.host) as Rc<dyn Clock>)) as Box<dyn LlmProvider>)
        .map_err(|e| llm_error(&e))
    }

    /// Starts a piece of work that `cancel(scope)` (or `cancel()`) can stop.
    pub(crate) fn begin(&self, scope: Option<&str>) -> AbortSignal {
        let signal = AbortSignal::new();
        self.running.borrow_mut().push((scope.map(str::to_owned), signal.clone()));
        signal
    }

    pub(crate) fn end(&self, signal: &AbortSignal) {
        self.running.borrow_mut().retain(|(_, s)| !s.same_as(signal));
    }

    /// Fires the signals of the work in `scope` (a chat's id), or of all work.
    pub(crate) fn cancel(&self, scope: Option<String>) {
        let running = self.running.borrow().clone();
        for (s, signal) in &running {
            if scope.is_none() || *s == scope {
                self.host.abort(signal);
            }
        }
    }

    /// The manager, built now if this is its first use.
    pub(crate) fn manager(&self) -> Ref<'_, CondensationManager> {
        Ref::map(self.manager.borrow(), |m| m.get_or_init(CondensationManager::with_builtin_providers))
    }

    /// The manager to change; `busy` while a condensation holds it.
    pub(crate) fn manager_mut(&self) -> Result<RefMut<'_, CondensationManager>, JsValue> {
        let cell = self.manager.try_borrow_mut().map_err(|_| {
            error(
                ErrorKind::Busy,
                "a condensation is running: change the provider settings when it has ended",
            )
        })?;
        Ok(RefMut::map(cell, |m| {
            m.get_or_init(CondensationManager::with_builtin_providers);
            m.get_mut().expect("initialised just above")
        }))
    }
}

/// The core, for one extension (or one test): its own registry and default provider.
#[wasm_bindgen]
pub struct CondenseEngine {
    pub(crate) inner: Rc<Inner>,
}

#[wasm_bindgen]
impl CondenseEngine {
    /// An engine using the host's `fetch(request, signal)`, `now()` and `log(level, message)`,
    /// and its `run(spec, signal)` (with `locate`, `envVar`, `platform`) for `cli` profiles.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Host")] host: JsValue,
    ) -> Result<CondenseEngine, JsValue> {
        let host = JsHost::new(&host)?;
        Ok(CondenseEngine {
            inner: Rc::new(Inner {
                host,
                manager: RefCell::new(OnceCell::new()),
                tools: RefCell::new(OnceCell::new()),
                running: RefCell::new(Vec::new()),
                counters: RefCell::new(HashMap::new()),
                last_counter: RefCell::new(None),
                held: RefCell::new(HeldTasks::default()),
            }),
        })
    }

    /// The version of the core.
    #[wasm_bindgen(getter)]
    pub fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").to_owned()
    }

    /// Cancels work in flight: the turn of the chat `taskId` when one is given, else everything.
    /// LLM calls end with `llm_cancelled`, condensations with their original messages, chat turns
    /// with the partial answer kept.
    pub fn cancel(&self, #[wasm_bindgen(js_name = taskId)] task_id: Option<String>) {
        self.inner.cancel(task_id);
    }
}
