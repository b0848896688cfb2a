import { costEstimate, dollars, savedPercent, tokens } from "../format";
import type { PreviewMessage, PreviewSource } from "../protocol";
import type { PreviewState } from "../state";
import { Markdown } from "./Markdown";
import { Visible, visible } from "./Visible";

interface Props {
  state: PreviewState;
  onApply: () => void;
  onDiscard: () => void;
}

const ROLE_NAMES = { user: "You", assistant: "Assistant" } as const;

/** What the wait is, by what the provider needs (from the core's estimate). */
const RUNNING = {
  nothing: "Running the provider…",
  llm: "The model is writing the summary…",
  person: "Applying the pasted summary…",
} as const;

const sourceName = (source: PreviewSource): string =>
  source.kind === "chat" ? "this chat" : source.name;

/**
 * A condensation shown before it is applied. While it is made: the provider's estimate (tokens
 * now, the estimated cost) as soon as the core has it, before any LLM call. Then the figures
 * (tokens before → after, the estimate and the real cost), what it hides message by message, and what replaces them (the summary with its
 * ledger, or edited copies); Apply applies exactly this, Discard drops it. Texts and names show
 * their bidirectional controls rather than applying them (`Visible`).
 */
export function PreviewPanel({ state, onApply, onDiscard }: Props) {
  const title = `Preview of a condensation of ${sourceName(state.source)}`;
  if (state.phase === "running") {
    const { estimate } = state;
    return (
      <section className="preview" data-testid="preview" aria-label={visible(title)} aria-busy="true">
        <div className="preview__head">
          <h2 className="preview__title">
          <Visible text={title} />
        </h2>
          {estimate && (
            <p className="preview__figures" data-testid="preview-estimate">
              <span className="preview__tokens">
                <Visible text={estimate.provider_id} />: {tokens(estimate.tokens_before)} tokens now
              </span>
              <span>estimated {dollars(estimate.estimated_cost)}</span>
              <span className="preview__pending">cost: when it is done</span>
            </p>
          )}
        </div>
        <p className="preview__status" role="status">
          {RUNNING[estimate?.needs ?? "nothing"]} Nothing is applied until you press Apply.
        </p>
      </section>
    );
  }
  if (state.phase === "failed") {
    const { failure } = state;
    return (
      <section className="preview preview--failed" data-testid="preview" aria-label={visible(title)}>
        <h2 className="preview__title">
          <Visible text={title} />
        </h2>
        <p className="preview__status" role="alert" data-testid="preview-failure">
          Nothing to apply ({failure.error.kind}): <Visible text={failure.error.message} />
          {failure.cost > 0 && ` It cost ${dollars(failure.cost)}.`}
        </p>
        <div className="preview__actions">
          <button type="button" className="button button--secondary" data-testid="preview-discard" onClick={onDiscard}>
            Close
          </button>
        </div>
      </section>
    );
  }
  const p = state.preview;
  const hiddenTokens = p.hidden.reduce((sum, m) => sum + m.tokens, 0);
  return (
    <section className="preview" data-testid="preview" aria-label={visible(title)}>
      <div className="preview__head">
        <h2 className="preview__title">
          <Visible text={title} />
        </h2>
        <p className="preview__figures" data-testid="preview-figures">
          <span className="preview__tokens">
            <Visible text={p.provider_id} />: {tokens(p.tokens_before)} → {tokens(p.tokens_after)} tokens (−
            {savedPercent(p.tokens_before, p.tokens_after)}%)
          </span>
          <span>estimated {dollars(p.estimated_cost)}</span>
          <span>cost {dollars(p.cost)}</span>
          {p.policy && <span data-testid="preview-policy">{costEstimate(p.policy)}</span>}
        </p>
        <div className="preview__actions">
          <button type="button" className="button" data-testid="preview-apply" onClick={onApply}>
            Apply
          </button>
          <button type="button" className="button button--secondary" data-testid="preview-discard" onClick={onDiscard}>
            Discard
          </button>
        </div>
      </div>
      <details className="preview__group" open={p.hidden.length <= 8}>
        <summary data-testid="preview-hidden-count">
          Hides {p.hidden.length} {p.hidden.length === 1 ? "message" : "messages"} ({tokens(hiddenTokens)} tokens)
        </summary>
        <ol className="preview__list" data-testid="preview-hidden">
          {p.hidden.map((m) => (
            <Item key={m.id} message={m} />
          ))}
        </ol>
      </details>
      <details className="preview__group" open>
        <summary>
          Adds {p.added.length} {p.added.length === 1 ? "message" : "messages"} in their place
        </summary>
        <div data-testid="preview-added">
          {p.added.map((m) => (
            <div key={m.id} className="preview__added">
              <h3 className="message__role">
                {m.is_summary ? "Summary and ledger" : `${ROLE_NAMES[m.role]} (edited copy)`} · {tokens(m.tokens)} tokens
              </h3>
              <Markdown text={m.text} />
            </div>
          ))}
        </div>
      </details>
      <p className="preview__note">
        Apply uses exactly this result, without calling the model again; it fails if the{" "}
        {state.source.kind === "chat" ? "chat" : "file"} changed meanwhile.
      </p>
    </section>
  );
}

function Item({ message }: { message: PreviewMessage }) {
  return (
    <li className="preview__item">
      <span className="preview__item-head">
        {message.is_summary ? "Summary" : ROLE_NAMES[message.role]} · {tokens(message.tokens)} tokens
      </span>
      <span className="preview__item-text">
        <Visible text={message.text} />
      </span>
    </li>
  );
}
