/**
 * JupyterLab 4 from the project venv, driven by headless Chromium: what a person sees when they
 * open a notebook. Each server gets its own Jupyter data and runtime folders, so nothing (the
 * trust database in particular) carries over from another run: a notebook opened here is
 * untrusted, as one received from a colleague is.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { jupyterBinary, jupyterEnv, registerKernel } from '../../src/notebook/kernel';
import { CHROMIUM_ARGS, chromiumPath } from '../../src/plots/export';

export interface Lab {
  /** Copy a notebook into the server's folder and open it in a fresh page. */
  open(notebook: string): Promise<Page>;
  log(): string;
  close(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

export async function startLab(options: { env?: NodeJS.ProcessEnv } = {}): Promise<Lab> {
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-lab-'));
  const work = join(dir, 'work');
  mkdirSync(work);
  const port = await freePort();
  const token = 'ambiqa-test-token';
  const reg = registerKernel();
  // JupyterLab 4 keeps only the cells in view in the page ("windowing"); a test that looks for a
  // figure further down would not find it. Settings of this server only: render every cell.
  const settings = join(dir, 'settings', '@jupyterlab', 'notebook-extension');
  mkdirSync(settings, { recursive: true });
  writeFileSync(join(settings, 'tracker.jupyterlab-settings'), JSON.stringify({ windowingMode: 'none' }));
  const env = {
    ...jupyterEnv(reg, { ...process.env, ...options.env }),
    JUPYTERLAB_SETTINGS_DIR: join(dir, 'settings'),
    JUPYTER_DATA_DIR: join(dir, 'data'),
    JUPYTER_RUNTIME_DIR: join(dir, 'runtime'),
    JUPYTER_CONFIG_DIR: join(dir, 'config'),
  };
  const args = [
    'lab', '--no-browser', `--port=${port}`, '--ip=127.0.0.1', `--IdentityProvider.token=${token}`,
    `--ServerApp.root_dir=${work}`, '--LabApp.extension_manager=readonly', '--ServerApp.open_browser=False',
  ];
  if (typeof process.getuid === 'function' && process.getuid() === 0) args.push('--allow-root');
  const server: ChildProcess = spawn(jupyterBinary(), args, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let log = '';
  server.stdout!.on('data', (d) => (log += d));
  server.stderr!.on('data', (d) => (log += d));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`JupyterLab exited (${server.exitCode}):\n${log.slice(-3000)}`);
    try {
      const res = await fetch(`${base}/api/status?token=${token}`);
      if (res.ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`JupyterLab did not answer within 120 s:\n${log.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const profile = join(dir, 'chromium');
  const context: BrowserContext = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    args: CHROMIUM_ARGS,
    // Tall, so that more of a notebook is in view (JupyterLab renders only what is near the view).
    viewport: { width: 1280, height: 2400 },
  });
  return {
    async open(notebook: string) {
      cpSync(notebook, join(work, basename(notebook)));
      const page = await context.newPage();
      await page.goto(`${base}/lab/tree/${encodeURIComponent(basename(notebook))}?token=${token}`, { timeout: 120_000 });
      await page.locator('.jp-Notebook').first().waitFor({ timeout: 120_000 });
      return page;
    },
    log: () => log,
    async close() {
      await context.close().catch(() => {});
      // The server and the kernels it started are one process group.
      try {
        process.kill(-server.pid!, 'SIGTERM');
      } catch {
        /* already gone */
      }
      await new Promise((r) => setTimeout(r, 500));
      try {
        process.kill(-server.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Close whatever dialog JupyterLab shows over the notebook, without choosing anything (accepting a
 * kernel dialog could switch the notebook to Python), and say what it was: a dialog left open
 * swallows every click after it.
 */
export async function dismissDialogs(page: Page): Promise<string[]> {
  const seen: string[] = [];
  const dialog = page.locator('.jp-Dialog');
  while (await dialog.first().isVisible().catch(() => false)) {
    seen.push(((await dialog.first().textContent().catch(() => '')) ?? '').replace(/\s+/g, ' ').slice(0, 200));
    await page.keyboard.press('Escape');
    await page.waitForTimeout(300);
  }
  return seen;
}

/** Wait until the status bar says the notebook's kernel is idle, and that it is the named one. */
export async function waitForKernelIdle(page: Page, kernelName: string, timeoutMs = 180_000): Promise<void> {
  const status = () => page.evaluate(() => (document.querySelector('#jp-main-statusbar')?.textContent ?? '').replace(/\s+/g, ' '));
  const deadline = Date.now() + timeoutMs;
  let text = await status();
  // The kernel item reads "<kernel name> | Idle" (neighbouring items follow without a space).
  while (!/\|\s*Idle/.test(text)) {
    if (Date.now() > deadline) throw new Error(`the kernel did not become idle in ${timeoutMs / 1000} s; status bar: ${text}`);
    await page.waitForTimeout(1000);
    text = await status();
  }
  const name = (await page.locator('.jp-Toolbar-kernelName').first().textContent()) ?? text;
  if (!name.includes(kernelName)) throw new Error(`the notebook's kernel is '${name}', not '${kernelName}'`);
}

/** Scroll the notebook to its end, so that JupyterLab renders the last cells too. */
export async function scrollToEnd(page: Page): Promise<void> {
  await page.evaluate(() => {
    for (const el of Array.from(document.querySelectorAll('.jp-WindowedPanel-outer, .jp-NotebookPanel-notebook'))) el.scrollTop = el.scrollHeight;
  });
}

/** Wait for a figure whose title starts with `title`, scrolling down as cells render. */
export async function waitForFigure(page: Page, title: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { plotly } = await drawnFigures(page);
    if (plotly.some((t) => t.startsWith(title))) return;
    if (Date.now() > deadline) throw new Error(`no figure titled '${title}' within ${timeoutMs / 1000} s (drawn: ${JSON.stringify(plotly)})`);
    await scrollToEnd(page);
    await page.waitForTimeout(1000);
  }
}

/**
 * Figures drawn in the notebook's outputs. plotly's JupyterLab renderer first shows the bundle's
 * PNG (`img.plot-img`) and builds the interactive graph when the pointer enters it: each plotly
 * output is hovered so that its graph (and its title, read from the SVG) is drawn. `png` counts
 * PNG images that loaded, whichever renderer shows them.
 */
export async function drawnFigures(page: Page): Promise<{ plotly: string[]; png: number }> {
  const outputs = page.locator('.jp-RenderedPlotly');
  const n = await outputs.count();
  for (let i = 0; i < n; i++) {
    const output = outputs.nth(i);
    if ((await output.locator('.main-svg').count()) > 0) continue;
    await output.scrollIntoViewIfNeeded().catch(() => {});
    await output.hover({ timeout: 5_000 }).catch(() => {});
    await output.locator('.main-svg').first().waitFor({ timeout: 10_000 }).catch(() => {});
  }
  return page.evaluate(() => {
    const notebook = document.querySelector('.jp-Notebook')!;
    const plotly = Array.from(notebook.querySelectorAll('.js-plotly-plot'))
      .filter((p) => p.querySelector('.main-svg'))
      .map((p) => p.querySelector('.gtitle')?.textContent ?? '');
    const png = Array.from(notebook.querySelectorAll('.jp-OutputArea-output img')).filter(
      (i) => (i as HTMLImageElement).src.startsWith('data:image/png') && (i as HTMLImageElement).naturalWidth > 0,
    ).length;
    return { plotly, png };
  });
}
