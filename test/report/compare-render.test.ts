import { describe, expect, it } from 'vitest';
import { compareRuns, type CompareRunInput } from '../../src/metrics/compare';
import { comparisonMetrics, comparisonRunName } from '../../src/report/compare-mlflow';
import { renderComparisonReport } from '../../src/report/compare';
import { comparisonMarkdown } from '../../src/cli/commands/compare';
import { INJECTIONS } from '../plots/browser';
import { result } from '../plots/fixtures';

const dataset = { name: 'asqa', split: 'dev' };
const runA: CompareRunInput = { name: 'rag', config: { dataset, pipeline: { name: 'vanilla-rag' } }, results: [result('q1', { str_em: 0 }), result('q2', { str_em: 50 }, { output: 'same' })] };
const runB: CompareRunInput = {
  name: 'toc.pruneThreshold=0.3',
  config: { dataset, pipeline: { name: 'toc' } },
  results: [result('q1', { str_em: 100 }, { output: INJECTIONS.join('\n') }), result('q2', { str_em: 50 }, { output: 'same' })],
};

describe('the comparison report (rendering only)', () => {
  const c = compareRuns([runA, runB], { createdAt: 'fixed' });

  it('escapes model output and marks the changed rows for the filter', () => {
    const html = renderComparisonReport(c, { generatedAt: 'now' });
    const body = html.slice(html.indexOf('<body>'));
    for (const s of INJECTIONS) expect(body).not.toContain(s);
    expect(body).toContain('&lt;script&gt;window.__pwned = &quot;script&quot;&lt;/script&gt;');
    expect(body).toMatch(/<tr id="ex-q1" data-id="q1" class="changed">/);
    expect(body).toMatch(/<tr id="ex-q2" data-id="q2">/);
    expect(body).toContain('<input type="checkbox" class="changed-only"> answer changed (1)');
    // The delta column carries its value for sorting.
    expect(body).toContain('<td class="num pos" data-v="100">+100.0</td>');
  });

  it('names MLflow metrics and the run with keys MLflow accepts', () => {
    expect(c.runs.map((r) => r.key)).toEqual(['rag', 'toc.pruneThreshold_0.3']);
    expect(comparisonRunName(c)).toBe('compare.toc.pruneThreshold_0.3.vs.rag');
    const m = comparisonMetrics(c);
    expect(m['delta.str_em.toc.pruneThreshold_0.3']).toBe(50);
    expect(m['p.str_em.toc.pruneThreshold_0.3']).toBe(1); // one non-zero delta: p = 2/2
    expect(Object.keys(m).every((k) => /^[A-Za-z0-9_.-]+$/.test(k))).toBe(true);
  });

  it('prints the paired table as Markdown', () => {
    const md = comparisonMarkdown(c);
    // deltas 100, 0: sd = √(2·50²) = 70.7; (2.8016 · 70.7 / 50)² = 15.7 → 16 questions for 80% power.
    expect(md.split('\n')[2]).toBe('| toc.pruneThreshold=0.3 | str_em | 2 | 25.0 | 75.0 | +50.0 [0.0, 100.0] | 1.000 | 1.000 | 16 | 1 | 0 |');
  });
});
