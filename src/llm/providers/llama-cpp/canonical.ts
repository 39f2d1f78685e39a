import type { ControlledEvaluateInputItem, LlamaContextSequence, Token } from 'node-llama-cpp';
import { LlmRequestError } from '../../errors';
import type { Slot } from './engine';

/**
 * Canonical evaluation: a prompt evaluated so that its state and next-token distribution are the
 * same bits whatever its slot held before (greedy replies and judgments do not depend on which
 * calls came first), and the other evaluations that read distributions (label paths, the
 * log-probability of a reply).
 */

/**
 * Tokens per chunk of a canonical evaluation. llama.cpp's CPU kernels compute a token's row with
 * other arithmetic depending on how many rows the batch has (and where the row sits in it), so
 * the same prompt evaluated in other splits gives other bits — by hand, P moved by up to 0.02.
 * A canonical evaluation always splits a prompt at multiples of this size, counted from position
 * 0, so every token is computed in the same batch whatever was evaluated before; resuming a slot
 * is allowed only at such a boundary. Small enough that a resumed prompt re-reads little (at most
 * this many tokens minus one), large enough that chunks stay efficient matrix products.
 */
export const CANONICAL_CHUNK = 64;

/**
 * Make `slot` hold `tokens`, evaluated canonically: everything from the last chunk boundary at or
 * below the prefix the slot already holds canonically is evaluated again, in chunks that end at
 * multiples of `chunk`. With `logitsAtEnd`, the last token is always evaluated (its next-token
 * distribution is returned) — so its chunk is always re-read, as it would be in a fresh slot.
 * The resulting state and distribution are bit-identical to evaluating `tokens` in an empty slot,
 * whatever the slot evaluated before (given the same model, threads and kernels).
 */
export async function evaluateCanonically(
  slot: Slot,
  tokens: Token[],
  options: { logitsAtEnd: boolean; chunk?: number },
): Promise<{ distribution?: Map<Token, number>; evaluated: number }> {
  const chunk = options.chunk ?? CANONICAL_CHUNK;
  const sequence = slot.sequence;
  const common = Math.min(sequence.compareContextTokens(tokens).firstDifferentIndex, slot.canonical, tokens.length);
  // The slot already holds exactly these tokens, evaluated canonically, and no logits are needed.
  if (!options.logitsAtEnd && common === tokens.length && slot.canonical === tokens.length) {
    if (sequence.nextTokenIndex > tokens.length) await sequence.eraseContextTokenRanges([{ start: tokens.length, end: sequence.nextTokenIndex }]);
    return { evaluated: 0 };
  }
  const resumable = options.logitsAtEnd ? Math.min(common, tokens.length - 1) : common;
  const start = Math.floor(resumable / chunk) * chunk;
  if (start < sequence.nextTokenIndex) await sequence.eraseContextTokenRanges([{ start, end: sequence.nextTokenIndex }]);
  slot.canonical = start;
  let distribution: Map<Token, number> | undefined;
  for (let from = start; from < tokens.length; from += chunk) {
    const to = Math.min(from + chunk, tokens.length);
    const wantLogits = options.logitsAtEnd && to === tokens.length;
    const out = await sequence.controlledEvaluate(
      tokens.slice(from, to).map((token, i): ControlledEvaluateInputItem => (wantLogits && from + i === to - 1 ? [token, { generateNext: { probabilities: true } }] : token)),
    );
    if (wantLogits) distribution = out[to - from - 1]?.next.probabilities;
    slot.canonical = to;
  }
  if (options.logitsAtEnd && !distribution) throw new LlmRequestError('the embedded model returned no next-token probabilities', { kind: 'other' });
  return { ...(distribution ? { distribution } : {}), evaluated: tokens.length - start };
}

/**
 * The model's distribution over the token after `tokens` (softmax of the logits, temperature 1,
 * no truncation), evaluating only what `sequence` does not already hold (at least the last token,
 * whose logits are needed). Used for the label tokens after a canonically evaluated prompt: they
 * are always evaluated one path at a time right after it, so their split never varies.
 */
export async function nextTokenDistribution(
  sequence: LlamaContextSequence,
  tokens: Token[],
): Promise<{ distribution: Map<Token, number>; evaluated: number }> {
  const common = Math.min(sequence.compareContextTokens(tokens).firstDifferentIndex, tokens.length - 1);
  if (common < sequence.nextTokenIndex) await sequence.eraseContextTokenRanges([{ start: common, end: sequence.nextTokenIndex }]);
  const suffix = tokens.slice(common);
  const last = suffix.length - 1;
  // No sampling options: the greedy sampler keeps the whole vocabulary, so these are the raw
  // softmax probabilities.
  const out = await sequence.controlledEvaluate(
    suffix.map((token, i): ControlledEvaluateInputItem => (i === last ? [token, { generateNext: { probabilities: true } }] : token)),
  );
  const distribution = out[last]?.next.probabilities;
  if (!distribution) throw new LlmRequestError('the embedded model returned no next-token probabilities', { kind: 'other' });
  return { distribution, evaluated: suffix.length };
}

/**
 * Sum of the model's log-probabilities of the generated tokens (temperature 1, no truncation:
 * the model's own distribution, whatever the sampling options were). The generated tokens are
 * evaluated again in one batch with their next-token distributions.
 */
export async function completionLogprob(slot: Slot, prompt: Token[], generated: Token[]): Promise<number> {
  if (generated.length === 0) return 0;
  const sequence = slot.sequence;
  const full = [...prompt, ...generated];
  const from = prompt.length - 1; // the position whose distribution predicts generated[0]
  const common = Math.min(sequence.compareContextTokens(full).firstDifferentIndex, from);
  slot.canonical = Math.min(slot.canonical, common);
  if (common < sequence.nextTokenIndex) await sequence.eraseContextTokenRanges([{ start: common, end: sequence.nextTokenIndex }]);
  const input: ControlledEvaluateInputItem[] = full
    .slice(common, full.length - 1)
    .map((token, i) => (common + i >= from ? [token, { generateNext: { probabilities: true } }] : token));
  const out = await sequence.controlledEvaluate(input);
  let sum = 0;
  for (const [i, token] of generated.entries()) {
    const p = out[from - common + i]?.next.probabilities?.get(token) ?? 0;
    sum += Math.log(Math.max(p, Number.MIN_VALUE));
  }
  return sum;
}
