import { scoreValues } from '../../src/run-files';
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReport, loadRun, loadRunOrSweep, loadSweep, writeReport } from '../../src/report/index';
import { INJECTIONS, launchBrowser, type Browser } from '../plots/browser';
import { result, run, summary, tocNode, tocTrace, veTrace, writeRunDir } from '../plots/fixtures';
import { methodCatalog } from '../../src/pipelines/registry';

const root = resolve(__dirname, '../..');
const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-report-'));

/** A VE run whose outputs, questions and prompts carry script injections. */
function evilVeRunDir(): string {
  const traces = [veTrace('a', { votes: 5 }), veTrace('b', { votes: 2 }), veTrace('c', { votes: 4 })];
  traces[1].llmCalls = [
    {
      index: 0,
      purpose: 've.cot',
      messages: [{ role: 'user', content: `Passage: ${INJECTIONS.join(' ')}` }],
      params: { temperature: 0.7, topP: 1, maxTokens: 64, stop: [], n: 1, seed: null },
      completions: [{ text: INJECTIONS[2], finishReason: 'stop', promptTokens: 10, completionTokens: 5, latencySeconds: 0.1, cacheHit: false }],
      wallSeconds: 0.1,
    },
  ];
  const results = [
    result('a', { em: 100, f1: 100 }, { output: 'Paris' }),
    result('b', { em: 0, f1: 20 }, { output: INJECTIONS.join('\n'), question: `Who? ${INJECTIONS[1]}`, usage: summary({ llmCalls: 9 }) }),
    result('c', { em: 100, f1: 100 }, { output: 'Lyon' }),
    result('d<script>window.__pwned="id"</script>', { em: 0, f1: 0 }, { error: `boom ${INJECTIONS[0]}` }),
  ];
  return writeRunDir(
    join(tmp, 'runs', 've-evil'),
    run('ve-evil', { name: 've-evil', dataset: { name: 'hotpotqa-adversarial', path: '/nonexistent.json' }, pipeline: { name: 'verify-edit' } }, results, traces),
  );
}

describe('run and sweep directories', () => {
  it('reads a run dir, keeping the last record per id and ignoring a torn last line', () => {
    const dir = writeRunDir(join(tmp, 'runs', 'plain'), run('plain', { name: 'plain' }, [result('q1', { em: 0 }), result('q2', { em: 100 })], []));
    appendFileSync(join(dir, 'results.jsonl'), JSON.stringify(result('q1', { em: 100 })) + '\n{"id": "q3", "trunc');
    const loaded = loadRun(dir);
    expect(loaded.results.map((r) => [r.id, scoreValues(r).em])).toEqual([
      ['q1', 100],
      ['q2', 100],
    ]);
    expect(loaded.name).toBe('plain');
    expect(loaded.metrics?.n).toBe(2);
  });

  it('reads a sweep dir with its summary order and swept values', () => {
    const sweepDir = join(tmp, 'sweeps', 've-threshold');
    const points = [3, 1, 2];
    for (const t of points) {
      writeRunDir(
        join(sweepDir, 'runs', `threshold=${t}`),
        run(`ve.threshold=${t}`, { name: `ve.threshold=${t}`, pipeline: { name: 'verify-edit', options: { threshold: t } } },
          [result('q1', { em: t > 1 ? 100 : 0 }), result('q2', { em: 0 })],
          [veTrace('q1', { votes: 2, threshold: t }), veTrace('q2', { votes: 4, threshold: t })]),
      );
    }
    writeFileSync(join(sweepDir, 'summary.json'), JSON.stringify([1, 2, 3].map((t) => ({ label: `threshold=${t}`, values: { threshold: t }, status: 'FINISHED', runDir: join(sweepDir, 'runs', `threshold=${t}`) }))));
    writeFileSync(join(sweepDir, 'sweep.yaml'), 'name: ve-threshold\n');
    const sweep = loadSweep(sweepDir);
    expect(sweep.runs.map((r) => r.sweepValues)).toEqual([{ threshold: 1 }, { threshold: 2 }, { threshold: 3 }]);
    expect(sweep.axes).toEqual(['threshold']);
    expect(loadRunOrSweep(sweepDir).kind).toBe('sweep');
    const report = buildReport(sweepDir, { methods: methodCatalog() });
    expect(report.figures.figures.map((f) => f.name)).toEqual(
      expect.arrayContaining(['threshold-ablation', 'cost-quality-tokens', 'consistency-kde-first-point']),
    );
    expect(report.html).toContain('<th>threshold</th>');
    // Sweeps leave traces out by default.
    expect(report.html).not.toContain('id="ambiqa-traces"');
  });

  it('says what is wrong with a directory that is neither', () => {
    mkdirSync(join(tmp, 'empty'), { recursive: true });
    expect(() => loadRunOrSweep(join(tmp, 'empty'))).toThrow(/neither a run nor a sweep directory/);
    expect(() => loadRunOrSweep(join(tmp, 'missing'))).toThrow(/does not exist/);
    const bad = join(tmp, 'runs', 'bad');
    mkdirSync(bad, { recursive: true });
    writeFileSync(join(bad, 'results.jsonl'), '{"id":"x"}\nnot json\n{"id":"y"}\n');
    expect(() => loadRun(bad)).toThrow(/results\.jsonl:2: not valid JSON/);
  });
});

