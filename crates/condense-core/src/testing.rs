//! Test support, compiled for the core's own tests and behind the `testing` feature for other
//! crates: [`ScriptedLlm`], an LLM whose answers are written in advance and which records every
//! request, [`StepClock`], a clock that moves only when told, and [`TurnBench`], what the agent
//! needs besides its LLMs to work on one input. With them the agent's turn logic
//! and the providers are tested without sockets; the HTTP path keeps its own tests against real
//! servers on 127.0.0.1.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use futures::StreamExt;
use futures::stream::LocalBoxStream;

use crate::agent::{
    AgentEvent, AgentInput, ChatTask, CondensationPreview, DefaultAgent, PreviewEstimate, PreviewFailure,
    Turn,
};
use crate::error::{ErrorKind, LlmError};
use crate::host::{AbortSignal, Clock};
use crate::limits::AutoCondense;
use crate::llm::{
    ApiAdapter, Finish, LlmProfile, LlmProvider, PromptAdapter, PromptBundle, StreamEvent, Usage,
};
use crate::manager::CondensationManager;
use crate::tokens::{Encoding, TiktokenCounter};

/// A clock that advances by `step_ms` at every reading (5 ms by default), and by
/// [`StepClock::advance`].
#[derive(Debug)]
pub struct StepClock {
    now: Cell<f64>,
    step_ms: f64,
}

impl StepClock {
    /// A clock at 0 that moves `step_ms` each time it is read.
    pub fn new(step_ms: f64) -> Self {
        StepClock { now: Cell::new(0.0), step_ms }
    }

    /// Moves the clock forward.
    pub fn advance(&self, ms: f64) {
        self.now.set(self.now.get() + ms);
    }
}

impl Default for StepClock {
    fn default() -> Self {
        StepClock::new(5.0)
    }
}

impl Clock for StepClock {
    fn now_ms(&self) -> f64 {
        let now = self.now.get();
        self.now.set(now + self.step_ms);
        now
    }
}

/// An LLM that plays back scripted answers, one per request, in order, and records the requests.
/// A request beyond the script fails with `llm_config`, so a test that sends more than it planned
/// fails loudly.
#[derive(Debug)]
pub struct ScriptedLlm {
    profile: LlmProfile,
    script: RefCell<VecDeque<Vec<StreamEvent>>>,
    requests: RefCell<Vec<PromptBundle>>,
}

impl ScriptedLlm {
    /// An LLM for a profile, with nothing scripted yet.
    pub fn new(profile: LlmProfile) -> Self {
        ScriptedLlm { profile, script: RefCell::default(), requests: RefCell::default() }
    }

    /// Scripts the next answer as raw events.
    pub fn then(self, events: Vec<StreamEvent>) -> Self {
        self.script.borrow_mut().push_back(events);
        self
    }

    /// Scripts a complete answer, streamed word by word, with the usage the server reports.
    pub fn then_answer(self, text: &str, usage: Option<Usage>) -> Self {
        let mut events: Vec<StreamEvent> =
            text.split_inclusive(' ').map(|w| StreamEvent::Delta(w.to_owned())).collect();
        events.push(StreamEvent::Done(Finish {
            usage,
            finish_reason: Some("stop".into()),
            model: None,
            cost_usd: None,
        }));
        self.then(events)
    }

    /// Scripts an answer that streams `partial` and then fails.
    pub fn then_fail(self, partial: &str, kind: ErrorKind, message: &str) -> Self {
        let mut events = Vec::new();
        if !partial.is_empty() {
            events.push(StreamEvent::Delta(partial.to_owned()));
        }
        events.push(StreamEvent::Failed(LlmError::new(kind, message)));
        self.then(events)
    }

    /// The requests sent so far, oldest first.
    pub fn requests(&self) -> Vec<PromptBundle> {
        self.requests.borrow().clone()
    }

    /// Scripted answers not asked for yet.
    pub fn remaining(&self) -> usize {
        self.script.borrow().len()
    }
}

impl LlmProvider for ScriptedLlm {
    fn profile(&self) -> &LlmProfile {
        &self.profile
    }

    fn adapter(&self) -> &dyn PromptAdapter {
        &ApiAdapter
    }

    fn stream_completion<'a>(
        &'a self,
        bundle: &PromptBundle,
        _abort: &AbortSignal,
    ) -> LocalBoxStream<'a, StreamEvent> {
        self.requests.borrow_mut().push(bundle.clone());
        let events = self.script.borrow_mut().pop_front().unwrap_or_else(|| {
            let e =
                LlmError::new(ErrorKind::LlmConfig, "the scripted LLM has no answer left for this request");
            vec![StreamEvent::Failed(e)]
        });
        futures::stream::iter(events).boxed_local()
    }
}

