import type { MlflowClient } from './client';
import {
  DEFAULT_FIELD_LIMITS,
  MIN_OTLP_VERSION,
  OtlpSender,
  loadOtel,
  SpanBuilder,
  TraceTooLargeError,
  TracesUnsupportedError,
  mlflowTraceId,
  versionAtLeast,
  type FieldLimits,
  type TraceExportItem,
} from './otel-export';

/**
 * Sends export items (one per question) to one MLflow run: spans through OTLP in batches of whole
 * traces, then one `link-to-run` call per batch (≤ 100 traces) so the run's Traces tab lists them,
 * then each question's metric values as feedback assessments (columns in the Traces view).
 *
 * Used live by the run tracker and by `ambiqa sync` for traces buffered while the server was down;
 * both give the same trace ids, so a batch sent twice overwrites itself instead of duplicating.
 */
export interface TraceSendTarget {
  client: MlflowClient;
  experimentId: string;
  runId: string;
  notify: (message: string) => void;
  limits?: FieldLimits;
  /** Parallel assessment requests (default 8). */
  assessmentConcurrency?: number;
}

/** Checks once per server that it can take OTLP traces at all (version ≥ 3.6). */
const checkedServers = new Map<string, Promise<void>>();

export async function assertTracesSupported(client: MlflowClient): Promise<void> {
  let check = checkedServers.get(client.uri);
  if (!check) {
    check = (async () => {
      const version = await client.serverVersion();
      if (version && !versionAtLeast(version, MIN_OTLP_VERSION)) {
        throw new TracesUnsupportedError(
          `MLflow ${version} at ${client.uri} cannot take traces: the OTLP endpoint /v1/traces needs MLflow ≥ ${MIN_OTLP_VERSION.join('.')}`,
          'upgrade the tracking server (`pip install -U "mlflow>=3.6"`); traces stay in the run directory (traces.jsonl)',
        );
      }
    })();
    checkedServers.set(client.uri, check);
    check.catch(() => checkedServers.delete(client.uri));
  }
  await check;
}

/** Spans, link and feedback, one after another (what `ambiqa sync` does). */
export async function sendTraces(items: TraceExportItem[], target: TraceSendTarget): Promise<void> {
  const { feedback } = await sendTraceSpans(items, target);
  await feedback();
}

/**
 * Spans and the link to the run; returns the feedback step to run next, which a live run lets
 * overlap with its other end-of-run uploads (the metric values are also on each root span as
 * `ambiqa.metric.*` attributes, so a failed feedback step loses nothing).
 */
export async function sendTraceSpans(items: TraceExportItem[], target: TraceSendTarget): Promise<{ feedback: () => Promise<void> }> {
  if (items.length === 0) return { feedback: async () => {} };
  await assertTracesSupported(target.client);
  const limits = target.limits ?? DEFAULT_FIELD_LIMITS;
  const otel = await loadOtel();
  const builder = new SpanBuilder(otel, limits);
  const sender = new OtlpSender(otel, { uri: target.client.uri, experimentId: target.experimentId, headers: target.client.requestHeaders });
  let truncated = 0;
  const times = new Map<string, { startMs: number; endMs: number }>();
  try {
    const spans = items.flatMap((item) => {
      const built = builder.build(item);
      truncated += built.truncatedFields;
      times.set(item.traceIdHex, { startMs: built.startMs, endMs: built.endMs });
      return built.spans;
    });
    try {
      await sender.send(spans);
    } catch (error) {
      if (!(error instanceof TraceTooLargeError)) throw error;
      // Too big for the server (or a proxy in front of it): send trace by trace, each cut
      // further until it fits, rather than dropping any.
      for (const item of items) truncated += await sendShrinking(item, builder, sender, limits);
    }
  } finally {
    await sender.shutdown();
  }
  if (truncated > 0) target.notify(`ambiqa: ${truncated} trace field(s) were too long for MLflow and were truncated (marked "${'…[truncated by ambiqa'}")`);
  await target.client.linkTracesToRun(
    target.runId,
    items.map((i) => mlflowTraceId(i.traceIdHex)),
  );
  return { feedback: () => logAssessments(items, times, target) };
}

async function sendShrinking(item: TraceExportItem, builder: SpanBuilder, sender: OtlpSender, limits: FieldLimits): Promise<number> {
  let current = limits;
  for (;;) {
    const built = builder.build(item, current);
    try {
      await sender.send(built.spans);
      return built.truncatedFields;
    } catch (error) {
      if (!(error instanceof TraceTooLargeError) || current.maxTraceChars <= 4_000) throw error;
      current = { maxFieldChars: Math.max(500, Math.floor(current.maxFieldChars / 4)), maxTraceChars: Math.floor(current.maxTraceChars / 4) };
    }
  }
}

/** Each question's metric values as feedback on its trace: one request per question. */
async function logAssessments(items: TraceExportItem[], times: Map<string, { startMs: number; endMs: number }>, target: TraceSendTarget): Promise<void> {
  const jobs = items
    .map((item) => ({ item, values: Object.fromEntries(Object.entries(item.metrics).filter(([, v]) => Number.isFinite(v))) }))
    .filter((j) => Object.keys(j.values).length > 0)
    .map(({ item, values }) => () =>
      target.client.logTraceFeedback({ traceId: mlflowTraceId(item.traceIdHex), experimentId: target.experimentId, ...times.get(item.traceIdHex)!, values }),
    );
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]();
  };
  await Promise.all(Array.from({ length: Math.min(target.assessmentConcurrency ?? 2, jobs.length) }, worker));
}
