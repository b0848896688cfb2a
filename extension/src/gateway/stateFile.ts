// The gateway's state on disk, written by whichever thread runs the gateway (the extension host's
// gateway runs in a worker thread: gatewayWorker.ts): `state.json` (the index: the version and the
// totals) and one file per session in `sessions/`, each written when its session changed and
// removed when the gateway let it go (the core says which: `saveChanges`), as `condense gateway`
// keeps it. Each file whole or not at all, readable by the user alone, and flushed to the disk
// with its folder when a request carrying a new condensation waits on it.
import * as fs from "node:fs";
import * as path from "node:path";
import type { GatewaySessionFile, GatewayStateChanges } from "@context-condenser/protocol";

/** The folder of the session files, in the state's folder. */
export const SESSIONS = "sessions";
/** How a temporary file ends; any left by a killed host are removed when the state is read. */
const TEMPORARY = ".tmp";

/** A state as saved: its index (or a whole state of one file, as version 2 wrote it) and its
 *  session files. */
export interface SavedState {
  index?: string;
  sessions: GatewaySessionFile[];
}

/** Writes `text` to `file` whole or not at all, readable by the user alone; `durable`: flushed
 *  to the disk first (the rename's folder is the caller's to flush). */
export function writePrivate(file: string, text: string, durable = false): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}${TEMPORARY}`;
  const fd = fs.openSync(temporary, "w", 0o600);
  try {
    fs.writeFileSync(fd, text);
    // Flushed before the rename: a crash right after this leaves the new file whole or the old
    // one, never an empty one.
    if (durable) fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temporary, file);
}

/** Flushes a folder: the renames in it reach the disk with its entries (Windows opens no folder
 *  as a file; its renames are written through). */
function syncDir(dir: string): void {
  if (process.platform === "win32") return;
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The state saved in `dir` (temporary files a killed host left removed, never read);
 *  undefined when nothing is saved there. */
export function readState(dir: string): SavedState | undefined {
  let index: string | undefined;
  try {
    index = fs.readFileSync(path.join(dir, "state.json"), "utf8");
  } catch {
    index = undefined;
  }
  const folder = path.join(dir, SESSIONS);
  let names: string[] = [];
  try {
    names = fs.readdirSync(folder).sort();
  } catch {
    names = [];
  }
  const sessions: GatewaySessionFile[] = [];
  for (const name of names) {
    if (name.endsWith(TEMPORARY)) {
      fs.rmSync(path.join(folder, name), { force: true });
      continue;
    }
    if (!name.endsWith(".json") || name.startsWith(".")) continue;
    try {
      sessions.push({ name, text: fs.readFileSync(path.join(folder, name), "utf8") });
    } catch {
      // Gone or unreadable since the listing: as if it were not there.
    }
  }
  return index === undefined && sessions.length === 0 ? undefined : { index, sessions };
}

/** Does `changes` in `dir`: the changed session files, then the index, each replaced whole, then
 *  the files of sessions let go removed. Returns the session files that could not be written or
 *  removed (the next save does them again) and the first error. */
export function writeChanges(dir: string, changes: GatewayStateChanges, durable: boolean): { failed: string[]; error?: string } {
  const folder = path.join(dir, SESSIONS);
  const failed: string[] = [];
  let error: string | undefined;
  const fail = (name: string | undefined, e: unknown): void => {
    if (name !== undefined) failed.push(name);
    error ??= (e as Error).message;
  };
  for (const file of changes.write) {
    try {
      writePrivate(path.join(folder, file.name), file.text, durable);
    } catch (e) {
      fail(file.name, e);
    }
  }
  try {
    if (durable && changes.write.length > 0) syncDir(folder);
    writePrivate(path.join(dir, "state.json"), changes.index, durable);
    if (durable) syncDir(dir);
  } catch (e) {
    fail(undefined, e);
  }
  for (const name of changes.remove) {
    try {
      fs.rmSync(path.join(folder, name), { force: true });
    } catch (e) {
      fail(name, e);
    }
  }
  return { failed, error };
}
