/**
 * Demo-copy detection for ToC expansions. A small model sometimes answers a RAC prompt by
 * repeating a few-shot demo's disambiguations (asked about "Bette Davis Eyes", it wrote the
 * "I'm Coming Out" demo's DQs). Such pairs say nothing about the question; verifying them wastes
 * calls, and un-pruning could put them in the answer. CHOICE (ambiqa's, not the paper's): an
 * expansion is a copy when its DQs' content words are found in one demo's text far more often
 * than in the question being clarified.
 */
import type { Demo } from '../types';
import { normaliseAnswer } from '../common/text';

// Function words every question shares; they would make any two questions look alike.
const STOPWORDS = new Set(
  ('who what when where which why how whom whose is are was were be been being do does did has have had ' +
    'of in on at to for from by with as and or but not no it its this that these those there their they ' +
    'he she his her him i you we us our your me my first last one').split(' '),
);

function contentWords(text: string): string[] {
  return normaliseAnswer(text)
    .split(' ')
    .filter((w) => w !== '' && !STOPWORDS.has(w));
}

/** Share of `words` present in `vocabulary` (0 when `words` is empty). */
function coverage(words: string[], vocabulary: Set<string>): number {
  if (words.length === 0) return 0;
  return words.filter((w) => vocabulary.has(w)).length / words.length;
}

const MIN_WORDS = 4;

export interface DemoCopy {
  demoId: string;
  /** Share of the DQs' content words found in the demo's text. */
  demoOverlap: number;
  /** Share found in the questions being clarified (the node's and the root's). */
  questionOverlap: number;
}

/**
 * The demo an expansion copied, or null. `margin` is how much larger the demo overlap must be
 * than the question overlap (0.5: e.g. 90% of the DQ words come from the demo, under 40% from
 * the question).
 */
export function detectDemoCopy(dqs: string[], questions: string[], demos: Demo[], margin: number): DemoCopy | null {
  const words = dqs.flatMap(contentWords);
  // Too few words to tell a copy from a coincidence.
  if (words.length < MIN_WORDS) return null;
  const questionOverlap = coverage(words, new Set(questions.flatMap(contentWords)));
  let best: DemoCopy | null = null;
  for (const demo of demos) {
    const text = [demo.question, ...(demo.qaPairs ?? []).flatMap((p) => [p.question, p.answer]), demo.longAnswer ?? ''];
    const demoOverlap = coverage(words, new Set(text.flatMap(contentWords)));
    if (demoOverlap - questionOverlap >= margin && (best === null || demoOverlap > best.demoOverlap)) {
      best = { demoId: demo.id, demoOverlap, questionOverlap };
    }
  }
  return best;
}
