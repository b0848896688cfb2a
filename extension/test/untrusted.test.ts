// The neutralizer of untrusted text (src/host/untrusted.ts): no notification link, no icon and no
// applied bidirectional control survives it, and the user still reads what the text said. The
// link syntax is VS Code's own (vs/base/common/linkedText.ts), copied here as the oracle.
import { describe, expect, it } from "vitest";
import { showBidi } from "@context-condenser/protocol";
import { advise } from "../src/engine/errors";
import { meterText } from "../src/files/meter";
import { neutralize } from "../src/host/untrusted";
import { newTestEngine } from "./core";

/** VS Code's notification links: `[label](https://…|command:…|file:… "title")`. */
const LINK_REGEX = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^\)\s]+)(?: (["'])(.+?)(\3))?\)/gi;
/** VS Code's icon syntax in labels. */
const ICON_REGEX = /\$\([a-z0-9-]+(?:~[a-z]+)?\)/gi;
const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;

const links = (text: string) => [...text.matchAll(LINK_REGEX)].map((m) => m[0]);

/** What the user reads, spaces aside: the neutralizer only adds spaces (and shows controls). */
const withoutSpaces = (text: string) => text.replace(/ /g, "");

const ATTACK = "[Open docs](command:workbench.action.terminal.new)";

describe("neutralize", () => {
  it("breaks the attacker's command link and keeps it readable", () => {
    expect(links(ATTACK)).toHaveLength(1);
    expect(neutralize(ATTACK)).toBe("[Open docs] (command:workbench.action.terminal.new)");
    expect(links(neutralize(ATTACK))).toEqual([]);
  });

  it("breaks the link in the core's parse error of the attacker's session file", () => {
    const file = JSON.stringify({ messages: [{ role: ATTACK, content: "hi" }] });
    let message = "";
    try {
      newTestEngine().parseConversation(file);
    } catch (e) {
      message = (e as Error).message;
    }
    // The core quotes the bad value: the notification would have carried the link.
    const shown = `Context Condenser: session.json is not a session file the engine reads: ${message}`;
    expect(links(shown)).not.toEqual([]);
    expect(links(neutralize(shown))).toEqual([]);
    expect(neutralize(shown)).toContain("[Open docs] (command:workbench.action.terminal.new)");
  });

  it("breaks a link in a server's error message, as advise() words it", () => {
    const advice = advise({ kind: "llm_auth", message: "401: [x](command:workbench.action.terminal.new)" }, "gpt");
    expect(links(advice.text)).not.toEqual([]);
    expect(links(neutralize(advice.text))).toEqual([]);
  });

  it.each([
    ["a link with a title", '[docs](https://evil.example/a "Open the docs")'],
    ["a link with a single-quoted title", "[docs](command:workbench.action.reloadWindow 'Reload')"],
    ["a link inside brackets", "[[Open docs](command:workbench.action.terminal.new)]"],
    ["an opening bracket inside the label", "[a [b](command:x)"],
    ["a link after an escaped bracket", "\\[a\\] [b](command:x)"],
    ["a file: link", "[passwd](file:///etc/passwd)"],
    ["an https: link", "[site](https://example.com/path?q=1)"],
    ["an http: link in capitals", "[site](HTTP://EXAMPLE.COM)"],
    ["two links in a row", "[a](command:x)[b](command:y)"],
    ["a link after `]]`", "]][a](command:x)"],
  ])("breaks %s", (_what, text) => {
    expect(links(text)).not.toEqual([]);
    const out = neutralize(text);
    expect(links(out)).toEqual([]);
    expect(out).not.toContain("](");
    expect(withoutSpaces(out)).toBe(withoutSpaces(text));
  });

  it("keeps brackets that VS Code reads as no link, and adds no link to them", () => {
    for (const text of ["[[Open]](command:x)", "[a [b] c](command:x)", "[a\\](b](command:x)", "[a](b)", "[a](javascript:x)"]) {
      expect(links(text)).toEqual([]);
      expect(links(neutralize(text))).toEqual([]);
      expect(withoutSpaces(neutralize(text))).toBe(withoutSpaces(text));
    }
    expect(neutralize("[[Open]](command:x)")).toBe("[[Open]] (command:x)");
  });

  it("shows each bidirectional control as its code point", () => {
    expect(neutralize("invoice\u202Etxt.exe")).toBe("invoice⟨U+202E⟩txt.exe");
    const all = "\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069\u200E\u200F\u061C";
    expect(neutralize(all)).toBe(
      "⟨U+202A⟩⟨U+202B⟩⟨U+202C⟩⟨U+202D⟩⟨U+202E⟩⟨U+2066⟩⟨U+2067⟩⟨U+2068⟩⟨U+2069⟩⟨U+200E⟩⟨U+200F⟩⟨U+061C⟩",
    );
    expect(neutralize(all)).not.toMatch(BIDI);
  });

  it("turns off icons and leaves other text as it is", () => {
    expect(neutralize("model $(terminal) x")).toBe("model $ (terminal) x");
    expect(neutralize("model $(terminal) x")).not.toMatch(ICON_REGEX);
    const plain = "Context Condenser: session.json: 20 messages, 1,234 tokens (−12%) · $0.0001 · [x] (y)";
    expect(neutralize(plain)).toBe(plain);
  });

  it("never lets a link, an icon or a control through, over many generated strings", () => {
    // Links of every form VS Code reads (label, target, optional title) with pieces that make
    // brackets, titles, icons and controls mixed in and around them (a seeded generator, so a
    // failure repeats).
    const pieces = [
      "[", "]", "(", ")", "$", "$(", "](", "[a]", "(b)", " ", '"', "'", "\\", "\n", "x", "é",
      "command:", "file:", "https://", "http://", "workbench.action.terminal.new", ' "t"', " 't'",
      "\u202E", "\u2066", "\u2069", "\u200E", "\u200F", "\u061C", "\u202A", "⟨U+202E⟩",
    ];
    const schemes = ["command:", "file:///", "https://", "http://", "HTTPS://", "Command:"];
    let seed = 0x2024;
    const next = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const noise = (max: number) => {
      let text = "";
      for (let i = next(max + 1); i > 0; i--) text += pieces[next(pieces.length)];
      return text;
    };
    const word = () => ["Open docs", "x", "a b", "é", "\u202Eevil"][next(5)];
    const link = () => {
      const title = [``, ` "Open"`, ` 'Open'`, ` "${noise(2)}"`][next(4)];
      return `[${word()}${next(3) === 0 ? noise(2) : ""}](${schemes[next(schemes.length)]}${word().replace(/ /g, "")}${title})`;
    };
    let linked = 0;
    for (let n = 0; n < 5000; n++) {
      let text = noise(6);
      for (let i = next(3); i > 0; i--) text += link() + noise(4);
      if (links(text).length > 0) linked++;
      const out = neutralize(text);
      expect(links(out), JSON.stringify(text)).toEqual([]);
      expect(out, JSON.stringify(text)).not.toMatch(ICON_REGEX);
      expect(out, JSON.stringify(text)).not.toMatch(BIDI);
      // Readable: the same characters in the same order, but for the spaces added and the controls shown.
      expect(withoutSpaces(out), JSON.stringify(text)).toBe(withoutSpaces(showBidi(text)));
      expect(neutralize(out), JSON.stringify(text)).toBe(out);
    }
    // The generator does make links VS Code reads (else the test would prove nothing).
    expect(linked).toBeGreaterThan(1000);
  });
});

describe("the status-bar meter", () => {
  it("shows a chat's title or a path neutralized in its tooltip", () => {
    const m = meterText({ tokens: 10, contextWindow: 100, source: 'chat "$(alert) [a](command:x) \u202Eevil"' }, 80);
    expect(m.tooltip).toContain('chat "$ (alert) [a] (command:x) ⟨U+202E⟩evil"');
    expect(links(m.tooltip)).toEqual([]);
  });
});
