//! Errors and test results in a command's output, as the tools print them: compiler errors
//! with their code and location (rustc, tsc, Go, gcc/clang, ESLint), failing tests by name
//! (cargo test, pytest, Jest/Vitest, Go, JUnit-style), a Python traceback's last frame and
//! message, a JavaScript exception's first frame; the summary line of a test run; the tests a
//! run reports passing (so an earlier failure can be marked fixed). Read line by line, by the
//! tools' own formats.

/// An error or a failing test, named so a later run can be matched with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// What identifies it across runs: `E0308 src/lib.rs:40:5`, `test retry::backoff`.
    pub(crate) key: String,
    /// What it says, on one line: `error[E0308]: mismatched types at src/lib.rs:40:5`.
    pub(crate) text: String,
}

/// The most problems read from one output.
const MAX_PROBLEMS: usize = 8;
/// Characters of a problem's text.
const TEXT_CHARS: usize = 200;

fn cut(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= TEXT_CHARS {
        flat
    } else {
        flat.chars().take(TEXT_CHARS).collect::<String>() + "…"
    }
}

/// The errors and failing tests an output reports, in order, without repeats.
pub(crate) fn problems(output: &str) -> Vec<Problem> {
    let lines: Vec<&str> = output.lines().collect();
    let mut out: Vec<Problem> = Vec::new();
    let mut push = |key: String, text: String| {
        if out.len() < MAX_PROBLEMS && !out.iter().any(|p| p.key == key) {
            out.push(Problem { key, text: cut(&text) });
        }
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim();
        // rustc: `error[E0308]: mismatched types` then ` --> src/lib.rs:40:5`.
        if let Some(rest) = t.strip_prefix("error[") {
            let code: String = rest.chars().take_while(|c| *c != ']').collect();
            let message = rest.split_once("]: ").map_or("", |(_, m)| m);
            let at = lines[i + 1..].iter().take(4).find_map(|l| l.trim().strip_prefix("--> ")).unwrap_or("");
            push(format!("{code} {at}"), format!("error[{code}]: {message} at {at}"));
            i += 1;
            continue;
        }
        if let Some(message) = t.strip_prefix("error: ") {
            let at = lines[i + 1..].iter().take(3).find_map(|l| l.trim().strip_prefix("--> ")).unwrap_or("");
            // Cargo's closing lines repeat what the errors said.
            if !message.starts_with("could not compile")
                && !message.starts_with("aborting due to")
                && !message.starts_with("test failed")
            {
                let text = if at.is_empty() {
                    format!("error: {message}")
                } else {
                    format!("error: {message} at {at}")
                };
                push(format!("error {message} {at}"), text);
            }
            i += 1;
            continue;
        }
        // tsc: `src/a.ts(10,5): error TS2345: …` or `src/a.ts:10:5 - error TS2345: …`.
        if let Some((place, rest)) = t.split_once(": error TS").or_else(|| t.split_once(" - error TS")) {
            let code: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let message = rest.split_once(": ").map_or("", |(_, m)| m);
            push(format!("TS{code} {place}"), format!("error TS{code}: {message} at {place}"));
            i += 1;
            continue;
        }
        // gcc/clang/Go/ESLint-unix style: `path:line:col: error: message`.
        if let Some((place, message)) = t.split_once(": error: ").or_else(|| t.split_once(": fatal error: "))
        {
            if looks_like_place(place) {
                push(format!("error {place}"), format!("error: {message} at {place}"));
            }
            i += 1;
            continue;
        }
        // cargo test: `test retry::backoff ... FAILED`.
        if let Some(name) = t.strip_prefix("test ").and_then(|r| r.strip_suffix(" ... FAILED")) {
            push(format!("test {name}"), format!("test {name} failed"));
            i += 1;
            continue;
        }
        // A Rust panic: `thread 'x' panicked at src/x.rs:10:5:` and its message on the next line.
        if t.starts_with("thread '") && t.contains("' panicked at ") {
            let name = t["thread '".len()..].split('\'').next().unwrap_or("");
            let at = t.split("panicked at ").nth(1).unwrap_or("").trim_end_matches(':');
            let (at, inline) = at.split_once(": ").map_or((at, ""), |(a, m)| (a, m));
            let message = if inline.is_empty() { lines.get(i + 1).map_or("", |l| l.trim()) } else { inline };
            push(format!("test {name}"), format!("{name} panicked at {at}: {message}"));
            i += 1;
            continue;
        }
        // pytest: `FAILED tests/test_x.py::test_y - AssertionError: …`, `ERROR tests/…`.
        for prefix in ["FAILED ", "ERROR "] {
            if let Some(rest) = t.strip_prefix(prefix)
                && rest.contains("::")
            {
                let name = rest.split(" - ").next().unwrap_or(rest).trim();
                push(format!("test {name}"), format!("{} {rest}", prefix.trim()));
            }
        }
        // Go: `--- FAIL: TestX (0.00s)`.
        if let Some(rest) = t.strip_prefix("--- FAIL: ") {
            let name = rest.split_whitespace().next().unwrap_or("");
            push(format!("test {name}"), format!("--- FAIL: {name}"));
        }
        // Jest/Vitest: `FAIL src/a.test.ts`, `● Suite › name`, `× name`.
        if let Some(rest) = t.strip_prefix("FAIL ")
            && looks_like_place(rest.split_whitespace().next().unwrap_or(""))
        {
            let file = rest.split_whitespace().next().unwrap_or("");
            push(format!("test {file}"), format!("FAIL {file}"));
        }
        if let Some(name) = t.strip_prefix("● ").filter(|n| n.contains(" › ")) {
            push(format!("test {name}"), format!("failed: {name}"));
        }
        // A Python traceback: its last frame and the exception line.
        if t.starts_with("Traceback (most recent call last)") {
            let mut frame = "";
            let mut j = i + 1;
            while j < lines.len() {
                let l = lines[j].trim();
                if l.starts_with("File \"") {
                    frame = l;
                } else if !lines[j].starts_with(' ') && !l.is_empty() {
                    let exception = l.split(':').next().unwrap_or(l);
                    let place = frame.trim_start_matches("File ").replace('"', "");
                    push(format!("{exception} {place}"), format!("{l} ({place})"));
                    break;
                }
                j += 1;
            }
            i = j + 1;
            continue;
        }
        // A JavaScript exception and its first frame: `TypeError: x is not a function` / `at f (src/a.js:10:5)`.
        if let Some((name, _)) = t.split_once(": ")
            && (name.ends_with("Error") || name.ends_with("Exception"))
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
            && name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        {
            let frame = lines.get(i + 1).map(|l| l.trim()).filter(|l| l.starts_with("at ")).unwrap_or("");
            let place = frame.rsplit('(').next().unwrap_or("").trim_end_matches(')');
            let text = if frame.is_empty() { t.to_owned() } else { format!("{t} ({place})") };
            push(format!("{name} {place}"), text);
        }
        i += 1;
    }
    out
}

