//! How to point each agent at the gateway: the exact lines a user copies, for `condense
//! gateway`'s start banner and the extension's **Copy Gateway Setup…**, written once so both say
//! the same. `base` is the gateway's origin (`http://127.0.0.1:4141`). With recall files
//! (`recall`, the folder they go under), Claude Code is started with the one permission it needs
//! to read them in its default mode — `claude -p` refuses a read outside the working directory
//! ("Claude requested permissions to read from …, but you haven't granted it yet") — an allow
//! rule for that folder alone. Codex reads anywhere in its default sandbox (read-only).

use super::http::TOKEN_HEADER;

/// The clients the setup is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupClient {
    /// Claude Code (`claude`), through `ANTHROPIC_BASE_URL`.
    ClaudeCode,
    /// Codex (`codex`), a provider in `~/.codex/config.toml` on the Responses API.
    Codex,
    /// Cline, an OpenAI-compatible provider (or Anthropic with a custom base URL).
    Cline,
    /// Roo Code, the same.
    Roo,
    /// Continue, a model in `config.yaml`.
    Continue,
    /// Qwen Code (`qwen`), through `OPENAI_BASE_URL`.
    QwenCode,
    /// OpenCode (`opencode`), a provider in `opencode.json`.
    OpenCode,
    /// Gemini CLI (`gemini`) signed in with a Gemini API key, through `GOOGLE_GEMINI_BASE_URL`.
    GeminiCli,
    /// Aider (`aider`), an OpenAI-compatible base URL on its command line.
    Aider,
    /// Any OpenAI client: its base URL.
    OpenAi,
    /// Any Anthropic client: its base URL.
    Anthropic,
}

impl SetupClient {
    /// Every client, in the order the banner and the quick pick show them.
    pub const ALL: [SetupClient; 11] = [
        SetupClient::ClaudeCode,
        SetupClient::Codex,
        SetupClient::GeminiCli,
        SetupClient::Cline,
        SetupClient::Roo,
        SetupClient::Continue,
        SetupClient::QwenCode,
        SetupClient::OpenCode,
        SetupClient::Aider,
        SetupClient::OpenAi,
        SetupClient::Anthropic,
    ];

