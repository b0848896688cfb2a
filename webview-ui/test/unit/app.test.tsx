import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { App } from "../../src/components/App";
import type { Host } from "../../src/host";
import type { AgentEvent, ChatViewToHost, Message, Snapshot } from "../../src/protocol";
import { eventMessage, record, snapshot, stateMessage, text } from "./fixtures";

function setup(saved?: unknown) {
  const sent: ChatViewToHost[] = [];
  const host: Host = { post: (m) => sent.push(m), getState: () => saved, setState: vi.fn() };
  const user = userEvent.setup();
  render(<App host={host} />);
  return { sent, host, user };
}

function deliver(data: unknown) {
  act(() => {
    window.dispatchEvent(new MessageEvent("message", { data }));
  });
}

const showState = (s: Snapshot) => deliver(stateMessage(s));
const showEvents = (...events: AgentEvent[]) => events.forEach((e) => deliver(eventMessage(e)));

const chat: Message[] = [text("u1", "user", "What is **2+2**?"), text("a1", "assistant", "It is **4**.")];

/** A chat condensed once by a summary: two messages hidden, then the summary, then one more turn. */
const condensed = snapshot(
  [
    text("u1", "user", "first question", { condense_parent: "c1" }),
    text("a1", "assistant", "first answer", { condense_parent: "c1" }),
    text("c1.summary", "assistant", "The user asked a first question.", { is_summary: true, condense_id: "c1" }),
    text("u2", "user", "second question"),
    text("a2", "assistant", "second answer"),
  ],
  {},
  [record("c1", { summary: null, provider_id: "native", tokens_before: 12_000, tokens_after: 3_000 })],
);

