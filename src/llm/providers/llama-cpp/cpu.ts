import { readFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';

/**
 * CPU probing for the embedded model: how many threads to give llama.cpp (the machine's cores and
 * whether something else is using them) and which CPU it ran on (the kernels' SIMD features, which
 * floating-point results can depend on; logged as `llm.cpu`).
 */

/**
 * Threads when none are configured: `AMBIQA_LLM_THREADS`, else every core when the machine is
 * idle as the process first asks, else one fewer than the cores.
 * llama.cpp's threads wait for each other at every step, so when any other work competes for a
 * core (another job, a parallel test worker) a thread per core collapses: measured on the 2-core
 * machine under load, 1 thread gave 12–20 tokens/s and 2 threads 0.7–1.2. On an idle machine
 * the other core is worth having: a 1,361-token prompt plus 40 tokens took 17–18 s with 1 thread
 * and 10–12 s with 2 (same process, alternating). The pipelines never run the embedder and the
 * model at once within a process (`concurrency: 1`, the configs' default), so idle at start means
 * the model has the machine; the test suite pins `AMBIQA_LLM_THREADS=1` (its workers compete).
 */
export function defaultThreads(env: NodeJS.ProcessEnv = process.env, idle: () => boolean = machineLooksIdle): number {
  const fromEnv = Number(env.AMBIQA_LLM_THREADS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  const cores = availableParallelism();
  if (cores <= 1) return 1;
  return idle() ? cores : cores - 1;
}

/** Busy share of all cores below which the machine counts as idle. */
export const IDLE_BUSY_SHARE = 0.2;

let idleVerdict: boolean | undefined;

/**
 * Is the machine idle? The share of CPU time all cores spent busy over `sampleMs`, sampled once
 * per process (so every model and every logged `threads` param of a process agrees).
 */
export function machineLooksIdle(sampleMs = 250): boolean {
  if (idleVerdict !== undefined) return idleVerdict;
  const before = cpuTotals();
  // A synchronous pause: config resolution is synchronous, and this happens once per process.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, sampleMs);
  const after = cpuTotals();
  idleVerdict = busyShare(before, after) < IDLE_BUSY_SHARE;
  return idleVerdict;
}

/** Busy share between two `cpuTotals()` samples (0 when no time passed). */
export function busyShare(before: { busy: number; total: number }, after: { busy: number; total: number }): number {
  const total = after.total - before.total;
  return total > 0 ? (after.busy - before.busy) / total : 0;
}

function cpuTotals(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const c of cpus()) {
    const t = c.times;
    busy += t.user + t.nice + t.sys + t.irq;
    total += t.user + t.nice + t.sys + t.irq + t.idle;
  }
  return { busy, total };
}

/** The SIMD sets node-llama-cpp chooses among its per-generation CPU libraries by. */
const KERNEL_FEATURES = [
  'sse4_2', 'avx', 'avx2', 'fma', 'f16c', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni', 'avx512_bf16', 'avx_vnni', 'amx_tile', // x86
  'asimd', 'asimddp', 'i8mm', 'sve', 'sve2', 'sme', // Arm
];

/**
 * The CPU's model and the features that choose llama.cpp's CPU kernels, which floating-point
 * results can depend on (an AVX-512 and an AVX2 dot product sum in different orders): the same
 * request on another machine may give other bits, so a run states the CPU it ran on (`llm.cpu`).
 * On Linux from the x86 `flags` / Arm `Features` line of /proc/cpuinfo.
 */
export function describeCpu(cpuinfo: string | undefined, model: string): string {
  const line = cpuinfo?.split('\n').find((l) => /^(flags|Features)\s*:/.test(l));
  const have = new Set(line ? line.slice(line.indexOf(':') + 1).trim().split(/\s+/) : []);
  const features = KERNEL_FEATURES.filter((f) => have.has(f));
  return features.length > 0 ? `${model.trim()}; ${features.join(' ')}` : model.trim();
}

let cpuDescription: string | undefined;

/** `describeCpu` for this machine, read once. */
export function embeddedCpu(): string {
  if (cpuDescription === undefined) {
    let cpuinfo: string | undefined;
    try {
      cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      /* not Linux: the model name alone */
    }
    cpuDescription = describeCpu(cpuinfo, cpus()[0]?.model ?? 'unknown CPU');
  }
  return cpuDescription;
}
