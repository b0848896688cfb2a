//! The summaries of `--provider native`, written off the request path. The core hands out a job
//! when a request crossed its threshold (that request went out condensed by the ledger); this
//! file runs it on a blocking thread with the core's native provider and the CLI's HTTP client,
//! at most [`SLOTS`] at a time, and gives the outcome back to the core, which splices the summary
//! into the session's next request.
//!
//! Who writes: the condensing model of `--llm …`/`--profile FILE` (its key from the environment,
//! as `condense run` reads it), or with `--summarize-with-upstream` the request's own model at
//! the upstream it went to, with the request's own key. That key lives in the job's closure for
//! the call and nowhere else: it is not logged, stored, or put in the state.

use std::sync::Arc;

use condense_cli::native::NativeClock;
use condense_core::gateway::{Dialect, SummaryDone, SummaryJob, summarize, summary_line};
use condense_core::llm::{LlmProfile, ModelUse};
use condense_core::provider::Services;
use condense_core::tokens::TiktokenCounter;
use hyper::HeaderMap;
use tokio::sync::Semaphore;

use super::decide::{self, SharedState};
use crate::input::{Failure, usage};
use crate::llm::LlmArgs;

/// Summaries written at once; more wait their turn (a condensation keeps its ledger meanwhile).
const SLOTS: usize = 2;

/// Who writes the summaries.
#[derive(Clone)]
pub(crate) enum Writer {
    /// The condensing model the flags or a profile file describe.
    Profile(Box<LlmArgs>, Box<LlmProfile>),
    /// The request's own model and key, at its upstream.
    Upstream,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Writer::Profile(_, p) => write!(f, "the condensing model {} ({})", p.model, p.id),
            Writer::Upstream => write!(f, "each request's own model at its upstream"),
        }
    }
}

/// Runs the jobs the core hands out.
pub(crate) struct Summarizer {
    writer: Writer,
    slots: Arc<Semaphore>,
}

impl Summarizer {
    /// The writer the flags choose, checked: `native` needs one, the others take none. A
    /// profile is tried once here, so a missing key fails at start rather than at the first
    /// condensation.
    pub(crate) fn from_flags(
        provider: &str,
        llm: &LlmArgs,
        upstream: bool,
    ) -> Result<Option<Summarizer>, Failure> {
        let writer = match (provider, llm.given(), upstream) {
            ("native", true, true) => {
                return Err(usage(
                    "--summarize-with-upstream and --llm/--profile both name the summaries' writer; keep one",
                ));
            }
            ("native", true, false) => {
                let profile = llm.profile()?;
                let client = llm.client(profile.clone())?;
                client.serves(ModelUse::Summarize).map_err(|e| usage(e.message))?;
                Writer::Profile(Box::new(llm.clone()), Box::new(profile))
            }
            ("native", false, true) => Writer::Upstream,
            ("native", false, false) => {
                return Err(usage(
                    "--provider native needs the model that writes the summaries: --llm KIND --model M, \
                     --profile FILE, or --summarize-with-upstream",
                ));
            }
            (_, true, _) | (_, _, true) => {
                return Err(usage(
                    "--llm, --profile and --summarize-with-upstream belong to --provider native",
                ));
            }
            _ => return Ok(None),
        };
        Ok(Some(Summarizer { writer, slots: Arc::new(Semaphore::new(SLOTS)) }))
    }

    /// Who writes, for the start banner.
    pub(crate) fn describe(&self) -> String {
        format!("{:?}", self.writer)
    }

    /// Starts the jobs the core queued for a request with `headers` (the key of
    /// `--summarize-with-upstream`). Returns at once.
    pub(crate) fn start(&self, shared: &Arc<SharedState>, jobs: Vec<SummaryJob>, headers: &HeaderMap) {
        for job in jobs {
            let (profile, key) = match &self.writer {
                Writer::Profile(..) => (None, None),
                Writer::Upstream => {
                    let profile = decide::upstream_profile(&mut shared.state(), &job);
                    (Some(profile), request_key(headers, job.dialect))
                }
            };
            let (shared, writer, slots) = (Arc::clone(shared), self.writer.clone(), Arc::clone(&self.slots));
            tokio::spawn(async move {
                let _slot = slots.acquire_owned().await;
                let (id, session) = (job.id, job.session.clone());
                let written = tokio::task::spawn_blocking(move || write(&job, &writer, profile, key)).await;
                let outcome = written.unwrap_or_else(|e| Err(format!("the summary's thread failed: {e}")));
                let written = outcome.as_ref().map(|d| (d.output_tokens, d.cost_usd)).map_err(Clone::clone);
                let used = decide::summary_done(&mut shared.state(), id, outcome);
                let line = summary_line(&session, written.as_ref().copied().map_err(String::as_str), used);
                crate::out::note(&format!("gateway: {line}"));
                shared.changed.notify_one();
            });
        }
    }
}

