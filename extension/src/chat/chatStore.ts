// Chat tasks on disk: one JSON file per chat under the extension's global storage. Pure Node:
// vitest runs it.
//
// - Atomic writes: a temporary file in the same folder, then a rename, so a crash, a reload or a
//   failed write in the middle of a save leaves the previous version, never half a file.
// - Revisions: a file holds the task as the generated `ChatTask` schema has it (unchanged: what
//   reads chat files keeps reading them) plus one field of the file, `file_revision`, taken off
//   when the file is read. Whoever saves says which revision it loaded; when the file has
//   moved on (another VS Code window saved the same chat), the save is refused with a
//   `ChatConflict` and nothing is overwritten. The check and the rename happen under a lock file
//   (`<id>.json.lock`, created with O_EXCL), so two windows cannot both pass the check; a lock
//   older than `staleLockMs` (a window that died holding it) is taken over. Files written before
//   revisions (no `file_revision`) are read as revision 0.
// - Corrupt files (not JSON, cut short, not a chat): reported as a typed `CorruptChat` (which
//   file, why, where it was kept), renamed aside to `<id>.json.corrupt-<timestamp>` (never
//   deleted), and the other chats load as before.

import { randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { ChatTask, type ChatSummary, type ChatTaskInput } from "@context-condenser/protocol";

const ID = /^[A-Za-z0-9_-]{1,80}$/;

/** The field of a chat file that holds its revision, next to the task's own fields. */
export const REVISION_FIELD = "file_revision";

/** A fresh chat id: time first, so that names sort by creation. */
export function newChatId(now = Date.now()): string {
  return `chat-${now.toString(36).padStart(9, "0")}-${randomBytes(4).toString("hex")}`;
}

/** A chat file that could not be read as a chat: kept aside, reported. */
export interface CorruptChat {
  kind: "corrupt_chat";
  /** The file's name in the chats folder (`<id>.json`). */
  file: string;
  /** Why it is not a chat: the JSON error, or the first problem with its shape. */
  reason: string;
  /** Where the file now is (its name in the same folder), or null if another window moved it first. */
  keptAs: string | null;
}

/** A chat as loaded: the task and the revision a save must name. */
export interface LoadedChat {
  task: ChatTask;
  revision: number;
}

export type LoadResult = { ok: true; chat: LoadedChat } | { ok: false; corrupt: CorruptChat };

/** A save refused because the file changed since it was loaded (another window saved it). */
export class ChatConflict extends Error {
  readonly kind = "chat_conflict";
  constructor(
    readonly id: string,
    readonly expected: number,
    /** The file's revision now, or null when the chat was deleted meanwhile. */
    readonly found: number | null,
  ) {
    super(
      found === null
        ? "This chat was deleted in another window; your last change was not saved."
        : "This chat was changed in another window; reload it (your last change was not saved).",
    );
    this.name = "ChatConflict";
  }
}

export const isChatConflict = (e: unknown): e is ChatConflict => e instanceof ChatConflict;

export interface ChatStoreOptions {
  /** A lock older than this is taken over (its holder died). Default 10 s. */
  staleLockMs?: number;
  /** How long to wait between tries for a held lock. Default 20 ms. */
  lockRetryMs?: number;
  /** The write of the temporary file (tests inject failures). */
  writeFile?: (file: string, data: string) => Promise<void>;
  /** The clock for the names of files kept aside. */
  now?: () => number;
}

type Parsed = { ok: true; task: ChatTask; revision: number } | { ok: false; reason: string };

/** Reads a file's text as a chat and its revision (0 for a file written before revisions). */
function parseChatFile(text: string): Parsed {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, reason: `not JSON (${e instanceof Error ? e.message : String(e)}); the file may be cut short` };
  }
  let raw = json;
  let revision = 0;
  if (typeof json === "object" && json !== null && !Array.isArray(json) && REVISION_FIELD in json) {
    const { [REVISION_FIELD]: r, ...task } = json as Record<string, unknown>;
    if (typeof r !== "number" || !Number.isSafeInteger(r) || r < 1) {
      return { ok: false, reason: `${REVISION_FIELD} is not a whole number above 0` };
    }
    raw = task;
    revision = r;
  }
  const checked = ChatTask.safeParse(raw);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const where = issue?.path.length ? issue.path.join(".") : "task";
    return { ok: false, reason: `not a chat: ${where}: ${issue?.message ?? "rejected"}` };
  }
  // The task as it was written (the schema checked it; its defaults are the core's business).
  return { ok: true, task: raw as ChatTask, revision };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const code = (e: unknown) => (e as NodeJS.ErrnoException | undefined)?.code;

