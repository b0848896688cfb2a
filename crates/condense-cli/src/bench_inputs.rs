//! The token-counting benchmark's inputs, generated deterministically (a fixed-seed SplitMix64,
//! no clock, no files read), so the native benchmark (`benches/tokens.rs`) and the JavaScript one
//! count exactly the same texts: `condense bench-inputs DIR` writes them to files.
//!
//! - [`prose_and_code`]: about 1 MB of Markdown — headings, paragraphs, lists, tables — with
//!   fenced Rust, Python and TypeScript.
//! - [`tool_chat`]: a 200-message chat of an agent at work: file reads, grep output, logs, test
//!   runs and code fences, with a little non-ASCII.
//! - [`short_strings`]: 10,000 strings of 40 to 60 characters, each counted by its own call.

use condense_core::model::{ContentBlock, Conversation, Message, Role};
use serde_json::json;

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "context",
    "window",
    "token",
    "budget",
    "summary",
    "conversation",
    "message",
    "provider",
    "condensation",
    "request",
    "response",
    "function",
    "variable",
    "compiler",
    "memory",
    "performance",
    "throughput",
    "latency",
    "benchmark",
    "configuration",
    "repository",
    "dependency",
    "interface",
    "implementation",
    "architecture",
    "invariant",
    "boundary",
    "serialization",
    "allocation",
    "iterator",
    "however",
    "therefore",
    "meanwhile",
    "although",
    "because",
    "especially",
    "particularly",
    "approximately",
];

const CONTRACTIONS: &[&str] =
    &["don't", "it's", "we'll", "they're", "I've", "isn't", "you'd", "can't", "I'm"];

const NON_ASCII: &[&str] =
    &["café", "naïve", "—", "…", "“quoted”", "Zürich", "日本語", "résumé", "✓", "→", "🚀"];

const IDENTS: &[&str] = &[
    "count",
    "tokens",
    "message",
    "index",
    "buffer",
    "result",
    "config",
    "state",
    "handle",
    "value",
    "items",
    "cache",
    "offset",
    "length",
    "reader",
    "writer",
    "parse_line",
    "encode",
    "decode",
    "total",
    "limit",
];

fn sentence(r: &mut Rng, non_ascii: usize) -> String {
    let n = 6 + r.below(18);
    let mut words: Vec<String> = Vec::with_capacity(n);
    for i in 0..n {
        let w = if r.chance(4) {
            r.pick(CONTRACTIONS).to_owned()
        } else if r.chance(3) {
            (r.below(100_000)).to_string()
        } else if r.chance(non_ascii) {
            r.pick(NON_ASCII).to_owned()
        } else if r.chance(3) {
            format!("`{}`", r.pick(IDENTS))
        } else {
            r.pick(WORDS).to_owned()
        };
        let w = if i == 0 {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
        } else {
            w
        };
        words.push(w);
        if i + 1 < n && r.chance(8) {
            words.push(r.pick(&[",", ";", ":", " —"]).trim_start_matches(' ').to_owned());
        }
    }
    let mut s = words.join(" ").replace(" ,", ",").replace(" ;", ";").replace(" :", ":");
    s.push_str(r.pick(&[".", ".", ".", "?", "!"]));
    s
}

fn paragraph(r: &mut Rng, non_ascii: usize) -> String {
    (0..2 + r.below(5)).map(|_| sentence(r, non_ascii)).collect::<Vec<_>>().join(" ")
}

fn rust_code(r: &mut Rng) -> String {
    let name = r.pick(IDENTS);
    let arg = r.pick(IDENTS);
    let n = r.below(1000);
    format!(
        "/// Returns the {name} of the {arg}s, in order.\npub fn {name}_{n}({arg}: &[u32], limit: usize) -> Result<Vec<u32>, Error> {{\n    let mut out = Vec::with_capacity({arg}.len());\n    for (i, x) in {arg}.iter().enumerate() {{\n        if i >= limit {{\n            return Err(Error::TooMany {{ got: i, max: limit }});\n        }}\n        out.push(x.wrapping_mul({n}) ^ 0x{n:04x});\n    }}\n    Ok(out)\n}}\n"
    )
}

