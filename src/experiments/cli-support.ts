import { relative } from 'node:path';
import { AmbiqaError } from '../errors';
import { ExitStatus, type ExitStatusCode } from './exit-status';
import { formatCount, formatDuration } from './progress';
import { formatUsd } from '../llm/pricing';
import type { RunOutcome } from './runner';
import type { Override } from './overrides';
import type { ExampleResult, RunMetrics, RunState } from '../run-files';

/**
 * What `ambiqa run`, `sweep` and `merge` share: Ctrl-C handling and the closing summary.
 *
 * The first Ctrl-C (or SIGTERM, which is what Kubernetes and `timeout` send) asks the run to stop
 * cleanly: in-flight questions are abandoned, finished ones are kept, metrics are written and the
 * MLflow run is marked KILLED. A second one exits at once; `--resume` still finishes the run.
 */
export function interruptSignal(stream: NodeJS.WriteStream = process.stderr): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  let count = 0;
  const onSignal = (name: NodeJS.Signals) => {
    count += 1;
    if (count === 1) {
      stream.write(`\n${name}: stopping after writing what is done (press Ctrl-C again to quit at once; finish later with --resume)\n`);
      controller.abort(new AmbiqaError(`interrupted by ${name}`));
    } else {
      stream.write(`\n${name}: quitting now\n`);
      process.exit(130);
    }
  };
  // SIGHUP too: a closed terminal or an ssh session that dropped stops the run as Ctrl-C does
  // (resumable, exit status 130) instead of killing it mid-write.
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.off('SIGHUP', onSignal);
    },
  };
}

/** `--max-cost 2.50` (US dollars): a positive number. */
export function parseUsd(text: string, option: string): number {
  const x = Number(text.trim().replace(/^\$/, ''));
  if (!/^\$?\d*\.?\d+$/.test(text.trim()) || !Number.isFinite(x) || x <= 0) {
    throw new AmbiqaError(`${option} ${text}: must be a positive amount of US dollars, e.g. ${option} 2.50`);
  }
  return x;
}

/** Exit status of a run the cost cap stopped: not a failure (130 is Ctrl-C's), not success either. */
export const COST_CAP_EXIT = ExitStatus.costCap;

/** What a run's exit status is computed from: its outcome, or a finished run's files. */
export interface RunEnd {
  status: RunOutcome['status'] | RunState['status'];
  metrics: Pick<RunMetrics, 'n' | 'answered' | 'errors' | 'total'> | null;
  stoppedBy?: string | undefined;
}

/**
 * A run's exit status (docs/cli.md): the cost cap 3 and an interrupt 130 (both resumable); then
 * by what was answered of the selection: all 0, none 5, some 4. A session that gave up after a
 * run of errors (FAILED) is judged by the same counts, so a resumed run whose earlier sessions
 * answered most questions says "some failed", not "none".
 */
export function runExitStatus(end: RunEnd): ExitStatusCode {
  if (end.stoppedBy) return ExitStatus.costCap;
  if (end.status === 'KILLED' || end.status === 'RUNNING') return ExitStatus.interrupted;
  const m = end.metrics;
  if (!m) return ExitStatus.error;
  const total = m.total ?? m.n;
  const answered = m.answered ?? m.n - (m.errors ?? 0);
  if (answered >= total) return ExitStatus.ok;
  return answered === 0 ? ExitStatus.noneAnswered : ExitStatus.someFailed;
}

/** What a non-zero exit status means, in a few words (the last line a failed command prints). */
export function describeExitStatus(code: number): string {
  switch (code) {
    case ExitStatus.ok:
      return 'done';
    case ExitStatus.costCap:
      return 'stopped by the cost cap (resumable)';
    case ExitStatus.someFailed:
      return 'some questions failed';
    case ExitStatus.noneAnswered:
      return 'no question was answered';
    case ExitStatus.interrupted:
      return 'interrupted (resumable)';
    case ExitStatus.usage:
      return 'the command line did not parse';
    default:
      return 'an error';
  }
}

export function parsePositiveInt(text: string, option: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new AmbiqaError(`${option} ${text}: must be a positive whole number`);
  }
  return n;
}

