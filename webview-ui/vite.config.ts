import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// One ES module and one stylesheet with fixed names, loaded by the extension under a strict CSP:
// no code splitting, no HTML entry, no preload helper, nothing fetched at run time.
export default defineConfig({
  plugins: [react()],
  publicDir: false,
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    cssCodeSplit: false,
    modulePreload: false,
    assetsInlineLimit: Number.MAX_SAFE_INTEGER,
    // One file by design (React, Markdown, highlight.js, zod): about 600 kB, 185 kB gzipped.
    chunkSizeWarningLimit: 800,
    rollupOptions: {
      onwarn(warning, warn) {
        // zod's sources carry /* @__PURE__ */ comments Rollup cannot place; harmless.
        if (warning.code === "INVALID_ANNOTATION" && warning.id?.includes("node_modules")) return;
        warn(warning);
      },
      input: fileURLToPath(new URL("src/main.tsx", import.meta.url)),
      output: {
        format: "es",
        inlineDynamicImports: true,
        entryFileNames: "chat.js",
        assetFileNames: (asset) => {
          if (asset.names.some((name) => name.endsWith(".css"))) return "chat.css";
          throw new Error(`unexpected asset in the webview bundle: ${asset.names.join(", ")}`);
        },
      },
    },
  },
  test: {
    environment: "jsdom",
    include: ["test/unit/**/*.test.{ts,tsx}"],
    setupFiles: ["test/unit/setup.ts"],
    restoreMocks: true,
  },
});