/// The request's key, as its client sent it: Anthropic's `x-api-key` (else a bearer token),
/// OpenAI's bearer token, Gemini's `x-goog-api-key` (else a bearer token; a key given in the
/// URL's `key` query is not taken for summaries).
fn request_key(headers: &HeaderMap, dialect: Dialect) -> Option<String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let bearer = header("authorization").and_then(|v| v.strip_prefix("Bearer ")).map(str::to_owned);
    match dialect {
        Dialect::AnthropicMessages => header("x-api-key").map(str::to_owned).or(bearer),
        Dialect::ChatCompletions | Dialect::Responses => bearer,
        Dialect::Gemini => header("x-goog-api-key").map(str::to_owned).or(bearer),
    }
    .filter(|k| !k.is_empty())
}

/// Writes one summary, on a blocking thread (the LLM layer's clients are single-threaded).
fn write(
    job: &SummaryJob,
    writer: &Writer,
    upstream: Option<LlmProfile>,
    key: Option<String>,
) -> Result<SummaryDone, String> {
    let llm: Box<dyn condense_core::llm::LlmProvider> = match (writer, upstream) {
        (Writer::Profile(args, profile), _) => args.client((**profile).clone()).map_err(|f| f.1)?,
        (Writer::Upstream, Some(profile)) => {
            Box::new(crate::llm::keyed_client(profile, key).map_err(|f| f.1)?)
        }
        (Writer::Upstream, None) => return Err("no upstream profile for the job".into()),
    };
    let counter = TiktokenCounter::for_model(&llm.profile().model);
    let clock = NativeClock::start();
    let services = Services::new(&counter, &clock).with_llm(llm.as_ref());
    futures::executor::block_on(summarize(job, services))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    #[test]
    fn the_key_is_read_from_the_header_the_dialect_uses() {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", HeaderValue::from_static("sk-ant-1"));
        headers.insert("authorization", HeaderValue::from_static("Bearer sk-2"));
        assert_eq!(request_key(&headers, Dialect::AnthropicMessages).as_deref(), Some("sk-ant-1"));
        assert_eq!(request_key(&headers, Dialect::Responses).as_deref(), Some("sk-2"));
        headers.remove("x-api-key");
        assert_eq!(request_key(&headers, Dialect::AnthropicMessages).as_deref(), Some("sk-2"));
        assert_eq!(request_key(&HeaderMap::new(), Dialect::ChatCompletions), None);
        let mut gemini = HeaderMap::new();
        gemini.insert("x-goog-api-key", "AIza-3".parse().unwrap());
        assert_eq!(request_key(&gemini, Dialect::Gemini).as_deref(), Some("AIza-3"));
    }

    #[test]
    fn only_native_takes_a_writer_and_it_needs_one() {
        use clap::Parser;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            llm: LlmArgs,
        }
        let none = Flags::parse_from(["x"]).llm;
        assert!(Summarizer::from_flags("smart", &none, false).ok().unwrap().is_none());
        assert!(Summarizer::from_flags("native", &none, false).is_err());
        assert!(Summarizer::from_flags("smart", &none, true).is_err());
        let upstream = Summarizer::from_flags("native", &none, true).ok().flatten().unwrap();
        assert!(upstream.describe().contains("own model"));
        let given = Flags::parse_from([
            "x",
            "--llm",
            "openai-compatible",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .llm;
        assert!(Summarizer::from_flags("native", &given, true).is_err(), "one writer");
        assert!(
            Summarizer::from_flags("native", &given, false)
                .ok()
                .flatten()
                .unwrap()
                .describe()
                .contains("model m")
        );
    }
}