/** The lines printed when a run ends. */
export function describeOutcome(outcome: RunOutcome, configFile?: string): string {
  const m = outcome.metrics;
  const failed = m.errors ?? 0;
  const answered = m.answered ?? m.n - failed;
  const total = m.total ?? m.n;
  const notReached = total - answered - failed;
  // Under `trials: k` a row is one answer of a question: the counts are of (question, trial) pairs.
  const trials = outcome.trials !== undefined && outcome.trials > 1 ? outcome.trials : undefined;
  const of = trials ? `${total} answers (${Math.round(total / trials)} questions × ${trials} trials)` : `${total} questions`;
  const unit = trials ? 'answers' : 'questions';
  const lines = [
    `run ${outcome.runDir.split('/').pop()} ${outcome.status}: ${answered} answered, ${failed} failed` +
      `${notReached > 0 ? `, ${notReached} not reached` : ''} of ${of}, ${formatDuration(m.usage.wall_seconds)}`,
  ];
  if (answered === 0) lines.push('  no metrics: no question was answered');
  else if (failed > 0) lines.push(`  metrics over the ${answered} answered ${unit} (the ${failed} failed ones are left out):`);
  const width = Math.max(8, ...Object.keys(m.metrics).map((k) => k.length));
  for (const [name, a] of Object.entries(m.metrics)) {
    // Under trials, the spread of a question's answers across its trials (when the aggregate gives it).
    const spread = a.trialSd !== undefined ? `  trial sd ${a.trialSd.toFixed(1)}` : '';
    lines.push(`  ${name.padEnd(width)}  ${a.mean.toFixed(1).padStart(5)}  95% CI [${a.ciLow.toFixed(1)}, ${a.ciHigh.toFixed(1)}]${spread}`);
  }
  lines.push(...groupLines(m));
  lines.push(...judgeLines(m));
  lines.push(...treeQualityLines(m));
  lines.push(
    `  LLM: ${m.usage.llm_calls} calls, ${m.usage.cache_hits} cache hits, ${tokenCount(m.usage.prompt_tokens)} prompt + ${tokenCount(m.usage.completion_tokens)} completion tokens`,
  );
  if (m.usage.retrieval_cache_hits !== undefined) {
    lines.push(`  retrieval: ${m.usage.retrieval_cache_misses ?? 0} server queries, ${m.usage.retrieval_cache_hits} retrieval cache hits`);
  }
  if (m.usage.cost_usd !== undefined) {
    // A run with a judge: section pays each model at its own price: both sources are said.
    const llmSource = m.settings?.['llm.pricing'];
    const judgeSource = m.settings?.['judge.pricing'];
    const sources = [
      ...(llmSource ? [llmSource] : []),
      ...(judgeSource ? [judgeSource.startsWith('judge.') ? judgeSource : `judge: ${judgeSource}`] : []),
    ];
    lines.push(`  cost: ${formatUsd(m.usage.cost_usd)}${sources.length > 0 ? ` (${sources.join('; ')})` : ''}`);
  }
  const rel = relative(process.cwd(), outcome.runDir);
  lines.push(`  results: ${rel.startsWith('..') ? outcome.runDir : rel || '.'}/`);
  if (outcome.mlflow?.runUrl) lines.push(`  MLflow:  ${outcome.mlflow.runUrl}`);
  if (outcome.error) lines.push(`  error:   ${outcome.error}`);
  if (outcome.stoppedBy) lines.push(`  stopped: ${outcome.stoppedBy}`);
  // A run with failed questions still finishes; say why they failed, or the user has to dig
  // through results.jsonl to learn that, e.g., the endpoint was unreachable.
  lines.push(...failureLines(outcome.results));
  if (outcome.status !== 'FINISHED' && configFile) {
    lines.push(
      `  finish it: run the same command (config ${configFile}, same --name/--set/--trials/--shard) with --resume${outcome.stoppedBy ? ' and a higher --max-cost' : ''}`,
    );
  }
  return lines.join('\n');
}

/**
 * The metrics by group (`groupBy`): per field, one line per group with its questions and each
 * metric's mean and 95% CI over that group's questions.
 */
export function groupLines(m: Pick<RunMetrics, 'groups'>): string[] {
  const lines: string[] = [];
  for (const [field, byValue] of Object.entries(m.groups ?? {})) {
    lines.push(`  by ${field}:`);
    const width = Math.max(...Object.keys(byValue).map((v) => v.length));
    for (const [value, metrics] of Object.entries(byValue)) {
      const entries = Object.entries(metrics);
      const n = entries.length > 0 ? Math.max(...entries.map(([, a]) => a.n)) : 0;
      const cells = entries.map(([name, a]) => `${name} ${a.mean.toFixed(1)} [${a.ciLow.toFixed(1)}, ${a.ciHigh.toFixed(1)}]`);
      lines.push(`    ${value.padEnd(width)}  n ${String(n).padStart(4)}  ${cells.join(' · ') || 'no metric'}`);
    }
  }
  return lines;
}