/// Whether text before `: error:` is a place: `path:line[:col]`.
fn looks_like_place(place: &str) -> bool {
    let first = place.split([':', '(']).next().unwrap_or("");
    (first.contains('/') || first.contains('.'))
        && !first.contains(' ')
        && first.chars().any(|c| c.is_ascii_alphabetic())
}

/// The tests an output reports passing (`test x ... ok`, `PASSED tests/…::x`, `--- PASS: TestX`,
/// `✓ name`), as the keys [`problems`] gives their failures.
pub(crate) fn passed(output: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in output.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("test ").and_then(|r| r.strip_suffix(" ... ok")) {
            out.push(format!("test {name}"));
        } else if let Some(rest) = t.strip_prefix("PASSED ").or_else(|| t.strip_suffix(" PASSED")) {
            out.push(format!("test {}", rest.split_whitespace().next().unwrap_or(rest)));
        } else if let Some(rest) = t.strip_prefix("--- PASS: ") {
            out.push(format!("test {}", rest.split_whitespace().next().unwrap_or("")));
        } else if let Some(rest) = t.strip_prefix("PASS ") {
            out.push(format!("test {}", rest.split_whitespace().next().unwrap_or("")));
        }
    }
    out
}

/// The line of an output that sums a test run or a build up: `test result: FAILED. 3 passed; 1
/// failed`, `=== 2 failed, 10 passed in 0.3s ===`, `Tests: 1 failed, 4 total`, `FAIL`/`ok`
/// with a package, `Found 3 errors`, `error: could not compile`. The last such line.
pub(crate) fn summary_line(output: &str) -> Option<String> {
    output
        .lines()
        .map(str::trim)
        .rfind(|l| {
            let lower = l.to_ascii_lowercase();
            lower.starts_with("test result:")
                || (l.starts_with('=')
                    && (lower.contains(" passed") || lower.contains(" failed") || lower.contains(" error")))
                || lower.starts_with("tests:")
                || lower.starts_with("test files")
                || lower.starts_with("found ") && lower.contains(" error")
                || lower.starts_with("error: could not compile")
                || lower.starts_with("ran ") && lower.contains(" test")
                || lower.starts_with("ok  \t")
                || lower.starts_with("fail\t")
                || lower.contains(" passing") && lower.chars().next().is_some_and(|c| c.is_ascii_digit())
                || lower.contains(" failing") && lower.chars().next().is_some_and(|c| c.is_ascii_digit())
        })
        .map(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(output: &str) -> Vec<String> {
        problems(output).into_iter().map(|p| p.key).collect()
    }

    #[test]
    fn rustc_and_cargo_test() {
        let out = "   Compiling x v0.1.0\nerror[E0308]: mismatched types\n  --> src/lib.rs:40:5\n   |\nerror: could not compile `x`\n";
        let p = problems(out);
        assert_eq!(p[0].key, "E0308 src/lib.rs:40:5");
        assert_eq!(p[0].text, "error[E0308]: mismatched types at src/lib.rs:40:5");
        assert_eq!(p.len(), 1);
        assert_eq!(summary_line(out).as_deref(), Some("error: could not compile `x`"));
        let test = "running 3 tests\ntest retry::backoff ... FAILED\ntest retry::ok ... ok\n\nthread 'retry::backoff' panicked at src/retry.rs:10:5:\nassertion `left == right` failed\n\ntest result: FAILED. 2 passed; 1 failed; 0 ignored";
        assert_eq!(keys(test), ["test retry::backoff"]);
        assert_eq!(summary_line(test).as_deref(), Some("test result: FAILED. 2 passed; 1 failed; 0 ignored"));
        assert_eq!(passed(test), ["test retry::ok"]);
    }

    #[test]
    fn python_typescript_jest_go() {
        let py = "Traceback (most recent call last):\n  File \"app/main.py\", line 3, in <module>\n    run()\n  File \"app/run.py\", line 9, in run\n    x = cfg['k']\nKeyError: 'k'\n";
        assert_eq!(problems(py)[0].text, "KeyError: 'k' (app/run.py, line 9, in run)");
        let pytest = "FAILED tests/test_api.py::test_create_run - AssertionError: 500 != 201\n==== 1 failed, 12 passed in 0.31s ====";
        assert_eq!(keys(pytest), ["test tests/test_api.py::test_create_run"]);
        assert_eq!(summary_line(pytest).as_deref(), Some("==== 1 failed, 12 passed in 0.31s ===="));
        let tsc =
            "src/a.ts(10,5): error TS2345: Argument of type 'string' is not assignable.\nFound 1 error.";
        assert_eq!(keys(tsc), ["TS2345 src/a.ts(10,5)"]);
        let jest = "FAIL src/billing/charges.test.ts\n  ● charges › refunds a capture\n\nTypeError: gateway.refund is not a function\n    at refund (src/billing/refunds.ts:12:3)\nTests: 1 failed, 9 passed, 10 total";
        assert_eq!(
            keys(jest),
            [
                "test src/billing/charges.test.ts",
                "test charges › refunds a capture",
                "TypeError src/billing/refunds.ts:12:3"
            ]
        );
        let go = "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1\nFAIL\tgithub.com/x/y\t0.01s";
        assert_eq!(keys(go), ["test TestParse"]);
        assert!(problems("all good\n0 errors").is_empty());
    }
}
