/**
 * `npm run bench`: every benchmark, one after another, each printing its own side-by-side
 * measurements and ratios. Pass a name to run one: `npm run bench -- retrieval`.
 * Benchmarks are scripts, never timed unit tests: numbers depend on the machine's load.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const benches: Record<string, { file: string; args: string[] }> = {
  // BM25 vs wink-bm25-text-search / okapibm25, dense exact vs naive loop vs IVF.
  retrieval: { file: 'retrieval.ts', args: [] },
  // A finished experiment re-run from the LLM cache vs its original wall time.
  'cache-replay': { file: 'cache-replay.ts', args: ['--questions', '50'] },
  // Embedded model: ToC, VE and CoT-SC with prefix reuse and batched samples off vs on.
  llm: { file: 'llm.ts', args: [] },
  // Where a decode step's time goes: k sequences batched vs one, 1 vs all threads, two 1-thread contexts.
  decode: { file: 'decode.ts', args: [] },
  // Adaptive self-consistency (CoT-SC, VE) and early exits (ToC, Diva) vs the papers' fixed budgets.
  adaptive: { file: 'adaptive.ts', args: [] },
  // A 50-question run with each question's trace exported to MLflow Tracing vs without.
  'trace-export': { file: 'trace-export.ts', args: ['--questions', '50'] },
  // ToC at paper settings against a loopback API server with fixed latency: wall time vs the latency-bound ideal at concurrency 1, 8, 32, 64.
  endpoint: { file: 'endpoint.ts', args: [] },
  // The quick start's demo (caches off) against its 2-minute bound, the released search beside stop-when-empty.
  demo: { file: 'demo.ts', args: [] },
  // Start-up of the ambiqa command (--help; a one-question --no-tracking run against a loopback server), optionally against another checkout side by side.
  startup: { file: 'startup.ts', args: [] },
  // A study bundle of 20 synthetic runs × 1,000 questions: size on disk, Chromium load time of the index and a run page.
  bundle: { file: 'bundle.ts', args: [] },
};

// `npm run bench -- llm --questions 5`: flags after the names go to the named benchmarks.
const args = process.argv.slice(2);
const firstFlag = args.findIndex((a) => a.startsWith('-'));
const wanted = (firstFlag < 0 ? args : args.slice(0, firstFlag)).filter((a) => !a.startsWith('-'));
const passed = firstFlag < 0 ? [] : args.slice(firstFlag);
const names = wanted.length > 0 ? wanted : Object.keys(benches);
let failed = 0;
for (const name of names) {
  const bench = benches[name];
  if (!bench) {
    console.error(`unknown benchmark '${name}' (known: ${Object.keys(benches).join(', ')})`);
    process.exit(2);
  }
  console.log(`\n=== bench: ${name} ===`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', join('bench', bench.file), ...bench.args, ...(wanted.length > 0 ? passed : [])], { stdio: 'inherit' });
  if (result.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
