// Text the extension did not write, shown in VS Code's own UI: a file's parse error (which quotes
// the file), a server's error message, a tool's output, a chat's title, a path, a profile id from
// settings. VS Code gives some of it meaning: a notification turns `[label](command:…)` (or a
// `file:` or `https:` target, with an optional title) into a link that runs the command when
// clicked (vs/base/common/linkedText.ts); a quick pick's label or the status bar turns `$(name)`
// into an icon; bidirectional control characters reorder what the user reads. `neutralize` keeps
// every character the user must see but lets none of that happen. Pure: vitest runs it.

import { showBidi } from "@context-condenser/protocol";

/**
 * The text as it may be shown: each bidirectional control as `⟨U+202E⟩`, `](` as `] (` (a link
 * needs the two together, so none can form, and the reader still sees what the text said) and
 * `$(` as `$ (` (no icon). The inserted spaces create neither pair, so one pass is enough.
 */
export function neutralize(text: string): string {
  return showBidi(text).replace(/\]\(/g, "] (").replace(/\$\(/g, "$ (");
}
