// Copies the built chat webview (webview-ui/dist, built by Vite) into the extension, which loads
// it from its own folder at run time.
import { copyFileSync, existsSync, mkdirSync } from "node:fs";

mkdirSync("webview", { recursive: true });
for (const file of ["chat.js", "chat.css"]) {
  const from = `../webview-ui/dist/${file}`;
  if (!existsSync(from)) {
    console.error(`copy-webview: ${from} is missing; build it first: npm run build --workspace webview-ui`);
    process.exit(1);
  }
  copyFileSync(from, `webview/${file}`);
}
