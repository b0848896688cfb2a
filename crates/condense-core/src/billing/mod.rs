//! What the model APIs bill for a prompt (issue 40): each model's published prices, by its exact
//! id ([`prices`]), and a model of each provider's prompt cache ([`cache`]): Anthropic's, which
//! writes only at the breakpoints a request carries and reads a prefix written before within a
//! lookback of about 20 blocks, with a 5-minute or 1-hour lifetime; and the automatic prefix
//! cache of OpenAI and Gemini, which keeps every prompt past a minimum length and reads in fixed
//! steps. The gateway books what a session would have cost uncondensed against what it cost with
//! them; the replay bills a recorded session under a policy. Both bill through here.

mod billed;
pub mod cache;
pub mod prices;

pub use billed::Billed;
pub use cache::{Block, LOOKBACK_BLOCKS, PromptCache, Spans, Ttl};
pub use prices::{CacheRules, ModelPrices, Rates, model_prices};
