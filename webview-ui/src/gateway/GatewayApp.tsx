// The Gateway view: the gateway's state (start, stop, copy an agent's setup), then one row per live
// session — its client, model, a meter of the tokens forwarded against the model's window (and what
// the client sent), its requests, condensations, tokens not sent, the money condensing saved (net
// of the prompt cache written again, shown negative with when it pays back while it cost more),
// cache reads — which opens on the session's condensations (drawn by the chat's own row, with why
// each ran) and its controls. Every message that arrives is checked against the contract first;
// every figure is the core's.

import { useEffect, useState } from "react";
import type { Host } from "../host";
import { CondensationRow } from "../components/CondensationRow";
import { Visible } from "../components/Visible";
import { moneySaved, tokens, usd } from "../format";
import {
  parseGatewayToWebview,
  type GatewayPreview,
  type GatewayReport,
  type GatewaySessionView,
  type GatewayToHost,
  type SessionStats,
} from "../protocol";
import "./gateway.css";

interface State {
  port: number | null;
  report: GatewayReport | null;
  sessions: GatewaySessionView[];
}

const clamp = (n: number) => Math.max(0, Math.min(100, n));

/** The money line of a session's (or the totals') figures, and whether it is a loss. */
function Money({ stats, testid }: { stats: SessionStats; testid: string }) {
  const text = moneySaved(stats);
  if (!text) return null;
  return (
    <span
      data-testid={testid}
      className={stats.cost_saved_usd < 0 ? "gw-loss" : undefined}
      title="What condensing saved: each answered request billed as the client sent it (the same cache rules over its own bytes) less what it was billed, less the summaries. A condensation makes the upstream write its cache again from there, so this is negative until the condensations have paid for it."
    >
      {text}
    </span>
  );
}

/** One session's row: its figures, and opened, its condensations and controls. */
function SessionRow({
  name,
  stats,
  view,
  threshold,
  preview,
  act,
}: {
  name: string;
  stats: SessionStats;
  view: GatewaySessionView | undefined;
  threshold: number;
  preview: GatewayPreview | null;
  act: (message: GatewayToHost) => void;
}) {
  const [open, setOpen] = useState(false);
  const win = view?.window ?? stats.window;
  const percent = win > 0 ? (100 * stats.last_tokens_forwarded) / win : 0;
  const clientPercent = win > 0 ? (100 * stats.last_tokens_client) / win : 0;
  const saved = Math.max(0, stats.tokens_client - stats.tokens_forwarded);
  const meterText = `${tokens(stats.last_tokens_forwarded)} / ${tokens(win)} tokens forwarded (${Math.round(percent)}%); the client sent ${tokens(stats.last_tokens_client)}`;
  const condensations = view?.condensations ?? [];
  return (
    <li className="gw-session" data-testid="gateway-session" data-session={name} data-paused={String(stats.paused)}>
      <button type="button" className="gw-session__head disclosure" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span className="disclosure__chevron" aria-hidden="true" />
        <span className="gw-session__client" data-testid="gateway-client">
          <Visible text={stats.client || "unknown client"} />
        </span>
        <span className="gw-session__model">
          <Visible text={stats.model} />
        </span>
        {stats.paused && <span className="gw-badge">paused</span>}
        {stats.title && (
          <span className="gw-session__title" data-testid="gateway-title" title={stats.title}>
            <Visible text={stats.title} />
          </span>
        )}
      </button>
      <div className="meter" title={meterText}>
        <span className="meter__text">{meterText}</span>
        <div className="meter__bar" role="meter" aria-label="Context forwarded" aria-valuemin={0} aria-valuemax={100} aria-valuenow={clamp(percent)} aria-valuetext={meterText}>
          <div className="gw-meter__client" style={{ width: `${clamp(clientPercent)}%` }} />
          <div className="meter__fill" style={{ width: `${clamp(percent)}%` }} />
          <div className="meter__threshold" style={{ left: `${clamp(threshold * 100)}%` }} aria-hidden="true" />
        </div>
      </div>
      <p className="gw-session__figures" data-testid="gateway-figures">
        <span>{stats.requests} requests</span>
        <span data-testid="gateway-condensations">
          {stats.condensations} condensation{stats.condensations === 1 ? "" : "s"}
        </span>
        <span data-testid="gateway-saved">{tokens(saved)} tokens not sent</span>
        <Money stats={stats} testid="gateway-money" />
        <span>{tokens(stats.usage.cache_read)} cache reads</span>
        {stats.summaries > 0 && (
          <span data-testid="gateway-summaries" title={`Written in the background by the condensing model, for ${usd(stats.summary_cost_usd)}`}>
            {stats.summaries} {stats.summaries === 1 ? "summary" : "summaries"}
          </span>
        )}
        {stats.cost_usd > 0 && (
          <span data-testid="gateway-billed" title="What the upstream's reported usage cost at the model's prices: uncached input, cache writes and reads, output">
            {usd(stats.cost_usd)} billed
          </span>
        )}
      </p>
      {stats.note && (
        <p className="gw-session__note">
          <Visible text={stats.note} />
        </p>
      )}
      {stats.summary_note && (
        <p className="gw-session__note" data-testid="gateway-summary-note">
          <Visible text={`${stats.summary_note} (the ledger stands in)`} />
        </p>
      )}
      {open && (
        <div className="gw-session__body">
          <div className="gw-session__actions">
            <button type="button" className="button button--secondary button--small" data-testid="gateway-preview" onClick={() => act({ type: "preview", session: name })}>
              Preview next condensation
            </button>
            <button type="button" className="button button--secondary button--small" data-testid="gateway-condense" onClick={() => act({ type: "condenseNext", session: name })}>
              Condense now
            </button>
            <button type="button" className="button button--secondary button--small" data-testid="gateway-pause" onClick={() => act({ type: "pause", session: name, paused: !stats.paused })}>
              {stats.paused ? "Resume" : "Pause"}
            </button>
            <button
              type="button"
              className="button button--secondary button--small"
              data-testid="gateway-undo"
              disabled={condensations.length === 0}
              onClick={() => act({ type: "undo", session: name })}
            >
              Undo last condensation
            </button>
          </div>
          {preview && (
            <div className="gw-preview" data-testid="gateway-preview-result">
              <p>
                Next condensation: messages {preview.start}–{preview.end - 1}, {tokens(preview.tokens_before)} → {tokens(preview.tokens_after)} tokens. It applies when you choose Condense now.
              </p>
              <pre className="gw-preview__text">
                <Visible text={preview.text} />
              </pre>
            </div>
          )}
          {condensations.length === 0 && <p className="gw-session__empty">No condensation yet: every request went out as the client sent it.</p>}
          {condensations.map((c) => (
            <CondensationRow
              key={c.record.condense_id}
              record={c.record}
              summary={c.text}
              hiddenCount={0}
              detail={`Messages ${c.start}–${c.end - 1} (${tokens(c.tokens_before)} tokens) hidden; in their place ${c.summary ? "a summary" : "the ledger"} of ${tokens(c.tokens_after)} tokens.`}
            />
          ))}
        </div>
      )}
    </li>
  );
}

