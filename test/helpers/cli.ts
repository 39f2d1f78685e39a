import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The real `ambiqa` command in a child process (`node bin/ambiqa.mjs …`), as a user or a
 * scheduler runs it: its exit status, what it printed, and the process itself for kill tests.
 */
export const repoRoot = resolve(__dirname, '../..');

export interface CliRun {
  child: ChildProcess;
  /** Exit status, or null when a signal ended it. */
  exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  /** stdout and stderr as they came. */
  output(): string;
}

export function startCli(args: string[], env: NodeJS.ProcessEnv = process.env, cwd = repoRoot): CliRun {
  const child = spawn(process.execPath, [join(repoRoot, 'bin/ambiqa.mjs'), ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout!.on('data', (d) => ((stdout += d), (output += d)));
  child.stderr!.on('data', (d) => ((stderr += d), (output += d)));
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr, output: () => output };
}

/** Run the command to its end: exit status and output. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = process.env, cwd = repoRoot): Promise<{ code: number | null; stdout: string; stderr: string; output: string }> {
  const run = startCli(args, env, cwd);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr(), output: run.output() };
}

export async function waitFor(condition: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `/proc/<pid>/stat`'s state and parent, or undefined when there is no such process. */
function stat(pid: number): { state: string; ppid: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, ppid: Number(fields[1]) };
  } catch {
    return undefined;
  }
}

/** Every process below `root` now (children, their children, …), from /proc. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(Number(name));
    if (!s) continue;
    children.set(s.ppid, [...(children.get(s.ppid) ?? []), Number(name)]);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) for (const c of children.get(queue.shift()!) ?? []) out.push(c), queue.push(c);
  return out;
}

/** Whether `pid` runs (a zombie, dead but not yet reaped, does not). */
export function running(pid: number): boolean {
  const s = stat(pid);
  return s !== undefined && s.state !== 'Z' && s.state !== 'X';
}

/** The command line of `pid` (for messages about what was left behind). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '(gone)';
  }
}
