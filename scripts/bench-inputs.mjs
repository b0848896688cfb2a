#!/usr/bin/env node
// The benchmark inputs, generated deterministically (a seeded PRNG, no clock, no network) into
// target/bench-inputs/ (or the folder given as the first argument):
//   prose.md      ~1 MB of mixed Markdown prose and source code
//   chat200.json  a 200-message tool-heavy chat (file reads, grep output, logs, code fences,
//                 a little non-ASCII), in this project's conversation format
//   short.json    10,000 strings of 40–60 characters
//   chat200k.json a ~200k-token chat of the same kind (the auto-condense check)
//   chat1m.json   a ~1M-token, 2,000-message chat of the same kind (the scale run)
// The same seed gives the same bytes on every machine: `node scripts/bench-inputs.mjs` twice
// writes identical files.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = path.resolve(process.argv[2] ?? path.join(root, "target/bench-inputs"));

/** mulberry32: a small, well-mixed 32-bit PRNG; deterministic for a seed. */
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = (xs) => xs[Math.floor(next() * xs.length)];
  return { next, int, pick };
}

const WORDS = (
  "the a of to and in is it that for on with as was at by this be are from or have an they which one you " +
  "parser token context window message summary condense provider engine request stream buffer cache " +
  "function value result error handler config module import export return async await promise string " +
  "number boolean array object map set index length offset range file path line column build test " +
  "release deploy server client socket header body status retry timeout cancel abort signal event " +
  "because however therefore although meanwhile instead otherwise finally usually probably exactly"
).split(" ");
const NON_ASCII = ["café", "naïve", "façade", "Ünïcödé", "日本語", "こんにちは", "🦀", "🚀", "—", "…", "€", "Straße", "résumé", "中文测试"];
const IDENTS = ["parseGroup", "tokenCount", "handleRequest", "retryPolicy", "buildIndex", "readConfig", "ContextWindow", "apply_edits", "run_provider", "StreamChunk"];

function sentence(r, nonAscii = 0.02) {
  const n = r.int(6, 22);
  const words = [];
  for (let i = 0; i < n; i++) words.push(r.next() < nonAscii ? r.pick(NON_ASCII) : r.pick(WORDS));
  const s = words.join(" ");
  return s[0].toUpperCase() + s.slice(1) + r.pick([".", ".", ".", "?", "!", ":"]);
}

const paragraph = (r) => Array.from({ length: r.int(2, 7) }, () => sentence(r)).join(" ");

function codeBlock(r) {
  const lang = r.pick(["rust", "ts", "python", "go"]);
  const lines = [];
  const n = r.int(6, 40);
  for (let i = 0; i < n; i++) {
    const id = r.pick(IDENTS);
    const indent = "    ".repeat(r.int(0, 3));
    switch (lang) {
      case "rust":
        lines.push(r.pick([
          `${indent}let ${id.toLowerCase()} = self.${id}(&input[${r.int(0, 99)}..]).map_err(|e| e.to_string())?;`,
          `${indent}if ${id.toLowerCase()}.len() > ${r.int(1, 4096)} { return Err(Error::TooLong); }`,
          `${indent}pub fn ${id.toLowerCase()}(&mut self, n: usize) -> Option<&str> {`,
          `${indent}}`,
          `${indent}// ${sentence(r, 0)}`,
        ]));
        break;
      case "ts":
        lines.push(r.pick([
          `${indent}const ${id} = await client.${id}({ retries: ${r.int(0, 9)}, timeoutMs: ${r.int(100, 60000)} });`,
          `${indent}if (!${id}) throw new Error(\`missing ${id} at line \${${r.int(1, 999)}}\`);`,
          `${indent}export function ${id}(value: string[]): Map<string, number> {`,
          `${indent}}`,
          `${indent}// ${sentence(r, 0)}`,
        ]));
        break;
      case "python":
        lines.push(r.pick([
          `${indent}${id.toLowerCase()} = [x for x in items if x.${id.toLowerCase()} > ${r.int(0, 100)}]`,
          `${indent}def ${id.toLowerCase()}(self, path: str) -> dict[str, int]:`,
          `${indent}raise ValueError(f"bad {${id.toLowerCase()}!r} in {path}")`,
          `${indent}# ${sentence(r, 0)}`,
        ]));
        break;
      default:
        lines.push(r.pick([
          `${indent}${id}, err := s.${id}(ctx, ${r.int(0, 512)})`,
          `${indent}if err != nil { return fmt.Errorf("${id}: %w", err) }`,
          `${indent}func (s *Server) ${id}(ctx context.Context, n int) (string, error) {`,
          `${indent}}`,
        ]));
    }
  }
  return { lang, body: lines.join("\n") };
}

