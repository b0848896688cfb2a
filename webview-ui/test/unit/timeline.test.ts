import { describe, expect, it } from "vitest";
import type { Message } from "../../src/protocol";
import { buildTimeline, type Entry } from "../../src/timeline";
import { record, text } from "./fixtures";

/** The timeline in a readable shape: message ids, and rows as `[id: hidden…]`. */
function shape(entries: Entry[]): unknown[] {
  return entries.map((e) => (e.kind === "message" ? e.message.id : { [e.record.condense_id]: shape(e.hidden) }));
}

/** Every message id shown, wherever it is (in the chat, a group or as a row's summary). */
function allShown(entries: Entry[]): string[] {
  return entries.flatMap((e) =>
    e.kind === "message" ? [e.message.id] : [...(e.summary ? [e.summary.id] : []), ...allShown(e.hidden)],
  );
}

const m = (id: string, extra: Partial<Message> = {}) => text(id, id.startsWith("a") ? "assistant" : "user", id, extra);

describe("buildTimeline", () => {
  it("shows the chat as it is when nothing was condensed", () => {
    expect(shape(buildTimeline([m("u1"), m("a1")], []))).toEqual(["u1", "a1"]);
  });

  it("puts a summary condensation at its summary message, with the messages it hid as its group", () => {
    const messages = [
      m("u1"),
      m("a1", { condense_parent: "c1" }),
      m("u2", { condense_parent: "c1" }),
      m("c1.summary", { is_summary: true, condense_id: "c1", role: "assistant" }),
      m("a2"),
    ];
    const timeline = buildTimeline(messages, [record("c1")]);
    expect(shape(timeline)).toEqual(["u1", { c1: ["a1", "u2"] }, "a2"]);
    const row = timeline[1]!;
    expect(row.kind === "condensation" && row.summary?.id).toBe("c1.summary");
    expect(row.kind === "condensation" && row.hiddenCount).toBe(2);
  });

  it("puts a condensation that added copies right after the last message it hid", () => {
    // lossless: each changed message is hidden and followed by its edited copy.
    const messages = [
      m("u1", { condense_parent: "c1" }),
      m("u1.c1", { condense_id: "c1" }),
      m("a1"),
      m("u2", { condense_parent: "c1" }),
      m("u2.c1", { condense_id: "c1" }),
      m("a2"),
    ];
    expect(shape(buildTimeline(messages, [record("c1")]))).toEqual(["u1.c1", "a1", { c1: ["u1", "u2"] }, "u2.c1", "a2"]);
  });

  it("puts a condensation that only hid messages right after them", () => {
    const messages = [m("u1"), m("a1", { condense_parent: "c1" }), m("u2", { condense_parent: "c1" }), m("a2")];
    expect(shape(buildTimeline(messages, [record("c1")]))).toEqual(["u1", { c1: ["a1", "u2"] }, "a2"]);
  });

  it("falls back to right after the first message the condensation added", () => {
    const messages = [m("u1"), m("a1.c1", { condense_id: "c1" }), m("u2.c1", { condense_id: "c1" }), m("a2")];
    expect(shape(buildTimeline(messages, [record("c1")]))).toEqual(["u1", "a1.c1", { c1: [] }, "u2.c1", "a2"]);
  });

  it("places a condensation no message names by its time, or at the end", () => {
    const timed = [m("u1", { ts: 500 }), m("a1", { ts: 900 }), m("u2", { ts: 2000 })];
    expect(shape(buildTimeline(timed, [record("c1", { at_ms: 1000 })]))).toEqual(["u1", "a1", { c1: [] }, "u2"]);
    expect(shape(buildTimeline(timed, [record("c1", { at_ms: 100 })]))).toEqual([{ c1: [] }, "u1", "a1", "u2"]);
    expect(shape(buildTimeline([m("u1"), m("a1")], [record("c1")]))).toEqual(["u1", "a1", { c1: [] }]);
  });

  it("shows an earlier condensation inside the group of a later one that hid its summary", () => {
    const messages = [
      m("u1", { condense_parent: "c1" }),
      m("a1", { condense_parent: "c1" }),
      m("c1.summary", { is_summary: true, condense_id: "c1", condense_parent: "c2" }),
      m("u2", { condense_parent: "c2" }),
      m("c2.summary", { is_summary: true, condense_id: "c2" }),
      m("a3"),
    ];
    const timeline = buildTimeline(messages, [record("c1", { at_ms: 1 }), record("c2", { at_ms: 2 })]);
    expect(shape(timeline)).toEqual([{ c2: [{ c1: ["u1", "a1"] }, "u2"] }, "a3"]);
    expect(allShown(timeline).sort()).toEqual(messages.map((x) => x.id).sort());
  });

  it("shows messages hidden by an unknown condensation as messages", () => {
    const messages = [m("u1", { condense_parent: "gone" }), m("a1")];
    expect(shape(buildTimeline(messages, []))).toEqual(["u1", "a1"]);
  });

  it("does not lose a condensation whose summary claims to be hidden by itself", () => {
    const messages = [
      m("u1", { condense_parent: "c1" }),
      m("c1.summary", { is_summary: true, condense_id: "c1", condense_parent: "c1" }),
      m("a2"),
    ];
    expect(shape(buildTimeline(messages, [record("c1")]))).toEqual([{ c1: ["u1"] }, "a2"]);
  });

  it("orders two condensations at the same place by time", () => {
    const messages = [m("u1")];
    const rows = buildTimeline(messages, [record("c2", { at_ms: 20 }), record("c1", { at_ms: 10 })]);
    expect(shape(rows)).toEqual(["u1", { c1: [] }, { c2: [] }]);
  });
});
