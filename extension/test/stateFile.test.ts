// The gateway's state on disk (stateFile.ts): a file per session, written whole and 0600, removed
// when let go, read back with the index; temporary files a killed host left are removed, never read.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { readState, writeChanges } from "../src/gateway/stateFile";

const dir = mkdtempSync(path.join(os.tmpdir(), "condense-state-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the gateway's state as files", () => {
  test("is written as it changes, read back, and nothing half-written is read", () => {
    const state = path.join(dir, "one");
    expect(readState(state)).toBeUndefined();
    const first = writeChanges(state, { index: '{"version":3}', write: [{ name: "a.json", text: "A" }, { name: "b.json", text: "B" }], remove: [] }, true);
    expect(first).toEqual({ failed: [], error: undefined });
    const second = writeChanges(state, { index: '{"version":3,"n":2}', write: [{ name: "b.json", text: "B2" }], remove: ["a.json"] }, false);
    expect(second.failed).toEqual([]);
    expect(statSync(path.join(state, "sessions", "b.json")).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(state, "state.json")).mode & 0o777).toBe(0o600);
    // A kill mid-write leaves a temporary file: removed, never read.
    const temporary = path.join(state, "sessions", `b.json.4242.tmp`);
    writeFileSync(temporary, "half");
    expect(readState(state)).toEqual({ index: '{"version":3,"n":2}', sessions: [{ name: "b.json", text: "B2" }] });
    expect(existsSync(temporary)).toBe(false);
  });

  test("a file that cannot be written is named, and the others are written", () => {
    const state = path.join(dir, "two");
    // A folder where the session's file would go: its write fails.
    const blocked = path.join(state, "sessions", "c.json");
    mkdirSync(blocked, { recursive: true });
    writeFileSync(path.join(state, "sessions", "d.json"), "old");
    const result = writeChanges(state, { index: "{}", write: [{ name: "c.json", text: "C" }, { name: "d.json", text: "D" }], remove: [] }, false);
    expect(result.failed).toEqual(["c.json"]);
    expect(result.error).toBeTruthy();
    expect(readFileSync(path.join(state, "sessions", "d.json"), "utf8")).toBe("D");
  });
});
