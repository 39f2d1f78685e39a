import type { UsageTotals } from '../llm/types';
import { formatUsd } from '../llm/pricing';
import type { ProgressSink, ProgressState, RunObserver } from './observers';

/**
 * The live progress line of `ambiqa run` on stderr: examples done/total (under `trials: k`,
 * answers of questions × trials), ETA, LLM calls, tokens, cache hits and errors. On a terminal it redraws one line; elsewhere (CI logs, files) it prints
 * a plain line every 10% or every 15 seconds, whichever comes first.
 */
export type { ProgressSink, ProgressState } from './observers';

export interface ProgressOptions {
  label: string;
  stream?: NodeJS.WriteStream;
  /** Force terminal (redrawn) or plain output; default: `stream.isTTY`. */
  tty?: boolean;
  /** Plain mode: seconds between lines when no 10% step was crossed. */
  plainIntervalSeconds?: number;
  now?: () => number;
}

export class ProgressBar implements ProgressSink {
  private readonly stream: NodeJS.WriteStream;
  private readonly tty: boolean;
  private readonly startedAt: number;
  private lastDraw = 0;
  private lastPlain = 0;
  private lastPlainDecile = -1;
  private readonly now: () => number;

  constructor(private readonly options: ProgressOptions) {
    this.stream = options.stream ?? process.stderr;
    this.tty = options.tty ?? Boolean(this.stream.isTTY);
    this.now = options.now ?? (() => performance.now());
    this.startedAt = this.now();
    this.lastPlain = this.startedAt;
  }

  update(state: ProgressState): void {
    const t = this.now();
    if (this.tty) {
      // Redrawing more than ~8 times a second costs more than it tells.
      if (t - this.lastDraw < 120 && state.done < state.total) return;
      this.lastDraw = t;
      const width = Math.max(20, (this.stream.columns ?? 100) - 1);
      this.stream.write(`\r${fit(this.render(state, t, true), width)}\x1b[K`);
      return;
    }
    if (state.done >= state.total) return; // finish() prints the last line
    const decile = state.total > 0 ? Math.floor((10 * state.done) / state.total) : 10;
    const interval = (this.options.plainIntervalSeconds ?? 15) * 1000;
    if (decile > this.lastPlainDecile || t - this.lastPlain >= interval) {
      this.lastPlainDecile = decile;
      this.lastPlain = t;
      this.stream.write(this.render(state, t, false) + '\n');
    }
  }

  finish(state: ProgressState, note?: string): void {
    const t = this.now();
    const line = this.render(state, t, false) + (note ? ` — ${note}` : '');
    if (this.tty) this.stream.write(`\r${line}\x1b[K\n`);
    else this.stream.write(line + '\n');
  }

  render(state: ProgressState, t: number, bar: boolean): string {
    const elapsed = (t - this.startedAt) / 1000;
    const pct = state.total > 0 ? Math.floor((100 * state.done) / state.total) : 100;
    const parts = [this.options.label];
    if (bar) {
      const cells = 20;
      const filled = state.total > 0 ? Math.round((cells * state.done) / state.total) : cells;
      parts.push(`[${'#'.repeat(filled)}${'-'.repeat(cells - filled)}]`);
    }
    const trials = state.trials !== undefined && state.trials > 1 ? ` answers (${state.total / state.trials} questions × ${state.trials} trials)` : '';
    parts.push(`${state.done}/${state.total}${trials} (${pct}%)`);
    parts.push(`elapsed ${formatDuration(elapsed)}`);
    const doneHere = state.done - state.resumed;
    if (state.done < state.total) {
      parts.push(doneHere > 0 ? `ETA ${formatDuration((elapsed / doneHere) * (state.total - state.done))}` : 'ETA ?');
    }
    parts.push(`llm ${state.usage.calls} calls`);
    // `?`: some call's tokens were not reported (the endpoint sent no usage).
    const count = (n: number | undefined) => (n === undefined ? '?' : formatCount(n));
    parts.push(`tokens ${count(state.usage.promptTokens)}+${count(state.usage.completionTokens)}`);
    parts.push(`cache hits ${state.usage.cacheHits}`);
    if (state.usage.costUsd !== undefined) parts.push(`cost ${formatUsd(state.usage.costUsd)}${state.costFree ? ' (embedded)' : ''}`);
    parts.push(`errors ${state.errors}`);
    return parts.join(' | ');
  }
}

/**
 * The progress line as an observer: made when the session starts (a bar's clock starts with
 * it), redrawn after each question and every second (the session's usage grows during a question
 * too), closed with the session's end and why it stopped early.
 */
export function progressObserver(make: () => ProgressSink): RunObserver {
  let sink: ProgressSink | undefined;
  let state: ProgressState | undefined;
  let ticker: NodeJS.Timeout | undefined;
  return {
    name: 'progress',
    onStart(run) {
      const shown: ProgressState = {
        done: run.resumedCount,
        total: run.selection.length * run.trials,
        ...(run.trials > 1 ? { trials: run.trials } : {}),
        resumed: run.resumedCount,
        errors: 0,
        usage: run.usage(),
        ...(run.costFree ? { costFree: true } : {}),
      };
      const bar = make();
      [sink, state] = [bar, shown];
      ticker = setInterval(() => {
        shown.usage = run.usage();
        bar.update(shown);
      }, 1000);
      ticker.unref();
      bar.update(shown);
    },
    onQuestion(row, _trace, usage) {
      if (!sink || !state) return;
      if (row.error !== undefined) state.errors += 1;
      else state.done += 1;
      state.usage = usage;
      sink.update(state);
    },
    onEnd(end) {
      clearInterval(ticker);
      if (!sink || !state || end.status === 'CRASHED') return;
      const answered = end.results.filter((r) => r.error === undefined).length;
      const note = end.status === 'FINISHED' ? undefined : end.status === 'KILLED' ? (end.stoppedBy ?? 'stopped') : end.error;
      sink.finish({ ...state, usage: end.usage, done: answered }, note);
    },
  };
}

/** A sink that prints nothing (library use, tests). */
export const silentProgress: ProgressSink = { update() {}, finish() {} };

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

export function formatCount(n: number): string {
  if (n < 10_000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}

function fit(line: string, width: number): string {
  return line.length <= width ? line : line.slice(0, width - 1) + '…';
}