export function GatewayApp({ host }: { host: Host<GatewayToHost> }) {
  const [state, setState] = useState<State>({ port: null, report: null, sessions: [] });
  const [previews, setPreviews] = useState<Record<string, GatewayPreview>>({});
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const onMessage = (event: MessageEvent<unknown>) => {
      const parsed = parseGatewayToWebview(event.data);
      if (!parsed.ok) {
        console.error(`Context Condenser gateway: ${parsed.error}`);
        setError(parsed.error);
        return;
      }
      const m = parsed.value;
      if (m.type === "state") {
        setState({ port: m.port ?? null, report: m.report ?? null, sessions: m.sessions });
        setError(null);
      } else if (m.type === "preview") {
        setPreviews((p) => ({ ...p, [m.preview.session]: m.preview }));
      } else {
        setError(m.message);
      }
    };
    window.addEventListener("message", onMessage);
    host.post({ type: "ready" });
    return () => window.removeEventListener("message", onMessage);
  }, [host]);

  const act = (message: GatewayToHost) => host.post(message);
  const { port, report, sessions } = state;
  const names = report ? Object.keys(report.sessions) : [];
  return (
    <main className="gateway" data-testid="gateway">
      <header className="gateway__header">
        <p className="gateway__status" data-testid="gateway-status">
          {port !== null ? (
            <>
              Listening on <code>127.0.0.1:{port}</code>
              {report?.config.observe ? " (observe mode: nothing is changed)" : ""}
              {report && !report.config.observe && (
                <span data-testid="gateway-policy">
                  {` · condenses at ${Math.round(report.config.threshold * 100)}% of a model's window${report.config.policy === "cache-aware" ? ", and earlier when it pays for the cache it rewrites" : ""}`}
                </span>
              )}
            </>
          ) : (
            "The gateway is stopped."
          )}
        </p>
        <div className="gateway__actions">
          {port !== null ? (
            <button type="button" className="button button--secondary" data-testid="gateway-stop" onClick={() => act({ type: "stop" })}>
              Stop Gateway
            </button>
          ) : (
            <button type="button" className="button" data-testid="gateway-start" onClick={() => act({ type: "start" })}>
              Start Gateway
            </button>
          )}
          <button type="button" className="button button--secondary" data-testid="gateway-setup" onClick={() => act({ type: "copySetup" })}>
            Copy Setup…
          </button>
        </div>
        {report && (
          <p className="gateway__totals" data-testid="gateway-totals">
            {names.length} session{names.length === 1 ? "" : "s"} · {report.totals.condensations} condensation
            {report.totals.condensations === 1 ? "" : "s"} · {tokens(Math.max(0, report.totals.tokens_client - report.totals.tokens_forwarded))} tokens not sent
            {moneySaved(report.totals) && " · "}
            <Money stats={report.totals} testid="gateway-total-money" />
          </p>
        )}
      </header>
      {error && (
        <p className="gateway__error" role="alert">
          <Visible text={error} />
        </p>
      )}
      {port !== null && names.length === 0 && (
        <p className="gateway__empty" data-testid="gateway-empty">
          No session yet. Point an agent at the gateway (Copy Setup…) and its sessions show here as they run.
        </p>
      )}
      {report && names.length > 0 && (
        <ul className="gateway__sessions">
          {names.map((name) => (
            <SessionRow
              key={name}
              name={name}
              stats={report.sessions[name]}
              view={sessions.find((s) => s.session === name)}
              threshold={report.config.threshold}
              preview={previews[name] ?? null}
              act={act}
            />
          ))}
        </ul>
      )}
    </main>
  );
}
