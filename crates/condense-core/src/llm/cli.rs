//! A CLI agent as an [`LlmProvider`]: the bundle becomes one prompt (the readable transcript of
//! [`ApiAdapter::render_for_display`]), the tool's [`GenericAdapter`] runs it through the host's
//! command runner, and the answer comes back as one stream: `Start`, one `Delta`, `Done` with the
//! usage, cost and model the tool reported.

use std::rc::Rc;

use futures::StreamExt;
use futures::stream::LocalBoxStream;

use super::{ApiAdapter, Finish, LlmProvider, PromptAdapter, PromptBundle, StreamEvent};
use crate::error::{ErrorKind, LlmError};
use crate::host::{AbortSignal, CommandRunner};
use crate::profile::{LlmKind, LlmProfile, ModelUse};
use crate::tools::{GenericAdapter, ToolAdapter, ToolRegistry, ToolRequest};

/// A `cli` profile's client.
pub struct CliLlm {
    profile: LlmProfile,
    tool: GenericAdapter,
    cwd: Option<String>,
}

impl CliLlm {
    /// A client for a `cli` profile: its tool must be in `tools` and take its model.
    pub fn new(
        profile: LlmProfile,
        tools: &ToolRegistry,
        runner: Rc<dyn CommandRunner>,
    ) -> Result<Self, LlmError> {
        profile.validate()?;
        if profile.kind != LlmKind::Cli {
            return Err(LlmError::new(
                ErrorKind::LlmConfig,
                format!("profile '{}' is not a cli profile", profile.id),
            ));
        }
        let id = profile.tool.as_deref().unwrap_or_default();
        let tool = GenericAdapter::new(tools.get(id)?.clone(), runner);
        tool.validate_model(&profile.model)?;
        Ok(CliLlm { profile, tool, cwd: None })
    }

    /// Runs the tool in `cwd` (the workspace folder), rather than the host's directory.
    pub fn in_directory(mut self, cwd: Option<String>) -> Self {
        self.cwd = cwd;
        self
    }

    /// The tool's adapter.
    pub fn tool(&self) -> &GenericAdapter {
        &self.tool
    }

    /// The prompt the tool is given for a bundle.
    pub fn prompt(&self, bundle: &PromptBundle) -> String {
        ApiAdapter.render_for_display(bundle)
    }
}

#[async_trait::async_trait(?Send)]
impl LlmProvider for CliLlm {
    fn profile(&self) -> &LlmProfile {
        &self.profile
    }

    fn adapter(&self) -> &dyn PromptAdapter {
        &ApiAdapter
    }

    fn serves(&self, used: ModelUse) -> Result<(), LlmError> {
        self.tool.entry().require(used)
    }

    fn stream_completion<'a>(
        &'a self,
        bundle: &PromptBundle,
        abort: &AbortSignal,
    ) -> LocalBoxStream<'a, StreamEvent> {
        let request = ToolRequest {
            model: self.profile.model.clone(),
            prompt: self.prompt(bundle),
            cwd: self.cwd.clone(),
        };
        let abort = abort.clone();
        futures::stream::once(async move { self.tool.execute(&request, &abort).await })
            .flat_map(|outcome| {
                let events = match outcome {
                    Ok(answer) => vec![
                        StreamEvent::Start { role: "assistant".into() },
                        StreamEvent::Delta(answer.text),
                        StreamEvent::Done(Finish {
                            usage: answer.usage,
                            finish_reason: Some("stop".into()),
                            model: answer.model,
                            cost_usd: answer.cost_usd,
                        }),
                    ],
                    Err(e) => vec![StreamEvent::Failed(e)],
                };
                futures::stream::iter(events)
            })
            .boxed_local()
    }
}
