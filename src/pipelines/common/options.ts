import { z } from 'zod';

/** Shared option builders, so every pipeline names and bounds the same knob the same way. */
export const temperature = (def: number, what: string) =>
  z.number().min(0).max(2).default(def).describe(`sampling temperature for ${what}`);

export const maxTokens = (def: number, what: string) =>
  z.int().min(1).max(8192).default(def).describe(`max new tokens for ${what}`);

export const nShots = (def: number) => z.int().min(0).max(32).default(def).describe('few-shot demos per prompt (kNN)');

export const topP = z.number().gt(0).max(1).default(1).describe('nucleus sampling mass');

export const seed = z.int().optional().describe('sampling seed for providers that honour one');

export const rerankerChoice = z
  .enum(['context', 'embedder', 'none'])
  .default('context')
  .describe("reranker: the context's, an embedding-similarity one, or none");

/**
 * A probability threshold on a graded judgment, in [0, 1] (0.5 reproduces a paper's argmax over
 * two labels). Out-of-range values fail validation naming the option
 * (`pipeline toc: options.pruneThreshold: must be ≤ 1 (got 1.5)`).
 */
export const probabilityThreshold = (def: number, what: string) => z.number().min(0).max(1).default(def).describe(what);

/**
 * Worked examples in a yes/no verification prompt: 'none' is the paper's zero-shot prompt;
 * 'balanced' shows one supported and one unsupported example of ambiqa's own first, so a small
 * judge that prefers one label sees both answers (issue 26; docs/pipelines.md).
 */
export const verifyDemos = z
  .enum(['none', 'balanced'])
  .default('none')
  .describe("worked examples in the verification prompt: 'none' (the paper's zero-shot prompt) or 'balanced' (one supported, one unsupported example of ambiqa's own)");
