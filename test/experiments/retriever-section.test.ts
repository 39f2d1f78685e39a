import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { normaliseConfig, resolveExperimentConfig, type ConfigRegistry } from '../../src/experiments/config';
import { parseOverride } from '../../src/experiments/overrides';

/**
 * The `retriever:` section is strict like `pipeline:`, `llm:` and `dataset:`: a field no
 * retriever kind and not the section (`corpus`, `exclude`) has is refused in one line naming it,
 * whichever kind; the section's own fields pass with every kind, colbertv2 included. A config a
 * run saved still reads back when it holds a field this version does not know.
 */
const registry: ConfigRegistry = {
  pipelineNames: ['closed-book'],
  pipelineOptionsSchema: () => z.strictObject({ nShots: z.int().min(0).default(0) }),
  metricNames: ['str_em'],
  defaultMetrics: () => ['str_em'],
};
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-retriever-section-'));
const dataFile = join(dir, 'data.json');
writeFileSync(dataFile, '{}');
const base = { dataset: { name: 'asqa', path: dataFile }, pipeline: { name: 'closed-book' }, llm: { provider: 'scripted' }, name: 'r' };

function resolve(retriever: unknown, sets: string[] = []) {
  return resolveExperimentConfig({ ...base, retriever }, registry, { source: 'c.yaml', checkFiles: false, overrides: sets.map((s) => parseOverride(s)) });
}
function refusal(retriever: unknown, sets: string[] = []): string {
  try {
    resolve(retriever, sets);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

describe('retriever: section', () => {
  it('--set retriever.exlcude=own is refused in one line naming the field and the allowed ones', () => {
    expect(refusal({ type: 'bm25' }, ['retriever.exlcude=own'])).toBe(
      "c.yaml: retriever: unknown field 'exlcude' (allowed: type, k1, b, stopWords, stemmer, engine, index, url, indexName, timeoutMs, corpus, exclude)",
    );
    expect(refusal({ type: 'dense' }, ['retriever.exlcude=own'])).toMatch(/^c\.yaml: retriever: unknown field 'exlcude'/);
    expect(refusal({ type: 'colbertv2', url: 'http://h:1/s', corpse: 'x' })).toMatch(/^c\.yaml: retriever: unknown field 'corpse' \(allowed: type, url, post, maxK, timeout, cache, corpus, exclude\)$/);
    expect(refusal({ type: 'colbertv2', url: 'localhost:8893' })).toBe(
      'c.yaml: retriever.url: must be an http(s) URL of the server\'s search endpoint, e.g. http://host:8893/api/search (got "localhost:8893")',
    );
    expect(refusal({ type: 'hybrid', retrievers: ['bm25', { type: 'dense', nporbe: 2 }] })).toMatch(/^c\.yaml: retriever\.retrievers\[1\]: unknown field 'nporbe'/);
  });

  it('the section fields pass with every kind, and exclude keeps its own message', () => {
    expect(resolve({ type: 'bm25', exclude: 'own', corpus: 'c.jsonl' }).retriever).toMatchObject({ type: 'bm25', exclude: 'own', corpus: expect.stringMatching(/c\.jsonl$/) });
    expect(resolve({ type: 'colbertv2', url: 'http://h:1/s' }, ['retriever.exclude=own']).retriever).toMatchObject({ type: 'colbertv2', exclude: 'own', post: false, maxK: 100, cache: 'use' });
    expect(resolve({ type: 'hybrid', retrievers: ['bm25', { type: 'colbertv2', url: 'http://h:1/s' }] }).retriever).toMatchObject({ type: 'hybrid', exclude: 'none' });
    expect(resolve({ type: 'bm25', engine: 'lucene', index: '/idx' }).retriever).toMatchObject({ engine: 'lucene', index: '/idx' });
    expect(refusal({ type: 'bm25' }, ['retriever.exclude=mine'])).toMatch(/retriever\.exclude: must be "none" or "own"/);
  });

  it('a saved config with a field this version does not know still reads back (the field dropped)', () => {
    const saved = { ...resolve('bm25'), retriever: { type: 'bm25', k1: 0.9, b: 0.4, stopWords: true, stemmer: 'porter', exclude: 'none', fromTheFuture: 1 } };
    const read = normaliseConfig(saved, 'config.yaml');
    expect(read.retriever).toEqual({ type: 'bm25', k1: 0.9, b: 0.4, stopWords: true, stemmer: 'porter', exclude: 'none' });
  });
});
