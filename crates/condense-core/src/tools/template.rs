//! Command templates: split into arguments first (whitespace outside quotes), placeholders found
//! inside each argument, and only then values put in. A value is never split, re-read or
//! quoted: a prompt with spaces, quotes, `$` or newlines stays one argument, and no shell sees it.

use crate::host::ArgPart;

/// One piece of a template's argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text.
    Text(String),
    /// `{binary}`: the program (the first argument only).
    Binary,
    /// `{model}`.
    Model,
    /// `{prompt}`: the whole prompt.
    Prompt,
    /// `{prompt_file}`: the temporary file holding the prompt.
    PromptFile,
    /// `{output_file}`: the temporary file the program writes its answer to.
    OutputFile,
}

/// The placeholders a template may use.
pub const PLACEHOLDERS: [&str; 5] = ["{binary}", "{model}", "{prompt}", "{prompt_file}", "{output_file}"];

/// A template split into arguments (the first is `{binary}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The arguments after the program, each a list of pieces.
    pub args: Vec<Vec<Piece>>,
}

impl Template {
    /// Whether an argument uses `placeholder` (`{prompt}`, …).
    pub fn mentions(&self, placeholder: &str) -> bool {
        let wanted = piece_of(placeholder.trim_matches(['{', '}']));
        self.args.iter().flatten().any(|p| Some(p) == wanted.as_ref())
    }

    /// The program's arguments, with the values in: each template argument is one argument,
    /// whatever the values hold.
    pub fn arguments(&self, model: &str, prompt: &str) -> Vec<Vec<ArgPart>> {
        self.args
            .iter()
            .map(|pieces| {
                let mut parts: Vec<ArgPart> = Vec::new();
                let push_text = |parts: &mut Vec<ArgPart>, s: &str| match parts.last_mut() {
                    Some(ArgPart::Text { text }) => text.push_str(s),
                    _ => parts.push(ArgPart::Text { text: s.to_owned() }),
                };
                for piece in pieces {
                    match piece {
                        Piece::Text(t) => push_text(&mut parts, t),
                        Piece::Model => push_text(&mut parts, model),
                        Piece::Prompt => push_text(&mut parts, prompt),
                        Piece::PromptFile => parts.push(ArgPart::PromptFile),
                        Piece::OutputFile => parts.push(ArgPart::OutputFile),
                        // Rejected after the first argument by the parser.
                        Piece::Binary => {}
                    }
                }
                if parts.is_empty() {
                    parts.push(ArgPart::Text { text: String::new() });
                }
                parts
            })
            .collect()
    }
}

fn piece_of(name: &str) -> Option<Piece> {
    Some(match name {
        "binary" => Piece::Binary,
        "model" => Piece::Model,
        "prompt" => Piece::Prompt,
        "prompt_file" => Piece::PromptFile,
        "output_file" => Piece::OutputFile,
        _ => return None,
    })
}