export class ChatStore {
  private readonly staleLockMs: number;
  private readonly lockRetryMs: number;
  private readonly writeTemp: (file: string, data: string) => Promise<void>;
  private readonly now: () => number;

  constructor(
    private readonly dir: string,
    options: ChatStoreOptions = {},
  ) {
    this.staleLockMs = options.staleLockMs ?? 10_000;
    this.lockRetryMs = options.lockRetryMs ?? 20;
    this.writeTemp = options.writeFile ?? ((file, data) => fs.writeFile(file, data, "utf8"));
    this.now = options.now ?? Date.now;
  }

  private file(id: string): string {
    if (!ID.test(id)) throw new Error(`invalid chat id ${JSON.stringify(id)}`);
    return path.join(this.dir, `${id}.json`);
  }

  /**
   * Writes a chat whose file is at `expectedRevision` (0: a chat never saved, or saved in the
   * older format), and returns its new revision. Throws a `ChatConflict` when the file's revision
   * moved on meanwhile; the file is then untouched. A file that is not a chat is kept aside
   * (`setAside`) and replaced.
   */
  async save(task: ChatTaskInput, expectedRevision: number): Promise<{ revision: number; setAside?: CorruptChat }> {
    const target = this.file(task.id);
    await fs.mkdir(this.dir, { recursive: true });
    const revision = expectedRevision + 1;
    const temp = `${target}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await this.writeTemp(temp, `${JSON.stringify({ ...task, [REVISION_FIELD]: revision })}\n`);
      let setAside: CorruptChat | undefined;
      await this.withLock(target, async () => {
        const current = await this.read(target);
        if (current.kind === "corrupt") setAside = await this.setAside(target, current.reason);
        const found = current.kind === "chat" ? current.revision : current.kind === "missing" && expectedRevision > 0 ? null : 0;
        if (current.kind !== "corrupt" && found !== expectedRevision) throw new ChatConflict(task.id, expectedRevision, found);
        await fs.rename(temp, target);
      });
      return setAside ? { revision, setAside } : { revision };
    } finally {
      await fs.rm(temp, { force: true });
    }
  }

  /** A saved chat, undefined when there is none with this id, or the corrupt file kept aside. */
  async load(id: string): Promise<LoadResult | undefined> {
    const target = this.file(id);
    const read = await this.read(target);
    if (read.kind === "missing") return undefined;
    if (read.kind === "chat") return { ok: true, chat: { task: read.task, revision: read.revision } };
    return { ok: false, corrupt: await this.setAsideChecked(target, read.text, read.reason) };
  }

  async delete(id: string): Promise<void> {
    const target = this.file(id);
    await this.withLock(target, () => fs.rm(target, { force: true }));
  }

  /** The saved chats, most recently changed first, and the files that are not chats (kept
   *  aside: they do not stop the others from loading). */
  async list(): Promise<{ chats: ChatSummary[]; corrupt: CorruptChat[] }> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (e) {
      if (code(e) === "ENOENT") return { chats: [], corrupt: [] };
      throw e;
    }
    const chats: ChatSummary[] = [];
    const corrupt: CorruptChat[] = [];
    for (const name of names.sort()) {
      if (!name.endsWith(".json") || !ID.test(name.slice(0, -5))) continue;
      const target = path.join(this.dir, name);
      const read = await this.read(target);
      if (read.kind === "chat") {
        const { task } = read;
        chats.push({ id: task.id, title: task.title || "(empty chat)", updated_ms: task.updated_ms, messages: task.conversation.messages.length });
      } else if (read.kind === "corrupt") {
        corrupt.push(await this.setAsideChecked(target, read.text, read.reason));
      }
    }
    return { chats: chats.sort((a, b) => b.updated_ms - a.updated_ms), corrupt };
  }

  private async read(
    target: string,
  ): Promise<{ kind: "missing" } | { kind: "chat"; task: ChatTask; revision: number } | { kind: "corrupt"; text: string; reason: string }> {
    let text: string;
    try {
      text = await fs.readFile(target, "utf8");
    } catch (e) {
      if (code(e) === "ENOENT") return { kind: "missing" };
      throw e;
    }
    const parsed = parseChatFile(text);
    return parsed.ok ? { kind: "chat", task: parsed.task, revision: parsed.revision } : { kind: "corrupt", text, reason: parsed.reason };
  }

  /** Keeps a corrupt file aside, under the lock, unless another window replaced it meanwhile by a
   *  good one (then that one is left alone). */
  private async setAsideChecked(target: string, text: string, reason: string): Promise<CorruptChat> {
    return this.withLock(target, async () => {
      let now: string | undefined;
      try {
        now = await fs.readFile(target, "utf8");
      } catch (e) {
        if (code(e) !== "ENOENT") throw e;
      }
      if (now !== undefined && now !== text && parseChatFile(now).ok) {
        return { kind: "corrupt_chat", file: path.basename(target), reason, keptAs: null };
      }
      return this.setAside(target, reason);
    });
  }

  /** Renames a corrupt file to `<id>.json.corrupt-<timestamp>` (never over another). Call under the lock. */
  private async setAside(target: string, reason: string): Promise<CorruptChat> {
    const file = path.basename(target);
    const stamp = new Date(this.now()).toISOString().replace(/[:.]/g, "-");
    for (let n = 0; ; n++) {
      const aside = `${target}.corrupt-${stamp}${n ? `-${n}` : ""}`;
      try {
        // link + unlink: never replaces an existing file, unlike rename.
        await fs.link(target, aside);
      } catch (e) {
        if (code(e) === "EEXIST") continue;
        if (code(e) === "ENOENT") return { kind: "corrupt_chat", file, reason, keptAs: null };
        throw e;
      }
      await fs.rm(target, { force: true });
      return { kind: "corrupt_chat", file, reason, keptAs: path.basename(aside) };
    }
  }

  /** Runs `fn` holding `<target>.lock`, created with O_EXCL and removed after, whatever happens.
   *  A lock older than `staleLockMs` is taken over. */
  private async withLock<T>(target: string, fn: () => Promise<T>): Promise<T> {
    const lock = `${target}.lock`;
    const token = `${process.pid} ${randomBytes(8).toString("hex")}`;
    for (;;) {
      try {
        await fs.writeFile(lock, token, { flag: "wx" });
        break;
      } catch (e) {
        if (code(e) !== "EEXIST") throw e;
      }
      await this.takeOverIfStale(lock);
      await sleep(this.lockRetryMs);
    }
    try {
      return await fn();
    } finally {
      // Remove the lock only if it is still ours (it is, unless we held it past staleLockMs).
      const held = await fs.readFile(lock, "utf8").catch(() => undefined);
      if (held === token) await fs.rm(lock, { force: true });
    }
  }

  /** Removes a lock whose holder stopped touching it `staleLockMs` ago. It is renamed away first
   *  and checked to be the stale one, so that two windows taking over the same stale lock do not
   *  remove a fresh one the other just made (if they did, it goes back). */
  private async takeOverIfStale(lock: string): Promise<void> {
    let stat;
    let held: string;
    try {
      stat = await fs.stat(lock);
      held = await fs.readFile(lock, "utf8");
    } catch (e) {
      if (code(e) === "ENOENT") return;
      throw e;
    }
    if (Date.now() - stat.mtimeMs < this.staleLockMs) return;
    const away = `${lock}.stale-${randomBytes(4).toString("hex")}`;
    try {
      await fs.rename(lock, away);
    } catch (e) {
      if (code(e) === "ENOENT") return;
      throw e;
    }
    const taken = await fs.readFile(away, "utf8").catch(() => undefined);
    if (taken !== held) {
      // Not the stale lock: a fresh one made meanwhile. Put it back unless another was made since.
      await fs.link(away, lock).catch(() => {});
    }
    await fs.rm(away, { force: true });
  }
}
