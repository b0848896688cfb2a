// The settings panel's inputs: switches, inline messages, and fields that commit on blur or Enter.

import { useEffect, useRef, useState, type CSSProperties, type InputHTMLAttributes, type KeyboardEvent } from "react";
import type { Checked } from "../check";

/** An inline message under a field. `field`: its id in the contract. */
export function FieldError({
  id,
  field,
  message,
  className,
}: {
  id?: string;
  field: string;
  message: string | undefined;
  className?: string;
}) {
  if (!message) return null;
  return (
    <p
      className={`field-error${className ? ` ${className}` : ""}`}
      id={id}
      data-testid="field-error"
      data-field={field}
      role="alert"
    >
      {message}
    </p>
  );
}

type SwitchProps = Omit<InputHTMLAttributes<HTMLInputElement>, "type" | "role" | "onChange" | "checked"> & {
  checked: boolean;
  onSwitch: (checked: boolean) => void;
  testId: string;
};

/** An on/off switch: a checkbox with the switch role, which commits at once. */
export function Switch({ checked, onSwitch, testId, className, ...rest }: SwitchProps) {
  return (
    <input
      {...rest}
      type="checkbox"
      role="switch"
      className={`switch${className ? ` ${className}` : ""}`}
      data-testid={testId}
      checked={checked}
      onChange={(e) => onSwitch(e.target.checked)}
    />
  );
}

export interface Commit<T> {
  /** The saved value, as the field shows it. */
  saved: string;
  /** Reads what was typed. */
  check: (text: string) => Checked<T>;
  /** A checked value that differs from the saved one. */
  onCommit: (value: T) => void;
  /** The check's message, or null once the value is fine. */
  onChecked: (error: string | null) => void;
}

/**
 * What a field that commits on blur or Enter shows: the saved value, or what is being typed. What
 * was typed stays after a commit until the saved value changes, so that a value the host refuses
 * is still there to correct.
 */
export function useCommit<T>({ saved, check, onCommit, onChecked }: Commit<T>) {
  const [draft, setDraft] = useState<{ text: string; dirty: boolean } | null>(null);
  const [shownSaved, setShownSaved] = useState(saved);
  if (shownSaved !== saved) {
    setShownSaved(saved);
    if (!draft?.dirty) setDraft(null);
  }
  const text = draft?.text ?? saved;

  /** Checks and posts what was typed: `typed` when given (the DOM's value), else the draft.
   *  `unreadable`: the browser could not read the number typed. */
  const commit = (typed?: string, unreadable = false) => {
    const value = typed ?? (draft?.dirty ? draft.text : undefined);
    if (value === undefined) return;
    // A number input the browser cannot read has the value "": checked as what it is, not a number.
    const checked = check(unreadable ? "?" : value);
    if (!checked.ok) {
      setDraft({ text: value, dirty: true });
      onChecked(checked.message);
      return;
    }
    setDraft({ text: value, dirty: false });
    onChecked(null);
    const before = check(saved);
    if (before.ok && JSON.stringify(before.value) === JSON.stringify(checked.value)) return;
    onCommit(checked.value);
  };
  const revert = () => {
    setDraft(null);
    onChecked(null);
  };
  return { text, dirty: draft?.dirty ?? false, change: (t: string) => setDraft({ text: t, dirty: true }), commit, revert };
}