describe('HTML report', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('escapes every model output, question, id and passage: injected script never runs', async () => {
    const dir = evilVeRunDir();
    const report = buildReport(dir, { methods: methodCatalog() });
    expect(report.notes.join('\n')).toMatch(/gold answers not shown: dataset file \/nonexistent\.json not found/);
    const html = report.html.replace(readFileSync(join(root, 'node_modules/plotly.js-dist-min/plotly.min.js'), 'utf8'), '');
    for (const s of INJECTIONS) expect(html).not.toContain(s);
    expect(html).not.toContain('<img src=x');
    const out = writeReport(report, join(tmp, 'evil-report.html'));
    const { page, dialogs } = await browser.open(out);
    await page.waitForSelector('.js-plotly-plot', { timeout: 30_000 });
    // Open every trace: the trace view must show prompts and completions as text.
    for (const button of await page.locator('button.trace-btn').all()) await button.click();
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(await page.locator('tr[data-id="b"] td').nth(2).textContent()).toBe(INJECTIONS.join('\n'));
    const traceText = await page.locator('tr.detail').allTextContents();
    expect(traceText.join('\n')).toContain(`Passage: ${INJECTIONS.join(' ')}`);
    expect(await page.locator('tr.detail img, tr.detail svg, tr.detail script').count()).toBe(0);
  });

  it('has config, metrics with CIs, usage, figures and a sortable, filterable example table', async () => {
    const dir = evilVeRunDir();
    const out = writeReport(buildReport(dir, { methods: methodCatalog() }), join(tmp, 'report.html'));
    const { page } = await browser.open(out);
    const headings = await page.locator('h2').allTextContents();
    expect(headings).toEqual(['Metrics', 'Decisions', 'Usage', 'Figures', 'Examples', 'Config']);
    // metricsOf() in the fixtures gives CI = mean ± 5.
    const emRow = page.locator('table.metrics tr', { hasText: 'em' }).first();
    expect(await emRow.locator('td').allTextContents()).toEqual(['em', '50.0', '[45.0, 55.0]', '4']);
    expect(await page.locator('section.figure h3').allTextContents()).toEqual([
      'Consistency of correct and incorrect predictions',
      'Threshold ablation (re-applied to this run)',
    ]);
    await page.waitForFunction(() => document.querySelectorAll('.js-plotly-plot').length === 2, undefined, { timeout: 30_000 });
    const ids = () => page.locator('table.examples tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));
    expect(await page.locator('.count').textContent()).toBe('4 of 4 examples');
    // Sort by f1 (ascending, then descending).
    const f1Header = page.locator('table.examples th', { hasText: /^f1$/ });
    await f1Header.click();
    expect((await ids()).slice(0, 2)).toEqual(['d<script>window.__pwned="id"</script>', 'b']);
    await f1Header.click();
    expect((await ids()).at(-1)).toBe('d<script>window.__pwned="id"</script>');
    await page.locator('input[type=search]').fill('lyon');
    expect(await page.locator('.count').textContent()).toBe('1 of 4 examples');
    await page.locator('input[type=search]').fill('');
    await page.locator('input.errors-only').check();
    expect(await page.locator('.count').textContent()).toBe('1 of 4 examples');
    expect(await page.locator('pre').first().textContent()).toContain('name: ve-evil');
  });
});

