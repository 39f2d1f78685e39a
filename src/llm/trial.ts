import { AsyncLocalStorage } from 'node:async_hooks';
import { AmbiqaError } from '../errors';
import type { ModelMiddleware } from './middleware';

/**
 * Repeated trials (`trials: k`, issue 46): each question is answered k times, and each answer must
 * draw its own samples. The run loop says which trial a question's calls belong to by running the
 * pipeline inside `inTrial`; the `trial` layer of the run's model (`runMiddleware`) reads it and
 * moves a sampled call's sample indexes to trial × `TRIAL_SAMPLE_STRIDE` + the index the pipeline
 * asked for. Sample indexes are part of the cache key and of the seed a provider is sent, so trial
 * t's samples are drawn (and cached) apart from trial 0's, and a resumed trial replays its own.
 *
 * An AsyncLocalStorage rather than a field of the request: the pipelines never learn about trials
 * (a pipeline written for one answer per question works under k), and one run model serves every
 * (question, trial) in flight at once.
 */
const currentTrial = new AsyncLocalStorage<number>();

/**
 * Sample indexes a trial owns: trial t draws t × stride … t × stride + stride − 1. Far above any
 * call's n (self-consistency asks at most 64), so trials never share an index.
 */
export const TRIAL_SAMPLE_STRIDE = 1000;

/** Runs `fn` (a pipeline answering one question) as trial `trial` of it. */
export function inTrial<T>(trial: number, fn: () => T): T {
  return currentTrial.run(trial, fn);
}

/** The trial the calling code runs in (0 outside any). */
export function trialNow(): number {
  return currentTrial.getStore() ?? 0;
}

/**
 * The run model's `trial` layer. Only sampled calls (temperature > 0) move: a greedy call asks for
 * the one most likely reply, which is the same in every trial, so it keeps its key and trial t
 * replays trial 0's from the cache instead of paying for it again. Judgments are greedy reads of
 * one distribution and pass through as well.
 */
export function trialSamples(): ModelMiddleware {
  return {
    name: 'trial',
    generate: async (req, next) => {
      const trial = trialNow();
      if (trial === 0 || !((req.temperature ?? 0) > 0)) return next(req);
      const first = req.firstSample ?? 0;
      if (first + (req.n ?? 1) > TRIAL_SAMPLE_STRIDE) {
        throw new AmbiqaError(
          `LLM request ${req.purpose ?? 'unspecified'}: samples ${first}…${first + (req.n ?? 1) - 1} pass the ${TRIAL_SAMPLE_STRIDE} sample indexes a trial owns`,
          'ask for fewer samples per call under trials',
        );
      }
      return next({ ...req, firstSample: trial * TRIAL_SAMPLE_STRIDE + first });
    },
  };
}
