import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { projectRoot } from '../../src/config/paths';
import { registry } from '../../src/experiments/compose';
import { loadExperimentConfig } from '../../src/experiments/config';
import { planSweep } from '../../src/experiments/sweep';
import { defaultDatasetFiles } from '../../src/datasets/index';
import type { DatasetName } from '../../src/datasets/types';
import { hasSharedData } from '../helpers/data';
import { catalogModelFile } from '../../src/llm/config';
import { existsSync } from 'node:fs';

// Every config shipped in experiments/ passes the real registries (pipelines, LLM, retrievers,
// metrics), and every sweep's grid points do too. Data files are checked where the shared data
// is present (the shared data has no 2WikiMultihopQA dev.json: ve-2wiki.yaml's files are not).
const dir = join(projectRoot, 'experiments');
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();
const checkSharedFiles = hasSharedData('asqa', 'ASQA_dev.json');

describe('shipped experiment configs', () => {
  it('cover every pipeline on its paper dataset and the ablations', () => {
    const configs = files.map((f) => YAML.parse(readFileSync(join(dir, f), 'utf8')) as { pipeline: { name: string }; dataset: { name: string }; sweep?: Record<string, unknown[]> });
    const runs = configs.filter((c) => !c.sweep).map((c) => `${c.pipeline.name}@${c.dataset.name}`);
    for (const p of ['toc', 'diva', 'combo', 'closed-book', 'vanilla-rag', 'cot', 'cot-sc']) expect(runs).toContain(`${p}@asqa`);
    expect(runs).toEqual(expect.arrayContaining(['verify-edit@hotpotqa-adversarial', 'verify-edit@2wikimultihop', 'verify-edit@fever']));
    const axes = configs.flatMap((c) => Object.keys(c.sweep ?? {}));
    expect(axes).toEqual(
      expect.arrayContaining([
        'pipeline.options.threshold',
        'pipeline.options.maxNodes',
        'pipeline.options.maxDepth',
        'pipeline.options.temperature',
        'pipeline.options.expansionTemperature',
        'pipeline.options.pruneThreshold',
        'pipeline.options.verifyThreshold',
        'retriever.type',
        'pipeline.options.earlyExit',
      ]),
    );
  });

  for (const f of files) {
    it(`${f} is valid`, () => {
      const file = join(dir, f);
      const raw = YAML.parse(readFileSync(file, 'utf8')) as { dataset: { name: DatasetName; path?: string } };
      const dataFile = raw.dataset.path ?? defaultDatasetFiles[raw.dataset.name];
      let checkFiles = checkSharedFiles && (dataFile.startsWith('/') || hasSharedData(...dataFile.split('/')));
      // A second catalog model (a `judge:`) that setup's default run does not fetch: the config
      // must then stop with the fetch command, and is checked without files otherwise.
      const models = [raw as { llm?: { model?: string }; judge?: { model?: string } }].flatMap((r) => [r.llm?.model, r.judge?.model]);
      const unfetched = models.map((m) => (m ? catalogModelFile(m) : undefined)).filter((m) => m && !existsSync(m.path));
      if (checkFiles && unfetched.length > 0) {
        expect(() => loadExperimentConfig(file, registry, { checkFiles })).toThrow(/model: catalog model '.*' is not fetched/);
        console.log(`${f}: ${unfetched.map((m) => m!.name).join(', ')} not fetched (npx ambiqa setup --fetch-llm …); checked without files`);
        checkFiles = false;
      }
      const config = loadExperimentConfig(file, registry, { checkFiles });
      expect(config.name).toBe(basename(f, '.yaml'));
      if (config.sweep) {
        const plan = planSweep({ raw: raw as Record<string, unknown>, source: file, registry, options: { defaultName: config.name, checkFiles }, sweepDir: (n) => `/tmp/${n}` });
        expect(plan.points.length).toBeGreaterThan(1);
      }
    });
  }

  it('a threshold sweep value outside [0, 1] is refused naming the option', () => {
    const file = join(dir, 'ablation-toc-prune-threshold.yaml');
    const raw = YAML.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    raw.sweep = { 'pipeline.options.pruneThreshold': [0.5, 1.5] };
    expect(() =>
      planSweep({ raw, source: file, registry, options: { defaultName: 'x', checkFiles: false }, sweepDir: (n) => `/tmp/${n}` }),
    ).toThrow(/pipeline\.options\.pruneThreshold: must be (≤ 1|in \[0, 1\])/);
  });
});

