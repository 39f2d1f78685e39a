/**
 * Small readers over a run's files that several figures share: a metric with its confidence
 * interval, per-question usage, and a config option found wherever the config nests it.
 */
import { AmbiqaError } from '../errors';
import { scoreValues, type MetricAggregate } from '../run-files';
import { emptyUsage } from '../llm/types';
import { addUsage, tokensOf } from '../llm/usage';
import { summaryUsage } from '../trace/usage';
import type { RunData } from './types';

const canon = (name: string) => name.toLowerCase().replace(/[-\s]/g, '_');

/** Quality metrics tried in this order when none is named: DR first, as the ToC/Diva papers. */
export const QUALITY_METRICS = ['dr', 'str_em', 'd_f1', 'rougeLsum', 'accuracy', 'em', 'f1'] as const;

function metricNames(run: RunData): string[] {
  const names = new Set(Object.keys(run.metrics?.metrics ?? {}));
  for (const r of run.results) for (const key of Object.keys(scoreValues(r))) names.add(key);
  return [...names];
}

/** The first of `wanted` that every run has, spelled as the runs spell it. */
export function commonMetric(runs: readonly RunData[], wanted: readonly string[] = QUALITY_METRICS): string {
  for (const name of wanted) {
    if (runs.every((run) => metricNames(run).some((m) => canon(m) === canon(name)))) return name;
  }
  const seen = [...new Set(runs.flatMap(metricNames))];
  throw new AmbiqaError(
    `no quality metric shared by all runs: looked for ${wanted.join(', ')}; found ${seen.join(', ') || 'none'}`,
    'name the metric explicitly (e.g. { metric: "str_em" })',
  );
}

/**
 * A run's aggregate for `name`: from metrics.json (bootstrap CI) when present, otherwise the mean
 * of the per-example values (no CI: ciLow = ciHigh = mean).
 */
export function metricOf(run: RunData, name: string): MetricAggregate | undefined {
  const fromFile = Object.entries(run.metrics?.metrics ?? {}).find(([key]) => canon(key) === canon(name));
  if (fromFile) return fromFile[1];
  const values: number[] = [];
  for (const r of run.results) {
    const hit = Object.entries(scoreValues(r)).find(([key]) => canon(key) === canon(name));
    if (!r.error && hit && typeof hit[1] === 'number') values.push(hit[1]);
  }
  if (values.length === 0) return undefined;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return { mean, ciLow: mean, ciHigh: mean, n: values.length };
}

export interface PerQuestionUsage {
  llmCalls: number;
  /** Means of the token counts; undefined when some question's were not reported (unknown). */
  promptTokens: number | undefined;
  completionTokens: number | undefined;
  tokens: number | undefined;
  /** Mean wall seconds of one question (its own trace time, not the run's, which overlaps). */
  seconds: number;
  questions: number;
}

/** Mean usage per question, from the per-example usage (falls back to metrics.json totals). */
export function perQuestionUsage(run: RunData): PerQuestionUsage {
  const rows = run.results.filter((r) => r.usage);
  const per = (total: number | undefined, n: number) => (total === undefined ? undefined : total / n);
  if (rows.length > 0) {
    const total = rows.map((r) => summaryUsage(r.usage)).reduce(addUsage, emptyUsage());
    return {
      llmCalls: total.calls / rows.length,
      promptTokens: per(total.promptTokens, rows.length),
      completionTokens: per(total.completionTokens, rows.length),
      tokens: per(tokensOf(total), rows.length),
      seconds: rows.reduce((a, r) => a + r.usage.seconds, 0) / rows.length,
      questions: rows.length,
    };
  }
  const m = run.metrics;
  if (!m || m.n === 0) return { llmCalls: 0, promptTokens: 0, completionTokens: 0, tokens: 0, seconds: 0, questions: 0 };
  return {
    llmCalls: m.usage.llm_calls / m.n,
    promptTokens: per(m.usage.prompt_tokens, m.n),
    completionTokens: per(m.usage.completion_tokens, m.n),
    tokens: per(tokensOf({ promptTokens: m.usage.prompt_tokens, completionTokens: m.usage.completion_tokens }), m.n),
    seconds: m.usage.wall_seconds / m.n,
    questions: m.n,
  };
}

/**
 * Find an option anywhere in a (nested) config by its key, e.g. `maxNodes` whether the config
 * says `toc.maxNodes` or `pipeline.options.maxNodes`. Where several paths hold it, those through
 * a key named in `prefer` win (earlier names first, e.g. `['toc', 'pipeline']`), then the
 * shallowest.
 */
export function findOption(config: unknown, key: string, prefer: readonly string[] = []): unknown {
  const hits: Array<{ path: string[]; value: unknown }> = [];
  const walk = (node: unknown, path: string[]) => {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return;
    for (const [k, v] of Object.entries(node)) {
      if (k === key) hits.push({ path: [...path, k], value: v });
      walk(v, [...path, k]);
    }
  };
  walk(config, []);
  if (hits.length === 0) return undefined;
  const rank = (path: string[]) => {
    const i = prefer.findIndex((name) => path.slice(0, -1).some((p) => p.toLowerCase().includes(name.toLowerCase())));
    return i === -1 ? prefer.length : i;
  };
  return hits.sort((a, b) => rank(a.path) - rank(b.path) || a.path.length - b.path.length)[0].value;
}

/** The pipeline a run used: from its traces, else `pipeline` / `pipeline.name` in its config. */
export function pipelineOf(run: RunData): string {
  if (run.traces.length > 0) return run.traces[0].pipeline;
  const p = run.config.pipeline;
  if (typeof p === 'string') return p;
  if (typeof p === 'object' && p !== null) {
    const obj = p as Record<string, unknown>;
    for (const key of ['name', 'kind', 'type']) if (typeof obj[key] === 'string') return obj[key] as string;
  }
  return 'unknown';
}
