import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { run as compareCommand } from '../../src/cli/commands/compare';
import { run as reportCommand } from '../../src/cli/commands/report';
import { main } from '../../src/cli/main';
import { readComparison } from '../../src/report/compare';
import { traceIdFor } from '../../src/tracking/otel-export';
import { getRun, listArtifacts, metric, param, searchRuns, tag } from '../experiments/helpers/mlflow';
import { INJECTIONS, launchBrowser, type Browser } from '../plots/browser';
import { result, run, summary, tocNode, tocTrace, trace, writeRunDir } from '../plots/fixtures';

// Two ASQA runs of the example questions (examples/asqa-mini.json, so the gold disambiguations are
// found), one of them answering with script injections, compared through the CLI; the report is
// opened in headless chromium: rows render, the "answer changed" filter works, Δ sorts, the
// trace of each run opens, and no script from model output runs.
const root = resolve(__dirname, '../..');
const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-compare-'));
const data = join(root, 'examples', 'asqa-mini.json');
const ids = Object.keys((JSON.parse(readFileSync(data, 'utf8')) as { dev: Record<string, unknown> }).dev);
const dataset = { name: 'asqa', split: 'dev', path: data };

function ragDir(): string {
  const results = ids.map((id, i) => result(id, { str_em: i % 2 === 0 ? 0 : 50, rougeLsum: 20 + i }, { output: i === 0 ? 'Argentina won.' : `answer ${i}` }));
  const traces = ids.map((id) => trace('vanilla-rag', id, { kind: 'baseline' } as never));
  return writeRunDir(join(tmp, 'runs', 'rag'), run('rag', { name: 'rag', dataset, pipeline: { name: 'vanilla-rag' } }, results, traces));
}

function tocDir(): string {
  const results = ids.map((id, i) =>
    result(id, { str_em: i % 2 === 0 ? 100 : 50, rougeLsum: 25 + i }, {
      output: i === 0 ? 'Argentina won the men\u2019s cup and Spain the women\u2019s.' : i === 1 ? INJECTIONS.join('\n') : `answer ${i}`,
      usage: summary({ llmCalls: 4 }),
    }),
  );
  const traces = ids.map((id, i) => {
    const t = tocTrace(id, [tocNode(0, null, null), tocNode(1, 0, 'Argentina')]);
    if (i === 1) {
      t.llmCalls = [{
        index: 0,
        purpose: 'toc.expand',
        messages: [{ role: 'user', content: `Passages: ${INJECTIONS.join(' ')}` }],
        params: { temperature: 0.7, topP: 1, maxTokens: 64, stop: [], n: 1, seed: null },
        completions: [{ text: INJECTIONS[2], finishReason: 'stop', promptTokens: 10, completionTokens: 5, latencySeconds: 0.1, cacheHit: false }],
        wallSeconds: 0.1,
      }];
    }
    return t;
  });
  const data_ = run('toc', { name: 'toc', dataset, pipeline: { name: 'toc' } }, results, traces);
  data_.metrics!.usage = { llm_calls: 4 * ids.length, prompt_tokens: 4000, completion_tokens: 400, cache_hits: 0, wall_seconds: 60, cost_usd: 0.0123 };
  return writeRunDir(join(tmp, 'runs', 'toc'), data_, {
    'mlflow.json': JSON.stringify({ experimentName: 'e', experimentId: '7', runId: 'abc123', runName: 'toc', runUrl: 'http://127.0.0.1:5000/#/experiments/7/runs/abc123' }),
  });
}

