//! The native command runner: argv carried exactly (no shell), environment, working directory,
//! standard input (large, or ignored), temporary prompt and output files (private, removed after
//! the run whatever happens), exit codes, and the failures: timeout and abort kill the whole
//! process tree, too much output, a missing program. Programs are small scripts written at test
//! time and run through their interpreter (so no test executes a file another thread may still
//! hold open for writing).

#![cfg(unix)]

mod common;

use common::{HANG_GUARD, Scratch, gone, hang_guard};
use std::path::Path;
use std::time::{Duration, Instant};

use condense_cli::runner::NativeRunner;
use condense_core::host::{
    AbortSignal, ArgPart, CommandError, CommandErrorKind, CommandOutput, CommandRunner, CommandSpec,
};

fn text(s: &str) -> Vec<ArgPart> {
    vec![ArgPart::Text { text: s.to_string() }]
}

fn program(name: &str) -> String {
    NativeRunner::new().locate(name).unwrap_or_else(|| panic!("{name} is not on the PATH"))
}

/// A spec running `interpreter script args...` with a 20 s timeout and a 1 MB cap.
fn spec(interpreter: &str, script: &str, args: &[&str]) -> CommandSpec {
    let mut all = vec![text(script)];
    all.extend(args.iter().map(|a| text(a)));
    CommandSpec {
        program: program(interpreter),
        args: all,
        env: vec![],
        stdin: None,
        prompt_file: None,
        output_file: false,
        cwd: None,
        timeout_ms: 20_000,
        max_output_bytes: 1 << 20,
    }
}

fn sh(script: &str) -> CommandSpec {
    spec("sh", "-c", &[script])
}

fn run(spec: CommandSpec) -> Result<CommandOutput, CommandError> {
    futures::executor::block_on(NativeRunner::new().run(spec, &AbortSignal::new()))
}

fn read_pid(path: &str) -> i32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

#[test]
fn the_arguments_arrive_exactly_as_given() {
    let dir = Scratch::new("argv");
    let script = dir.write("argv.py", "import json, sys\nprint(json.dumps(sys.argv[1:]))\n");
    let args = [
        "with space",
        "double \" and 'single' quotes",
        "$HOME",
        "`echo hi`",
        "a;b && c | d",
        "line one\nline two",
        "",
        "*.rs",
        "héllo ✓",
        "--flag=value",
    ];
    let out = run(spec("python3", &script, &args)).unwrap();
    assert_eq!(out.exit_code, Some(0), "stderr: {}", out.stderr);
    let got: Vec<String> = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(got, args);
    assert_eq!(out.output_file, None);
}

#[test]
fn the_environment_is_added_to_the_inherited_one_and_the_working_directory_is_honoured() {
    let work = Scratch::new("cwd");
    let mut s = sh("printf '%s\\n%s\\n%s' \"$CONDENSE_T\" \"$PATH\" \"$(pwd -P)\"");
    s.env = vec![("CONDENSE_T".into(), "a value; with $pace".into())];
    s.cwd = Some(work.0.to_str().unwrap().to_string());
    let out = run(s).unwrap();
    let lines: Vec<&str> = out.stdout.split('\n').collect();
    let got = (lines[0], lines[1], lines[2]);
    assert_eq!(got.0, "a value; with $pace");
    assert_eq!(got.1, std::env::var("PATH").unwrap());
    assert_eq!(Path::new(&got.2).canonicalize().unwrap(), work.0.canonicalize().unwrap());
}

#[test]
fn a_large_standard_input_is_delivered_whole() {
    let line = "the quick brown fox ✓ jumps over the lazy dog 0123456789\n";
    let input: String = std::iter::repeat_n(line, 5 * 1024 * 1024 / line.len() + 1).collect();
    assert!(input.len() > 5 * 1024 * 1024);
    let mut s = sh("cat");
    s.stdin = Some(input.clone());
    s.max_output_bytes = 8 << 20;
    let out = run(s).unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout.len(), input.len());
    assert!(out.stdout == input, "the echoed input differs");
}

#[test]
fn a_program_that_ignores_its_input_is_fine() {
    let mut s = sh("echo done");
    s.stdin = Some("x".repeat(5 << 20));
    let out = run(s).unwrap();
    assert_eq!((out.exit_code, out.stdout.as_str()), (Some(0), "done\n"));
}

