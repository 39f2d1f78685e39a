/**
 * COMBO's two discriminators behind small interfaces. The paper trains RoBERTa-large on silver
 * labels; ambiqa ships zero-shot defaults — an LLM judge (share of "Yes" over `samples` replies,
 * or a probability the reply states) and embedding cosine — and a trained model can be plugged
 * in by implementing the interface and passing it to `ComboPipeline`.
 */
import { formatPassage, type Embedder, type Passage } from '../../retrieval/types';
import type { TraceRecorder } from '../../trace/recorder';
import { callLlm } from '../common/llm';
import { dot } from '../common/text';
import { parseProbability } from '../parsing';
import type { PipelineContext } from '../types';
import { consistencyPrompt, evidentialityPrompt } from './prompts';

/** What a scorer may use: the recorder (for LLM calls), the context, and judge sampling settings. */
export interface ScorerEnv {
  rec: TraceRecorder;
  ctx: PipelineContext;
  judge: { samples: number; temperature: number; maxTokens: number; topP: number; seed?: number };
}

export interface EvidentialityScorer {
  readonly name: string;
  /** P(evidential) in [0, 1] per retrieved passage. */
  score(question: string, retrieved: Passage[], env: ScorerEnv): Promise<number[]>;
}

export interface ConsistencyScorer {
  readonly name: string;
  /**
   * P(consistent) in [0, 1] for every (retrieved i, generated j). Rows with `skipRows[i]` need
   * not be computed (return 0 there).
   */
  score(question: string, retrieved: Passage[], generated: string[], env: ScorerEnv, skipRows?: boolean[]): Promise<number[][]>;
}

/** Ask a Yes/No judge; P = mean over samples of the parsed probability. Unreadable → 0.5, counted. */
async function judge(env: ScorerEnv, purpose: string, prompt: string): Promise<number> {
  const { texts } = await callLlm(env.rec, env.ctx, {
    purpose,
    prompt,
    n: env.judge.samples,
    temperature: env.judge.temperature,
    maxTokens: env.judge.maxTokens,
    topP: env.judge.topP,
    ...(env.judge.seed !== undefined ? { seed: env.judge.seed } : {}),
  });
  const values: number[] = [];
  for (const t of texts) {
    const p = parseProbability(t);
    if (p === null) env.rec.parseFailure(purpose, 'no Yes/No or probability in the judgement', t, 'sample ignored');
    else values.push(p);
  }
  if (values.length === 0) {
    env.rec.warn(purpose, 'no readable judgement', '0.5 (uninformative)');
    return 0.5;
  }
  return values.reduce((s, v) => s + v, 0) / values.length;
}

export class LlmEvidentialityScorer implements EvidentialityScorer {
  readonly name = 'llm-judge';

  async score(question: string, retrieved: Passage[], env: ScorerEnv): Promise<number[]> {
    const out: number[] = [];
    for (const p of retrieved) out.push(await judge(env, 'combo.evidentiality', evidentialityPrompt(question, p)));
    return out;
  }
}

export class LlmConsistencyScorer implements ConsistencyScorer {
  readonly name = 'llm-judge';

  async score(question: string, retrieved: Passage[], generated: string[], env: ScorerEnv, skipRows?: boolean[]): Promise<number[][]> {
    const out: number[][] = [];
    for (const [i, rp] of retrieved.entries()) {
      const row: number[] = [];
      for (const lp of generated) {
        row.push(skipRows?.[i] ? 0 : await judge(env, 'combo.consistency', consistencyPrompt(question, rp, lp)));
      }
      out.push(row);
    }
    return out;
  }
}

/** Cosine similarity of sentence embeddings, clipped to [0, 1]. */
export class EmbeddingEvidentialityScorer implements EvidentialityScorer {
  readonly name: string;

  constructor(private readonly embedder: Embedder) {
    this.name = `embedding-cosine:${embedder.name}`;
  }

  async score(question: string, retrieved: Passage[]): Promise<number[]> {
    if (retrieved.length === 0) return [];
    const [q, ...ps] = await this.embedder.embed([question, ...retrieved.map(formatPassage)]);
    return ps.map((p) => Math.max(0, Math.min(1, dot(q, p))));
  }
}

export class EmbeddingConsistencyScorer implements ConsistencyScorer {
  readonly name: string;

  constructor(private readonly embedder: Embedder) {
    this.name = `embedding-cosine:${embedder.name}`;
  }

  async score(_question: string, retrieved: Passage[], generated: string[]): Promise<number[][]> {
    if (retrieved.length === 0 || generated.length === 0) return retrieved.map(() => generated.map(() => 0));
    const rv = await this.embedder.embed(retrieved.map(formatPassage));
    const gv = await this.embedder.embed(generated);
    return rv.map((r) => gv.map((g) => Math.max(0, Math.min(1, dot(r, g)))));
  }
}
