// The chat view and the file commands with the real core, a real chat store on disk and the
// `vscode` stand-in (test/fakeVscode.ts): each chat remembers its profile and brings it back when
// it is opened; Preview on a session file writes the previewed result to a new file beside it and
// never changes the original.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChatTask, ProfileOption, ToWebview } from "@context-condenser/protocol";
import type { CondenseEngine } from "../wasm/condense_wasm";
import { ChatStore } from "../src/chat/chatStore";
import { type ChatHost, ChatView } from "../src/chat/chatView";
import { FileCommands } from "../src/files/fileCommands";
import { HeldDocs } from "../src/engine/heldTasks";
import { newTestEngine } from "./core";
import * as fake from "./fakeVscode";

const CHAT_PROFILES = "contextCondenser.chatProfiles";

/** A file's URI, as the extension's code takes it. */
const uri = (p: string) => fake.Uri.file(p) as unknown as import("vscode").Uri;

/** The global state: a map. */
function memento(): { get<T>(key: string): T | undefined; update(key: string, value: unknown): Promise<void>; keys(): string[] } {
  const values = new Map<string, unknown>();
  return {
    get: <T>(key: string) => values.get(key) as T | undefined,
    update: async (key: string, value: unknown) => {
      if (value === undefined) values.delete(key);
      else values.set(key, value);
    },
    keys: () => [...values.keys()],
  };
}

const log = { info() {}, warn() {}, error() {}, debug() {}, trace() {} };

/** The view's host with a profile picker: `selected` is the chat profile, `selections` every change. */
function host(engine: CondenseEngine, profiles: ProfileOption[], first: string | null) {
  const state = { selected: first, selections: [] as string[] };
  const chatHost: ChatHost = {
    engine: () => engine,
    engineLoaded: () => true,
    chatOptions: () => Promise.reject(new Error("no turns in these tests")),
    measureOptions: () => undefined,
    profiles: () => profiles,
    profileId: () => state.selected,
    selectProfile: async (id) => {
      state.selected = id;
      state.selections.push(id);
    },
    profileProblem: (id) => (id === "notes-cli" ? "profile 'notes-cli': tool 'notes' cannot be the chat model" : undefined),
    blocked: () => undefined,
    firstRun: {} as ChatHost["firstRun"],
    useGateway: async () => {},
    report: () => {},
    changed: () => {},
    log: log as unknown as ChatHost["log"],
  };
  return { chatHost, state };
}

/** A view resolved into a stand-in webview: `send` is the webview posting, `posted` what it got. */
function resolve(view: ChatView) {
  const posted: ToWebview[] = [];
  let receive: (raw: unknown) => Promise<void> = async () => {};
  const webview = {
    options: {},
    html: "",
    cspSource: "vscode-resource:",
    asWebviewUri: (u: fake.Uri) => u,
    postMessage: async (m: ToWebview) => {
      posted.push(m);
      return true;
    },
    onDidReceiveMessage: (f: (raw: unknown) => Promise<void>) => {
      receive = f;
    },
  };
  view.resolveWebviewView({ webview, onDidDispose: () => {} } as never);
  return { posted, send: (message: unknown) => receive(message) };
}

