import { appendFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { cacheKey } from '../llm/cache';
import { LlmClient } from '../llm/client';
import { ScriptedProvider } from '../llm/providers/scripted';
import { sleep } from '../llm/limiter';
import type { LanguageModelProvider, NormalisedRequest, ProviderCompletion } from '../llm/types';
import type { z } from 'zod';
import type { scriptedLlmSchema } from './config';

/**
 * `llm: {provider: scripted}` — a test double selectable from a config file, so that a test can
 * drive the real CLI in a child process (and kill it) without a model. It answers from the
 * config, can be made slow, and logs every provider call — a line when it starts and one when
 * it ends — so a test can prove that a resumed run repeats no call that had finished.
 * It goes through the real `LlmClient` and its persistent cache like any other provider.
 */
export type ScriptedLlmConfig = z.infer<typeof scriptedLlmSchema>;

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