describe('ambiqa compare (CLI)', () => {
  let rag: string;
  let toc: string;
  const out = join(tmp, 'cmp', 'comparison.json');
  const html = join(tmp, 'cmp', 'report.html');
  let printed = '';

  beforeAll(async () => {
    rag = ragDir();
    toc = tocDir();
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void (printed += a.join(' ') + '\n'));
    try {
      expect(await compareCommand([rag, toc, '--out', out, '--report', html, '--no-tracking'])).toBe(0);
    } finally {
      log.mockRestore();
    }
  });

  it('prints the paired table and the runs’ usage with cost, and writes a valid comparison file', () => {
    expect(printed).toMatch(/\| toc \| str_em \| 6 \| 25\.0 \| 75\.0 \| \+50\.0 \[/);
    expect(printed).toContain('toc: 6 questions (0 failed), 24 LLM calls, 4400 tokens, $0.0123, 60 s');
    const c = readComparison(out);
    expect(c.baseline).toBe('rag');
    // str_em deltas 100, 0, 100, 0, 100, 0: three non-zero → |sum| ≥ 300 in 2 of 8 flips.
    const strEm = c.rows.find((r) => r.metric === 'str_em')!;
    expect(strEm).toMatchObject({ n: 6, meanDelta: 50, p: 0.25, pMethod: 'exact' });
    expect(c.runs[1].usage?.cost_usd).toBe(0.0123);
    // Gold found through the run's dataset.path: hits per disambiguation.
    expect(c.questions[0].dqs?.length).toBeGreaterThan(1);
    expect(c.questions[0].answers.toc.hits?.slice(0, 2)).toEqual([true, true]);
    expect(c.questions[0].answers.rag.hits?.slice(0, 2)).toEqual([true, false]);
  });

  it('refuses runs of different datasets in one line naming both runs', async () => {
    const other = writeRunDir(join(tmp, 'runs', 'fever'), run('fever-run', { name: 'fever-run', dataset: { name: 'fever' }, pipeline: { name: 'verify-edit' } }, [result(ids[0], { accuracy: 100 })], []));
    const errors: string[] = [];
    const err = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void errors.push(a.join(' ')));
    try {
      expect(await main(['compare', rag, other, '--no-tracking', '--out', join(tmp, 'x.json')])).toBe(1);
    } finally {
      err.mockRestore();
    }
    expect(errors[0].split('\n')[0]).toBe('ambiqa compare: cannot compare fever-run with rag: they are runs of different datasets (fever/dev vs asqa/dev asqa-mini.json)');
    expect(existsSync(join(tmp, 'x.json'))).toBe(false);
  });

  it('`ambiqa report comparison.json` renders the same side-by-side report', async () => {
    const again = join(tmp, 'cmp', 'again.html');
    expect(await reportCommand([out, '--out', again])).toBe(0);
    const text = readFileSync(again, 'utf8');
    expect(text).toContain('<table class="examples side-by-side">');
    for (const s of INJECTIONS) expect(text.replace(/<script>[\s\S]*?<\/script>/g, '')).not.toContain(s);
  });

  describe('the report in a real browser', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchBrowser();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });

    it('renders a row per question, filters to "answer changed", sorts by delta, opens traces; no injected script runs', async () => {
      const { page, dialogs } = await browser.open(html);
      await page.waitForSelector('.js-plotly-plot', { timeout: 30_000 });
      const rows = page.locator('table.side-by-side tbody tr');
      expect(await rows.count()).toBe(ids.length);
      expect(await page.locator('.count').textContent()).toBe(`${ids.length} of ${ids.length} examples`);
      // The paired table: one row per metric, usage with cost in the runs table.
      expect(await page.locator('table.paired tbody tr').count()).toBe(2);
      expect(await page.locator('table.runs tbody tr', { hasText: 'toc' }).locator('td').nth(8).textContent()).toBe('0.0123');
      // Every question's answer changed except the ones answered identically ("answer i", i ≥ 2).
      await page.locator('input.changed-only').check();
      const shown = await rows.evaluateAll((rs) => rs.filter((r) => (r as HTMLElement).style.display !== 'none').map((r) => r.getAttribute('data-id')));
      expect(shown).toEqual(ids.slice(0, 2));
      await page.locator('input.changed-only').uncheck();
      expect(await page.locator('.count').textContent()).toBe(`${ids.length} of ${ids.length} examples`);
      // Sort by Δ str_em descending: the +100 rows first.
      const head = page.locator('table.side-by-side th', { hasText: /^Δ str_em$/ });
      await head.click();
      await head.click();
      const order = await rows.evaluateAll((rs) => rs.map((r) => r.querySelector('td.num[data-v]')?.getAttribute('data-v')));
      expect(order.slice(0, 2)).toEqual(['100', '100']);
      // The injected answer shows as text, and its trace opens as text.
      const evil = page.locator(`tr[data-id="${ids[1]}"]`);
      expect(await evil.locator('td.answer').nth(1).textContent()).toContain(INJECTIONS.join('\n'));
      await evil.locator('button.trace-btn[data-trace^="toc/"]').click();
      const detail = await page.locator('tr.detail').allTextContents();
      expect(detail.join('\n')).toContain(`Passages: ${INJECTIONS.join(' ')}`);
      expect(await page.locator('tr.detail img, tr.detail svg, tr.detail script, td.answer img, td.answer svg').count()).toBe(0);
      // Another run's button on the same row switches the trace view.
      await evil.locator('button.trace-btn[data-trace^="rag/"]').click();
      expect(await page.locator('tr.detail').count()).toBe(1);
      // Links to MLflow where the run was tracked: the question's trace in the run's experiment.
      const link = await evil.locator('a', { hasText: 'MLflow trace' }).getAttribute('href');
      // (The host is the MLflow being browsed now, as in every report; the id is the question's trace id.)
      expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#\/experiments\/7\/traces\?selectedEvaluationId=tr-[0-9a-f]{32}$/);
      expect(link!.endsWith(`tr-${traceIdFor('abc123', ids[1])}`)).toBe(true);
      await page.waitForTimeout(300);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
      expect(dialogs).toEqual([]);
    }, 120_000);
  });
});

