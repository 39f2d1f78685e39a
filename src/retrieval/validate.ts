import { AmbiqaError } from '../errors';

/** Every `search(query, k)` and `rerank(..., k)` starts here: k must be a positive integer. */
export function validateK(k: number, option = 'k'): void {
  if (!Number.isInteger(k) || k <= 0) {
    throw new AmbiqaError(`${option} must be a positive integer, got ${k}`, `pass ${option} >= 1`);
  }
}
