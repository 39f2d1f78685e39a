import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { registry } from '../../src/experiments/compose';
import { loadExperimentConfig } from '../../src/experiments/config';
import { RunTrackingSession } from '../../src/experiments/run-tracking';
import { parseUploadManifest, UPLOADS_PENDING, UPLOADS_TAG } from '../../src/experiments/shard-group';
import type { RunMetrics } from '../../src/run-files';
import type { RunTracker, Tracking } from '../../src/tracking/types';
import { writeAsqa, writeYaml } from './helpers/files';

// The `ambiqa.uploads` tag is what `merge --from-mlflow` trusts: `pending` from the start of a
// session, and the files' checksums only after the last of them is stored. Here the tracker
// records the order of operations, and can fail one upload.

const scratch = mkdtempSync(join(tmpdir(), 'ambiqa-uploads-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function session(failOn?: string) {
  const dir = mkdtempSync(join(scratch, 'case-'));
  const config = loadExperimentConfig(
    writeYaml(join(dir, 'up.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 2) },
      pipeline: { name: 'closed-book', options: { nShots: 0 } },
      llm: { provider: 'scripted' },
      metrics: ['str_em'],
      tracking: { experiment: 'uploads' },
    }),
    registry,
    { shard: '0/2' },
  );
  const ops: string[] = [];
  const tracker: RunTracker = {
    runId: 'r1',
    experimentId: '1',
    logParams: async () => {},
    logMetrics: async () => {},
    setTags: async (tags) => void ops.push(...Object.entries(tags).filter(([k]) => k === UPLOADS_TAG).map(([, v]) => `tag ${v}`)),
    logArtifact: async (path) => {
      if (basename(path) === failOn) throw new Error('HTTP 503 from the artifact store');
      ops.push(`upload ${basename(path)}`);
    },
    finish: async (status) => void ops.push(`finish ${status}`),
  };
  const tracking: Tracking = {
    startRun: async (options) => {
      ops.push(`start ${options.tags?.[UPLOADS_TAG]}`);
      return tracker;
    },
    runUrl: () => 'http://mlflow/#/run',
  };
  const files = ['config.yaml', 'results.jsonl', 'metrics.json'].map((f) => {
    writeFileSync(join(dir, f), `${f} of the run\n`);
    return join(dir, f);
  });
  const start = () =>
    RunTrackingSession.start({ config, redacted: config, runDir: dir, recordPath: join(dir, 'mlflow.json'), resume: false, session: 1, factory: async () => tracking, warn: (m) => ops.push(`warn ${m}`) });
  return { ops, files, start };
}

const metrics: RunMetrics = { n: 2, metrics: {}, usage: { llm_calls: 2, prompt_tokens: 1, completion_tokens: 1, cache_hits: 0, wall_seconds: 1 } };

describe('the ambiqa.uploads tag', () => {
  it('is pending while the session runs and lists every file\'s sha256 after the last upload, before the status', async () => {
    const { ops, files, start } = session();
    const s = await start();
    await s.finish(metrics, files, 'FINISHED');
    const tag = ops.find((o) => o.startsWith('tag ') && o !== `tag ${UPLOADS_PENDING}`)!;
    expect(ops.filter((o) => /^(start|upload|tag|finish)/.test(o))).toEqual([
      `start ${UPLOADS_PENDING}`,
      'upload config.yaml',
      'upload results.jsonl',
      'upload metrics.json',
      tag,
      'finish FINISHED',
    ]);
    const manifest = parseUploadManifest(tag.slice(4))!;
    expect([...manifest.keys()]).toEqual(['config.yaml', 'results.jsonl', 'metrics.json']);
    expect(manifest.get('results.jsonl')).toBe(createHash('sha256').update(readFileSync(files[1]!)).digest('hex'));
  });

  it('stays pending when an upload fails, so that a merge from MLflow refuses the run', async () => {
    const { ops, files, start } = session('results.jsonl');
    const s = await start();
    await s.finish(metrics, files, 'FINISHED');
    expect(ops.some((o) => o.startsWith('warn could not upload') && o.includes('HTTP 503'))).toBe(true);
    expect(ops.filter((o) => o.startsWith('tag '))).toEqual([]);
    expect(ops[ops.length - 1]).toBe('finish FINISHED');
  });

  it('reads only well-formed manifests', () => {
    const hex = 'a'.repeat(64);
    expect(parseUploadManifest(undefined)).toBeUndefined();
    expect(parseUploadManifest(UPLOADS_PENDING)).toBeUndefined();
    expect(parseUploadManifest(`results.jsonl=${hex.slice(1)}`)).toBeUndefined();
    expect(parseUploadManifest(`results.jsonl=${hex} run.json=${hex}`)?.size).toBe(2);
  });
});