function chat(engine: CondenseEngine, id: string, title: string): ChatTask {
  const { task } = engine.newChat(id, 1_000);
  task.title = title;
  task.conversation.messages.push({ id: "m1", ts: 1_000, role: "user", content: [{ type: "text", text: `About ${title}` }] } as ChatTask["conversation"]["messages"][number]);
  return task;
}

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "chat-view-"));
  fake.reset();
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("each chat's profile", () => {
  it("is not changed to one the core refuses: the error is shown and the picker set back", async () => {
    const engine = newTestEngine();
    const store = new ChatStore(path.join(dir, "chats"));
    await store.save(chat(engine, "chat-a", "Parser"), 0);
    const profiles = [
      { id: "gpt", model: "gpt-4o-mini", context_window: 128_000 },
      { id: "notes-cli", model: "m", context_window: 8192 },
    ];
    const global = memento();
    const { chatHost, state } = host(engine, profiles, "gpt");
    const view = new ChatView(uri(dir), store, global as never, chatHost);
    const { send, posted } = resolve(view);
    await send({ type: "openChat", id: "chat-a" });
    posted.length = 0;
    await send({ type: "selectProfile", id: "notes-cli" });
    expect(state.selected).toBe("gpt");
    expect(state.selections).toEqual([]);
    expect(global.get(CHAT_PROFILES)).toBeUndefined();
    expect(fake.shown.errors).toEqual(["Context Condenser: profile 'notes-cli': tool 'notes' cannot be the chat model"]);
    // The view is sent its state again, with the chat profile it has.
    expect(posted.some((m) => m.type === "state" && (m as { profileId?: string | null }).profileId === "gpt")).toBe(true);
  });

  it("is remembered when picked and brought back when the chat is opened, across a reload", async () => {
    const engine = newTestEngine();
    const store = new ChatStore(path.join(dir, "chats"));
    await store.save(chat(engine, "chat-a", "Parser"), 0);
    await store.save(chat(engine, "chat-b", "Importer"), 0);
    const profiles = [
      { id: "gpt", model: "gpt-4o-mini", context_window: 128_000 },
      { id: "local", model: "qwen", context_window: 32_768 },
    ];
    const global = memento();
    const { chatHost, state } = host(engine, profiles, "gpt");
    const view = new ChatView(uri(dir), store, global as never, chatHost);
    const { send } = resolve(view);

    // A: opened and given "local"; B: opened (never picked: the current profile stays) and given "gpt".
    await send({ type: "openChat", id: "chat-a" });
    await send({ type: "selectProfile", id: "local" });
    await send({ type: "openChat", id: "chat-b" });
    expect(state.selected).toBe("local");
    await send({ type: "selectProfile", id: "gpt" });
    expect(global.get(CHAT_PROFILES)).toEqual({ "chat-a": "local", "chat-b": "gpt" });
    state.selections.length = 0;

    // Opening each brings its own back.
    await send({ type: "openChat", id: "chat-a" });
    expect(state.selected).toBe("local");
    await send({ type: "openChat", id: "chat-b" });
    expect(state.selected).toBe("gpt");
    expect(state.selections).toEqual(["local", "gpt"]);

    // After a reload (a new view on the same global state), the same.
    const again = host(engine, profiles, "gpt");
    const reloaded = resolve(new ChatView(uri(dir), store, global as never, again.chatHost));
    await reloaded.send({ type: "openChat", id: "chat-a" });
    expect(again.state.selections).toEqual(["local"]);

    // A remembered profile that no longer exists is not forced on the chat.
    const gone = host(engine, [profiles[0]], "gpt");
    const withoutLocal = resolve(new ChatView(uri(dir), store, global as never, gone.chatHost));
    await withoutLocal.send({ type: "openChat", id: "chat-a" });
    expect(gone.state.selections).toEqual([]);

    // A deleted chat's profile is forgotten with it.
    fake.dialogs.warning = (message) => (message.startsWith('Delete the chat "Parser"') ? "Delete" : undefined);
    await send({ type: "deleteChat", id: "chat-a" });
    expect(await store.load("chat-a")).toBeUndefined();
    expect(global.get(CHAT_PROFILES)).toEqual({ "chat-b": "gpt" });
  });
});

/** A Claude Code session (JSONL events chained by parentUuid) of `turns` long turns. */
function claudeCodeSession(turns: number): string {
  const lines: string[] = [];
  for (let n = 0; n < turns * 2; n++) {
    const role = n % 2 === 0 ? "user" : "assistant";
    const text = `${role} turn ${n}: the parser drops nested parentheses after a comma; ${"we read parse_group and the tokenizer again. ".repeat(12)}`;
    lines.push(
      JSON.stringify({
        parentUuid: n === 0 ? null : `e-${n - 1}`,
        isSidechain: false,
        type: role,
        message: role === "user" ? { role, content: text } : { id: `msg_${n}`, role, model: "claude-sonnet-4-5", content: [{ type: "text", text }] },
        uuid: `e-${n}`,
        timestamp: new Date(Date.UTC(2026, 0, 1, 9, 0, n)).toISOString(),
      }),
    );
  }
  return `${lines.join("\n")}\n`;
}

