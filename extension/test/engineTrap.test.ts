// Recovery from a trapped engine, with a real panic: the wasm package built with the `test-panic`
// feature (scripts/build-wasm --test-panic, into target/wasm-test-panic/; never shipped) panics on
// a marker input. The guard must turn the trap into a typed `engine_crashed` failure, for a sync
// call and for a chat turn whose promise would otherwise never settle; a fresh instance must then
// work, and the chat as saved must be exactly what it was before the trap.
import { mkdir, mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ChatOptions, type ChatTask } from "@context-condenser/protocol";
// @ts-expect-error: a plain ES module of the test servers, without types.
import { startFixtureLlm } from "../../tests/js/servers.mjs";
import { ChatStore } from "../src/chat/chatStore";
import { EngineTrap, isTrap } from "../src/engine/engine";
import { EngineHolder } from "../src/engine/engineHolder";
import { asFailure } from "../src/engine/errors";
import { GatewayController } from "../src/gateway/gatewayCommands";
import { HeldChat } from "../src/engine/heldTasks";
import * as fake from "./fakeVscode";
import { PANIC_MARKER, PANIC_PACKAGE, type Trap, guardedEngine, panicCore } from "./core";

const KEY = "trap-test-key";

/** The trap's RuntimeError also reaches Node as an uncaught exception (from the task queue's
 *  microtask, or after the sync throw): the extension host logs those; here they are collected. */
const uncaught: unknown[] = [];
const collect = (e: unknown) => void uncaught.push(e);

