import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// `vscode` exists only inside VS Code: the tests that reach modules importing it get the stand-in
// of test/fakeVscode.ts (Node's file system, scripted dialogs).
// The timeouts are hang guards, not claims about speed (the project's tests assert outcomes, never
// elapsed time): generous, so that a busy machine passes and only a hang fails.
export default defineConfig({
  resolve: { alias: { vscode: fileURLToPath(new URL("./test/fakeVscode.ts", import.meta.url)) } },
  test: { include: ["test/**/*.test.ts"], testTimeout: 120_000, hookTimeout: 120_000 },
});
