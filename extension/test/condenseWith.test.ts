// Condense with…: the quick pick offers the enabled providers with the engine's descriptions, the
// default first and marked; a pick names the provider for that run, a dismissal runs nothing.
import { describe, expect, it } from "vitest";
import { pickProvider, providerPicks } from "../src/files/condenseWith";
import { newTestEngine } from "./core";
import { window } from "./fakeVscode";

describe("providerPicks", () => {
  const engine = newTestEngine();
  const entries = engine.providerEntries();

  it("lists every enabled provider with its one-line description, the default first and marked", () => {
    const picks = providerPicks(entries, engine.defaultProvider);
    expect(engine.defaultProvider).toBe("smart");
    expect(picks[0].id).toBe("smart");
    expect(picks[0].description).toMatch(/the default$/);
    expect(picks.map((p) => p.id).sort()).toEqual(entries.map((e) => e.id).sort());
    for (const pick of picks) {
      const entry = entries.find((e) => e.id === pick.id)!;
      expect(pick.detail).toBe(entry.description);
      if (pick.id !== "smart") expect(pick.description).toBe(entry.name);
    }
    // After the default, the engine's order (highest priority first).
    const rest = entries.filter((e) => e.id !== "smart").map((e) => e.id);
    expect(picks.slice(1).map((p) => p.id)).toEqual(rest);
  });

  it("leaves out disabled providers", () => {
    const disabled = entries.map((e) => (e.id === "native" || e.id === "smart" ? { ...e, enabled: false } : e));
    const ids = providerPicks(disabled, "smart").map((p) => p.id);
    expect(ids).not.toContain("native");
    expect(ids).not.toContain("smart");
    expect(ids.length).toBe(entries.length - 2);
  });

  it("resolves to the picked id, or nothing when dismissed or when none is enabled", async () => {
    const shown: Array<{ items: Array<{ id: string }>; title?: string }> = [];
    window.showQuickPick = async (items: Array<{ id: string }>, options: { title?: string }) => {
      shown.push({ items, title: options.title });
      return items.find((i) => i.id === "truncation");
    };
    expect(await pickProvider(entries, "smart", "the chat")).toBe("truncation");
    expect(shown[0].title).toBe("Condense the chat with…");
    window.showQuickPick = async () => undefined;
    expect(await pickProvider(entries, "smart")).toBeUndefined();
    expect(await pickProvider(entries.map((e) => ({ ...e, enabled: false })), "smart")).toBeUndefined();
  });
});