fn python_code(r: &mut Rng) -> String {
    let name = r.pick(IDENTS);
    let n = r.below(100);
    format!(
        "def {name}(path, *, retries={n}):\n    \"\"\"Read {name} from a file; retry on failure.\"\"\"\n    for attempt in range(retries):\n        try:\n            with open(path, encoding=\"utf-8\") as f:\n                return [line.rstrip(\"\\n\") for line in f if line.strip()]\n        except OSError as e:\n            print(f\"attempt {{attempt}}: {{e}}\")\n    return []\n"
    )
}

fn ts_code(r: &mut Rng) -> String {
    let name = r.pick(IDENTS);
    let n = r.below(500);
    format!(
        "export async function {name}(items: readonly string[], opts?: {{ limit?: number }}): Promise<Map<string, number>> {{\n  const out = new Map<string, number>();\n  for (const item of items.slice(0, opts?.limit ?? {n})) {{\n    out.set(item, (out.get(item) ?? 0) + item.length);\n  }}\n  return out;\n}}\n"
    )
}

fn code(r: &mut Rng) -> (&'static str, String) {
    match r.below(3) {
        0 => ("rust", rust_code(r)),
        1 => ("python", python_code(r)),
        _ => ("ts", ts_code(r)),
    }
}

/// About 1 MB (at least 1,000,000 bytes) of Markdown prose with fenced source code.
pub fn prose_and_code() -> String {
    let mut r = Rng(1);
    let mut out = String::with_capacity(1_010_000);
    let mut section = 1;
    while out.len() < 1_000_000 {
        out.push_str(&format!("## {section}. {}\n\n", sentence(&mut r, 1).trim_end_matches(['.', '?', '!'])));
        section += 1;
        for _ in 0..1 + r.below(3) {
            out.push_str(&paragraph(&mut r, 1));
            out.push_str("\n\n");
        }
        match r.below(4) {
            0 => {
                for _ in 0..2 + r.below(4) {
                    out.push_str(&format!("- {}\n", sentence(&mut r, 1)));
                }
                out.push('\n');
            }
            1 => {
                out.push_str("| name | tokens | ratio |\n|------|-------:|------:|\n");
                for _ in 0..3 {
                    out.push_str(&format!(
                        "| {} | {} | {:.2} |\n",
                        r.pick(IDENTS),
                        r.below(90_000),
                        r.below(1000) as f64 / 100.0
                    ));
                }
                out.push('\n');
            }
            _ => {}
        }
        let (lang, body) = code(&mut r);
        out.push_str(&format!("```{lang}\n{body}```\n\n"));
    }
    out
}

fn file_listing(r: &mut Rng) -> String {
    let mut s = String::new();
    for line in 1..=30 + r.below(60) {
        let (_, body) = code(r);
        let text = body.lines().nth(line % 8).unwrap_or("");
        s.push_str(&format!("{line:>5}\t{text}\n"));
    }
    s
}

fn grep_output(r: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..10 + r.below(40) {
        let file = format!("src/{}/{}.rs", r.pick(IDENTS), r.pick(IDENTS));
        s.push_str(&format!(
            "{file}:{}:    let {} = {}(&{})?;\n",
            r.below(900) + 1,
            r.pick(IDENTS),
            r.pick(IDENTS),
            r.pick(IDENTS)
        ));
    }
    s
}

fn log_output(r: &mut Rng) -> String {
    let mut s = String::new();
    for i in 0..20 + r.below(60) {
        let level = r.pick(&["INFO", "INFO", "DEBUG", "WARN", "ERROR"]);
        s.push_str(&format!(
            "2025-03-{:02}T{:02}:{:02}:{:02}.{:03}Z {level:<5} [worker-{}] {} request_id={:08x} elapsed_ms={}\n",
            1 + r.below(28),
            r.below(24),
            r.below(60),
            r.below(60),
            r.below(1000),
            i % 8,
            sentence(r, 0),
            r.next() as u32,
            r.below(5000)
        ));
    }
    s
}

