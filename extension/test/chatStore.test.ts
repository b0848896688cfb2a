import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChatTaskInput } from "@context-condenser/protocol";
import { ChatStore, newChatId } from "../src/chatStore";

const task = (id: string, updated: number, title = "A chat"): ChatTaskInput => ({
  id,
  title,
  created_ms: 1,
  updated_ms: updated,
  conversation: { format: "context-condenser/conversation@1", messages: [{ id: "m1", ts: 1, role: "user", content: [{ type: "text", text: "hi" }] }] },
  condensations: [],
});

describe("ChatStore", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "chats-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("saves, loads and lists chats, newest first, leaving no temporary file", async () => {
    const store = new ChatStore(path.join(dir, "chats"));
    await store.save(task("chat-a", 10, "Older"));
    await store.save(task("chat-b", 20, "Newer"));
    await store.save({ ...task("chat-a", 30, "Older, changed") });
    expect(await store.load("chat-a")).toEqual(task("chat-a", 30, "Older, changed"));
    expect(await store.load("chat-none")).toBeUndefined();
    expect((await store.list()).map((c) => [c.id, c.title, c.messages])).toEqual([
      ["chat-a", "Older, changed", 1],
      ["chat-b", "Newer", 1],
    ]);
    expect((await readdir(path.join(dir, "chats"))).sort()).toEqual(["chat-a.json", "chat-b.json"]);
  });

  it("skips and reports an unreadable file instead of failing the list", async () => {
    const store = new ChatStore(dir);
    await store.save(task("chat-a", 10));
    await writeFile(path.join(dir, "chat-broken.json"), "{ half a fi");
    const bad: string[] = [];
    expect((await store.list((file) => bad.push(file))).map((c) => c.id)).toEqual(["chat-a"]);
    expect(bad).toEqual(["chat-broken.json"]);
  });

  it("refuses ids that are not plain names", async () => {
    const store = new ChatStore(dir);
    await expect(store.save(task("../escape", 1))).rejects.toThrow(/invalid chat id/);
    await expect(store.load("a/b")).rejects.toThrow(/invalid chat id/);
  });

  it("a failed write keeps the previous version", async () => {
    const store = new ChatStore(dir);
    await store.save(task("chat-a", 10, "Kept"));
    const cyclic = task("chat-a", 20) as ChatTaskInput & { self?: unknown };
    cyclic.self = cyclic;
    await expect(store.save(cyclic)).rejects.toThrow();
    expect(JSON.parse(await readFile(path.join(dir, "chat-a.json"), "utf8")).title).toBe("Kept");
    expect(await readdir(dir)).toEqual(["chat-a.json"]);
  });

  it("makes distinct ids that sort by time", () => {
    const a = newChatId(1000);
    const b = newChatId(2000);
    expect(a).not.toBe(newChatId(1000));
    expect([b, a].sort()).toEqual([a, b]);
    expect(a).toMatch(/^chat-[a-z0-9]+-[0-9a-f]{8}$/);
  });
});
