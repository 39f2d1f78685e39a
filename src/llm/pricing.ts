import { z } from 'zod';
import type { TokenUsage } from './types';

/**
 * What a call costs in US dollars. Prices are per million tokens, as vendors publish them.
 * Cached prompt tokens (those the endpoint reports in `usage.prompt_tokens_details.cached_tokens`)
 * are billed at `cachedPrompt` when given, else at `prompt`. Replays from ambiqa's own cache cost
 * nothing (no request was sent), and the embedded model costs nothing.
 */
export const pricingSchema = z.strictObject({
  /** USD per million prompt (input) tokens. */
  prompt: z.number().min(0).max(10_000),
  /** USD per million completion (output) tokens. */
  completion: z.number().min(0).max(10_000),
  /** USD per million prompt tokens the endpoint served from its own prompt cache (default: `prompt`). */
  cachedPrompt: z.number().min(0).max(10_000).optional(),
});

export type Pricing = z.infer<typeof pricingSchema>;

/** The date the built-in table was taken from the vendors' public price pages. */
export const BUILTIN_PRICES_AS_OF = '2025-06-01';

/**
 * List prices of common hosted models (USD per million tokens) as published on
 * `BUILTIN_PRICES_AS_OF`. Prices change: `llm.pricing` in a config always wins, and a run records
 * which price it used (`llm.pricing` in its settings).
 */
export const BUILTIN_PRICES: Readonly<Record<string, Pricing>> = {
  'gpt-4o': { prompt: 2.5, completion: 10, cachedPrompt: 1.25 },
  'gpt-4o-mini': { prompt: 0.15, completion: 0.6, cachedPrompt: 0.075 },
  'gpt-4.1': { prompt: 2, completion: 8, cachedPrompt: 0.5 },
  'gpt-4.1-mini': { prompt: 0.4, completion: 1.6, cachedPrompt: 0.1 },
  'gpt-4.1-nano': { prompt: 0.1, completion: 0.4, cachedPrompt: 0.025 },
  'gpt-3.5-turbo': { prompt: 0.5, completion: 1.5 },
  'o4-mini': { prompt: 1.1, completion: 4.4, cachedPrompt: 0.275 },
  'claude-3-5-haiku': { prompt: 0.8, completion: 4, cachedPrompt: 0.08 },
  'claude-sonnet-4': { prompt: 3, completion: 15, cachedPrompt: 0.3 },
  'gemini-2.0-flash': { prompt: 0.1, completion: 0.4, cachedPrompt: 0.025 },
};

/**
 * The built-in price of a model name: exact, else the name without a provider prefix
 * (`openai/gpt-4o-mini`) or a dated snapshot suffix (`gpt-4o-mini-2024-07-18`, `claude-sonnet-4-20250514`).
 */
export function builtinPrice(model: string): { name: string; pricing: Pricing } | undefined {
  const bare = model.trim().toLowerCase().replace(/^.*\//, '');
  const candidates = [bare, bare.replace(/-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$/, '')];
  for (const name of candidates) {
    const pricing = BUILTIN_PRICES[name];
    if (pricing) return { name, pricing };
  }
  return undefined;
}

/** Where a client's price comes from; said in run settings and on the progress line. */
export interface PriceSource {
  pricing: Pricing;
  /** e.g. `embedded model: free`, `llm.pricing`, `built-in table (2025-06-01): gpt-4o-mini`. */
  source: string;
  /** The embedded model (in-process): costs nothing, and the outputs say so. */
  free?: boolean;
}

/**
 * USD of one live call's tokens; undefined when the provider did not report them, so that a call
 * of unknown size is not counted as free.
 */
export function callCostUsd(usage: TokenUsage, pricing: Pricing): number | undefined {
  if (usage.promptTokens === undefined || usage.completionTokens === undefined) return undefined;
  const cached = Math.min(usage.cachedPromptTokens ?? 0, usage.promptTokens);
  const fresh = usage.promptTokens - cached;
  const cachedRate = pricing.cachedPrompt ?? pricing.prompt;
  return (fresh * pricing.prompt + cached * cachedRate + usage.completionTokens * pricing.completion) / 1e6;
}

/** A price as people read it: `$0.15 / $0.60 per M tokens (cached $0.075)`. */
export function describePricing(p: Pricing): string {
  const usd = (x: number) => `$${Number(x.toPrecision(4))}`;
  return `${usd(p.prompt)} prompt / ${usd(p.completion)} completion per M tokens${p.cachedPrompt !== undefined ? ` (cached prompt ${usd(p.cachedPrompt)})` : ''}`;
}

/** Dollars for a line of output: `$0.0123`, `$1.23`, `$0`. */
export function formatUsd(x: number): string {
  if (x === 0) return '$0';
  // Three significant digits below a cent (`$0.000175`, not `$0.0002` or `1.75e-4`).
  if (x < 0.01) return x >= 1e-6 ? `$${Number(x.toPrecision(3))}` : `$${x.toExponential(1)}`;
  if (x < 1) return `$${x.toFixed(4)}`;
  return `$${x.toFixed(2)}`;
}
