import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { run as compareCommand } from '../../src/cli/commands/compare';
import { aggregateResults } from '../../src/experiments/bindings';
import { readComparison } from '../../src/report/compare';
import { result, writeRunDir } from '../plots/fixtures';

// Two run folders of 8 questions × 3 trials, as `ambiqa run` leaves them (metrics.json from
// aggregateResults over every row), compared through the command: the text output carries the
// variance split and the power grid, the file the two-level rows, the report the trials section.
const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-compare-trials-'));
const config = { dataset: { name: 'ambignq', split: 'dev' }, pipeline: { name: 'verify-edit' }, trials: 3 };

function runDir(name: string, score: (q: number, t: number) => number): string {
  const results = Array.from({ length: 8 }, (_, q) => [0, 1, 2].map((t) => result(`q${q}`, { em: score(q, t) }, t > 0 ? { trial: t } : {}))).flat();
  const metrics = { n: results.length, metrics: aggregateResults(results), usage: { llm_calls: results.length, cache_hits: 0, wall_seconds: 1 } };
  return writeRunDir(join(tmp, name), { name, config: { ...config, name }, results, traces: [], metrics });
}

describe('ambiqa compare on runs with trials', () => {
  it('prints the split and power, writes two-level rows and the report section', async () => {
    // Question q is right on trials t < (q % 3) + 1 in the hot run, t < q % 3 in the cold one.
    const cold = runDir('cold', (q, t) => (t < q % 3 ? 100 : 0));
    const hot = runDir('hot', (q, t) => (t < (q % 3) + 1 ? 100 : 0));
    const out = join(tmp, 'c', 'comparison.json');
    let printed = '';
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void (printed += a.join(' ') + '\n'));
    const err = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      expect(await compareCommand([cold, hot, '--out', out, '--no-tracking'])).toBe(0);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
    const c = readComparison(out);
    const row = c.rows[0];
    // Every question gains exactly one right trial of three: Δ = 33.3 on each of the 8 questions.
    expect(row.n).toBe(8);
    expect(row.meanDelta).toBeCloseTo(100 / 3, 10);
    expect(row.trials).toMatchObject({ baselineTrials: 3, runTrials: 3 });
    expect(c.runs.map((r) => [r.questions, r.rows, r.trials])).toEqual([[8, 24, 3], [8, 24, 3]]);
    expect(printed).toMatch(/\| hot \| em \| 8 \| 29\.2 \| 62\.5 \| \+33\.3 \[/);
    expect(printed).toContain('| run | metric | trials (baseline/run) | paired by | trial SD (baseline/run) | sampling | questions | SD of per-question Δ |');
    expect(printed).toContain('power, hot − cold, em');
    expect(printed).toContain('| needed for 80% power |');
    const html = readFileSync(join(tmp, 'c', 'report.html'), 'utf8');
    expect(html).toContain('Trials: sampling against questions');
    expect(html).toContain('over 3 trials (mean ± SD)');
  });
});
