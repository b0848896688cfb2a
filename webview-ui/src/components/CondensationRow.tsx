import { useId, useState, type ReactNode } from "react";
import { cachedShare, costEstimate, dollars, duration, savedPercent, tokens } from "../format";
import type { CondensationRecord, CondenseReason, PassMetric, Retention } from "../protocol";
import { Markdown } from "./Markdown";
import { Visible, visible } from "./Visible";

export const REASONS: Record<CondenseReason, string> = {
  threshold: "threshold reached",
  limit: "request limit reached",
  overflow: "context overflow",
  manual: "requested",
  cache: "it pays for the prompt cache",
};

/** "automatic: threshold reached" or "manual". */
export const trigger = (automatic: boolean, reason: CondenseReason): string =>
  automatic ? `automatic: ${REASONS[reason]}` : reason === "manual" ? "manual" : `manual: ${REASONS[reason]}`;

interface Props {
  record: CondensationRecord;
  /** The summary's text: the record's, or its summary message's. */
  summary: string | null;
  /** How many messages the condensation hid; they show in `children` when expanded. */
  hiddenCount: number;
  children?: ReactNode;
  /** Absent while the snapshot does not have the condensation yet. */
  onUndo?: (condenseId: string) => void;
  /** A line under the figures: what was hidden, where the row alone does not say. */
  detail?: string;
}

/** One condensation where it happened in the chat: its figures, its summary, its hidden messages. */
export function CondensationRow({ record, summary, hiddenCount, children, onUndo, detail }: Props) {
  const saved = savedPercent(record.tokens_before, record.tokens_after);
  return (
    <section className="condensation" data-testid="condensation-row" aria-label={visible(`Condensation with ${record.provider_id}`)}>
      <div className="condensation__head">
        <span className="condensation__title">
          Condensed with{" "}
          <strong>
            <Visible text={record.provider_id} />
          </strong>
        </span>
        {onUndo && (
          <button
            type="button"
            className="button button--secondary button--small"
            data-testid="undo"
            title="Undo this condensation: the hidden messages come back"
            onClick={() => onUndo(record.condense_id)}
          >
            Undo
          </button>
        )}
      </div>
      <p className="condensation__figures">
        <span className="condensation__tokens">
          {tokens(record.tokens_before)} → {tokens(record.tokens_after)} tokens ({saved >= 0 ? "−" : "+"}
          {Math.abs(saved)}%)
        </span>
        {/* Nothing spent and nothing timed (a gateway's row) say nothing. */}
        {record.cost > 0 && <span data-testid="condensation-cost">{dollars(record.cost)}</span>}
        {record.time_ms > 0 && <span data-testid="condensation-time">{duration(record.time_ms)}</span>}
        <span>{trigger(record.automatic, record.reason)}</span>
        {record.retention && <RetentionText retention={record.retention} />}
        {record.estimate && (
          <span data-testid="cost-estimate" title="What the cache-aware policy weighed before it condensed: the summary call and the prompt cache written again, against the cache reads the removed tokens no longer cost">
            {costEstimate(record.estimate)}
          </span>
        )}
        {record.cached_share !== undefined && record.cached_share !== null && (
          <span data-testid="cached-share">{cachedShare(record.cached_share)}</span>
        )}
      </p>
      {detail && (
        <p className="condensation__detail" data-testid="condensation-detail">
          <Visible text={detail} />
        </p>
      )}
      {record.passes && record.passes.length > 0 && <Passes passes={record.passes} />}
      {record.summary_truncated && (
        <p className="condensation__flag" data-testid="summary-truncated" title="The condensing model stopped at its output limit: the summary is kept, but it is incomplete. Raise the profile's summary output budget.">
          <span className="condensation__flag-icon" aria-hidden="true">!</span>
          Summary cut at the output limit: it is incomplete.
        </p>
      )}
      {record.retention && (record.retention.missing?.length ?? 0) > 0 && (
        <Expander
          label={`${record.retention.missing?.length} ${record.retention.missing?.length === 1 ? "fact" : "facts"} not kept`}
          className="condensation__missing"
          testIds={{ toggle: "missing-toggle", body: "missing" }}
        >
          <ul>
            {record.retention.missing?.map((label, i) => (
              <li key={i}>
                <Visible text={label} />
              </li>
            ))}
          </ul>
        </Expander>
      )}
      {hiddenCount > 0 && (
        <Expander
          label={`${hiddenCount} earlier ${hiddenCount === 1 ? "message" : "messages"} condensed`}
          className="condensation__hidden"
        >
          {children}
        </Expander>
      )}
      {summary && (
        <Expander label="Summary" className="condensation__summary" testIds={{ toggle: "summary-toggle", body: "summary" }}>
          <Markdown text={summary} />
        </Expander>
      )}
    </section>
  );
}

