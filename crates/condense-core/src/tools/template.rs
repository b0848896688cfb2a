//! Command templates: split into arguments first (whitespace outside quotes), placeholders found
//! inside each argument, and only then values put in. A value is never split, re-read or
//! quoted: a prompt with spaces, quotes, `$` or newlines stays one argument, and no shell sees it.
//!
//! Shell syntax written in the template itself (outside quotes) is read as a shell would read
//! it, so that it is never passed on as a literal argument: `< {prompt_file}` means the prompt on
//! standard input (seed 002 writes `{binary} --model {model} < {prompt_file}`), and any other
//! operator — `|`, `>`, `>>`, `&&`, `||`, `;`, `&`, a backtick, `$(` — is refused, naming it.

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
    /// Where `< {prompt_file}` is written (the byte offset of its `<`), when it is: the prompt
    /// goes to the program's standard input, as with `prompt_via: stdin`; neither token is an
    /// argument, and no shell is involved.
    pub stdin_redirect: Option<usize>,
}

/// A command template that cannot be used: why, and where in it when that is one place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    /// What is wrong.
    pub message: String,
    /// The byte offset in the template of what is wrong (a shell operator), when known.
    pub at: Option<usize>,
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

/// A token of a template: a word (an argument, or the program), or shell syntax.
enum Token {
    /// A word, its quotes taken off.
    Word(String),
    /// A shell operator written outside quotes, and the byte offset where it starts.
    Operator { op: &'static str, at: usize },
}

/// The shell operators a template may not use as such, the longer first (`||` before `|`).
const OPERATORS: [&str; 11] = ["&&", "||", ">>", "<<", "$(", "|", "&", ";", ">", "<", "`"];

/// The operators a shell acts on inside double quotes too: command substitutions.
const IN_DOUBLE_QUOTES: [&str; 2] = ["$(", "`"];

fn operator_at(template: &str, i: usize, set: &[&'static str]) -> Option<&'static str> {
    set.iter().copied().find(|op| template[i..].starts_with(op))
}

/// The error of a shell operator written in a template: no shell reads the template, so it
/// would reach the program as a literal argument, which is never what it meant.
fn operator_error(op: &str, at: usize) -> TemplateError {
    let what = match op {
        "|" => "a pipe into another program",
        "||" => "runs another command when one fails",
        "&&" => "runs another command after one",
        ";" => "separates commands",
        "&" => "runs a command in the background",
        ">" | ">>" => "sends the output to a file",
        "<" | "<<" => "reads the input from elsewhere",
        _ => "substitutes a command's output",
    };
    let message = if op == "<" {
        format!(
            "`<` ({what}) is understood only as `< {{prompt_file}}`, once: the prompt on standard \
             input; quote it ('<') to pass it to the program as an argument"
        )
    } else {
        format!(
            "`{op}` ({what}) is shell syntax, and no shell runs this command; quote it ('{op}') to \
             pass it to the program as an argument"
        )
    };
    TemplateError { message, at: Some(at) }
}

/// Splits a template into words and shell operators: whitespace separates words outside quotes;
/// `'…'` is literal, `"…"` is literal but for `\"` and `\\`. An empty quoted word (`""`) is an
/// argument. An operator outside quotes (`|`, `>`, `&&`, …), or a command substitution even
/// inside double quotes (`` ` ``, `$(`), is a token of its own, as a shell reads it.
fn tokens(template: &str) -> Result<Vec<Token>, TemplateError> {
    let unclosed =
        |quote: char| TemplateError { message: format!("a {quote} quote is not closed"), at: None };
    let mut tokens = Vec::new();
    let mut word: Option<String> = None;
    let mut i = 0;
    while let Some(c) = template[i..].chars().next() {
        if c.is_whitespace() {
            tokens.extend(word.take().map(Token::Word));
            i += c.len_utf8();
        } else if let Some(op) = operator_at(template, i, &OPERATORS) {
            tokens.extend(word.take().map(Token::Word));
            tokens.push(Token::Operator { op, at: i });
            i += op.len();
        } else if c == '\'' {
            let rest = &template[i + 1..];
            let end = rest.find('\'').ok_or_else(|| unclosed('\''))?;
            word.get_or_insert_with(String::new).push_str(&rest[..end]);
            i += end + 2;
        } else if c == '"' {
            let w = word.get_or_insert_with(String::new);
            i += 1;
            loop {
                if let Some(op) = operator_at(template, i, &IN_DOUBLE_QUOTES) {
                    return Err(operator_error(op, i));
                }
                match template[i..].chars().next() {
                    Some('"') => {
                        i += 1;
                        break;
                    }
                    Some('\\') => match template[i + 1..].chars().next() {
                        Some(c @ ('"' | '\\')) => {
                            w.push(c);
                            i += 2;
                        }
                        Some(c) => {
                            w.push('\\');
                            w.push(c);
                            i += 1 + c.len_utf8();
                        }
                        None => return Err(unclosed('"')),
                    },
                    Some(c) => {
                        w.push(c);
                        i += c.len_utf8();
                    }
                    None => return Err(unclosed('"')),
                }
            }
        } else {
            word.get_or_insert_with(String::new).push(c);
            i += c.len_utf8();
        }
    }
    tokens.extend(word.map(Token::Word));
    Ok(tokens)
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

/// Parses a command template: `{binary}` first, on its own. `< {prompt_file}` (seed 002's way
/// of saying it) puts the prompt on standard input, and neither token is an argument; any other
/// shell operator is refused, naming it.
pub fn parse_template(template: &str) -> Result<Template, TemplateError> {
    let mut words = Vec::new();
    let mut stdin_redirect = None;
    let mut tokens = tokens(template)?.into_iter();
    while let Some(token) = tokens.next() {
        match token {
            Token::Word(w) => words.push(w),
            Token::Operator { op: "<", at } => match tokens.next() {
                Some(Token::Word(w)) if w == "{prompt_file}" && stdin_redirect.is_none() => {
                    stdin_redirect = Some(at);
                }
                _ => return Err(operator_error("<", at)),
            },
            Token::Operator { op, at } => return Err(operator_error(op, at)),
        }
    }
    let fail = |message: String| Err(TemplateError { message, at: None });
    let mut words = words.into_iter();
    match words.next().as_deref() {
        Some("{binary}") => {}
        Some(other) => return fail(format!("the first word must be {{binary}}, not {other:?}")),
        None => return fail("it is empty".into()),
    }
    let args = words.map(|w| pieces(&w)).collect::<Result<Vec<_>, _>>();
    let args = args.map_err(|message| TemplateError { message, at: None })?;
    if args.iter().flatten().any(|p| *p == Piece::Binary) {
        return fail("{binary} may only be the first word".into());
    }
    Ok(Template { args, stdin_redirect })
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
        let why = |template: &str| parse_template(template).unwrap_err().message;
        assert!(why("claude -p").contains("first word must be {binary}"));
        assert!(why("{binary} {nope}").contains("unknown placeholder {nope}"));
        assert!(why("{binary} 'open").contains("not closed"));
        assert!(why("{binary} \"open").contains("not closed"));
        assert!(why("{binary} {binary}").contains("only be the first"));
        assert!(why("{binary} a}").contains("has no {"));
        assert!(why("").contains("empty"));
        let t = parse_template("{binary} {{literal}}").unwrap();
        assert_eq!(t.arguments("m", "p")[0], [text("{literal}")]);
    }

    #[test]
    fn a_prompt_file_on_stdin_is_the_prompt_on_stdin_and_no_argument() {
        // Seed 002's sample, and the same without spaces, or before other arguments.
        for (template, at) in [
            ("{binary} --model {model} < {prompt_file}", 25),
            ("{binary} --model {model} <{prompt_file}", 25),
            ("{binary} < \"{prompt_file}\" --model {model}", 9),
        ] {
            let t = parse_template(template).unwrap();
            assert_eq!(t.stdin_redirect, Some(at), "{template}");
            assert_eq!(&template[at..=at], "<");
            assert_eq!(t.arguments("m", "p"), [[text("--model")], [text("m")]], "{template}");
            assert!(!t.mentions("{prompt_file}"), "no prompt file is made: {template}");
        }
        // The prompt file may still be an argument beside it.
        let t = parse_template("{binary} --in {prompt_file} < {prompt_file}").unwrap();
        assert_eq!(t.arguments("m", "p"), [[text("--in")], [ArgPart::PromptFile]]);
        assert!(t.mentions("{prompt_file}") && t.stdin_redirect == Some(28));
        assert_eq!(parse_template("{binary} --model {model}").unwrap().stdin_redirect, None);
    }

    #[test]
    fn every_other_shell_operator_is_refused_naming_it_where_it_is() {
        // The template, the operator named, and the text at the place reported.
        let cases = [
            ("{binary} -p {prompt} | tee log", "|", "| tee"),
            ("{binary} --x=a|b", "|", "|b"),
            ("{binary} > {output_file}", ">", "> {"),
            ("{binary} 2>&1", ">", ">&1"),
            ("{binary} >> log", ">>", ">> log"),
            ("{binary} --model {model} && echo done", "&&", "&& echo"),
            ("{binary} || echo failed", "||", "|| echo"),
            ("{binary} --model {model}; rm -rf ~", ";", "; rm"),
            ("{binary} --key `cat key`", "`", "`cat"),
            ("{binary} --key $(cat key)", "$(", "$(cat"),
            ("{binary} --key \"$(cat key)\"", "$(", "$(cat"),
            ("{binary} --key \"`cat key`\"", "`", "`cat"),
            ("{binary} --model {model} &", "&", "&"),
            ("{binary} --q=a&b", "&", "&b"),
            ("{binary} << EOF", "<<", "<< EOF"),
            ("{binary} < input.txt", "<", "< input"),
            ("{binary} < {prompt}", "<", "< {prompt}"),
            ("{binary} <", "<", "<"),
            ("{binary} < {prompt_file} < {prompt_file}", "<", "< {prompt_file}"),
            ("| {binary}", "|", "| {"),
        ];
        for (template, op, there) in cases {
            let e = parse_template(template).unwrap_err();
            assert!(e.message.starts_with(&format!("`{op}` (")), "{template}: {}", e.message);
            let at = e.at.unwrap_or_else(|| panic!("{template}: no place"));
            assert!(template[at..].starts_with(there), "{template}: at {at}");
            if op == "<" {
                assert!(e.message.contains("only as `< {prompt_file}`"), "{}", e.message);
            } else {
                assert!(e.message.contains("no shell runs this command"), "{}", e.message);
            }
        }
        assert_eq!(parse_template("{binary} < {prompt_file} < {prompt_file}").unwrap_err().at, Some(25));
    }

    #[test]
    fn quoted_operators_are_arguments_as_a_shell_would_pass_them() {
        let t =
            parse_template(r#"{binary} '|' '>' '&&' ';' '&' '<' "a > b; c" '$(id)' '`id`' "$HOME""#).unwrap();
        let expected: Vec<_> = ["|", ">", "&&", ";", "&", "<", "a > b; c", "$(id)", "`id`", "$HOME"]
            .map(|a| vec![text(a)])
            .into();
        assert_eq!(t.arguments("m", "p"), expected);
        assert_eq!(t.stdin_redirect, None);
        // A value is never read for operators: it is substituted after the template is parsed.
        let t = parse_template("{binary} --model {model} -p {prompt} < {prompt_file}").unwrap();
        let hostile = "a | b > c && `id` $(id) ; d & < e";
        assert_eq!(t.arguments(hostile, hostile)[1], [text(hostile)]);
        assert_eq!(t.arguments(hostile, hostile)[3], [text(hostile)]);
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
