import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AmbiqaError } from '../../src/errors';
import {
  configFingerprint,
  configToYaml,
  diffConfigs,
  loadExperimentConfig,
  readResolvedConfig,
  resolveExperimentConfig,
  type ConfigRegistry,
} from '../../src/experiments/config';
import { RUN_FORMAT } from '../../src/run-files';
import { parseOverride } from '../../src/experiments/overrides';

// A registry shaped like the real one, so these tests pin the checker's own behaviour; the real
// registry is exercised in registry.test.ts.
const veOptions = z
  .strictObject({
    n: z.int().min(1).default(5),
    threshold: z.int().min(1).optional(),
    temperature: z.number().min(0).default(0.7),
  })
  .superRefine((o, ctx) => {
    if (o.threshold !== undefined && o.threshold > o.n) {
      ctx.addIssue({ code: 'custom', path: ['threshold'], message: `must be ≤ n (${o.n})` });
    }
  });
const registry: ConfigRegistry = {
  pipelineNames: ['closed-book', 'verify-edit'],
  pipelineOptionsSchema: (name) => (name === 'verify-edit' ? veOptions : z.strictObject({ nShots: z.int().min(0).default(5) })),
  metricNames: ['str_em', 'rougeLsum', 'em', 'f1'],
  defaultMetrics: (d) => (d === 'asqa' ? ['str_em', 'rougeLsum'] : ['em', 'f1']),
};

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-config-'));
const dataFile = join(dir, 'data.json');
writeFileSync(dataFile, '{}');

function writeConfig(name: string, yaml: string): string {
  const file = join(dir, name);
  writeFileSync(file, yaml);
  return file;
}

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AmbiqaError);
    return (error as AmbiqaError).message;
  }
  throw new Error('expected an AmbiqaError');
}

const good = `
dataset: { name: hotpotqa-adversarial, path: ${dataFile}, sample: 20, seed: 3 }
pipeline: { name: verify-edit, options: { n: 5, threshold: 3 } }
llm: { provider: embedded }
`;

