import { scoreValues, type ExampleResult } from '../../src/run-files';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createComposer } from '../../src/experiments/compose';
import { loadExperimentConfig } from '../../src/experiments/config';
import { readJsonl } from '../../src/common/jsonl';
import { runExperiment } from '../../src/experiments/runner';
import { buildReport } from '../../src/report/index';
import { saveCorpus } from '../../src/retrieval/corpus';
import { buildCorpus } from '../../src/retrieval/corpus-builder';
import type { Trace } from '../../src/trace/types';
import { FakeTracking } from './helpers/fixtures';
import { writeAsqa, writeYaml } from './helpers/files';
import { methodCatalog } from '../../src/pipelines/registry';

// A vanilla-RAG run over a corpus that holds each question's own annotated passages: with
// `retriever.exclude: own` no question retrieves its own, the param says so, and the report shows it.
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-exclude-own-'));
const data = writeAsqa(dir, 4);
const corpusPath = join(dir, 'corpus.jsonl');
const noise = join(dir, 'noise.jsonl');
const noiseRows = Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: `n${i}`, title: `Almanac ${i}`, text: `An almanac lists when every event happened, volume ${i}.` }));
writeFileSync(noise, noiseRows.join('\n') + '\n');
saveCorpus(corpusPath, buildCorpus([{ kind: 'asqa', path: data }, { kind: 'jsonl', path: noise }]).passages);

async function runWith(exclude: 'none' | 'own', questions: 'ambiguous' | 'disambiguated' = 'ambiguous') {
  const file = writeYaml(join(dir, `${exclude}-${questions}.yaml`), {
    dataset: { name: 'asqa', path: data, questions },
    pipeline: { name: 'vanilla-rag', options: { nShots: 0, nPassages: 3, poolSize: 3 } },
    llm: { provider: 'scripted', reply: 'It happened.', cache: join(dir, 'cache.sqlite') },
    retriever: { type: 'bm25', corpus: corpusPath, exclude },
    reader: 'none',
    tracking: { enabled: true, experiment: 'exclude-own' },
  });
  const composer = createComposer({ notify: () => undefined });
  const tracking = new FakeTracking();
  try {
    const config = loadExperimentConfig(file, composer.registry);
    const runDir = join(dir, 'runs', `${exclude}-${questions}`);
    const outcome = await runExperiment({ config, runDir, components: await composer.components(config), tracking: async () => tracking });
    expect(outcome.status).toBe('FINISHED');
    return {
      runDir,
      traces: readJsonl<Trace>(join(runDir, 'traces.jsonl')),
      results: readJsonl<ExampleResult>(join(runDir, 'results.jsonl')),
      params: [...tracking.runs.values()][0].params,
    };
  } finally {
    await composer.close();
  }
}

describe('a run with retriever.exclude', () => {
  const ownIds = () => {
    const corpus = readJsonl<{ id: string; annotated_for?: string[] }>(corpusPath);
    return (questionId: string) => new Set(corpus.filter((p) => p.annotated_for?.includes(`asqa:${questionId}`)).map((p) => p.id));
  };

  it('none: questions retrieve their own annotated passages (the leak)', async () => {
    const { traces, params } = await runWith('none');
    expect(params['retriever.exclude']).toBe('none');
    const own = ownIds();
    expect(traces.every((t) => t.retrievals[0].hits.some((h) => own(t.questionId).has(h.id)))).toBe(true);
  });

  it('own: no question retrieves its own passages; the param, the trace and the report say so', async () => {
    const { runDir, traces, params } = await runWith('own');
    expect(params['retriever.exclude']).toBe('own');
    const own = ownIds();
    expect(traces).toHaveLength(4);
    for (const t of traces) {
      expect(t.retrievals[0].retriever).toMatch(/ -own$/);
      expect(t.retrievals[0].hits).toHaveLength(3);
      expect(t.retrievals[0].hits.filter((h) => own(t.questionId).has(h.id))).toEqual([]);
    }
    // Other questions' passages remain retrievable (only the question's own are left out).
    expect(traces.some((t) => t.retrievals[0].hits.some((h) => h.id.startsWith('asqa:')))).toBe(true);
    expect(readFileSync(join(runDir, 'config.yaml'), 'utf8')).toMatch(/exclude: own/);
    expect(buildReport(runDir, { methods: methodCatalog() }).html).toMatch(/exclude: own/);
  });

  it('own, on disambiguated questions: a DQ never retrieves the passages annotated for its AQ', async () => {
    const { traces, results } = await runWith('own', 'disambiguated');
    const own = ownIds();
    expect(traces.map((t) => t.questionId)).toEqual(['q00.dq1', 'q00.dq2', 'q01.dq1', 'q01.dq2', 'q02.dq1', 'q02.dq2', 'q03.dq1', 'q03.dq2']);
    for (const t of traces) {
      const aq = t.questionId.replace(/\.dq\d+$/, '');
      expect(own(aq).size).toBeGreaterThan(0);
      expect(t.retrievals[0].hits.filter((h) => own(aq).has(h.id))).toEqual([]);
    }
    // Scored as one-interpretation questions: STR-EM over the DQ's own answers; ROUGE has no reference.
    expect(results.every((r) => typeof scoreValues(r).str_em === 'number')).toBe(true);
    expect(results.some((r) => typeof scoreValues(r).rougeLsum === 'number')).toBe(false);
  });
});
