// Links in the chat: hand-written, not generated (the Rust side never sees them). Answers and
// summaries come from a model and are untrusted, so one policy decides, on both sides, which URL
// a message may make clickable: the webview renders only these as links (and posts `openLink`
// instead of navigating), and the extension checks again before it asks VS Code to open one
// (`vscode.env.openExternal`, which shows VS Code's own confirmation for external sites).

import { ToHost } from "./generated";
import * as z from "./zod";

/** The schemes a link in a message may open. */
export const LINK_SCHEMES = ["http:", "https:", "mailto:"] as const;

/** Longer URLs are not opened (nor shown as links). */
export const MAX_LINK_LENGTH = 8192;

/** The image types a message may show inline, as `data:` URLs (never SVG, which can hold script). */
const INLINE_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*$/;

/**
 * The URL to open for a link written in a message, or undefined when it must not be clickable:
 * only absolute http, https and mailto URLs, as the WHATWG URL parser reads them (which drops the
 * tabs, newlines and control characters that hide `javascript:`), without user:password.
 */
export function openableUrl(raw: string): string | undefined {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > MAX_LINK_LENGTH) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined; // relative, protocol-relative (no base here) or malformed
  }
  if (!(LINK_SCHEMES as readonly string[]).includes(url.protocol)) return undefined;
  if (url.protocol !== "mailto:" && (!url.hostname || url.username || url.password)) return undefined;
  return url.href;
}

/** Whether a message's image source may be shown inline: a base64 PNG, JPEG, GIF or WebP. */
export const isInlineImage = (src: string): boolean => src.length <= 16 * 1024 * 1024 && INLINE_IMAGE.test(src);

/** Chat view → extension: open a link of a message, through VS Code. */
export const OpenLink = z.deferred(() =>
  z.object({
    type: z.literal("openLink"),
    /** An http, https or mailto URL (`openableUrl`). */
    url: z
      .string()
      .min(1)
      .max(MAX_LINK_LENGTH)
      .refine((url) => openableUrl(url) !== undefined, "only http, https and mailto links open"),
  }),
);
export type OpenLink = z.output<typeof OpenLink>;

/** Everything the chat view posts: the generated messages and `openLink`. */
export const ChatViewToHost = z.deferred(() => z.discriminatedUnion("type", [ToHost, OpenLink]));
export type ChatViewToHost = z.output<typeof ChatViewToHost>;
