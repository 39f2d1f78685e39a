/**
 * Silver labels for graded judges: for every judgment a pipeline made with a P it thresholded,
 * whether the gold data says the judgment should have been "yes". The definitions (and why they
 * were chosen) are in docs/metrics.md, "Judge diagnostics"; in short:
 *
 * - `toc.verify` (a tree node): the node's answer matches a gold disambiguation — Answer-F1 ≥ 0.5
 *   against the short answers of any gold DQ (answer-f1.ts); datasets without DQs use the
 *   example's answers as one DQ. A node without an answer has no label.
 * - `diva.verify` (one interpretation against the selected passages): some judged passage
 *   contains a gold short answer of the question (DPR has-answer). Passages whose text is not
 *   at hand leave the judgment unlabelled.
 * - `combo.evidentiality` (one retrieved passage): the passage contains a gold short answer.
 * - `combo.consistency` (one retrieved/generated pair): the two passages share a gold short
 *   answer → true; exactly one of them, or each a different one, contains a gold answer → false;
 *   neither contains one → no label (gold says nothing about whether they agree).
 * - `ve.consistency` (the question's majority vote share, used as a confidence): the final
 *   answer is right, exact match against any gold answer.
 *
 * Labels are computed when a question is scored (the gold example and the corpus are at hand
 * then) and stored with its result (`ExampleResult.judgments`); judge-quality.ts turns them
 * into per-run statistics.
 */
import type { Example } from '../datasets/types';
import { answerTokens, hasAnswerInTokens } from '../retrieval/has-answer';
import type { LabelledJudgment } from '../run-files';
import type { ComboDecisions, DivaDecisions, TocDecisions, Trace, VeDecisions } from '../trace/types';
import { answerF1 } from './answer-f1';
import { exactMatch } from './squad';

/** The judge purposes that get diagnostics, in the order reports list them. */
export const judgePurposes = ['toc.verify', 'diva.verify', 'combo.evidentiality', 'combo.consistency', 've.consistency'] as const;
export type JudgePurpose = (typeof judgePurposes)[number];

/** Node Answer-F1 (0–100) at or above which a ToC node counts as a correct disambiguation. */
export const TOC_ANSWER_F1_MIN = 50;

/** The silver label of each purpose in words (JudgeDiagnostics.silverLabel; docs/metrics.md). */
export const silverLabels: Record<JudgePurpose, string> = {
  'toc.verify': 'the node answer matches a gold disambiguation (Answer-F1 ≥ 0.5)',
  'diva.verify': 'a judged passage contains a gold short answer of the question',
  'combo.evidentiality': 'the retrieved passage contains a gold short answer',
  'combo.consistency': 'retrieved and generated passage contain the same gold short answer (pairs where neither has one are unlabelled)',
  've.consistency': 'the final answer is right (exact match with a gold answer)',
};

/** A passage's text by corpus id; undefined when it is not at hand (no corpus, an unknown id). */
export type PassageText = (id: string) => string | undefined;

/** Every gold short answer of an example: its DQs' answers and its flat answer list, deduplicated. */
export function goldShortAnswers(example: Example): string[] {
  const all = [...example.qaPairs.flatMap((q) => q.shortAnswers), ...example.answers];
  return [...new Set(all.filter((a) => a.trim() !== ''))];
}

/**
 * The question's graded judgments with their silver labels, in trace order. `passageText` finds
 * retrieved passages' texts (Diva, COMBO); without it those judgments are unlabelled.
 */
export function labelJudgments(trace: Trace, example: Example, passageText: PassageText = () => undefined): LabelledJudgment[] {
  const d = trace.decisions;
  switch (d.kind) {
    case 'toc':
      return labelToc(d, example);
    case 'diva':
      return labelDiva(d, example, passageText);
    case 'combo':
      return labelCombo(d, example, passageText);
    case 'verify-edit':
      return labelVe(d, trace, example);
    default:
      return [];
  }
}

function judgment(purpose: JudgePurpose, p: number, pRaw: number | undefined, label: boolean | null): LabelledJudgment {
  return { purpose, p, ...(pRaw !== undefined ? { pRaw } : {}), label };
}

