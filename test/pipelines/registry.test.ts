import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AmbiqaError } from '../../src/errors';
import { createComposer } from '../../src/experiments/compose';
import {
  builtinPipelines,
  describePipelines,
  createPipeline,
  defaultPipelineOptions,
  parsePipelineOptions,
  pipelineNames,
  pipelineOptionsSchema,
  pipelineOptionsSchemas,
} from '../../src/pipelines/registry';

function errorOf(fn: () => unknown): AmbiqaError {
  try {
    fn();
  } catch (e) {
    if (e instanceof AmbiqaError) return e;
    throw e;
  }
  throw new Error('expected an AmbiqaError');
}

describe('pipeline registry', () => {
  it('creates every pipeline with its defaults', () => {
    for (const name of pipelineNames) {
      const p = createPipeline(name, {});
      expect(p.name).toBe(name);
      expect(pipelineOptionsSchema(name)).toBe(pipelineOptionsSchemas[name as keyof typeof pipelineOptionsSchemas]);
    }
    expect(pipelineOptionsSchema('nope')).toBeUndefined();
  });

  it('fills the paper defaults', () => {
    expect(defaultPipelineOptions('toc')).toMatchObject({
      maxNodes: 10,
      maxDepth: 3,
      maxTrials: 3,
      maxExpansions: 16,
      nPassages: 5,
      poolSize: 100,
      nShots: 5,
      expansionTemperature: 0.7,
      answerTemperature: 0,
      maxTokens: 300,
      pruning: true,
    });
    expect(defaultPipelineOptions('verify-edit')).toMatchObject({ n: 5, temperature: 0.7, threshold: 3, topSentences: 3 });
    expect(defaultPipelineOptions('diva')).toMatchObject({ temperature: 0.3, maxTokens: 300, nPassages: 5 });
    expect(defaultPipelineOptions('cot-sc')).toMatchObject({ n: 5, temperature: 0.7 });
  });

  it('names the option that is out of range', () => {
    const e = errorOf(() => createPipeline('toc', { maxNodes: 0 }));
    expect(e.message).toMatch(/^pipeline toc: option maxNodes: /);
    expect(e.message).toMatch(/>=1|≥ ?1/);
    expect(e.hint).toMatch(/maxDepth/);
    expect(errorOf(() => createPipeline('verify-edit', { n: 3, threshold: 4 })).message).toMatch(/option threshold: threshold \(4\) must be ≤ n \(3\)/);
    expect(errorOf(() => createPipeline('toc', { poolSize: 3, nPassages: 5 })).message).toMatch(/option poolSize/);
    expect(errorOf(() => createPipeline('diva', { temperature: -1 })).message).toMatch(/option temperature/);
    expect(errorOf(() => createPipeline('toc', { maxDepth: 1.5 })).message).toMatch(/option maxDepth/);
  });

  it('rejects unknown options and unknown pipelines', () => {
    expect(errorOf(() => createPipeline('toc', { maxNode: 3 })).message).toMatch(/unknown field 'maxNode'/);
    const e = errorOf(() => createPipeline('tree', {}));
    expect(e.message).toMatch(/unknown pipeline "tree"/);
    expect(e.hint).toContain('toc');
  });

  it('parses options idempotently (the experiment runner parses, then creates)', () => {
    for (const name of pipelineNames) {
      const once = parsePipelineOptions(name, {});
      expect(parsePipelineOptions(name, once)).toEqual(once);
    }
  });

  it('is the table of docs/pipelines.md: one row per built-in entry, with its needs', () => {
    const doc = readFileSync(join(__dirname, '../../docs/pipelines.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## The pipelines'), doc.indexOf('## Adding a pipeline'));
    const rows = section.split('\n').filter((l) => /^\| `/.test(l));
    expect(rows.map((r) => /^\| `([^`]+)`/.exec(r)![1])).toEqual([...pipelineNames]);
    for (const entry of builtinPipelines) {
      const cells = rows.find((r) => r.startsWith(`| \`${entry.name}\``))!.split('|').map((c) => c.trim());
      const yesNo = (b: boolean) => (b ? 'yes' : 'no');
      expect(cells.slice(3, 5), entry.name).toEqual([yesNo(entry.needs.retriever), yesNo(entry.needs.embedder)]);
    }
  });

  it('is what config validation and --help use', () => {
    const { registry } = createComposer({ notify: () => undefined });
    expect(registry.pipelineNames).toEqual(pipelineNames);
    for (const entry of builtinPipelines) {
      expect(registry.requiresRetriever?.(entry.name), entry.name).toBe(entry.needs.retriever);
      expect(registry.pipelineOptionsSchema(entry.name)).toBe(entry.optionsSchema);
    }
    const help = describePipelines();
    expect(help).toHaveLength(builtinPipelines.length);
    builtinPipelines.forEach((entry, i) => expect(help[i]).toMatch(new RegExp(`^${entry.name} +${entry.description.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`)));
  });
});