fn test_output(r: &mut Rng) -> String {
    let mut s = String::from("running 24 tests\n");
    for _ in 0..24 {
        let ok = !r.chance(8);
        s.push_str(&format!(
            "test {}::tests::{}_{} ... {}\n",
            r.pick(IDENTS),
            r.pick(IDENTS),
            r.below(50),
            if ok { "ok" } else { "FAILED" }
        ));
    }
    s.push_str("\nfailures:\n\n---- stdout ----\nthread 'main' panicked at src/lib.rs:42:9:\nassertion `left == right` failed\n  left: 3\n right: 4\n");
    s
}

/// A 200-message chat of an agent at work: requests, tool calls (file reads, grep, logs, tests)
/// and their results, answers with code fences, a little non-ASCII.
pub fn tool_chat() -> Conversation {
    let mut r = Rng(2);
    let mut messages = Vec::with_capacity(200);
    let mut call = 0;
    while messages.len() < 200 {
        let i = messages.len();
        match i % 4 {
            0 => messages.push(Message::new(
                format!("m{i}"),
                Role::User,
                vec![ContentBlock::text(paragraph(&mut r, 10))],
            )),
            1 => {
                call += 1;
                let (name, input) = match r.below(4) {
                    0 => ("read_file", json!({ "path": format!("src/{}.rs", r.pick(IDENTS)) })),
                    1 => (
                        "grep",
                        json!({ "pattern": format!("fn {}", r.pick(IDENTS)), "path": "src/", "-n": true }),
                    ),
                    2 => ("bash", json!({ "command": "tail -n 80 /var/log/app/server.log" })),
                    _ => (
                        "bash",
                        json!({ "command": "cargo test --workspace 2>&1 | tail -40", "timeout": 120000 }),
                    ),
                };
                messages.push(Message::new(
                    format!("m{i}"),
                    Role::Assistant,
                    vec![
                        ContentBlock::text(sentence(&mut r, 10)),
                        ContentBlock::ToolUse { id: format!("call_{call}"), name: name.into(), input },
                    ],
                ));
            }
            2 => {
                let body = match r.below(4) {
                    0 => file_listing(&mut r),
                    1 => grep_output(&mut r),
                    2 => log_output(&mut r),
                    _ => test_output(&mut r),
                };
                messages.push(Message::new(
                    format!("m{i}"),
                    Role::User,
                    vec![ContentBlock::tool_result_text(format!("call_{call}"), body)],
                ));
            }
            _ => {
                let (lang, body) = code(&mut r);
                let text =
                    format!("{}\n\n```{lang}\n{body}```\n\n{}", paragraph(&mut r, 10), sentence(&mut r, 10));
                messages.push(Message::new(format!("m{i}"), Role::Assistant, vec![ContentBlock::text(text)]));
            }
        }
    }
    Conversation::new(messages)
}

/// 10,000 strings of 40 to 60 characters.
pub fn short_strings() -> Vec<String> {
    let mut r = Rng(3);
    (0..10_000)
        .map(|_| {
            let want = 40 + r.below(21);
            let mut s = sentence(&mut r, 3);
            while s.chars().count() < want {
                s.push(' ');
                s.push_str(&sentence(&mut r, 3));
            }
            s.chars().take(want).collect()
        })
        .collect()
}

/// The texts a token count of the chat reads, in order: each text, tool name, tool input as JSON
/// and tool result text (what `TiktokenCounter::count_message` counts).
pub fn chat_texts(chat: &Conversation) -> Vec<String> {
    let mut out = Vec::new();
    for m in &chat.messages {
        for b in &m.content {
            match b {
                ContentBlock::Text { text, .. } => out.push(text.clone()),
                ContentBlock::ToolUse { name, input, .. } => {
                    out.push(name.clone());
                    out.push(input.to_string());
                }
                ContentBlock::ToolResult { content, .. } => {
                    for p in content {
                        if let condense_core::model::ToolResultPart::Text { text } = p {
                            out.push(text.clone());
                        }
                    }
                }
                ContentBlock::Image { .. } => {}
                ContentBlock::Opaque(block) => out.push(block.json()),
            }
        }
    }
    out
}
