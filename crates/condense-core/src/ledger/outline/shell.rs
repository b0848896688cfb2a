//! The symbols of shell scripts and of the files written in their manner: a script's functions,
//! a Makefile's or justfile's targets, a Dockerfile's stages, entry point, ports and the names of
//! its build arguments and environment (never their values).

use super::lines::{Found, ident};

/// What a line of a shell script, Makefile or justfile defines: a function (`name() {`,
/// `function name`) or a target (`name:`), at the start of the line.
pub(super) fn shell(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    if let Some(rest) = t.strip_prefix("function ") {
        return Some(("function", ident(rest)));
    }
    let name = ident(t);
    let rest = &t[name.len()..];
    if indent == 0
        && !name.is_empty()
        && (rest.starts_with("()") || rest.starts_with(':') && !rest.starts_with(":="))
    {
        return Some((if rest.starts_with(':') { "target" } else { "function" }, name));
    }
    None
}

/// The programs that run what their next word names (`python -m uvicorn`, `npm run start`,
/// `node dist/server.js`): a command's head names that word too.
const RUNNERS: &[&str] = &[
    "python", "python3", "node", "npm", "npx", "pnpm", "yarn", "bun", "deno", "java", "dotnet", "ruby",
    "bundle", "php", "sh", "bash", "uv", "poetry", "pipenv",
];

/// The words of a runner's that take the next word as what it runs (`-m uvicorn`, `run start`).
const RUNNER_FLAGS: &[&str] = &["-m", "run", "exec", "-jar", "-c"];

/// The head of the command a `CMD` or `ENTRYPOINT` runs, in the exec form (`["python", "-m",
/// "app"]`) or the shell form (`python -m app`): the program, and for a runner what it runs.
fn command_head(args: &str) -> String {
    let args = args.trim();
    let words: Vec<&str> = match args.strip_prefix('[') {
        // The exec form: the first word of each quoted element (`"exec gunicorn app:app"`).
        Some(list) => list
            .split('"')
            .skip(1)
            .step_by(2)
            .filter_map(|w| w.split_whitespace().find(|w| *w != "exec"))
            .collect(),
        None => args.split_whitespace().filter(|w| *w != "exec").collect(),
    };
    let Some(&program) = words.first() else { return String::new() };
    let mut head = vec![program];
    let base = program.rsplit('/').next().unwrap_or(program);
    if RUNNERS.contains(&base)
        && let Some(&next) = words.get(1)
    {
        head.push(next);
        if RUNNER_FLAGS.contains(&next)
            && let Some(&then) = words.get(2)
        {
            head.push(then);
        }
    }
    head.join(" ").chars().take(60).collect()
}

