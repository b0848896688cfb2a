// The CLI tools `cli` profiles may run: each entry (shipped, or from a tool file) with its models,
// what it may serve as (chat, summaries) and whether its program was found, and where it was looked for when it was not; then the tool
// files that could not be used, each as `file:line:column`.

import { useId } from "react";
import { compact } from "../../format";
import type { ToolConfigError, ToolStatus } from "../../protocol";
import { Visible } from "../../components/Visible";

/** What a tool may be, as its entry's `capabilities` say (the core enforces it). */
const USES = {
  both: "chat and summaries",
  chat: "chat only (not the condensing model)",
  summarize: "summaries only (not the chat model)",
} as const;

export function ToolsSection({ tools, errors }: { tools: readonly ToolStatus[]; errors: readonly ToolConfigError[] }) {
  const id = useId();
  return (
    <section className="settings-section" aria-labelledby={`${id}-title`} data-testid="tools">
      <h2 id={`${id}-title`}>CLI tools</h2>
      <p className="section-description">
        CLI agents a profile of kind “CLI tool” can run as its model, with their own login. Add or replace tools in the file
        named by the <code>contextCondenser.toolsFile</code> setting, or, in a trusted workspace, in{" "}
        <code>.vscode/context-condenser.tools.yaml</code>.
      </p>
      {errors.length > 0 && (
        <div className="problems" data-testid="tool-errors" role="alert">
          <p className="problems__title">Some tool files could not be used:</p>
          <ul>
            {errors.map((e, i) => (
              <li key={i}>
                <code>
                  <Visible text={e.line > 0 ? `${e.origin}:${e.line}:${e.column}` : e.origin} />
                </code>
                : <Visible text={e.message} />
              </li>
            ))}
          </ul>
        </div>
      )}
      <ul className="profiles">
        {tools.map((tool) => (
          <li key={tool.id} className="card profile" data-testid="tool-row" data-tool={tool.id}>
            <div className="card__head">
              <div className="card__title">
                <h3 className="card__name">{tool.name}</h3>
                <span className="tag">{tool.id}</span>
                <span className="tag" title="Where the entry comes from">
                  {tool.origin === "shipped" ? "shipped" : "file"}
                </span>
              </div>
            </div>
            <p className="profile__facts">
              <span>models: {tool.models.join(", ")}</span>
              <span data-testid="tool-uses">{USES[tool.capabilities.length === 2 ? "both" : (tool.capabilities[0] ?? "both")]}</span>
              {tool.contextWindow !== null && tool.contextWindow !== undefined && <span>{compact(tool.contextWindow)} window</span>}
              {tool.origin !== "shipped" && <span>from {tool.origin}</span>}
            </p>
            <p
              className={`test-result ${tool.found ? "test-result--passed" : "test-result--failed"}`}
              data-testid="tool-status"
              data-found={String(tool.found !== null && tool.found !== undefined)}
            >
              {tool.found ? `found at ${tool.found}` : `not found (looked at ${tool.searched.join(", ")})`}
            </p>
          </li>
        ))}
      </ul>
    </section>
  );
}
