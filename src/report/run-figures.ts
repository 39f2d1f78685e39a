/**
 * The figures of a run or sweep directory, logged to its MLflow run by `ambiqa run` / `ambiqa
 * sweep` themselves when tracking is on: the same figures `ambiqa report` draws (consistency KDE,
 * threshold ablation, pruning effect, clarification tree, coverage, sweep ablations), written to
 * `<dir>/figures/` as HTML (interactive, self-contained) and PNG, and uploaded under `figures/`.
 *
 * PNGs need chromium; without it only the HTML files are written and logged, with one note —
 * a missing browser must not cost a run anything.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describeError } from '../errors';
import { chromiumPath, exportFigures } from '../plots/export';
import type { MethodCatalog } from '../plots/methods';
import type { RunTracker } from '../tracking/types';
import { buildReport } from './build';

export interface RunFigureOptions {
  /** Render PNGs too (default: when chromium is installed; AMBIQA_FIGURE_PNG=0 turns them off). */
  png?: boolean;
  notify?: (message: string) => void;
}

let notedNoChromium = false;

/** `methods`: the method catalog (`methodCatalog()`), whose methods say which figures their traces make. */
export async function logRunFigures(dir: string, tracker: RunTracker, methods: MethodCatalog, options: RunFigureOptions = {}): Promise<number> {
  const notify = options.notify ?? ((m: string) => process.stderr.write(`note: ${m}\n`));
  const report = buildReport(dir, { methods });
  const figures = Object.fromEntries(report.figures.figures.map((f) => [f.name, f.figure]));
  if (Object.keys(figures).length === 0) return 0;
  let png = options.png ?? process.env.AMBIQA_FIGURE_PNG !== '0';
  if (png && !existsSync(chromiumPath())) {
    png = false;
    if (!notedNoChromium) notify(`figures are logged to MLflow as HTML only: no chromium at ${chromiumPath()} for PNGs (install it with \`ambiqa setup\`, or set AMBIQA_CHROMIUM)`);
    notedNoChromium = true;
  }
  try {
    const exported = await exportFigures(figures, join(dir, 'figures'), { formats: png ? ['html', 'png'] : ['html'], tracker, artifactPath: 'figures' });
    return exported.reduce((n, e) => n + e.files.length, 0);
  } catch (error) {
    if (!png) throw error;
    // A chromium that is there but does not start: HTML is still worth having.
    notify(`PNG figures skipped (${describeError(error).split('\n')[0]}); logging HTML only`);
    const exported = await exportFigures(figures, join(dir, 'figures'), { formats: ['html'], tracker, artifactPath: 'figures' });
    return exported.reduce((n, e) => n + e.files.length, 0);
  }
}
