/**
 * Figures and reports belong with the run they were computed from: reopen that run in MLflow (its
 * ids are in the run dir's mlflow.json) and attach the files as artifacts. When the server is
 * unreachable the uploads wait in the run dir for `ambiqa sync`, like the run's own logging.
 */
import { join } from 'node:path';
import { AmbiqaError } from '../errors';
import type { MlflowRecord } from '../run-files';
import { exportFigures, type ExportedFigure, type PngOptions, type PngRenderer } from '../plots/export';
import type { Figure } from '../plots/types';
import { openTracking } from '../tracking/index';
import type { RunTracker } from '../tracking/types';

export interface TrackedDir {
  name: string;
  dir: string;
  mlflow?: MlflowRecord;
}

/** Reopen the MLflow run of a run (or sweep) directory. Call `finish('FINISHED')` when done. */
export async function reopenRun(target: TrackedDir): Promise<RunTracker> {
  if (!target.mlflow) {
    throw new AmbiqaError(
      `${target.dir} has no mlflow.json: the run was not logged to MLflow`,
      'run it with tracking enabled (the default; not --no-tracking / tracking.enabled: false)',
    );
  }
  const tracking = await openTracking({ bufferDir: target.dir });
  return tracking.startRun({
    experimentName: target.mlflow.experimentName,
    runName: target.mlflow.runName,
    resumeRunId: target.mlflow.runId,
  });
}

export interface LogFiguresOptions {
  /** Also render PNGs (needs chromium). Default true. */
  png?: boolean | PngOptions;
  renderer?: PngRenderer;
  /** Folder inside the run's artifacts. Default `figures`. */
  artifactPath?: string;
  /** Extra files to attach under the run's artifact root (e.g. a report). */
  files?: string[];
}

/** Write figures to `<dir>/figures/` as HTML (+ PNG) and log them to the directory's MLflow run. */
export async function logFiguresToRun(
  target: TrackedDir,
  figures: Record<string, Figure>,
  options: LogFiguresOptions = {},
): Promise<ExportedFigure[]> {
  const tracker = await reopenRun(target);
  try {
    const exported = await exportFigures(figures, join(target.dir, 'figures'), {
      formats: options.png === false ? ['html'] : ['html', 'png'],
      ...(typeof options.png === 'object' ? { png: options.png } : {}),
      ...(options.renderer ? { renderer: options.renderer } : {}),
      tracker,
      artifactPath: options.artifactPath ?? 'figures',
    });
    for (const file of options.files ?? []) await tracker.logArtifact(file);
    return exported;
  } finally {
    // The run itself finished before; a failed upload does not change that.
    await tracker.finish('FINISHED');
  }
}
