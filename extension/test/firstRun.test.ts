// The first run's probing and the profile a choice becomes; where a session file's condensation
// goes.
import { describe, expect, it } from "vitest";
import { LlmProfile } from "@context-condenser/protocol";
import { blockedReason, detectedAgents, keyNeeded, listModels, modelIds, probeLocalServers, profileFor } from "../src/settings/firstRun";
import { condensedPath } from "../src/files/sessionPath";
import { meta } from "./core";

const answers = (byUrl: Record<string, unknown>) => async (url: string) => {
  if (!(url in byUrl)) throw new TypeError("fetch failed: ECONNREFUSED");
  const body = byUrl[url];
  return { ok: body !== "500", json: async () => body };
};

describe("probing the local servers", () => {
  it("reads the model ids of an OpenAI /models answer, and nothing else", () => {
    expect(modelIds({ object: "list", data: [{ id: "llama3.2" }, { id: "" }, { name: "x" }, { id: "qwen" }] })).toEqual(["llama3.2", "qwen"]);
    expect(modelIds({ models: [] })).toBeUndefined();
    expect(modelIds("<html>")).toBeUndefined();
  });

  it("offers the servers that answer on their default ports, with their models", async () => {
    const fetch = answers({
      "http://127.0.0.1:11434/v1/models": { data: [{ id: "llama3.2:1b" }] },
      "http://127.0.0.1:1234/v1/models": "500",
    });
    expect(await probeLocalServers(fetch)).toEqual([{ name: "Ollama", base_url: "http://127.0.0.1:11434/v1", models: ["llama3.2:1b"] }]);
  });

  it("gives up on a server that does not answer within the timeout", async () => {
    const hang = (_url: string, init: { signal: AbortSignal }) =>
      new Promise<never>((_, reject) => init.signal.addEventListener("abort", () => reject(new Error("aborted"))));
    expect(await listModels(hang, "http://127.0.0.1:8080/v1/", 20)).toBeUndefined();
  });
});

describe("the profile a choice becomes", () => {
  it("is named after the local server, the tool or the kind, with an id not taken", () => {
    const local = profileFor({ kind: "openai-compatible", baseUrl: "http://127.0.0.1:11434/v1/", model: "llama3.2" }, [], meta.kinds);
    expect(local).toEqual({ id: "ollama", kind: "openai-compatible", base_url: "http://127.0.0.1:11434/v1", model: "llama3.2", context_window: 8192 });
    expect(profileFor({ kind: "openai", model: " gpt-4o-mini " }, ["openai", "openai-2"], meta.kinds).id).toBe("openai-3");
    expect(profileFor({ kind: "openai-compatible", baseUrl: "http://10.0.0.2:9000/v1", model: "m" }, [], meta.kinds).id).toBe("local");
    const cli = profileFor({ kind: "cli", tool: "claude-code", model: "sonnet" }, [], meta.kinds, 180_000);
    expect(cli).toEqual({ id: "claude-code", kind: "cli", tool: "claude-code", model: "sonnet", context_window: 180_000 });
  });

  it("is a profile the core's schema accepts, without any key", () => {
    for (const choice of [
      { kind: "openai", model: "gpt-4o-mini" },
      { kind: "anthropic", model: "claude-sonnet-4-5" },
      { kind: "openai-compatible", baseUrl: "http://127.0.0.1:1234/v1", model: "qwen" },
      { kind: "cli", tool: "codex", model: "gpt-5" },
    ] as const) {
      const profile = profileFor(choice, [], meta.kinds);
      expect(LlmProfile.safeParse(profile).success).toBe(true);
      expect(JSON.stringify(profile)).not.toMatch(/key/i);
    }
  });

  it("asks for a key only where one is needed", () => {
    expect([keyNeeded("openai", meta.kinds), keyNeeded("anthropic", meta.kinds), keyNeeded("openai-compatible", meta.kinds), keyNeeded("cli", meta.kinds)]).toEqual([
      "required",
      "required",
      "optional",
      "none",
    ]);
  });

  it("says why the chat is blocked until a usable profile is chosen", () => {
    expect(blockedReason([], "")).toMatch(/No model is set up/);
    expect(blockedReason([{ id: "a", kind: "openai" }], "b")).toMatch(/Choose the chat's profile/);
    expect(blockedReason([{ id: "m", kind: "manual" }], "m")).toMatch(/manual profile/);
    expect(blockedReason([{ id: "a", kind: "openai" }], "a")).toBeUndefined();
  });
});

describe("a session file's condensation", () => {
  it("goes to a new file beside it, never over the original or an earlier result", async () => {
    const taken = new Set(["/s/rollout.condensed.json"]);
    const exists = async (p: string) => taken.has(p);
    expect(await condensedPath("/s/rollout.jsonl", exists)).toBe("/s/rollout.condensed-2.json");
    expect(await condensedPath("/s/api_conversation_history.json", exists)).toBe("/s/api_conversation_history.condensed.json");
  });
});

describe("the agents the gateway can condense", () => {
  it("are the CLI agents found and the agent extensions installed, by name", () => {
    const tools = [
      { id: "claude-code", found: "/usr/local/bin/claude" },
      { id: "codex", found: null },
      { id: "gemini", found: "/usr/bin/gemini" },
    ];
    const installed = new Set(["saoudrizwan.claude-dev", "continue.continue"]);
    expect(detectedAgents(tools, (id) => installed.has(id))).toEqual(["Claude Code", "Cline", "Continue"]);
    expect(detectedAgents([], () => false)).toEqual([]);
  });
});
