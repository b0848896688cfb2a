import { describe, expect, it } from "vitest";
import { ProfileSettings, openableUrl, parseSettingsToHost, parseSettingsToWebview, parseToHost, parseToWebview } from "@context-condenser/protocol";
import { webviewHtml } from "../src/host/webviewHtml";
import { meta, newTestEngine } from "./core";

describe("ipc", () => {
  it("accepts the webview's messages and refuses bad ones with a reason", () => {
    expect(parseToHost({ type: "send", text: "Hello" })).toEqual({ ok: true, value: { type: "send", text: "Hello" } });
    expect(parseToHost({ type: "undo", condenseId: "c1" }).ok).toBe(true);
    const empty = parseToHost({ type: "send", text: "" });
    expect(empty.ok).toBe(false);
    expect(!empty.ok && empty.error).toMatch(/type send\): text/);
    expect(parseToHost({ type: "format-disk" }).ok).toBe(false);
    expect(parseToHost({ type: "pin", id: "m3", pinned: true }).ok).toBe(true);
    expect(parseToHost({ type: "pin", id: "", pinned: true }).ok).toBe(false);
    expect(parseToHost({ type: "pin", id: "m3" }).ok).toBe(false);
    for (const type of ["preview", "applyPreview", "discardPreview"]) expect(parseToHost({ type }).ok, type).toBe(true);
    expect(parseToWebview({ type: "preview", source: { kind: "chat" }, running: true }).ok).toBe(true);
    expect(parseToWebview({ type: "preview", source: { kind: "file", name: "a.json" }, running: false }).ok).toBe(true);
    expect(parseToWebview({ type: "preview", source: { kind: "file" }, running: false }).ok).toBe(false);
    expect(parseToHost(null).ok).toBe(false);
    expect(parseToHost("ready").ok).toBe(false);
  });

  it("accepts a link to open only when it is http, https or mailto", () => {
    for (const url of ["https://example.com/a?b=1", "http://localhost:8080/", "mailto:someone@example.com", "HTTPS://EXAMPLE.COM"]) {
      expect(parseToHost({ type: "openLink", url }).ok, url).toBe(true);
    }
    for (const url of [
      "javascript:alert(1)",
      "JaVaScRiPt:alert(1)",
      "jav\tascript:alert(1)",
      " javascript:alert(1)",
      "\u0001javascript:alert(1)",
      "vbscript:msgbox(1)",
      "data:text/html,<script>alert(1)</script>",
      "data:image/png;base64,AAAA",
      "file:///etc/passwd",
      "command:workbench.action.terminal.new",
      "vscode://settings",
      "../relative",
      "//evil.example/x",
      "https://user:secret@example.com/",
      "",
      `https://example.com/${"a".repeat(9000)}`,
    ]) {
      const r = parseToHost({ type: "openLink", url });
      expect(r.ok, url).toBe(false);
    }
    expect(openableUrl("jav\tascript:alert(1)")).toBeUndefined();
    expect(openableUrl("https://example.com/a b")).toBe("https://example.com/a%20b");
  });

  it("accepts the agent's events and refuses malformed ones", () => {
    const event = { type: "MessageContent", id: "m2", delta: "Hi" };
    expect(parseToWebview({ type: "event", taskId: "chat-1", event }).ok).toBe(true);
    const bad = parseToWebview({ type: "event", taskId: "chat-1", event: { type: "MessageContent", id: "m2" } });
    expect(!bad.ok && bad.error).toMatch(/event\.delta/);
    expect(parseToWebview({ type: "error", message: "no chat profile", draft: "Hello" }).ok).toBe(true);
    expect(parseToWebview({ type: "error", message: "x", draft: 3 }).ok).toBe(false);
  });
});

describe("ipc: the settings panel", () => {
  it("refuses a key that is empty, a profile with a key field, and messages it does not know", () => {
    expect(parseSettingsToHost({ type: "setKey", profileId: "gpt", key: "sk-1" }).ok).toBe(true);
    expect(parseSettingsToHost({ type: "setKey", profileId: "gpt", key: "" }).ok).toBe(false);
    const profile = { id: "gpt", kind: "openai", model: "gpt-4o", context_window: 128000 };
    expect(parseSettingsToHost({ type: "saveProfile", profile }).ok).toBe(true);
    const withKey = parseSettingsToHost({ type: "saveProfile", profile: { ...profile, api_key: "sk-2" } });
    expect(withKey.ok).toBe(false);
    expect(parseSettingsToHost({ type: "saveProfile", profile: { ...profile, kind: "azure" } }).ok).toBe(false);
    expect(parseSettingsToHost({ type: "send", text: "chat message to the wrong webview" }).ok).toBe(false);
  });

  it("checks the state it sends: a key's presence is a boolean, never a string", () => {
    const state = {
      type: "state",
      providers: [],
      defaultProvider: "lossless",
      auto: { enabled: true, thresholdPercent: 80, minGainPercent: 5 },
      shared: {},
      profiles: [],
      chatProfile: "",
      keys: { gpt: true },
      problems: [],
      limits: meta.limits,
      kinds: meta.kinds,
      tools: newTestEngine().tools(),
      toolErrors: [],
    };
    expect(parseSettingsToWebview(state).ok).toBe(true);
    expect(parseSettingsToWebview({ ...state, tools: [{ id: "claude-code" }] }).ok).toBe(false);
    expect(parseSettingsToWebview({ ...state, limits: undefined }).ok).toBe(false);
    expect(parseSettingsToWebview({ ...state, keys: { gpt: "sk-3" } }).ok).toBe(false);
  });
});

describe("webviewHtml", () => {
  it("allows only the nonce's script and the extension's own styles", () => {
    const html = webviewHtml({ cspSource: "vscode-resource:", script: "s.js", style: "s.css", title: "T", view: "chat", nonce: "abc" });
    const csp = /content="([^"]+)"/.exec(html)?.[1] ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'nonce-abc'");
    expect(csp).toContain("style-src vscode-resource:");
    expect(csp).not.toContain("unsafe");
    expect(html).toContain('<script type="module" nonce="abc" src="s.js">');
    expect(webviewHtml({ cspSource: "x", script: "s", style: "s", title: "T", view: "chat" })).not.toBe(
      webviewHtml({ cspSource: "x", script: "s", style: "s", title: "T", view: "chat" }),
    );
  });

  it("knows every kind of LLM profile the core has", () => {
    // The panel lists kinds in the order of `meta.kinds`; the generated enum follows the Rust
    // declaration, whose order may differ (`cli` is listed before `manual` in the core's list).
    expect([...ProfileSettings.shape.kind.options].sort()).toEqual(meta.kinds.map((k) => k.kind).sort());
  });
});
