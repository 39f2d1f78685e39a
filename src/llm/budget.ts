import { AmbiqaError } from '../errors';
import type { ModelMiddleware } from './middleware';
import { formatUsd } from './pricing';
import type { SpendGuard } from './types';

// The guard's contract is in types.ts (the client takes one); re-exported for callers of the cap.
export type { SpendGuard } from './types';

export class CostLimitError extends AmbiqaError {
  constructor(
    readonly spentUsd: number,
    readonly maxUsd: number,
  ) {
    super(
      `stopped by the cost cap: ${formatUsd(spentUsd)} spent, and the next call would pass the cap of ${formatUsd(maxUsd)} (llm.maxCostUsd / --max-cost)`,
      'finish the run with --resume and a higher --max-cost; finished calls replay from the cache at no cost',
    );
    this.name = 'CostLimitError';
  }
}

/**
 * A run's spending cap (`llm.maxCostUsd`, `--max-cost`).
 *
 * "Would pass the cap": before a call, the spend so far plus what the calls in flight are
 * expected to cost plus one more call (each estimated at the mean cost of this session's live
 * calls) must stay within the cap. The first calls of a session have no estimate yet, so a cap
 * can be passed by at most the calls that start before the first one returns; after that it holds
 * up to the error of the estimate.
 */
export class CostCap implements SpendGuard {
  /** Live spend of this session (settled calls). */
  private spent = 0;
  private settledCalls = 0;
  /** Estimated cost of calls in flight. */
  private reserved = 0;
  private tripped: CostLimitError | undefined;

  constructor(
    readonly maxUsd: number,
    /** Spent by earlier sessions of the same run. */
    readonly priorUsd = 0,
    /** Live calls of earlier sessions: their mean cost estimates the next call before this session has its own. */
    private readonly priorCalls = 0,
    /** Told once, when the cap stops calls (the runner aborts the run with it). */
    private readonly onExceeded: (error: CostLimitError) => void = () => {},
  ) {}

  /** Earlier sessions' spend plus this session's settled calls. */
  get spentUsd(): number {
    return this.priorUsd + this.spent;
  }

  open(): (costUsd: number | undefined) => void {
    if (this.tripped) throw this.tripped;
    const estimate =
      this.settledCalls > 0 ? this.spent / this.settledCalls : this.priorCalls > 0 ? this.priorUsd / this.priorCalls : 0;
    if (this.spentUsd + this.reserved + estimate > this.maxUsd || this.spentUsd >= this.maxUsd) {
      this.tripped = new CostLimitError(this.spentUsd, this.maxUsd);
      this.onExceeded(this.tripped);
      throw this.tripped;
    }
    this.reserved += estimate;
    let settled = false;
    return (costUsd) => {
      if (settled) return;
      settled = true;
      this.reserved -= estimate;
      if (costUsd !== undefined) {
        this.spent += costUsd;
        this.settledCalls += 1;
      }
    };
  }
}

/**
 * The run's cap as a layer of its model (`runModel`, run-model.ts): every call, generation or
 * judgment, carries `guard` inward to the client that serves it, which asks it before each live
 * call and tells it the cost after (client.ts). A cap cannot decide outside the client: only the
 * client knows whether a sample replays from the cache, and replays are never refused. Placed
 * outside judge routing, the one cap covers what the generator and the judge spend together.
 */
export function spendCap(guard: SpendGuard): ModelMiddleware {
  return {
    name: 'cost-cap',
    generate: (req, next) => next({ ...req, spendGuard: guard }),
    judge: (req, next) => next({ ...req, spendGuard: guard }),
  };
}
