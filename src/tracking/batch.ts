import { MLFLOW_LIMITS } from './limits';

/** One metric observation as MLflow stores it: appended, never overwritten. */
export interface MetricRecord {
  key: string;
  value: number;
  /** Milliseconds since the epoch. */
  timestamp: number;
  step: number;
}

export interface KeyValue {
  key: string;
  value: string;
}

export interface LogBatch {
  metrics: MetricRecord[];
  params: KeyValue[];
  tags: KeyValue[];
}

export interface BatchLimits {
  metrics: number;
  params: number;
  tags: number;
  entities: number;
  /** Budget for the JSON text of one request, envelope included. */
  chars: number;
}

export const DEFAULT_BATCH_LIMITS: BatchLimits = {
  metrics: MLFLOW_LIMITS.metricsPerBatch,
  params: MLFLOW_LIMITS.paramsPerBatch,
  tags: MLFLOW_LIMITS.tagsPerBatch,
  entities: MLFLOW_LIMITS.entitiesPerBatch,
  // The server compares `len()` of the request text with 1e6; 5% headroom covers the envelope
  // and the difference between our estimate and the exact serialisation.
  chars: Math.floor(MLFLOW_LIMITS.batchRequestChars * 0.95),
};

/**
 * JSON cannot carry NaN or ±Infinity; MLflow's protobuf JSON parser accepts them as the strings
 * "NaN", "Infinity" and "-Infinity".
 */
export function encodeMetricValue(value: number): number | string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Infinity';
  if (value === -Infinity) return '-Infinity';
  return value;
}

/** The inverse, for values read back (`"NaN"` comes back as a string). */
export function decodeMetricValue(value: number | string): number {
  if (typeof value === 'number') return value;
  if (value === 'NaN') return NaN;
  if (value === 'Infinity') return Infinity;
  if (value === '-Infinity') return -Infinity;
  return Number(value);
}

export function metricToJson(metric: MetricRecord): Record<string, unknown> {
  return { key: metric.key, value: encodeMetricValue(metric.value), timestamp: metric.timestamp, step: metric.step };
}

/**
 * Split params, tags and metrics into `log-batch` requests that each respect every limit at
 * once: per kind, in total, and in size. Params and tags go first (a run's description should
 * land before its long metric series), and each request is filled as far as the limits allow,
 * so 2,500 metrics and 250 params need three requests, not six. The order within each kind is
 * kept, which matters for metrics that share a key and step.
 */
export function planLogBatches(data: Partial<LogBatch>, limits: BatchLimits = DEFAULT_BATCH_LIMITS): LogBatch[] {
  const queues = {
    params: [...(data.params ?? [])],
    tags: [...(data.tags ?? [])],
    metrics: [...(data.metrics ?? [])],
  };
  const envelope = JSON.stringify({ run_id: 'f'.repeat(32), metrics: [], params: [], tags: [] }).length;
  const batches: LogBatch[] = [];
  while (queues.params.length + queues.tags.length + queues.metrics.length > 0) {
    const batch: LogBatch = { metrics: [], params: [], tags: [] };
    let chars = envelope;
    let entities = 0;
    const take = <K extends keyof LogBatch>(kind: K, cap: number): void => {
      const queue = queues[kind] as LogBatch[K][number][];
      const target = batch[kind] as LogBatch[K][number][];
      while (queue.length > 0 && target.length < cap && entities < limits.entities) {
        const item = queue[0];
        const size = itemChars(kind, item) + 1; // + the separating comma
        if (chars + size > limits.chars) {
          if (entities === 0) {
            // A single item larger than a request can never be sent; callers truncate values
            // first, so this only guards against a limit set absurdly low.
            throw new Error(`one ${kind.slice(0, -1)} (${size} chars) exceeds the batch size limit of ${limits.chars}`);
          }
          return;
        }
        target.push(queue.shift()!);
        chars += size;
        entities += 1;
      }
    };
    take('params', limits.params);
    take('tags', limits.tags);
    take('metrics', limits.metrics);
    batches.push(batch);
  }
  return batches;
}

function itemChars(kind: keyof LogBatch, item: MetricRecord | KeyValue): number {
  // JSON.stringify escapes the same characters Python's json.dumps would count, closely enough
  // for a 5% margin; non-ASCII stays one char per code unit in both.
  return kind === 'metrics' ? JSON.stringify(metricToJson(item as MetricRecord)).length : JSON.stringify(item).length;
}
