import { useState } from "react";
import type { ChatViewToHost, LocalServer, SetupState, ToolStatus } from "../protocol";
import { Visible, visible } from "./Visible";

type SetUp = Extract<ChatViewToHost, { type: "setUp" }>;

interface Props {
  /** What the extension found: local servers answering, CLI agents, the agents the gateway can
   *  condense. Null while it looks. */
  offers: { servers: readonly LocalServer[]; tools: readonly ToolStatus[]; agents: readonly string[] } | null;
  setup: { state: SetupState; message: string } | null;
  onSetUp: (choice: SetUp) => void;
  onProbe: () => void;
  /** "Condense the agent you already use": start the gateway and show the agents' setup. */
  onGateway: () => void;
}

/** The first run: choose a model (a hosted API, a local server, a CLI agent); the extension asks
 *  for the key in VS Code's own input box, tests the connection, and saves the profile. */
export function Welcome({ offers, setup, onSetUp, onProbe, onGateway }: Props) {
  const testing = setup?.state === "testing";
  return (
    <section className="welcome" data-testid="welcome" aria-labelledby="welcome-title">
      <h2 id="welcome-title" className="welcome__title">
        Set up a model to chat with
      </h2>
      <p className="welcome__lead">
        Choose where answers come from. Keys go to VS Code's secret storage; the connection is tested before
        anything is saved.
      </p>
      {setup && (
        <p
          className={`welcome__status welcome__status--${setup.state}`}
          data-testid="setup-status"
          data-state={setup.state}
          role="status"
        >
          <Visible text={setup.message} />
        </p>
      )}
      <HostedChoice kind="openai" label="OpenAI" model="gpt-4o-mini" disabled={testing} onSetUp={onSetUp} />
      <HostedChoice kind="anthropic" label="Anthropic" model="claude-sonnet-4-5" disabled={testing} onSetUp={onSetUp} />
      <div className="welcome__group">
        <h3 className="welcome__heading">Local server</h3>
        {offers === null ? (
          <p className="welcome__note">Looking for Ollama, LM Studio and llama.cpp on this machine…</p>
        ) : offers.servers.length === 0 ? (
          <p className="welcome__note">
            None answered on 127.0.0.1 (Ollama :11434, LM Studio :1234, llama.cpp server :8080).{" "}
            <button type="button" className="link-button" data-testid="probe" onClick={onProbe}>
              Look again
            </button>
          </p>
        ) : (
          offers.servers.map((s) => (
            <ModelChoice
              key={s.base_url}
              label={s.name}
              detail={s.base_url}
              models={s.models}
              disabled={testing}
              onUse={(model) => onSetUp({ type: "setUp", kind: "openai-compatible", baseUrl: s.base_url, model })}
            />
          ))
        )}
        <OtherServer disabled={testing} onSetUp={onSetUp} />
      </div>
      <div className="welcome__group" data-testid="welcome-gateway">
        <h3 className="welcome__heading">Condense the agent you already use</h3>
        <p className="welcome__note">
          {offers && offers.agents.length > 0 ? (
            <>
              Found here: <Visible text={offers.agents.join(", ")} />.{" "}
            </>
          ) : null}
          Claude Code, Codex, Cline, Roo Code and Continue keep working as they do, with their own keys; the gateway
          on 127.0.0.1 condenses their long sessions as they go.
        </p>
        <button type="button" className="button button--secondary" data-testid="use-gateway" onClick={onGateway}>
          Start the gateway…
        </button>
      </div>
      <div className="welcome__group">
        <h3 className="welcome__heading">CLI agent</h3>
        {offers?.tools.map((t) => (
          <ModelChoice
            key={t.id}
            label={t.name}
            detail={t.found ? `found: ${t.found}` : `not installed (looked in ${t.searched.length} places)`}
            models={t.models}
            disabled={testing || !t.found}
            onUse={(model) => onSetUp({ type: "setUp", kind: "cli", tool: t.id, model })}
          />
        ))}
      </div>
    </section>
  );
}

function HostedChoice(props: {
  kind: "openai" | "anthropic";
  label: string;
  model: string;
  disabled: boolean;
  onSetUp: (choice: SetUp) => void;
}) {
  const [model, setModel] = useState(props.model);
  return (
    <form
      className="welcome__choice"
      data-testid={`setup-${props.kind}`}
      onSubmit={(e) => {
        e.preventDefault();
        if (model.trim()) props.onSetUp({ type: "setUp", kind: props.kind, model: model.trim() });
      }}
    >
      <span className="welcome__name">{props.label}</span>
      <input
        className="input"
        aria-label={`${props.label} model`}
        value={model}
        onChange={(e) => setModel(e.target.value)}
      />
      <button type="submit" className="button" disabled={props.disabled || !model.trim()}>
        Use {props.label}…
      </button>
    </form>
  );
}

function ModelChoice(props: {
  label: string;
  detail: string;
  models: readonly string[];
  disabled: boolean;
  onUse: (model: string) => void;
}) {
  const [model, setModel] = useState(props.models[0] ?? "");
  return (
    <form
      className="welcome__choice"
      data-testid="setup-option"
      onSubmit={(e) => {
        e.preventDefault();
        if (model) props.onUse(model);
      }}
    >
      {/* A local server's models and a tool's path come from outside: controls shown, not applied. */}
      <span className="welcome__name" title={visible(props.detail)}>
        <Visible text={props.label} />
        <span className="welcome__detail">
          <Visible text={props.detail} />
        </span>
      </span>
      <select className="select" aria-label={visible(`${props.label} model`)} value={model} onChange={(e) => setModel(e.target.value)}>
        {props.models.map((m) => (
          <option key={m} value={m}>
            {visible(m)}
          </option>
        ))}
      </select>
      <button type="submit" className="button" disabled={props.disabled || !model}>
        Use
      </button>
    </form>
  );
}

/** A server on another port or machine: its OpenAI-compatible base URL and a model. */
function OtherServer({ disabled, onSetUp }: { disabled: boolean; onSetUp: (choice: SetUp) => void }) {
  const [baseUrl, setBaseUrl] = useState("");
  const [model, setModel] = useState("");
  const ok = /^https?:\/\/\S+$/.test(baseUrl.trim()) && model.trim() !== "";
  return (
    <form
      className="welcome__choice welcome__choice--other"
      data-testid="setup-other"
      onSubmit={(e) => {
        e.preventDefault();
        if (ok) onSetUp({ type: "setUp", kind: "openai-compatible", baseUrl: baseUrl.trim(), model: model.trim() });
      }}
    >
      <span className="welcome__name">Another server</span>
      <input
        className="input"
        aria-label="Base URL"
        placeholder="http://127.0.0.1:8000/v1"
        value={baseUrl}
        onChange={(e) => setBaseUrl(e.target.value)}
      />
      <input className="input" aria-label="Model" placeholder="model" value={model} onChange={(e) => setModel(e.target.value)} />
      <button type="submit" className="button" disabled={disabled || !ok}>
        Use…
      </button>
    </form>
  );
}
