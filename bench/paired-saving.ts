/**
 * How sure a measured saving is. An adaptive option and the fixed budget answer the same
 * questions, and most of the spread in what an option saves comes from which questions were
 * asked (an exit saves much on a question whose fixed tree was large, nothing on one it let
 * through). So the interval resamples questions with both of their costs together (a paired
 * bootstrap) and recomputes the saving 1 − Σ adaptive / Σ fixed on each resample: a ratio of
 * sums, as the point estimate is, not a mean of per-question ratios, which small questions would
 * dominate.
 */
import { bootstrapInterval, type BootstrapOptions } from '../src/metrics/bootstrap';

/** One question's cost (calls, samples or tokens) under the fixed budget and under the option. */
export interface PairedCost {
  fixed: number;
  adaptive: number;
}

export interface SavingInterval {
  /** 1 − Σ adaptive / Σ fixed over all questions (NaN when the fixed run cost nothing). */
  saving: number;
  low: number;
  high: number;
}

export function pairedSaving(rows: readonly PairedCost[], options: BootstrapOptions = {}): SavingInterval {
  const ratio = (indices: ArrayLike<number>): number => {
    let fixed = 0;
    let adaptive = 0;
    for (let i = 0; i < indices.length; i++) {
      fixed += rows[indices[i]].fixed;
      adaptive += rows[indices[i]].adaptive;
    }
    return fixed > 0 ? 1 - adaptive / fixed : NaN;
  };
  const saving = ratio(rows.map((_, i) => i));
  const { low, high } = bootstrapInterval(rows.length, ratio, options);
  return { saving, low, high };
}

/**
 * Pairs two runs' questions by id and reads `value` from each side (a cost, or the whole row to
 * read several costs from one pairing). A question only one run answered cannot be paired; it is
 * counted in `unpaired` so that the caller can say the saving leaves it out.
 */
export function pairById<T extends { id: string }, V = number>(
  fixed: readonly T[],
  adaptive: readonly T[],
  value: (row: T) => V,
): { rows: Array<{ fixed: V; adaptive: V }>; unpaired: number } {
  const byId = new Map(adaptive.map((row) => [row.id, row]));
  const rows: Array<{ fixed: V; adaptive: V }> = [];
  for (const f of fixed) {
    const a = byId.get(f.id);
    if (a) rows.push({ fixed: value(f), adaptive: value(a) });
  }
  return { rows, unpaired: fixed.length + adaptive.length - 2 * rows.length };
}
