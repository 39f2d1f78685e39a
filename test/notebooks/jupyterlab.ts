/**
 * JupyterLab 4 from the project venv, driven by headless Chromium: what a person sees when they
 * open a notebook. Each server gets its own Jupyter data and runtime folders, so nothing (the
 * trust database in particular) carries over from another run: a notebook opened here is
 * untrusted, as one received from a colleague is.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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
  const env = {
    ...jupyterEnv(reg, { ...process.env, ...options.env }),
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
    viewport: { width: 1280, height: 900 },
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
 * Accept whatever dialog JupyterLab shows over the notebook (the kernel choice when it asks), and
 * say what it was: a dialog left open swallows every click after it.
 */
export async function acceptDialogs(page: Page): Promise<string[]> {
  const seen: string[] = [];
  const dialog = page.locator('.jp-Dialog');
  while (await dialog.first().isVisible().catch(() => false)) {
    seen.push(((await dialog.first().textContent().catch(() => '')) ?? '').replace(/\s+/g, ' ').slice(0, 200));
    await dialog.first().locator('.jp-mod-accept').first().click({ timeout: 5_000 }).catch(async () => page.keyboard.press('Escape'));
    await page.waitForTimeout(300);
  }
  return seen;
}

/** Figures drawn in the notebook's outputs: plotly's SVG (the renderer extension) and PNG images. */
export async function drawnFigures(page: Page): Promise<{ plotly: string[]; png: number }> {
  return page.evaluate(() => {
    const outputs = document.querySelector('.jp-Notebook')!;
    const plotly = Array.from(outputs.querySelectorAll(".js-plotly-plot")).filter((p) => p.querySelector('.main-svg')).map((p) => p.querySelector('.gtitle')?.textContent ?? '');
    const png = Array.from(outputs.querySelectorAll(".jp-OutputArea-output img")).filter((i) => (i as HTMLImageElement).src.startsWith('data:image/png') && (i as HTMLImageElement).naturalWidth > 0).length;
    return { plotly, png };
  });
}
