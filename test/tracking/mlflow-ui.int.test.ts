import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as reportCommand } from '../../src/cli/commands/report';
import { run as sweepCommand } from '../../src/cli/commands/sweep';
import { readJsonl } from '../../src/common/jsonl';
import { CHROMIUM_ARGS, chromiumPath } from '../../src/plots/export';
import { MlflowClient } from '../../src/tracking/client';
import type { Trace } from '../../src/trace/types';
import { writeCorpus, writeHotpot, writeYaml } from '../experiments/helpers/files';
import { getRun, listArtifacts, searchRuns, tag, type RestRun } from '../experiments/helpers/mlflow';
import { trackingUri, uniqueName } from './helpers';

/**
 * End to end, as a researcher sees it: a Verify-and-Edit threshold sweep with the scripted model
 * is logged to a real MLflow server by the real CLI, then
 *
 * - through MLflow's REST API: each child's traces are found by run (one per question, with a
 *   span per LLM call), and the parent has the metric-vs-threshold history;
 * - in headless Chromium, in MLflow's own UI: the run page shows params, metrics, description and
 *   dataset; its Traces tab lists one trace per question, and a trace's detail shows the LLM
 *   spans; the parent's Model metrics tab draws the ablation curve;
 * - an `ambiqa report` page renders its figures without a single request leaving the machine.
 *
 * Screenshots go to artifacts/test-screenshots/ (look at them when a UI change breaks a step).
 */
const uri = trackingUri();
const QUESTIONS = 3;
const THRESHOLDS = [1, 2, 3, 4, 5];
const SHOTS = resolve('artifacts', 'test-screenshots');
const hasChromium = existsSync(chromiumPath());

