import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { run as mergeCommand } from '../../src/cli/commands/merge';
import { run as runCommand } from '../../src/cli/commands/run';
import { createComposer } from '../../src/experiments/compose';
import { loadExperimentConfig } from '../../src/experiments/config';
import type { RunMetrics } from '../../src/run-files';
import { runExperiment } from '../../src/experiments/runner';
import { AmbiqaError } from '../../src/errors';
import { buildReport } from '../../src/report/index';
import { FakeTracking } from './helpers/fixtures';
import { writeAsqa, writeYaml } from './helpers/files';
import { methodCatalog } from '../../src/pipelines/registry';

// ASQA runs score Disambig-F1 and DR by default, with a reader fixed independently of the run's
// model, and record the reader and the ROUGE-Lsum sentence splitter as params. The runs here use
// the scripted provider, whose default reader is the scripted one (the embedded reader is tested
// in test/metrics/reader-embedded.int.test.ts).
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-metric-settings-'));
const saved = process.env.AMBIQA_ARTIFACTS_DIR;
let data: string;

beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  data = writeAsqa(dir, 3);
});
afterAll(() => {
  if (saved === undefined) delete process.env.AMBIQA_ARTIFACTS_DIR;
  else process.env.AMBIQA_ARTIFACTS_DIR = saved;
});

function config(name: string, patch: (c: Record<string, any>) => void = () => {}): string {
  const c: Record<string, any> = {
    dataset: { name: 'asqa', path: data },
    pipeline: { name: 'closed-book', options: { nShots: 0 } },
    llm: { provider: 'scripted', reply: 'Event 0 first happened in 1990.', cache: join(dir, `${name}-cache.sqlite`) },
    tracking: { enabled: false },
  };
  patch(c);
  return writeYaml(join(dir, `${name}.yaml`), c);
}

describe('D-F1 and DR by default on ASQA, read by a fixed reader', () => {
  it('two runs on different models are scored by the same reader, which is not the run model, and both log it as a param', async () => {
    const composer = createComposer({ notify: () => undefined });
    const tracking = new FakeTracking();
    const runs: Array<{ metrics: RunMetrics; params: Record<string, unknown> }> = [];
    try {
      for (const model of ['model-a', 'model-b']) {
        const file = config(`two-${model}`, (c) => {
          c.llm.model = model;
          // The reader copies "1990" from the long answer: the first DQ of question q00 is answered.
          c.reader = 'scripted:1990';
          c.tracking = { enabled: true, experiment: 'metric-settings' };
        });
        const cfg = loadExperimentConfig(file, composer.registry);
        expect(cfg.metrics).toEqual(['str_em', 'str_hit', 'rougeLsum', 'rougeL', 'd_f1', 'dr']);
        const components = await composer.components(cfg);
        const outcome = await runExperiment({ config: cfg, runDir: join(dir, 'artifacts', model), components, tracking: async () => tracking });
        expect(outcome.status).toBe('FINISHED');
        const run = [...tracking.runs.values()].at(-1)!;
        runs.push({ metrics: outcome.metrics, params: run.params });
      }
    } finally {
      await composer.close();
    }
    for (const { metrics, params } of runs) {
      expect(params['metric.reader']).toBe('llm-span-reader/span-v1 scripted:1990');
      expect(params['metric.sentence_splitter']).toBe('punkt-english (nltk 3.8)');
      expect(params['llm.model']).toMatch(/^model-[ab]$/);
      expect(metrics.settings).toEqual({ 'metric.reader': 'llm-span-reader/span-v1 scripted:1990', 'metric.sentence_splitter': 'punkt-english (nltk 3.8)' });
      // Every long answer is "Event 0 first happened in 1990." and every span read is "1990": right
      // for q00's first DQ only (q00: 50, q01 and q02: 0).
      expect(metrics.metrics.d_f1.mean).toBeCloseTo(50 / 3, 6);
      expect(metrics.metrics.dr.mean).toBeCloseTo(Math.sqrt(metrics.metrics.d_f1.mean * metrics.metrics.rougeLsum.mean), 6);
      // The reader's calls are not the run's: usage counts the pipeline's one call per question.
      expect(metrics.usage.llm_calls).toBe(3);
    }
  });

  it('`reader: none` leaves D-F1 and DR out of the defaults; the resolved reader is in config.yaml', async () => {
    expect(await runCommand([config('no-reader', (c) => (c.reader = 'none')), '--name', 'no-reader'])).toBe(0);
    const m = JSON.parse(readFileSync(join(dir, 'artifacts', 'runs', 'no-reader', 'metrics.json'), 'utf8')) as RunMetrics;
    expect(Object.keys(m.metrics)).toEqual(['str_em', 'str_hit', 'rougeL', 'rougeLsum']);
    expect(m.settings).toEqual({ 'metric.sentence_splitter': 'punkt-english (nltk 3.8)' });

    expect(await runCommand([config('default-reader'), '--name', 'default-reader'])).toBe(0);
    const run = join(dir, 'artifacts', 'runs', 'default-reader');
    expect(YAML.parse(readFileSync(join(run, 'config.yaml'), 'utf8')).reader).toBe('scripted');
    const d = JSON.parse(readFileSync(join(run, 'metrics.json'), 'utf8')) as RunMetrics;
    // The default scripted reader answers "none": D-F1 0, and DR with it.
    expect(d.metrics.d_f1.mean).toBe(0);
    expect(d.metrics.dr.mean).toBe(0);
    expect(d.settings?.['metric.reader']).toBe('llm-span-reader/span-v1 scripted:none');
    // The report states how the metrics were measured.
    const html = buildReport(run, { methods: methodCatalog() }).html;
    expect(html).toContain('Measured with: <code>metric.reader</code> = llm-span-reader/span-v1 scripted:none; <code>metric.sentence_splitter</code> = punkt-english (nltk 3.8)');
  });
});

