import { describe, expect, it } from "vitest";
import { createApi } from "../src/api";
import type { EngineHolder } from "../src/engine/engineHolder";
import type { Secrets } from "../src/settings/secrets";
import { readSettings } from "../src/settings/settings";
import { check, meta, newTestEngine } from "./core";

/** The API over a real engine, with settings whose chat profile (if any) uses `model`. */
function api(model?: string) {
  const profiles = model ? [{ id: "chat", kind: "openai", model, context_window: 128000 }] : [];
  const { settings } = readSettings((key) => ({ profiles, chatProfile: model ? "chat" : undefined })[key], meta, check);
  const holder = { engine: newTestEngine(), settings } as unknown as EngineHolder;
  return createApi(holder, {} as Secrets);
}

const TEXT = "Ünïcödé façade — naïve café";
const oneMessage = (text: string) => ({ messages: [{ id: "m", role: "user" as const, content: [{ type: "text" as const, text }] }] });

describe("the exported API's countText", () => {
  it("counts a text in the model's encoding, the chat profile's model by default", () => {
    // Reference counts from tiktoken's encode_ordinary (the core's unit tests hold the same).
    expect(api().countText(TEXT)).toBe(10); // gpt-4o without a chat profile: o200k_base
    expect(api("gpt-4").countText(TEXT)).toBe(13); // the chat profile's model: cl100k_base
    expect(api("gpt-4").countText(TEXT, "gpt-4o")).toBe(10); // a model given wins
    expect(api().countText("")).toBe(0);
  });

  it("agrees with countTokens on the same text as one message, without its framing", () => {
    const a = api("gpt-4o-mini");
    const text = "fn main() {\n    println!(\"{}\", 42);\n}\n🦀 and some prose, with don't and 12345.";
    const framing = a.countTokens(oneMessage("")).total_tokens;
    expect(a.countText(text)).toBe(a.countTokens(oneMessage(text)).total_tokens - framing);
  });
});
