import { compact, dollars, tokens } from "../format";
import type { ContextStatus } from "../protocol";
import type { ChatCost } from "../state";

export interface MeterView {
  /** "1.2k / 8k · 15%" */
  text: string;
  percent: number;
  threshold: number | null;
  /** At or past the auto-condense threshold, or over the request limit. */
  warning: boolean;
  tooltip: string;
}

export function meterView(context: ContextStatus): MeterView {
  const percent = Math.round(context.percent);
  const threshold = context.threshold_percent ?? null;
  const overLimit = context.tokens > context.limit;
  const warning = (threshold !== null && context.percent >= threshold) || overLimit;
  const tooltip = [
    `${tokens(context.tokens)} of ${tokens(context.window)} tokens (${context.source})`,
    threshold === null ? "Automatic condensation is off" : `Condenses automatically at ${threshold}%`,
    `Request limit: ${tokens(context.limit)} tokens${overLimit ? " (exceeded)" : ""}`,
  ].join("\n");
  return {
    text: `${compact(context.tokens)} / ${compact(context.window)} · ${percent}%`,
    percent,
    threshold,
    warning,
    tooltip,
  };
}

const clamp = (n: number) => Math.min(100, Math.max(0, n));

/** "$0.0123" (little room in a side bar): what condensing cost, with what it is made of in its
 *  tooltip and its accessible name. */
function CostText({ cost }: { cost: ChatCost | null }) {
  if (!cost) return null;
  const parts = [`Spent on condensing in this chat: ${dollars(cost.total)}`, `applied condensations: ${dollars(cost.applied)}`];
  if (cost.unapplied > 0) parts.push(`runs not applied (failed or too little gain): ${dollars(cost.unapplied)}`);
  const title = parts.join("\n");
  return (
    <span className="meter__cost" data-testid="chat-cost" title={title} aria-label={title.replace(/\n/g, "; ")}>
      {dollars(cost.total)}
    </span>
  );
}

/** How full the context is: figures and a bar with the threshold marked; what condensing cost. */
export function ContextMeter({ context, cost = null }: { context: ContextStatus | null; cost?: ChatCost | null }) {
  if (!context) {
    return (
      <div className="meter" data-testid="meter" data-warning="false">
        <span className="meter__text">No context yet</span>
        <CostText cost={cost} />
      </div>
    );
  }
  const view = meterView(context);
  return (
    <div
      className={`meter${view.warning ? " meter--warning" : ""}`}
      data-testid="meter"
      data-warning={String(view.warning)}
      title={view.tooltip}
    >
      <span className="meter__text">{view.text}</span>
      <div
        className="meter__bar"
        role="meter"
        aria-label="Context used"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={clamp(view.percent)}
        aria-valuetext={view.text}
      >
        <div className="meter__fill" style={{ width: `${clamp(context.percent)}%` }} />
        {view.threshold !== null && (
          <div className="meter__threshold" style={{ left: `${clamp(view.threshold)}%` }} aria-hidden="true" />
        )}
      </div>
      <CostText cost={cost} />
    </div>
  );
}
