//! Windows `.cmd` shims. `npm install -g` puts a `.cmd` file on the PATH for each program of a
//! package (npm's cmd-shim): Claude Code, Codex and Gemini CLI are found as `claude.cmd`,
//! `codex.cmd`, `gemini.cmd`. Such a file is a batch script, which only `cmd.exe` — a shell —
//! runs; Node refuses to start one without a shell, and this project never uses one. All a shim
//! does is start its program: node with the package's script (the interpreter its `#!` line
//! names, the `node.exe` beside the shim first), or an executable. [`parse_cmd_shim`] reads that
//! from the shim's text, and the adapter starts the program directly, as an argv.
//!
//! The shapes read are the ones npm's cmd-shim writes (since npm 7: the `_prog` variable; before:
//! `IF EXIST "%~dp0\node.exe"`): the last line ending in `%*` starts the program. Anything else
//! — a hand-written batch file, variables set for the program — is not guessed at: `None`.

/// What a shim starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdShim {
    /// The program or script, relative to the shim's folder, with backslashes
    /// (`node_modules\@anthropic-ai\claude-code\cli.js`).
    pub target: String,
    /// The interpreter its `#!` line names (`node`) and the interpreter's own arguments; `None`
    /// when the shim starts the target itself (an executable).
    pub interpreter: Option<Interpreter>,
}

/// The program a shim starts its script with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// Its name (`node`): the shim tries `<name>.exe` in its own folder, then the PATH.
    pub name: String,
    /// Arguments before the script (from the script's `#!` line).
    pub args: Vec<String>,
}

/// The words of a line, split on spaces and tabs outside double quotes; a quoted word keeps its
/// quotes, so a literal can be told from a variable.
fn words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                word.push(c);
            }
            ' ' | '\t' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if quoted {
        return None;
    }
    if !word.is_empty() {
        out.push(word);
    }
    Some(out)
}

/// A path relative to the shim's folder: `"%dp0%\x"` or `"%~dp0\x"`.
fn relative_to_shim(word: &str) -> Option<String> {
    let inner = word.strip_prefix('"')?.strip_suffix('"')?;
    let rest = inner.strip_prefix("%dp0%\\").or_else(|| inner.strip_prefix("%~dp0\\"))?;
    (!rest.is_empty() && !rest.contains(['%', '"'])).then(|| rest.to_owned())
}

/// A plain word: no variable, no quote, no batch operator.
fn plain(word: &str) -> bool {
    !word.is_empty() && !word.contains(['%', '"', '&', '|', '<', '>', '^', '(', ')'])
}

/// What an npm cmd-shim starts, read from its text; `None` when the text is not such a shim.
pub fn parse_cmd_shim(text: &str) -> Option<CmdShim> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    // The shim sets nothing but its own helpers: a variable for the program would be lost.
    for line in &lines {
        let lower = line.trim_start_matches('@').to_ascii_lowercase();
        if let Some(set) = lower.strip_prefix("set ") {
            let name = set.trim_start_matches('"').split('=').next().unwrap_or("").trim();
            if !matches!(name, "dp0" | "_prog" | "pathext") {
                return None;
            }
        }
    }
    let launch = lines.iter().rev().find(|l| l.ends_with("%*"))?;
    // npm 7+: `endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%" … %*`.
    let launch = match launch.rfind("title %COMSPEC% & ") {
        Some(at) => &launch[at + "title %COMSPEC% & ".len()..],
        None => launch.trim_start_matches('@'),
    };
    let mut words = words(launch)?;
    if words.pop().as_deref() != Some("%*") {
        return None;
    }
    let target = relative_to_shim(&words.pop()?)?;
    let Some((program, args)) = words.split_first() else {
        return Some(CmdShim { target, interpreter: None });
    };
    if !args.iter().all(|a| plain(a)) {
        return None;
    }
    let name = if program == "\"%_prog%\"" {
        // `SET "_prog=node"`: the fallback when no `node.exe` is beside the shim.
        lines.iter().find_map(|l| {
            let value = l.strip_prefix("SET \"_prog=")?.strip_suffix('"')?;
            (!value.starts_with("%dp0%")).then(|| value.to_owned())
        })?
    } else if let Some(exe) = relative_to_shim(program) {
        // npm 6: `"%~dp0\node.exe"  "%~dp0\…\cli.js" %*`, else `node  "%~dp0\…\cli.js" %*`.
        exe.strip_suffix(".exe").filter(|n| plain(n) && !n.contains('\\'))?.to_owned()
    } else {
        program.clone()
    };
    if !plain(&name) || name.contains(['\\', '/']) {
        return None;
    }
    Some(CmdShim { target, interpreter: Some(Interpreter { name, args: args.to_vec() }) })
}