/** "retention 12/12 · 3 repaired": how many of the facts it must not lose the model still sees. */
function RetentionText({ retention }: { retention: Retention }) {
  const { kept, probes, repaired } = retention;
  const full = kept >= probes;
  const what = `${kept} of ${probes} facts it must not lose (user instructions, files edited, open todos) are still seen by the model`;
  const title = repaired > 0 ? `${what}; ${repaired} put back by code after the summary missed them` : what;
  return (
    <span className={`condensation__retention${full ? "" : " condensation__retention--low"}`} data-testid="retention" title={title}>
      retention {kept}/{probes}
      {repaired > 0 && ` · ${repaired} repaired`}
    </span>
  );
}

/** The passes of a multi-pass run, in order: "lossless −1,204 · mask −8,420"; skipped ones dimmed. */
function Passes({ passes }: { passes: readonly PassMetric[] }) {
  return (
    <ol className="condensation__passes" data-testid="passes" aria-label="Passes">
      {passes.map((p, i) => {
        const skipped = p.skipped ?? null;
        const saved = p.tokens_saved;
        const figure = `${saved >= 0 ? "−" : "+"}${tokens(Math.abs(saved))}`;
        const about = [
          skipped ? `${p.pass}: skipped (${skipped})` : `${p.pass}: ${tokens(saved)} tokens saved`,
          duration(p.time_ms),
          ...(p.cost > 0 ? [dollars(p.cost)] : []),
        ].join(" · ");
        return (
          <li
            key={i}
            className={`condensation__pass${skipped ? " condensation__pass--skipped" : ""}`}
            data-testid="pass"
            data-pass={p.pass}
            data-skipped={skipped ? "true" : undefined}
            title={about}
            aria-label={about}
          >
            <span className="condensation__pass-name">{p.pass}</span> {skipped ? "skipped" : figure}
          </li>
        );
      })}
    </ol>
  );
}

interface ExpanderProps {
  label: string;
  className: string;
  children: ReactNode;
  testIds?: { toggle: string; body: string };
}

/** A disclosure: a button that shows or hides its content (collapsed at first). */
function Expander({ label, className, children, testIds }: ExpanderProps) {
  const [open, setOpen] = useState(false);
  const id = useId();
  return (
    <div className={className}>
      <button
        type="button"
        className="disclosure"
        aria-expanded={open}
        aria-controls={open ? id : undefined}
        data-testid={testIds?.toggle}
        onClick={() => setOpen(!open)}
      >
        <span className="disclosure__chevron" aria-hidden="true" />
        {label}
      </button>
      {open && (
        <div id={id} className={`${className}-body`} data-testid={testIds?.body}>
          {children}
        </div>
      )}
    </div>
  );
}

/** The condensation running now. */
export function CondensingRow({
  provider,
  tokens: count,
  automatic,
  reason,
}: {
  provider: string;
  tokens: number;
  automatic: boolean;
  reason: CondenseReason;
}) {
  return (
    <div className="condensation condensation--running" data-testid="condensing" role="status">
      <span className="spinner" aria-hidden="true" />
      <span>
        Condensing with{" "}
        <strong>
          <Visible text={provider} />
        </strong>
        …
      </span>
      <span className="condensation__figures">
        {tokens(count)} tokens · {trigger(automatic, reason)}
      </span>
    </div>
  );
}
