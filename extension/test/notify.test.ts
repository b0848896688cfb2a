// Every notification goes through src/host/notify.ts, which neutralizes its text: no other source file
// may call `vscode.window.show*Message` or `withProgress` itself (this test reads them all), and
// what the wrapper shows carries no link, icon or applied bidirectional control.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import * as notify from "../src/host/notify";
import * as fake from "./fakeVscode";

const SRC = path.join(__dirname, "..", "src");
/** A direct use of VS Code's notifications, called or passed on. */
const DIRECT = /\b(show(Information|Warning|Error)Message|withProgress)\b/;

beforeEach(() => fake.reset());

describe("the notification wrapper", () => {
  it("is the only module that shows notifications", () => {
    const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((f) => /\.tsx?$/.test(f));
    expect(files.length).toBeGreaterThan(10);
    const direct = files
      .filter((f) => f !== path.join("host", "notify.ts"))
      .flatMap((f) =>
        readFileSync(path.join(SRC, f), "utf8")
          .split("\n")
          .map((line, i) => ({ at: `${f}:${i + 1}`, line }))
          .filter(({ line }) => DIRECT.test(line)),
      )
      .map(({ at, line }) => `${at}: ${line.trim()}`);
    expect(direct, "show notifications through src/host/notify.ts, which neutralizes untrusted text").toEqual([]);
    expect(readFileSync(path.join(SRC, "host", "notify.ts"), "utf8")).toMatch(DIRECT);
  });

  it("neutralizes what each kind of notification says", async () => {
    const text = "Context Condenser: x.json: [Open docs](command:workbench.action.terminal.new) \u202Eevil";
    const shown = "Context Condenser: x.json: [Open docs] (command:workbench.action.terminal.new) ⟨U+202E⟩evil";
    await notify.info(text);
    await notify.warn(text, "Show Log");
    await notify.error(text);
    await notify.modal(text, "detail [d](file:///etc/passwd)", "Send Key There");
    await notify.progress(`Condensing with $(x) ${text}`, async () => 1);
    expect(fake.shown.info).toEqual([shown]);
    expect(fake.shown.warnings).toEqual([shown, shown]);
    expect(fake.shown.errors).toEqual([shown]);
    expect(fake.shown.modals).toEqual([{ message: shown, detail: "detail [d] (file:///etc/passwd)", buttons: ["Send Key There"] }]);
    expect(fake.shown.progress).toEqual([`Condensing with $ (x) ${shown}`]);
  });
});
