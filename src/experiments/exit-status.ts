/**
 * Exit statuses of the commands that do a job a script waits on (`run`, `sweep`, `merge`,
 * `compare`, `score`, `slurm`, `reproduce`). A scheduler, a CI job or a sweep reads nothing else, so each
 * outcome has its own number (docs/cli.md's table lists them). The ones that existed before
 * this table (1 for an error or bad input, 2 for a command line that does not parse, 3 for the
 * cost cap, 130 for an interrupt) keep their numbers.
 */
export const ExitStatus = {
  /** Every selected question was answered (or the command did its whole job). */
  ok: 0,
  /** An error, or input refused before any work (a config, a data file, an option). */
  error: 1,
  /** The command line itself did not parse (unknown command or option). */
  usage: 2,
  /** `--max-cost` / `llm.maxCostUsd` stopped the run; `--resume` continues it. */
  costCap: 3,
  /** Some questions were answered and some failed (the summary groups the failures by cause). */
  someFailed: 4,
  /** No selected question was answered. */
  noneAnswered: 5,
  /** `ambiqa reproduce`: the re-run finished, and some output differs from the recorded one (or is missing). */
  differs: 6,
  /** Ctrl-C, SIGTERM (scancel, a time limit, a preemption) or SIGHUP stopped it; `--resume` continues it. */
  interrupted: 130,
} as const;

export type ExitStatusName = keyof typeof ExitStatus;
export type ExitStatusCode = (typeof ExitStatus)[ExitStatusName];

/**
 * The status of several jobs together (a sweep's points, a launch's shards): the worst one.
 * Worse means less of the job is done and less of it comes back by itself with `--resume`:
 * an error or a run that answered nothing outranks a stop (cap, interrupt), which outranks a
 * partial failure; any status this table does not know counts as an error.
 */
export function worstExitStatus(statuses: readonly number[]): number {
  const rank = (s: number): number => {
    switch (s) {
      case ExitStatus.ok:
        return 0;
      case ExitStatus.someFailed:
      case ExitStatus.differs:
        return 1;
      case ExitStatus.costCap:
        return 2;
      case ExitStatus.interrupted:
        return 3;
      case ExitStatus.noneAnswered:
        return 4;
      case ExitStatus.usage:
        return 5;
      default:
        return 6;
    }
  };
  return statuses.reduce((worst, s) => (rank(s) > rank(worst) ? s : worst), ExitStatus.ok as number);
}