#[test]
fn the_prompt_file_is_written_the_output_file_read_back_and_both_removed() {
    let dir = Scratch::new("files");
    let script = dir.write(
        "files.py",
        "import json, os, sys\n\
         prompt_path = sys.argv[1]\n\
         out_path = sys.argv[2][len('--out='):]\n\
         prompt = open(prompt_path, encoding='utf-8').read()\n\
         open(out_path, 'w', encoding='utf-8').write('answer to: ' + prompt)\n\
         print(json.dumps({'prompt': prompt_path, 'out': out_path,\n\
             'dir_mode': oct(os.stat(os.path.dirname(prompt_path)).st_mode & 0o777),\n\
             'file_mode': oct(os.stat(prompt_path).st_mode & 0o777)}))\n",
    );
    let mut s = spec("python3", &script, &[]);
    s.args.push(vec![ArgPart::PromptFile]);
    s.args.push(vec![ArgPart::Text { text: "--out=".into() }, ArgPart::OutputFile]);
    s.prompt_file = Some("Summarize this: ünïcode\nand a second line".into());
    s.output_file = true;
    let out = run(s).unwrap();
    assert_eq!(out.exit_code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.output_file.as_deref(), Some("answer to: Summarize this: ünïcode\nand a second line"));
    let seen: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let (prompt, output) = (seen["prompt"].as_str().unwrap(), seen["out"].as_str().unwrap());
    assert_eq!(Path::new(prompt).parent(), Path::new(output).parent(), "one directory for the run");
    assert_eq!(seen["dir_mode"], "0o700");
    assert_eq!(seen["file_mode"], "0o600");
    assert!(!Path::new(prompt).exists() && !Path::new(output).exists());
    assert!(!Path::new(prompt).parent().unwrap().exists(), "the run's directory is removed");
}

#[test]
fn the_temporary_files_are_removed_after_a_failed_run_too() {
    let mut s = sh("echo \"$0\" >&2; sleep 1000");
    s.args.push(vec![ArgPart::PromptFile]);
    s.prompt_file = Some("secret prompt".into());
    s.timeout_ms = 2_000;
    let err = run(s).unwrap_err();
    assert_eq!(err.kind, CommandErrorKind::Timeout);
    let path = err.stderr.trim();
    assert!(path.ends_with("prompt.txt"), "stderr: {:?}", err.stderr);
    assert!(!Path::new(path).exists());
    assert!(!Path::new(path).parent().unwrap().exists());
}

#[test]
fn the_exit_code_and_both_streams_are_returned_and_a_failing_exit_is_not_an_error() {
    let out = run(sh("echo out; echo err >&2; exit 3")).unwrap();
    assert_eq!(
        out,
        CommandOutput {
            exit_code: Some(3),
            stdout: "out\n".into(),
            stderr: "err\n".into(),
            output_file: None
        }
    );
    let out = run(sh("kill -9 $$")).unwrap();
    assert_eq!(out.exit_code, None, "killed by a signal: no exit code");
}

#[test]
fn invalid_utf8_output_is_replaced_not_refused() {
    let out = run(sh("printf 'a\\377b'")).unwrap();
    assert_eq!(out.stdout, "a\u{fffd}b");
}

#[test]
fn a_timeout_kills_the_program_and_the_process_it_started() {
    let dir = Scratch::new("timeout");
    let pidfile = dir.path("pid");
    let mut s = sh(&format!("sleep 1000 & echo $! > '{pidfile}'; echo started >&2; wait"));
    s.timeout_ms = 2_000;
    let err = hang_guard("a run past its timeout", move || run(s)).unwrap_err();
    assert_eq!(err.kind, CommandErrorKind::Timeout, "{err:?}");
    assert_eq!(err.message, "timed out after 2 s");
    assert_eq!(err.stderr, "started\n", "the standard error read before the kill");
    let pid = read_pid(&pidfile);
    assert!(gone(pid), "the grandchild sleep {pid} survived");
}

#[test]
fn an_abort_from_another_thread_kills_the_program_and_its_children() {
    let dir = Scratch::new("abort");
    let pidfile = dir.path("pid");
    let mut s =
        sh(&format!("sleep 1000 & echo $! > '{pidfile}.tmp' && mv '{pidfile}.tmp' '{pidfile}'; wait"));
    s.timeout_ms = 120_000;
    let abort = AbortSignal::new();
    let (signal, watched) = (abort.clone(), pidfile.clone());
    let aborter = std::thread::spawn(move || {
        let until = Instant::now() + HANG_GUARD;
        while !Path::new(&watched).exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        signal.abort();
    });
    let err =
        hang_guard("an aborted run", move || futures::executor::block_on(NativeRunner::new().run(s, &abort)))
            .unwrap_err();
    aborter.join().unwrap();
    assert_eq!(err.kind, CommandErrorKind::Cancelled, "{err:?}");
    let pid = read_pid(&pidfile);
    assert!(gone(pid), "the grandchild sleep {pid} survived");
}

#[test]
fn an_abort_before_the_start_runs_nothing() {
    let dir = Scratch::new("preabort");
    let marker = dir.path("ran");
    let abort = AbortSignal::new();
    abort.abort();
    let err = futures::executor::block_on(NativeRunner::new().run(sh(&format!("touch '{marker}'")), &abort))
        .unwrap_err();
    assert_eq!(err.kind, CommandErrorKind::Cancelled);
    assert!(!Path::new(&marker).exists());
}

#[test]
fn too_much_output_on_either_stream_kills_the_program() {
    for script in ["yes", "yes >&2"] {
        let mut s = sh(script);
        s.max_output_bytes = 1000;
        let err = run(s).unwrap_err();
        assert_eq!(err.kind, CommandErrorKind::TooMuchOutput, "{script}: {err:?}");
        assert!(err.message.contains("1000 bytes"), "{}", err.message);
        assert!(err.stderr.len() <= 1000);
    }
}

