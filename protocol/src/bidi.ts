// Bidirectional control characters in text the project did not write (a message, a tool's input,
// a file's path, a server's error, a profile id from settings). Applied, they reorder what the
// reader sees — a file name that reads `invoice.txt` may end in `.exe`, a command may read as
// another (the "Trojan Source" attack) — so both sides show them instead: the extension as the
// text `⟨U+202E⟩` in notifications and labels, the webview as a marked span with the character's
// name. Hand-written, here because the extension and the webview share this package.

/** The controls, by code point, with their Unicode names. */
export const BIDI_CONTROLS: Readonly<Record<number, string>> = {
  0x061c: "ARABIC LETTER MARK",
  0x200e: "LEFT-TO-RIGHT MARK",
  0x200f: "RIGHT-TO-LEFT MARK",
  0x202a: "LEFT-TO-RIGHT EMBEDDING",
  0x202b: "RIGHT-TO-LEFT EMBEDDING",
  0x202c: "POP DIRECTIONAL FORMATTING",
  0x202d: "LEFT-TO-RIGHT OVERRIDE",
  0x202e: "RIGHT-TO-LEFT OVERRIDE",
  0x2066: "LEFT-TO-RIGHT ISOLATE",
  0x2067: "RIGHT-TO-LEFT ISOLATE",
  0x2068: "FIRST STRONG ISOLATE",
  0x2069: "POP DIRECTIONAL ISOLATE",
};

/** Any one control (global: for `replace`, `search` and `matchAll`, never `test`). */
const CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** Whether a text has a bidirectional control. */
export const hasBidiControl = (text: string): boolean => text.search(CONTROLS) !== -1;

/** A control as a reader sees it: `⟨U+202E⟩`. */
export const bidiMarker = (control: string): string =>
  `⟨U+${control.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}⟩`;

/** What a marker's tooltip says: the code point, its name, and that it was not applied. */
export const bidiTitle = (control: string): string =>
  `${bidiMarker(control).slice(1, -1)} ${BIDI_CONTROLS[control.codePointAt(0)!] ?? "BIDIRECTIONAL CONTROL"}: a bidirectional control character, shown instead of applied`;

/** The text with each control replaced by its marker (`⟨U+202E⟩`), for places that take a plain
 *  string: a notification, a label, a title attribute, an `<option>`. */
export const showBidi = (text: string): string => text.replace(CONTROLS, bidiMarker);

/** A piece of a text: plain text, or one control. */
export type BidiPiece = { text: string } | { control: string };

/** The text cut at its controls, for a renderer that marks each one (the webview). */
export function splitBidi(text: string): BidiPiece[] {
  const pieces: BidiPiece[] = [];
  let from = 0;
  for (const m of text.matchAll(CONTROLS)) {
    if (m.index > from) pieces.push({ text: text.slice(from, m.index) });
    pieces.push({ control: m[0] });
    from = m.index + m[0].length;
  }
  if (from < text.length) pieces.push({ text: text.slice(from) });
  return pieces;
}
