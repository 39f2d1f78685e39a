import { createHash } from 'node:crypto';
import { createReadStream, existsSync, statSync } from 'node:fs';
import type { Example } from '../datasets/types';
import { defaultCatalog } from '../config/catalog';
import type { Trace } from '../trace/types';
import type { DatasetInput } from '../tracking/types';
import type { RunTracker } from '../tracking/types';
import type { ExperimentConfig } from './config';

/**
 * What fills an MLflow 3 run page beyond params and metrics: the evaluated dataset in its
 * Datasets box (`runs/log-inputs`), the config's `description` as the run description (the
 * `mlflow.note.content` tag, which the UI renders as markdown), and the LLM by its catalog name
 * with the file hash as a tag, instead of the hash alone.
 */

/** The dataset a run evaluates, as MLflow's log-inputs records it. */
export async function datasetInput(config: ExperimentConfig, examples: readonly Example[]): Promise<DatasetInput> {
  const { name, path, split } = config.dataset;
  // Digest of the file when it is there (what was read), else of the selected ids (what was asked).
  const digest = existsSync(path) && statSync(path).isFile() ? await fileDigest(path) : createHash('sha256').update(examples.map((e) => e.id).join('\n')).digest('hex');
  return {
    name: `${name}-${split}`,
    digest: digest.slice(0, 16),
    sourceType: 'local',
    source: JSON.stringify({ uri: path }),
    profile: JSON.stringify({ num_rows: examples.length, split, dataset: name, ...(config.dataset.limit !== undefined ? { limit: config.dataset.limit } : {}) }),
    schema: JSON.stringify({ mlflow_colspec: [{ name: 'id', type: 'string' }, { name: 'question', type: 'string' }, { name: 'answers', type: 'string' }] }),
    context: 'eval',
    tags: { split },
  };
}

async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Log the dataset input and the description when the run starts. */
export async function describeRunStart(tracker: RunTracker, config: ExperimentConfig, examples: readonly Example[]): Promise<void> {
  if (tracker.logInputs) await tracker.logInputs([await datasetInput(config, examples)]);
  if (config.description) await tracker.setTags({ 'mlflow.note.content': config.description });
}

/**
 * The LLM a run used, by name: the catalog name of an embedded GGUF (its sha256 is what the
 * trace records, because the cache key must not depend on a path), else the model id itself.
 */
export function modelTags(trace: Pick<Trace, 'llm' | 'judge'> | undefined): Record<string, string> {
  if (!trace) return {};
  const named = (prefix: string, { provider, model }: { provider: string; model: string }): Record<string, string> => {
    const entry = defaultCatalog.llms.find((e) => e.sha256 === model);
    return {
      [`${prefix}.provider`]: provider,
      [`${prefix}.model`]: entry ? entry.name : model,
      ...(entry ? { [`${prefix}.model_sha256`]: model } : {}),
    };
  };
  // A run with a `judge:` model of its own names both models.
  return { ...named('ambiqa.llm', trace.llm), ...(trace.judge ? named('ambiqa.judge', trace.judge) : {}) };
}