    /// The client's id, as hosts name it (`claude-code`, `codex`, …).
    pub fn id(self) -> &'static str {
        match self {
            SetupClient::ClaudeCode => "claude-code",
            SetupClient::Codex => "codex",
            SetupClient::Cline => "cline",
            SetupClient::Roo => "roo",
            SetupClient::Continue => "continue",
            SetupClient::QwenCode => "qwen-code",
            SetupClient::OpenCode => "opencode",
            SetupClient::GeminiCli => "gemini-cli",
            SetupClient::Aider => "aider",
            SetupClient::OpenAi => "openai",
            SetupClient::Anthropic => "anthropic",
        }
    }

    /// The client by id.
    pub fn from_id(id: &str) -> Option<SetupClient> {
        SetupClient::ALL.into_iter().find(|c| c.id() == id)
    }

    /// The client's name, as its users know it.
    pub fn name(self) -> &'static str {
        match self {
            SetupClient::ClaudeCode => "Claude Code",
            SetupClient::Codex => "Codex",
            SetupClient::Cline => "Cline",
            SetupClient::Roo => "Roo Code",
            SetupClient::Continue => "Continue",
            SetupClient::QwenCode => "Qwen Code",
            SetupClient::OpenCode => "OpenCode",
            SetupClient::GeminiCli => "Gemini CLI",
            SetupClient::Aider => "Aider",
            SetupClient::OpenAi => "Other OpenAI clients",
            SetupClient::Anthropic => "Other Anthropic clients",
        }
    }

    /// Where the lines go, in a few words.
    pub fn place(self) -> &'static str {
        match self {
            SetupClient::ClaudeCode => "the shell that starts claude",
            SetupClient::Codex => "~/.codex/config.toml",
            SetupClient::Cline | SetupClient::Roo => "the extension's API provider settings",
            SetupClient::Continue => "~/.continue/config.yaml",
            SetupClient::QwenCode => "the shell that starts qwen",
            SetupClient::OpenCode => "opencode.json, in the project or ~/.config/opencode",
            SetupClient::GeminiCli => "the shell that starts gemini, signed in with a Gemini API key",
            SetupClient::Aider => "the shell that starts aider (its key from OPENAI_API_KEY)",
            SetupClient::OpenAi | SetupClient::Anthropic => "the client's base URL setting",
        }
    }

    /// The lines to copy for a gateway at `base`; with `token`, where the token goes (the
    /// token itself is written `<token>`: it is the user's to paste); with `recall`, the
    /// permission a client needs to read the recall files in that folder.
    pub fn lines(self, base: &str, token: bool, recall: Option<&str>) -> String {
        let header = format!("{TOKEN_HEADER}: <token>");
        match self {
            SetupClient::ClaudeCode => {
                let start = match token {
                    false => format!("ANTHROPIC_BASE_URL={base}/anthropic claude"),
                    true => format!(
                        "ANTHROPIC_BASE_URL={base}/anthropic ANTHROPIC_CUSTOM_HEADERS=\"{header}\" claude"
                    ),
                };
                match recall.and_then(claude_read_rule) {
                    Some(rule) => format!("{start} --allowedTools \"{rule}\""),
                    None => start,
                }
            }
            SetupClient::Codex => {
                let mut text = format!(
                    "model_provider = \"condense\"\n\n[model_providers.condense]\nname = \"Context Condenser\"\n\
                     base_url = \"{base}/openai/v1\"\nwire_api = \"responses\"\nenv_key = \"OPENAI_API_KEY\""
                );
                if token {
                    text.push_str(&format!("\nhttp_headers = {{ \"{TOKEN_HEADER}\" = \"<token>\" }}"));
                }
                // Signed in with ChatGPT, Codex talks to the ChatGPT backend, whose route is
                // `/chatgpt`; its built-in provider takes the base URL from the environment.
                text.push_str(&format!(
                    "\n# Signed in with ChatGPT instead: no provider here; start it as\n\
                     # OPENAI_BASE_URL={base}/chatgpt codex"
                ));
                text
            }
            SetupClient::Cline | SetupClient::Roo => {
                let mut text = format!(
                    "API provider: OpenAI Compatible\nBase URL: {base}/openai/v1\n\
                     (or API provider: Anthropic, custom base URL: {base}/anthropic)"
                );
                if token {
                    text.push_str(&format!("\nCustom header: {header}"));
                }
                text
            }
            SetupClient::Continue => {
                let mut text = format!(
                    "models:\n  - name: via Context Condenser\n    provider: openai\n    model: <model>\n    \
                     apiBase: {base}/openai/v1"
                );
                if token {
                    text.push_str(&format!(
                        "\n    requestOptions:\n      headers:\n        {TOKEN_HEADER}: <token>"
                    ));
                }
                text
            }
            SetupClient::QwenCode => with_header(
                format!("OPENAI_BASE_URL={base}/openai/v1 OPENAI_API_KEY=<key> OPENAI_MODEL=<model> qwen"),
                token,
                &header,
            ),
            SetupClient::OpenCode => {
                let headers = match token {
                    true => format!(", \"headers\": {{ \"{TOKEN_HEADER}\": \"<token>\" }}"),
                    false => String::new(),
                };
                format!(
                    "\"provider\": {{\n  \"condense\": {{\n    \"npm\": \"@ai-sdk/openai-compatible\",\n    \"name\": \"Context Condenser\",\n    \
                     \"options\": {{ \"baseURL\": \"{base}/openai/v1\", \"apiKey\": \"{{env:OPENAI_API_KEY}}\"{headers} }},\n    \
                     \"models\": {{ \"<model>\": {{}} }}\n  }}\n}},\n\"model\": \"condense/<model>\""
                )
            }
            SetupClient::GeminiCli => {
                let headers = match token {
                    true => format!(" GEMINI_CLI_CUSTOM_HEADERS=\"{header}\""),
                    false => String::new(),
                };
                format!("GOOGLE_GEMINI_BASE_URL={base}/gemini GEMINI_API_KEY=<key>{headers} gemini")
            }
            SetupClient::Aider => with_header(
                format!("aider --openai-api-base {base}/openai/v1 --model openai/<model>"),
                token,
                &header,
            ),
            SetupClient::OpenAi => with_header(format!("OPENAI_BASE_URL={base}/openai/v1"), token, &header),
            SetupClient::Anthropic => {
                with_header(format!("ANTHROPIC_BASE_URL={base}/anthropic"), token, &header)
            }
        }
    }
}

/// Claude Code's permission rule that lets its `Read` tool open the files under `dir` (an
/// absolute unix path: `//` starts a rule's absolute path).
pub fn claude_read_rule(dir: &str) -> Option<String> {
    let dir = dir.trim_end_matches('/');
    (dir.starts_with('/') && !dir.contains('"')).then(|| format!("Read(/{dir}/**)"))
}

fn with_header(text: String, token: bool, header: &str) -> String {
    match token {
        true => format!("{text}\n(and the header `{header}` on every request)"),
        false => text,
    }
}

/// A variable a host puts in the environment of the terminals it opens while the gateway runs,
/// so that an agent started there sends its requests through the gateway with no setup of its
/// own; and who reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalVariable {
    /// Its name.
    pub name: &'static str,
    /// Its value, for a gateway at `base`.
    pub value: String,
    /// The agents that read it, as their users know them.
    pub read_by: &'static str,
}

