import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ChatList } from "../../src/components/ChatList";
import { CondensationRow } from "../../src/components/CondensationRow";
import { MessageBubble } from "../../src/components/MessageBubble";
import { PreviewPanel } from "../../src/components/PreviewPanel";
import type { Message } from "../../src/protocol";
import { record, text } from "./fixtures";

// Bidirectional control characters in what the chat shows (a message, a tool's name and input, a
// summary, a path) are shown as marked `⟨U+202E⟩`, never applied: the text reads in the order it
// is stored.

const RLO = "\u202E";
const LRI = "\u2066";
const PDI = "\u2069";
const CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;

/** The page shows no control, and marks each where it was. */
function expectVisible(root: HTMLElement, markers: string[]): void {
  expect(root.textContent).not.toMatch(CONTROLS);
  const marked = within(root).queryAllByTestId("bidi-control");
  expect(marked.map((m) => m.textContent)).toEqual(markers);
  for (const m of marked) {
    expect(m.className).toBe("bidi-control");
    expect(m.title).toMatch(/^U\+[0-9A-F]{4} [A-Z -]+: a bidirectional control character, shown instead of applied$/);
  }
}

describe("bidirectional controls", () => {
  it("show in a user's plain text", () => {
    const { container } = render(<MessageBubble message={text("m1", "user", `invoice${RLO}txt.exe`)} />);
    expect(container.querySelector(".plain-text")?.textContent).toBe("invoice⟨U+202E⟩txt.exe");
    expectVisible(container, ["⟨U+202E⟩"]);
    expect(screen.getByTestId("bidi-control").title).toBe(
      "U+202E RIGHT-TO-LEFT OVERRIDE: a bidirectional control character, shown instead of applied",
    );
  });

  it("show in an answer's Markdown, its inline code and its code blocks", () => {
    const answer = `Run **safe${RLO}** then \`rm ${LRI}x${PDI}\`.\n\n\`\`\`python\nif access_level != "user${RLO} ${LRI}# admin":\n    pass\n\`\`\`\n`;
    const { container } = render(<MessageBubble message={text("m2", "assistant", answer)} />);
    expectVisible(container, ["⟨U+202E⟩", "⟨U+2066⟩", "⟨U+2069⟩", "⟨U+202E⟩", "⟨U+2066⟩"]);
    // Markdown still renders: the strong text and the code block are there.
    expect(container.querySelector("strong")?.textContent).toBe("safe⟨U+202E⟩");
    expect(container.querySelector("pre code")?.textContent).toContain('"user⟨U+202E⟩ ⟨U+2066⟩# admin"');
  });

  it("show in a link's text, and in a blocked link", () => {
    const answer = `[docs${RLO}](https://example.com/a) [x${RLO}](javascript:alert(1))`;
    const { container } = render(<MessageBubble message={text("m3", "assistant", answer)} />);
    expectVisible(container, ["⟨U+202E⟩", "⟨U+202E⟩"]);
    expect(container.querySelector("a")?.textContent).toBe("docs⟨U+202E⟩");
  });

  it("show in a tool's name, its input and its result", async () => {
    const message: Message = {
      id: "m4",
      ts: 0,
      role: "assistant",
      content: [
        { type: "tool_use", id: "t1", name: `read${RLO}_file`, input: { path: `src/${RLO}gpj.exe` } },
        { type: "tool_result", tool_use_id: "t1", content: `done${LRI}` },
      ],
    } as Message;
    const { container } = render(<MessageBubble message={message} />);
    for (const summary of container.querySelectorAll("summary")) await userEvent.click(summary);
    expectVisible(container, ["⟨U+202E⟩", "⟨U+202E⟩", "⟨U+2066⟩"]);
    expect(container.querySelector(".tool__name")?.textContent).toBe("read⟨U+202E⟩_file");
  });

  it("show in a condensation's summary and the facts it did not keep", async () => {
    const { container } = render(
      <CondensationRow
        record={record("c1", { retention: { kept: 1, probes: 2, repaired: 0, missing: [`keep ${RLO}this`] } })}
        summary={`The user asked for ${RLO}this.`}
        hiddenCount={0}
      />,
    );
    await userEvent.click(screen.getByTestId("summary-toggle"));
    await userEvent.click(screen.getByTestId("missing-toggle"));
    expectVisible(container, ["⟨U+202E⟩", "⟨U+202E⟩"]);
  });

  it("show in a preview's path, the messages it hides and what it adds", () => {
    const { container } = render(
      <PreviewPanel
        state={{
          phase: "ready",
          source: { kind: "file", name: `logs/${RLO}lmth.json` },
          preview: {
            task_id: "t1",
            provider_id: "native",
            estimated_cost: 0,
            tokens_before: 100,
            tokens_after: 10,
            condense_id: "c1",
            hidden: [{ id: "m1", role: "user", tokens: 90, text: `hidden ${RLO}text` }],
            added: [{ id: "s1", role: "user", tokens: 10, is_summary: true, text: `summary ${LRI}text` }],
            cost: 0,
          },
        } as never}
        onApply={() => {}}
        onDiscard={() => {}}
      />,
    );
    expectVisible(container, ["⟨U+202E⟩", "⟨U+202E⟩", "⟨U+2066⟩"]);
    expect(screen.getByTestId("preview").getAttribute("aria-label")).toBe(
      "Preview of a condensation of logs/⟨U+202E⟩lmth.json",
    );
  });

  it("show in a chat's title in the list", () => {
    const { container } = render(
      <ChatList
        id="chats"
        chats={[{ id: "c1", title: `Budget ${RLO}slx.exe`, updated_ms: 0, messages: 2 }]}
        currentId={null}
        now={0}
        onOpen={() => {}}
        onRename={() => {}}
        onDelete={() => {}}
        onClose={() => {}}
      />,
    );
    expectVisible(container, ["⟨U+202E⟩"]);
    expect(screen.getByTestId("chat-rename").getAttribute("aria-label")).toBe("Rename Budget ⟨U+202E⟩slx.exe");
  });

  it("leave text without controls as it was", () => {
    const { container } = render(<MessageBubble message={text("m5", "user", "Plain [text] (here) ⟨U+202E⟩ as typed")} />);
    expect(container.querySelector(".plain-text")?.textContent).toBe("Plain [text] (here) ⟨U+202E⟩ as typed");
    expect(within(container).queryAllByTestId("bidi-control")).toEqual([]);
  });
});
