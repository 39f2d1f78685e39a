/**
 * PNG images of figures, rendered synchronously for `show()`.
 *
 * Why synchronous: a notebook cell writes `show(figure)` without `await`, and tslab only waits
 * for a cell that has a top-level `await`. A display sent after the cell has finished reaches
 * JupyterLab but not nbconvert, which stops listening when the kernel goes idle, so the executed
 * copy would lose its image. The rendering itself is the project's Chromium path
 * (`PngRenderer` in src/plots/export.ts: one headless Chromium, one page with plotly.js loaded
 * once, reused for every figure); it runs in a worker thread, and the calling thread blocks on
 * `Atomics.wait` until the worker answers, then reads the answer with `receiveMessageOnPort`.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { packageRoot } from '../config/paths';
import type { Figure } from '../plots/types';

export interface PngSize {
  width: number;
  height: number;
}

/** Renders one figure to PNG bytes, or throws. */
export type SyncPngRenderer = (figure: Figure, size: PngSize) => Buffer;

// The worker is plain CommonJS given as text (no file to ship or compile); it loads the compiled
// export module beside this one, or export.ts through tsx when this module runs from the sources
// (tests, a development checkout), and keeps one renderer for its lifetime.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
if (workerData.tsxApi) require(workerData.tsxApi).register();
const { PngRenderer } = require(workerData.exportModule);
let launching;
parentPort.on('message', async (job) => {
  const flag = new Int32Array(job.signal);
  try {
    if (job.close) {
      if (launching) await (await launching).close();
      launching = undefined;
      job.port.postMessage({ ok: true });
    } else {
      launching = launching || PngRenderer.launch();
      const renderer = await launching;
      const png = await renderer.render(job.figure, { width: job.width, height: job.height });
      job.port.postMessage({ ok: true, png });
    }
  } catch (error) {
    // A failed launch is not cached: the next figure tries again.
    launching = undefined;
    job.port.postMessage({ ok: false, error: String((error && error.message) || error).split('\\n')[0] });
  } finally {
    job.port.close();
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  }
});
`;

let worker: Worker | undefined;
let rendered = 0;

/** The module the worker loads: compiled beside this file, or the TypeScript source through tsx. */
function exportModule(): { tsxApi?: string; exportModule: string } {
  // __filename is this module's file in the compiled build (…/dist/cjs/notebook/figure-png.js),
  // under vitest and tsx's CommonJS mode (…/src/notebook/figure-png.ts); tsx's ES-module mode has none.
  const here = typeof __filename === 'string' ? __filename : undefined;
  if (here && !here.endsWith('.ts')) return { exportModule: join(here, '..', '..', 'plots', 'export.js') };
  return {
    tsxApi: createRequire(join(packageRoot, 'package.json')).resolve('tsx/cjs/api'),
    exportModule: join(packageRoot, 'src', 'plots', 'export.ts'),
  };
}

function startWorker(): Worker {
  const w = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: exportModule(),
    // The worker's output is the renderer's; a kernel saves stdout into the notebook.
    stdout: false,
    stderr: false,
  });
  // The worker (and its Chromium) must not keep a script alive: the process ends, they end.
  w.unref();
  w.on('error', () => {
    worker = undefined;
  });
  w.on('exit', () => {
    if (worker === w) worker = undefined;
  });
  return w;
}

// One shape, not a union: tslab type-checks this file without strict null checks, where a union
// on \`ok\` would not narrow.
interface Answer {
  ok: boolean;
  png?: Uint8Array;
  error?: string;
}

function ask(job: Record<string, unknown>, timeoutMs: number): Answer {
  worker ??= startWorker();
  const signal = new SharedArrayBuffer(4);
  const { port1, port2 } = new MessageChannel();
  worker.postMessage({ ...job, signal, port: port2 }, [port2]);
  const waited = Atomics.wait(new Int32Array(signal), 0, 0, timeoutMs);
  const message = receiveMessageOnPort(port1)?.message as Answer | undefined;
  port1.close();
  if (waited === 'timed-out' || !message) {
    // A stuck renderer is dropped whole; the next figure starts a fresh one.
    void worker.terminate();
    worker = undefined;
    return { ok: false, error: `no PNG from Chromium within ${Math.round(timeoutMs / 1000)} s` };
  }
  return message;
}

/**
 * The default renderer. The first figure waits for Chromium and plotly.js to load (seconds on a
 * busy machine); later ones take a fraction of a second.
 */
export const chromiumPngSync: SyncPngRenderer = (figure, size) => {
  const first = rendered === 0;
  // Only plain data crosses into the worker.
  const spec = JSON.parse(JSON.stringify({ data: figure.data, layout: figure.layout })) as Figure;
  const answer = ask({ figure: spec, width: size.width, height: size.height }, first ? 180_000 : 60_000);
  if (!answer.ok) throw new Error(answer.error ?? 'the renderer failed');
  if (!answer.png) throw new Error('the renderer answered without a PNG');
  rendered += 1;
  return Buffer.from(answer.png);
};

/** Close the Chromium behind `chromiumPngSync` (a script that wants a clean exit calls this). */
export function closeChromiumPngSync(): void {
  if (!worker) return;
  ask({ close: true }, 30_000);
  void worker?.terminate();
  worker = undefined;
  rendered = 0;
}