/// The variables that send the agents started in a terminal through a gateway at `base`:
/// `ANTHROPIC_BASE_URL`, which Claude Code (signed in with an API key or a subscription: its
/// credentials pass through) and Anthropic's SDKs read; `GOOGLE_GEMINI_BASE_URL`, which Gemini
/// CLI reads when signed in with a Gemini API key (signed in with Google it talks to Code
/// Assist and does not read it). Not `OPENAI_BASE_URL`: Codex's built-in
/// provider reads it whatever the sign-in, and a Codex signed in with ChatGPT would then send its
/// ChatGPT token to the gateway's OpenAI upstream, which refuses it; OpenAI clients keep their
/// setup lines until the gateway serves the ChatGPT backend.
pub fn terminal_variables(base: &str) -> Vec<TerminalVariable> {
    vec![
        TerminalVariable {
            name: "ANTHROPIC_BASE_URL",
            value: format!("{base}/anthropic"),
            read_by: "Claude Code and Anthropic SDK clients",
        },
        TerminalVariable {
            name: "GOOGLE_GEMINI_BASE_URL",
            value: format!("{base}/gemini"),
            read_by: "Gemini CLI with a Gemini API key",
        },
    ]
}

/// Every client's setup, as the start banner prints it (`recall`: see [`SetupClient::lines`]).
pub fn setup_text(base: &str, token: bool, recall: Option<&str>) -> String {
    let mut text = String::from(
        "Point your agent at it (its API key passes through to the upstream and is never stored):\n",
    );
    for client in SetupClient::ALL {
        let lines = client.lines(base, token, recall).replace('\n', "\n  ");
        text.push_str(&format!("\n{} ({}):\n  {lines}\n", client.name(), client.place()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_gets_its_route_and_the_token_only_when_set() {
        let base = "http://127.0.0.1:4141";
        assert_eq!(
            SetupClient::ClaudeCode.lines(base, false, None),
            "ANTHROPIC_BASE_URL=http://127.0.0.1:4141/anthropic claude"
        );
        assert_eq!(
            SetupClient::ClaudeCode.lines(base, false, Some("/home/me/state/recall")),
            "ANTHROPIC_BASE_URL=http://127.0.0.1:4141/anthropic claude --allowedTools \"Read(//home/me/state/recall/**)\""
        );
        assert_eq!(claude_read_rule(r"C:\state\recall"), None);
        assert_eq!(
            SetupClient::Codex.lines(base, false, None),
            SetupClient::Codex.lines(base, false, Some("/r"))
        );
        assert!(
            SetupClient::Codex
                .lines(base, false, None)
                .contains("base_url = \"http://127.0.0.1:4141/openai/v1\"")
        );
        assert!(SetupClient::Codex.lines(base, false, None).contains("wire_api = \"responses\""));
        assert!(
            SetupClient::Codex
                .lines(base, false, None)
                .contains("# OPENAI_BASE_URL=http://127.0.0.1:4141/chatgpt codex")
        );
        assert!(
            SetupClient::Continue
                .lines(base, false, None)
                .contains("apiBase: http://127.0.0.1:4141/openai/v1")
        );
        assert!(
            SetupClient::QwenCode
                .lines(base, false, None)
                .starts_with("OPENAI_BASE_URL=http://127.0.0.1:4141/openai/v1 ")
        );
        // OpenCode's lines are the members of its config object, as tests/agents writes them.
        let opencode = format!("{{{}}}", SetupClient::OpenCode.lines(base, true, None));
        let config: serde_json::Value =
            serde_json::from_str(&opencode).expect("OpenCode's lines are JSON members");
        assert_eq!(config["provider"]["condense"]["options"]["baseURL"], "http://127.0.0.1:4141/openai/v1");
        assert_eq!(config["provider"]["condense"]["options"]["headers"][TOKEN_HEADER], "<token>");
        assert_eq!(config["model"], "condense/<model>");
        for client in SetupClient::ALL {
            assert_eq!(SetupClient::from_id(client.id()), Some(client));
            assert!(!client.lines(base, false, None).contains(TOKEN_HEADER), "{client:?}");
            assert!(client.lines(base, true, None).contains(TOKEN_HEADER), "{client:?}");
        }
        let variables = terminal_variables(base);
        let anthropic = variables.iter().find(|v| v.name == "ANTHROPIC_BASE_URL").expect("Claude Code's");
        // The terminal's variable is the one the setup line gives Claude Code.
        assert!(
            SetupClient::ClaudeCode
                .lines(base, false, None)
                .starts_with(&format!("ANTHROPIC_BASE_URL={} ", anthropic.value))
        );
        let gemini = variables.iter().find(|v| v.name == "GOOGLE_GEMINI_BASE_URL").expect("Gemini CLI's");
        assert!(
            SetupClient::GeminiCli
                .lines(base, false, None)
                .starts_with(&format!("GOOGLE_GEMINI_BASE_URL={} ", gemini.value))
        );
        assert!(
            variables.iter().all(|v| v.name != "OPENAI_BASE_URL"),
            "a ChatGPT sign-in of Codex would break"
        );
        let all = setup_text(base, false, None);
        assert!(all.contains("Claude Code (the shell that starts claude):\n  ANTHROPIC_BASE_URL="));
    }
}
