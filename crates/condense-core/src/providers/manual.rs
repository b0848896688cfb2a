//! The `manual` provider (SPEC §4), for users with no API: step one renders the summary request as
//! one readable block to paste into any LLM chat; step two takes the pasted answer back and
//! applies it exactly as `native` applies a model's answer.

use serde::{Deserialize, Serialize};

use crate::error::CondenseError;
use crate::llm::{ManualAdapter, PromptAdapter};
use crate::model::Message;
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Needs, Services, TemplateToken,
};
use crate::tokens::TokenCounter;

use super::summary::{self, SummaryConfig};
use crate::config::{ConfigField, ConfigForm, Form};
use crate::provider::ProviderMeta;

/// Configuration of the `manual` provider: the summary settings, plus the pasted answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ManualConfig {
    /// Messages at the end kept as they are.
    pub keep_last: Option<usize>,
    /// Instructions replacing the default summary prompt.
    pub custom_prompt: Option<String>,
    /// The answer pasted back from the LLM (step two).
    pub answer: Option<String>,
    /// Keep the state ledger of what the summary hides (see `crate::ledger`).
    pub ledger: bool,
}

impl Default for ManualConfig {
    fn default() -> Self {
        ManualConfig { keep_last: None, custom_prompt: None, answer: None, ledger: true }
    }
}

impl ManualConfig {
    fn summary(&self, options: &CondensationOptions) -> SummaryConfig {
        SummaryConfig {
            keep_last: options.keep_last.or(self.keep_last).unwrap_or(summary::DEFAULT_KEEP_LAST),
            custom_prompt: self.custom_prompt.clone(),
            ledger: self.ledger,
        }
    }
}

/// The form of a provider that calls no LLM: `keep_last` may be left out, and no profile.
impl ConfigForm for ManualConfig {
    fn fields() -> Vec<ConfigField> {
        vec![
            summary::keep_last_field().optional().with_default(summary::DEFAULT_KEEP_LAST),
            summary::prompt_field(),
            crate::config::ledger_field(),
        ]
    }

    fn check(&self) -> Result<(), String> {
        summary::check_prompt(self.custom_prompt.as_deref())
    }
}

fn config(options: &CondensationOptions) -> Result<ManualConfig, CondenseError> {
    options.typed_config("manual")
}

/// Step one: the request to copy into any LLM chat, as one Markdown block.
pub fn render_request(
    messages: &[Message],
    system: Option<&str>,
    options: &CondensationOptions,
    tokens: &dyn TokenCounter,
) -> Result<String, CondenseError> {
    let prev_context_tokens = tokens.count_request(system, &crate::model::api_view(messages));
    let ctx = CondensationContext { messages, system, prev_context_tokens };
    let config = config(options)?.summary(options);
    let plan = summary::plan(&ctx, config.keep_last)?;
    Ok(ManualAdapter.render_for_display(&summary::bundle(&ctx, &plan, &config)))
}

/// Applies a summary pasted by hand.
#[derive(Debug, Default, Clone, Copy)]
pub struct ManualProvider;

/// What lists show of the provider, and what it needs.
const META: ProviderMeta = ProviderMeta {
    id: "manual",
    name: "Manual summary (copy/paste)",
    description: "Renders the summary request to paste into any LLM, then applies the answer you paste back.",
    needs: Needs::Person,
};

#[async_trait::async_trait(?Send)]
impl CondensationProvider for ManualProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }

    fn config_form(&self) -> Form {
        Form::of::<ManualConfig>()
    }

    fn validate(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
    ) -> Result<(), CondenseError> {
        let c = config(options)?;
        if c.answer.as_deref().is_none_or(|a| a.trim().is_empty()) {
            return Err(CondenseError::InvalidInput(
                "no summary pasted yet: render the request, paste it into any LLM, and pass its answer"
                    .into(),
            ));
        }
        summary::plan(ctx, c.summary(options).keep_last).map(|_| ())
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let c = config(options)?;
        let answer = c.answer.as_deref().unwrap_or_default().trim();
        let plan = summary::plan(ctx, c.summary(options).keep_last)?;
        let (messages, metrics) = summary::apply_checked(ctx, services.tokens, &plan, answer)?;
        Ok(Condensed { messages, summary: Some(answer.to_owned()), cost: 0.0, metrics })
    }
}
