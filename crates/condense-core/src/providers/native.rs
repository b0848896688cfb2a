//! The `native` provider (SPEC §4): an LLM writes a sectioned summary of the middle of the
//! conversation; the first message and the last N stay as they are. Guards refuse what is too
//! small to be worth a call, and a summary that would not shrink the context is refused.

use serde_json::json;

use crate::error::CondenseError;
use crate::error::{ErrorKind, LlmError};
use crate::host::AbortSignal;
use crate::llm::Usage;
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Needs, Services, TemplateToken,
};

use super::summary::{self, SummaryConfig};
use crate::config::Form;

/// Summarizes with an LLM.
#[derive(Debug, Default, Clone, Copy)]
pub struct NativeProvider;

fn config(options: &CondensationOptions) -> Result<SummaryConfig, CondenseError> {
    let mut c: SummaryConfig = options.typed_config("native")?;
    if let Some(n) = options.keep_last {
        c.keep_last = n;
    }
    Ok(c)
}

#[async_trait::async_trait(?Send)]
impl CondensationProvider for NativeProvider {
    fn id(&self) -> &str {
        "native"
    }

    fn name(&self) -> &str {
        "LLM summary"
    }

    fn description(&self) -> &str {
        "An LLM summarizes the middle of the conversation in fixed sections; the first message and the last N stay."
    }

    fn needs(&self) -> Needs {
        Needs::Llm
    }

    fn config_form(&self) -> Form {
        Form::of::<SummaryConfig>()
    }

    fn validate(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
    ) -> Result<(), CondenseError> {
        summary::plan(ctx, config(options)?.keep_last).map(|_| ())
    }

    /// The prompt (everything but the kept tail) at the input price, and the condense phase's
    /// answer limit at the output price: an upper bound.
    fn estimate_cost(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
    ) -> f64 {
        let (Some(llm), Ok(config)) = (services.llm, config(options)) else { return 0.0 };
        let Ok(plan) = summary::plan(ctx, config.keep_last) else { return 0.0 };
        let bundle = summary::bundle(ctx, &plan, &config);
        let input = services.tokens.count_text(&llm.adapter().render_for_display(&bundle));
        let output = llm.profile().condense.max_output_tokens.unwrap_or(llm.profile().max_output);
        llm.cost(&Usage { input_tokens: input as u64, output_tokens: output as u64 })
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let llm = services.llm.ok_or_else(|| CondenseError::InvalidConfig {
            id: "native".into(),
            message: "the native provider needs an LLM profile".into(),
        })?;
        let config = config(options)?;
        let plan = summary::plan(ctx, config.keep_last)?;
        let mut bundle = summary::bundle(ctx, &plan, &config);
        bundle.generation_params = Some(llm.profile().condense);
        let no_abort = AbortSignal::new();
        let response =
            llm.complete(&bundle, services.abort.unwrap_or(&no_abort)).await.map_err(CondenseError::Llm)?;
        let text = response.content.trim();
        if text.is_empty() {
            return Err(CondenseError::Llm(LlmError::new(
                ErrorKind::LlmMalformedStream,
                "the model answered with an empty summary",
            )));
        }
        let (messages, mut metrics) = summary::apply_checked(ctx, services.tokens, &plan, text)?;
        // The reported usage prices the call; when a server reports none, the counter estimates it.
        let (usage, estimated) = match response.usage {
            Some(u) => (u, false),
            None => {
                let input = services.tokens.count_text(&llm.adapter().render_for_display(&bundle));
                (
                    Usage {
                        input_tokens: input as u64,
                        output_tokens: services.tokens.count_text(text) as u64,
                    },
                    true,
                )
            }
        };
        metrics.insert("profile_id".into(), llm.profile().id.clone().into());
        metrics.insert("model".into(), llm.profile().model.clone().into());
        metrics.insert("usage".into(), json!({"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "estimated": estimated}));
        metrics.insert("finish_reason".into(), response.finish_reason.clone().into());
        // A summary cut by the answer limit is kept but flagged: the user can undo it.
        metrics.insert(
            "summary_truncated".into(),
            matches!(response.finish_reason.as_deref(), Some("length" | "max_tokens")).into(),
        );
        Ok(Condensed { messages, summary: Some(text.to_owned()), cost: llm.cost(&usage), metrics })
    }
}
