/** Small pieces every view uses: copy buttons, a confirmation dialog, times, money and notices. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState<'idle' | 'copied' | 'failed'>('idle');
  // The button's name stays what it shows; the outcome is announced beside it.
  return (
    <span class="copy">
      <button
        type="button"
        class="secondary"
        aria-label={label}
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
            setDone('copied');
          } catch {
            setDone('failed');
          }
        }}
      >
        Copy
      </button>
      <span class="copy-state" role="status">
        {done === 'copied' ? 'Copied' : done === 'failed' ? 'Copy failed: select the text and copy it' : ''}
      </span>
    </span>
  );
}

/** A modal question; the browser's <dialog> keeps the focus inside and Escape cancels. */
export function Confirm(props: {
  title: string;
  children: ComponentChildren;
  confirm: string;
  onConfirm(): void;
  onCancel(): void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={props.onCancel} onClose={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      <div>{props.children}</div>
      <div class="actions">
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.confirm}
        </button>
      </div>
    </dialog>
  );
}

export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">never</span>;
  const d = new Date(at);
  return (
    <time dateTime={d.toISOString()} title={d.toISOString()}>
      {d.toISOString().replace('T', ' ').slice(0, 19)} UTC
    </time>
  );
}

export const usd = (n: number | null | undefined): string =>
  n === null || n === undefined
    ? '—'
    : n.toLocaleString('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 2 });

/** "in 3 h 20 min" from now to `at`. */
export function untilText(at: Date, now = new Date()): string {
  let s = Math.max(0, Math.round((at.getTime() - now.getTime()) / 1000));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  const m = Math.round((s - h * 3600) / 60);
  const parts = [d ? `${d} d` : '', h ? `${h} h` : '', d ? '' : `${m} min`].filter(Boolean);
  return `in ${parts.join(' ')}`;
}

export function Notice({ kind, children }: { kind: 'error' | 'info' | 'ok'; children: ComponentChildren }) {
  return (
    <p class={`notice ${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </p>
  );
}

export function Verdict({ v }: { v: string }) {
  return <span class={`verdict ${v}`}>{v}</span>;
}

export const shortHash = (h: string): string => (h.length > 14 ? `${h.slice(0, 8)}…${h.slice(-4)}` : h);