/// The names of `NAME=value` pairs (`ENV A=1 B="x y"`) and bare names (`ARG A B=2`), or with
/// `old_form`, when the first word holds no `=`, the one name of `ENV NAME the value`: never the
/// values.
fn assigned_names(rest: &str, old_form: bool) -> Vec<String> {
    let rest = rest.trim();
    let is_name = |c: &char| c.is_ascii_alphanumeric() || *c == '_';
    let first = rest.split_whitespace().next().unwrap_or("");
    if old_form && !first.contains('=') {
        let name: String = first.chars().take_while(is_name).collect();
        return if name.is_empty() { Vec::new() } else { vec![name] };
    }
    let mut out = Vec::new();
    let mut chars = rest.chars().peekable();
    while chars.peek().is_some() {
        let name: String = std::iter::from_fn(|| chars.next_if(is_name)).collect();
        match chars.next() {
            // The value, skipped: quoted (with its escapes), else up to the next space.
            Some('=') => match chars.next_if(|c| matches!(c, '"' | '\'')) {
                Some(quote) => {
                    while let Some(c) = chars.next() {
                        if c == '\\' {
                            chars.next();
                        } else if c == quote {
                            break;
                        }
                    }
                }
                None => while chars.next_if(|c| !c.is_whitespace()).is_some() {},
            },
            Some(c) if c.is_whitespace() => {}
            None => {}
            // Not a name: the rest is not read.
            Some(_) => return out,
        }
        if !name.is_empty() {
            out.push(name);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
    }
    out
}

/// What one instruction of a Dockerfile (its continuation lines joined) names: a stage
/// (`FROM image AS stage`), the head of its `CMD` or `ENTRYPOINT`, the ports it exposes, the
/// names of its `ENV` and `ARG` (never their values).
fn instruction(text: &str) -> Vec<(&'static str, String)> {
    let t = text.trim_start();
    let word = t.split_whitespace().next().unwrap_or("");
    let rest = t[word.len()..].trim();
    match word.to_ascii_uppercase().as_str() {
        "FROM" => {
            let words: Vec<&str> = rest.split_whitespace().filter(|w| !w.starts_with("--")).collect();
            match words.as_slice() {
                [image, as_, stage, ..] if as_.eq_ignore_ascii_case("as") => {
                    vec![("FROM", format!("{image} AS {stage}"))]
                }
                [image, ..] => vec![("FROM", (*image).to_owned())],
                [] => Vec::new(),
            }
        }
        "CMD" => vec![("CMD", command_head(rest))],
        "ENTRYPOINT" => vec![("ENTRYPOINT", command_head(rest))],
        "EXPOSE" => vec![("EXPOSE", rest.split_whitespace().collect::<Vec<_>>().join(" "))],
        "ENV" => assigned_names(rest, true).into_iter().map(|n| ("ENV", n)).collect(),
        "ARG" => assigned_names(rest, false).into_iter().map(|n| ("ARG", n)).collect(),
        _ => Vec::new(),
    }
}

/// What one line of a Dockerfile names, read alone (as a diff's added line is): its first symbol.
pub(super) fn dockerfile_line(line: &str) -> Option<(&'static str, String)> {
    instruction(line).into_iter().next()
}

/// The words that end the here-documents an instruction opens (`RUN <<EOF`, `<<-"EOT"`), in
/// their order.
fn heredoc_ends(text: &str) -> Vec<String> {
    text.split("<<")
        .skip(1)
        .filter_map(|after| {
            let word = after.strip_prefix('-').unwrap_or(after);
            let word = word.split_whitespace().next()?.trim_matches(['"', '\'']);
            let word: String = word.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            (!word.is_empty()).then_some(word)
        })
        .collect()
}

/// The symbols of a Dockerfile: each instruction read whole, its continuation lines (after a
/// line ending in the escape character, `\` unless a `# escape=` directive names another)
/// joined to it, comments and here-document bodies skipped, at the line it starts.
pub(super) fn dockerfile(lines: &[(usize, &str)]) -> Vec<Found> {
    let escape = lines
        .iter()
        .take_while(|(_, l)| l.trim_start().starts_with('#'))
        .find_map(|(_, l)| l.trim_start()[1..].trim().strip_prefix("escape=")?.chars().next())
        .unwrap_or('\\');
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (n, line) = lines[i];
        i += 1;
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut whole = String::new();
        let mut part = line.trim_end();
        while let Some(before) = part.strip_suffix(escape) {
            whole.push_str(before);
            whole.push(' ');
            // The next line not a comment continues the instruction.
            while i < lines.len() && lines[i].1.trim_start().starts_with('#') {
                i += 1;
            }
            let Some(&(_, next)) = lines.get(i) else { break };
            i += 1;
            part = next.trim_end();
        }
        if !part.ends_with(escape) {
            whole.push_str(part);
        }
        for end in heredoc_ends(&whole) {
            while i < lines.len() && lines[i].1.trim() != end {
                i += 1;
            }
            i += 1;
        }
        out.extend(instruction(&whole).into_iter().map(|(kind, name)| (n, kind, name)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{outline, rendered};

    #[test]
    fn a_dockerfile_outlines_its_stages_entry_ports_and_names() {
        let text = "     1→# syntax=docker/dockerfile:1.7\n     2→ARG PYTHON_VERSION=3.12\n     3→FROM --platform=$BUILDPLATFORM python:${PYTHON_VERSION}-slim AS build\n     4→WORKDIR /app\n     5→COPY requirements.txt .\n     6→RUN pip install --no-cache-dir \\\n     7→      -r requirements.txt \\\n     8→    # the wheels only\n     9→    && rm -rf /root/.cache\n    10→RUN <<EOF\n    11→FROM inside a heredoc\n    12→EOF\n    13→\n    14→FROM python:3.12-slim\n    15→ENV PYTHONUNBUFFERED=1 \\\n    16→    STRIPE_KEY=\"sk-live-123\" \\\n    17→    APP_HOME=/app\n    18→ENV LEGACY_TOKEN sk-live-123\n    19→ARG GIT_SHA BUILD_DATE=today\n    20→EXPOSE 8000 9090/udp\n    21→ENTRYPOINT [\"/usr/bin/tini\", \"--\"]\n    22→CMD [\"python\", \"-m\", \"uvicorn\", \"app.main:app\", \"--host\", \"0.0.0.0\"]";
        let shown = rendered("services/api/Dockerfile", text, 1);
        assert_eq!(
            shown,
            [
                "ARG PYTHON_VERSION l.2",
                "FROM python:${PYTHON_VERSION}-slim AS build l.3",
                "FROM python:3.12-slim l.14",
                "ENV PYTHONUNBUFFERED l.15",
                "ENV STRIPE_KEY l.15",
                "ENV APP_HOME l.15",
                "ENV LEGACY_TOKEN l.18",
                "ARG GIT_SHA l.19",
                "ARG BUILD_DATE l.19",
                "EXPOSE 8000 9090/udp l.20",
                "ENTRYPOINT /usr/bin/tini l.21",
                "CMD python -m uvicorn l.22"
            ]
        );
        assert!(shown.iter().all(|s| !s.contains("sk-live") && !s.contains("today")), "{shown:?}");
    }

    #[test]
    fn dockerfile_names_and_shell_forms() {
        let cat_n = "     1\tFROM node:20-alpine AS deps\n     2\tFROM deps as runner\n     3\tCMD npm run start\n     4\tENTRYPOINT [\"sh\", \"-c\", \"exec gunicorn app:app\"]";
        let want = [
            "FROM node:20-alpine AS deps l.1",
            "FROM deps AS runner l.2",
            "CMD npm run start l.3",
            "ENTRYPOINT sh -c gunicorn l.4",
        ];
        for path in ["Dockerfile", "docker/Dockerfile.prod", "api.dockerfile", "Containerfile"] {
            assert_eq!(rendered(path, cat_n, 1), want, "{path}");
        }
        assert!(rendered("Dockerfile.dockerignore", cat_n, 1).is_empty());
        // A Windows Dockerfile continues its lines with a backquote.
        let windows = "# escape=`\nFROM mcr.microsoft.com/windows/servercore:ltsc2022\nENV A=1 `\n    B=2";
        assert_eq!(
            rendered("Dockerfile", windows, 1),
            ["FROM mcr.microsoft.com/windows/servercore:ltsc2022 l.2", "ENV A l.3", "ENV B l.3"]
        );
        // A diff's hunk places in a Dockerfile are read for their names, as its added lines are.
        let diff = "+++ b/Dockerfile\n@@ -1,3 +1,4 @@ ENV SECRET=sk-live-123\n+FROM golang:1.22 AS build\n+ENV SECRET=sk-live-123\n@@ -9,2 +9,3 @@ RUN make\n+EXPOSE 80";
        assert_eq!(
            outline("x.diff", diff, 1, 10).iter().map(|s| s.render()).collect::<Vec<_>>(),
            [
                "file Dockerfile l.1",
                "hunk in SECRET l.2",
                "+ golang:1.22 AS build l.3",
                "+ SECRET l.4",
                "+ 80 l.6"
            ]
        );
    }
}