describe('experiment config', () => {
  it('fills defaults, resolves the name from the file and keeps validated options', () => {
    const file = writeConfig('ve.yaml', good);
    const c = loadExperimentConfig(file, registry);
    expect(c.name).toBe('ve');
    expect(c.dataset).toMatchObject({ name: 'hotpotqa-adversarial', path: dataFile, sample: 20, seed: 3, split: 'dev' });
    expect(c.pipeline.options).toEqual({ n: 5, threshold: 3, temperature: 0.7 });
    expect(c.metrics).toEqual(['em', 'f1']);
    expect(c.concurrency).toBe(2);
    expect(c.tracking.experiment).toBe('ambiqa');
  });

  it('names the file and the option path when a pipeline option is out of range', () => {
    const file = writeConfig('ve-bad.yaml', good.replace('threshold: 3', 'threshold: 7'));
    expect(messageOf(() => loadExperimentConfig(file, registry))).toBe(`${file}: pipeline.options.threshold: must be ≤ n (5)`);
  });

  it('rejects an unknown pipeline and lists the allowed ones', () => {
    const file = writeConfig('unknown-pipeline.yaml', good.replace('name: verify-edit', 'name: tree-of-thought'));
    expect(messageOf(() => loadExperimentConfig(file, registry))).toBe(
      `${file}: pipeline.name: unknown pipeline "tree-of-thought" (allowed: closed-book, verify-edit)`,
    );
  });

  it('rejects an unknown option and lists the options the pipeline has', () => {
    const file = writeConfig('unknown-option.yaml', good.replace('threshold: 3', 'treshold: 3'));
    expect(messageOf(() => loadExperimentConfig(file, registry))).toBe(
      `${file}: pipeline.options: unknown field 'treshold' (allowed: n, threshold, temperature)`,
    );
  });

  it('rejects an unknown dataset with the allowed names, and an unknown top-level field', () => {
    const file = writeConfig('bad-dataset.yaml', good.replace('hotpotqa-adversarial', 'hotpot') + 'concurency: 4\n');
    const msg = messageOf(() => loadExperimentConfig(file, registry));
    expect(msg).toContain(`${file}: dataset.name: must be one of "asqa", "ambignq", "situatedqa", "hotpotqa-adversarial", "2wikimultihop", "fever" (got "hotpot")`);
    expect(msg).toContain(`${file}: (top level): unknown field 'concurency' (allowed: name, description, dataset, pipeline, llm`);
  });

  it('keeps dataset.questions for ASQA and names it when the dataset is another one', () => {
    const asqa = writeConfig('asqa-dqs.yaml', good.replace('name: hotpotqa-adversarial', 'name: asqa, questions: mixed').replace('pipeline: { name: verify-edit, options: { n: 5, threshold: 3 } }', 'pipeline: { name: closed-book }'));
    expect(loadExperimentConfig(asqa, registry).dataset.questions).toBe('mixed');
    const hotpot = writeConfig('hotpot-dqs.yaml', good.replace('sample: 20', 'questions: disambiguated, sample: 20'));
    expect(messageOf(() => loadExperimentConfig(hotpot, registry))).toContain(
      `${hotpot}: dataset.questions: disambiguated applies to dataset asqa only (this config's dataset is hotpotqa-adversarial)`,
    );
    const typo = writeConfig('typo-dqs.yaml', good.replace('name: hotpotqa-adversarial', 'name: asqa, questions: dqs'));
    expect(messageOf(() => loadExperimentConfig(typo, registry))).toContain('dataset.questions: must be one of "ambiguous", "disambiguated", "mixed" (got "dqs")');
  });

  it('rejects a dataset path that does not exist', () => {
    const missing = join(dir, 'nope.json');
    const file = writeConfig('missing.yaml', good.replace(dataFile, missing));
    expect(messageOf(() => loadExperimentConfig(file, registry))).toBe(`${file}: dataset.path: file not found: ${missing}`);
  });

  it("names the data folder and the ways out when a dataset's default file is missing", () => {
    // An empty data folder: the dataset's default file cannot be there.
    const emptyData = mkdtempSync(join(tmpdir(), 'ambiqa-nodata-'));
    const previous = process.env.AMBIQA_DATA_DIR;
    process.env.AMBIQA_DATA_DIR = emptyData;
    try {
      const file = writeConfig('default-path.yaml', good.replace(`, path: ${dataFile}`, ''));
      const msg = messageOf(() => loadExperimentConfig(file, registry));
      expect(msg).toContain(`${file}: dataset.path: file not found: ${emptyData}/`);
      expect(msg).toContain(`(the default for dataset 'hotpotqa-adversarial' in the data folder ${emptyData}:`);
      expect(msg).toContain('AMBIQA_DATA_DIR');
    } finally {
      if (previous === undefined) delete process.env.AMBIQA_DATA_DIR;
      else process.env.AMBIQA_DATA_DIR = previous;
    }
  });

  it('rejects a shard index outside 0..N-1', () => {
    const file = writeConfig('shard.yaml', good);
    expect(messageOf(() => loadExperimentConfig(file, registry, { shard: '3/2' }))).toBe(
      `${file}: shard: '3/2': shard index must be in 0..1 (shards are numbered from 0)`,
    );
    expect(messageOf(() => loadExperimentConfig(file, registry, { shard: 'two' }))).toContain("shard: 'two' is not a shard spec");
    expect(loadExperimentConfig(file, registry, { shard: '1/2' }).name).toBe('shard.shard-1of2');
  });

  it('validates the llm section with the providers\' schemas, naming allowed providers', () => {
    const file = writeConfig('llm.yaml', good.replace('provider: embedded', 'provider: gpt'));
    expect(messageOf(() => loadExperimentConfig(file, registry))).toBe(
      `${file}: llm.provider: must be one of "embedded", "openai-compatible" (got "gpt")`,
    );
  });

  it('rejects unknown metrics with the allowed names, and wrong types with what was given', () => {
    const file = writeConfig('metrics.yaml', good + 'metrics: [em, bleu]\nconcurrency: two\n');
    const msg = messageOf(() => loadExperimentConfig(file, registry));
    expect(msg).toContain('concurrency: expected number (got "two")');
    const file2 = writeConfig('metrics2.yaml', good + 'metrics: [em, bleu]\n');
    expect(messageOf(() => loadExperimentConfig(file2, registry))).toBe(
      `${file2}: metrics.1: unknown metric "bleu" (allowed: str_em, rougeLsum, em, f1)`,
    );
  });

  it('applies --set overrides with YAML-typed values before validating', () => {
    const file = writeConfig('ovr.yaml', good);
    const c = loadExperimentConfig(file, registry, {
      overrides: [parseOverride('pipeline.options.threshold=2'), parseOverride('concurrency=4'), parseOverride('tracking.experiment=abl')],
      limit: 7,
      name: 'custom',
    });
    expect(c.pipeline.options.threshold).toBe(2);
    expect(c.concurrency).toBe(4);
    expect(c.tracking.experiment).toBe('abl');
    expect(c.dataset.limit).toBe(7);
    expect(c.name).toBe('custom');
    // An override that breaks a rule is reported like a bad file.
    expect(messageOf(() => loadExperimentConfig(file, registry, { overrides: [parseOverride('pipeline.options.n=2')] }))).toBe(
      `${file}: pipeline.options.threshold: must be ≤ n (2)`,
    );
  });

  it('parses --set values as YAML and keeps sweep axis keys whole', () => {
    expect(parseOverride('a.b=3').value).toBe(3);
    expect(parseOverride('a.b=true').value).toBe(true);
    expect(parseOverride('a.b=[1, 2]').value).toEqual([1, 2]);
    expect(parseOverride('a.b="3"').value).toBe('3');
    expect(parseOverride('a.b=x=y').value).toBe('x=y');
    expect(parseOverride('sweep.pipeline.options.n=[3,5]').path).toEqual(['sweep', 'pipeline.options.n']);
    expect(() => parseOverride('novalue')).toThrow(/expected path.to.field=value/);
  });

  it('validates the test-only scripted provider', () => {
    const c = resolveExperimentConfig(
      { dataset: { name: 'asqa', path: dataFile }, pipeline: { name: 'closed-book' }, llm: { provider: 'scripted', latencyMs: 5 } },
      registry,
      { source: 'inline' },
    );
    expect(c.llm).toMatchObject({ provider: 'scripted', latencyMs: 5, reply: 'scripted answer' });
    expect(c.metrics).toEqual(['str_em', 'rougeLsum']);
    expect(() =>
      resolveExperimentConfig(
        { dataset: { name: 'asqa', path: dataFile }, pipeline: { name: 'closed-book' }, llm: { provider: 'scripted', latencyMs: -1 } },
        registry,
        { source: 'inline' },
      ),
    ).toThrow('inline: llm.latencyMs: must be ≥ 0 (got -1)');
  });

  it('fingerprints ignore names, concurrency, shards and where files sit', () => {
    const file = writeConfig('fp.yaml', good);
    const a = loadExperimentConfig(file, registry, { shard: '0/2' });
    const b = loadExperimentConfig(file, registry, { shard: '1/2', overrides: [parseOverride('concurrency=8')] });
    expect(diffConfigs(configFingerprint(a), configFingerprint(b))).toEqual([]);
    const c = loadExperimentConfig(file, registry, { overrides: [parseOverride('pipeline.options.threshold=1')] });
    expect(diffConfigs(configFingerprint(a), configFingerprint(c))).toEqual(['pipeline.options.threshold']);
  });

  it('keys llm: and judge: on the provider: a section holds only its provider\'s fields', () => {
    const inline = (llm: Record<string, unknown>) => () =>
      resolveExperimentConfig({ dataset: { name: 'asqa', path: dataFile }, pipeline: { name: 'closed-book' }, llm }, registry, { source: 'inline' });
    expect(messageOf(inline({ provider: 'openai-compatible', threads: 4 }))).toMatch(/^inline: llm: unknown field 'threads' \(allowed: provider, model, baseUrl, apiKeyEnv, /);
    // No provider: the embedded model's fields.
    expect(messageOf(inline({ baseUrl: 'http://127.0.0.1:1/v1' }))).toMatch(/^inline: llm: unknown field 'baseUrl' \(allowed: provider, model, apiKey, threads, /);
    const c = inline({ threads: 2 })();
    expect(c.llm).toMatchObject({ provider: 'embedded', threads: 2 });
    expect(c.llm).not.toHaveProperty('apiKeyEnv');
  });

  it('checks a pipeline registered after an earlier check (the union is built from the live list)', () => {
    const names = ['closed-book'];
    const live: ConfigRegistry = { ...registry, pipelineNames: names };
    const config = { dataset: { name: 'asqa', path: dataFile }, pipeline: { name: 'verify-edit', options: { n: 2, threshold: 3 } } };
    expect(messageOf(() => resolveExperimentConfig(config, live, { source: 'inline' }))).toBe('inline: pipeline.name: unknown pipeline "verify-edit" (allowed: closed-book)');
    names.push('verify-edit');
    expect(messageOf(() => resolveExperimentConfig(config, live, { source: 'inline' }))).toBe('inline: pipeline.options.threshold: must be ≤ n (2)');
  });

  it('saves the config stamped with its format and reads it back with its schema', () => {
    const config = loadExperimentConfig(writeConfig('saved.yaml', good), registry);
    const yaml = configToYaml(config, 'resolved config');
    expect(yaml.split('\n').slice(0, 2)).toEqual(['# resolved config', `format: ${RUN_FORMAT}`]);
    const path = join(dir, 'saved-config.yaml');
    writeFileSync(path, yaml);
    expect(readResolvedConfig(path)).toEqual(config);
  });

  it('reads a config saved before the format stamp: the other providers\' defaults it held are left out', () => {
    const config = loadExperimentConfig(writeConfig('old.yaml', good), registry);
    const path = join(dir, 'old-config.yaml');
    // Format 1: every LLM section carried every provider's defaults.
    const old = { ...config, llm: { ...config.llm, apiKeyEnv: 'OPENAI_API_KEY' }, judge: { provider: 'openai-compatible', model: 'm', contextSize: 4096, judgeMode: 'probability', apiKeyEnv: 'OPENAI_API_KEY', cache: { mode: 'use' } } };
    writeFileSync(path, `# resolved config\n${JSON.stringify(old)}\n`);
    const read = readResolvedConfig(path);
    expect(read.llm).not.toHaveProperty('apiKeyEnv');
    expect(read.judge).not.toHaveProperty('contextSize');
    const { judge: _judge, ...withoutJudge } = read;
    expect(diffConfigs(configFingerprint(withoutJudge), configFingerprint(config))).toEqual([]);

    const later = join(dir, 'later-config.yaml');
    writeFileSync(later, configToYaml(config).replace(`format: ${RUN_FORMAT}`, `format: ${RUN_FORMAT + 1}`));
    expect(messageOf(() => readResolvedConfig(later))).toBe(`${later}: format ${RUN_FORMAT + 1} is not one this version of ambiqa reads (formats 1 to ${RUN_FORMAT})`);
  });
});