describe("the chat view", () => {
  it("says it is ready, then renders the state it is sent", () => {
    const { sent } = setup();
    expect(sent).toEqual([{ type: "ready" }]);
    expect(screen.getByTestId("empty")).toBeTruthy();
    showState(snapshot(chat));
    expect(screen.queryByTestId("empty")).toBeNull();
    expect(screen.getByTestId("message-user").textContent).toContain("What is **2+2**?");
    const answer = screen.getByTestId("message-assistant");
    expect(answer.querySelector("strong")?.textContent).toBe("4");
    expect((screen.getByTestId("profile-select") as HTMLSelectElement).value).toBe("local");
    expect(screen.getByTestId("meter").textContent).toContain("1.2k / 8k · 15%");
  });

  it("asks the extension to open a message's link instead of navigating, and never links other schemes", async () => {
    const { sent, user } = setup();
    const body = "[docs](https://example.com/a) [bad](javascript:alert(1)) [rel](./x) ![pic](https://example.com/p.png)";
    showState(snapshot([text("a1", "assistant", body)]));
    const answer = screen.getByTestId("message-assistant");
    expect([...answer.querySelectorAll("a")].map((a) => a.getAttribute("href"))).toEqual(["https://example.com/a", "https://example.com/p.png"]);
    expect([...answer.querySelectorAll(".link-blocked")].map((s) => s.textContent)).toEqual(["bad", "rel"]);
    expect(answer.querySelector("img")).toBeNull();
    await user.click(within(answer).getByText("docs"));
    await user.click(within(answer).getByText("bad"));
    await user.click(within(answer).getByText("[image: pic]"));
    expect(sent.slice(1)).toEqual([
      { type: "openLink", url: "https://example.com/a" },
      { type: "openLink", url: "https://example.com/p.png" },
    ]);
  });

  it("answers an invalid message with an error and keeps working", () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const { sent } = setup();
    deliver({ type: "state", task: null });
    deliver("not even an object");
    deliver({ type: "event", taskId: "t1", event: { type: "MessageContent", id: "a1" } });
    expect(errors).toHaveBeenCalledTimes(3);
    const replies = sent.filter((m) => m.type === "error");
    expect(replies).toHaveLength(3);
    expect(replies[0]).toMatchObject({ message: expect.stringContaining("invalid message (type state)") });
    expect(replies[2]).toMatchObject({ message: expect.stringContaining("event.delta") });
    showState(snapshot(chat));
    expect(screen.getAllByTestId("message-assistant")).toHaveLength(1);
  });

  it("streams an answer delta by delta, Markdown with a highlighted code block", () => {
    setup();
    showState(snapshot([], { busy: true }));
    showEvents(
      { type: "ThinkingStart" },
      { type: "UserMessage", message: text("u1", "user", "show code") },
      { type: "MessageStart", id: "a1" },
      { type: "MessageContent", id: "a1", delta: "Here:\n\n```ts\nconst x" },
    );
    expect(screen.getByTestId("message-user").textContent).toContain("show code");
    expect(screen.getByTestId("message-assistant").textContent).toContain("const x");
    showEvents({ type: "MessageContent", id: "a1", delta: ": number = 1;\n```\n" });
    const code = screen.getByTestId("message-assistant").querySelector("pre code")!;
    expect(code.className).toContain("language-ts");
    expect(code.className).toContain("hljs");
    expect(code.querySelector(".hljs-keyword")?.textContent).toBe("const");
    expect(code.querySelector(".hljs-number")?.textContent).toBe("1");
    showEvents({ type: "MessageEnd", id: "a1", interrupted: "cancelled", kept: true, cost: 0 });
    expect(screen.getByTestId("message-assistant").textContent).toContain("interrupted: cancelled");
  });

  it("never renders HTML from a message", () => {
    setup();
    showState(snapshot([text("a1", "assistant", 'Hi <img src=x onerror="alert(1)"> there\n\n<script>alert(2)</script>')]));
    const answer = screen.getByTestId("message-assistant");
    expect(answer.querySelector("img, script")).toBeNull();
    expect(answer.textContent).toContain('<img src=x onerror="alert(1)">');
    expect(answer.textContent).toContain("<script>alert(2)</script>");
  });

  it("shows tool blocks compactly", () => {
    setup();
    const call: Message = { id: "a1", ts: 0, role: "assistant", content: [{ type: "tool_use", id: "t", name: "read_file", input: { path: "a.rs" } }] };
    const result: Message = {
      id: "u2",
      ts: 0,
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: "fn main() {}" }] }],
    };
    showState(snapshot([call, result]));
    const details = screen.getAllByRole("group");
    expect(details).toHaveLength(2);
    expect(details[0]!.textContent).toContain("read_file");
    expect(details[0]!.textContent).toContain('"path": "a.rs"');
    expect(details[1]!.textContent).toContain("fn main() {}");
    expect(details.every((d) => !(d as HTMLDetailsElement).open)).toBe(true);
  });

  it("shows a client's wrapper collapsed, apart from the user's words", () => {
    setup();
    const turn: Message = {
      id: "u1",
      ts: 0,
      role: "user",
      content: [
        { type: "text", text: "Add a dark mode toggle." },
        {
          type: "text",
          text: "<environment_details>\n# Current Time\n3 PM\n</environment_details>",
          client: "environment_details",
        },
      ],
    };
    showState(snapshot([turn]));
    const details = screen.getAllByRole("group");
    expect(details).toHaveLength(1);
    expect(details[0]!.textContent).toContain("Client context");
    expect(details[0]!.textContent).toContain("environment details");
    expect((details[0] as HTMLDetailsElement).open).toBe(false);
    expect(screen.getByText("Add a dark mode toggle.")).toBeTruthy();
  });

  it("shows blocks kept as read collapsed, never their signature", () => {
    setup();
    const answer: Message = {
      id: "a1",
      ts: 0,
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Check the cart first.", signature: "EqQBsecret" },
        { type: "redacted_thinking", data: "EmwKopaque" },
        { type: "text", text: "Done." },
      ],
    };
    showState(snapshot([answer]));
    const details = screen.getAllByRole("group");
    expect(details).toHaveLength(2);
    expect(details[0]!.textContent).toContain("thinking");
    expect(details[0]!.textContent).toContain("Check the cart first.");
    expect(details[1]!.textContent).toContain("thinking (hidden)");
    expect(details.every((d) => !(d as HTMLDetailsElement).open)).toBe(true);
    const bubble = screen.getByTestId("message-assistant");
    expect(bubble.textContent).toContain("Done.");
    expect(bubble.textContent).not.toContain("EqQBsecret");
    expect(bubble.textContent).not.toContain("EmwKopaque");
  });

  it("shows a condensation as one row where it happened, with its hidden messages collapsed", async () => {
    const { sent, user } = setup();
    showState(condensed);
    const row = screen.getByTestId("condensation-row");
    expect(row.textContent).toContain("native");
    expect(row.textContent).toContain("12,000 → 3,000 tokens (−75%)");
    expect(row.textContent).toContain("$0.0123");
    expect(row.textContent).toContain("1.5 s");
    expect(row.textContent).toContain("automatic: threshold reached");
    // The summary message is the row, the hidden messages are not bubbles, the rest follow it.
    const log = row.parentElement!;
    const order = [...log.children].map((el) => el.getAttribute("data-testid"));
    expect(order).toEqual(["condensation-row", "message-user", "message-assistant"]);
    expect(screen.queryByText("first question")).toBeNull();

    const group = within(row).getByRole("button", { name: "2 earlier messages condensed" });
    expect(group.getAttribute("aria-expanded")).toBe("false");
    await user.click(group);
    expect(within(row).getByText("first question")).toBeTruthy();

    expect(screen.queryByTestId("summary")).toBeNull();
    const toggle = screen.getByTestId("summary-toggle");
    toggle.focus();
    await user.keyboard("{Enter}");
    expect(toggle.getAttribute("aria-expanded")).toBe("true");
    expect(screen.getByTestId("summary").textContent).toContain("The user asked a first question.");

    await user.click(screen.getByTestId("undo"));
    expect(sent.at(-1)).toEqual({ type: "undo", condenseId: "c1" });
  });

  it("shows the condensation running, then its notice when the loop guard skips one", () => {
    setup();
    showState(snapshot(chat, { busy: true }));
    showEvents({ type: "CondenseStart", reason: "threshold", provider: "native", tokens: 6_500, automatic: true });
    expect(screen.getByTestId("condensing").textContent).toContain("Condensing with native…");
    showEvents(
      { type: "CondenseEnd", record: record("c1"), cost: 0 },
      { type: "CondenseSkipped", reason: "condensed too recently", tokens: 6_600 },
    );
    expect(screen.queryByTestId("condensing")).toBeNull();
    expect(screen.getByTestId("condensation-row").textContent).toContain("12,000 → 3,000");
    expect(screen.getByTestId("notice").textContent).toContain("condensed too recently");
    showState(snapshot(chat));
    expect(screen.getByTestId("notice")).toBeTruthy();
  });

  it("shows what condensing cost the chat, runs not applied included, and says what a failed run cost", () => {
    setup();
    showState(snapshot(chat));
    expect(screen.queryByTestId("chat-cost")).toBeNull();
    const task = snapshot(chat, {}, [record("c1", { cost: 0.003 })]).task!;
    showState({ ...snapshot(chat), task: { ...task, unapplied_cost: 0.002 } });
    const cost = screen.getByTestId("chat-cost");
    expect(cost.textContent).toBe("$0.0050");
    expect(cost.title).toContain("runs not applied (failed or too little gain): $0.0020");
    showState({ ...snapshot(chat, { busy: true }), task: { ...task, unapplied_cost: 0.002 } });
    showEvents({ type: "CondenseEnd", error: { kind: "context_grew", message: "the summary was longer" }, cost: 0.0011 });
    expect(screen.getByTestId("notice").textContent).toContain("it cost $0.0011, counted in the chat's total");
  });

  it("sends with Enter, makes a newline with Shift+Enter, and clears the box", async () => {
    const { sent, user } = setup();
    showState(snapshot(chat));
    const input = screen.getByTestId("input") as HTMLTextAreaElement;
    const send = screen.getByTestId("send") as HTMLButtonElement;
    expect(send.disabled).toBe(true);
    await user.click(input);
    await user.keyboard("line one{Shift>}{Enter}{/Shift}line two");
    expect(input.value).toBe("line one\nline two");
    expect(send.disabled).toBe(false);
    await user.keyboard("{Enter}");
    expect(sent.at(-1)).toEqual({ type: "send", text: "line one\nline two" });
    expect(input.value).toBe("");
    await user.keyboard("{Enter}");
    expect(sent.filter((m) => m.type === "send")).toHaveLength(1);

    await user.type(input, "again");
    await user.click(send);
    expect(sent.at(-1)).toEqual({ type: "send", text: "again" });
    expect(document.activeElement).toBe(input);
  });

  it("does not send while busy, and offers Stop", async () => {
    const { sent, user } = setup();
    showState(snapshot(chat, { busy: true }));
    const input = screen.getByTestId("input") as HTMLTextAreaElement;
    await user.type(input, "hold on{Enter}");
    expect(sent.some((m) => m.type === "send")).toBe(false);
    expect(input.value).toBe("hold on");
    expect((screen.getByTestId("send") as HTMLButtonElement).disabled).toBe(true);
    await user.click(screen.getByTestId("stop"));
    expect(sent.at(-1)).toEqual({ type: "stop" });
    showState(snapshot(chat));
    expect(screen.queryByTestId("stop")).toBeNull();
  });

  it("shows an error inline with Retry, kept until the next send", async () => {
    const { sent, user } = setup();
    showState(snapshot(chat, { busy: true }));
    showEvents({ type: "Error", error: { kind: "llm_rate_limit", message: "429 from the server" }, partial: "", retryable: true });
    showState(snapshot(chat));
    expect(screen.getByTestId("error").textContent).toContain("429 from the server");
    await user.click(screen.getByTestId("retry"));
    expect(sent.at(-1)).toEqual({ type: "retry" });

    showEvents({ type: "Error", error: { kind: "llm_auth", message: "wrong key" }, partial: "", retryable: false });
    expect(screen.getByTestId("error").textContent).toContain("wrong key");
    expect(screen.queryByTestId("retry")).toBeNull();
    await user.type(screen.getByTestId("input"), "next{Enter}");
    expect(screen.queryByTestId("error")).toBeNull();
  });

  it("puts back the text of a message the extension could not send", async () => {
    const { sent, user } = setup();
    showState(snapshot(chat));
    const input = screen.getByTestId("input") as HTMLTextAreaElement;
    await user.type(input, "Explain the bug{Enter}");
    expect(sent.at(-1)).toEqual({ type: "send", text: "Explain the bug" });
    expect(input.value).toBe("");
    deliver({ type: "error", message: "no chat profile", draft: "Explain the bug" });
    expect(input.value).toBe("Explain the bug");
    expect(screen.getByTestId("error").textContent).toContain("no chat profile");
    // What the user typed since wins over a late restore.
    await user.clear(input);
    await user.type(input, "something else");
    deliver({ type: "error", message: "busy", draft: "Explain the bug" });
    expect(input.value).toBe("something else");
  });

  it("posts the header's commands", async () => {
    const { sent, user } = setup();
    showState(
      snapshot(chat, {
        chats: [
          { id: "t1", title: "A chat", updated_ms: Date.now() - 5 * 60_000, messages: 2 },
          { id: "t0", title: "Older chat", updated_ms: Date.now() - 2 * 24 * 3600_000, messages: 14 },
        ],
      }),
    );
    await user.selectOptions(screen.getByTestId("profile-select"), "fast");
    expect(sent.at(-1)).toEqual({ type: "selectProfile", id: "fast" });
    await user.click(screen.getByTestId("condense"));
    expect(sent.at(-1)).toEqual({ type: "condense" });
    await user.click(screen.getByTestId("more-actions"));
    await user.click(screen.getByTestId("new-chat"));
    expect(sent.at(-1)).toEqual({ type: "newChat" });

    expect(screen.queryAllByTestId("chat-item")).toHaveLength(0);
    await user.click(screen.getByTestId("chats-toggle"));
    const items = screen.getAllByTestId("chat-item");
    expect(items.map((i) => i.textContent)).toEqual([
      "A chat5 minutes ago · 2 messages",
      "Older chat2 days ago · 14 messages",
    ]);
    expect(items[0]!.getAttribute("aria-current")).toBe("true");
    await user.click(items[1]!);
    expect(sent.at(-1)).toEqual({ type: "openChat", id: "t0" });
    expect(screen.queryAllByTestId("chat-item")).toHaveLength(0);
  });

  it("closes the chat list with Escape and gives the focus back to its toggle", async () => {
    const { user } = setup();
    showState(snapshot(chat, { chats: [{ id: "t1", title: "A chat", updated_ms: Date.now(), messages: 2 }] }));
    const toggle = screen.getByTestId("chats-toggle");
    await user.click(toggle);
    expect(toggle.getAttribute("aria-expanded")).toBe("true");
    screen.getByTestId("chat-item").focus();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("chat-item")).toBeNull();
    expect(toggle.getAttribute("aria-expanded")).toBe("false");
    expect(document.activeElement).toBe(toggle);
  });

  it("disables Condense while busy or with no messages", () => {
    setup();
    const condense = () => (screen.getByTestId("condense") as HTMLButtonElement).disabled;
    showState(snapshot([]));
    expect(condense()).toBe(true);
    showState(snapshot(chat, { busy: true }));
    expect(condense()).toBe(true);
    showState(snapshot(chat));
    expect(condense()).toBe(false);
  });

  it("keeps the text being written in VS Code's view state", async () => {
    const { host, user } = setup({ draft: "half a thought" });
    const input = screen.getByTestId("input") as HTMLTextAreaElement;
    expect(input.value).toBe("half a thought");
    await user.type(input, "!");
    expect(host.setState).toHaveBeenLastCalledWith({ draft: "half a thought!" });
  });
});
