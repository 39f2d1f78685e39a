import { LlmClient } from './src/llm/client';
import { LlamaCppProvider, unloadEmbeddedModels } from './src/llm/providers/llama-cpp';

const sys = 'You verify whether a passage supports an answer to a question. ' + 'Read the passage with care, and think about names, dates and places that it mentions. '.repeat(4);
const passage = (n: number) => Array.from({ length: n }, (_, i) => `Sentence ${i}: the river Danube passes the city number ${i * 7} on its long way to the Black Sea.`).join(' ');
const judgeReq = (q: string, n: number) => ({
  messages: [
    { role: 'system' as const, content: sys },
    { role: 'user' as const, content: `Passage: ${passage(n)}\nQuestion: ${q}\nDoes the passage support the answer "Vienna"? Answer True or False.` },
  ],
  labels: ['True', 'False'],
});
const hex = (x: number) => Buffer.from(new Float64Array([x]).buffer).toString('hex');
async function main() {
  const threads = Number(process.env.T ?? 1);
  const out: Record<string, string> = {};
  for (const n of [3, 30]) {
    const req = judgeReq('Which city on the Danube is the capital of Austria?', n);
    const off = new LlamaCppProvider({ threads, prefixReuse: false, pool: 'off' + n });
    const pOff = (await new LlmClient(off).judge(req)).p;
    out[`n${n} reuse-off fresh`] = hex(pOff);
    const on = new LlamaCppProvider({ threads, pool: 'on' + n });
    const c = new LlmClient(on);
    out[`n${n} reuse-on fresh`] = hex((await c.judge(req)).p);
    out[`n${n} reuse-on again (last token)`] = hex((await c.judge(req)).p);
    // An unrelated prompt sharing the system prompt and part of the passage, then the judgment.
    const on2 = new LlamaCppProvider({ threads, pool: 'on2' + n });
    const c2 = new LlmClient(on2);
    await c2.generate({ messages: [req.messages[0]!, { role: 'user', content: `Passage: ${passage(n)}\nQuestion: Who?` }], maxTokens: 3 });
    on2.resetStats();
    const p2 = (await c2.judge(req)).p;
    out[`n${n} reuse-on after shared prefix (evaluated ${on2.stats.promptTokensEvaluated}/${on2.stats.promptTokens})`] = hex(p2);
    await c2.generate({ messages: [req.messages[0]!, { role: 'user', content: 'Hello there, who are you?' }], maxTokens: 3 });
    on2.resetStats();
    out[`n${n} reuse-on after short sys-only prompt (evaluated ${(await c2.judge(req), on2.stats.promptTokensEvaluated)})`] = hex((await new LlmClient(on2).judge(req)).p);
    out[`n${n} p`] = String(pOff);
  }
  console.log(JSON.stringify(out, null, 1));
  await unloadEmbeddedModels();
}
main();