/// Splits a template into words: whitespace separates them outside quotes; `'…'` is literal,
/// `"…"` is literal but for `\"` and `\\`. An empty quoted word (`""`) is an argument.
fn words(template: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a ' quote is not closed".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err("a \" quote is not closed".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("a \" quote is not closed".into()),
                    }
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// The pieces of one word: text, and `{placeholder}`s; `{{` and `}}` are literal braces.
fn pieces(word: &str) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut rest = word;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("{{") || rest.starts_with("}}") {
            text.push(c);
            rest = &rest[2..];
        } else if c == '{' {
            let end = rest.find('}').ok_or_else(|| format!("a {{ is not closed in {word:?}"))?;
            let name = &rest[1..end];
            let piece = piece_of(name).ok_or_else(|| {
                format!("unknown placeholder {{{name}}}; the placeholders are {}", PLACEHOLDERS.join(" "))
            })?;
            if !text.is_empty() {
                out.push(Piece::Text(std::mem::take(&mut text)));
            }
            out.push(piece);
            rest = &rest[end + 1..];
        } else if c == '}' {
            return Err(format!("a }} has no {{ in {word:?} (write }}}} for a brace)"));
        } else {
            text.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if !text.is_empty() || out.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

/// Parses a command template: `{binary}` first, on its own.
pub fn parse_template(template: &str) -> Result<Template, String> {
    let mut words = words(template)?.into_iter();
    match words.next().as_deref() {
        Some("{binary}") => {}
        Some(other) => return Err(format!("the first word must be {{binary}}, not {other:?}")),
        None => return Err("it is empty".into()),
    }
    let args = words.map(|w| pieces(&w)).collect::<Result<Vec<_>, _>>()?;
    if args.iter().flatten().any(|p| *p == Piece::Binary) {
        return Err("{binary} may only be the first word".into());
    }
    Ok(Template { args })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn text(s: &str) -> ArgPart {
        ArgPart::Text { text: s.into() }
    }

    #[test]
    fn templates_split_on_whitespace_outside_quotes() {
        let t = parse_template(
            r#"{binary} -p "Follow the \"rules\"" 'a b' --out={output_file} {prompt_file} """#,
        )
        .unwrap();
        assert_eq!(t.args.len(), 6);
        let argv = t.arguments("m", "p");
        assert_eq!(argv[0], [text("-p")]);
        assert_eq!(argv[1], [text("Follow the \"rules\"")]);
        assert_eq!(argv[2], [text("a b")]);
        assert_eq!(argv[3], [text("--out="), ArgPart::OutputFile]);
        assert_eq!(argv[4], [ArgPart::PromptFile]);
        assert_eq!(argv[5], [text("")]);
        assert!(t.mentions("{output_file}") && t.mentions("{prompt_file}") && !t.mentions("{prompt}"));
    }

    #[test]
    fn bad_templates_say_why() {
        assert!(parse_template("claude -p").unwrap_err().contains("first word must be {binary}"));
        assert!(parse_template("{binary} {nope}").unwrap_err().contains("unknown placeholder {nope}"));
        assert!(parse_template("{binary} 'open").unwrap_err().contains("not closed"));
        assert!(parse_template("{binary} {binary}").unwrap_err().contains("only be the first"));
        assert!(parse_template("{binary} a}").unwrap_err().contains("has no {"));
        assert!(parse_template("").unwrap_err().contains("empty"));
        let t = parse_template("{binary} {{literal}}").unwrap();
        assert_eq!(t.arguments("m", "p")[0], [text("{literal}")]);
    }

    fn hostile() -> impl Strategy<Value = String> {
        // Spaces, quotes, `$`, backticks, newlines, braces, placeholders' own names, Unicode.
        proptest::collection::vec(
            prop_oneof![
                Just(" ".to_owned()),
                Just("'".to_owned()),
                Just("\"".to_owned()),
                Just("$HOME".to_owned()),
                Just("$(rm -rf /)".to_owned()),
                Just("`id`".to_owned()),
                Just("\n".to_owned()),
                Just("\\".to_owned()),
                Just(";|&><*?".to_owned()),
                Just("{prompt}".to_owned()),
                Just("{model}".to_owned()),
                Just("{{".to_owned()),
                Just("é—🦀".to_owned()),
                "[a-zA-Z0-9._/-]{0,8}",
            ],
            0..12,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        /// Every value is carried as exactly one argument, unchanged, wherever it sits in the
        /// template, and is never read as template syntax; the prompt and output files are parts
        /// of their own argument (the host puts each path in whole, whatever it holds), after
        /// any literal text of the template, quoted or not.
        #[test]
        fn values_stay_one_argument_each(
            model in hostile(),
            prompt in hostile(),
            prefix in "[a-z-]{0,6}=?",
            quoted in "[a-z $`;|&<>*?-]{0,8}",
        ) {
            let template = format!(
                "{{binary}} --model {{model}} {prefix}{{prompt}} '{{model}} and {{prompt}}' {{prompt_file}} \
                 {prefix}{{output_file}} '{quoted}{{prompt_file}}'"
            );
            let t = parse_template(&template).unwrap();
            let argv = t.arguments(&model, &prompt);
            prop_assert_eq!(argv.len(), 7);
            prop_assert_eq!(&argv[0], &vec![text("--model")]);
            prop_assert_eq!(&argv[1], &vec![text(&model)]);
            prop_assert_eq!(&argv[2], &vec![text(&format!("{prefix}{prompt}"))]);
            prop_assert_eq!(&argv[3], &vec![text(&format!("{model} and {prompt}"))]);
            prop_assert_eq!(&argv[4], &vec![ArgPart::PromptFile]);
            let file_after = |literal: &str, file: ArgPart| {
                if literal.is_empty() { vec![file] } else { vec![text(literal), file] }
            };
            prop_assert_eq!(&argv[5], &file_after(&prefix, ArgPart::OutputFile));
            prop_assert_eq!(&argv[6], &file_after(&quoted, ArgPart::PromptFile));
        }
    }
}
