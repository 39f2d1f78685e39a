/** One example shape for every dataset; loaders fill what their format carries. */

/** The datasets ambiqa reads (one loader each); the one list every other place derives from. */
export const datasetNames = ['asqa', 'ambignq', 'situatedqa', 'hotpotqa-adversarial', '2wikimultihop', 'fever'] as const;
export type DatasetName = (typeof datasetNames)[number];

/** A disambiguated question (DQ) with its short answers (ASQA `qa_pairs`, AmbigNQ multipleQAs). */
export interface QaPair {
  question: string;
  shortAnswers: string[];
  /** ASQA: the Wikipedia passage that supports the pair, when the file carries one. */
  context?: string;
  wikipage?: string;
}

export type FeverLabel = 'SUPPORTS' | 'REFUTES' | 'NOT ENOUGH INFO';

/** A passage the example itself carries (HotpotQA paragraphs, FEVER evidence). */
export interface ExamplePassage {
  title: string;
  text: string;
  /** HotpotQA: supporting paragraph; false for distractors and adversarial additions. */
  supporting?: boolean;
}

export interface Example {
  id: string;
  dataset: DatasetName;
  question: string;
  /** Flat list of acceptable short answers (for EM/F1 datasets; union of DQ answers for ASQA). */
  answers: string[];
  /**
   * ASQA / AmbigNQ: the interpretations. Empty for unambiguous questions, except an ASQA
   * disambiguated question loaded as a question of its own (dataset option `questions`), which
   * carries itself as its one pair so that the ASQA metrics score it as one interpretation.
   */
  qaPairs: QaPair[];
  /** ASQA: reference long answers (one per annotation). */
  longAnswers: string[];
  /** FEVER: the gold label. */
  label?: FeverLabel;
  /** Passages the example carries (HotpotQA / 2WikiMultihopQA paragraphs, FEVER evidence, ASQA knowledge). */
  passages: ExamplePassage[];
  /**
   * The example this one was derived from (an ASQA disambiguated question's ambiguous question).
   * Leave-one-out demos and `exclude: own` retrieval treat it as the question itself, so a DQ
   * never sees its own AQ's annotation as a demo or its AQ's passages when those are excluded.
   */
  sourceId?: string;
  /**
   * Adversarial HotpotQA with an alternative-answers file loaded (dataset option `alternatives`):
   * the other answers Verify-and-Edit's code counts as correct (often none). Kept apart from
   * `answers` so that EM against the gold answer alone stays reported (`em`) beside EM counting
   * them (`em_alt`). Absent when no such file was loaded.
   */
  alternativeAnswers?: string[];
  /** HotpotQA-adversarial, 2WikiMultihopQA: the gold rationale (supporting sentences); useful as a CoT demo. */
  rationale?: string;
  /**
   * Format-specific facts a loader keeps beside the common fields (plain JSON): SituatedQA
   * `originalQuestion`, `date`/`dateType`/`location` and `anyAnswer`; AmbigNQ `annotations`
   * (each `{type, answers: string[][]}`, one answer cluster per interpretation); the source file's
   * own id where `id` had to be made unique; `source` for examples read from another layout; and
   * any other scalar field of the record the loader does not read (`unreadScalars`, read.ts), so
   * that a run can report its metrics by it (`groupBy`, groups.ts).
   */
  meta?: Record<string, unknown>;
}
