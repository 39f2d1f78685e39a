/**
 * How much an early exit could save on a set of questions if its ambiguity detector never erred:
 * it exits on every unambiguous question and on no ambiguous one. The exit rules (Diva's
 * type `none`, ToC's single-interpretation root) answer an exited question in a fixed number of
 * calls (ToC: the root expansion and the answer; Diva: the diversification and the answer), so
 * the bound is the fixed run's calls on the unambiguous questions above that cost, over all of its
 * calls. A saving above the bound can only come from exiting on ambiguous questions, that is, from
 * answering them without the readings the full method would have added.
 */
export interface FixedQuestion {
  id: string;
  calls: number;
}

export interface ExitBound {
  /** Share of the fixed run's calls a never-wrong detector saves (0–1). */
  perfectDetector: number;
  /** Share saved by exiting on every question, ambiguous or not: the most any exit can save. */
  exitEverywhere: number;
}

/**
 * `exitCost` is what one exit costs, in calls, as measured by the exit run on the questions it
 * exited; a question the fixed run answered in fewer calls saves nothing (not a negative amount).
 */
export function exitBound(fixed: readonly FixedQuestion[], isUnambiguous: (id: string) => boolean, exitCost: number): ExitBound {
  if (!Number.isFinite(exitCost) || exitCost < 0) throw new Error(`exit cost must be a non-negative number of calls, got ${exitCost}`);
  const total = fixed.reduce((sum, q) => sum + q.calls, 0);
  if (total === 0) return { perfectDetector: 0, exitEverywhere: 0 };
  const saved = (q: FixedQuestion): number => Math.max(0, q.calls - exitCost);
  const onUnambiguous = fixed.filter((q) => isUnambiguous(q.id)).reduce((sum, q) => sum + saved(q), 0);
  const everywhere = fixed.reduce((sum, q) => sum + saved(q), 0);
  return { perfectDetector: onUnambiguous / total, exitEverywhere: everywhere / total };
}
