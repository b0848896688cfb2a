// Open Session File…'s read: a file over the core's limit is refused by its size, before any of
// it is read; one within it is read whole. Real files (a sparse one past the limit, so the test
// writes almost nothing), the limit from the real core.
import * as fs from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileTooLarge, type SizedFileSystem, readConversationText } from "../src/files/sessionFile";
import { meta } from "./core";

const limit = meta.limits.max_conversation_bytes;
let dir: string;

/** Node's file system, counting the reads. */
function nodeFs(): SizedFileSystem<string> & { reads: number } {
  const counted = {
    reads: 0,
    stat: (p: string) => fs.stat(p),
    readFile: (p: string) => {
      counted.reads++;
      return fs.readFile(p);
    },
  };
  return counted;
}

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(tmpdir(), "session-file-"));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe("readConversationText", () => {
  it("uses the core's limit, which is the CLI's: 256 MB", () => {
    expect(limit).toBe(256 * 1024 * 1024);
  });

  it("refuses a file one byte over the limit without reading it", async () => {
    const big = path.join(dir, "huge.jsonl");
    const file = await fs.open(big, "w");
    await file.truncate(limit + 1); // sparse: no data is written
    await file.close();
    const files = nodeFs();
    const refused = await readConversationText(files, big, "huge.jsonl", limit).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FileTooLarge);
    expect((refused as Error).message).toBe("huge.jsonl is 256 MB: conversation files of more than 256 MB are refused");
    expect(files.reads).toBe(0);
  });

  it("reads a file within the limit, as UTF-8 text", async () => {
    const small = path.join(dir, "small.json");
    const text = '{"messages":[{"role":"user","content":"héllo ✓"}]}';
    await fs.writeFile(small, text);
    const files = nodeFs();
    expect(await readConversationText(files, small, "small.json", limit)).toBe(text);
    expect(files.reads).toBe(1);
  });

  it("decides by the size alone: exactly at the limit is read, one byte more is not", async () => {
    const sized = (size: number): SizedFileSystem<string> & { reads: number } => {
      const f = { reads: 0, stat: async () => ({ size }), readFile: async () => (f.reads++, new Uint8Array()) };
      return f;
    };
    const at = sized(limit);
    await readConversationText(at, "x", "x", limit);
    expect(at.reads).toBe(1);
    const over = sized(limit + 1);
    await expect(readConversationText(over, "x", "x", limit)).rejects.toBeInstanceOf(FileTooLarge);
    expect(over.reads).toBe(0);
  });
});
