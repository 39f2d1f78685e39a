import type {
  LanguageModelProvider,
  NormalisedJudgeRequest,
  NormalisedRequest,
  ProviderCompletion,
  ProviderJudgement,
} from '../types';

/**
 * A test double that returns given completions. Either a queue of replies (consumed in order)
 * or a function of the request, so tests can answer by purpose or by prompt content.
 */
export type ScriptedReply = string | ProviderCompletion;
export type ScriptedResponder = (request: NormalisedRequest, sampleIndex: number, callIndex: number) => ScriptedReply;

/**
 * Scripted judgments: P(labels[0]) as a number, a full `ProviderJudgement`, or null for a
 * provider without probabilities (the client then falls back to `doGenerate` and text parsing).
 */
export type ScriptedJudge = (request: NormalisedJudgeRequest, callIndex: number) => number | ProviderJudgement | null;

export class ScriptedProvider implements LanguageModelProvider {
  readonly provider = 'scripted';
  /** Every request received, in order, for assertions. */
  readonly received: Array<{ request: NormalisedRequest; sampleIndex: number }> = [];
  private readonly queue: ScriptedReply[] | null;
  private readonly responder: ScriptedResponder | null;

  /** Every judge request received, in order. */
  readonly judged: NormalisedJudgeRequest[] = [];
  readonly doJudge?: LanguageModelProvider['doJudge'];

  constructor(
    script: ScriptedReply[] | ScriptedResponder,
    readonly model = 'scripted-model',
    judge?: ScriptedJudge,
  ) {
    this.queue = Array.isArray(script) ? [...script] : null;
    this.responder = Array.isArray(script) ? null : script;
    // Without a judge script the provider has no probabilities, like an endpoint without logprobs.
    if (judge) {
      this.doJudge = async (request: NormalisedJudgeRequest): Promise<ProviderJudgement> => {
        const callIndex = this.judged.length;
        this.judged.push(request);
        const reply = judge(request, callIndex);
        if (reply === null) return { probabilities: request.labels.map(() => 0), labelMass: 0, mode: 'text', usage: { promptTokens: 0, completionTokens: 0 } };
        if (typeof reply !== 'number') return reply;
        const p = Math.min(1, Math.max(0, reply));
        const rest = request.labels.length - 1;
        const promptChars = request.messages.reduce((n, m) => n + m.content.length, 0);
        return {
          probabilities: request.labels.map((_, i) => (i === 0 ? p : (1 - p) / rest)),
          labelMass: 1,
          mode: 'probability',
          usage: { promptTokens: Math.ceil(promptChars / 4), completionTokens: 0 },
        };
      };
    }
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
