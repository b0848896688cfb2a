// Automatic condensation: on or off, the global threshold, the least a condensation must save.

import { useId } from "react";
import type { AutoSettings, Limits } from "../../protocol";
import { checkRequiredInteger, MIN_GAIN_RULE, thresholdRule } from "../check";
import { fieldId } from "../state";
import type { Actions } from "./actions";
import { FieldError, NumberInput, SliderInput, Switch } from "./controls";

interface Props {
  auto: AutoSettings;
  /** The core's ranges. */
  limits: Limits;
  errors: Readonly<Record<string, string>>;
  act: Actions;
}

export function AutoSection({ auto, limits, errors, act }: Props) {
  const id = useId();
  const threshold = thresholdRule(limits);
  const described = (name: string, error: string | undefined) => (error ? `${id}-${name}-desc ${id}-${name}-err` : `${id}-${name}-desc`);
  const enabledError = errors[fieldId.autoEnabled];
  const thresholdError = errors[fieldId.autoThreshold];
  const gainError = errors[fieldId.autoMinGain];
  return (
    <section className="settings-section" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Automatic condensation</h2>
      <div className="setting">
        <div className="setting__switch-row">
          <Switch
            id={`${id}-enabled`}
            testId="auto-enabled"
            aria-describedby={described("enabled", enabledError)}
            aria-invalid={Boolean(enabledError) || undefined}
            checked={auto.enabled}
            onSwitch={(enabled) => act.post({ type: "setAuto", enabled })}
          />
          <label className="setting__label" htmlFor={`${id}-enabled`}>
            Condense automatically
          </label>
        </div>
        <p className="setting__description" id={`${id}-enabled-desc`}>
          When a chat's context reaches the threshold, the default provider condenses it before the next request.
        </p>
        <FieldError id={`${id}-enabled-err`} field={fieldId.autoEnabled} message={enabledError} />
      </div>

      <div className="setting">
        <div className="setting__title">
          <label className="setting__label" htmlFor={`${id}-threshold`}>
            Threshold
          </label>
        </div>
        <p className="setting__description" id={`${id}-threshold-desc`}>
          Percent of the model's context window at which a chat is condensed. A profile can set its own.
        </p>
        <div className="setting__control">
          <SliderInput
            saved={auto.thresholdPercent}
            min={threshold.min}
            max={threshold.max}
            unit="%"
            label="Threshold"
            inputId={`${id}-threshold`}
            describedBy={described("threshold", thresholdError)}
            invalid={Boolean(thresholdError)}
            sliderTestId="threshold-slider"
            inputTestId="threshold-input"
            check={(t) => checkRequiredInteger(t, threshold)}
            onCommit={(thresholdPercent) => act.post({ type: "setAuto", thresholdPercent })}
            onChecked={(error) => act.checked(fieldId.autoThreshold, error)}
          />
        </div>
        <FieldError id={`${id}-threshold-err`} field={fieldId.autoThreshold} message={thresholdError} />
      </div>

      <div className="setting">
        <div className="setting__title">
          <label className="setting__label" htmlFor={`${id}-gain`}>
            Minimum gain
          </label>
        </div>
        <p className="setting__description" id={`${id}-gain-desc`}>
          An automatic condensation that saves less than this percent of the context window is not applied (a guard
          against condensing in a loop).
        </p>
        <div className="setting__control">
          <span className="with-unit">
            <NumberInput
              id={`${id}-gain`}
              testId="min-gain-input"
              aria-describedby={described("gain", gainError)}
              invalid={Boolean(gainError)}
              min={MIN_GAIN_RULE.min ?? 0}
              max={MIN_GAIN_RULE.max ?? 100}
              step={1}
              saved={String(auto.minGainPercent)}
              check={(t) => checkRequiredInteger(t, MIN_GAIN_RULE)}
              onCommit={(minGainPercent) => act.post({ type: "setAuto", minGainPercent })}
              onChecked={(error) => act.checked(fieldId.autoMinGain, error)}
            />
            <span className="unit">%</span>
          </span>
        </div>
        <FieldError id={`${id}-gain-err`} field={fieldId.autoMinGain} message={gainError} />
      </div>
    </section>
  );
}
