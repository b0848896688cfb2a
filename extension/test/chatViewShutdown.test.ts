// ChatView.shutdown with the real engine, the real chat store on disk and the fixture server: a
// turn streaming from a server that stalls after its first delta is cancelled by shutdown, and
// its partial answer is in the chat file on disk when shutdown returns; the session then ends with
// the agent's StatusShutdown, and nothing changes the chat after (a message, a pin). An engine
// never built is not built by shutdown. VS Code itself is replaced by the little the chat view
// touches on this path.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { ChatOptions, type ChatTask, type ToWebview } from "@context-condenser/protocol";
import type { CondenseEngine } from "../wasm/condense_wasm";
// @ts-expect-error: a plain ES module of the test servers, without types.
import { startFixtureLlm } from "../../tests/js/servers.mjs";
import { ChatStore } from "../src/chat/chatStore";
import { type ChatHost, ChatView } from "../src/chat/chatView";
import { makeHost } from "../src/engine/engine";
import type { FirstRun } from "../src/settings/setup";
import { wasm } from "./core";

vi.mock("vscode", () => ({
  Uri: { joinPath: (base: { path: string }, ...parts: string[]) => ({ path: [base.path, ...parts].join("/"), toString: () => [base.path, ...parts].join("/") }) },
  window: {
    showWarningMessage: async () => undefined,
    showInformationMessage: async () => undefined,
  },
  commands: { executeCommand: async () => undefined },
}));

const KEY = "shutdown-view-key";

/** A webview view as VS Code hands it: messages in through the listener, out into `posted`. */
function fakeView() {
  const posted: ToWebview[] = [];
  let listener: ((raw: unknown) => unknown) | undefined;
  const view = {
    webview: {
      options: {},
      html: "",
      cspSource: "vscode-resource:",
      asWebviewUri: (uri: unknown) => uri,
      postMessage: async (m: ToWebview) => void posted.push(m),
      onDidReceiveMessage: (l: (raw: unknown) => unknown) => void (listener = l),
    },
    onDidDispose: () => ({ dispose() {} }),
  };
  return { view, posted, send: (message: unknown) => listener!(message) };
}

/** A memento in memory. */
function memento(initial: Record<string, unknown> = {}) {
  const values = new Map<string, unknown>(Object.entries(initial));
  return {
    keys: () => [...values.keys()],
    get: <T>(key: string, fallback?: T) => (values.has(key) ? (values.get(key) as T) : fallback),
    update: async (key: string, value: unknown) => void values.set(key, value),
  };
}

const log = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {}, trace: () => {} };

describe("ChatView.shutdown", () => {
  let llm: { origin: string; stop(): Promise<void> };
  let dir: string;
  beforeAll(async () => {
    llm = await startFixtureLlm({ apiKey: KEY, stallSeconds: 600 });
  });
  afterAll(async () => {
    await llm?.stop();
  });
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "chat-shutdown-"));
    return () => rm(dir, { recursive: true, force: true });
  });

  function chatView(engine: () => CondenseEngine, loaded: () => boolean, state: Record<string, unknown> = {}) {
    const options = (apiKey?: string): ChatOptions =>
      ChatOptions.parse({
        llm: {
          profile: { id: "fixture", kind: "openai-compatible", base_url: `${llm.origin}/v1`, model: "fault-stall", context_window: 32000, max_output: 1000 },
          ...(apiKey ? { apiKey } : {}),
        },
        nowMs: Date.now(),
      });
    const host: ChatHost = {
      engine,
      engineLoaded: loaded,
      chatOptions: async () => options(KEY),
      measureOptions: () => options(),
      profiles: () => [],
      profileId: () => "fixture",
      selectProfile: async () => {},
      profileProblem: () => undefined,
      blocked: () => undefined,
      firstRun: {} as FirstRun,
      useGateway: async () => {},
      report: () => {},
      changed: () => {},
      log: log as never,
    };
    const store = new ChatStore(path.join(dir, "chats"));
    const chat = new ChatView({ path: "/extension" } as never, store, memento(state) as never, host);
    const webview = fakeView();
    chat.resolveWebviewView(webview.view as never);
    return { chat, store, posted: webview.posted, send: webview.send };
  }

  it("saves the cancelled turn's partial answer to disk, ends the session, and takes nothing after", async () => {
    const engine = new wasm.CondenseEngine(makeHost(log));
    const { chat, store, posted, send } = chatView(() => engine, () => true);
    const events = () => posted.flatMap((m) => (m.type === "event" ? [m.event] : []));

    const turn = send({ type: "send", text: "Explain the importer." });
    // Hang guard only: the fixture sends its first delta at once, then stalls for ten minutes.
    await vi.waitFor(() => expect(events().some((e) => e.type === "MessageContent")).toBe(true), { timeout: 60_000, interval: 20 });

    await chat.shutdown(60_000);
    await turn;
    const state = [...posted].reverse().find((m) => m.type === "state" && m.task);
    const id = state?.type === "state" ? state.task?.id : undefined;
    expect(id).toBeDefined();
    const file = JSON.parse(await readFile(path.join(dir, "chats", `${id}.json`), "utf8")) as ChatTask;
    const answer = file.conversation.messages.at(-1)!;
    expect(answer.role).toBe("assistant");
    expect(answer.interrupted).toBe("cancelled");
    expect(JSON.stringify(answer.content)).toContain("Partial");
    expect(file.conversation.messages.at(-2)?.role).toBe("user");
    expect(events().at(-1)?.type).toBe("StatusShutdown");

    // After shutdown nothing changes the chat: a new message and a pin are refused, the file
    // stays as the turn saved it.
    const saved = await readFile(path.join(dir, "chats", `${id}.json`), "utf8");
    await send({ type: "send", text: "One more thing." });
    await send({ type: "pin", id: answer.id, pinned: true });
    expect(await readFile(path.join(dir, "chats", `${id}.json`), "utf8")).toBe(saved);
    expect((await store.list()).chats).toHaveLength(1);
  });

  it("with a chat restored but no engine built, builds none", async () => {
    // A chat saved by an earlier window, restored as the active one.
    const { task } = new wasm.CondenseEngine(makeHost(log)).newChat("chat-restored", 1000);
    await new ChatStore(path.join(dir, "chats")).save(task, 0);
    let built = 0;
    const { chat } = chatView(
      () => {
        built++;
        throw new Error("the engine was built");
      },
      () => false,
      { "contextCondenser.activeChat": "chat-restored" },
    );
    // Restoring measures the chat, which asks for the engine (the real holder would build it);
    // shutdown must not ask again.
    await vi.waitFor(() => expect(chat.active().task?.id).toBe("chat-restored"), { timeout: 60_000, interval: 20 });
    const before = built;
    await chat.shutdown(1000);
    expect(built).toBe(before);
  });
});
