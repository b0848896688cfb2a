// The host's side of held tasks with the real core: the chat's context and turns by handle give
// what the full-task calls give, the full task crosses only when the engine does not hold that very
// copy (first use, a loaded chat, eviction), and the meter's file is read again only when its
// version changed; Condense Now on the file the meter holds condenses it by handle, as condensing
// it whole would.
import { describe, expect, it } from "vitest";
import type { ChatOptions, ChatTask } from "@context-condenser/protocol";
import type { CondenseEngine } from "../wasm/condense_wasm";
import { HeldChat, HeldDocs, heldDocTokens } from "../src/heldTasks";
import { newTestEngine } from "./core";

/** The engine, with the number of full tasks and texts it was handed counted. */
function countingEngine(): { engine: CondenseEngine; holds: () => number } {
  const engine = newTestEngine();
  let holds = 0;
  const proxy = new Proxy(engine, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (prop === "holdChat" || prop === "holdConversation") holds++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { engine: proxy, holds: () => holds };
}

const options: ChatOptions = {
  llm: { profile: { id: "p", kind: "openai-compatible", base_url: "http://127.0.0.1:9/v1", model: "gpt-4o", context_window: 32000, max_output: 1000 }, maxRetries: 0 },
  nowMs: 1_700_000_000_000,
} as ChatOptions;

function chat(engine: CondenseEngine, id: string, n: number): ChatTask {
  const task = engine.newChat(id, 1000);
  for (let i = 0; i < n; i++) {
    task.conversation.messages.push({
      id: `m${i}`,
      ts: 1000,
      role: i % 2 ? "assistant" : "user",
      content: [{ type: "text", text: `Message ${i}: ${"grep output and logs ".repeat(20)}` }],
    } as ChatTask["conversation"]["messages"][number]);
  }
  return task;
}

describe("HeldChat", () => {
  it("measures by handle what the full task measures, holding the task once", () => {
    const { engine, holds } = countingEngine();
    const held = new HeldChat();
    const task = chat(engine, "a", 30);
    const status = held.context(engine, task, options);
    expect(status).toEqual(engine.chatContext(task, options));
    expect(held.context(engine, task, options)).toEqual(status);
    expect(holds()).toBe(1);
    // Another copy of the chat (loaded from disk, undone): held again.
    held.context(engine, structuredClone(task), options);
    expect(holds()).toBe(2);
  });

  it("a turn by handle saves what a full turn saves; the next turn sends nothing whole", async () => {
    const { engine, holds } = countingEngine();
    const held = new HeldChat();
    const task = chat(engine, "b", 6);
    const events: string[] = [];
    // The fetch fails: the turn ends with an Error event, and the task keeps the user's message.
    const outcome = await held.chat(engine, task, { type: "user", content: "Why?" }, options, (e) => events.push(e.type));
    const full = await engine.chat(structuredClone(task), { type: "user", content: "Why?" }, options, undefined);
    expect(events).toContain("Error");
    expect(outcome).toEqual(full);
    const next = await held.chat(engine, outcome.task, { type: "user", content: "Again?" }, options, () => {});
    expect(next.task.conversation.messages.length).toBe(full.task.conversation.messages.length + 1);
    expect(held.context(engine, next.task, options)).toEqual(engine.chatContext(next.task, options));
    expect(holds()).toBe(1);
  });

  it("holds the task again when the engine let it go", () => {
    const { engine, holds } = countingEngine();
    const held = new HeldChat();
    const task = chat(engine, "c", 4);
    held.context(engine, task, options);
    for (let i = 0; i < 8; i++) engine.holdChat(chat(engine, `other-${i}`, 1));
    expect(held.context(engine, task, options)).toEqual(engine.chatContext(task, options));
    expect(holds()).toBe(10);
  });
});

describe("heldDocTokens", () => {
  it("counts as countTokens does, reading the text again only for a new version", async () => {
    const { engine, holds } = countingEngine();
    const conversation = { ...chat(engine, "d", 10).conversation, format: "context-condenser/conversation@1" };
    let text = JSON.stringify(conversation);
    let version = 1;
    const doc = { uri: { toString: () => "file:///d.json" }, get version() { return version; }, getText: () => text };
    const first = await heldDocTokens(engine, undefined, doc, "gpt-4o");
    expect(first.tokens).toBe(engine.countTokens(conversation, "gpt-4o").total_tokens);
    const again = await heldDocTokens(engine, first.held, doc, "gpt-4o");
    expect(again.tokens).toBe(first.tokens);
    expect(holds()).toBe(1);

    conversation.messages[3].content = [{ type: "text", text: "shorter" }];
    text = JSON.stringify(conversation);
    version = 2;
    const edited = await heldDocTokens(engine, again.held, doc, "gpt-4o");
    expect(edited.tokens).toBe(engine.countTokens(conversation, "gpt-4o").total_tokens);
    expect(holds()).toBe(2);

    text = "{ not a conversation";
    version = 3;
    expect((await heldDocTokens(engine, edited.held, doc, "gpt-4o")).tokens).toBeUndefined();
  });
});

/** A value without the wall-clock durations a run records. */
const stable = (v: unknown) => JSON.parse(JSON.stringify(v, (k, x) => (k === "time_ms" || k === "time_elapsed_ms" ? 0 : x)));

describe("HeldDocs", () => {
  /** A conversation file of `n` messages whose tool results repeat, as a document at `version`. */
  function file(engine: CondenseEngine, n: number) {
    const messages = [];
    for (let i = 0; i < n; i++) {
      messages.push({ id: `u${i}`, ts: 0, role: "user", content: [{ type: "text", text: `Step ${i}: read the log again.` }] });
      messages.push({ id: `a${i}`, ts: 0, role: "assistant", content: [{ type: "tool_use", id: `t${i}`, name: "read_file", input: { path: "app.log" } }] });
      messages.push({
        id: `r${i}`,
        ts: 0,
        role: "user",
        content: [{ type: "tool_result", tool_use_id: `t${i}`, content: `${"GET /health 200 3ms\n".repeat(40)}step ${i % 3}` }],
      });
    }
    const conversation = engine.parseConversation({ format: "context-condenser/conversation@1", system: "Be brief.", messages });
    const doc = { uri: { toString: () => "file:///log-chat.json" }, version: 7, getText: () => JSON.stringify(conversation) };
    return { conversation, doc };
  }

  it("condenses the file the meter holds by handle, as condensing it whole does", async () => {
    const { engine, holds } = countingEngine();
    const docs = new HeldDocs();
    const { conversation, doc } = file(engine, 12);
    const tokens = (await docs.tokens(engine, doc, "gpt-4o"))!;
    expect(tokens).toBe(engine.countTokens(conversation, "gpt-4o").total_tokens);
    for (const options of [{ provider: "lossless" }, { provider: "truncation", targetTokens: Math.round(tokens / 2) }]) {
      const whole = await engine.condense(conversation, { ...options, model: "gpt-4o" });
      expect(whole.error ?? null).toBeNull();
      const held = await docs.condense(engine, doc, { ...options, model: "gpt-4o" });
      const { messages: _m, system: _s, ...figures } = whole;
      const { handle: _h, ...heldFigures } = held.outcome;
      expect(stable(heldFigures)).toEqual(stable(figures));
      // The condensed file's text: the whole result's conversation.
      const text = JSON.parse(held.text!);
      expect(text.messages).toEqual(engine.parseConversation(whole).messages);
      expect(text.system).toBe("Be brief.");
    }
    // The meter's copy was condensed in place: held once for the first count, and again for each
    // later use of the unchanged file (the engine's copy had moved on).
    expect(holds()).toBe(2);
    expect(await docs.tokens(engine, doc, "gpt-4o")).toBe(tokens);
    expect(holds()).toBe(3);
  });

  it("holds the file again when the engine let it go, and reports a run that failed", async () => {
    const { engine, holds } = countingEngine();
    const docs = new HeldDocs();
    const { doc } = file(engine, 4);
    await docs.tokens(engine, doc, "gpt-4o");
    for (let i = 0; i < 8; i++) engine.holdConversation(`file:///other-${i}.json`, doc.getText());
    const held = await docs.condense(engine, doc, { provider: "lossless", model: "gpt-4o" });
    expect(held.outcome.error ?? null).toBeNull();
    expect(holds()).toBe(10);
    // Nothing left to de-duplicate in the condensed file: the run fails, no text.
    const again = { ...doc, version: 8, getText: () => held.text! };
    const failed = await docs.condense(engine, again, { provider: "lossless", model: "gpt-4o" });
    expect(failed.outcome.error?.kind).toBe("nothing_to_condense");
    expect(failed.text).toBeUndefined();
  });

  it("refuses a file that is not a conversation", async () => {
    const engine = newTestEngine();
    const docs = new HeldDocs();
    const doc = { uri: { toString: () => "file:///broken.json" }, version: 1, getText: () => "{ not json" };
    expect(() => docs.hold(engine, doc)).toThrow(expect.objectContaining({ kind: "invalid_input" }));
    expect(await docs.tokens(engine, doc, "gpt-4o")).toBeUndefined();
  });
});
