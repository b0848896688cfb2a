import { link, mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChatTaskInput } from "@context-condenser/protocol";
import { REVISION_FIELD, ChatConflict, ChatStore, newChatId } from "../src/chat/chatStore";

const task = (id: string, updated: number, title = "A chat"): ChatTaskInput => ({
  id,
  title,
  created_ms: 1,
  updated_ms: updated,
  conversation: { format: "context-condenser/conversation@1", messages: [{ id: "m1", ts: 1, role: "user", content: [{ type: "text", text: "hi" }] }] },
  condensations: [],
});

/** A message added to a task, as a turn would. */
const withMessage = (t: ChatTaskInput, text: string, updated: number): ChatTaskInput => ({
  ...t,
  updated_ms: updated,
  conversation: {
    ...t.conversation,
    messages: [...t.conversation.messages, { id: `m-${text}`, ts: updated, role: "user", content: [{ type: "text", text }] }],
  },
});

const texts = (t: ChatTaskInput | undefined) => t?.conversation.messages.map((m) => (m.content[0] as { text: string }).text);

async function loaded(store: ChatStore, id: string) {
  const r = await store.load(id);
  if (!r?.ok) throw new Error(`chat ${id} did not load: ${JSON.stringify(r)}`);
  return r.chat;
}

describe("ChatStore", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "chats-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("saves, loads and lists chats, newest first, with revisions, leaving no temporary or lock file", async () => {
    const store = new ChatStore(path.join(dir, "chats"));
    expect(await store.save(task("chat-a", 10, "Older"), 0)).toEqual({ revision: 1 });
    expect(await store.save(task("chat-b", 20, "Newer"), 0)).toEqual({ revision: 1 });
    expect(await store.save(task("chat-a", 30, "Older, changed"), 1)).toEqual({ revision: 2 });
    expect(await store.load("chat-a")).toEqual({ ok: true, chat: { task: task("chat-a", 30, "Older, changed"), revision: 2 } });
    expect(await store.load("chat-none")).toBeUndefined();
    const { chats, corrupt } = await store.list();
    expect(chats.map((c) => [c.id, c.title, c.messages])).toEqual([
      ["chat-a", "Older, changed", 1],
      ["chat-b", "Newer", 1],
    ]);
    expect(corrupt).toEqual([]);
    expect((await readdir(path.join(dir, "chats"))).sort()).toEqual(["chat-a.json", "chat-b.json"]);
    const file = JSON.parse(await readFile(path.join(dir, "chats", "chat-a.json"), "utf8"));
    // The task as the schema has it (what reads chat files keeps working), and its revision.
    expect(file).toEqual({ ...task("chat-a", 30, "Older, changed"), [REVISION_FIELD]: 2 });
  });

  it("reads files written before revisions (the bare task) as revision 0, and saves over them", async () => {
    const store = new ChatStore(dir);
    await writeFile(path.join(dir, "chat-old.json"), `${JSON.stringify(task("chat-old", 5, "From before"))}\n`);
    expect(await store.load("chat-old")).toEqual({ ok: true, chat: { task: task("chat-old", 5, "From before"), revision: 0 } });
    expect((await store.list()).chats.map((c) => c.title)).toEqual(["From before"]);
    await expect(store.save(task("chat-old", 6), 1)).rejects.toBeInstanceOf(ChatConflict);
    expect(await store.save(task("chat-old", 6, "Now wrapped"), 0)).toEqual({ revision: 1 });
    expect((await loaded(store, "chat-old")).task.title).toBe("Now wrapped");
  });

  it("reports a corrupt, truncated or wrong-shaped file, keeps it aside byte for byte, and loads the others", async () => {
    const store = new ChatStore(dir, { now: () => Date.UTC(2026, 0, 2, 3, 4, 5, 6) });
    await store.save(task("chat-good", 10, "Good"), 0);
    const whole = await readFile(path.join(dir, "chat-good.json"), "utf8");
    const bad: Record<string, string> = {
      "chat-json": "{ this is not json",
      "chat-truncated": whole.slice(0, Math.floor(whole.length / 2)),
      "chat-shape": JSON.stringify({ id: "chat-shape", title: 3 }),
      "chat-array": "[1, 2, 3]",
      "chat-revision": JSON.stringify({ ...task("chat-revision", 1), [REVISION_FIELD]: "two" }),
    };
    for (const [id, text] of Object.entries(bad)) await writeFile(path.join(dir, `${id}.json`), text);

    const { chats, corrupt } = await store.list();
    expect(chats.map((c) => c.id)).toEqual(["chat-good"]);
    expect(corrupt.map((c) => c.file).sort()).toEqual(Object.keys(bad).map((id) => `${id}.json`).sort());
    const stamp = "2026-01-02T03-04-05-006Z";
    for (const c of corrupt) {
      expect(c.kind).toBe("corrupt_chat");
      expect(c.keptAs).toBe(`${c.file}.corrupt-${stamp}`);
      expect(await readFile(path.join(dir, c.keptAs!), "utf8")).toBe(bad[c.file.slice(0, -5)]);
    }
    const reason = (id: string) => corrupt.find((c) => c.file === `${id}.json`)?.reason;
    expect(reason("chat-json")).toMatch(/not JSON/);
    expect(reason("chat-truncated")).toMatch(/not JSON.*cut short/);
    expect(reason("chat-shape")).toMatch(/not a chat: (title|conversation|created_ms|updated_ms|condensations)/);
    expect(reason("chat-array")).toMatch(/not a chat/);
    expect(reason("chat-revision")).toMatch(/revision/);
    // Nothing was deleted: the good chat, and every bad file under its new name.
    expect((await readdir(dir)).sort()).toEqual(["chat-good.json", ...Object.keys(bad).map((id) => `${id}.json.corrupt-${stamp}`)].sort());
    // The next listing is clean; the good chat still loads.
    expect(await store.list()).toEqual({ chats, corrupt: [] });
    expect((await loaded(store, "chat-good")).task.title).toBe("Good");
  });

  it("load reports a corrupt file (which, why, kept where) instead of throwing, and never overwrites a kept file", async () => {
    const store = new ChatStore(dir, { now: () => 0 });
    await writeFile(path.join(dir, "chat-x.json"), "{");
    const first = await store.load("chat-x");
    expect(first).toEqual({
      ok: false,
      corrupt: { kind: "corrupt_chat", file: "chat-x.json", reason: expect.stringMatching(/not JSON/), keptAs: "chat-x.json.corrupt-1970-01-01T00-00-00-000Z" },
    });
    await writeFile(path.join(dir, "chat-x.json"), "[");
    const second = await store.load("chat-x");
    expect(second?.ok === false && second.corrupt.keptAs).toBe("chat-x.json.corrupt-1970-01-01T00-00-00-000Z-1");
    expect(await readFile(path.join(dir, "chat-x.json.corrupt-1970-01-01T00-00-00-000Z"), "utf8")).toBe("{");
    expect(await readFile(path.join(dir, "chat-x.json.corrupt-1970-01-01T00-00-00-000Z-1"), "utf8")).toBe("[");
    expect(await store.load("chat-x")).toBeUndefined();
  });

  it("refuses a save over a revision that moved on, with a typed conflict, and overwrites nothing", async () => {
    const a = new ChatStore(dir);
    const b = new ChatStore(dir);
    await a.save(task("chat-s", 1), 0);
    const inA = await loaded(a, "chat-s");
    const inB = await loaded(b, "chat-s");
    expect(await b.save(withMessage(inB.task, "from B", 2), inB.revision)).toEqual({ revision: 2 });
    const conflict = await a.save(withMessage(inA.task, "from A", 3), inA.revision).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ChatConflict);
    expect(conflict).toMatchObject({ kind: "chat_conflict", id: "chat-s", expected: 1, found: 2 });
    expect((conflict as Error).message).toMatch(/changed in another window; reload it/);
    expect(texts((await loaded(a, "chat-s")).task)).toEqual(["hi", "from B"]);
    // A chat deleted in another window is a conflict too, not a silent re-creation.
    await b.delete("chat-s");
    await expect(a.save(inA.task, 2)).rejects.toMatchObject({ found: null, message: expect.stringMatching(/deleted in another window/) });
    expect(await readdir(dir)).toEqual([]);
  });

  it("two stores saving the same chat at once from the same revision: exactly one wins, no update is lost", async () => {
    const a = new ChatStore(dir, { lockRetryMs: 1 });
    const b = new ChatStore(dir, { lockRetryMs: 1 });
    await a.save(task("chat-r", 0), 0);
    const expected = ["hi"];
    for (let round = 1; round <= 30; round++) {
      const [inA, inB] = await Promise.all([loaded(a, "chat-r"), loaded(b, "chat-r")]);
      expect(inA.revision).toBe(inB.revision);
      const results = await Promise.allSettled([
        a.save(withMessage(inA.task, `A${round}`, round), inA.revision),
        b.save(withMessage(inB.task, `B${round}`, round), inB.revision),
      ]);
      const won = results.filter((r) => r.status === "fulfilled");
      const lost = results.filter((r) => r.status === "rejected");
      expect(won, `round ${round}`).toHaveLength(1);
      expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(ChatConflict);
      // The loser reloads, applies its change again and saves: both updates are kept.
      const winner = results[0].status === "fulfilled" ? "A" : "B";
      const loser = winner === "A" ? b : a;
      const again = await loaded(loser, "chat-r");
      expect(again.revision).toBe(inA.revision + 1);
      await loser.save(withMessage(again.task, `${winner === "A" ? "B" : "A"}${round}`, round), again.revision);
      expected.push(`${winner}${round}`, `${winner === "A" ? "B" : "A"}${round}`);
    }
    const final = await loaded(a, "chat-r");
    expect(texts(final.task)).toEqual(expected);
    expect(final.revision).toBe(61);
    expect(await readdir(dir)).toEqual(["chat-r.json"]);
  });

  it("takes over a stale lock (its holder died), but waits for a live one", async () => {
    const store = new ChatStore(dir, { staleLockMs: 10_000, lockRetryMs: 1 });
    await store.save(task("chat-l", 1), 0);
    const lock = path.join(dir, "chat-l.json.lock");
    await writeFile(lock, "12345 dead-window");
    const old = (Date.now() - 60_000) / 1000;
    await utimes(lock, old, old);
    expect(await store.save(task("chat-l", 2, "After the stale lock"), 1)).toEqual({ revision: 2 });
    expect((await loaded(store, "chat-l")).task.title).toBe("After the stale lock");
    expect(await readdir(dir)).toEqual(["chat-l.json"]);

    // A live lock: the save waits for it; the holder (another window) commits revision 3 before
    // letting go, so the waiting save, checked under the lock, is a conflict.
    await writeFile(lock, "67890 live-window");
    const waiting = store.save(task("chat-l", 3, "Would overwrite"), 2).catch((e: unknown) => e);
    const other = path.join(dir, "other.tmp");
    await writeFile(other, JSON.stringify({ ...task("chat-l", 3, "Other window"), [REVISION_FIELD]: 3 }));
    await rm(path.join(dir, "chat-l.json"));
    await link(other, path.join(dir, "chat-l.json"));
    await rm(other);
    await rm(lock);
    expect(await waiting).toBeInstanceOf(ChatConflict);
    expect((await loaded(store, "chat-l")).task.title).toBe("Other window");
  });

  it("refuses ids that are not plain names", async () => {
    const store = new ChatStore(dir);
    await expect(store.save(task("../escape", 1), 0)).rejects.toThrow(/invalid chat id/);
    await expect(store.load("a/b")).rejects.toThrow(/invalid chat id/);
  });

  it("a failed write keeps the previous version (serialisation fails)", async () => {
    const store = new ChatStore(dir);
    await store.save(task("chat-a", 10, "Kept"), 0);
    const cyclic = task("chat-a", 20) as ChatTaskInput & { self?: unknown };
    cyclic.self = cyclic;
    await expect(store.save(cyclic, 1)).rejects.toThrow();
    expect(JSON.parse(await readFile(path.join(dir, "chat-a.json"), "utf8")).title).toBe("Kept");
    expect(await readdir(dir)).toEqual(["chat-a.json"]);
  });

  it("a failed write keeps the previous version (the disk fills up half way)", async () => {
    let fail = false;
    const store = new ChatStore(dir, {
      writeFile: async (file, data) => {
        if (!fail) return writeFile(file, data, "utf8");
        await writeFile(file, data.slice(0, data.length >> 1), "utf8");
        throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
      },
    });
    await store.save(task("chat-a", 10, "Kept"), 0);
    fail = true;
    await expect(store.save(task("chat-a", 20, "Lost"), 1)).rejects.toThrow(/ENOSPC/);
    expect(await loaded(store, "chat-a")).toEqual({ task: task("chat-a", 10, "Kept"), revision: 1 });
    expect(await readdir(dir)).toEqual(["chat-a.json"]);
    // The revision did not move: the next save (space freed) names the same one.
    fail = false;
    expect(await store.save(task("chat-a", 30, "Saved"), 1)).toEqual({ revision: 2 });
  });

  it("makes distinct ids that sort by time", () => {
    const a = newChatId(1000);
    const b = newChatId(2000);
    expect(a).not.toBe(newChatId(1000));
    expect([b, a].sort()).toEqual([a, b]);
    expect(a).toMatch(/^chat-[a-z0-9]+-[0-9a-f]{8}$/);
  });
});