describe.skipIf(!uri || (!hasChromium && !process.env.CI))('MLflow UI and report in a real browser', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-mlflow-ui-'));
  const experiment = uniqueName('ui');
  const saved = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, uri: process.env.MLFLOW_TRACKING_URI };
  const client = new MlflowClient(uri);
  let parent: RestRun;
  let children: RestRun[];
  let context: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
    process.env.MLFLOW_TRACKING_URI = uri;
    const config = writeYaml(join(dir, 've-threshold.yaml'), {
      description: 'Verify-and-Edit threshold ablation on three questions (scripted model).',
      dataset: { name: 'hotpotqa-adversarial', path: writeHotpot(dir, QUESTIONS) },
      pipeline: { name: 'verify-edit', options: { n: 5, nShots: 0, verifyShots: 0 } },
      llm: {
        provider: 'scripted',
        cycle: ['Festival is in Paris. So the answer is Paris.', 'It is in Lyon. So the answer is Lyon.', 'It is held in Nice. So the answer is Nice.'],
        replies: {
          've.verifying-question': 'Where is the festival held?',
          've.verifying-answer': 'The festival is held in Paris.',
          've.answer': 'The festival is held in Paris. So the answer is Paris.',
        },
        cache: join(dir, 'cache.sqlite'),
      },
      retriever: { type: 'bm25', corpus: writeCorpus(dir) },
      tracking: { experiment },
      sweep: { 'pipeline.options.threshold': THRESHOLDS },
    });
    expect(await sweepCommand([config, '--quiet'])).toBe(0);
    const runs = await searchRuns(uri, experiment);
    parent = runs.find((r) => tag(r, 'ambiqa.sweep.role') === 'parent')!;
    children = runs.filter((r) => tag(r, 'mlflow.parentRunId') === parent.info.run_id);
    mkdirSync(SHOTS, { recursive: true });
    profile = mkdtempSync(join(tmpdir(), 'ambiqa-test-chromium-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS, viewport: { width: 1400, height: 900 } });
    // MLflow 3.17 opens its assistant side panel on a first visit; keep it closed so screenshots show the page.
    await context.addInitScript(() => {
      localStorage.setItem('mlflow.assistant.fab.autoOpenedOnFirstLoad_v1', 'true');
      localStorage.setItem('mlflow.assistant.panelOpen_v1', 'false');
    });
  }, 600_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', saved.artifacts], ['MLFLOW_TRACKING_URI', saved.uri]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  const child = (threshold: number) => children.find((c) => tag(c, 'ambiqa.sweep.pipeline.options.threshold') === String(threshold))!;
  const tracesOfRun = (run: RestRun) => readJsonl<Trace>(join(tag(run, 'ambiqa.run_dir')!, 'traces.jsonl'));

  it('REST: a finished run\'s traces are found by run, one per question, with a span per LLM call', async () => {
    expect(children).toHaveLength(THRESHOLDS.length);
    for (const run of children) {
      const { traces } = await client.searchTraces({ experimentIds: [run.info.experiment_id], runId: run.info.run_id });
      const local = tracesOfRun(run);
      expect(traces).toHaveLength(QUESTIONS);
      expect(traces.map((t) => JSON.parse(t.requestPreview).question_id).sort()).toEqual(local.map((t) => t.questionId).sort());
      for (const t of traces) {
        const questionId = JSON.parse(t.requestPreview).question_id as string;
        const { spans } = await client.getTrace(t.traceId);
        const llmSpans = spans.filter((s) => s.attributes['mlflow.spanType'] === 'CHAT_MODEL');
        expect(llmSpans).toHaveLength(local.find((l) => l.questionId === questionId)!.llmCalls.length);
        expect(t.assessments.map((a) => a.name).sort()).toEqual(['em', 'f1']);
      }
    }
  });

  it('REST: the sweep parent has each metric against the swept threshold, and every run its dataset, description, model and figures', async () => {
    const res = await fetch(`${uri}/api/2.0/mlflow/metrics/get-history?run_id=${parent.info.run_id}&metric_key=llm_calls`);
    const history = ((await res.json()) as { metrics: Array<{ step: number; value: number }> }).metrics;
    expect(history.map((m) => m.step).sort()).toEqual(THRESHOLDS);
    for (const t of THRESHOLDS) {
      const own = (await getRun(uri, child(t).info.run_id)).data.metrics!.find((m) => m.key === 'llm_calls')!.value;
      expect(history.find((m) => m.step === t)!.value).toBe(own);
    }
    const run = (await client.getRun(child(3).info.run_id));
    expect(run.tags['mlflow.note.content']).toMatch(/threshold ablation/);
    expect(run.tags['ambiqa.llm.model']).toBe('scripted-model');
    const raw = (await (await fetch(`${uri}/api/2.0/mlflow/runs/get?run_id=${run.info.runId}`)).json()) as { run: { inputs?: { dataset_inputs?: Array<{ dataset: { name: string; profile: string } }> } } };
    const dataset = raw.run.inputs?.dataset_inputs?.[0]?.dataset;
    expect(dataset?.name).toBe('hotpotqa-adversarial-dev');
    expect(JSON.parse(dataset!.profile)).toMatchObject({ num_rows: QUESTIONS, split: 'dev' });
    const files = await listArtifacts(uri, run.info.runId);
    expect(files).toContain('figures');
    const figures = (await client.listArtifacts(run.info.runId, 'figures')).map((f) => f.path);
    expect(figures).toEqual(expect.arrayContaining(['figures/consistency-kde.html', 'figures/consistency-kde.png', 'figures/threshold-ablation.html', 'figures/threshold-ablation.png']));
    const parentFigures = (await client.listArtifacts(parent.info.run_id, 'figures')).map((f) => f.path);
    expect(parentFigures).toEqual(expect.arrayContaining(['figures/threshold-ablation.html', 'figures/threshold-ablation.png']));
  });

  async function openMlflow(path: string): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${uri}/${path}`, { waitUntil: 'load', timeout: 60_000 });
    return page;
  }

  it('UI: the run page shows params, metrics, description and dataset; the Traces tab one trace per question with LLM spans', async () => {
    const run = child(3);
    const page = await openMlflow(`#/experiments/${run.info.experiment_id}/runs/${run.info.run_id}`);
    try {
      await page.getByText('pipeline.options.threshold', { exact: true }).waitFor({ timeout: 60_000 });
            const body = await page.locator('body').innerText();
      for (const text of ['Parameters', 'Metrics', 'llm_calls', 'em_ci_low', 'hotpotqa-adversarial-dev', 'Verify-and-Edit threshold ablation on three questions']) expect(body).toContain(text);
      await page.screenshot({ path: join(SHOTS, 'mlflow-run-page.png') });

      await page.getByRole('tab', { name: 'Traces' }).click();
      const questions = tracesOfRun(run).map((t) => t.question);
      for (const q of questions) await page.getByText(q).first().waitFor({ timeout: 60_000 });
      const listed = await page.locator('body').innerText();
      expect(listed.match(/tr-[0-9a-f]{32}/g)?.length).toBe(QUESTIONS);
            await page.screenshot({ path: join(SHOTS, 'mlflow-run-traces.png') });

      await page.getByText(questions[1]).first().click();
      await page.getByText('llm ve.cot').first().waitFor({ timeout: 60_000 });
      const detail = await page.locator('body').innerText();
      for (const span of ['llm ve.cot', 'llm ve.verifying-question', 'llm ve.answer', 'retrieve ve.retrieve', 'decisions']) expect(detail).toContain(span);
      await page.getByText('llm ve.cot').first().click();
      await page.waitForTimeout(1000);
            await page.screenshot({ path: join(SHOTS, 'mlflow-trace-detail.png') });
    } finally {
      await page.close();
    }
  }, 180_000);

  it('UI: the sweep parent\'s Model metrics tab draws each metric against the threshold', async () => {
    const page = await openMlflow(`#/experiments/${parent.info.experiment_id}/runs/${parent.info.run_id}/model-metrics`);
    try {
      // One chart per headline metric of the parent, each a line over the five thresholds (steps).
      // MLflow draws only the chart cards in view, and the parent also carries the paired deltas
      // against the reference point (delta.*, p.*), so the page is made tall enough to hold them all.
      await page.setViewportSize({ width: 1400, height: 6000 });
      for (const metric of ['em', 'f1', 'llm_calls', 'cache_hits']) await page.getByText(`ve-threshold (${metric})`).first().waitFor({ timeout: 60_000 });
      await page.setViewportSize({ width: 1400, height: 900 });
      expect(await page.locator('body').innerText()).toContain('Step');
      expect(await page.locator('svg path').count()).toBeGreaterThan(8);
      await page.screenshot({ path: join(SHOTS, 'mlflow-sweep-charts.png') });
    } finally {
      await page.close();
    }
  }, 120_000);

  it('report: its figures render and no request leaves the machine', async () => {
    const sweepDir = tag(parent, 'ambiqa.sweep_dir')!;
    const out = join(dir, 'report.html');
    expect(await reportCommand([sweepDir, '--out', out])).toBe(0);
    const page = await context.newPage();
    const outside: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('file://') || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      outside.push(url);
      return route.abort();
    });
    try {
      await page.goto(`file://${out}`, { waitUntil: 'load', timeout: 60_000 });
      await page.waitForFunction(() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0, undefined, { timeout: 60_000 });
      const drawn = await page.evaluate(() =>
        Array.from(document.querySelectorAll('.js-plotly-plot')).map((p) => (p as HTMLElement).querySelectorAll('path, circle, rect').length),
      );
      expect(drawn.length).toBeGreaterThanOrEqual(2);
      expect(drawn.every((n) => n > 0)).toBe(true);
      const html = readFileSync(out, 'utf8');
      expect(html).toContain(`${uri}/#/experiments/${parent.info.experiment_id}/runs/${parent.info.run_id}`);
      await page.screenshot({ path: join(SHOTS, 'ambiqa-report.png'), fullPage: false });
      expect(outside).toEqual([]);
    } finally {
      await page.close();
    }
  }, 120_000);
});
