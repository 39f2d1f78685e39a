/**
 * Flat records (one object per row, plain values) from run files — what tables in notebooks and
 * reports show. They are plain data so the core never depends on a dataframe library; frame.ts
 * turns them into danfojs DataFrames at the notebook's edge.
 */
import { scoreValues, type ExampleResult } from '../run-files';
import { metricOf, perQuestionUsage, pipelineOf } from '../plots/runs';
import type { RunData } from '../plots/types';
import { tokensOf } from '../llm/usage';
import type { Trace } from '../trace/types';
import { tocDecisionsOf } from '../pipelines/toc/decisions';
import { callUsage, summaryUsage } from '../trace/usage';

export type Row = Record<string, string | number | boolean | null>;

const round = (x: number, digits = 2) => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : null);

/** One row per example (under `trials: k`, per example and trial): id, trial, question, output, each metric, usage, error. */
export function resultRows(results: readonly ExampleResult[], options: { maxTextChars?: number } = {}): Row[] {
  const max = options.maxTextChars ?? 160;
  const clip = (s: string) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);
  const metricNames = [...new Set(results.flatMap((r) => Object.keys(scoreValues(r))))];
  // A run with trials has k rows per id: the column tells them apart (absent without trials).
  const trials = results.some((r) => r.trial !== undefined);
  return results.map((r) => {
    const row: Row = { id: r.id, ...(trials ? { trial: r.trial ?? 0 } : {}), question: clip(r.question), output: clip(r.output) };
    for (const m of metricNames) row[m] = typeof scoreValues(r)[m] === 'number' ? round(scoreValues(r)[m]!) : null;
    row.llm_calls = r.usage?.llmCalls ?? null;
    row.tokens = r.usage ? (tokensOf(summaryUsage(r.usage)) ?? null) : null;
    row.seconds = r.usage ? round(r.usage.seconds) : null;
    row.error = r.error ?? null;
    return row;
  });
}

/** One row per run: name, pipeline, each metric's mean and CI, usage per question. */
export function runRows(runs: readonly RunData[], metrics?: readonly string[]): Row[] {
  const names = metrics ?? [...new Set(runs.flatMap((r) => [...Object.keys(r.metrics?.metrics ?? {}), ...r.results.flatMap((x) => Object.keys(scoreValues(x)))]))];
  return runs.map((run) => {
    const row: Row = { run: run.name, pipeline: pipelineOf(run), n: run.results.length };
    for (const name of names) {
      const m = metricOf(run, name);
      row[name] = m ? round(m.mean, 1) : null;
      row[`${name}_ci`] = m && m.ciLow !== m.ciHigh ? `[${m.ciLow.toFixed(1)}, ${m.ciHigh.toFixed(1)}]` : null;
    }
    const u = perQuestionUsage(run);
    row.llm_calls_per_q = round(u.llmCalls, 1);
    row.tokens_per_q = u.tokens === undefined ? null : round(u.tokens, 0);
    row.seconds_per_q = round(u.seconds, 2);
    return row;
  });
}

/** One row per LLM call of a trace: purpose, temperature, samples, tokens, cache hits, seconds. */
export function llmCallRows(trace: Trace): Row[] {
  return trace.llmCalls.map((c) => ({
    index: c.index,
    purpose: c.purpose,
    temperature: c.params.temperature,
    samples: c.completions.length,
    prompt_tokens: callUsage(c).promptTokens ?? null,
    completion_tokens: callUsage(c).completionTokens ?? null,
    cache_hits: c.completions.filter((x) => x.cacheHit).length,
    seconds: round(c.wallSeconds, 3),
  }));
}

/** One row per ToC node: the clarification, its answer and what pruning did to it. */
export function tocNodeRows(trace: Trace): Row[] {
  const d = tocDecisionsOf(trace);
  if (!d) return [];
  const valid = new Set(d.validNodeIds);
  return d.nodes.map((n) => ({
    id: n.id,
    parent: n.parentId,
    depth: n.depth,
    question: n.question,
    answer: n.answer,
    verdict: n.verdict,
    pruned: n.pruned,
    restored: n.unpruned,
    // Admitted unverified after the released search switched pruning off (issue 34).
    pruning_off: n.admittedWithPruningOff === true,
    duplicate_of: n.duplicateOf ?? null,
    used: valid.has(n.id),
  }));
}
