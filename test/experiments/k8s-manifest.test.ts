import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import YAML from 'yaml';
import { run as mergeCommand } from '../../src/cli/commands/merge';
import { run as runCommand } from '../../src/cli/commands/run';
import { resolveShardSpec } from '../../src/experiments/shard';

// No Kubernetes cluster can run here (no images), so the manifest in docs/experiments.md is
// checked against the CLI instead: it must say what the CLI understands and what the page claims
// (the shards' index from JOB_COMPLETION_INDEX with the count given once, the merge as its own
// Job naming the shards' group, nothing on shared storage, the key from a Secret).

interface Container {
  command?: string[];
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: unknown } }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
interface JobManifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    completionMode?: string;
    completions?: number;
    parallelism?: number;
    template: { spec: { restartPolicy: string; terminationGracePeriodSeconds?: number; containers: Container[]; volumes?: Array<Record<string, unknown> & { name: string }> } };
  };
}

function manifests(): JobManifest[] {
  const page = readFileSync(resolve(__dirname, '../../docs/experiments.md'), 'utf8');
  const section = page.slice(page.indexOf('### Kubernetes'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('docs/experiments.md: no ```yaml block after "### Kubernetes"');
  return YAML.parseAllDocuments(block).map((d) => {
    expect(d.errors).toEqual([]);
    return d.toJS() as JobManifest;
  });
}

async function helpOf(command: (argv: string[]) => Promise<number>): Promise<string> {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  try {
    await command(['--help']);
    return log.mock.calls.map((c) => String(c[0])).join('\n');
  } finally {
    log.mockRestore();
  }
}

const argsOf = (c: Container) => [...(c.command ?? []), ...(c.args ?? [])];
const valueAfter = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

describe('the Kubernetes manifest of docs/experiments.md', () => {
  const [shards, merge] = manifests() as [JobManifest, JobManifest];

  it('is two Jobs: the shards as an indexed Job, then the merge', () => {
    expect(manifests()).toHaveLength(2);
    for (const job of [shards, merge]) expect([job.apiVersion, job.kind]).toEqual(['batch/v1', 'Job']);
    expect(shards.spec.completionMode).toBe('Indexed');
    expect(merge.spec.completionMode).toBeUndefined();
  });

  it('runs each pod\'s shard from JOB_COMPLETION_INDEX, with the count the Job completes', async () => {
    const container = shards.spec.template.spec.containers[0]!;
    const args = argsOf(container);
    expect(args.slice(0, 3)).toEqual(['npx', 'ambiqa', 'run']);
    const completions = shards.spec.completions!;
    const spec = valueAfter(args, '--shard')!;
    // The last pod of the Job gets the last shard; every index maps to one shard of `completions`.
    expect(resolveShardSpec(spec, { JOB_COMPLETION_INDEX: String(completions - 1) })).toBe(`${completions - 1}/${completions}`);
    expect(args).toContain('--resume');
    const help = await helpOf(runCommand);
    for (const flag of args.filter((a) => a.startsWith('--'))) expect(help, `ambiqa run has no ${flag}`).toContain(flag);
    // SIGTERM stops a shard cleanly; it needs the time to write and upload before the SIGKILL.
    expect(shards.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(60);
  });

  it('keeps the LLM cache on the pod\'s own disk and mounts nothing shared', () => {
    const spec = shards.spec.template.spec;
    const container = spec.containers[0]!;
    const args = argsOf(container);
    const cache = args.find((a) => a.startsWith('llm.cache='))!.slice('llm.cache='.length);
    const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
    const mount = (container.volumeMounts ?? []).find((m) => cache.startsWith(`${m.mountPath}/`));
    expect(mount, `no volume is mounted where the cache ${cache} goes`).toBeDefined();
    expect(Object.keys(volumes.get(mount!.name)!)).toEqual(['name', 'emptyDir']);
    for (const v of volumes.values()) expect(v).not.toHaveProperty('persistentVolumeClaim');
    expect(merge.spec.template.spec.volumes ?? []).toEqual([]);
  });

  it('merges, as its own Job, the group the shards are tagged with, from the same MLflow server', async () => {
    const shardArgs = argsOf(shards.spec.template.spec.containers[0]!);
    const mergeContainer = merge.spec.template.spec.containers[0]!;
    const mergeArgs = argsOf(mergeContainer);
    expect(mergeArgs.slice(0, 3)).toEqual(['npx', 'ambiqa', 'merge']);
    expect(valueAfter(mergeArgs, '--from-mlflow')).toBe(valueAfter(shardArgs, '--shard-group'));
    const help = await helpOf(mergeCommand);
    for (const flag of mergeArgs.filter((a) => a.startsWith('--'))) expect(help, `ambiqa merge has no ${flag}`).toContain(flag);
    const uri = (c: Container) => c.env?.find((e) => e.name === 'MLFLOW_TRACKING_URI')?.value;
    expect(uri(mergeContainer)).toBe(uri(shards.spec.template.spec.containers[0]!));
    expect(uri(mergeContainer)).toMatch(/^http:\/\//);
  });

  it('takes the API key from a Secret, never as a literal', () => {
    for (const job of [shards, merge]) {
      for (const e of job.spec.template.spec.containers.flatMap((c) => c.env ?? [])) {
        if (/KEY|TOKEN|PASSWORD/.test(e.name)) {
          expect(e.value, `${job.metadata.name}: ${e.name}`).toBeUndefined();
          expect(e.valueFrom?.secretKeyRef).toBeDefined();
        }
      }
    }
    expect(shards.spec.template.spec.containers[0]!.env?.some((e) => e.name === 'OPENAI_API_KEY')).toBe(true);
  });
});