#[test]
fn output_exactly_at_the_cap_is_kept() {
    let mut s = sh("head -c 1000 /dev/zero | tr '\\0' x");
    s.max_output_bytes = 1000;
    let out = run(s).unwrap();
    assert_eq!(out.stdout, "x".repeat(1000));
}

#[test]
fn an_output_file_past_the_cap_is_too_much_output() {
    let mut s = sh("head -c 2000 /dev/zero > \"$0\"");
    s.args.push(vec![ArgPart::OutputFile]);
    s.output_file = true;
    s.max_output_bytes = 1000;
    let err = run(s).unwrap_err();
    assert_eq!(err.kind, CommandErrorKind::TooMuchOutput, "{err:?}");
    assert!(err.message.contains("output file"), "{}", err.message);
}

#[test]
fn a_missing_or_unrunnable_program_is_a_spawn_error_naming_it() {
    let dir = Scratch::new("spawn");
    let missing = dir.path("no-such-tool");
    let mut s = sh("true");
    s.program = missing.clone();
    let err = run(s).unwrap_err();
    assert_eq!(err.kind, CommandErrorKind::Spawn);
    assert!(err.message.contains(&missing), "{}", err.message);

    let not_executable = dir.write("plain", "#!/bin/sh\necho hi\n");
    let mut s = sh("true");
    s.program = not_executable.clone();
    let err = run(s).unwrap_err();
    assert_eq!(err.kind, CommandErrorKind::Spawn);
    assert!(err.message.contains(&not_executable), "{}", err.message);

    let mut s = sh("true");
    s.cwd = Some(dir.path("no-such-dir"));
    assert_eq!(run(s).unwrap_err().kind, CommandErrorKind::Spawn);
}

#[test]
fn locate_searches_the_path_in_order_for_executable_files() {
    use std::os::unix::fs::PermissionsExt;
    let first = Scratch::new("path1");
    let second = Scratch::new("path2");
    let make = |dir: &Scratch, name: &str, mode: u32| {
        let path = dir.write(name, "#!/bin/sh\n");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    };
    let shadowed = make(&first, "tool", 0o644); // not executable: skipped
    let tool = make(&second, "tool", 0o755);
    std::fs::create_dir(first.0.join("dir-tool")).unwrap();
    let path_var = std::env::join_paths([first.0.as_path(), Path::new(""), second.0.as_path()]).unwrap();

    assert_eq!(NativeRunner::locate_in(Some(&path_var), "tool"), Some(tool.clone()));
    assert_eq!(NativeRunner::locate_in(Some(&path_var), "missing"), None);
    assert_eq!(NativeRunner::locate_in(Some(&path_var), "dir-tool"), None, "a directory is no program");
    assert_eq!(NativeRunner::locate_in(None, "tool"), None);
    assert_eq!(NativeRunner::locate_in(Some(&path_var), ""), None);
    // A path is checked as it is, whatever PATH says.
    assert_eq!(NativeRunner::locate_in(None, &tool), Some(tool.clone()));
    assert_eq!(NativeRunner::locate_in(Some(&path_var), &shadowed), None);
    assert_eq!(NativeRunner::locate_in(None, first.0.join("dir-tool").to_str().unwrap()), None);
    // The process's own PATH, through the trait.
    let sh = NativeRunner::new().locate("sh").unwrap();
    assert!(Path::new(&sh).is_absolute() && sh.ends_with("/sh"), "{sh}");
}

#[test]
fn platform_and_environment_come_from_the_host() {
    let expected = if cfg!(target_os = "macos") { "macos" } else { "linux" };
    assert_eq!(NativeRunner::new().platform(), expected);
    assert_eq!(NativeRunner::new().env_var("PATH"), std::env::var("PATH").ok());
    assert_eq!(NativeRunner::new().env_var("CONDENSE_SURELY_UNSET_VARIABLE_1234"), None);
}

#[test]
fn read_text_reads_a_small_file_for_the_core_and_nothing_else() {
    let dir = std::env::temp_dir().join(format!("condense-read-text-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shim = dir.join("claude.cmd");
    std::fs::write(&shim, "@ECHO off\r\n\"%dp0%\\x.exe\"   %*\r\n").unwrap();
    let big = dir.join("big.cmd");
    std::fs::write(&big, "x".repeat(condense_core::host::MAX_SHIM_BYTES + 1)).unwrap();
    let runner = NativeRunner::new();
    let read =
        |p: &std::path::Path| runner.read_text(p.to_str().unwrap(), condense_core::host::MAX_SHIM_BYTES);
    assert_eq!(read(&shim).as_deref(), Some("@ECHO off\r\n\"%dp0%\\x.exe\"   %*\r\n"));
    assert_eq!(read(&big), None);
    assert_eq!(read(&dir.join("missing.cmd")), None);
    assert_eq!(read(&dir), None);
    std::fs::remove_dir_all(&dir).unwrap();
}
