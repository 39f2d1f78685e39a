import type { ChatMessage } from '../../llm/types';

/** One worked example as a conversation turn: what the user asks, what the assistant answers. */
export interface Shot {
  user: string;
  assistant: string;
}

/**
 * Few-shot as chat turns: the instruction as the system message, each demo as a user/assistant
 * exchange, then the real question. Small instruct models copy the format of earlier assistant
 * turns far more reliably than a format described inside one long user message (measured on the
 * embedded 0.5B model: DQ/DA pairs in 3 of 3 replies instead of 0 of 3).
 */
export function fewShot(system: string, shots: Shot[], user: string): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: system }];
  for (const s of shots) {
    messages.push({ role: 'user', content: s.user });
    messages.push({ role: 'assistant', content: s.assistant });
  }
  messages.push({ role: 'user', content: user });
  return messages;
}

/** All message contents joined (for logs and tests). */
export function messagesText(messages: ChatMessage[]): string {
  return messages.map((m) => m.content).join('\n\n');
}
