import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { run as slurmCommand } from '../../src/cli/commands/slurm';
import { escapeControl, isSafeName, safeName } from '../../src/common/safe-name';
import { clearRegisteredSecrets, registerSecret } from '../../src/common/secrets';
import { loadDataset } from '../../src/datasets/index';
import { AmbiqaError } from '../../src/errors';
import { parseOverride } from '../../src/experiments/overrides';
import { acquireDirLock } from '../../src/experiments/run-lock';
import { shardsScript, type SlurmLaunch } from '../../src/experiments/slurm';
import type { ExperimentConfig } from '../../src/experiments/config';
import { writeAsqa, writeYaml } from '../experiments/helpers/files';

/**
 * Files and values from outside, as an attacker would write them (issue 43): lock files that are
 * FIFOs, huge, or name PID 0; holder strings with terminal escapes; dataset fields of megabytes;
 * sbatch values with newlines; a `launch.json` that is not one; secrets in `--set` values.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-hostile-files-'));
const TRACKING_URI = ['MLFLOW', 'TRACKING', 'URI'].join('_');
const keys = ['AMBIQA_ARTIFACTS_DIR', TRACKING_URI, 'AMBIQA_TRACKING', 'PATH'];
const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
afterAll(() => {
  for (const k of keys) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  rmSync(dir, { recursive: true, force: true });
});
let n = 0;
const fresh = (name: string) => {
  const d = join(dir, `${name}-${n++}`);
  mkdirSync(d, { recursive: true });
  return d;
};
const messageOf = (f: () => unknown): string => {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(AmbiqaError);
    return (error as Error).message;
  }
  throw new Error('no error');
};

describe('the safe-name helper', () => {
  it('takes one plain path segment and refuses traversal, separators, hidden names, control characters and length', () => {
    for (const ok of ['toc-asqa', 'run_1.shard-0of4', 'a=b,c+d']) expect(isSafeName(ok)).toBe(true);
    for (const bad of ['..', '.', '../x', 'a/b', 'a\\b', '.hidden', '', 'a\nb', 'a\0b', 'x'.repeat(129), '-rf']) expect(isSafeName(bad)).toBe(false);
    expect(messageOf(() => safeName('../../etc', 'the run name'))).toBe(
      'the run name "../../etc" cannot name a file or folder: it must be letters, digits and ._=,+- (starting with a letter or digit), at most 128 characters',
    );
  });

  it('escapes control characters, bidi controls and cuts long text', () => {
    expect(escapeControl('a\x1b]0;pwned\x07b\nc\u202e')).toBe('a\\x1b]0;pwned\\x07b\\x0ac\\u202e');
    expect(escapeControl('x'.repeat(10), 4)).toBe('xxxx…');
  });
});

describe('lock files', () => {
  it('a FIFO at run.lock is refused at once, in one line naming it (it used to block the main thread for good)', () => {
    const d = fresh('fifo');
    execFileSync('mkfifo', [join(d, 'run.lock')]);
    const started = Date.now();
    const message = messageOf(() => acquireDirLock(d));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(message).toBe(`lock file ${join(d, 'run.lock')} is a FIFO, not a regular file; ambiqa does not read it — remove it (no ambiqa process made it)`);
  });

  it('a FIFO at run.lock.takeover, with a stale lock to take over, is refused too', () => {
    const d = fresh('fifo-takeover');
    writeFileSync(join(d, 'run.lock'), JSON.stringify({ pid: 2 ** 22 + 12345, host: hostname(), startedAt: 'then', nonce: 'x' }));
    execFileSync('mkfifo', [join(d, 'run.lock.takeover')]);
    expect(messageOf(() => acquireDirLock(d, { notify: () => undefined }))).toContain(`lock file ${join(d, 'run.lock.takeover')} is a FIFO`);
  });

  it('a 100 MB lock is refused by its size, without reading it', () => {
    const d = fresh('huge');
    writeFileSync(join(d, 'run.lock'), '');
    truncateSync(join(d, 'run.lock'), 100 * 1024 * 1024);
    expect(messageOf(() => acquireDirLock(d))).toBe(
      `lock file ${join(d, 'run.lock')} is 104857600 bytes, more than the 65536 a lock holds; ambiqa does not read it — remove it (no ambiqa process made it)`,
    );
  });

  it('a symbolic link at run.lock is not followed', () => {
    const d = fresh('symlink');
    execFileSync('ln', ['-s', '/dev/zero', join(d, 'run.lock')]);
    expect(messageOf(() => acquireDirLock(d))).toContain('is a symbolic link, not a regular file');
  });

  it('PIDs 0, -1 and 1 are not holders: such a lock is taken over, not "in use" forever', () => {
    for (const pid of [0, -1, 1]) {
      const d = fresh(`pid${pid}`);
      writeFileSync(join(d, 'run.lock'), JSON.stringify({ pid, host: hostname(), startedAt: 'then', nonce: 'x' }));
      const notes: string[] = [];
      const lock = acquireDirLock(d, { notify: (m) => notes.push(m) });
      expect(notes).toEqual([`run directory ${d} had an unreadable lock file; taking it over`]);
      expect(JSON.parse(readFileSync(join(d, 'run.lock'), 'utf8')).pid).toBe(process.pid);
      lock.release();
    }
  });

  it("a live holder's host and command are printed with control characters escaped, and the message names the lock file", () => {
    const d = fresh('escapes');
    // A live process on this host other than this one: the test runner's parent.
    writeFileSync(join(d, 'run.lock'), JSON.stringify({ pid: process.ppid, host: hostname(), startedAt: '\x1b[2J', command: 'ambiqa run \x1b]0;owned\x07', nonce: 'x' }));
    const message = messageOf(() => acquireDirLock(d));
    expect(message).not.toMatch(/[\x00-\x1f]/);
    expect(message).toContain('since \\x1b[2J: ambiqa run \\x1b]0;owned\\x07');
    expect(message).toContain(`remove ${join(d, 'run.lock')} once it is known to be gone`);
  });
});

describe('dataset fields', () => {
  function asqaWith(mutate: (record: Record<string, any>) => void): string {
    const d = fresh('asqa');
    const path = writeAsqa(d, 2);
    const data = JSON.parse(readFileSync(path, 'utf8'));
    mutate(data.dev.q01);
    writeFileSync(path, JSON.stringify(data));
    return path;
  }

  it('a 20 MB long_answer is refused in one line naming the question, the field and the limit', () => {
    const path = asqaWith((r) => (r.annotations[0].long_answer = 'x'.repeat(20_000_000)));
    expect(messageOf(() => loadDataset('asqa', path))).toBe(`${path}: question "q01": longAnswers[0] has 20,000,000 characters, over the limit of 200,000`);
  });

  it('an answer, a context and an id past their limits are refused the same way', () => {
    const answer = asqaWith((r) => (r.qa_pairs[0].short_answers = ['y'.repeat(10_001)]));
    expect(messageOf(() => loadDataset('asqa', answer))).toBe(`${answer}: question "q01": answers[0] has 10,001 characters, over the limit of 10,000`);
    const context = asqaWith((r) => (r.qa_pairs[1].context = 'z'.repeat(200_001)));
    expect(messageOf(() => loadDataset('asqa', context))).toBe(`${context}: question "q01": qaPairs[1].context has 200,001 characters, over the limit of 200,000`);
    const d = fresh('ids');
    const path = writeAsqa(d, 1);
    const data = JSON.parse(readFileSync(path, 'utf8'));
    data.dev['bad\x1b[2Jid'] = data.dev.q00;
    delete data.dev.q00;
    writeFileSync(path, JSON.stringify(data));
    expect(messageOf(() => loadDataset('asqa', path))).toBe(`${path}: question "bad\\x1b[2Jid": id holds a control character; ids are printed in every log line`);
  });

  it('ordinary records load', () => {
    expect(loadDataset('asqa', writeAsqa(fresh('ok'), 3))).toHaveLength(3);
  });
});

describe('sbatch scripts', () => {
  const bin = join(dir, 'fake-bin');
  const sbatchLog = join(dir, 'sbatch.log');
  mkdirSync(bin, { recursive: true });
  // A fake sbatch: records its arguments and answers a job id, as `sbatch --parsable` does.
  writeFileSync(join(bin, 'sbatch'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${sbatchLog}'\necho 4242\n`);
  chmodSync(join(bin, 'sbatch'), 0o755);
  afterEach(() => {
    clearRegisteredSecrets();
    rmSync(sbatchLog, { force: true });
  });

  function setup() {
    const d = fresh('slurm');
    process.env.AMBIQA_ARTIFACTS_DIR = join(d, 'artifacts');
    process.env.PATH = `${bin}${delimiter}${saved.PATH ?? ''}`;
    process.env[TRACKING_URI] = 'http://127.0.0.1:9';
    delete process.env.AMBIQA_TRACKING;
    const config = writeYaml(join(d, 'exp.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(d, 3) },
      pipeline: { name: 'closed-book', options: { nShots: 0 } },
      llm: { provider: 'scripted' },
      metrics: ['str_em'],
      tracking: { experiment: 'slurm-sec' },
    });
    return { d, config };
  }

  async function quietly<T>(f: () => Promise<T>): Promise<{ value: T; out: string; lines: string[] }> {
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.map(String).join(' ')));
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      return { value: await f(), out: lines.join('\n'), lines };
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  }

  it.each([
    ['--partition', ['--partition', 'x\ntouch PWNED']],
    ['--account', ['--account', 'a\ntouch PWNED']],
    ['--time', ['--time', '1:00\ntouch PWNED']],
    ['--mem', ['--mem', '4G\rtouch PWNED']],
    ['--sbatch', ['--sbatch', 'qos=high\ntouch PWNED']],
    ['--sbatch', ['--sbatch', 'qos=a\0b']],
  ])('a %s value with a newline or a NUL is refused before anything is written or submitted', async (option, args) => {
    const { d, config } = setup();
    const error = await slurmCommand([config, '--shards', '2', '--group', 'g1', ...args]).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(AmbiqaError);
    expect(error!.message.startsWith(`${option} "`)).toBe(true);
    expect(error!.message).toMatch(/holds a control character \((a newline|a NUL|\\x0d)\); a value written into a job script must be one line$/);
    expect(error!.message.split('\n')).toHaveLength(1);
    expect(existsSync(join(d, 'artifacts', 'slurm'))).toBe(false);
    expect(existsSync(sbatchLog)).toBe(false);
    expect(existsSync(join(d, 'PWNED'))).toBe(false);
  });

  it('an artifacts folder with a newline is refused the same way', async () => {
    const { d, config } = setup();
    process.env.AMBIQA_ARTIFACTS_DIR = join(d, 'art\ntouch PWNED');
    await expect(slurmCommand([config, '--shards', '2', '--group', 'g1'])).rejects.toThrow(/^AMBIQA_ARTIFACTS_DIR ".*art\\x0atouch PWNED": holds a control character/);
    expect(existsSync(sbatchLog)).toBe(false);
  });

  it('an --sbatch line that is not an option is refused', async () => {
    const { config } = setup();
    await expect(slurmCommand([config, '--shards', '2', '--group', 'g1', '--sbatch=-x node1'])).rejects.toThrow('--sbatch "-x node1": expected an sbatch option as --name or --name=value');
  });

  it('what --dry-run prints is byte for byte what a launch writes: secrets masked, values quoted, scripts 0700', async () => {
    const secret = 'hunter2-but-longer-9f3a';
    registerSecret(secret);
    const { d, config } = setup();
    const args = [config, '--shards', '2', '--group', 'g1', '--partition', 'gpu a', '--set', `tracking.tags.owner=${secret}`];
    const dry = await quietly(() => slurmCommand([...args, '--dry-run']));
    expect(dry.value).toBe(0);
    const launchDir = join(d, 'artifacts', 'slurm', 'g1');
    // Each script is one console.log: a `# <path>` line, then the script.
    const printedScript = (file: string) => {
      const block = dry.lines.find((l) => l.split('\n')[0]!.endsWith(`/${file}`))!;
      return block.slice(block.indexOf('\n') + 1);
    };
    const real = await quietly(() => slurmCommand(args));
    expect(real.value).toBe(0);
    for (const file of ['shards.sbatch', 'merge.sbatch']) {
      const written = readFileSync(join(launchDir, file), 'utf8');
      expect(written.length).toBeGreaterThan(100);
      expect(printedScript(file)).toBe(written);
      expect(written).not.toContain(secret);
      expect(statSync(join(launchDir, file)).mode & 0o777).toBe(0o700);
      expect(written).toContain("#SBATCH --partition='gpu a'");
    }
    expect(readFileSync(join(launchDir, 'shards.sbatch'), 'utf8')).toContain('tracking.tags.owner=[redacted]');
    expect(readFileSync(sbatchLog, 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('a launch.json that is not a launch record is refused before the first submission', async () => {
    const { d, config } = setup();
    const launchDir = join(d, 'artifacts', 'slurm', 'g1');
    mkdirSync(launchDir, { recursive: true });
    writeFileSync(join(launchDir, 'launch.json'), JSON.stringify({ group: 'g1', submissions: 'nope' }));
    await expect(slurmCommand([config, '--shards', '2', '--group', 'g1'])).rejects.toThrow(`${join(launchDir, 'launch.json')}: not a launch record`);
    expect(existsSync(sbatchLog)).toBe(false);
    expect(existsSync(join(launchDir, 'shards.sbatch'))).toBe(false);
  });

  it("a cache folder with a ' keeps a valid override in a cache mode other than use", () => {
    const d = fresh('quote');
    const node = join(d, 'fake-node');
    writeFileSync(node, '#!/bin/bash\nfor a in "$@"; do printf "%s\\n" "$a"; done\n');
    chmodSync(node, 0o755);
    const launch: SlurmLaunch = {
      configFile: join(d, 'exp.yaml'),
      config: { name: 'toc', llm: { provider: 'openai-compatible', cache: { mode: 'refresh', path: '/x' } }, tracking: { experiment: 'e', enabled: true, traces: true, tags: {} } } as unknown as ExperimentConfig,
      shards: 2,
      group: 'g1',
      runArgs: [],
      cacheDir: join(d, "it's local"),
      launchDir: join(d, 'launch'),
      workDir: d,
      artifactsDir: join(d, 'artifacts'),
      node,
      cli: '/repo/bin/ambiqa.mjs',
      resources: { extra: [] },
    };
    writeFileSync(join(d, 'job.sh'), shardsScript(launch));
    const argv = execFileSync('bash', [join(d, 'job.sh')], { env: { PATH: saved.PATH ?? '', SLURM_ARRAY_TASK_ID: '1' }, encoding: 'utf8' })
      .trimEnd()
      .split('\n')
      .filter((l) => !l.startsWith('ambiqa slurm:'));
    const set = argv[argv.indexOf('--set') + 1]!;
    expect(parseOverride(set).value).toEqual({ mode: 'refresh', path: join(d, "it's local", 'g1', 'shard-1.sqlite') });
  });
});
