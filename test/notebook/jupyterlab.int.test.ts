import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jupyterPath } from '../../src/notebook/kernel';
import { dismissDialogs, drawnFigures, scrollToEnd, startLab, waitForKernelIdle, type Lab } from './jupyterlab';

/**
 * A notebook run live in JupyterLab 4 (the front-end `ambiqa notebook` opens), as a person runs
 * it: open, Run All, watch. The fixture runs on the scripted test model (no model file, no lock),
 * slowly enough that its progress display is drawn, then shows a figure. Both must appear in the
 * page: the progress as the in-place HTML display, the figure drawn by plotly's JupyterLab
 * renderer from the figure's JSON (no plotly.js in the notebook).
 */
const root = resolve(__dirname, '../..');
const hasJupyter = existsSync(jupyterPath());
if (!hasJupyter && !process.env.CI) console.warn(`[skip] JupyterLab: none at ${jupyterPath()} (\`npx ambiqa setup\` installs it)`);

describe.skipIf(!hasJupyter && !process.env.CI)('a notebook run live in JupyterLab', () => {
  let lab: Lab;

  beforeAll(async () => {
    lab = await startLab({ env: { AMBIQA_ARTIFACTS_DIR: join(mkdtempSync(join(tmpdir(), 'ambiqa-lab-live-')), 'artifacts') } });
  }, 180_000);

  afterAll(async () => {
    await lab?.close();
  });

  it('Run All draws the progress display and the figure', async () => {
    const page = await lab.open(join(root, 'test/notebook/fixtures/live-run.ipynb'));
    // The kernel starts by itself (the notebook names the registered spec). Run All right after
    // the page loads can be a no-op while the menus are still being wired up: click until the
    // cells are queued ([*]).
    const dialogs: string[] = [];
    await waitForKernelIdle(page, 'TypeScript (ambiqa, tslab)');
    let queued = false;
    for (let attempt = 0; attempt < 6 && !queued; attempt++) {
      dialogs.push(...(await dismissDialogs(page)));
      await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Run$/ }).click({ timeout: 10_000 }).catch(() => {});
      await page.locator('.lm-Menu-itemLabel', { hasText: /^Run All Cells$/ }).click({ timeout: 10_000 }).catch(() => {});
      queued = await page.locator('.jp-InputPrompt', { hasText: '[*]' }).first().waitFor({ timeout: 10_000 }).then(() => true, () => false);
    }
    expect(queued, `Run All queued the cells (dialogs: ${JSON.stringify(dialogs)})`).toBe(true);
    // The progress display appears while the run is going, and stays with its final line; then
    // the figure. An error output ends the wait early, with what it says.
    const progress = page.locator('.jp-OutputArea-output .ambiqa-progress');
    const figure = page.locator('.jp-RenderedPlotly');
    const errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]');
    const deadline = Date.now() + 360_000;
    while ((await progress.count()) === 0 || (await figure.count()) === 0) {
      if ((await errors.count()) > 0 || Date.now() > deadline) {
        const seen = await page.evaluate(() => Array.from(document.querySelectorAll('.jp-InputPrompt, .jp-OutputArea-output')).map((e) => (e.textContent ?? '').slice(0, 300)).join(' | '));
        throw new Error(`no progress display and figure (dialogs: ${JSON.stringify(dialogs)}); the page shows: ${seen}\n--- JupyterLab log ---\n${lab.log().slice(-2000)}`);
      }
      await scrollToEnd(page);
      await page.waitForTimeout(1000);
    }
    const figures = await drawnFigures(page);
    expect(figures.plotly).toContain('Live figure');
    expect(await progress.last().textContent()).toMatch(/4\/4/);
    expect(await page.locator('.jp-OutputArea-output [data-mime-type="application/vnd.jupyter.stderr"]').count(), lab.log().slice(-2000)).toBe(0);
    await page.close();
  }, 540_000);
});