/// What one agent input needs besides the agent and its LLMs: the manager (built-in providers),
/// a counter, a clock, the automatic-condensation settings and the provider to condense with.
#[derive(Debug)]
pub struct TurnBench<C: Clock = StepClock> {
    /// The providers.
    pub manager: CondensationManager,
    /// Counts tokens (o200k).
    pub counter: TiktokenCounter,
    /// Times condensations.
    pub clock: C,
    /// The automatic-condensation settings.
    pub auto: AutoCondense,
    /// The condensation provider (`native` by default).
    pub provider: &'static str,
}

impl TurnBench<StepClock> {
    /// A bench with a step clock.
    pub fn new() -> Self {
        TurnBench::with_clock(StepClock::default())
    }
}

impl Default for TurnBench<StepClock> {
    fn default() -> Self {
        TurnBench::new()
    }
}

impl<C: Clock> TurnBench<C> {
    /// A bench with the given clock.
    pub fn with_clock(clock: C) -> Self {
        TurnBench {
            manager: CondensationManager::with_builtin_providers(),
            counter: TiktokenCounter::new(Encoding::O200kBase),
            clock,
            auto: AutoCondense::default(),
            provider: "native",
        }
    }

    /// Runs one input at `now_ms`; `on_event` sees each event as it is emitted, with the turn's
    /// abort signal (to cancel mid-way). Returns the events in order.
    pub fn run(
        &self,
        agent: &mut DefaultAgent,
        llm: &dyn LlmProvider,
        condensing: Option<&dyn LlmProvider>,
        input: AgentInput,
        now_ms: i64,
        mut on_event: impl FnMut(&AgentEvent, &AbortSignal),
    ) -> Vec<AgentEvent> {
        let abort = AbortSignal::new();
        let turn = Turn {
            llm,
            condensing_llm: condensing,
            manager: &self.manager,
            provider: Some(self.provider),
            auto: &self.auto,
            tokens: &self.counter,
            clock: &self.clock,
            abort: &abort,
            now_ms,
        };
        let mut events = Vec::new();
        futures::executor::block_on(agent.process(input, &turn, &mut |e| {
            on_event(&e, &abort);
            events.push(e);
        }));
        events
    }

    /// Previews a condensation of `task` at `now_ms` (see [`crate::agent::preview`]);
    /// `on_estimate` sees the provider's estimate before it runs.
    pub fn preview(
        &self,
        task: &ChatTask,
        llm: &dyn LlmProvider,
        now_ms: i64,
        mut on_estimate: impl FnMut(&PreviewEstimate),
    ) -> Result<CondensationPreview, PreviewFailure> {
        let abort = AbortSignal::new();
        let turn = Turn {
            llm,
            condensing_llm: None,
            manager: &self.manager,
            provider: Some(self.provider),
            auto: &self.auto,
            tokens: &self.counter,
            clock: &self.clock,
            abort: &abort,
            now_ms,
        };
        futures::executor::block_on(crate::agent::preview(task, &turn, &mut on_estimate))
    }
}

/// The events' types in order, a run of `MessageContent` written once as `MessageContent*`.
pub fn event_shape(events: &[AgentEvent]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        let name =
            serde_json::to_value(e).expect("events serialize")["type"].as_str().unwrap_or("?").to_owned();
        let name = if name == "MessageContent" { "MessageContent*".to_owned() } else { name };
        if name == "MessageContent*" && out.last().is_some_and(|l| *l == name) {
            continue;
        }
        out.push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on;

    use super::*;
    use crate::llm::LlmKind;

    #[test]
    fn a_scripted_llm_plays_its_answers_in_order_then_refuses() {
        let llm = ScriptedLlm::new(LlmProfile::new("p", LlmKind::Openai, "gpt-4o", 1000))
            .then_answer("Hello there", None)
            .then_fail("Par", ErrorKind::LlmServer, "boom");
        let abort = AbortSignal::new();
        let bundle = PromptBundle { request: "hi".into(), ..PromptBundle::default() };
        assert_eq!(block_on(llm.complete(&bundle, &abort)).unwrap().content, "Hello there");
        let e = block_on(llm.complete(&bundle, &abort)).unwrap_err();
        assert_eq!((e.kind, e.partial.as_str()), (ErrorKind::LlmServer, "Par"));
        assert_eq!(block_on(llm.complete(&bundle, &abort)).unwrap_err().kind, ErrorKind::LlmConfig);
        assert_eq!(llm.requests().len(), 3);
        let clock = StepClock::new(5.0);
        assert_eq!((clock.now_ms(), clock.now_ms()), (0.0, 5.0));
    }
}
