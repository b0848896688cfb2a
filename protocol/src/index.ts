// The protocol between Context Condenser's parts: every value that crosses the wasm boundary or
// travels between the extension and a webview, as zod validators with their TypeScript types.
// The types are generated from the Rust types (`generated.ts`, by
// `cargo run -p condense-protocol --bin protocol-gen`); this module adds only how a side checks a
// message that arrived: an invalid message is never acted on, the receiver logs it and answers
// with an `error` message naming what was wrong.

import type * as z from "./zod";
import { GatewayToHost, GatewayToWebview, SettingsToHost, SettingsToWebview, ToWebview } from "./generated";
import { ChatViewToHost } from "./links";

export * from "./generated";
export * from "./links";
export * from "./bidi";
export { compact, moneySaved, usd } from "./format";
export * from "./generation";

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

function parseWith<T>(schema: z.ZodType<T>, raw: unknown): Parsed<T> {
  const r = schema.safeParse(raw);
  if (r.success) return { ok: true, value: r.data };
  const issue = r.error.issues[0];
  const where = issue && issue.path.length ? issue.path.join(".") : "message";
  const type =
    raw && typeof raw === "object" && "type" in raw ? String((raw as { type: unknown }).type) : "?";
  return { ok: false, error: `invalid message (type ${type}): ${where}: ${issue?.message ?? "rejected"}` };
}

/** Checks a message that arrived at the extension from the chat view (the generated messages
 *  and the hand-written `openLink`). */
export const parseToHost = (raw: unknown): Parsed<ChatViewToHost> => parseWith(ChatViewToHost, raw);

/** Checks a message that arrived at the chat view. */
export const parseToWebview = (raw: unknown): Parsed<ToWebview> => parseWith(ToWebview, raw);

/** Checks a message that arrived at the extension from the settings panel. */
export const parseSettingsToHost = (raw: unknown): Parsed<SettingsToHost> => parseWith(SettingsToHost, raw);

/** Checks a message that arrived at the settings panel. */
export const parseSettingsToWebview = (raw: unknown): Parsed<SettingsToWebview> => parseWith(SettingsToWebview, raw);

/** Checks a message that arrived at the extension from the Gateway view. */
export const parseGatewayToHost = (raw: unknown): Parsed<GatewayToHost> => parseWith(GatewayToHost, raw);

/** Checks a message that arrived at the Gateway view. */
export const parseGatewayToWebview = (raw: unknown): Parsed<GatewayToWebview> => parseWith(GatewayToWebview, raw);

/** A failure's kind, as a value the compiler checks exhaustively: call it in a switch's
 *  `default` over an `ErrorKind`, and a new kind fails the build until it is handled. */
export function unhandled(kind: never): never {
  throw new Error(`unhandled kind: ${String(kind)}`);
}
