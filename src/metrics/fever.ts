/**
 * FEVER label accuracy (Verify-and-Edit's FEVER metric): 100 when the predicted label equals the
 * gold label, else 0; mean over claims.
 *
 * Predicted labels are read leniently but explicitly (`normalizeFeverLabel`): case, surrounding
 * punctuation and spacing are ignored; SUPPORTS / SUPPORT / SUPPORTED / TRUE → SUPPORTS,
 * REFUTES / REFUTE / REFUTED / FALSE → REFUTES, NOT ENOUGH INFO / NOT ENOUGH INFORMATION / NEI /
 * NOT_ENOUGH_INFO → NOT ENOUGH INFO. Anything else is no label: it scores 0 and is reported.
 */
import type { FeverLabel } from '../datasets/types';
import type { MetricFamily, Score, SyncScorer } from './score';

const LABELS: Record<string, FeverLabel> = {
  supports: 'SUPPORTS',
  support: 'SUPPORTS',
  supported: 'SUPPORTS',
  true: 'SUPPORTS',
  refutes: 'REFUTES',
  refute: 'REFUTES',
  refuted: 'REFUTES',
  false: 'REFUTES',
  'not enough info': 'NOT ENOUGH INFO',
  'not enough information': 'NOT ENOUGH INFO',
  nei: 'NOT ENOUGH INFO',
};

export function normalizeFeverLabel(text: string): FeverLabel | null {
  const key = text
    .toLowerCase()
    .replace(/[_-]+/g, ' ')
    .replace(/[^\p{L}\p{N} ]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return Object.prototype.hasOwnProperty.call(LABELS, key) ? LABELS[key] : null;
}

/** 100 / 0 per claim; metadata says which label was read (null: none recognised). */
export const FeverAccuracy: SyncScorer<string, FeverLabel> = ({ output, expected }): Score => {
  const label = normalizeFeverLabel(output);
  return { name: 'accuracy', score: label === expected ? 100 : 0, metadata: { predicted_label: label } };
};

/** Registry entry: FEVER label accuracy. */
export const feverFamily: MetricFamily<'accuracy'> = {
  family: 'fever',
  reference: 'FEVER label accuracy (Thorne et al. 2018), as Verify-and-Edit reports it',
  metrics: ['accuracy'],
  datasets: ['fever'],
  defaults: ['accuracy'],
  score: ({ text, example }) =>
    example.label ? [FeverAccuracy({ output: text, expected: example.label })] : [{ name: 'accuracy', score: null, reason: 'no gold label', metadata: { predicted_label: normalizeFeverLabel(text) } }],
};
