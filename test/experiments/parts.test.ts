import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expandGrid, gridAxes } from '../../src/experiments/grid';
import { JsonlAppender, readJsonl, repairJsonl } from '../../src/common/jsonl';
import { ProgressBar } from '../../src/experiments/progress';
import { emptyUsage } from '../../src/llm/types';
import { parseShard, selectShard } from '../../src/experiments/shard';
import { summaryCsv, summaryMarkdown } from '../../src/experiments/summary';

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-parts-'));

describe('shards', () => {
  const items = Array.from({ length: 23 }, (_, i) => ({ id: `q${String((i * 7) % 23).padStart(2, '0')}` }));

  it('partition the selection: disjoint, complete, balanced, independent of input order', () => {
    const n = 4;
    const shards = Array.from({ length: n }, (_, i) => selectShard(items, { index: i, count: n }));
    const all = shards.flat().map((x) => x.id).sort();
    expect(all).toEqual(items.map((x) => x.id).sort());
    expect(new Set(all).size).toBe(items.length);
    const sizes = shards.map((s) => s.length);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    const reversed = selectShard([...items].reverse(), { index: 2, count: n }).map((x) => x.id).sort();
    expect(reversed).toEqual(shards[2].map((x) => x.id).sort());
    // A shard keeps the original order of its examples.
    const positions = shards[1].map((x) => items.indexOf(x));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it('parse i/N numbered from 0 and reject the rest', () => {
    expect(parseShard('0/4')).toEqual({ index: 0, count: 4 });
    expect(parseShard(' 3 / 4 ')).toEqual({ index: 3, count: 4 });
    expect(() => parseShard('4/4')).toThrow('shard index must be in 0..3');
    expect(() => parseShard('3/2')).toThrow('shard index must be in 0..1');
    expect(() => parseShard('0/0')).toThrow('at least 1');
    expect(() => parseShard('1-4')).toThrow('not a shard spec');
  });
});

describe('durable JSONL', () => {
  it('appends whole lines and survives a torn last line', () => {
    const file = join(dir, 'r.jsonl');
    const out = new JsonlAppender(file);
    out.append({ id: 'a' });
    out.append({ id: 'b' });
    out.close();
    appendFileSync(file, '{"id":"c","out'); // a write cut short by SIGKILL
    expect(readJsonl<{ id: string }>(file).map((r) => r.id)).toEqual(['a', 'b']);
    expect(repairJsonl(file)).toBe('{"id":"c","out'.length);
    expect(readFileSync(file, 'utf8')).toBe('{"id":"a"}\n{"id":"b"}\n');
    const again = new JsonlAppender(file);
    again.append({ id: 'c' });
    again.close();
    expect(readJsonl<{ id: string }>(file).map((r) => r.id)).toEqual(['a', 'b', 'c']);
    expect(repairJsonl(file)).toBe(0);
  });

  it('refuses a corrupt line in the middle', () => {
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, '{"id":"a"}\nnot json\n{"id":"b"}\n');
    expect(() => readJsonl(file)).toThrow(/bad.jsonl:2: not valid JSON/);
  });
});

describe('sweep grid', () => {
  it('is the Cartesian product, first axis slowest, with readable labels', () => {
    const axes = gridAxes({ 'pipeline.options.threshold': [1, 2, 3], 'llm.temperature': [0, 0.7] });
    const points = expandGrid(axes);
    expect(points.map((p) => p.label)).toEqual([
      'threshold=1,temperature=0',
      'threshold=1,temperature=0.7',
      'threshold=2,temperature=0',
      'threshold=2,temperature=0.7',
      'threshold=3,temperature=0',
      'threshold=3,temperature=0.7',
    ]);
    expect(points[3].overrides.map((o) => [o.path, o.value])).toEqual([
      [['pipeline', 'options', 'threshold'], 2],
      [['llm', 'temperature'], 0.7],
    ]);
  });

  it('uses whole paths when two axes share a last segment, and rejects repeats', () => {
    const axes = gridAxes({ 'pipeline.options.temperature': [0], 'llm.temperature': [1] });
    expect(axes.map((a) => a.label)).toEqual(['pipeline.options.temperature', 'llm.temperature']);
    expect(() => gridAxes({ 'a.b': [1, 1] })).toThrow('lists a value twice');
    expect(() => gridAxes({})).toThrow('sweep: is empty');
  });

  it('summarises rows as Markdown and CSV', () => {
    const axes = gridAxes({ 'pipeline.options.threshold': [1, 2] });
    const points = expandGrid(axes);
    const metrics = (mean: number) => ({
      n: 10,
      metrics: { em: { mean, ciLow: mean - 5, ciHigh: mean + 5, n: 10 } },
      usage: { llm_calls: 50, prompt_tokens: 1000, completion_tokens: 200, cache_hits: 40, wall_seconds: 1.5 },
    });
    const rows = [
      { point: points[0], runDir: '/r/1', status: 'FINISHED', metrics: metrics(40) },
      { point: points[1], runDir: '/r/2', status: 'FINISHED', metrics: metrics(45) },
    ];
    const md = summaryMarkdown(axes, rows);
    expect(md.split('\n')[0]).toBe('| threshold | n | em | llm_calls | cache_hits | prompt_tokens | completion_tokens | wall_seconds | status |');
    expect(md).toContain('| 2 | 10 | 45.0 [40.0, 50.0] | 50 | 40 | 1000 | 200 | 1.50 | FINISHED |');
    const csv = summaryCsv(axes, rows).trim().split('\n');
    expect(csv[0]).toBe('threshold,n,em,em_ci_low,em_ci_high,llm_calls,cache_hits,prompt_tokens,completion_tokens,wall_seconds,status,run_dir');
    expect(csv[1]).toBe('1,10,40,35,45,50,40,1000,200,1.5,FINISHED,/r/1');
  });
});

describe('progress line', () => {
  it('prints plain lines off a terminal, with ETA and counters', () => {
    const chunks: string[] = [];
    let t = 0;
    const stream = { write: (s: string) => chunks.push(s), isTTY: false } as unknown as NodeJS.WriteStream;
    const bar = new ProgressBar({ label: 'run x', stream, now: () => t });
    const state = { done: 0, total: 10, resumed: 0, errors: 0, usage: emptyUsage() };
    bar.update(state);
    t = 20_000;
    bar.update({ ...state, done: 5, usage: { ...emptyUsage(), calls: 12, promptTokens: 12_345, completionTokens: 99, cacheHits: 3 }, errors: 1 });
    bar.finish({ ...state, done: 10 });
    expect(chunks).toHaveLength(3);
    expect(chunks[0]).toBe('run x | 0/10 (0%) | elapsed 0s | ETA ? | llm 0 calls | tokens 0+0 | cache hits 0 | errors 0\n');
    expect(chunks[1]).toBe('run x | 5/10 (50%) | elapsed 20s | ETA 20s | llm 12 calls | tokens 12.3k+99 | cache hits 3 | errors 1\n');
    expect(chunks[2]).toContain('10/10 (100%)');
  });
});
