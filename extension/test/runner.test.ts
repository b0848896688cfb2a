// The command runner with real child processes: `/bin/sh` scripts written to a temporary
// directory at test time play the tools.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { ArgPart, CommandSpec } from "@context-condenser/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommandRejection, locate, platformName, readText, runCommand } from "../src/engine/runner";

const posix = process.platform !== "win32";
let dir: string;

/** Writes an executable `/bin/sh` script and returns its path. */
function script(name: string, body: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

const text = (t: string): ArgPart => ({ kind: "text", text: t });
const spec = (program: string, over: Partial<CommandSpec> = {}): CommandSpec => ({
  program,
  args: [],
  env: [],
  outputFile: false,
  timeoutMs: 10_000,
  maxOutputBytes: 1 << 20,
  ...over,
});

/** The temporary directories of runs that are still there. */
const leftovers = () => fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith("context-condenser-"));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until `check` holds. A hang guard, not a claim about speed: if it still does not hold
 *  after two minutes, the test fails saying `what` never happened. */
async function waitFor(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 120_000;
  while (!check()) {
    if (Date.now() >= end) throw new Error(`hang guard: ${what} after 120 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "runner-test-"));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe.runIf(posix)("runCommand", () => {
  it("passes each argument intact, never through a shell", async () => {
    // Prints each argument on its own NUL-terminated record.
    const argv = script("argv", 'for a in "$@"; do printf "%s\\0" "$a"; done');
    const nasty = ["two words", `"double" and 'single'`, "$HOME", "`id`", "$(touch /tmp/pwned)", "line1\nline2", "", "; rm -rf /"];
    const before = leftovers();
    const out = await runCommand(spec(argv, { args: nasty.map((a) => [text(a)]) }));
    expect(out.exitCode).toBe(0);
    expect(out.stdout.split("\0").slice(0, -1)).toEqual(nasty);
    expect(leftovers()).toEqual(before);
  });

  it("writes stdin and closes it, sets env on top of the host's, and runs in cwd", async () => {
    const echo = script("echo", 'cat; printf "|%s|%s|" "$CC_TEST_VAR" "$PWD"; [ -n "$PATH" ] && printf path');
    const out = await runCommand(spec(echo, { stdin: "the prompt\nwith lines", env: [["CC_TEST_VAR", "x y"]], cwd: dir }));
    expect(out.stdout).toBe(`the prompt\nwith lines|x y|${fs.realpathSync(dir)}|path`);
    // The default directory, when the spec names none.
    const pwd = script("pwd", 'printf "%s" "$PWD"');
    const other = fs.mkdtempSync(path.join(os.tmpdir(), "runner-cwd-"));
    expect((await runCommand(spec(pwd), undefined, { defaultCwd: () => other })).stdout).toBe(fs.realpathSync(other));
    fs.rmSync(other, { recursive: true });
  });

  it("gives the prompt file and an output file inside one argument, reads the answer back, then removes them", async () => {
    const tool = script("tool", 'cat "$1" | tr a-z A-Z > "${2#--out=}"; printf "%s\\n%s" "$1" "${2#--out=}"');
    const before = leftovers();
    const out = await runCommand(
      spec(tool, {
        args: [[{ kind: "promptFile" }], [text("--out="), { kind: "outputFile" }]],
        promptFile: "summarize this",
        outputFile: true,
      }),
    );
    expect(out.outputFile).toBe("SUMMARIZE THIS");
    const [promptPath, outputPath] = out.stdout.split("\n");
    expect(path.basename(path.dirname(promptPath))).toMatch(/^context-condenser-/);
    expect(path.dirname(outputPath)).toBe(path.dirname(promptPath));
    expect(fs.existsSync(path.dirname(promptPath))).toBe(false);
    expect(leftovers()).toEqual(before);
  });

  it("reports a non-zero exit with its stderr (the core decides what it means)", async () => {
    const fail = script("fail", 'echo "Invalid API key" >&2; exit 3');
    const out = await runCommand(spec(fail));
    expect(out).toMatchObject({ exitCode: 3, stderr: "Invalid API key\n", stdout: "" });
  });

  it("a timeout kills the whole process group, grandchildren included", async () => {
    const pidFile = path.join(dir, "grandchild.pid");
    // The grandchild does not hold the pipes, so only the group kill can end it.
    const hang = script("hang", `sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "${pidFile}"; echo started >&2; sleep 300`);
    const before = leftovers();
    // Long enough for the shell to start and write the pid on a busy machine.
    const run = runCommand(spec(hang, { timeoutMs: 2_000 }));
    await expect(run).rejects.toMatchObject({ kind: "timeout", stderr: "started\n" });
    const grandchild = Number(fs.readFileSync(pidFile, "utf8"));
    expect(grandchild).toBeGreaterThan(0);
    await waitFor(() => !alive(grandchild), `the grandchild ${grandchild} still runs`);
    expect(leftovers()).toEqual(before);
  });

  it("abort kills the program and rejects as cancelled", async () => {
    const pidFile = path.join(dir, "abort.pid");
    const hang = script("hang2", `echo $$ > "${pidFile}"; sleep 300`);
    const controller = new AbortController();
    const run = runCommand(spec(hang), controller.signal);
    await waitFor(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim() !== "", "the program never wrote its pid");
    const pid = Number(fs.readFileSync(pidFile, "utf8"));
    controller.abort();
    await expect(run).rejects.toMatchObject({ kind: "cancelled" });
    await waitFor(() => !alive(pid), `the aborted program ${pid} still runs`);
    // Already aborted: nothing starts.
    await expect(runCommand(spec(hang), controller.signal)).rejects.toMatchObject({ kind: "cancelled" });
  });

  it("kills a program that prints more than the cap", async () => {
    const flood = script("flood", "yes flood");
    const run = runCommand(spec(flood, { maxOutputBytes: 64 * 1024 }));
    await expect(run).rejects.toBeInstanceOf(CommandRejection);
    await expect(run).rejects.toMatchObject({ kind: "too_much_output" });
  });

  it("a missing program is a spawn error, and its temporary directory is removed", async () => {
    const before = leftovers();
    const run = runCommand(spec(path.join(dir, "no-such-tool"), { args: [[{ kind: "promptFile" }]], promptFile: "p" }));
    await expect(run).rejects.toMatchObject({ kind: "spawn" });
    await expect(run).rejects.toThrow(/ENOENT/);
    expect(leftovers()).toEqual(before);
  });
});

describe.runIf(posix)("locate", () => {
  it("finds a bare name on the PATH, and checks a path as it is", () => {
    const tool = script("mytool", "true");
    fs.writeFileSync(path.join(dir, "plainfile"), "not executable", { mode: 0o644 });
    const env = { PATH: ["/nonexistent", dir].join(":") };
    expect(locate("mytool", env)).toBe(tool);
    expect(locate("plainfile", env)).toBeUndefined();
    expect(locate("nope", env)).toBeUndefined();
    expect(locate(tool, { PATH: "" })).toBe(tool);
    expect(locate(path.join(dir, "plainfile"), env)).toBeUndefined();
    expect(locate(dir, env)).toBeUndefined();
  });

  it("tries each PATHEXT extension on Windows", () => {
    fs.writeFileSync(path.join(dir, "wintool.CMD"), "@echo off");
    expect(locate("wintool", { PATH: dir, PATHEXT: ".EXE;.CMD" }, "win32")).toBe(path.join(dir, "wintool.CMD"));
  });
});

describe.runIf(posix)("readText", () => {
  it("reads a small file for the core (a .cmd shim), and nothing else", () => {
    const shim = path.join(dir, "claude.cmd");
    fs.writeFileSync(shim, '@ECHO off\r\n"%dp0%\\node_modules\\x\\x.exe"   %*\r\n');
    const limit = 64 * 1024;
    expect(readText(shim, limit)).toBe('@ECHO off\r\n"%dp0%\\node_modules\\x\\x.exe"   %*\r\n');
    fs.writeFileSync(path.join(dir, "big.cmd"), "x".repeat(limit + 1));
    expect(readText(path.join(dir, "big.cmd"), limit)).toBeUndefined();
    expect(readText(path.join(dir, "missing.cmd"), limit)).toBeUndefined();
    expect(readText(dir, limit)).toBeUndefined();
  });
});

describe("platformName", () => {
  it("names platforms as tool entries do", () => {
    expect([platformName("darwin"), platformName("win32"), platformName("linux")]).toEqual(["macos", "windows", "linux"]);
  });
});
