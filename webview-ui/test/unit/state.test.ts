import { describe, expect, it } from "vitest";
import type { AgentEvent, Snapshot, ToWebview } from "../../src/protocol";
import { chatCost, initialState, isBusy, reduce, type Action, type ViewState } from "../../src/state";
import { eventMessage, record, snapshot, stateMessage, text } from "./fixtures";

/** A message from the extension; a bare snapshot is sent as a `state` message. */
const received = (message: Snapshot | ToWebview): Action =>
  "type" in message ? { type: "received", message } : { type: "received", message: stateMessage(message) };

const run = (state: ViewState, ...actions: Action[]): ViewState => actions.reduce(reduce, state);
const events = (...list: AgentEvent[]): Action[] => list.map((e) => received(eventMessage(e)));

const hello = text("u1", "user", "hello");
const busyStart = run(initialState, received(snapshot([], { busy: true })));

describe("reduce", () => {
  it("takes a state message as the snapshot", () => {
    const s = run(initialState, received(snapshot([hello])));
    expect(s.snapshot?.task?.conversation.messages).toEqual([hello]);
    expect(s.snapshot?.profileId).toBe("local");
    expect(s.live).toEqual([]);
  });

  it("streams a turn on top of the snapshot", () => {
    const s = run(
      busyStart,
      ...events(
        { type: "ThinkingStart" },
        { type: "UserMessage", message: hello },
        { type: "MessageStart", id: "a1" },
        { type: "MessageContent", id: "a1", delta: "Hel" },
        { type: "MessageContent", id: "a1", delta: "lo!" },
      ),
    );
    expect(s.thinking).toBe(true);
    expect(s.live).toEqual([
      { kind: "user", message: hello },
      { kind: "answer", id: "a1", text: "Hello!", done: false, interrupted: null, kept: true },
    ]);
    const ended = run(s, ...events({ type: "MessageEnd", id: "a1", interrupted: "cancelled", kept: true, cost: 0 }));
    expect(ended.live[1]).toMatchObject({ done: true, interrupted: "cancelled" });
  });

  it("shows a user message once, even when the event repeats it or the snapshot has it", () => {
    const twice = run(busyStart, ...events({ type: "UserMessage", message: hello }, { type: "UserMessage", message: hello }));
    expect(twice.live).toHaveLength(1);
    const known = run(initialState, received(snapshot([hello], { busy: true })), ...events({ type: "UserMessage", message: hello }));
    expect(known.live).toEqual([]);
  });

  it("starts an answer from content that came without MessageStart", () => {
    const s = run(busyStart, ...events({ type: "MessageContent", id: "a1", delta: "x" }));
    expect(s.live).toEqual([{ kind: "answer", id: "a1", text: "x", done: false, interrupted: null, kept: true }]);
  });

  it("replaces the overlay's messages with a new snapshot", () => {
    const streamed = run(
      busyStart,
      ...events(
        { type: "ThinkingStart" },
        { type: "UserMessage", message: hello },
        { type: "MessageStart", id: "a1" },
        { type: "MessageContent", id: "a1", delta: "Hi" },
        { type: "MessageEnd", id: "a1", kept: true, cost: 0 },
        { type: "ThinkingEnd" },
      ),
    );
    const after = run(streamed, received(snapshot([hello, text("a1", "assistant", "Hi")])));
    expect(after.live).toEqual([]);
    expect(after.thinking).toBe(false);
    expect(after.snapshot?.task?.conversation.messages.map((m) => m.id)).toEqual(["u1", "a1"]);
  });

  it("keeps what the snapshot does not have yet while the turn still runs", () => {
    const streaming = run(
      busyStart,
      ...events(
        { type: "ThinkingStart" },
        { type: "UserMessage", message: hello },
        { type: "CondenseStart", reason: "threshold", provider: "native", tokens: 7000, automatic: true },
        { type: "MessageStart", id: "a1" },
        { type: "MessageContent", id: "a1", delta: "Part" },
      ),
    );
    // A state in the middle of the turn, which already holds the user message.
    const mid = run(streaming, received(snapshot([hello], { busy: true })));
    expect(mid.live.map((i) => i.kind)).toEqual(["condensing", "answer"]);
    expect(mid.thinking).toBe(true);
    const more = run(mid, ...events({ type: "MessageContent", id: "a1", delta: "ial" }));
    expect(more.live[1]).toMatchObject({ text: "Partial" });
  });

  it("keeps the last error and the notices across snapshots until the next send", () => {
    const failed = run(
      busyStart,
      ...events(
        { type: "CondenseSkipped", reason: "the loop guard: condensed 2 turns ago", tokens: 7_100 },
        { type: "Error", error: { kind: "llm_rate_limit", message: "slow down" }, partial: "", retryable: true },
      ),
    );
    expect(failed.error).toEqual({ kind: "llm_rate_limit", message: "slow down", retryable: true });
    expect(failed.notices.map((n) => n.text)).toEqual([
      "Automatic condensation skipped at 7.1k tokens: the loop guard: condensed 2 turns ago",
    ]);
    const snapshotAfter = run(failed, received(snapshot([hello])));
    expect(snapshotAfter.error).toEqual(failed.error);
    expect(snapshotAfter.notices).toEqual(failed.notices);
    const retried = run(snapshotAfter, { type: "retried" });
    expect(retried.error).toBeNull();
    expect(retried.notices).toHaveLength(1);
    const sent = run(snapshotAfter, { type: "sent" });
    expect(sent.error).toBeNull();
    expect(sent.notices).toEqual([]);
  });

  it("forgets the error and notices of a chat when another one opens, not when a new chat is created", () => {
    const failed = run(
      initialState,
      received(snapshot([hello])),
      ...events({ type: "Error", error: { kind: "llm_network", message: "down" }, partial: "", retryable: true }),
    );
    const other = snapshot([], {});
    other.task = { ...other.task!, id: "t2" };
    expect(run(failed, received(other)).error).toBeNull();
    expect(run(failed, received(snapshot([], { task: null }))).error).toBeNull();

    // A new chat (no task) whose first turn fails: the state that creates the chat keeps the error.
    const fresh = run(
      initialState,
      received(snapshot([], { task: null })),
      ...events({ type: "Error", error: { kind: "llm_auth", message: "bad key" }, partial: "", retryable: false }),
    );
    expect(run(fresh, received(snapshot([hello]))).error).toMatchObject({ kind: "llm_auth" });
  });

  it("cuts the streaming answer short on an error, and keeps a partial that never streamed", () => {
    const cut = run(
      busyStart,
      ...events(
        { type: "MessageStart", id: "a1" },
        { type: "MessageContent", id: "a1", delta: "Half" },
        { type: "Error", error: { kind: "llm_malformed_stream", message: "cut" }, partial: "Half", retryable: true },
      ),
    );
    expect(cut.live).toEqual([{ kind: "answer", id: "a1", text: "Half", done: true, interrupted: "llm_malformed_stream", kept: true }]);
    const partial = run(
      busyStart,
      ...events({ type: "Error", error: { kind: "llm_timeout", message: "stalled" }, partial: "Some", retryable: true }),
    );
    expect(partial.live).toMatchObject([{ kind: "answer", text: "Some", done: true, interrupted: "llm_timeout" }]);
  });

  it("shows a condensation running, then its record, or a notice when it failed", () => {
    const start: AgentEvent = { type: "CondenseStart", reason: "manual", provider: "lossless", tokens: 5000, automatic: false };
    const running = run(busyStart, ...events(start));
    expect(running.live).toEqual([{ kind: "condensing", reason: "manual", provider: "lossless", tokens: 5000, automatic: false }]);
    const done = run(running, ...events({ type: "CondenseEnd", record: record("c1"), cost: 0 }));
    expect(done.live).toEqual([{ kind: "condensed", record: record("c1") }]);
    const failed = run(running, ...events({ type: "CondenseEnd", error: { kind: "context_grew", message: "no gain" }, cost: 0 }));
    expect(failed.live).toEqual([]);
    expect(failed.notices.map((n) => n.text)).toEqual(["Condensation failed (context_grew): no gain"]);
    // The record shows until the snapshot has it.
    const confirmed = run(done, received(snapshot([hello], { busy: true }, [record("c1")])));
    expect(confirmed.live).toEqual([]);
  });

  it("says what a condensation that was not applied cost, when it cost anything", () => {
    const running = run(busyStart, ...events({ type: "CondenseStart", reason: "threshold", provider: "native", tokens: 9000, automatic: true }));
    const failed = run(
      running,
      ...events({ type: "CondenseEnd", error: { kind: "insufficient_gain", message: "saved 2% of the window" }, cost: 0.0042 }),
    );
    expect(failed.live).toEqual([]);
    expect(failed.notices.map((n) => n.text)).toEqual([
      "Condensation failed (insufficient_gain): saved 2% of the window (it cost $0.0042, counted in the chat's total)",
    ]);
  });

  it("ignores events of another chat than the one shown", () => {
    const s = run(
      initialState,
      received(snapshot([hello], { busy: true })),
      received(eventMessage({ type: "MessageContent", id: "a9", delta: "elsewhere" }, "t-other")),
    );
    expect(s.live).toEqual([]);
  });

  it("shows the extension's error messages as the last error, without retry", () => {
    const s = run(initialState, received({ type: "error", message: "no chat profile" }));
    expect(s.error).toEqual({ kind: "extension", message: "no chat profile", retryable: false });
  });

  it("is busy while the snapshot says so or events stream", () => {
    expect(isBusy(run(initialState, received(snapshot([]))))).toBe(false);
    expect(isBusy(busyStart)).toBe(true);
    const thinking = run(initialState, received(snapshot([])), ...events({ type: "ThinkingStart" }));
    expect(isBusy(thinking)).toBe(true);
    expect(isBusy(run(thinking, ...events({ type: "StatusShutdown" })))).toBe(false);
  });
});

describe("chatCost", () => {
  it("adds the condensations applied and the runs that were not", () => {
    const task = snapshot([hello], {}, [record("c1", { cost: 0.01 }), record("c2", { cost: 0.02 })]).task!;
    const cost = chatCost({ ...task, unapplied_cost: 0.005 });
    expect(cost?.applied).toBeCloseTo(0.03, 10);
    expect(cost?.unapplied).toBe(0.005);
    expect(cost?.total).toBeCloseTo(0.035, 10);
    expect(chatCost(task)?.unapplied).toBe(0);
  });

  it("counts a chat whose only spending was a run that was not applied", () => {
    const task = snapshot([hello]).task!;
    expect(chatCost({ ...task, unapplied_cost: 0.002 })).toEqual({ applied: 0, unapplied: 0.002, total: 0.002 });
  });

  it("is null when nothing was spent, or there is no chat", () => {
    expect(chatCost(snapshot([hello], {}, [record("c1", { cost: 0 })]).task)).toBeNull();
    expect(chatCost(null)).toBeNull();
  });
});
