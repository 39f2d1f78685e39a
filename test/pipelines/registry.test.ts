import { describe, expect, it } from 'vitest';
import { AmbiqaError } from '../../src/errors';
import {
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
});
