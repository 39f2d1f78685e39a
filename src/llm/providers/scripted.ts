import type { LanguageModelProvider, NormalisedRequest, ProviderCompletion } from '../types';

/**
 * A test double that returns given completions. Either a queue of replies (consumed in order)
 * or a function of the request, so tests can answer by purpose or by prompt content.
 */
export type ScriptedReply = string | ProviderCompletion;
export type ScriptedResponder = (request: NormalisedRequest, sampleIndex: number, callIndex: number) => ScriptedReply;

export class ScriptedProvider implements LanguageModelProvider {
  readonly provider = 'scripted';
  /** Every request received, in order, for assertions. */
  readonly received: Array<{ request: NormalisedRequest; sampleIndex: number }> = [];
  private readonly queue: ScriptedReply[] | null;
  private readonly responder: ScriptedResponder | null;

  constructor(
    script: ScriptedReply[] | ScriptedResponder,
    readonly model = 'scripted-model',
  ) {
    this.queue = Array.isArray(script) ? [...script] : null;
    this.responder = Array.isArray(script) ? null : script;
  }

  async doGenerate(request: NormalisedRequest, sampleIndex: number): Promise<ProviderCompletion> {
    const callIndex = this.received.length;
    this.received.push({ request, sampleIndex });
    let reply: ScriptedReply | undefined;
    if (this.queue) {
      reply = this.queue.shift();
      if (reply === undefined) {
        throw new Error(`ScriptedProvider: script exhausted at call ${callIndex} (purpose ${request.purpose})`);
      }
    } else {
      reply = this.responder!(request, sampleIndex, callIndex);
    }
    if (typeof reply !== 'string') return reply;
    const promptChars = request.messages.reduce((n, m) => n + m.content.length, 0);
    // Rough token counts (4 chars per token) so usage accounting has something to add up.
    return {
      text: reply,
      finishReason: 'stop',
      usage: { promptTokens: Math.ceil(promptChars / 4), completionTokens: Math.ceil(reply.length / 4) },
    };
  }
}
