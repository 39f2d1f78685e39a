/**
 * Small, hand-made run data built from the contract types (src/trace/types.ts,
 * src/run-files/index.ts), so plots and reports are tested without running a pipeline.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { scoresOf, scoreValues, type ExampleResult, type RunMetrics } from '../../src/run-files';
import type { RunData } from '../../src/plots/types';
import type { Decisions, PipelineName, Trace, TraceSummary } from '../../src/trace/types';
import type { TocNode } from '../../src/pipelines/toc/decisions';

export function summary(partial: Partial<TraceSummary> = {}): TraceSummary {
  return { llmCalls: 1, promptTokens: 100, completionTokens: 20, cacheHits: 0, seconds: 1, retrievals: 0, parseFailures: 0, ...partial };
}

export function trace(pipeline: PipelineName, questionId: string, decisions: Decisions, extra: Partial<Trace> = {}): Trace {
  return {
    pipeline,
    questionId,
    question: `question ${questionId}?`,
    llm: { provider: 'scripted', model: 'test' },
    demoIds: [],
    llmCalls: [],
    retrievals: [],
    parseFailures: [],
    decisions,
    summary: summary(),
    output: `output ${questionId}`,
    ...extra,
  };
}

export function result(id: string, metrics: Record<string, number>, extra: Partial<ExampleResult> = {}): ExampleResult {
  return { id, question: `question ${id}?`, output: `output ${id}`, format: 3, scores: scoresOf(metrics), usage: summary(), ...extra };
}

/**
 * A VE trace: `votes` of `n` samples for the majority answer; edited when votes < threshold
 * unless `edited` says otherwise; the final answer is the majority one unless edited to `final`.
 */
export function veTrace(
  id: string,
  o: { votes: number; n?: number; threshold?: number; majority?: string; final?: string; edited?: boolean },
): Trace {
  const n = o.n ?? 5;
  const threshold = o.threshold ?? 3;
  const edited = o.edited ?? o.votes < threshold;
  const majority = o.majority ?? `m-${id}`;
  const finalAnswer = edited ? (o.final ?? `e-${id}`) : majority;
  const samples = Array.from({ length: n }, (_, i) => ({ rationale: `r${i}`, answer: i < o.votes ? majority : `other${i}` }));
  const votes: Record<string, number> = {};
  for (const s of samples) votes[s.answer] = (votes[s.answer] ?? 0) + 1;
  return trace('verify-edit', id, {
    kind: 'verify-edit',
    samples,
    votes,
    majorityAnswer: majority,
    consistency: o.votes / n,
    threshold,
    edited,
    edits: [],
    finalAnswer,
  }, { answer: finalAnswer, output: finalAnswer });
}

export function tocNode(id: number, parentId: number | null, answer: string | null, extra: Partial<TocNode> = {}): TocNode {
  return {
    id,
    parentId,
    depth: parentId === null ? 0 : 1,
    question: parentId === null ? 'Who won?' : `Who won in case ${id}?`,
    answer,
    bfsOrder: id,
    expanded: false,
    verdict: parentId === null ? null : true,
    pruned: false,
    unpruned: false,
    ...extra,
  };
}

export function tocTrace(id: string, nodes: TocNode[], validNodeIds?: number[]): Trace {
  return trace('toc', id, {
    kind: 'toc',
    nodes,
    expansions: [{ nodeId: 0, llmCallIndex: 0, newChildren: nodes.length - 1, failed: false }],
    stopReason: 'queue-empty',
    validNodeIds: validNodeIds ?? nodes.filter((n) => n.parentId !== null && !n.pruned && n.duplicateOf === undefined).map((n) => n.id),
    answerPassageIds: ['p1'],
  });
}

export function metricsOf(results: ExampleResult[], ci = 5): RunMetrics {
  const names = new Set(results.flatMap((r) => Object.keys(scoreValues(r))));
  const metrics: RunMetrics['metrics'] = {};
  for (const name of names) {
    const values = results.map((r) => scoreValues(r)[name]).filter((v) => typeof v === 'number');
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    metrics[name] = { mean, ciLow: mean - ci, ciHigh: mean + ci, n: values.length };
  }
  const sum = (f: (r: ExampleResult) => number) => results.reduce((a, r) => a + f(r), 0);
  return {
    n: results.length,
    metrics,
    usage: {
      llm_calls: sum((r) => r.usage.llmCalls),
      prompt_tokens: sum((r) => r.usage.promptTokens!),
      completion_tokens: sum((r) => r.usage.completionTokens!),
      cache_hits: sum((r) => r.usage.cacheHits),
      wall_seconds: sum((r) => r.usage.seconds),
    },
  };
}

export function run(name: string, config: Record<string, unknown>, results: ExampleResult[], traces: Trace[]): RunData {
  return { name, config, results, traces, metrics: metricsOf(results) };
}

/** Write a run directory the way `ambiqa run` does. */
export function writeRunDir(dir: string, data: RunData, extra: Record<string, string> = {}): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.yaml'), stringify(data.config));
  writeFileSync(join(dir, 'results.jsonl'), data.results.map((r) => JSON.stringify(r)).join('\n') + '\n');
  writeFileSync(join(dir, 'traces.jsonl'), data.traces.map((t) => JSON.stringify(t)).join('\n') + '\n');
  if (data.metrics) writeFileSync(join(dir, 'metrics.json'), JSON.stringify(data.metrics, null, 2));
  for (const [file, text] of Object.entries(extra)) writeFileSync(join(dir, file), text);
  return dir;
}
