/**
 * The one scorer shape every metric family exposes (after braintrust's autoevals): a function of
 * `{ output, expected }` that returns a named `Score`.
 *
 * Scale: every `score` here is on the 0–100 scale the papers report (and `ExampleResult.metrics`
 * stores). `null` means the metric is undefined for this example (e.g. STR-EM of a question that
 * has no disambiguated questions); aggregates skip nulls and say how many they skipped.
 */
export interface Score {
  name: string;
  score: number | null;
  /** What produced the number (e.g. the D-F1 reader) and per-part details (e.g. per-DQ hits). */
  metadata?: Record<string, unknown>;
}

export type Scorer<Output, Expected, Extra extends object = object> = (
  args: { output: Output; expected: Expected } & Extra,
) => Score | Promise<Score>;

/** A scorer that needs no model and answers at once (every family except D-F1). */
export type SyncScorer<Output, Expected, Extra extends object = object> = (args: { output: Output; expected: Expected } & Extra) => Score;

/** Mean of a list, or null for an empty one (never NaN). */
export function meanOrNull(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}
