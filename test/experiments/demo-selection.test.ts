import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJsonl } from '../../src/common/jsonl';
import { createComposer } from '../../src/experiments/compose';
import { loadExperimentConfig } from '../../src/experiments/config';
import { runExperiment } from '../../src/experiments/runner';
import type { Trace } from '../../src/trace/types';
import { describeError } from '../../src/errors';
import { FakeTracking } from './helpers/fixtures';
import { writeAsqa, writeYaml } from './helpers/files';

// `dataset.demoSelection: fixed`: every question is shown the pool's first nShots demos (itself
// left out), so the few-shot prefix of its prompts is the same for every question.
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-demo-selection-'));
const data = writeAsqa(dir, 4);

async function run(dataset: Record<string, unknown>, name: string) {
  const file = writeYaml(join(dir, `${name}.yaml`), {
    dataset: { name: 'asqa', path: data, ...dataset },
    pipeline: { name: 'closed-book', options: { nShots: 2 } },
    llm: { provider: 'scripted', reply: 'It happened in 1990.', cache: join(dir, `${name}.sqlite`) },
    reader: 'none',
    metrics: ['str_em'],
    tracking: { enabled: true, experiment: 'demo-selection' },
  });
  const composer = createComposer({ notify: () => undefined });
  const tracking = new FakeTracking();
  try {
    const config = loadExperimentConfig(file, composer.registry);
    const runDir = join(dir, 'runs', name);
    const outcome = await runExperiment({ config, runDir, components: await composer.components(config), tracking: async () => tracking });
    expect(outcome.status).toBe('FINISHED');
    return { traces: readJsonl<Trace>(join(runDir, 'traces.jsonl')), params: [...tracking.runs.values()][0]!.params };
  } finally {
    await composer.close();
  }
}

describe('dataset.demoSelection', () => {
  it('fixed: the first demos of the pool for every question, the question itself left out; logged', async () => {
    const { traces, params } = await run({ demoSelection: 'fixed' }, 'fixed');
    expect(params['dataset.demoSelection']).toBe('fixed');
    const demos = new Map(traces.map((t) => [t.questionId, t.demoIds]));
    expect(demos.get('q02')).toEqual(['q00', 'q01']);
    expect(demos.get('q03')).toEqual(['q00', 'q01']);
    expect(demos.get('q00')).toEqual(['q01', 'q02']);
    expect(demos.get('q01')).toEqual(['q00', 'q02']);
    // The prompts of two questions that see the same demos share everything before the question.
    const prompt = (id: string) => JSON.stringify(traces.find((t) => t.questionId === id)!.llmCalls[0]!.messages);
    const a = prompt('q02');
    const b = prompt('q03');
    let common = 0;
    while (common < a.length && a[common] === b[common]) common++;
    expect(common).toBeGreaterThan(a.indexOf('event 1') + 10);
  });

  it('rejects an unknown selection, naming the field and the choices', () => {
    const file = writeYaml(join(dir, 'bad.yaml'), {
      dataset: { name: 'asqa', path: data, demoSelection: 'random' },
      pipeline: { name: 'closed-book', options: { nShots: 2 } },
      llm: { provider: 'scripted', reply: 'x' },
    });
    const composer = createComposer({ notify: () => undefined });
    let message = '';
    try {
      loadExperimentConfig(file, composer.registry);
    } catch (error) {
      message = describeError(error);
    }
    expect(message).toContain('dataset.demoSelection');
    expect(message).toMatch(/knn/);
    expect(message).toMatch(/fixed/);
  });
});
