// Shutdown with the real engine: a chat turn streaming from a server that stalls after its first
// delta is cancelled by InFlight.shutdown, ends with its partial answer kept and marked, and the
// agent's Shutdown input then ends the session with StatusShutdown. Nothing starts after.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentEvent } from "@context-condenser/protocol";
// @ts-expect-error: a plain ES module of the test servers, without types.
import { startFixtureLlm } from "../../tests/js/servers.mjs";
import { makeHost } from "../src/engine/engine";
import { InFlight } from "../src/chat/inFlight";
import { wasm } from "./core";

const KEY = "shutdown-test-key";

describe("InFlight", () => {
  let llm: { origin: string; stop(): Promise<void> };
  beforeAll(async () => {
    llm = await startFixtureLlm({ apiKey: KEY, stallSeconds: 600 });
  });
  afterAll(async () => {
    await llm?.stop();
  });

  it("with nothing running, shutdown ends at once and refuses what comes after", async () => {
    const turns = new InFlight();
    let cancelled = false;
    expect(await turns.shutdown(() => (cancelled = true), 1000)).toBe(true);
    expect(cancelled).toBe(false);
    expect(turns.isClosed).toBe(true);
  });

  it("says false when the work does not end by its bound, true when the cancel ends it", async () => {
    const stuck = new InFlight();
    void stuck.track(new Promise(() => {}));
    expect(await stuck.shutdown(() => {}, 10)).toBe(false);

    const cancellable = new InFlight();
    let end!: () => void;
    void cancellable.track(new Promise<void>((resolve) => (end = resolve)));
    expect(await cancellable.shutdown(() => end(), 120_000)).toBe(true);
  });

  it("cancels a streaming turn, which keeps its partial answer; the agent then ends with StatusShutdown", async () => {
    const engine = new wasm.CondenseEngine(makeHost({ info: () => {}, warn: () => {}, error: () => {} }));
    const turns = new InFlight();
    const options = (model: string) => ({
      llm: {
        profile: { id: "fixture", kind: "openai-compatible" as const, base_url: `${llm.origin}/v1`, model, context_window: 32000, max_output: 1000 },
        apiKey: KEY,
      },
      provider: "native",
      nowMs: Date.now(),
    });
    const events: AgentEvent[] = [];
    const { handle } = engine.newChat("chat-1", 1000);
    let streamed!: () => void;
    const firstDelta = new Promise<void>((resolve) => (streamed = resolve));
    const turn = turns.track(
      engine.chat(handle, { type: "user", content: "Explain the importer." }, options("fault-stall"), (e) => {
        events.push(e);
        if (e.type === "MessageContent") streamed();
      }),
    );
    await firstDelta;

    // The stream is stalled for ten minutes: only the cancel ends the turn (the bound is a hang
    // guard; the answer marked cancelled below is what shows the cancel ended it).
    expect(await turns.shutdown(() => engine.cancel(handle.id), 120_000), "hang guard: the turn had not ended").toBe(true);
    const { change: ended } = await turn;
    const answer = ended.messages.at(-1)!;
    expect(answer.role).toBe("assistant");
    expect(answer.interrupted).toBe("cancelled");
    expect(JSON.stringify(answer.content)).toContain("Partial");

    const last: AgentEvent[] = [];
    await engine.chat(ended.handle, { type: "shutdown" }, options("fixture"), (e) => last.push(e));
    expect(last.map((e) => e.type)).toEqual(["StatusShutdown"]);
    expect(turns.isClosed).toBe(true);
  });
});
