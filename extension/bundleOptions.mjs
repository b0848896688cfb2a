// The esbuild options of the extension's bundles (build.mjs), shared with what bundles the
// gateway's worker thread the same way outside the build: its test (test/gatewayThread.test.ts)
// and the extension host's abuse bench (benches/gateway-host.mjs).
export const bundleOptions = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["vscode"],
  sourcemap: false,
  minify: false,
  logLevel: "warning",
};
