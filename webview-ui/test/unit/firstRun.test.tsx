// The first-run welcome, the input disabled until a model works, the chat list's rename and
// delete, and the health line.
import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { App } from "../../src/components/App";
import type { Host } from "../../src/host";
import type { ChatViewToHost, ToWebview, ToolStatus } from "../../src/protocol";
import { record, snapshot, stateMessage, text } from "./fixtures";

function setup() {
  const sent: ChatViewToHost[] = [];
  const host: Host = { post: (m) => sent.push(m), getState: () => undefined, setState: vi.fn() };
  const user = userEvent.setup();
  render(<App host={host} />);
  return { sent, user };
}

const deliver = (data: ToWebview) =>
  act(() => {
    window.dispatchEvent(new MessageEvent("message", { data }));
  });

const blocked = "No model is set up yet: choose one above, then chat.";
const claude: ToolStatus = {
  id: "claude-code",
  name: "Claude Code",
  models: ["sonnet", "opus"],
  capabilities: ["chat"],
  origin: "shipped",
  found: "/home/u/.local/bin/claude",
  searched: [],
};
const gemini: ToolStatus = { ...claude, id: "gemini", name: "Gemini CLI", models: ["gemini-2.5-pro"], found: null, searched: ["/usr/bin/gemini"] };

describe("the first run", () => {
  it("shows the welcome instead of the chat, with the input disabled and saying why", () => {
    setup();
    deliver(stateMessage(snapshot([], { task: null, profiles: [], profileId: null, blocked })));
    expect(screen.getByTestId("welcome")).toBeTruthy();
    const input = screen.getByTestId("input") as HTMLTextAreaElement;
    expect(input.disabled).toBe(true);
    expect(input.placeholder).toBe(blocked);
    expect((screen.getByTestId("send") as HTMLButtonElement).disabled).toBe(true);
  });

  it("offers the local servers that answered and the CLI agents, and posts the choice (never a key)", async () => {
    const { sent, user } = setup();
    deliver(stateMessage(snapshot([], { task: null, profiles: [], profileId: null, blocked })));
    deliver({ type: "welcome", servers: [{ name: "Ollama", base_url: "http://127.0.0.1:11434/v1", models: ["llama3.2", "qwen3"] }], tools: [claude, gemini], agents: ["Claude Code", "Cline"] });
    const options = screen.getAllByTestId("setup-option");
    expect(options.map((o) => o.textContent)).toEqual([
      expect.stringContaining("Ollama"),
      expect.stringContaining("Claude Code"),
      expect.stringContaining("Gemini CLI"),
    ]);
    await user.selectOptions(within(options[0]).getByRole("combobox"), "qwen3");
    await user.click(within(options[0]).getByRole("button", { name: "Use" }));
    expect(sent.at(-1)).toEqual({ type: "setUp", kind: "openai-compatible", baseUrl: "http://127.0.0.1:11434/v1", model: "qwen3" });
    // A tool that is not installed cannot be chosen.
    expect((within(options[2]).getByRole("button", { name: "Use" }) as HTMLButtonElement).disabled).toBe(true);
    await user.click(within(options[1]).getByRole("button", { name: "Use" }));
    expect(sent.at(-1)).toEqual({ type: "setUp", kind: "cli", tool: "claude-code", model: "sonnet" });
    await user.click(within(screen.getByTestId("setup-openai")).getByRole("button"));
    expect(sent.at(-1)).toEqual({ type: "setUp", kind: "openai", model: "gpt-4o-mini" });
    const other = screen.getByTestId("setup-other");
    await user.type(within(other).getByLabelText("Base URL"), "http://127.0.0.1:9999/v1");
    await user.type(within(other).getByLabelText("Model"), "fixture");
    await user.click(within(other).getByRole("button"));
    expect(sent.at(-1)).toEqual({ type: "setUp", kind: "openai-compatible", baseUrl: "http://127.0.0.1:9999/v1", model: "fixture" });
    // The agents the gateway can condense, and the offer to start it.
    expect(screen.getByTestId("welcome-gateway").textContent).toContain("Found here: Claude Code, Cline.");
    await user.click(screen.getByTestId("use-gateway"));
    expect(sent.at(-1)).toEqual({ type: "useGateway" });
  });

  it("says when nothing answered locally, and looks again on request; shows how the setup goes", async () => {
    const { sent, user } = setup();
    deliver(stateMessage(snapshot([], { task: null, profiles: [], profileId: null, blocked })));
    deliver({ type: "welcome", servers: [], tools: [], agents: [] });
    await user.click(screen.getByTestId("probe"));
    expect(sent.at(-1)).toEqual({ type: "probeLocal" });
    deliver({ type: "setup", state: "failed", message: "Test Connection failed (llm_auth): bad key. Nothing was saved." });
    expect(screen.getByTestId("setup-status").dataset.state).toBe("failed");
    expect(screen.getByTestId("setup-status").textContent).toContain("llm_auth");
  });

  it("enables the input once a profile works", () => {
    setup();
    deliver(stateMessage(snapshot([], { task: null, profiles: [], profileId: null, blocked })));
    deliver(stateMessage(snapshot([], { task: null })));
    expect(screen.queryByTestId("welcome")).toBeNull();
    expect((screen.getByTestId("input") as HTMLTextAreaElement).disabled).toBe(false);
  });
});

describe("the chats", () => {
  it("asks the extension to rename or delete a chat from the list", async () => {
    const { sent, user } = setup();
    deliver(stateMessage(snapshot([text("u1", "user", "hi")], { chats: [{ id: "t1", title: "hi", updated_ms: 0, messages: 1 }] })));
    await user.click(screen.getByTestId("chats-toggle"));
    await user.click(screen.getByTestId("chat-rename"));
    expect(sent.at(-1)).toEqual({ type: "renameChat", id: "t1" });
    await user.click(screen.getByTestId("chat-delete"));
    expect(sent.at(-1)).toEqual({ type: "deleteChat", id: "t1" });
  });

  it("shows the health line: condensations, tokens saved, cost", () => {
    setup();
    deliver(stateMessage(snapshot([text("u1", "user", "hi")], {}, [record("c1", { tokens_before: 12_000, tokens_after: 3_000, cost: 0.012 }), record("c2", { tokens_before: 5_000, tokens_after: 4_000, cost: 0 })])));
    expect(screen.getByTestId("health").textContent).toBe("2 condensations · 10k tokens saved · $0.0120 spent");
  });
});
