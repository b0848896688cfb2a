// The host's side of held tasks with the real core: the chat's context, turns, undo, pins and
// previews by handle give what the same calls give on the whole task held afresh, the full task
// crosses only when the engine does not hold that very copy (first use, a loaded chat, eviction),
// a preview applies only in the engine that made it, and the meter's file is read again only when
// its version changed; Condense Now, Preview and Undo on the file the meter holds work on it by
// handle, as condensing it whole would.
import { describe, expect, it } from "vitest";
import type { ChatOptions, ChatTask } from "@context-condenser/protocol";
import type { CondenseEngine } from "../wasm/condense_wasm";
import { HeldChat, HeldDocs, applyChange, heldDocTokens } from "../src/engine/heldTasks";
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
        if (prop === "hold") holds++;
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

/** A chat of `n` messages, as a saved one is: a copy the engine does not hold. */
function chat(engine: CondenseEngine, id: string, n: number): ChatTask {
  const task = engine.newChat(id, 1000).task;
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

/** The whole task held afresh in an engine of its own: what the by-handle calls must match. */
function whole(task: ChatTask): { engine: CondenseEngine; handle: ReturnType<CondenseEngine["hold"]> } {
  const engine = newTestEngine();
  return { engine, handle: engine.hold("chat", task.id, JSON.stringify(task)) };
}

describe("HeldChat", () => {
  it("measures by handle what the full task measures, holding the task once", () => {
    const { engine, holds } = countingEngine();
    const held = new HeldChat();
    const task = chat(engine, "a", 30);
    const status = held.context(engine, task, options);
    const full = whole(task);
    expect(status).toEqual(full.engine.chatContext(full.handle, options));
    expect(held.context(engine, task, options)).toEqual(status);
    expect(holds()).toBe(1);
    // Another copy of the chat (loaded from disk, renamed): held again.
    held.context(engine, structuredClone(task), options);
    expect(holds()).toBe(2);
  });

  it("a turn by handle saves what a turn of the whole task saves; the next turn sends nothing whole", async () => {
    const { engine, holds } = countingEngine();
    const held = new HeldChat();
    const task = chat(engine, "b", 6);
    const events: string[] = [];
    // The fetch fails: the turn ends with an Error event, and the task keeps the user's message.
    const outcome = await held.chat(engine, task, { type: "user", content: "Why?" }, options, (e) => events.push(e.type));
    const full = whole(task);
    const step = await full.engine.chat(full.handle, { type: "user", content: "Why?" }, options, undefined);
    // Only what the turn added crossed back.
    expect(step.change.keep).toBe(task.conversation.messages.length);
    expect(events).toContain("Error");
    expect(outcome).toEqual({ task: applyChange(task, step.change), context: step.context });
    const next = await held.chat(engine, outcome.task, { type: "user", content: "Again?" }, options, () => {});
    expect(next.task.conversation.messages.length).toBe(outcome.task.conversation.messages.length + 1);
    const again = whole(next.task);
    expect(held.context(engine, next.task, options)).toEqual(again.engine.chatContext(again.handle, options));
    expect(holds()).toBe(1);
  });

  it("holds the task again when the engine let it go", () => {
    const { engine, holds } = countingEngine();
    const held = new HeldChat();
    const task = chat(engine, "c", 4);
    held.context(engine, task, options);
    for (let i = 0; i < 8; i++) engine.hold("chat", `other-${i}`, JSON.stringify(chat(engine, `other-${i}`, 1)));
    const full = whole(task);
    expect(held.context(engine, task, options)).toEqual(full.engine.chatContext(full.handle, options));
    expect(holds()).toBe(10);
  });

  it("starts a new chat held by the engine, and pins and undoes by handle", () => {
    const { engine, holds } = countingEngine();
    const held = new HeldChat();
    const fresh = held.newChat(engine, "n", 1000);
    expect(fresh).toMatchObject({ id: "n", created_ms: 1000, conversation: { messages: [] } });
    expect(held.context(engine, fresh, options).tokens).toBeGreaterThan(0);
    expect(holds()).toBe(0);

    const task = chat(engine, "p", 6);
    const pinned = held.pin(engine, task, "m2", true, 2000);
    expect(pinned.conversation.messages.map((m) => m.pinned ?? false)).toEqual([false, false, true, false, false, false]);
    const full = whole(task);
    expect(pinned).toEqual(applyChange(task, full.engine.pinMessage(full.handle, "m2", true, 2000).change));
    expect(held.pin(engine, pinned, "m2", false, 3000).conversation.messages.every((m) => !m.pinned)).toBe(true);
    expect(() => held.undo(engine, pinned, undefined, 4000)).toThrow(expect.objectContaining({ kind: "nothing_to_undo" }));
    expect(holds()).toBe(2);
  });

  it("applies a preview exactly as shown, then undoes it; a preview of a replaced engine is refused", async () => {
    const { engine, holds } = countingEngine();
    const held = new HeldChat();
    const task = chat(engine, "v", 30);
    const estimates: number[] = [];
    const outcome = await held.preview(engine, task, { ...options, provider: "truncation" }, (e) => estimates.push(e.tokens_before));
    if (outcome.status !== "ready") throw new Error(`no preview: ${JSON.stringify(outcome)}`);
    const preview = outcome.preview;
    expect(estimates).toEqual([preview.tokens_before]);
    // The preview crosses as shown; its result stays in the engine.
    expect("result" in preview).toBe(false);
    const applied = held.applyPreview(engine, task, preview.condense_id, 2000);
    expect(applied.record).toMatchObject({ condense_id: preview.condense_id, tokens_before: preview.tokens_before, tokens_after: preview.tokens_after });
    expect(held.context(engine, applied.task, options).tokens).toBe(preview.tokens_after);
    const hidden = new Set(preview.hidden.map((m) => m.id));
    expect(applied.task.conversation.messages.filter((m) => hidden.has(m.id)).length).toBe(hidden.size);
    // Applied once: the engine keeps it no more.
    expect(() => held.applyPreview(engine, applied.task, preview.condense_id, 2500)).toThrow(/preview the condensation again/);
    const undone = held.undo(engine, applied.task, preview.condense_id, 3000);
    expect(undone.condense_id).toBe(preview.condense_id);
    expect(undone.task.conversation.messages).toEqual(task.conversation.messages);
    expect(holds()).toBe(1);

    // A preview made by an engine since replaced (the settings changed) is not applied.
    const again = await held.preview(engine, undone.task, { ...options, provider: "truncation" }, () => {});
    if (again.status !== "ready") throw new Error("no second preview");
    expect(() => held.applyPreview(newTestEngine(), undone.task, again.preview.condense_id, 4000)).toThrow(
      expect.objectContaining({ kind: "invalid_input", message: expect.stringMatching(/engine was replaced .*preview the condensation again/) }),
    );
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

  it("condenses the file the meter holds by handle: the text written is the condensed file, nothing lost", async () => {
    const { engine, holds } = countingEngine();
    const docs = new HeldDocs();
    const { conversation, doc } = file(engine, 12);
    const tokens = (await docs.tokens(engine, doc, "gpt-4o"))!;
    expect(tokens).toBe(engine.countTokens(conversation, "gpt-4o").total_tokens);
    for (const options of [{ provider: "lossless" }, { provider: "truncation", targetTokens: Math.round(tokens / 2) }]) {
      const held = await docs.condense(engine, doc, { ...options, model: "gpt-4o" });
      expect(held.outcome.error ?? null).toBeNull();
      expect(held.outcome.metrics?.provider_id).toBe(options.provider);
      // The condensed file's text: fewer tokens, as the result says, and every message still
      // there (a condensation hides, it does not delete).
      const text = engine.parseConversation(held.text!);
      expect(text.system).toBe("Be brief.");
      expect(engine.countTokens(text, "gpt-4o").total_tokens).toBe(held.outcome.new_context_tokens);
      expect(held.outcome.new_context_tokens!).toBeLessThan(tokens);
      const ids = new Set(text.messages.map((m) => m.id));
      for (const m of conversation.messages) expect(ids.has(m.id)).toBe(true);
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
    for (let i = 0; i < 8; i++) engine.hold("conversation", `file:///other-${i}.json`, doc.getText());
    const held = await docs.condense(engine, doc, { provider: "lossless", model: "gpt-4o" });
    expect(held.outcome.error ?? null).toBeNull();
    expect(holds()).toBe(10);
    // Nothing left to de-duplicate in the condensed file: the run fails, no text.
    const again = { ...doc, version: 8, getText: () => held.text! };
    const failed = await docs.condense(engine, again, { provider: "lossless", model: "gpt-4o" });
    expect(failed.outcome.error?.kind).toBe("nothing_to_condense");
    expect(failed.text).toBeUndefined();
  });

  it("previews the file the meter holds, applies exactly the preview unless the file changed, and undoes it, by handle", async () => {
    const { engine, holds } = countingEngine();
    const docs = new HeldDocs();
    const { conversation, doc } = file(engine, 12);
    await docs.tokens(engine, doc, "gpt-4o");
    const estimates: unknown[] = [];
    const outcome = await docs.preview(engine, doc, { provider: "truncation", model: "gpt-4o" }, (e) => estimates.push(e));
    if (outcome.status !== "ready") throw new Error(`no preview: ${JSON.stringify(outcome)}`);
    const preview = outcome.preview;
    expect(estimates).toEqual([{ task_id: "file:///log-chat.json", provider_id: "truncation", needs: "nothing", tokens_before: preview.tokens_before, estimated_cost: 0 }]);
    expect(holds()).toBe(1);

    // The file changed since: refused, and the preview is still there for the file as it was.
    const edited = structuredClone(conversation);
    edited.messages[0].content = [{ type: "text", text: "Step 0: read it once." }];
    const changed = { ...doc, version: 8, getText: () => JSON.stringify(edited) };
    await expect(docs.applyPreview(engine, changed, preview.condense_id)).rejects.toMatchObject({ kind: "invalid_input" });
    const text = await docs.applyPreview(engine, doc, preview.condense_id);
    expect(engine.countTokens(text, "gpt-4o").total_tokens).toBe(preview.tokens_after);
    const ids = new Set(engine.parseConversation(text).messages.map((m) => m.id));
    for (const m of [...preview.hidden, ...preview.added]) expect(ids.has(m.id)).toBe(true);

    // The file as written: its undo gives every message back.
    const written = { ...doc, version: 9, getText: () => text };
    const undone = await docs.undo(engine, written);
    expect(undone.condense_id).toBe(preview.condense_id);
    expect(engine.parseConversation(undone.text).messages).toEqual(conversation.messages);
    await expect(docs.undo(engine, { ...doc, version: 10, getText: () => undone.text })).rejects.toMatchObject({ kind: "nothing_to_undo" });

    // A preview made by an engine since replaced is not applied.
    const again = await docs.preview(engine, doc, { provider: "truncation", model: "gpt-4o" }, () => {});
    if (again.status !== "ready") throw new Error("no second preview");
    await expect(docs.applyPreview(newTestEngine(), doc, again.preview.condense_id)).rejects.toThrow(/engine was replaced .*preview the condensation again/);
  });

  it("refuses a file that is not a conversation", async () => {
    const engine = newTestEngine();
    const docs = new HeldDocs();
    const doc = { uri: { toString: () => "file:///broken.json" }, version: 1, getText: () => "{ not json" };
    expect(() => docs.hold(engine, doc)).toThrow(expect.objectContaining({ kind: "invalid_input" }));
    expect(await docs.tokens(engine, doc, "gpt-4o")).toBeUndefined();
  });
});
