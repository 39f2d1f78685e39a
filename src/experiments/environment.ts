/**
 * The environment of a run a person started — `ambiqa run`, `ambiqa sweep`, `ambiqa merge`, a
 * notebook's `run()` / `sweep()`: the one place that decides what such a run shows besides its
 * files (its figures, drawn into its MLflow run). Tests and benches build a `RunEnvironment`
 * by hand with only what they need.
 */
import { logRunFigures } from '../report/run-figures';
import type { RunTracker } from '../tracking/types';
import { methodCatalog } from './bindings';
import type { RunEnvironment } from './observers';

// A static import: under tslab the library is compiled to CommonJS by tsx, where a dynamic
// `import()` of an extensionless .ts path goes to Node's ES-module resolver and fails ("Cannot
// find module …/run-figures"), so notebooks lost their MLflow figures.
async function logFigures(dir: string, tracker: RunTracker): Promise<void> {
  await logRunFigures(dir, tracker, methodCatalog());
}

export function commandEnvironment(env: Omit<RunEnvironment, 'figures'> = {}): RunEnvironment {
  return { ...env, figures: logFigures };
}