/// Whether a located program is a batch file (`.cmd`, `.bat`), which only a shell runs.
pub fn is_batch_file(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".cmd") || lower.ends_with(".bat")
}

/// The folder of a Windows path (everything before its last `\` or `/`).
pub(super) fn windows_folder(path: &str) -> &str {
    path.rfind(['\\', '/']).map_or("", |at| &path[..at])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What npm's cmd-shim writes for a script whose first line is `#!/usr/bin/env node` (npm 7
    /// and later), lines ending in CRLF.
    fn npm_node_shim(target: &str, args: &str) -> String {
        [
            "@ECHO off",
            "GOTO start",
            ":find_dp0",
            "SET dp0=%~dp0",
            "EXIT /b",
            ":start",
            "SETLOCAL",
            "CALL :find_dp0",
            "",
            "IF EXIST \"%dp0%\\node.exe\" (",
            "  SET \"_prog=%dp0%\\node.exe\"",
            ") ELSE (",
            "  SET \"_prog=node\"",
            "  SET PATHEXT=%PATHEXT:;.JS;=;%",
            ")",
            "",
            &format!(
                "endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\" {args} \"%dp0%\\{target}\" %*"
            ),
            "",
        ]
        .join("\r\n")
    }

    #[test]
    fn an_npm_shim_starts_node_with_the_packages_script() {
        let shim =
            parse_cmd_shim(&npm_node_shim(r"node_modules\@anthropic-ai\claude-code\cli.js", "")).unwrap();
        assert_eq!(shim.target, r"node_modules\@anthropic-ai\claude-code\cli.js");
        assert_eq!(shim.interpreter, Some(Interpreter { name: "node".into(), args: vec![] }));
        let with_args = parse_cmd_shim(&npm_node_shim(r"node_modules\x\bin\x.js", "--no-warnings")).unwrap();
        assert_eq!(with_args.interpreter.unwrap().args, ["--no-warnings"]);
    }

    #[test]
    fn an_npm_shim_of_an_executable_starts_it() {
        let text = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\"%dp0%\\node_modules\\@openai\\codex\\bin\\codex.exe\"   %*\r\n";
        let shim = parse_cmd_shim(text).unwrap();
        assert_eq!(shim.target, r"node_modules\@openai\codex\bin\codex.exe");
        assert_eq!(shim.interpreter, None);
    }

    #[test]
    fn an_npm_6_shim_is_read_too() {
        let text = "@IF EXIST \"%~dp0\\node.exe\" (\r\n  \"%~dp0\\node.exe\"  \"%~dp0\\node_modules\\@google\\gemini-cli\\dist\\index.js\" %*\r\n) ELSE (\r\n  @SETLOCAL\r\n  @SET PATHEXT=%PATHEXT:;.JS;=;%\r\n  node  \"%~dp0\\node_modules\\@google\\gemini-cli\\dist\\index.js\" %*\r\n)\r\n";
        let shim = parse_cmd_shim(text).unwrap();
        assert_eq!(shim.target, r"node_modules\@google\gemini-cli\dist\index.js");
        assert_eq!(shim.interpreter, Some(Interpreter { name: "node".into(), args: vec![] }));
    }

    #[test]
    fn anything_else_is_not_guessed_at() {
        // A hand-written batch file, a variable for the program, operators, no %*.
        for text in [
            "@echo off\r\ncall \"C:\\tools\\real.bat\" %*\r\n",
            &npm_node_shim(r"a\b.js", "").replace("SETLOCAL", "SETLOCAL\r\nSET API_KEY=x"),
            &npm_node_shim(r"a\b.js", "& del x"),
            "\"%dp0%\\tool.exe\"\r\n",
            "\"%dp0%\\..\\%OTHER%\\tool.exe\" %*\r\n",
            "",
        ] {
            assert_eq!(parse_cmd_shim(text), None, "{text:?}");
        }
    }

    #[test]
    fn batch_files_and_folders() {
        assert!(is_batch_file(r"C:\Users\a\AppData\Roaming\npm\claude.CMD") && is_batch_file("x.bat"));
        assert!(!is_batch_file("claude.exe") && !is_batch_file("/usr/bin/claude"));
        assert_eq!(
            windows_folder(r"C:\Users\a\AppData\Roaming\npm\claude.cmd"),
            r"C:\Users\a\AppData\Roaming\npm"
        );
    }
}
