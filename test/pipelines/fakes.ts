/**
 * In-memory test doubles for the pipelines: a word-overlap retriever, a hashed bag-of-words
 * embedder (L2-normalised, so texts sharing words are similar), a scripted LLM routed by
 * `request.purpose`, and small builders for examples and demos.
 */
import type { Example } from '../../src/datasets/types';
import { LlmClient } from '../../src/llm/client';
import { ScriptedProvider, type ScriptedReply } from '../../src/llm/providers/scripted';
import type { NormalisedJudgeRequest, NormalisedRequest } from '../../src/llm/types';
import type { Embedder, Passage, Retriever, ScoredPassage } from '../../src/retrieval/types';
import { FixedDemoSelector } from '../../src/pipelines/demos';
import type { Demo } from '../../src/pipelines/types';

const words = (text: string) => text.toLowerCase().match(/[a-z0-9]+/g) ?? [];

export function passage(id: string, title: string, text: string): Passage {
  return { id, title, text };
}

/** Scores passages by the number of query words they contain; ties keep corpus order. */
export class FakeRetriever implements Retriever {
  readonly name = 'fake-overlap';
  readonly queries: Array<{ query: string; k: number }> = [];

  constructor(readonly passages: Passage[]) {}

  async search(query: string, k: number): Promise<ScoredPassage[]> {
    this.queries.push({ query, k });
    const q = new Set(words(query));
    return this.passages
      .map((p, i) => ({ p, i, score: words(`${p.title} ${p.text}`).filter((w) => q.has(w)).length }))
      .filter((x) => x.score > 0)
      .sort((a, b) => b.score - a.score || a.i - b.i)
      .slice(0, k)
      .map((x, rank) => ({ passage: x.p, score: x.score, rank }));
  }
}

/** Hashed bag of words, 64 dimensions, L2-normalised. */
export class FakeEmbedder implements Embedder {
  readonly name = 'fake-bow';
  readonly dimension = 64;
  calls = 0;

  async embed(texts: string[]): Promise<Float32Array[]> {
    this.calls += 1;
    return texts.map((t) => {
      const v = new Float32Array(this.dimension);
      for (const w of words(t)) {
        let h = 0;
        for (const ch of w) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
        v[h % this.dimension] += 1;
      }
      const norm = Math.hypot(...v) || 1;
      for (let i = 0; i < v.length; i++) v[i] /= norm;
      return v;
    });
  }
}

export type Responder = (request: NormalisedRequest, sampleIndex: number) => ScriptedReply;

/** A scripted judgment: P(labels[0]) for a request, or null for "this provider has no probabilities". */
export type JudgeResponder = (request: NormalisedJudgeRequest) => number | null;

/**
 * A scripted LLM that answers by purpose; unknown purposes fail the test loudly. With `judges`,
 * judgments (`LanguageModel.judge`) get probabilities by purpose; a judge purpose without an entry
 * falls back to text, answered by `routes` like a generation (an endpoint without logprobs).
 */
export function scriptedLlm(
  routes: Record<string, Responder | string>,
  judges?: Record<string, JudgeResponder | number>,
): { llm: LlmClient; provider: ScriptedProvider } {
  const provider = new ScriptedProvider(
    (request, sampleIndex) => {
      const route = routes[request.purpose];
      if (route === undefined) throw new Error(`no scripted reply for purpose ${request.purpose}`);
      return typeof route === 'string' ? route : route(request, sampleIndex);
    },
    'scripted-model',
    judges
      ? (request) => {
          const judge = judges[request.purpose];
          if (judge === undefined) return null;
          return typeof judge === 'number' ? judge : judge(request);
        }
      : undefined,
  );
  return { llm: new LlmClient(provider), provider };
}

/** The value of the last `Label: value` line of a judge request's prompt. */
export function judgeField(request: NormalisedJudgeRequest, label: string): string {
  return lastField({ messages: request.messages } as NormalisedRequest, label);
}

/** The prompt text of a request (all messages joined). */
export function promptOf(request: NormalisedRequest): string {
  return request.messages.map((m) => m.content).join('\n');
}

/** The value of the last `Label: value` line in a prompt. */
export function lastField(request: NormalisedRequest, label: string): string {
  const lines = promptOf(request).split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (lines[i].startsWith(`${label}:`)) return lines[i].slice(label.length + 1).trim();
  }
  return '';
}

/** ToC's test corpus: five passages about who played the Weasley brothers. */
export const weasleyCorpus: Passage[] = [
  passage('p1', 'Weasley family', 'The Weasley brothers are Bill, Charlie, Percy, Fred, George and Ron.'),
  passage('p2', 'Rupert Grint', 'Rupert Grint played Ron Weasley in the Harry Potter films.'),
  passage('p3', 'James Phelps', 'James Phelps played Fred Weasley; his twin Oliver Phelps played George.'),
  passage('p4', 'Chris Rankin', 'Chris Rankin played Percy Weasley in the Harry Potter films.'),
  passage('p5', 'Domhnall Gleeson', 'Domhnall Gleeson played Bill Weasley in the later Harry Potter films.'),
];
export const WEASLEY_AQ = 'Who played the Weasley brothers in Harry Potter?';

export function asqaExample(id: string, question: string): Example {
  return { id, dataset: 'asqa', question, answers: [], qaPairs: [], longAnswers: [], passages: [] };
}

export function hotpotExample(id: string, question: string): Example {
  return { id, dataset: 'hotpotqa-adversarial', question, answers: [], qaPairs: [], longAnswers: [], passages: [] };
}

export const asqaDemos: Demo[] = [
  {
    id: 'd1',
    question: 'Who wrote the song Hallelujah?',
    qaPairs: [
      { question: 'Who wrote the song Hallelujah released in 1984?', answer: 'Leonard Cohen' },
      { question: 'Who wrote the 1979 song Hallelujah performed at Eurovision?', answer: 'Kobi Oshrat' },
    ],
    longAnswer: 'Hallelujah (1984) was written by Leonard Cohen; the 1979 Eurovision winner Hallelujah was written by Kobi Oshrat.',
  },
  {
    id: 'd2',
    question: 'When did the Eiffel Tower open?',
    qaPairs: [{ question: 'When did the Eiffel Tower open to the public?', answer: '31 March 1889' }],
    longAnswer: 'The Eiffel Tower opened to the public on 31 March 1889.',
  },
  {
    id: 'd3',
    question: 'Who is the mayor of Springfield?',
    qaPairs: [{ question: 'Who is the mayor of Springfield, Illinois?', answer: 'Misty Buscher' }],
    longAnswer: 'The mayor of Springfield, Illinois is Misty Buscher.',
  },
];

export const hotpotDemos: Demo[] = [
  { id: 'h1', question: 'Which river flows through the capital of France?', rationale: 'The capital of France is Paris. The Seine flows through Paris.', answer: 'Seine' },
  { id: 'h2', question: 'In what year was the author of Dracula born?', rationale: 'Dracula was written by Bram Stoker. Bram Stoker was born in 1847.', answer: '1847' },
];

export function fixedDemos(pool: Demo[] = asqaDemos): FixedDemoSelector {
  return new FixedDemoSelector(pool);
}

/** Every message of a recorded call, joined: what the model was shown. */
export function callText(call: { messages: Array<{ content: string }> }): string {
  return call.messages.map((m) => m.content).join('\n\n');
}
