import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./components/App";
import { vscodeHost } from "./host";
import { GatewayApp } from "./gateway/GatewayApp";
import type { GatewayToHost, SettingsToHost } from "./protocol";
import { SettingsApp } from "./settings/SettingsApp";
import "./styles.css";

// One bundle, three apps: the page says which one it hosts (`data-view`, chat when absent).
const root = document.getElementById("root");
if (!root) throw new Error("Context Condenser webview: no #root element");
const view = root.dataset["view"] ?? "chat";
if (view !== "chat" && view !== "settings" && view !== "gateway") console.error(`Context Condenser webview: unknown view "${view}", showing the chat`);
createRoot(root).render(
  <StrictMode>
    {view === "settings" ? (
      <SettingsApp host={vscodeHost<SettingsToHost>()} />
    ) : view === "gateway" ? (
      <GatewayApp host={vscodeHost<GatewayToHost>()} />
    ) : (
      <App host={vscodeHost()} />
    )}
  </StrictMode>,
);
