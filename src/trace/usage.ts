import { emptyUsage, type TokenUsage, type Usage } from '../llm/types';
import { addUsage } from '../llm/usage';
import type { LlmCallRecord, TraceSummary } from './types';

/**
 * Usage in the trace's terms: a call record and a question's summary read as the one usage shape
 * (`Usage`), so that a trace, a result line and a run's totals are added up by `addUsage` like
 * the client's own meter. Absent token counts are unknown (see `TraceSummary`).
 */

/** A usage's token counts as trace fields: only the counts that are known. */
export function tokenFields(usage: TokenUsage): { promptTokens?: number; completionTokens?: number } {
  return {
    ...(usage.promptTokens !== undefined ? { promptTokens: usage.promptTokens } : {}),
    ...(usage.completionTokens !== undefined ? { completionTokens: usage.completionTokens } : {}),
  };
}

/** One recorded call: one call, its samples, their tokens, hits, live seconds and cost. */
export function callUsage(call: LlmCallRecord): Usage {
  let usage: Usage = { ...emptyUsage(), calls: 1 };
  for (const c of call.completions) {
    usage = addUsage(usage, {
      calls: 0,
      samples: 1,
      promptTokens: c.promptTokens,
      completionTokens: c.completionTokens,
      cacheHits: c.cacheHit ? 1 : 0,
      liveSeconds: c.cacheHit ? 0 : c.latencySeconds,
      ...(c.costUsd !== undefined ? { costUsd: c.costUsd } : {}),
    });
  }
  return usage;
}

/** The usage of a list of recorded calls (a question's, a calibration's). */
export function callsUsage(calls: readonly LlmCallRecord[]): Usage {
  return calls.map(callUsage).reduce(addUsage, emptyUsage());
}

/**
 * A question's summary as usage. `liveSeconds` is not in a summary (it holds the question's wall
 * seconds instead) and counts 0; `samples` is absent in traces written before it existed and
 * counts 0 there.
 */
export function summaryUsage(summary: Partial<TraceSummary>): Usage {
  return {
    calls: summary.llmCalls ?? 0,
    samples: summary.samples ?? 0,
    promptTokens: summary.promptTokens,
    completionTokens: summary.completionTokens,
    cacheHits: summary.cacheHits ?? 0,
    liveSeconds: 0,
    ...(summary.costUsd !== undefined ? { costUsd: summary.costUsd } : {}),
  };
}