/**
 * The failed questions grouped by cause, most frequent first: one line per cause with its count
 * and its first message. Messages that differ only in numbers (a question id, an attempt count,
 * a port) are one cause. At most `max` causes; the rest are counted.
 */
export function failureLines(results: readonly ExampleResult[], max = 5): string[] {
  const groups = new Map<string, { first: string; count: number; variants: Set<string> }>();
  for (const r of results) {
    if (r.error === undefined) continue;
    const key = (r.error.split('\n')[0] ?? '').replace(/\d+/g, '#');
    const g = groups.get(key) ?? { first: r.error, count: 0, variants: new Set<string>() };
    g.count += 1;
    g.variants.add(r.error);
    groups.set(key, g);
  }
  const sorted = [...groups.values()].sort((a, b) => b.count - a.count);
  const lines = sorted.slice(0, max).map((g) => {
    const like = g.variants.size > 1 ? ` (${g.variants.size - 1} other message${g.variants.size > 2 ? 's' : ''} like it, with other numbers)` : '';
    return `  failed (${g.count}): ${g.first.split('\n').join('\n    ')}${like}`;
  });
  if (sorted.length > max) {
    const rest = sorted.slice(max).reduce((n, g) => n + g.count, 0);
    lines.push(`  … ${rest} more failed question${rest === 1 ? '' : 's'} with ${sorted.length - max} other cause${sorted.length - max === 1 ? '' : 's'} (error in results.jsonl)`);
  }
  return lines;
}

/**
 * One line per graded judge: its verdict (does P separate right from wrong; can a threshold sweep
 * show anything) and how many judgments the gold data could label.
 */
export function judgeLines(m: RunMetrics): string[] {
  return Object.values(m.judges ?? {}).map((d) => {
    const brier = d.brier === null ? '' : `, Brier ${d.brier.toFixed(3)}`;
    return `  judge ${d.verdict} (${d.labelled} of ${d.judgments} judgments labelled${brier})`;
  });
}

/**
 * ToC's tree quality (issue 41), when the run's decision statistics carry it: what the valid
 * nodes hold (distinct well-formed pairs, garbled and duplicate ones, pairs the reader refused)
 * and how the calls were served (live, or replayed within a question from the cache).
 */
export function treeQualityLines(m: RunMetrics): string[] {
  const d = m.decisions;
  const distinct = d?.decision_distinct_wellformed_pairs_per_tree;
  if (d === undefined || distinct === undefined) return [];
  const f = (k: string) => (d[k] ?? 0).toFixed(1);
  return [
    `  trees: ${f('decision_valid_nodes_per_tree')} valid nodes a tree, ${distinct.toFixed(1)} distinct well-formed pairs; ` +
      `garbled valid ${d.decision_garbled_valid_total ?? 0} in all; duplicate valid ${f('decision_duplicate_valid_per_tree')} a tree; ` +
      `refused by the reader ${f('decision_rejected_pairs_per_tree')} a tree`,
    `  calls a tree: ${f('decision_llm_calls_per_tree')} (${f('decision_live_calls_per_tree')} live, ${f('decision_replayed_calls_per_tree')} replayed within the question)`,
  ];
}

/** A token count for a summary line; `?` when the endpoint did not report it. */
function tokenCount(n: number | undefined): string {
  return n === undefined ? '?' : formatCount(n);
}

/** `--group-by a,b`: the field names, in order, each once; one line naming the option when empty. */
export function parseGroupBy(text: string): string[] {
  const fields = [...new Set(text.split(',').map((f) => f.trim()).filter(Boolean))];
  if (fields.length === 0) throw new AmbiqaError(`--group-by: '${text}' names no field`, 'give field names separated by commas, e.g. --group-by kind');
  return fields;
}

/** `--group-by a,b` on run and sweep: the config's `groupBy` (as `--set groupBy=[a,b]` would set it). */
export function groupByOverride(text: string): Override {
  return { path: ['groupBy'], value: parseGroupBy(text), text: `--group-by ${text}` };
}
