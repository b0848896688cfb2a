//! Each HTTP dialect by the wire that speaks it: an API request built by `openai` or `anthropic`,
//! and a stream's event decoded by that dialect's decoder. The one place that picks a dialect's
//! module for a [`Wire`]; what the dialects share is in `wire`.

use crate::error::{ErrorKind, LlmError};
use crate::host::HttpRequest;
use crate::profile::LlmProfile;

use super::wire::{ApiRequest, Decoded, Decoder, Wire};
use super::{SseEvent, anthropic, openai};

impl Wire {
    /// The streaming HTTP request for an API request.
    pub fn build(
        self,
        profile: &LlmProfile,
        api_key: Option<&str>,
        req: &ApiRequest,
    ) -> Result<HttpRequest, LlmError> {
        let base = profile.base_url().ok_or_else(|| {
            LlmError::new(ErrorKind::LlmConfig, format!("profile '{}' has no base_url", profile.id))
        })?;
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), "text/event-stream".to_owned()),
        ];
        let (path, body) = match self {
            Wire::OpenAi => openai::request(profile, api_key, req, &mut headers)?,
            Wire::Anthropic => anthropic::request(profile, api_key, req, &mut headers)?,
        };
        Ok(HttpRequest { method: "POST".into(), url: format!("{base}{path}"), headers, body })
    }
}

impl Decoder {
    /// Decodes one event.
    pub(crate) fn event(&mut self, wire: Wire, event: &SseEvent) -> Result<Decoded, LlmError> {
        match wire {
            Wire::OpenAi => self.openai(event),
            Wire::Anthropic => self.anthropic(event),
        }
    }
}
