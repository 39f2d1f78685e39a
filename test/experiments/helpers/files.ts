import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';

/** Data files in the official layouts, written by the tests (no shared data needed). */
export function writeAsqa(dir: string, n: number): string {
  const dev: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    const year = 1990 + i;
    dev[`q${String(i).padStart(2, '0')}`] = {
      ambiguous_question: `When did event ${i} happen?`,
      qa_pairs: [
        { question: `When did event ${i} first happen?`, short_answers: [String(year)], context: `Event ${i} first happened in ${year}.`, wikipage: `Event ${i}` },
        { question: `When did event ${i} last happen?`, short_answers: [String(year + 10)], context: `Event ${i} last happened in ${year + 10}.`, wikipage: `Event ${i}` },
      ],
      wikipages: [{ title: `Event ${i}`, url: '' }],
      annotations: [{ long_answer: `Event ${i} first happened in ${year} and last happened in ${year + 10}.`, knowledge: [] }],
    };
  }
  const path = join(dir, 'asqa.json');
  writeFileSync(path, JSON.stringify({ dev }));
  return path;
}

/** Adversarial-HotpotQA layout (`sim_dev.json`). */
export function writeHotpot(dir: string, n: number): string {
  const cities = ['Paris', 'Lyon', 'Nice', 'Lille'];
  const records = Array.from({ length: n }, (_, i) => ({
    qas_id: `h${i}`,
    question: `Which city hosts festival ${i}?`,
    answer: cities[i % cities.length],
    paragraphs: [{ title: `Festival ${i}`, context: `Festival ${i} is held in ${cities[i % cities.length]} every year.`, is_supp: true }],
    rationale: `Festival ${i} is held in ${cities[i % cities.length]}.`,
  }));
  const path = join(dir, 'sim_dev.json');
  writeFileSync(path, JSON.stringify(records));
  return path;
}

/** A small corpus in ambiqa's JSONL passage format. */
export function writeCorpus(dir: string): string {
  const cities = ['Paris', 'Lyon', 'Nice', 'Lille'];
  const lines = Array.from({ length: 12 }, (_, i) =>
    JSON.stringify({ id: `p${i}`, title: `Festival ${i}`, text: `Festival ${i} is held in ${cities[i % cities.length]}. It draws many visitors.` }),
  );
  const path = join(dir, 'corpus.jsonl');
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

export function writeYaml(path: string, value: unknown): string {
  writeFileSync(path, YAML.stringify(value));
  return path;
}

/** Read a JSONL provider-call log written by the scripted provider. */
export interface CallLine {
  event: 'start' | 'end';
  key: string;
  purpose: string;
  sampleIndex: number;
  pid: number;
}