const uri = inject('mlflowTrackingUri');

describe.skipIf(!uri && !process.env.CI)('ambiqa compare logs the comparison as an MLflow run (real server)', () => {
  it('tags it ambiqa.kind=comparison, names the compared runs, logs delta/CI/p metrics and attaches the files', async () => {
    const saved = process.env.MLFLOW_TRACKING_URI;
    process.env.MLFLOW_TRACKING_URI = uri;
    const experiment = `test-compare-${Date.now()}`;
    const out = join(tmp, 'tracked', 'comparison.json');
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      expect(await compareCommand([ragDir(), tocDir(), '--out', out, '--experiment', experiment])).toBe(0);
    } finally {
      log.mockRestore();
      if (saved === undefined) delete process.env.MLFLOW_TRACKING_URI;
      else process.env.MLFLOW_TRACKING_URI = saved;
    }
    const c = readComparison(out);
    const runs = await searchRuns(uri, experiment);
    expect(runs).toHaveLength(1);
    const r = await getRun(uri, runs[0].info.run_id);
    expect(c.mlflow?.runId).toBe(r.info.run_id);
    expect(tag(r, 'ambiqa.kind')).toBe('comparison');
    expect(tag(r, 'ambiqa.compare.baseline')).toBe('rag');
    expect(tag(r, 'ambiqa.compare.run.toc')).toBe('abc123');
    expect(param(r, 'run_id.toc')).toBe('abc123');
    expect(param(r, 'run_id.rag')).toBe('not tracked');
    const row = c.rows.find((x) => x.metric === 'str_em')!;
    expect(metric(r, 'delta.str_em.toc')).toBe(50);
    expect(metric(r, 'delta.str_em.toc.ci_low')).toBeCloseTo(row.ciLow, 9);
    expect(metric(r, 'delta.str_em.toc.ci_high')).toBeCloseTo(row.ciHigh, 9);
    expect(metric(r, 'p.str_em.toc')).toBe(0.25);
    expect(metric(r, 'answer_changed.toc')).toBe(2);
    expect(await listArtifacts(uri, r.info.run_id)).toEqual(expect.arrayContaining(['comparison.json', 'report.html']));
    // The report written after logging links the comparison's own MLflow run.
    expect(readFileSync(join(tmp, 'tracked', 'report.html'), 'utf8')).toContain(`MLflow run of this comparison: <a href="${uri}`);
  }, 120_000);
});
