/**
 * COMBO's two discriminators behind small interfaces. The paper trains RoBERTa-large on silver
 * labels and uses their probabilities; ambiqa ships zero-shot defaults — an LLM judge giving
 * P(Yes) from next-token probabilities (`LanguageModel.judge`) and embedding cosine — and a
 * trained model can be plugged in by implementing the interface and passing it to `ComboPipeline`.
 */
import { formatPassage, type Embedder, type Passage } from '../../retrieval/types';
import type { TraceRecorder } from '../../trace/recorder';
import { CONTENT_FREE, contentFreePassage, judgeCalibrated, type JudgeCalibration } from '../common/judge';
import { dot } from '../common/text';
import type { PipelineContext } from '../types';
import { consistencyPrompt, evidentialityPrompt } from './prompts';

/** What a scorer may use: the recorder (for LLM calls) and the context. */
export interface ScorerEnv {
  rec: TraceRecorder;
  ctx: PipelineContext;
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

/**
 * P(Yes) of a Yes/No judge. A text-mode reply naming neither label (an endpoint without
 * probabilities) scores 0.5, uninformative, and is counted as a parse failure — never read as a
 * number ("No, passage 1 …" is No, not a score of 1).
 */
async function judge(env: ScorerEnv, purpose: string, prompt: string, contentFree: string, calibration: JudgeCalibration): Promise<number> {
  const v = await judgeCalibrated(env.rec, env.ctx, {
    purpose,
    prompt,
    contentFree: () => ({ prompt: contentFree }),
    labels: ['Yes', 'No'],
    calibration,
    fallback: '0.5 (uninformative)',
  });
  return v.unparsed ? 0.5 : v.p;
}

export class LlmEvidentialityScorer implements EvidentialityScorer {
  readonly name: string;

  /** `calibration`: contextual calibration of the judge (`judgeCalibration`; common/judge.ts). */
  constructor(private readonly calibration: JudgeCalibration = 'none') {
    this.name = calibration === 'none' ? 'llm-judge' : `llm-judge:${calibration}`;
  }

  async score(question: string, retrieved: Passage[], env: ScorerEnv): Promise<number[]> {
    const out: number[] = [];
    // Content-free twin: question and passage replaced by the placeholder.
    const contentFree = evidentialityPrompt(CONTENT_FREE, contentFreePassage());
    for (const p of retrieved) {
      out.push(await judge(env, 'combo.evidentiality', evidentialityPrompt(question, p), contentFree, this.calibration));
    }
    return out;
  }
}

export class LlmConsistencyScorer implements ConsistencyScorer {
  readonly name: string;

  constructor(private readonly calibration: JudgeCalibration = 'none') {
    this.name = calibration === 'none' ? 'llm-judge' : `llm-judge:${calibration}`;
  }

  async score(question: string, retrieved: Passage[], generated: string[], env: ScorerEnv, skipRows?: boolean[]): Promise<number[][]> {
    const out: number[][] = [];
    const contentFree = consistencyPrompt(CONTENT_FREE, contentFreePassage(), CONTENT_FREE);
    for (const [i, rp] of retrieved.entries()) {
      const row: number[] = [];
      for (const lp of generated) {
        row.push(
          skipRows?.[i] ? 0 : await judge(env, 'combo.consistency', consistencyPrompt(question, rp, lp), contentFree, this.calibration),
        );
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

  async score(_question: string, retrieved: Passage[], generated: string[], _env?: ScorerEnv, skipRows?: boolean[]): Promise<number[][]> {
    if (retrieved.length === 0 || generated.length === 0) return retrieved.map(() => generated.map(() => 0));
    const rv = await this.embedder.embed(retrieved.map(formatPassage));
    const gv = await this.embedder.embed(generated);
    // Skipped rows read 0 like the LLM scorer's, so a trace means the same whichever scorer wrote it.
    return rv.map((r, i) => gv.map((g) => (skipRows?.[i] ? 0 : Math.max(0, Math.min(1, dot(r, g))))));
  }
}
