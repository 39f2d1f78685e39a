/**
 * Live progress in a notebook cell: one output that is overwritten in place (tslab's
 * `newDisplay()`), at most a few times a second, with the same fields as the CLI's progress line.
 * Outside a kernel (scripts, tests) it falls back to the CLI's line on stderr.
 */
import { ProgressBar, type ProgressSink, type ProgressState } from '../experiments/progress';
import { escapeHtml } from '../plots/export';
import { requireTslab } from './tslab';

/** Where progress HTML goes: one display entry that each call replaces. */
export interface ReplaceableDisplay {
  html(html: string): void;
}

/** True inside a tslab kernel (tslab sets `globalThis.__tslab__` before running cells). */
export function inKernel(): boolean {
  return (globalThis as { __tslab__?: unknown }).__tslab__ !== undefined;
}

function tslabDisplay(): ReplaceableDisplay {
  const tslab = requireTslab('tslab') as { newDisplay(): ReplaceableDisplay };
  return tslab.newDisplay();
}

export class NotebookProgress implements ProgressSink {
  private readonly line: ProgressBar;
  private lastDraw = -Infinity;

  constructor(
    private readonly label: string,
    private readonly display: ReplaceableDisplay = tslabDisplay(),
    private readonly now: () => number = () => performance.now(),
    /** Milliseconds between redraws. */
    private readonly intervalMs = 500,
  ) {
    // The text is the CLI's; only where it goes differs.
    this.line = new ProgressBar({ label, stream: { write: () => true } as unknown as NodeJS.WriteStream, tty: false, now });
  }

  update(state: ProgressState): void {
    const t = this.now();
    if (t - this.lastDraw < this.intervalMs && state.done < state.total) return;
    this.lastDraw = t;
    this.draw(state, t);
  }

  finish(state: ProgressState, note?: string): void {
    this.draw(state, this.now(), note);
  }

  private draw(state: ProgressState, t: number, note?: string): void {
    const pct = state.total > 0 ? Math.round((100 * state.done) / state.total) : 100;
    const text = this.line.render(state, t, false) + (note ? ` — ${note}` : '');
    this.display.html(
      `<div class="ambiqa-progress" style="font-family:monospace;font-size:12px">` +
        `<progress value="${state.done}" max="${Math.max(1, state.total)}" style="width:240px"></progress> ${pct}%` +
        `<div>${escapeHtml(text)}</div></div>`,
    );
  }
}

/** The progress a run shows by default: in place in a notebook, the CLI's line on a terminal, else none. */
export function defaultProgress(label: string): ProgressSink | undefined {
  if (inKernel()) return new NotebookProgress(label);
  if (process.stderr.isTTY) return new ProgressBar({ label });
  return undefined;
}
