import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createComposer } from '../../src/experiments/compose';
import { examplesDir } from '../../src/config/paths';
import { loadDataset } from '../../src/datasets';
import type { DatasetName, Example } from '../../src/datasets/types';
import { DisambigF1, type DisambigReader } from '../../src/metrics/disambig-f1';
import { scoreExample } from '../../src/metrics/example';
import { FeverAccuracy } from '../../src/metrics/fever';
import {
  defaultMetrics,
  familyOf,
  metricFamilies,
  metricNames,
  metricsFor,
  readerMetricNames,
  splitterMetricNames,
  withRequirements,
} from '../../src/metrics/registry';
import { RougeL, RougeLsum } from '../../src/metrics/rouge';
import type { Score } from '../../src/metrics/score';
import type { SentenceSplitter } from '../../src/metrics/sentences';
import { ExactMatch, F1 } from '../../src/metrics/squad';
import { StrEm, StrHit } from '../../src/metrics/str-em';

const datasets: DatasetName[] = ['asqa', 'ambignq', 'situatedqa', 'hotpotqa-adversarial', 'fever'];

describe('the metric registry', () => {
  it('has one family per metric, each in its own file citing its reference, with defaults among its metrics', () => {
    const seen = new Set<string>();
    for (const f of metricFamilies) {
      for (const m of f.metrics) {
        expect(seen.has(m), `${m} in two families`).toBe(false);
        seen.add(m);
      }
      for (const d of f.defaults) expect(f.metrics).toContain(d);
      expect(f.reference.length).toBeGreaterThan(10);
      expect(f.datasets.length).toBeGreaterThan(0);
    }
    expect(metricNames).toEqual(['em', 'f1', 'em_alt', 'f1_alt', 'str_em', 'str_hit', 'rougeL', 'rougeLsum', 'd_f1', 'dr', 'accuracy', 'auc', 'auc_logprob']);
    // Each family file both defines its scorer and exports its entry.
    const files: Record<string, string> = { squad: 'squad.ts', 'alternative-answers': 'alternative-answers.ts', 'str-em': 'str-em.ts', rouge: 'rouge.ts', 'disambig-f1': 'disambig-f1.ts', dr: 'dr.ts', fever: 'fever.ts', calibration: 'calibration.ts' };
    for (const f of metricFamilies) {
      const source = readFileSync(join(__dirname, '../../src/metrics', files[f.family]), 'utf8');
      expect(source, f.family).toMatch(/^\/\*\*/); // opens with the comment giving the definition
      expect(source, f.family).toMatch(new RegExp(`export const \\w+Family: MetricFamily`));
    }
  });

  it('is the table of docs/metrics.md: a row per registered metric, naming its family file', () => {
    const doc = readFileSync(join(__dirname, '../../docs/metrics.md'), 'utf8');
    const files: Record<string, string> = { squad: 'squad.ts', 'alternative-answers': 'alternative-answers.ts', 'str-em': 'str-em.ts', rouge: 'rouge.ts', 'disambig-f1': 'disambig-f1.ts', dr: 'dr.ts', fever: 'fever.ts', calibration: 'calibration.ts' };
    for (const name of metricNames) {
      const row = doc.split('\n').find((l) => l.startsWith('|') && l.includes(`(\`${name}\`)`));
      expect(row, `docs/metrics.md has no row for ${name}`).toBeDefined();
      expect(row, name).toContain(`\`${files[familyOf(name)!.family]}\``);
    }
  });

  it('derives per-dataset metrics, defaults, and what needs a reader or the splitter', () => {
    expect(defaultMetrics('asqa')).toEqual(['str_em', 'str_hit', 'rougeLsum', 'rougeL', 'd_f1', 'dr']);
    expect(defaultMetrics('fever')).toEqual(['accuracy']);
    expect(metricsFor('hotpotqa-adversarial')).toEqual(['em', 'f1', 'em_alt', 'f1_alt', 'auc', 'auc_logprob']);
    expect(defaultMetrics('hotpotqa-adversarial')).toEqual(['em', 'f1']);
    expect([...readerMetricNames].sort()).toEqual(['d_f1', 'dr']);
    expect([...splitterMetricNames].sort()).toEqual(['dr', 'rougeLsum']);
    expect(withRequirements(['dr'])).toEqual(['d_f1', 'rougeLsum', 'dr']);
    expect(familyOf('rougeLsum')?.family).toBe('rouge');
  });

  it('is what config validation and the bindings use', () => {
    const { registry } = createComposer({ notify: () => undefined });
    for (const d of datasets) {
      expect(registry.defaultMetrics(d)).toEqual(defaultMetrics(d));
      expect(registry.metricsFor?.(d)).toEqual(metricsFor(d));
    }
    expect([...(registry.readerMetrics ?? [])]).toEqual([...readerMetricNames]);
  });
});

