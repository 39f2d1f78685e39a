/**
 * Reaching the engines inside a composed retriever (hybrid, multi-query, leak control, the
 * retrieval cache) for what only an engine knows: its preflight and its description. A composite
 * forwards neither itself, so a hybrid of BM25 and a ColBERTv2 server still checks the server and
 * logs its URL.
 */
import type { Retriever } from '../types';

/** The retriever's direct parts: a wrapper's `base`, a hybrid's `retrievers`. */
function partsOf(retriever: Retriever): Retriever[] {
  const r = retriever as { base?: unknown; retrievers?: unknown };
  const parts: Retriever[] = [];
  if (r.base && typeof r.base === 'object') parts.push(r.base as Retriever);
  if (Array.isArray(r.retrievers)) parts.push(...(r.retrievers as Retriever[]));
  return parts;
}

/** The engines of a retriever: the first retrievers on each path that describe or check themselves. */
export function enginesOf(retriever: Retriever): Retriever[] {
  if (retriever.describe || retriever.preflight) return [retriever];
  return partsOf(retriever).flatMap(enginesOf);
}

/** Every engine's preflight, in order; the first problem throws (one line naming the URL or file). */
export async function preflightRetriever(retriever: Retriever): Promise<void> {
  for (const engine of enginesOf(retriever)) await engine.preflight?.();
}

/**
 * MLflow params of a retriever (`retriever.engine`, `retriever.url`, …) from its engines'
 * `describe()`; with several engines (a hybrid), `retriever.<i>.<field>`. Empty for in-memory
 * engines, whose settings are already the config's params.
 */
export function retrieverParams(retriever: Retriever): Record<string, string> {
  const described = enginesOf(retriever).filter((e) => e.describe);
  const out: Record<string, string> = {};
  described.forEach((engine, i) => {
    const prefix = described.length === 1 ? 'retriever' : `retriever.${i}`;
    for (const [key, value] of Object.entries(engine.describe!())) out[`${prefix}.${key}`] = value;
  });
  return out;
}
