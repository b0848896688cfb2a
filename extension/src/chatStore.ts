// Chat tasks on disk: one JSON file per chat under the extension's global storage, written
// atomically (a temporary file in the same folder, then a rename), so that a crash or a reload in
// the middle of a save leaves the previous version, never half a file. Pure Node: vitest runs it.

import { randomBytes } from "node:crypto";
import { mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import * as path from "node:path";
import type { ChatTask, ChatTaskInput } from "@context-condenser/protocol";
import type { ChatSummary } from "@context-condenser/protocol";

const ID = /^[A-Za-z0-9_-]{1,80}$/;

/** A fresh chat id: time first, so that names sort by creation. */
export function newChatId(now = Date.now()): string {
  return `chat-${now.toString(36).padStart(9, "0")}-${randomBytes(4).toString("hex")}`;
}

export class ChatStore {
  constructor(private readonly dir: string) {}

  private file(id: string): string {
    if (!ID.test(id)) throw new Error(`invalid chat id ${JSON.stringify(id)}`);
    return path.join(this.dir, `${id}.json`);
  }

  /** Writes a chat: to a temporary file first, renamed over the old one. */
  async save(task: ChatTaskInput): Promise<void> {
    const target = this.file(task.id);
    await mkdir(this.dir, { recursive: true });
    const temp = `${target}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await writeFile(temp, `${JSON.stringify(task)}\n`, "utf8");
      await rename(temp, target);
    } catch (e) {
      await rm(temp, { force: true });
      throw e;
    }
  }

  /** A saved chat, or undefined when there is none with this id. */
  async load(id: string): Promise<ChatTask | undefined> {
    let text: string;
    try {
      text = await readFile(this.file(id), "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
    return JSON.parse(text) as ChatTask;
  }

  async delete(id: string): Promise<void> {
    await rm(this.file(id), { force: true });
  }

  /** The saved chats, most recently changed first. Unreadable files are reported, not fatal. */
  async list(onBadFile?: (file: string, error: string) => void): Promise<ChatSummary[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw e;
    }
    const out: ChatSummary[] = [];
    for (const name of names) {
      if (!name.endsWith(".json") || !ID.test(name.slice(0, -5))) continue;
      try {
        const task = JSON.parse(await readFile(path.join(this.dir, name), "utf8")) as ChatTask;
        out.push({
          id: task.id,
          title: task.title || "(empty chat)",
          updated_ms: task.updated_ms,
          messages: task.conversation.messages.length,
        });
      } catch (e) {
        onBadFile?.(name, e instanceof Error ? e.message : String(e));
      }
    }
    return out.sort((a, b) => b.updated_ms - a.updated_ms);
  }
}
