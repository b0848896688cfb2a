import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// `vscode` exists only inside VS Code: the tests that reach modules importing it get the stand-in
// of test/fakeVscode.ts (Node's file system, scripted dialogs).
export default defineConfig({
  resolve: { alias: { vscode: fileURLToPath(new URL("./test/fakeVscode.ts", import.meta.url)) } },
  test: { include: ["test/**/*.test.ts"] },
});