/** Enter commits, Escape puts the saved value back. */
function keys(commit: () => void, revert: () => void, multiline = false) {
  return (e: KeyboardEvent<HTMLInputElement | HTMLTextAreaElement>) => {
    if (e.nativeEvent.isComposing) return;
    if (e.key === "Enter" && (!multiline || e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      commit();
    } else if (e.key === "Escape") {
      revert();
    }
  };
}

type NumberProps<T> = Commit<T> &
  Omit<InputHTMLAttributes<HTMLInputElement>, "type" | "value" | "onChange" | "onBlur" | "onKeyDown"> & {
    testId: string;
    invalid: boolean;
  };

/** A number input that commits on blur or Enter. */
export function NumberInput<T>({ saved, check, onCommit, onChecked, testId, invalid, className, ...rest }: NumberProps<T>) {
  const field = useCommit({ saved, check, onCommit, onChecked });
  const unreadable = (el: HTMLInputElement) => Boolean(el.validity?.badInput);
  return (
    <input
      {...rest}
      type="number"
      className={`input input--number${className ? ` ${className}` : ""}`}
      data-testid={testId}
      aria-invalid={invalid || undefined}
      value={field.text}
      onChange={(e) => field.change(e.target.value)}
      onBlur={(e) => field.dirty && field.commit(e.currentTarget.value, unreadable(e.currentTarget))}
      onKeyDown={(e) => {
        const el = e.currentTarget;
        keys(() => field.commit(el.value, unreadable(el)), field.revert)(e);
      }}
    />
  );
}

type TextProps<T> = Commit<T> & {
  id: string;
  testId: string;
  invalid: boolean;
  multiline: boolean;
  placeholder?: string | undefined;
  describedBy?: string | undefined;
};

/** A text input, or a text area for several lines (Ctrl+Enter commits there), committing on blur. */
export function TextInput<T>({ saved, check, onCommit, onChecked, id, testId, invalid, multiline, placeholder, describedBy }: TextProps<T>) {
  const field = useCommit({ saved, check, onCommit, onChecked });
  const common = {
    id,
    "data-testid": testId,
    "aria-invalid": invalid || undefined,
    "aria-describedby": describedBy,
    placeholder,
    value: field.text,
    spellCheck: false,
    onBlur: () => field.commit(),
    onKeyDown: keys(() => field.commit(), field.revert, multiline),
  };
  return multiline ? (
    <textarea {...common} className="input textarea" rows={8} onChange={(e) => field.change(e.target.value)} />
  ) : (
    <input {...common} type="text" className="input" onChange={(e) => field.change(e.target.value)} />
  );
}

/**
 * A range slider with a number input beside it, kept in sync. The slider commits when released (or
 * at each key press), the number input on blur or Enter.
 */
export function SliderInput({
  saved,
  min,
  max,
  unit,
  label,
  inputId,
  describedBy,
  invalid,
  sliderTestId,
  inputTestId,
  check,
  onCommit,
  onChecked,
}: Omit<Commit<number>, "saved"> & {
  saved: number;
  min: number;
  max: number;
  unit: string;
  label: string;
  inputId: string;
  describedBy: string;
  invalid: boolean;
  sliderTestId: string;
  inputTestId: string;
}) {
  const field = useCommit({ saved: String(saved), check, onCommit, onChecked });
  const slider = useRef<HTMLInputElement>(null);
  const commitRef = useRef(field.commit);
  commitRef.current = field.commit;
  // React's onChange on a range input fires while it is dragged; the DOM's `change` fires on release.
  useEffect(() => {
    const el = slider.current;
    if (!el) return;
    const onChange = () => commitRef.current(el.value);
    el.addEventListener("change", onChange);
    return () => el.removeEventListener("change", onChange);
  }, []);
  const typed = Number(field.text);
  const position = field.text.trim() !== "" && Number.isFinite(typed) ? Math.min(max, Math.max(min, typed)) : Number(saved);
  return (
    <div className="slider">
      <input
        ref={slider}
        type="range"
        className="slider__range"
        data-testid={sliderTestId}
        aria-label={label}
        aria-describedby={describedBy}
        aria-valuetext={`${position}${unit}`}
        min={min}
        max={max}
        step={1}
        value={position}
        style={{ "--fill": `${((position - min) / (max - min)) * 100}%` } as CSSProperties}
        onChange={(e) => field.change(e.target.value)}
      />
      <span className="with-unit">
        <input
          id={inputId}
          type="number"
          className="input input--number"
          data-testid={inputTestId}
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          min={min}
          max={max}
          step={1}
          value={field.text}
          onChange={(e) => field.change(e.target.value)}
          onBlur={(e) => field.dirty && field.commit(e.currentTarget.value, Boolean(e.currentTarget.validity?.badInput))}
          onKeyDown={(e) => {
            const el = e.currentTarget;
            keys(() => field.commit(el.value, Boolean(el.validity?.badInput)), field.revert)(e);
          }}
        />
        <span className="unit">{unit}</span>
      </span>
    </div>
  );
}