function labelToc(d: TocDecisions, example: Example): LabelledJudgment[] {
  const gold = example.qaPairs.length > 0 ? example.qaPairs : example.answers.length > 0 ? [{ question: example.question, shortAnswers: example.answers }] : [];
  const out: LabelledJudgment[] = [];
  for (const n of d.nodes) {
    // Only nodes the judge actually scored: the root and skipped nodes have no P.
    if (n.id === 0 || n.pTrue === undefined) continue;
    const label = gold.length === 0 || n.answer === null || n.answer.trim() === '' ? null : answerF1(n.answer, gold).f1 >= TOC_ANSWER_F1_MIN;
    out.push(judgment('toc.verify', n.pTrue, n.pTrueRaw, label));
  }
  return out;
}

/** Tokenised gold answers, and which of them a text contains (by index); the Diva and COMBO silver labels' test. */
export function goldAnswerMatcher(example: Example): { any: (text: string) => boolean; which: (text: string) => Set<number>; empty: boolean } {
  const answers = goldShortAnswers(example).map(answerTokens).filter((t) => t.length > 0);
  return {
    empty: answers.length === 0,
    any: (text) => hasAnswerInTokens(answerTokens(text), answers),
    which: (text) => {
      const tokens = answerTokens(text);
      const found = new Set<number>();
      answers.forEach((a, i) => {
        if (hasAnswerInTokens(tokens, [a])) found.add(i);
      });
      return found;
    },
  };
}

function labelDiva(d: DivaDecisions, example: Example, passageText: PassageText): LabelledJudgment[] {
  // No passages: Diva sets P = 0 without asking the judge, so there is no judgment to grade.
  if (!d.pAnswered || d.passageIds.length === 0) return [];
  const gold = goldAnswerMatcher(example);
  const texts = d.passageIds.map(passageText);
  const label = gold.empty || texts.some((t) => t === undefined) ? null : texts.some((t) => gold.any(t!));
  return d.pAnswered.map((p, i) => judgment('diva.verify', p, d.pAnsweredRaw?.[i], label));
}

/** COMBO's numbers come from an LLM judge unless the run chose embedding (or custom) scorers. */
const isLlmJudge = (scorer: string | undefined): boolean => scorer === undefined || scorer.startsWith('llm-judge');

function labelCombo(d: ComboDecisions, example: Example, passageText: PassageText): LabelledJudgment[] {
  const gold = goldAnswerMatcher(example);
  const out: LabelledJudgment[] = [];
  const retrievedFound = d.retrievedPassageIds.map((id) => {
    const text = passageText(id);
    return gold.empty || text === undefined ? null : gold.which(text);
  });
  if (isLlmJudge(d.scorers?.evidentiality)) {
    d.evidentiality.forEach((p, i) => {
      const found = retrievedFound[i];
      out.push(judgment('combo.evidentiality', p, undefined, found === null || found === undefined ? null : found.size > 0));
    });
  }
  if (isLlmJudge(d.scorers?.consistency)) {
    const generatedFound = d.generatedPassages.map((t) => (gold.empty ? null : gold.which(t)));
    d.consistency.forEach((row, i) => {
      if (d.consistencySkipped?.[i]) return; // not judged: the passage was not evidential enough
      row.forEach((p, j) => {
        const r = retrievedFound[i];
        const g = generatedFound[j];
        let label: boolean | null = null;
        if (r && g && (r.size > 0 || g.size > 0)) label = [...r].some((a) => g.has(a));
        out.push(judgment('combo.consistency', p, undefined, label));
      });
    });
  }
  return out;
}

function labelVe(d: VeDecisions, trace: Trace, example: Example): LabelledJudgment[] {
  const answer = trace.answer ?? d.finalAnswer;
  const golds = example.answers.length > 0 ? example.answers : goldShortAnswers(example);
  const label = golds.length === 0 ? null : golds.some((g) => exactMatch(answer, g) === 1);
  return [judgment('ve.consistency', d.consistency, undefined, label)];
}