describe("a trapped engine", () => {
  let llm: { origin: string; stop(): Promise<void> };
  let dir: string;
  beforeAll(async () => {
    panicCore();
    llm = await startFixtureLlm({ apiKey: KEY });
  });
  afterAll(async () => {
    await llm?.stop();
  });
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "trap-"));
    uncaught.length = 0;
    process.on("uncaughtException", collect);
  });
  afterEach(async () => {
    process.off("uncaughtException", collect);
    await rm(dir, { recursive: true, force: true });
  });

  it("a sync call that traps fails with engine_crashed, and the next instance works", () => {
    const core = panicCore();
    const traps: Trap[] = [];
    const { engine, instance } = guardedEngine(core, traps);
    expect(engine.parseConversation('{"messages":[]}').messages).toEqual([]);

    let thrown: unknown;
    try {
      engine.parseConversation(PANIC_MARKER);
    } catch (e) {
      thrown = e;
    }
    expect(asFailure(thrown).kind).toBe("engine_crashed");
    expect(traps.map((t) => t.what)).toEqual(["parseConversation"]);
    expect(isTrap(traps[0].e)).toBe(true);

    const fresh = guardedEngine(core, traps);
    expect(fresh.instance.generation).toBe(instance.generation + 1);
    expect(fresh.engine.parseConversation('{"messages":[]}').messages).toEqual([]);
    expect(fresh.engine.countTokens({ messages: [{ role: "user", content: "hello there" }] }, "gpt-4o").total_tokens).toBeGreaterThan(0);
  });

  it("a chat turn that traps mid-turn ends with engine_crashed, the saved chat is intact, and the next turn works", async () => {
    const core = panicCore();
    const traps: Trap[] = [];
    const store = new ChatStore(path.join(dir, "chats"));
    const options = () =>
      ChatOptions.parse({
        llm: {
          profile: { id: "fixture", kind: "openai-compatible", base_url: `${llm.origin}/v1`, model: "fixture", context_window: 32000, max_output: 1000 },
          apiKey: KEY,
        },
        provider: "native",
        nowMs: Date.now(),
      });

    // A first turn, saved; the chat reaches the engine as the chat view's do (HeldChat).
    const held = new HeldChat();
    let { engine } = guardedEngine(core, traps);
    const first = await held.chat(engine, held.newChat(engine, "chat-1", 1000), { type: "user", content: "Why are nested groups dropped?" }, options(), () => {});
    const saved = await store.save(first.task, 0);
    const file = path.join(dir, "chats", "chat-1.json");
    const before = await readFile(file, "utf8");

    // The trap, mid-turn: after the user's message was emitted, with the engine's state borrowed.
    const events: string[] = [];
    const turn = held.chat(engine, first.task, { type: "user", content: PANIC_MARKER }, options(), (e) => events.push(e.type));
    const failure = await turn.then(
      () => undefined,
      (e: unknown) => asFailure(e),
    );
    expect(failure?.kind).toBe("engine_crashed");
    // The turn began, and trapped while it emitted the user's message, before the host saw it.
    expect(events).toEqual(["ThinkingStart"]);
    expect(traps).toHaveLength(1);
    expect(traps[0].e).toBeInstanceOf(EngineTrap);
    expect(String((traps[0].e as Error).message)).toContain("panics on purpose");
    // Nothing was written: the chat on disk is the one saved before the turn.
    expect(await readFile(file, "utf8")).toBe(before);

    // A fresh engine continues the saved chat (held anew: the fresh engine holds nothing).
    ({ engine } = guardedEngine(core, traps));
    const loaded = await store.load("chat-1");
    if (!loaded?.ok) throw new Error("the saved chat did not load");
    const next = await held.chat(engine, loaded.chat.task as ChatTask, { type: "user", content: "And commas?" }, options(), () => {});
    expect(next.task.conversation.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    await store.save(next.task, saved.revision);
    expect(traps).toHaveLength(1);
  });

  it("the chat's engine and the gateway's, on one instance, are both replaced after a trap in either", async () => {
    fake.reset();
    fake.config.user["gateway.anthropicUpstream"] = llm.origin;
    fake.config.user["gateway.provider"] = "smart";
    // The engine holder loads `<extension>/wasm`: here, the test build.
    const extension = path.join(dir, "extension");
    await mkdir(extension);
    await symlink(PANIC_PACKAGE, path.join(extension, "wasm"));
    const lines: string[] = [];
    const at = (level: string) => (message: string) => void lines.push(`${level}: ${message}`);
    const log = { info: at("info"), warn: at("warn"), error: at("error"), debug() {}, trace() {}, show() {} };
    const holder = new EngineHolder(extension, log as never, () => {});
    const gateway = new GatewayController(() => holder.gatewayEngine(), holder.onDidCrash, () => Promise.reject(new Error("no model in this test")), path.join(dir, "storage"), log as never);
    const crashes = () => lines.filter((l) => l.startsWith("error: engine_crashed")).length;
    try {
      expect(await gateway.start(0)).toBe(true);
      const { port } = gateway.running!;
      const works = async () => {
        expect(holder.engine.parseConversation('{"messages":[]}').messages).toEqual([]);
        expect((await gateway.running!.gateway.report()).config.provider).toBe("smart");
      };
      await works();

      // A trap in the chat's engine: the gateway's engine (same instance) is replaced too.
      let [chat, gw] = [holder.engine, gateway.running!.gateway];
      expect(() => holder.engine.parseConversation(PANIC_MARKER)).toThrow(/engine stopped on an internal error/);
      expect(holder.engine).not.toBe(chat);
      expect(gateway.running!.gateway).not.toBe(gw);
      expect(gateway.running!.port).toBe(port);
      await works();
      expect(crashes()).toBe(1);

      // A trap in the gateway's engine (a request's body): the request goes out as sent, and the
      // chat's engine is replaced too.
      [chat, gw] = [holder.engine, gateway.running!.gateway];
      const answer = await fetch(`http://127.0.0.1:${port}/anthropic/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": KEY, "anthropic-version": "2023-06-01" },
        body: PANIC_MARKER,
      });
      await answer.text();
      const index = (await (await fetch(`${llm.origin}/requests`)).json()).length - 1;
      expect(await (await fetch(`${llm.origin}/requests/${index}/raw`)).text()).toBe(PANIC_MARKER);
      expect(holder.engine).not.toBe(chat);
      expect(gateway.running!.gateway).not.toBe(gw);
      await works();
      expect(crashes()).toBe(2);
      expect(lines.filter((l) => l.includes("a fresh engine goes on"))).toHaveLength(2);
    } finally {
      await gateway.stop();
      gateway.dispose();
      holder.dispose();
    }
  });
});
