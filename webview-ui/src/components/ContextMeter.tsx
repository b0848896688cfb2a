import { compact, tokens } from "../format";
import type { ContextStatus } from "../protocol";

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

/** How full the context is: figures and a bar with the threshold marked. */
export function ContextMeter({ context }: { context: ContextStatus | null }) {
  if (!context) {
    return (
      <div className="meter" data-testid="meter" data-warning="false">
        <span className="meter__text">No context yet</span>
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
    </div>
  );
}
