import { defineConfig } from "vitest/config";

// The timeouts are hang guards, not claims about speed (the project's tests assert outcomes, never
// elapsed time): generous, so that a busy machine passes and only a hang fails.
export default defineConfig({ test: { include: ["test/**/*.test.ts"], testTimeout: 120_000, hookTimeout: 120_000 } });