describe('scoreExample is the family scorers, with their metadata', () => {
  const byLine: SentenceSplitter = { name: 'lines', split: (t) => t.split('\n') };
  const reader: DisambigReader = { name: 'first-word', read: async (_q, context) => context.split(' ')[0] };
  const asqa = loadDataset('asqa', join(examplesDir, 'asqa-mini.json'));
  const outputs = ['Argentina won the 2022 World Cup.\nSpain won in 2023.', 'Titanic (1997) by James Cameron.', ''];

  it('gives, for every ASQA example, exactly the values and metadata of the Scorer implementations', async () => {
    for (const [i, example] of asqa.entries()) {
      const output = outputs[i % outputs.length];
      const s = await scoreExample('asqa', example, { output }, defaultMetrics('asqa'), { reader, splitter: byLine });
      const expected: Score[] = [
        StrEm({ output, expected: example.qaPairs }),
        StrHit({ output, expected: example.qaPairs }),
        RougeLsum({ output, expected: example.longAnswers, splitter: byLine }),
        RougeL({ output, expected: example.longAnswers }),
        await DisambigF1({ output, expected: example.qaPairs, reader }),
      ];
      for (const e of expected) {
        expect(s.metrics[e.name], `${example.id} ${e.name}`).toBe(e.score);
        if (e.metadata) expect(s.metadata[e.name], `${example.id} ${e.name}`).toEqual(e.metadata);
      }
      expect(s.metadata.rougeLsum).toEqual({ sentence_splitter: 'lines' });
      expect(s.metadata.d_f1.reader).toBe('first-word');
      expect(s.metrics.dr).toBeCloseTo(Math.sqrt(s.metrics.d_f1 * s.metrics.rougeLsum), 10);
    }
  });

  it('computes the metrics a wanted one requires, and only those', async () => {
    const s = await scoreExample('asqa', asqa[0], { output: outputs[0] }, ['dr'], { reader, splitter: byLine });
    expect(Object.keys(s.metrics).sort()).toEqual(['d_f1', 'dr', 'rougeLsum']);
  });

  it('scores short answers and labels with the SQuAD and FEVER scorers', async () => {
    const example: Example = { id: 'h', dataset: 'hotpotqa-adversarial', question: 'q', answers: ['Sochi, Russia'], qaPairs: [], longAnswers: [], passages: [] };
    const s = await scoreExample('hotpotqa-adversarial', example, { answer: 'Sochi' }, ['em', 'f1']);
    expect(s.metrics).toEqual({ em: ExactMatch({ output: 'Sochi', expected: example.answers }).score, f1: F1({ output: 'Sochi', expected: example.answers }).score });
    const claim: Example = { id: 'c', dataset: 'fever', question: 'c', answers: [], qaPairs: [], longAnswers: [], passages: [], label: 'REFUTES' };
    const f = await scoreExample('fever', claim, { answer: 'false' }, ['accuracy']);
    const expected = FeverAccuracy({ output: 'false', expected: 'REFUTES' });
    expect(f.metrics.accuracy).toBe(expected.score);
    expect(f.predictedLabel).toBe('REFUTES');
  });
});