describe('merged shards', () => {
  it('keep how the metrics were measured', async () => {
    const file = config('sharded', (c) => (c.reader = 'scripted:1990'));
    for (const shard of ['0/2', '1/2']) expect(await runCommand([file, '--shard', shard])).toBe(0);
    const runs = join(dir, 'artifacts', 'runs');
    expect(await mergeCommand([join(runs, 'sharded.shard-0of2'), join(runs, 'sharded.shard-1of2'), '--name', 'sharded-merged'])).toBe(0);
    const merged = JSON.parse(readFileSync(join(runs, 'sharded-merged', 'metrics.json'), 'utf8')) as RunMetrics;
    expect(merged.n).toBe(3);
    expect(merged.settings).toMatchObject({ 'metric.reader': 'llm-span-reader/span-v1 scripted:1990', 'metric.sentence_splitter': 'punkt-english (nltk 3.8)' });
    expect(merged.metrics.d_f1.mean).toBeCloseTo(50 / 3, 6);
  });
});

describe('a reader that cannot be loaded is refused before any LLM call, naming the option', () => {
  const callLog = join(dir, 'calls.jsonl');
  async function refusal(file: string): Promise<string> {
    try {
      await runCommand([file]);
    } catch (error) {
      expect(error).toBeInstanceOf(AmbiqaError);
      expect(existsSync(callLog)).toBe(false);
      return (error as AmbiqaError).message;
    }
    throw new Error('expected the run to be refused');
  }
  const bad = (name: string, reader: string) =>
    config(name, (c) => {
      c.reader = reader;
      c.llm.callLog = callLog;
    });

  it('a GGUF file that does not exist', async () => {
    expect(await refusal(bad('missing-gguf', `embedded:${join(dir, 'missing.gguf')}`))).toMatch(/reader: embedded:.*missing\.gguf: model file not found/);
  });
  it('an ONNX folder that does not exist', async () => {
    expect(await refusal(bad('missing-onnx', `qa-onnx:${join(dir, 'no-such-model')}`))).toMatch(/reader: qa-onnx:.*no-such-model: folder not found/);
  });
  it('the run model as reader (`llm`), an unknown reader, and `none` with D-F1 asked for', async () => {
    expect(await refusal(bad('llm-reader', 'llm'))).toMatch(/reader: "llm" is no longer a reader: the D-F1 reader is fixed independently of the model under test/);
    expect(await refusal(bad('bogus-reader', 'roberta'))).toMatch(/reader: "roberta" is not a reader/);
    const none = config('none-but-df1', (c) => {
      c.reader = 'none';
      c.metrics = ['d_f1'];
      c.llm.callLog = callLog;
    });
    expect(await refusal(none)).toMatch(/reader: metrics d_f1 need a reader, but reader is none/);
  });
});