/** ~1 MB of Markdown: headings, prose, lists, code fences. */
function prose(r, bytes) {
  const parts = [];
  let size = 0;
  while (size < bytes) {
    let part;
    const k = r.next();
    if (k < 0.08) part = `${"#".repeat(r.int(1, 3))} ${sentence(r)}`;
    else if (k < 0.5) part = paragraph(r);
    else if (k < 0.65) part = Array.from({ length: r.int(2, 6) }, () => `- ${sentence(r)}`).join("\n");
    else {
      const c = codeBlock(r);
      part = `\`\`\`${c.lang}\n${c.body}\n\`\`\``;
    }
    parts.push(part);
    size += Buffer.byteLength(part) + 2;
  }
  return parts.join("\n\n");
}

const fileRead = (r) => {
  const c = codeBlock(r);
  return c.body.split("\n").map((l, i) => `${String(i + 1).padStart(6)}\t${l}`).join("\n");
};
const grepOutput = (r) =>
  Array.from({ length: r.int(3, 30) }, () => `src/${r.pick(IDENTS).toLowerCase()}/${r.pick(["mod", "lib", "main", "util"])}.rs:${r.int(1, 2000)}:    ${r.pick(IDENTS)}(${r.int(0, 99)})`).join("\n");
const logOutput = (r) =>
  Array.from({ length: r.int(5, 40) }, () => {
    const t = `2026-0${r.int(1, 9)}-1${r.int(0, 9)}T${String(r.int(0, 23)).padStart(2, "0")}:${String(r.int(0, 59)).padStart(2, "0")}:${String(r.int(0, 59)).padStart(2, "0")}.${r.int(100, 999)}Z`;
    return `${t} ${r.pick(["INFO", "WARN", "ERROR", "DEBUG"])} ${r.pick(IDENTS)}: ${sentence(r, 0.01)} id=${r.int(1000, 99999)} took=${r.int(1, 5000)}ms`;
  }).join("\n");

/** A tool-heavy coding chat of `n` messages: user asks, assistant calls a tool, its result, an answer. */
function chat(r, n, scale = 1) {
  const messages = [];
  const reads = new Map();
  let call = 0;
  for (let i = 0; messages.length < n; i++) {
    const id = () => `m${messages.length + 1}`;
    messages.push({ id: id(), ts: 1_700_000_000_000 + messages.length * 1000, role: "user", content: [{ type: "text", text: paragraph(r) }] });
    if (messages.length >= n) break;
    const tool = r.pick(["read_file", "grep", "run_command"]);
    const toolId = `call_${++call}`;
    const input = tool === "read_file" ? { path: `src/${r.pick(IDENTS).toLowerCase()}.rs` } : tool === "grep" ? { pattern: r.pick(IDENTS) } : { command: `cargo test -p ${r.pick(IDENTS).toLowerCase()}` };
    messages.push({
      id: id(),
      ts: 1_700_000_000_000 + messages.length * 1000,
      role: "assistant",
      content: [{ type: "text", text: sentence(r) }, { type: "tool_use", id: toolId, name: tool, input }],
    });
    if (messages.length >= n) break;
    // A file read again unchanged, half the time: what the lossless provider replaces.
    const again = tool === "read_file" && reads.has(input.path) && r.next() < 0.5;
    const body = again
      ? reads.get(input.path)
      : Array.from({ length: scale }, () => (tool === "read_file" ? fileRead(r) : tool === "grep" ? grepOutput(r) : logOutput(r))).join("\n");
    if (tool === "read_file") reads.set(input.path, body);
    messages.push({
      id: id(),
      ts: 1_700_000_000_000 + messages.length * 1000,
      role: "user",
      content: [{ type: "tool_result", tool_use_id: toolId, content: body }],
    });
    if (messages.length >= n) break;
    const c = codeBlock(r);
    messages.push({
      id: id(),
      ts: 1_700_000_000_000 + messages.length * 1000,
      role: "assistant",
      content: [{ type: "text", text: `${paragraph(r)}\n\n\`\`\`${c.lang}\n${c.body}\n\`\`\`` }],
    });
  }
  return { format: "context-condenser/conversation@1", system: "You are a coding assistant.", messages };
}

function shortStrings(r, n) {
  const xs = [];
  for (let i = 0; i < n; i++) {
    const len = r.int(40, 60);
    let s = "";
    while (s.length < len) s += (s ? " " : "") + (r.next() < 0.03 ? r.pick(NON_ASCII) : r.pick(WORDS));
    xs.push(Array.from(s).slice(0, len).join("")); // By code point: never half an emoji.
  }
  return xs;
}

mkdirSync(out, { recursive: true });
const write = (name, text) => {
  writeFileSync(path.join(out, name), text);
  console.log(`bench-inputs: ${path.join(out, name)} (${(Buffer.byteLength(text) / 1048576).toFixed(2)} MB)`);
};
write("prose.md", prose(rng(1), 1_000_000));
write("chat200.json", JSON.stringify(chat(rng(2), 200)));
write("short.json", JSON.stringify(shortStrings(rng(3), 10_000)));
// Sized by the token counts measured with o200k_base (see BENCHMARKS.md): ~200k and ~1M tokens.
write("chat200k.json", JSON.stringify(chat(rng(4), 350, 3)));
write("chat1m.json", JSON.stringify(chat(rng(5), 2000, 3)));
