// Where a session file's condensation goes. Pure but for the `exists` it is given: vitest runs it.

import * as path from "node:path";

/** Where a session file's condensation goes: `<name>.condensed.json` beside it (`-2`, `-3`, … when
 *  taken). Pure but for `exists`. */
export async function condensedPath(source: string, exists: (p: string) => Promise<boolean>): Promise<string> {
  const dir = path.dirname(source);
  const stem = path.basename(source).replace(/\.(jsonl?|txt)$/i, "");
  for (let n = 1; ; n++) {
    const candidate = path.join(dir, `${stem}.condensed${n > 1 ? `-${n}` : ""}.json`);
    if (!(await exists(candidate))) return candidate;
  }
}