describe('gold answers and ToC figures', () => {
  it('shows gold from the dataset file and draws the tree and the pruning effect', () => {
    const data = join(tmp, 'asqa.json');
    writeFileSync(
      data,
      JSON.stringify({
        dev: {
          q1: {
            ambiguous_question: 'Who won?',
            qa_pairs: [
              { question: 'Who won in 2022?', short_answers: ['Argentina'] },
              { question: 'Who won in 2023?', short_answers: ['Spain'] },
            ],
            annotations: [{ long_answer: 'Argentina in 2022, Spain in 2023.' }],
            wikipages: [],
          },
        },
      }),
    );
    const dir = writeRunDir(
      join(tmp, 'runs', 'toc'),
      run('toc', { name: 'toc', dataset: { name: 'asqa', path: data, split: 'dev' } },
        [result('q1', { str_em: 50, dr: 30 })],
        [tocTrace('q1', [tocNode(0, null, null), tocNode(1, 0, 'Argentina'), tocNode(2, 0, 'Brazil', { verdict: false, pruned: true })])]),
    );
    const report = buildReport(dir, { methods: methodCatalog() });
    expect(report.notes).toEqual([]);
    expect(report.figures.figures.map((f) => f.name)).toEqual(['clarification-tree', 'pruning-effect']);
    const pruning = report.figures.figures[1].figure;
    // The judge-rejected node is its own group (Answer-F1 0 for "Brazil"), beside the kept ones.
    expect(pruning.data[0].x).toEqual(['no pruning', 'dedup only', 'self-verification', 'pruned']);
    expect(pruning.data[0].y).toEqual([50, 50, 100, 0]);
    expect(report.html).toContain('Who won in 2022? → Argentina');
  });
});

describe('VE threshold ablation in a report', () => {
  it('is exact at every threshold when the gold answers score the recorded majority answers', () => {
    const data = join(tmp, 'hotpot.json');
    const rec = (id: string, answer: string) => ({ qas_id: id, question: `q ${id}?`, answer, paragraphs: [{ title: 't', context: 'c', is_supp: true }] });
    writeFileSync(data, JSON.stringify([rec('a', 'm-a'), rec('b', 'Paris'), rec('c', 'm-c')]));
    // threshold = n = 5: b and c were edited; c's edit broke a right majority answer.
    const traces = [veTrace('a', { votes: 5, threshold: 5 }), veTrace('b', { votes: 2, threshold: 5, final: 'paris' }), veTrace('c', { votes: 4, threshold: 5, final: 'Lyon' })];
    const results = [result('a', { em: 100 }), result('b', { em: 100 }), result('c', { em: 0 })];
    const dir = writeRunDir(join(tmp, 'runs', 've-exact'), run('ve-exact', { name: 've-exact', dataset: { name: 'hotpotqa-adversarial', path: data } }, results, traces));
    const report = buildReport(dir, { methods: methodCatalog() });
    expect(report.notes).toEqual([]);
    const fig = report.figures.figures.find((f) => f.name === 'threshold-ablation')!.figure;
    expect(fig.data[0].x).toEqual([1, 2, 3, 4, 5]);
    // t ≤ 2: nothing edited, majority answers m-a ✓, m-b ✗, m-c ✓; t 3–4: b edited (✓); t 5: as recorded.
    expect(fig.data[0].y!.map((v) => Math.round(Number(v)))).toEqual([67, 67, 100, 100, 67]);
    expect(fig.data[2].y).toEqual([0, 0, 100 / 3, 100 / 3, 200 / 3]);
  });
});

describe('ambiqa report (CLI)', () => {
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [join(root, 'bin/ambiqa.mjs'), 'report', ...args], { cwd: root, encoding: 'utf8', timeout: 120_000 });

  it('writes the report and HTML figure files', () => {
    const dir = evilVeRunDir();
    const out = join(tmp, 'cli', 'r.html');
    const figs = join(tmp, 'cli', 'figs');
    const res = cli(dir, '--out', out, '--figures-dir', figs, '--no-png');
    expect(res.stderr).toMatch(/note: gold answers not shown/);
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/wrote .*r\.html \(2 figures/);
    expect(existsSync(out)).toBe(true);
    expect(existsSync(join(figs, 'consistency-kde.html'))).toBe(true);
  });

  it('fails with a message naming the problem', () => {
    const res = cli(join(tmp, 'nope'));
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/ambiqa report: .*nope does not exist/);
    expect(res.stderr).not.toMatch(/at .*\.ts:\d+/);
    expect(cli(tmp, '--traces', 'all').stderr).toMatch(/--traces: 'all' is not one of compact, full, none/);
    expect(cli('--help').stdout).toMatch(/usage: ambiqa report/);
  });
});
