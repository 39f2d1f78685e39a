import { createHash } from 'node:crypto';
import type { Attributes, Context } from '@opentelemetry/api';
import type { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { BasicTracerProvider, IdGenerator, ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AmbiqaError } from '../errors';
import { MlflowHttpError, MlflowUnreachableError } from './client';
import type { LlmCallRecord, RetrievalRecord, Trace } from '../trace/types';
import { callUsage } from '../trace/usage';
import { knownSecrets, redactDeep, redactText } from './redact';
import { traceKey } from '../run-files';

/**
 * Each question's ambiqa `Trace` as one MLflow trace, sent as OpenTelemetry spans to the tracking
 * server's OTLP endpoint (`POST /v1/traces`, MLflow ≥ 3.6 with a SQL store).
 *
 * The attribute names are the ones MLflow 3.17 reads when it stores an OTLP span
 * (mlflow/tracing/constant.py `SpanAttributeKey`, mlflow/tracing/otel/translation/__init__.py):
 *
 *   mlflow.spanType        CHAIN (question, pipeline step), CHAT_MODEL (LLM call), RETRIEVER, PARSER
 *   mlflow.spanInputs      JSON; the root span's become the trace's "Request" column
 *   mlflow.spanOutputs     JSON; the root span's become the trace's "Response" column
 *   mlflow.chat.tokenUsage {"input_tokens","output_tokens","total_tokens"}; summed into the trace's token count
 *   mlflow.llm.model / mlflow.llm.provider
 *   mlflow.message.format  "openai": the UI renders inputs.messages / outputs.choices as a chat
 *
 * The server JSON-encodes every attribute value it receives and strips one level of encoding
 * again from strings that hold JSON (`sanitize_attributes`), so JSON objects travel as strings.
 * Everything else ambiqa knows (latency, cache hit, judge probabilities, per-question metrics)
 * goes in `ambiqa.*` attributes, shown on each span's Attributes tab.
 *
 * The timeline: a trace written since issue 45 stamps every call, retrieval and pipeline step
 * with its start (epoch ms) and span ids (trace/types.ts `SpanFields`, `StepRecord`), so the
 * spans are exported at their real times, nested as the pipeline ran them (ToC: node → expand /
 * verify → calls and retrievals). Older traces hold durations only: their spans are grouped by
 * purpose and laid out one after another inside the question's wall time (`placedSpans`).
 */

// ------------------------------------------------------------------------------- export items

/** One question ready for export: its trace, its per-question metric values, and when it ended. */
export interface TraceExportItem {
  /** 32 hex digits; MLflow names the trace `tr-<traceIdHex>`. */
  traceIdHex: string;
  trace: Trace;
  metrics: Record<string, number>;
  /** Milliseconds since the epoch at which the question finished. */
  endedAtMs: number;
}

/**
 * The trace id of a question in a run: a hash of both, so exporting the same question again
 * (a resumed run, a second `ambiqa sync`) writes the same MLflow trace instead of a new one.
 */
export function traceIdFor(runKey: string, questionId: string): string {
  return createHash('sha256').update(`ambiqa-trace\0${runKey}\0${questionId}`).digest('hex').slice(0, 32);
}

export function mlflowTraceId(traceIdHex: string): string {
  return `tr-${traceIdHex}`;
}

function spanIdFor(traceIdHex: string, index: number): string {
  const id = createHash('sha256').update(`${traceIdHex}\0${index}`).digest('hex').slice(0, 16);
  // An all-zero span id is invalid in OTLP; a hash producing one is astronomically unlikely, but cheap to rule out.
  return id === '0000000000000000' ? '0000000000000001' : id;
}

// ------------------------------------------------------------------------------- field limits

export interface FieldLimits {
  /** Longest string attribute value, in characters. */
  maxFieldChars: number;
  /** Budget for all string attributes of one trace together, in characters. */
  maxTraceChars: number;
}

export const DEFAULT_FIELD_LIMITS: FieldLimits = { maxFieldChars: 64_000, maxTraceChars: 2_000_000 };

export const TRUNCATION_MARKER = '…[truncated by ambiqa:';

/** `text` cut to `limit` characters with a marker saying how much was dropped. */
export function truncateField(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const marker = `${TRUNCATION_MARKER} ${text.length - limit} of ${text.length} chars dropped]`;
  return text.slice(0, Math.max(0, limit - marker.length)) + marker;
}

/**
 * Cut string attributes of one trace until they fit the trace budget: the longest field is
 * halved first, again and again, so that short fields (ids, purposes, answers) survive whole
 * and nothing is dropped — every cut field keeps its head and a marker.
 */
export function fitTraceBudget(spans: Array<{ attributes: Record<string, string | number | boolean | string[]> }>, limits: FieldLimits): number {
  let truncated = 0;
  const fields: Array<{ attrs: Record<string, string | number | boolean | string[]>; key: string }> = [];
  let total = 0;
  for (const span of spans) {
    for (const [key, value] of Object.entries(span.attributes)) {
      if (typeof value !== 'string') continue;
      if (value.length > limits.maxFieldChars) {
        span.attributes[key] = truncateField(value, limits.maxFieldChars);
        truncated++;
      }
      fields.push({ attrs: span.attributes, key });
      total += (span.attributes[key] as string).length;
    }
  }
  while (total > limits.maxTraceChars) {
    let longest = fields[0];
    for (const f of fields) if ((f.attrs[f.key] as string).length > (longest.attrs[longest.key] as string).length) longest = f;
    const before = longest.attrs[longest.key] as string;
    if (before.length < 200) break; // nothing big left to cut: let the server decide
    const after = truncateField(before, Math.floor(before.length / 2));
    longest.attrs[longest.key] = after;
    total -= before.length - after.length;
    truncated++;
  }
  return truncated;
}

// ------------------------------------------------------------------------------- trace → spans

type AttrValue = string | number | boolean | string[];

interface SpanPlan {
  name: string;
  parent: number | null;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttrValue>;
  error?: string;
}

/** The spans of one question, as plain data (parent = index into the list; 0 is the root). */
export function planSpans(item: TraceExportItem, limits: FieldLimits = DEFAULT_FIELD_LIMITS): { spans: SpanPlan[]; truncatedFields: number } {
  const { trace } = item;
  const secrets = knownSecrets();
  // Structured values are redacted field by field before they become JSON (a secret holding a
  // quote or backslash would not match inside the escaped text), and secret-named keys masked.
  const clean = (value: unknown): string =>
    typeof value === 'string' ? redactText(value, secrets) : JSON.stringify(redactDeep(value ?? null, { secrets, maskSecretKeys: true }));
  const endMs = item.endedAtMs;
  const totalMs = Math.max(1, Math.round((trace.summary?.seconds ?? 0) * 1000));
  const startMs = endMs - totalMs;

  const spans: SpanPlan[] = [];
  const metricAttrs: Record<string, AttrValue> = {};
  for (const [name, value] of Object.entries(item.metrics)) if (Number.isFinite(value)) metricAttrs[`ambiqa.metric.${name}`] = value;
  spans.push({
    name: `${trace.pipeline}: ${traceKey(trace)}`,
    parent: null,
    startMs,
    endMs,
    attributes: {
      'mlflow.spanType': 'CHAIN',
      'mlflow.spanInputs': clean({ question_id: trace.questionId, question: trace.question }),
      'mlflow.spanOutputs': clean({ answer: trace.answer ?? trace.output, output: trace.output }),
      'ambiqa.pipeline': trace.pipeline,
      'ambiqa.question_id': clean(trace.questionId),
      ...(trace.trial !== undefined ? { 'ambiqa.trial': trace.trial } : {}),
      'ambiqa.llm.provider': clean(trace.llm.provider),
      'ambiqa.llm.model': clean(trace.llm.model),
      'ambiqa.summary': clean(trace.summary),
      ...(trace.demoIds.length > 0 ? { 'ambiqa.demo_ids': trace.demoIds.map((d) => clean(d)) } : {}),
      ...(trace.options ? { 'ambiqa.options': clean(trace.options) } : {}),
      ...(trace.parseFailures.length > 0 ? { 'ambiqa.parse_failures': clean(trace.parseFailures) } : {}),
      ...(trace.warnings && trace.warnings.length > 0 ? { 'ambiqa.warnings': clean(trace.warnings) } : {}),
      ...metricAttrs,
    },
  });

  if (hasTimeline(trace)) timedSpans(trace, spans, clean);
  else placedSpans(trace, spans, startMs, endMs, totalMs, clean);
  const end = spans.reduce((m, sp) => Math.max(m, sp.endMs), spans[0].endMs);
  spans[0].endMs = end;

  // What the method decided, as a point at the end: its time is the pipeline's own work, spread
  // between the calls, which the trace does not break down.
  spans.push({
    name: 'decisions',
    parent: 0,
    startMs: end,
    endMs: end,
    attributes: { 'mlflow.spanType': 'PARSER', 'mlflow.spanOutputs': clean(trace.decisions), 'ambiqa.decisions.kind': trace.decisions.kind },
  });

  const truncatedFields = fitTraceBudget(spans, limits);
  return { spans, truncatedFields };
}

/** Whether the trace stamps its records with start times and span ids (written since issue 45). */
export function hasTimeline(trace: Trace): boolean {
  return (
    trace.startedAt !== undefined &&
    trace.llmCalls.every((c) => c.startedAt !== undefined && c.spanId !== undefined) &&
    trace.retrievals.every((r) => r.startedAt !== undefined && r.spanId !== undefined)
  );
}

/**
 * The recorded timeline: the question from its start, each step at its own start and end under
 * the step it ran in, each call and retrieval at its start for its duration under its step. A
 * parent id the trace does not hold (a hand-edited trace) puts the record under the question.
 */
function timedSpans(trace: Trace, spans: SpanPlan[], clean: (v: unknown) => string): void {
  const root = spans[0];
  root.startMs = trace.startedAt!;
  root.endMs = root.startMs + Math.max(0, trace.summary?.seconds ?? 0) * 1000;
  const planned = new Map<string, number>();
  const parentOf = (id: string | undefined): number => (id !== undefined ? (planned.get(id) ?? 0) : 0);
  // Steps are recorded as they begin, so a step's parent is always planned before it.
  for (const step of trace.steps ?? []) {
    planned.set(step.spanId, spans.length);
    const attributes: Record<string, AttrValue> = { 'mlflow.spanType': 'CHAIN', 'mlflow.spanInputs': clean(step.attributes) };
    for (const [key, value] of Object.entries(step.attributes)) attributes[`ambiqa.step.${key}`] = typeof value === 'string' ? clean(value) : value;
    spans.push({
      name: step.name,
      parent: parentOf(step.parentSpanId),
      startMs: step.startedAt,
      endMs: Math.max(step.startedAt, step.endedAt),
      attributes,
      ...(step.error !== undefined ? { error: clean(step.error) } : {}),
    });
  }
  type Timed = { startMs: number; plan: (parent: number, startMs: number, endMs: number) => SpanPlan; durationMs: number; parentSpanId?: string };
  const events: Timed[] = [
    ...trace.llmCalls.map((call) => ({
      startMs: call.startedAt!,
      durationMs: Math.max(0, call.wallSeconds) * 1000,
      parentSpanId: call.parentSpanId,
      plan: (parent: number, s: number, e: number) => llmSpan(call, parent, s, e, trace, clean),
    })),
    ...trace.retrievals.map((r) => ({
      startMs: r.startedAt!,
      durationMs: Math.max(0, r.wallSeconds ?? 0) * 1000,
      parentSpanId: r.parentSpanId,
      plan: (parent: number, s: number, e: number) => retrievalSpan(r, parent, s, e, clean),
    })),
  ].sort((a, b) => a.startMs - b.startMs);
  for (const e of events) spans.push(e.plan(parentOf(e.parentSpanId), e.startMs, e.startMs + e.durationMs));
}

/**
 * A trace from before issue 45 knows durations, not start times: its calls and retrievals are
 * grouped by purpose (in order of first appearance) and placed back to back, scaled to fit the
 * question's wall time when calls ran in parallel (their sum then exceeds it).
 */
function placedSpans(trace: Trace, spans: SpanPlan[], startMs: number, endMs: number, totalMs: number, clean: (v: unknown) => string): void {
  type Event = { kind: 'llm'; call: LlmCallRecord } | { kind: 'retrieval'; retrieval: RetrievalRecord };
  const steps = new Map<string, Event[]>();
  const events: Event[] = [
    ...trace.llmCalls.map((call) => ({ kind: 'llm' as const, call })),
    ...trace.retrievals.map((retrieval) => ({ kind: 'retrieval' as const, retrieval })),
  ];
  for (const e of events) {
    const purpose = e.kind === 'llm' ? e.call.purpose : e.retrieval.purpose;
    const list = steps.get(purpose) ?? [];
    list.push(e);
    steps.set(purpose, list);
  }

  const durationMs = (e: Event): number => (e.kind === 'llm' ? Math.max(0, e.call.wallSeconds) * 1000 : 0);
  const sumMs = events.reduce((s, e) => s + durationMs(e), 0);
  const scale = sumMs > totalMs ? totalMs / sumMs : 1;
  let cursor = startMs;
  for (const [purpose, list] of steps) {
    const stepIndex = spans.length;
    spans.push({ name: purpose, parent: 0, startMs: cursor, endMs: cursor, attributes: { 'mlflow.spanType': 'CHAIN', 'ambiqa.purpose': clean(purpose) } });
    for (const e of list) {
      const d = durationMs(e) * scale;
      const s = cursor;
      cursor = Math.min(endMs, cursor + d);
      spans.push(e.kind === 'llm' ? llmSpan(e.call, stepIndex, s, cursor, trace, clean) : retrievalSpan(e.retrieval, stepIndex, s, cursor, clean));
    }
    spans[stepIndex].endMs = cursor;
    spans[stepIndex].attributes['mlflow.spanInputs'] = clean({ calls: list.filter((e) => e.kind === 'llm').length, retrievals: list.filter((e) => e.kind === 'retrieval').length });
  }
}

function llmSpan(call: LlmCallRecord, parent: number, startMs: number, endMs: number, trace: Trace, clean: (v: unknown) => string): SpanPlan {
  const { promptTokens, completionTokens } = callUsage(call);
  const attributes: Record<string, AttrValue> = {
    'mlflow.spanType': 'CHAT_MODEL',
    'mlflow.message.format': 'openai',
    'mlflow.spanInputs': clean({
      messages: call.messages,
      temperature: call.params.temperature,
      top_p: call.params.topP,
      max_tokens: call.params.maxTokens,
      stop: call.params.stop,
      n: call.params.n,
      seed: call.params.seed,
      ...(call.judge ? { labels: call.judge.labels } : {}),
    }),
    'mlflow.spanOutputs': clean({
      choices: call.completions.map((c, index) => ({ index, message: { role: 'assistant', content: c.text }, finish_reason: c.finishReason })),
      ...(call.judge ? { judge: call.judge } : {}),
    }),
    // Left out when the provider did not report the tokens: MLflow would add a guess into the trace's count.
    ...(promptTokens !== undefined && completionTokens !== undefined
      ? { 'mlflow.chat.tokenUsage': JSON.stringify({ input_tokens: promptTokens, output_tokens: completionTokens, total_tokens: promptTokens + completionTokens }) }
      : {}),
    'mlflow.llm.model': clean(trace.llm.model),
    'mlflow.llm.provider': clean(trace.llm.provider),
    'ambiqa.purpose': clean(call.purpose),
    'ambiqa.call_index': call.index,
    'ambiqa.wall_seconds': call.wallSeconds,
    'ambiqa.latency_seconds': call.completions.reduce((s, c) => Math.max(s, c.latencySeconds), 0),
    'ambiqa.cache_hit': call.completions.length > 0 && call.completions.every((c) => c.cacheHit),
    'ambiqa.samples': call.completions.length,
  };
  if (call.judge) {
    attributes['ambiqa.judge.p'] = call.judge.p;
    attributes['ambiqa.judge.mode'] = call.judge.mode;
    attributes['ambiqa.judge.labels'] = call.judge.labels.map((l) => clean(l));
    attributes['ambiqa.judge.label_mass'] = call.judge.labelMass;
    if (call.judge.unparsed) attributes['ambiqa.judge.unparsed'] = true;
  }
  return { name: call.judge ? `judge ${call.purpose}` : `llm ${call.purpose}`, parent, startMs, endMs, attributes };
}

function retrievalSpan(r: RetrievalRecord, parent: number, startMs: number, endMs: number, clean: (v: unknown) => string): SpanPlan {
  return {
    name: `retrieve ${r.purpose}`,
    parent,
    startMs,
    endMs,
    attributes: {
      'mlflow.spanType': 'RETRIEVER',
      'mlflow.spanInputs': clean({ query: r.query, k: r.k, retriever: r.retriever, ...(r.reranker ? { reranker: r.reranker } : {}) }),
      // MLflow's retriever view expects documents ({page_content, metadata, id}); ambiqa keeps only ids and scores.
      'mlflow.spanOutputs': clean(r.hits.map((h) => ({ id: h.id, page_content: '', metadata: { doc_uri: h.id, score: h.score } }))),
      'ambiqa.purpose': clean(r.purpose),
      'ambiqa.retriever': clean(r.retriever),
      'ambiqa.passage_ids': r.hits.map((h) => clean(h.id)),
      'ambiqa.scores': r.hits.map((h) => String(h.score)),
    },
  };
}

// ------------------------------------------------------------------------------- spans (OTel SDK)

/** The OpenTelemetry packages the export uses. */
export interface Otel {
  api: typeof import('@opentelemetry/api');
  sdk: typeof import('@opentelemetry/sdk-trace-base');
  exporter: typeof import('@opentelemetry/exporter-trace-otlp-http');
}

let otel: Promise<Otel> | undefined;

/**
 * The OpenTelemetry SDK and OTLP exporter, loaded on the first trace export: about 260 CommonJS
 * modules and 0.2 s of start-up (docs/performance.md) that a run without tracking, `--help` and
 * every other command do not need. Only package names are imported here, never a relative `.ts`
 * path: tsx's CommonJS mode (the library entry, notebooks) passes a dynamic `import()` to Node's
 * ES-module resolver, which finds packages but not extensionless TypeScript files
 * (src/experiments/session.ts); test/tracking/otel-lazy.int.test.ts loads it from both entries.
 */
export function loadOtel(): Promise<Otel> {
  otel ??= Promise.all([import('@opentelemetry/api'), import('@opentelemetry/sdk-trace-base'), import('@opentelemetry/exporter-trace-otlp-http')]).then(
    ([api, sdk, exporter]) => ({ api, sdk, exporter }),
  );
  // A failed load (a broken install) is not cached: the next export tries again and reports it.
  otel.catch(() => (otel = undefined));
  return otel;
}

/** Hands out the ids we decide (deterministic per question) to the SDK's tracer. */
class PlannedIds implements IdGenerator {
  traceId = '';
  spanId = '';
  generateTraceId(): string {
    return this.traceId;
  }
  generateSpanId(): string {
    return this.spanId;
  }
}

/** Collects ended spans so that we, not a timer, decide when and how they are sent. */
class Collector implements SpanProcessor {
  spans: ReadableSpan[] = [];
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.spans.push(span);
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

/** Builds OpenTelemetry `ReadableSpan`s for export items with the SDK's own tracer. */
export class SpanBuilder {
  private readonly ids = new PlannedIds();
  private readonly collector = new Collector();
  private readonly provider: BasicTracerProvider;

  constructor(
    private readonly otel: Otel,
    private readonly limits: FieldLimits = DEFAULT_FIELD_LIMITS,
  ) {
    // Attribute limits are ours (fitTraceBudget, with a marker); the SDK's would cut silently.
    this.provider = new otel.sdk.BasicTracerProvider({
      idGenerator: this.ids,
      spanProcessors: [this.collector],
      spanLimits: { attributeCountLimit: 1000, attributeValueLengthLimit: Infinity },
    });
  }

  build(item: TraceExportItem, limits: FieldLimits = this.limits): { spans: ReadableSpan[]; truncatedFields: number; startMs: number; endMs: number } {
    const { context: otelContext, trace: otelTrace, SpanKind, SpanStatusCode, TraceFlags } = this.otel.api;
    const tracer = this.provider.getTracer('ambiqa');
    const plan = planSpans(item, limits);
    const started: Array<{ span: ReturnType<typeof tracer.startSpan>; ctx: Context }> = [];
    plan.spans.forEach((p, i) => {
      this.ids.traceId = item.traceIdHex;
      this.ids.spanId = spanIdFor(item.traceIdHex, i);
      const parentCtx =
        p.parent === null
          ? otelTrace.deleteSpan(otelContext.active())
          : otelTrace.setSpanContext(otelContext.active(), {
              traceId: item.traceIdHex,
              spanId: spanIdFor(item.traceIdHex, p.parent),
              traceFlags: TraceFlags.SAMPLED,
            });
      const span = tracer.startSpan(p.name, { startTime: p.startMs, kind: SpanKind.INTERNAL, attributes: p.attributes as Attributes }, parentCtx);
      span.setStatus({ code: p.error ? SpanStatusCode.ERROR : SpanStatusCode.OK, ...(p.error ? { message: p.error } : {}) });
      started.push({ span, ctx: parentCtx });
    });
    // End children before parents, as a live tracer would.
    for (let i = started.length - 1; i >= 0; i--) started[i].span.end(plan.spans[i].endMs);
    const spans = this.collector.spans;
    this.collector.spans = [];
    return { spans, truncatedFields: plan.truncatedFields, startMs: plan.spans[0].startMs, endMs: plan.spans[0].endMs };
  }
}

// ------------------------------------------------------------------------------- sending

/** Why a server cannot take traces; the run goes on, traces stay in the run directory. */
export class TracesUnsupportedError extends AmbiqaError {
  constructor(message: string, hint: string) {
    super(message, hint);
    this.name = 'TracesUnsupportedError';
  }
}

export class TraceTooLargeError extends AmbiqaError {
  constructor(readonly status: number) {
    super(`MLflow refused a trace batch as too large (HTTP ${status})`);
    this.name = 'TraceTooLargeError';
  }
}

/** First MLflow version with the OTLP endpoint `/v1/traces`. */
export const MIN_OTLP_VERSION = [3, 6, 0] as const;

export function versionAtLeast(version: string, min: readonly number[]): boolean {
  const parts = version.split(/[.+-]/).map((p) => Number.parseInt(p, 10));
  for (let i = 0; i < min.length; i++) {
    const v = Number.isFinite(parts[i]) ? parts[i] : 0;
    if (v !== min[i]) return v > min[i];
  }
  return true;
}

export interface OtlpSenderOptions {
  uri: string;
  experimentId: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/** Sends span batches through the OpenTelemetry OTLP/HTTP exporter and classifies failures. */
export class OtlpSender {
  private readonly exporter: OTLPTraceExporter;

  constructor(
    otel: Otel,
    private readonly options: OtlpSenderOptions,
  ) {
    this.exporter = new otel.exporter.OTLPTraceExporter({
      url: `${options.uri}/v1/traces`,
      headers: { ...(options.headers ?? {}), 'x-mlflow-experiment-id': options.experimentId },
      timeoutMillis: options.timeoutMs ?? 30_000,
    });
  }

  send(spans: ReadableSpan[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.exporter.export(spans, (result) => {
        if (result.code === 0) return resolve();
        reject(this.classify(result.error));
      });
    });
  }

  async shutdown(): Promise<void> {
    await this.exporter.shutdown();
  }

  private classify(error: unknown): Error {
    const status = (error as { code?: unknown })?.code;
    const data = String((error as { data?: unknown })?.data ?? (error instanceof Error ? error.message : error) ?? '');
    if (typeof status === 'number') {
      if (status === 413) return new TraceTooLargeError(status);
      if (status === 501) {
        const store = /supported by (\w+)/.exec(data)?.[1] ?? 'its tracking store';
        return new TracesUnsupportedError(
          `MLflow at ${this.options.uri} cannot store traces: OTLP span logging is not supported by ${store}`,
          'start the server with a SQL store, e.g. `mlflow server --backend-store-uri sqlite:///mlflow.db` (ambiqa mlflow-ui does); traces stay in the run directory (traces.jsonl)',
        );
      }
      if (status === 404 || status === 405) {
        return new TracesUnsupportedError(
          `MLflow at ${this.options.uri} has no OTLP endpoint /v1/traces (HTTP ${status}); traces need MLflow ≥ ${MIN_OTLP_VERSION.join('.')}`,
          'upgrade the tracking server (`pip install -U mlflow`); traces stay in the run directory (traces.jsonl)',
        );
      }
      // 429/5xx are MLflow HTTP errors like any other endpoint's: transient ones are buffered for sync.
      return new MlflowHttpError(status, `HTTP_${status}`, data.slice(0, 300), 'OTLP /v1/traces');
    }
    // No answer at all: the same error as every other request to a server that is down, so the
    // tracker switches to its journal and `ambiqa sync` sends the batch later.
    return new MlflowUnreachableError(this.options.uri, error instanceof Error ? error.message : String(error), { cause: error });
  }
}
