/**
 * Few-shot demos: turning dataset examples into demos, and choosing them per question.
 *
 * METHODS.md: demos are chosen per question by nearest-neighbour search over question embeddings
 * (MiniLM), never the question itself (leave-one-out, so the ASQA dev split can serve as its own
 * demo pool), and a demo whose answers overlap the current candidate answers (token F1 > 0.8) is
 * dropped. Pools: ASQA dev (leave-one-out), adversarial-HotpotQA `sim_train`, FEVER `train_subset`.
 */
import type { Example } from '../datasets/types';
import type { Embedder } from '../retrieval/types';
import { AmbiqaError } from '../errors';
import type { Demo, DemoQuestion, DemoSelectOptions, DemoSelector } from './types';
import { dot, maxTokenF1, normaliseQuestion } from './common/text';

export const DEFAULT_DEMO_OVERLAP_F1 = 0.8;

/** What a dataset example shows when it is used as a demo. Gold data of the *demo* only. */
export function demoFromExample(example: Example): Demo {
  const demo: Demo = { id: example.id, question: example.question };
  if (example.qaPairs.length > 0) {
    demo.qaPairs = example.qaPairs
      .filter((p) => p.shortAnswers.length > 0)
      .map((p) => ({ question: p.question, answer: p.shortAnswers[0] }));
  }
  if (example.longAnswers.length > 0) demo.longAnswer = example.longAnswers[0];
  if (example.label !== undefined) demo.answer = example.label;
  else if (example.answers.length > 0 && example.qaPairs.length === 0) demo.answer = example.answers[0];
  if (example.rationale) demo.rationale = example.rationale;
  return demo;
}

/** A demo pool from examples; examples without anything to show (no answer at all) are skipped. */
export function buildDemoPool(examples: Example[]): Demo[] {
  return examples
    .map(demoFromExample)
    .filter((d) => d.answer !== undefined || d.longAnswer !== undefined || (d.qaPairs?.length ?? 0) > 0);
}

/** Every short answer a demo would show (its DQ answers and its answer). */
export function demoAnswers(demo: Demo): string[] {
  const answers = (demo.qaPairs ?? []).map((p) => p.answer);
  if (demo.answer !== undefined) answers.push(demo.answer);
  return answers.filter((a) => a.trim() !== '');
}

function isSameQuestion(demo: Demo, question: DemoQuestion): boolean {
  // A DQ loaded as a question of its own must not be shown its AQ, whose annotation lists it.
  return (
    demo.id === question.id ||
    (question.sourceId !== undefined && demo.id === question.sourceId) ||
    normaliseQuestion(demo.question) === normaliseQuestion(question.question)
  );
}

function overlaps(demo: Demo, options: DemoSelectOptions | undefined): boolean {
  const exclude = (options?.excludeAnswers ?? []).filter((a) => a.trim() !== '');
  if (exclude.length === 0) return false;
  const threshold = options?.overlapF1 ?? DEFAULT_DEMO_OVERLAP_F1;
  return demoAnswers(demo).some((a) => maxTokenF1(a, exclude) > threshold);
}

function checkK(k: number): void {
  if (!Number.isInteger(k) || k < 0) {
    throw new AmbiqaError(`demo count k=${k} (option nShots) must be a whole number ≥ 0`, 'set the pipeline option nShots to 0 or more');
  }
}

/**
 * Nearest neighbours by cosine similarity of question embeddings. The pool is embedded once,
 * lazily, in batches; each `select` embeds only the query question.
 */
export class KnnDemoSelector implements DemoSelector {
  private vectors: Promise<Float32Array[]> | null = null;

  constructor(
    readonly pool: Demo[],
    private readonly embedder: Embedder,
    private readonly batchSize = 64,
  ) {}

  private poolVectors(): Promise<Float32Array[]> {
    if (!this.vectors) {
      this.vectors = (async () => {
        const out: Float32Array[] = [];
        for (let i = 0; i < this.pool.length; i += this.batchSize) {
          const batch = this.pool.slice(i, i + this.batchSize).map((d) => d.question);
          out.push(...(await this.embedder.embed(batch)));
        }
        return out;
      })();
      // A failed embedding must not poison every later call.
      this.vectors.catch(() => {
        this.vectors = null;
      });
    }
    return this.vectors;
  }

  async select(question: DemoQuestion, k: number, options?: DemoSelectOptions): Promise<Demo[]> {
    checkK(k);
    if (k === 0 || this.pool.length === 0) return [];
    const [vectors, [query]] = await Promise.all([this.poolVectors(), this.embedder.embed([question.question])]);
    const ranked = this.pool
      .map((demo, i) => ({ demo, i, score: dot(query, vectors[i]) }))
      // Ties keep pool order so selection is deterministic.
      .sort((a, b) => b.score - a.score || a.i - b.i);
    const out: Demo[] = [];
    for (const { demo } of ranked) {
      if (out.length >= k) break;
      if (isSameQuestion(demo, question) || overlaps(demo, options)) continue;
      out.push(demo);
    }
    return out;
  }
}

/**
 * The first `k` demos of a fixed pool, in pool order (with the same leave-one-out and overlap
 * filters). Verify-and-Edit's paper uses a fixed hand-annotated set; this reproduces that.
 */
export class FixedDemoSelector implements DemoSelector {
  constructor(readonly pool: Demo[]) {}

  async select(question: DemoQuestion, k: number, options?: DemoSelectOptions): Promise<Demo[]> {
    checkK(k);
    const out: Demo[] = [];
    for (const demo of this.pool) {
      if (out.length >= k) break;
      if (isSameQuestion(demo, question) || overlaps(demo, options)) continue;
      out.push(demo);
    }
    return out;
  }
}
