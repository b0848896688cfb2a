// Where the YAML of CLI tools comes from: the user's file, then the workspace's in a trusted
// workspace only; what cannot be read is an error naming the file.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { WORKSPACE_TOOLS_FILE, describeToolError, expandHome, readToolSources, toolFiles } from "../src/settings/toolSources";
import { newTestEngine } from "./core";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tool-sources-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("toolFiles", () => {
  it("reads the user's file (~ expanded), then the workspace's only when the workspace is trusted", () => {
    const inputs = { toolsFile: "~/tools.yaml", workspaceFolder: "/w", home: "/home/u" };
    expect(toolFiles({ ...inputs, trusted: true })).toEqual([path.join("/home/u", "tools.yaml"), path.join("/w", WORKSPACE_TOOLS_FILE)]);
    expect(toolFiles({ ...inputs, trusted: false })).toEqual([path.join("/home/u", "tools.yaml")]);
    expect(toolFiles({ toolsFile: "", workspaceFolder: undefined, trusted: true })).toEqual([]);
    expect(toolFiles({ toolsFile: 42, workspaceFolder: "/w", trusted: false })).toEqual([]);
    expect(expandHome("~", "/h")).toBe("/h");
    expect(expandHome("/abs/~/x", "/h")).toBe("/abs/~/x");
  });
});

describe("readToolSources", () => {
  it("reads each file; a missing workspace file is no error, a missing user file is", () => {
    const user = path.join(dir, "tools.yaml");
    fs.writeFileSync(user, "tools: {}\n");
    const workspace = path.join(dir, "ws");
    const { sources, errors } = readToolSources([user, path.join(workspace, WORKSPACE_TOOLS_FILE)], workspace);
    expect(sources).toEqual([{ origin: user, text: "tools: {}\n" }]);
    expect(errors).toEqual([]);
    const missing = readToolSources([path.join(dir, "nope.yaml")], workspace);
    expect(missing.errors).toEqual([{ origin: path.join(dir, "nope.yaml"), line: 0, column: 0, message: "the file does not exist" }]);
  });

  it("hands the engine what it reads; its errors name file, line and column", () => {
    const bad = path.join(dir, "bad.yaml");
    fs.writeFileSync(bad, "tools:\n  x:\n    binary: [\n");
    const { sources } = readToolSources([bad], undefined);
    const errors = newTestEngine().setToolSources(sources);
    expect(errors).toHaveLength(1);
    expect(describeToolError(errors[0])).toMatch(new RegExp(`^${bad.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:\\d+:\\d+: `));
    expect(describeToolError({ origin: "f", line: 0, column: 0, message: "gone" })).toBe("f: gone");
  });
});
