import { appendFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { cacheKey } from '../cache';
import { LlmClient } from '../client';
import { sleep } from '../limiter';
import type { LanguageModelProvider, NormalisedRequest, ProviderCompletion } from '../types';
import { ScriptedProvider } from './scripted';

/**
 * `llm: {provider: scripted}` — a test double selectable from a config file, so that a test can
 * drive the real CLI in a child process (and kill it) without a model. It answers from the
 * config, can be made slow, and logs every provider call — a line when it starts and one when
 * it ends — so a test can prove that a resumed run repeats no call that had finished.
 * It goes through the real `LlmClient` and its persistent cache like any other provider.
 */
export const scriptedLlmSchema = z.strictObject({
  provider: z.literal('scripted'),
  /** Reply for any prompt; `{{n}}`-free text. */
  reply: z.string().default('scripted answer'),
  /** Replies by call purpose (e.g. `closed-book.answer`), taking precedence over `reply`. */
  replies: z.record(z.string(), z.string()).default({}),
  /** Replies in turn: sample i of a call gets `cycle[(hash(prompt) + i) % length]`. */
  cycle: z.array(z.string()).min(1).optional(),
  /** Simulated latency per provider call, in milliseconds. */
  latencyMs: z.int().min(0).default(0),
  /** Append one JSON line per provider call (start and end) to this file. */
  callLog: z.string().optional(),
  /** Cache file for this provider (default: the project's LLM cache). */
  cache: z.string().optional(),
  model: z.string().default('scripted-model'),
});

export type ScriptedLlmConfig = z.output<typeof scriptedLlmSchema>;

export interface ProviderCallLogLine {
  event: 'start' | 'end';
  key: string;
  purpose: string;
  sampleIndex: number;
  pid: number;
}

export class ConfigScriptedProvider implements LanguageModelProvider {
  readonly provider = 'scripted';
  readonly model: string;
  private readonly inner: ScriptedProvider;

  constructor(private readonly config: ScriptedLlmConfig) {
    this.model = config.model;
    this.inner = new ScriptedProvider((request, sampleIndex) => this.reply(request, sampleIndex), config.model);
  }

  async doGenerate(request: NormalisedRequest, sampleIndex: number, options: { signal?: AbortSignal }): Promise<ProviderCompletion> {
    const key = cacheKey({ provider: this.provider, model: this.model, request, sampleIndex });
    this.log({ event: 'start', key, purpose: request.purpose, sampleIndex, pid: process.pid });
    if (this.config.latencyMs > 0) await sleep(this.config.latencyMs, options.signal);
    const completion = await this.inner.doGenerate(request, sampleIndex);
    this.log({ event: 'end', key, purpose: request.purpose, sampleIndex, pid: process.pid });
    return completion;
  }

  private reply(request: NormalisedRequest, sampleIndex: number): string {
    const byPurpose = this.config.replies[request.purpose];
    if (byPurpose !== undefined) return byPurpose;
    if (this.config.cycle) {
      const text = request.messages.map((m) => m.content).join('\n');
      const h = createHash('sha256').update(text).digest().readUInt32BE(0);
      return this.config.cycle[(h + sampleIndex) % this.config.cycle.length];
    }
    return this.config.reply;
  }

  private log(line: ProviderCallLogLine): void {
    if (this.config.callLog) appendFileSync(this.config.callLog, JSON.stringify(line) + '\n');
  }
}

/** An `LlmClient` over the scripted provider with the persistent cache at `cachePath`. */
export function createScriptedLanguageModel(config: ScriptedLlmConfig, cachePath: string | undefined): LlmClient {
  return new LlmClient(new ConfigScriptedProvider(config), {
    cache: cachePath ? { path: config.cache ?? cachePath } : config.cache ? { path: config.cache } : null,
  });
}
