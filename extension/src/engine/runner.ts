// The host's command runner for `cli` profiles: what the core decides to run (a `CommandSpec`, an
// argv and never a shell string), started with `child_process.spawn` and `shell: false`. The run
// gets private temporary files for the prompt and the answer, removed whatever happens; standard
// output and error are capped; a timeout or an abort kills the program's whole process group. No
// `vscode` import, so vitest runs it with real child processes.

import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { CommandErrorKind, CommandOutput, CommandSpec } from "@context-condenser/protocol";

/** What `run` rejects with: the core reads `kind`, `message` and `stderr`. */
export class CommandRejection extends Error {
  constructor(
    readonly kind: CommandErrorKind,
    message: string,
    readonly stderr = "",
  ) {
    super(message);
    this.name = "CommandRejection";
  }
}

/** The platform as tool entries name it. */
export function platformName(platform: NodeJS.Platform = process.platform): string {
  if (platform === "darwin") return "macos";
  if (platform === "win32") return "windows";
  return platform;
}

function isExecutableFile(file: string, platform: NodeJS.Platform): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    if (platform === "win32") return true;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where a program is: a path (anything with a separator) is checked as it is, a bare name is
 * looked up in each `PATH` directory (with each `PATHEXT` extension on Windows).
 */
export function locate(
  program: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (program === "") return undefined;
  const hasSeparator = program.includes("/") || (platform === "win32" && program.includes("\\"));
  const extensions =
    platform === "win32" ? ["", ...(env.PATHEXT ?? ".COM;.EXE;.BAT;.CMD").split(";").filter(Boolean)] : [""];
  if (hasSeparator) {
    return extensions.map((e) => program + e).find((f) => isExecutableFile(f, platform));
  }
  const delimiter = platform === "win32" ? ";" : ":";
  const dirs = (env.PATH ?? env.Path ?? "").split(delimiter).filter(Boolean);
  for (const dir of dirs) {
    for (const ext of extensions) {
      const candidate = path.join(dir, program + ext);
      if (isExecutableFile(candidate, platform)) return candidate;
    }
  }
  return undefined;
}

/**
 * The text of a small file, or undefined when it is larger than `maxBytes` (the core's limit; then
 * not read) or cannot be read: the core reads a Windows `.cmd` shim (npm's) with it to start the
 * shim's program itself (node with its script, or an .exe), since only a shell runs a `.cmd` and
 * Node refuses to spawn one with `shell: false`.
 */
export function readText(file: string, maxBytes: number): string | undefined {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile() || stat.size > maxBytes) return undefined;
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

export interface RunnerOptions {
  /** The directory a run starts in when its spec names none (the first workspace folder). */
  defaultCwd?: () => string | undefined;
}

/** Runs `spec`; resolves with how it ended, rejects with a `CommandRejection`. */
export async function runCommand(spec: CommandSpec, signal?: AbortSignal, options: RunnerOptions = {}): Promise<CommandOutput> {
  if (signal?.aborted) throw new CommandRejection("cancelled", "cancelled before starting");
  let dir: string;
  try {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "context-condenser-"));
  } catch (e) {
    throw new CommandRejection("io", `cannot create a temporary directory: ${String(e)}`);
  }
  try {
    return await runIn(dir, spec, signal, options);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function runIn(dir: string, spec: CommandSpec, signal: AbortSignal | undefined, options: RunnerOptions): Promise<CommandOutput> {
  const promptPath = path.join(dir, "prompt.txt");
  const outputPath = path.join(dir, "output.txt");
  const usesPrompt = spec.args.some((a) => a.some((p) => p.kind === "promptFile"));
  const usesOutput = spec.outputFile || spec.args.some((a) => a.some((p) => p.kind === "outputFile"));
  try {
    if (usesPrompt) fs.writeFileSync(promptPath, spec.promptFile ?? "", { mode: 0o600 });
    if (usesOutput) fs.writeFileSync(outputPath, "", { mode: 0o600 });
  } catch (e) {
    throw new CommandRejection("io", `cannot write a temporary file: ${String(e)}`);
  }
  const args = spec.args.map((parts) =>
    parts.map((p) => (p.kind === "text" ? p.text : p.kind === "promptFile" ? promptPath : outputPath)).join(""),
  );
  const cap = spec.maxOutputBytes;
  const groupKill = process.platform !== "win32";

  return await new Promise<CommandOutput>((resolve, reject) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(spec.program, args, {
        shell: false,
        detached: groupKill,
        cwd: spec.cwd ?? options.defaultCwd?.() ?? undefined,
        env: { ...process.env, ...Object.fromEntries(spec.env) },
        stdio: ["pipe", "pipe", "pipe"],
        windowsHide: true,
      });
    } catch (e) {
      reject(new CommandRejection("spawn", String(e)));
      return;
    }
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let failure: CommandRejection | undefined;
    let settled = false;
    const errText = () => Buffer.concat(stderr).toString("utf8");

    const kill = () => {
      try {
        if (groupKill && child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
        else child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    };
    const fail = (kind: CommandErrorKind, message: string) => {
      if (failure) return;
      failure = new CommandRejection(kind, message);
      kill();
    };
    const timer = setTimeout(() => fail("timeout", `killed after ${spec.timeoutMs} ms`), spec.timeoutMs);
    const onAbort = () => fail("cancelled", "cancelled");
    signal?.addEventListener("abort", onAbort);
    const finish = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      settle();
    };

    child.stdout?.on("data", (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > cap) fail("too_much_output", `printed more than ${cap} bytes`);
      else stdout.push(chunk);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      errBytes += chunk.length;
      if (errBytes > cap) fail("too_much_output", `printed more than ${cap} bytes on standard error`);
      else stderr.push(chunk);
    });
    // A program that exits without reading its input closes the pipe: not a failure.
    child.stdin?.on("error", () => {});
    child.stdin?.end(spec.stdin ?? "");

    child.on("error", (e: NodeJS.ErrnoException) => {
      finish(() => reject(new CommandRejection("spawn", `${spec.program}: ${e.code ?? e.message}`, errText())));
    });
    child.on("close", (code) => {
      finish(() => {
        if (failure) {
          reject(new CommandRejection(failure.kind, failure.message, errText()));
          return;
        }
        let outputFile: string | null = null;
        if (usesOutput) {
          try {
            const bytes = fs.readFileSync(outputPath);
            if (bytes.length > cap) {
              reject(new CommandRejection("too_much_output", `wrote more than ${cap} bytes to the output file`, errText()));
              return;
            }
            outputFile = bytes.toString("utf8");
          } catch (e) {
            reject(new CommandRejection("io", `cannot read the output file: ${String(e)}`, errText()));
            return;
          }
        }
        resolve({ exitCode: code, stdout: Buffer.concat(stdout).toString("utf8"), stderr: errText(), outputFile });
      });
    });
  });
}
