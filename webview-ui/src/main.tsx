import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./components/App";
import { vscodeHost } from "./host";
import "./styles.css";

const root = document.getElementById("root");
if (!root) throw new Error("Context Condenser webview: no #root element");
createRoot(root).render(
  <StrictMode>
    <App host={vscodeHost()} />
  </StrictMode>,
);
