import { describe, expect, it } from "vitest";
import { parseToHost, parseToWebview } from "../src/ipc";
import { webviewHtml } from "../src/webviewHtml";

describe("ipc", () => {
  it("accepts the webview's messages and refuses bad ones with a reason", () => {
    expect(parseToHost({ type: "send", text: "Hello" })).toEqual({ ok: true, value: { type: "send", text: "Hello" } });
    expect(parseToHost({ type: "undo", condenseId: "c1" }).ok).toBe(true);
    const empty = parseToHost({ type: "send", text: "" });
    expect(empty.ok).toBe(false);
    expect(!empty.ok && empty.error).toMatch(/type send\): text/);
    expect(parseToHost({ type: "format-disk" }).ok).toBe(false);
    expect(parseToHost(null).ok).toBe(false);
    expect(parseToHost("ready").ok).toBe(false);
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
});