describe("Preview on a session file", () => {
  it("shows the estimate, then the preview; Apply writes the previewed result to a new file beside it and leaves the original as it was", async () => {
    const engine = newTestEngine();
    engine.setDefaultProvider("truncation");
    const { chatHost } = host(engine, [], null);
    const view = new ChatView(uri(dir), new ChatStore(path.join(dir, "chats")), memento() as never, chatHost);
    const { posted, send } = resolve(view);
    const holder = { engine, settings: { profiles: [], chatProfile: "", condensingProfile: "" } };
    const secrets = { key: async () => undefined };
    const files = new FileCommands(holder as never, view, secrets as never, () => {}, new HeldDocs());

    const session = path.join(dir, "session.jsonl");
    fs.writeFileSync(session, claudeCodeSession(10));
    const original = fs.readFileSync(session);
    await files.openSessionFile(uri(session));
    expect(fake.shown.info.at(-1)).toMatch(/^Context Condenser: session\.jsonl: 20 messages, [\d,]+ tokens/);

    await files.previewNow();
    const previews = posted.filter((m): m is Extract<ToWebview, { type: "preview" }> => m.type === "preview");
    // Running, then running with the core's estimate, then the preview itself.
    expect(previews.map((m) => [m.running, m.estimate !== undefined, m.preview !== undefined])).toEqual([
      [true, false, false],
      [true, true, false],
      [false, false, true],
    ]);
    const shownPreview = previews[2].preview!;
    expect(previews[1].estimate).toEqual({
      task_id: uri(session).toString(),
      provider_id: "truncation",
      needs: "nothing",
      tokens_before: shownPreview.tokens_before,
      estimated_cost: 0,
    });
    expect(previews[2].source).toEqual({ kind: "file", name: "session.jsonl" });
    expect(shownPreview.tokens_after).toBeLessThan(shownPreview.tokens_before);
    expect(fs.existsSync(path.join(dir, "session.condensed.json"))).toBe(false);

    await send({ type: "applyPreview" });
    const written = path.join(dir, "session.condensed.json");
    expect(fs.existsSync(written)).toBe(true);
    const result = JSON.parse(fs.readFileSync(written, "utf8"));
    // Exactly the preview shown: its tokens after, every message it hides and adds.
    expect(engine.countTokens(result).total_tokens).toBe(shownPreview.tokens_after);
    const ids = new Set(result.messages.map((m: { id: string }) => m.id));
    for (const m of [...shownPreview.hidden, ...shownPreview.added]) expect(ids.has(m.id)).toBe(true);
    expect(fs.readFileSync(session).equals(original)).toBe(true);
    expect(fake.shown.opened.at(-1)).toBe(written);
    expect(fake.shown.info.at(-1)).toMatch(/applied the previewed condensation to session\.condensed\.json: [\d,]+ → [\d,]+ tokens/);
    // The preview closed.
    expect(posted.at(-1)).toEqual({ type: "preview", source: { kind: "file", name: "session.jsonl" }, running: false });

    // A second preview and Apply go to a new name: the first result is kept.
    fake.window.activeTextEditor = { document: fake.documentOf(fake.Uri.file(session)) };
    await files.previewNow();
    await send({ type: "applyPreview" });
    expect(fs.existsSync(path.join(dir, "session.condensed-2.json"))).toBe(true);
    expect(JSON.parse(fs.readFileSync(written, "utf8"))).toEqual(result);
    expect(fs.readFileSync(session).equals(original)).toBe(true);
  });
});
