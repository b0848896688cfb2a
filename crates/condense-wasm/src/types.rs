//! The TypeScript side of the boundary, emitted into the generated `.d.ts`. Every data type a
//! method takes or returns is generated from the Rust types into the protocol package
//! (`@context-condenser/protocol`, see `condense-protocol`) and imported here; what is written here
//! is only what has no Rust type: the host object the engine calls back into (JS functions, an
//! `AbortSignal`, a `ReadableStream`) and the `Error` every failure throws. Parameters take the
//! protocol's `…Input` types (fields with a default may be left out), results are the output types.

use wasm_bindgen::prelude::*;

/// The engine's methods, generated from their description (see `surface.rs`).
#[wasm_bindgen(typescript_custom_section)]
const TS_METHODS: &'static str = include_str!("engine.d.ts");

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
import type {
  CommandErrorKind,
  CommandOutput,
  CommandSpec,
  ErrorKind,
  FetchRequest,
} from "@context-condenser/protocol";

/** What the host lends the engine. */
export interface Host {
  /** Sends a request; the Response-like answer's body is a ReadableStream of bytes. */
  fetch(request: FetchRequest, signal: AbortSignal): Promise<ResponseLike>;
  /** Milliseconds, monotonic. */
  now(): number;
  /** One log line; never given secrets. */
  log(level: "info" | "warn" | "error", message: string): void;
  /** Milliseconds a response may go without a byte (default 60000). */
  readTimeoutMs?: number;
  /**
   * Runs a program (never through a shell): creates the temporary prompt and output files the
   * spec names and removes them after, writes `stdin` and closes it, kills the program and every
   * process it started on timeout or abort. Rejects with a `CommandRejection`. A host without
   * `run` cannot use `cli` profiles.
   */
  run?(spec: CommandSpec, signal: AbortSignal): Promise<CommandOutput>;
  /** Where a program is (a bare name on the PATH, a path checked as it is), or undefined. */
  locate?(program: string): string | undefined;
  /** An environment variable of the host, or undefined. */
  envVar?(name: string): string | undefined;
  /**
   * The text of a small file, or undefined when it is larger than `maxBytes` (then not read) or
   * cannot be read: on Windows the core reads an npm `.cmd` shim it found to start the program
   * the shim starts (node with its script, or an .exe), since only a shell runs a `.cmd`.
   * Without it, a `.cmd` found is refused.
   */
  readText?(path: string, maxBytes: number): string | undefined;
  /** `linux`, `macos` or `windows` (default `linux`). */
  platform?: string;
}

/** What the host's `run` rejects with. */
export interface CommandRejection {
  kind: CommandErrorKind;
  message: string;
  /** Standard error read before the failure. */
  stderr?: string;
}

/** What the host's fetch resolves with: a `Response`, or anything shaped like one. */
export interface ResponseLike {
  status: number;
  headers: Iterable<[string, string]> | Record<string, string>;
  body: ReadableStream<Uint8Array> | null;
}

/** What every failure throws or rejects with. */
export interface CondenseErrorLike extends Error {
  kind: ErrorKind;
  partial?: string;
  status?: number;
  attempts?: number;
  retryAfterMs?: number;
}
"#;
