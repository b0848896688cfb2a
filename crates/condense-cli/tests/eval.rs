//! `condense eval` on the evaluation fixtures: a row per provider, the JSON document, probes that
//! fail when a provider loses their phrase, clear errors for unknown providers.

mod common;

use assert_cmd::Command;
use common::{Server, root};
use serde_json::Value;

fn condense(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("condense").unwrap().args(args).assert()
}

fn stdout_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

const FIXTURES: [&str; 4] = [
    "tests/fixtures/eval/coding-todos.json",
    "tests/fixtures/eval/debug-openai.json",
    "tests/fixtures/eval/planning-chat.json",
    "tests/fixtures/eval/anthropic-images.json",
];

/// The rows of `eval --json` for the given arguments.
fn rows(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["eval", "--json"];
    all.extend_from_slice(args);
    let out = condense(&all).success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).expect("stdout is one JSON document");
    doc["rows"].as_array().expect("a rows array").clone()
}

fn temp_file(name: &str, text: &str) -> String {
    let path = std::env::temp_dir().join(format!("condense-eval-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn the_fixtures_are_realistic_in_size_and_parse() {
    for (file, least) in FIXTURES.iter().zip([24_000, 24_000, 15_000, 15_000]) {
        let out = condense(&["count", &root(file)]).success();
        let count: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let tokens = count["total_tokens"].as_u64().unwrap();
        assert!(tokens >= least, "{file}: {tokens} tokens, fewer than {least}");
    }
}

#[test]
fn the_table_has_a_row_per_provider_with_its_numbers() {
    let file = root(FIXTURES[0]);
    let out = condense(&["eval", "--providers", "lossless,truncation", "--target-tokens", "12000", &file])
        .success();
    let text = stdout_of(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "a header and one row per provider:\n{text}");
    assert!(lines[0].starts_with("FILE") && lines[0].contains("RETENTION"), "{text}");
    assert!(lines[1].contains("lossless") && lines[2].contains("truncation"), "{text}");
    for line in &lines[1..] {
        assert!(line.contains("coding-todos.json") && line.contains(" → ") && line.contains('%'), "{line}");
    }
}

#[test]
fn json_rows_carry_every_field_and_add_up() {
    let files: Vec<String> = FIXTURES.iter().map(|f| root(f)).collect();
    let mut args = vec!["--providers", "lossless,truncation", "--target-percent", "40"];
    args.extend(files.iter().map(String::as_str));
    let rows = rows(&args);
    assert_eq!(rows.len(), 8, "four files × two providers");
    for row in &rows {
        for field in [
            "file",
            "provider",
            "status",
            "tokens_before",
            "tokens_after",
            "reduction_pct",
            "cost",
            "time_ms",
        ] {
            assert!(!row[field].is_null(), "{field} in {row}");
        }
        let retention = &row["retention"];
        let (kept, probes) = (retention["kept"].as_u64().unwrap(), retention["probes"].as_u64().unwrap());
        let missing = retention["missing"].as_array().unwrap();
        assert_eq!(kept + missing.len() as u64, probes, "{row}");
        assert!(probes >= 5, "the fixture's probe file is picked up: {row}");
        if row["status"] == "ok" {
            let (before, after) =
                (row["tokens_before"].as_f64().unwrap(), row["tokens_after"].as_f64().unwrap());
            assert!(after < before, "{row}");
            let pct = (before - after) * 100.0 / before;
            assert!((row["reduction_pct"].as_f64().unwrap() - pct).abs() < 1e-9, "{row}");
        } else {
            assert!(row["error"]["kind"].is_string(), "a failed row says why: {row}");
        }
    }
    // The target is a share of each file; truncation lands at or under it.
    for row in rows.iter().filter(|r| r["provider"] == "truncation") {
        assert_eq!(row["status"], "ok", "{row}");
        assert!(row["tokens_after"].as_u64() <= row["target_tokens"].as_u64(), "{row}");
    }
}

#[test]
fn lossless_keeps_every_probe() {
    let files: Vec<String> = FIXTURES.iter().map(|f| root(f)).collect();
    let mut args = vec!["--providers", "lossless"];
    args.extend(files.iter().map(String::as_str));
    for row in rows(&args) {
        let r = &row["retention"];
        assert_eq!(r["kept"], r["probes"], "lossless loses nothing: {row}");
        assert!(r["missing"].as_array().unwrap().is_empty());
    }
}

#[test]
fn a_phrase_truncation_drops_is_reported_missing() {
    // Only an early tool result shows the export limit; truncation stubs old tool results first,
    // lossless leaves a unique result alone.
    let probes =
        temp_file("limit.probes", "# the configured limit\nexport_max_rows: 50000\nuse pnpm, not npm\n");
    let file = root(FIXTURES[0]);
    let rows =
        rows(&["--providers", "lossless,truncation", "--target-percent", "30", "--probes", &probes, &file]);
    let by = |id: &str| rows.iter().find(|r| r["provider"] == id).unwrap().clone();
    let (lossless, truncation) = (by("lossless"), by("truncation"));
    assert_eq!(lossless["retention"]["missing"], Value::Array(vec![]), "{lossless}");
    assert_eq!(truncation["status"], "ok");
    let missing: Vec<&str> = truncation["retention"]["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["needle"].as_str().unwrap())
        .collect();
    assert!(missing.contains(&"export_max_rows: 50000"), "{truncation}");
    assert!(
        !missing.contains(&"use pnpm, not npm"),
        "the user's rule is user text, trimmed last: {truncation}"
    );
    let r = &truncation["retention"];
    assert!(r["kept"].as_u64() < r["probes"].as_u64());
}

#[test]
fn derived_probes_name_hidden_user_words_and_files() {
    // At a tight target truncation hides user messages too; each hidden user instruction and
    // each file a hidden tool call changed is a probe (the core ledger's), and the ledger keeps
    // every one of them in the view.
    let empty = temp_file("empty.probes", "# no phrases of our own\n");
    let file = root(FIXTURES[3]);
    let rows = rows(&["--providers", "truncation", "--target-percent", "15", "--probes", &empty, &file]);
    let r = &rows[0]["retention"];
    assert!(r["derived"].as_u64().unwrap() > 0, "{}", rows[0]);
    assert_eq!(r["derived"], r["probes"], "only derived probes: {}", rows[0]);
    assert_eq!(r["missing"].as_array().unwrap().len(), 0, "the ledger keeps them: {}", rows[0]);
    assert_eq!(r["kept"], r["probes"], "{}", rows[0]);
    assert!(rows[0]["reduction_pct"].as_f64().unwrap() > 80.0, "{}", rows[0]);
}

#[test]
fn an_unknown_provider_is_a_usage_error_naming_the_known_ones() {
    let out = condense(&["eval", "--providers", "lossless,nope", &root(FIXTURES[0])]).code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("nope"), "{stderr}");
    for id in ["lossless", "truncation", "native", "manual"] {
        assert!(stderr.contains(id), "{stderr}");
    }
    assert!(out.get_output().stdout.is_empty(), "nothing runs");
}

#[test]
fn providers_that_need_an_llm_or_a_person_are_skipped_with_the_reason() {
    let default = rows(&[&root(FIXTURES[2])]);
    let ids: Vec<&str> = default.iter().map(|r| r["provider"].as_str().unwrap()).collect();
    assert!(ids.contains(&"lossless") && ids.contains(&"truncation"), "{ids:?}");
    assert!(!ids.contains(&"native") && !ids.contains(&"manual"), "not by default without an LLM: {ids:?}");

    let asked = rows(&["--providers", "native,manual", &root(FIXTURES[2])]);
    for row in &asked {
        assert_eq!(row["status"], "skipped", "{row}");
        assert!(row["retention"].is_null());
    }
    assert!(asked[0]["skipped"].as_str().unwrap().contains("--llm"), "{}", asked[0]);
}

#[test]
fn a_failed_run_is_a_row_not_the_end() {
    // The planning chat repeats nothing: lossless has nothing to do, truncation still runs.
    let rows = rows(&["--providers", "lossless,truncation", &root(FIXTURES[2])]);
    assert_eq!(rows[0]["status"], "failed");
    assert_eq!(rows[0]["error"]["kind"], "nothing_to_condense");
    assert_eq!(rows[0]["tokens_after"], rows[0]["tokens_before"]);
    assert_eq!(rows[1]["status"], "ok");
}

#[test]
fn markdown_is_a_table_with_file_names() {
    let out =
        condense(&["eval", "--format", "markdown", "--providers", "lossless", &root(FIXTURES[1])]).success();
    let text = stdout_of(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("| file | provider |"), "{text}");
    assert!(lines[1].starts_with("| --- |"), "{text}");
    assert!(lines[2].starts_with("| `debug-openai.json` | lossless |"), "{text}");
}

/// The flags that point `eval` at the fixture LLM server with a model (a fault mode) and prices.
fn fixture_llm(server: &Server, model: &str) -> Vec<String> {
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    [
        "--llm",
        "openai-compatible",
        "--base-url",
        &base,
        "--model",
        model,
        "--price-in",
        "3",
        "--price-out",
        "15",
    ]
    .iter()
    .chain(&["--api-key-env", "FIXTURE_KEY", "--timeout-secs", "5", "--max-retries", "0"])
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn with_an_llm_native_runs_and_its_summary_is_probed() {
    // The server's summary keeps one decision of the planning chat and not the others; the
    // ledger keeps the user's own words beside it, so no probe is missing.
    let answer =
        "## Decisions\n- We go with Postgres, not MongoDB, for the v2 backend.\n## Next\nDraft the agenda.";
    let server = Server::start(
        "python3",
        &[&root("tests/servers/fixture_llm.py"), "--port", "0", "--quiet", "--answer", answer],
    );
    let mut args = vec!["eval".to_string(), "--json".into()];
    args.extend(fixture_llm(&server, "fixture"));
    args.push(root(FIXTURES[2]));
    let out = Command::cargo_bin("condense")
        .unwrap()
        .env("FIXTURE_KEY", "fixture-key")
        .args(&args)
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    let native = rows.iter().find(|r| r["provider"] == "native").expect("native runs by default with an LLM");
    assert_eq!(native["status"], "ok", "{native}");
    assert!(native["cost"].as_f64().unwrap() > 0.0, "{native}");
    assert!(native["reduction_pct"].as_f64().unwrap() > 50.0, "{native}");
    let missing: Vec<&str> = native["retention"]["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["needle"].as_str().unwrap())
        .collect();
    assert!(missing.is_empty(), "the summary and the ledger keep every probe: {missing:?}");
    assert_eq!(native["retention"]["kept"], native["retention"]["probes"], "{native}");
    assert!(native["core_retention"]["probes"].as_u64().unwrap() > 0, "the template probed: {native}");
    // Smart runs too (it uses an LLM when one is lent): on prose its LLM-free passes find little,
    // so its summary pass makes the second request.
    let smart = rows.iter().find(|r| r["provider"] == "smart").expect("smart runs by default");
    let summary_pass = smart["passes"].as_array().unwrap().iter().find(|p| p["pass"] == "native");
    assert!(summary_pass.is_some_and(|p| p["skipped"].is_null()), "{smart}");
    assert_eq!(server.requests().len(), 2, "one summary request by native, one by smart");
    assert!(rows.iter().any(|r| r["provider"] == "lossless"), "the LLM-free providers still run");
}

#[test]
fn an_llm_that_fails_gives_a_failed_row() {
    let server = Server::fixture();
    let mut args =
        vec!["eval".to_string(), "--json".into(), "--providers".into(), "native,truncation".into()];
    args.extend(fixture_llm(&server, "fault-401"));
    args.push(root(FIXTURES[2]));
    let out = Command::cargo_bin("condense")
        .unwrap()
        .env("FIXTURE_KEY", "fixture-key")
        .args(&args)
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows[0]["status"], "failed", "{}", rows[0]);
    assert_eq!(rows[0]["error"]["kind"], "llm_auth", "{}", rows[0]);
    assert_eq!(rows[1]["status"], "ok", "{}", rows[1]);
}

const REAL: [&str; 5] = [
    "tests/fixtures/real/claude-code-python-to-rust-port.jsonl",
    "tests/fixtures/real/claude-code-coverage-test-fix.jsonl",
    "tests/fixtures/real/codex-sample-homelab-migration.jsonl",
    "tests/fixtures/real/codex-shaped-cli-port.jsonl",
    "tests/fixtures/real/cline-shaped-phased-refactor.json",
];

/// On the sessions of real agents at a 30% target, every provider with a target lands at 80–100%
/// of it or refuses up front naming its floor; no row loses an instruction or a probe phrase.
#[test]
fn real_sessions_land_on_target_or_name_their_floor() {
    let files: Vec<String> = REAL.iter().map(|f| root(f)).collect();
    let mut args = vec!["--target-percent", "30"];
    args.extend(files.iter().map(String::as_str));
    let rows = rows(&args);
    assert_eq!(rows.len(), REAL.len() * 5, "five providers run without an LLM or a person");
    let mut landed = 0;
    for row in &rows {
        let what = format!("{} {}", row["file"], row["provider"]);
        let retention = &row["retention"];
        assert_eq!(retention["kept"], retention["probes"], "{what}: missing {}", retention["missing"]);
        if !matches!(row["provider"].as_str(), Some("truncation" | "smart")) {
            continue;
        }
        if row["status"] == "failed" {
            assert_eq!(row["error"]["kind"], "target_below_floor", "{what}: {}", row["error"]);
            assert!(row["error"]["message"].as_str().unwrap().contains("below the floor of"), "{what}");
            continue;
        }
        let (target, after) = (row["target_tokens"].as_f64().unwrap(), row["tokens_after"].as_f64().unwrap());
        assert!(after <= target && after >= 0.8 * target, "{what}: {after} for a target of {target}");
        landed += 1;
    }
    assert!(landed >= 8, "{landed} runs landed");
    // The instructions in the middle of the Cline task's long first message count one by one.
    let cline = rows
        .iter()
        .find(|r| r["provider"] == "smart" && r["file"].as_str().unwrap().contains("cline"))
        .unwrap();
    assert!(cline["retention"]["probes"].as_u64().unwrap() >= 4 + 20, "{}", cline["retention"]);
}

/// Future-reference recall on real sessions, at the default cuts (40–70%) and targets (20–40% of
/// the past's readable tokens): every truncation and smart run lands within its target or says
/// which floor it kept, keeps every instruction and every tool pair, and smart — which has
/// truncation alone as a candidate and its floor — keeps on average at least what truncation
/// keeps at 30%.
#[test]
fn references_land_on_target_and_smart_keeps_what_truncation_keeps() {
    let files: Vec<String> = [
        "tests/fixtures/real/claude-code-python-to-rust-port.jsonl",
        "tests/fixtures/real/codex-moonmind-single-queue-spec.jsonl",
        "tests/fixtures/real/claude-code-agentfluent-reuse-review.jsonl",
        "tests/fixtures/real/cline-shaped-phased-refactor.json",
    ]
    .iter()
    .map(|f| root(f))
    .collect();
    let mut args = vec!["--references", "--providers", "truncation,smart"];
    args.extend(files.iter().map(String::as_str));
    let rows = rows(&args);
    let mut means: std::collections::BTreeMap<(u64, String), (f64, usize)> = Default::default();
    for row in &rows {
        let provider = row["provider"].as_str().unwrap().to_owned();
        let what =
            format!("{} cut {} target {} {provider}", row["file"], row["cut_percent"], row["target_percent"]);
        // Opaque blobs are not the budget: the Codex rollout's encrypted reasoning is not counted.
        if row["file"].as_str().unwrap().contains("moonmind") && row["cut_percent"] == 60 {
            assert!(row["past_tokens"].as_u64().unwrap() < 60_000, "{what}: {}", row["past_tokens"]);
        }
        if !matches!(provider.as_str(), "truncation" | "smart") || !row["error"].is_null() {
            continue;
        }
        let (after, target) = (row["tokens_after"].as_u64().unwrap(), row["target_tokens"].as_u64().unwrap());
        let note = row["note"].as_str().unwrap_or("");
        assert!(
            after <= target || note.contains("was not met") && note.contains("floor"),
            "{what}: {after} > {target}"
        );
        assert_eq!(row["pairs_valid"], true, "{what}");
        if let Some([kept, all]) = row["instructions"].as_array().map(|a| [a[0].clone(), a[1].clone()]) {
            assert_eq!(kept, all, "{what}: an instruction lost");
        }
        let references = row["references"].as_u64().unwrap();
        if references > 0 {
            let share = row["kept"].as_u64().unwrap() as f64 / references as f64;
            let entry = means.entry((row["target_percent"].as_u64().unwrap(), provider)).or_default();
            entry.0 += share;
            entry.1 += 1;
        }
    }
    let mean = |p: &str| {
        let (sum, n) = means[&(30, p.to_owned())];
        sum / n as f64
    };
    assert!(mean("smart") >= mean("truncation"), "smart {} truncation {}", mean("smart"), mean("truncation"));
}
