import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main';
import { reproductionTargets } from '../../src/experiments/reproduce';
import { methodCatalog } from '../../src/pipelines/registry';
import { buildBundle, classifyBundleInput, csvCell, normaliseProvenance, readBundleManifest, resultsCsv, type BuiltBundle } from '../../src/report/bundle';
import { readRunJson, scoresOf } from '../../src/run-files';
import { INJECTIONS } from '../plots/browser';
import { result, run, trace, writeRunDir } from '../plots/fixtures';
import { clearRegisteredSecrets, registerSecret } from '../../src/common/secrets';
import { FORMULAS, RECORDED, writeStudy, type Study } from './bundle-fixtures';

// The bundle as files: every page and download where the manifest says, plotly.js once, every
// relative link resolving inside the bundle, provenance shown or "not recorded", model output
// escaped in HTML and guarded in CSV, and bad input refused in one line. The browser test
// (bundle.int.test.ts) opens it in Chromium.
const tmp = mkdtempSync(join(tmpdir(), 'ambiqa-bundle-'));
let study: Study;
let built: BuiltBundle;
const out = join(tmp, 'study');

/** RFC 4180 CSV, as a spreadsheet reads it (quoted cells with doubled quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(cell), (cell = '');
    else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell), rows.push(row), (row = []), (cell = ''), i++;
    } else cell += c;
  }
  return rows;
}

function htmlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? htmlFiles(p) : n.endsWith('.html') ? [p] : [];
  });
}

/** Every href and src of a page that is not an in-page anchor or an http(s) link to MLflow. */
function localRefs(html: string): string[] {
  return [...html.matchAll(/\s(?:href|src)="([^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&')).filter((u) => !u.startsWith('#') && !/^https?:\/\//.test(u));
}

beforeAll(async () => {
  study = writeStudy(tmp);
  built = await buildBundle([study.sweep, study.comparison, study.rag, study.toc], { out, methods: methodCatalog(), generatedAt: '2026-01-01T00:00:00Z' });
});

afterAll(() => vi.restoreAllMocks());

describe('ambiqa bundle: the site', () => {
  it('has one page per run (sweep points included, each once), sweep and comparison, listed in the manifest', () => {
    const kinds = built.manifest.entries.map((e) => `${e.kind}:${e.name}`).sort();
    expect(kinds).toEqual(['comparison:toc vs rag', 'run:rag', 'run:toc', 'run:ve.threshold=2', 'run:ve.threshold=3', 'sweep:ve-threshold']);
    for (const e of built.manifest.entries) expect(existsSync(join(out, e.page)), e.page).toBe(true);
    expect(readBundleManifest(out)?.entries.length).toBe(6);
    expect(built.manifest.entries.find((e) => e.kind === 'sweep')!.files).toEqual(['sweeps/ve-threshold/sweep.yaml', 'sweeps/ve-threshold/summary.json']);
    const point = built.manifest.entries.find((e) => e.name === 've.threshold=2')!;
    expect(point.sweep).toBe('sweeps/ve-threshold/index.html');
  });

  it('writes plotly.js once under assets/ and loads it by relative path, not inlined', () => {
    const plotly = readFileSync(join(out, 'assets', 'plotly.min.js'), 'utf8');
    expect(plotly.length).toBeGreaterThan(1_000_000);
    for (const file of htmlFiles(out)) {
      const html = readFileSync(file, 'utf8');
      expect(html.length, file).toBeLessThan(400_000);
      if (file === join(out, 'index.html')) continue;
      const src = relative(dirname(file), join(out, 'assets', 'plotly.min.js'));
      expect(html, file).toContain(`<script src="${src}"></script>`);
    }
  });

  it('every relative link and source of every page names a file inside the bundle', () => {
    let checked = 0;
    for (const file of htmlFiles(out)) {
      for (const ref of localRefs(readFileSync(file, 'utf8'))) {
        expect(ref, `${file}: ${ref}`).not.toMatch(/^[a-z]+:/i);
        const target = resolve(dirname(file), decodeURIComponent(ref.split('#')[0]!));
        expect(target.startsWith(out + '/'), `${file}: ${ref} leaves the bundle`).toBe(true);
        expect(existsSync(target) && statSync(target).isFile(), `${file}: ${ref} does not resolve to a file`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
  });

  it('cross-links: index → every page; sweep → its points; comparison → its bundled runs; every page → index', () => {
    const index = readFileSync(join(out, 'index.html'), 'utf8');
    for (const e of built.manifest.entries) expect(index).toContain(`href="${e.page}"`);
    const sweep = readFileSync(join(out, 'sweeps', 've-threshold', 'index.html'), 'utf8');
    expect(sweep).toContain('href="../../runs/ve.threshold-2/index.html"');
    expect(sweep).toContain('href="../../runs/ve.threshold-3/index.html"');
    // Each point's section sends to the point's page for its examples instead of repeating them.
    expect(sweep.match(/<p class="point-page">Examples and traces: <a href="..\/..\/runs\/ve.threshold-[23]\/index.html">/g)?.length).toBe(2);
    expect(sweep).not.toContain('<table class="examples"');
    const comparison = readFileSync(join(out, 'comparisons', 'toc-vs-rag', 'index.html'), 'utf8');
    expect(comparison).toContain('href="../../runs/rag/index.html"');
    expect(comparison).toContain('href="../../runs/toc/index.html"');
    const point = readFileSync(join(out, 'runs', 've.threshold-2', 'index.html'), 'utf8');
    expect(point).toContain('href="../../sweeps/ve-threshold/index.html"');
    for (const e of built.manifest.entries) expect(readFileSync(join(out, e.page), 'utf8')).toContain('href="../../index.html"');
  });

  it('each run page states what produced it, and "not recorded" where the run folder does not say', () => {
    const toc = readFileSync(join(out, 'runs', 'toc', 'index.html'), 'utf8');
    const provenance = toc.slice(toc.indexOf('<section class="provenance">'), toc.indexOf('</section>', toc.indexOf('<section class="provenance">')));
    expect(provenance).toContain(RECORDED.code.commit);
    expect(provenance).toContain(`qwen2.5-1.5b-instruct-q4_k_m <span class="note">(llama-cpp)</span> <code class="hash">sha256 ${RECORDED.models[0]!.sha256}</code>`);
    expect(provenance).toContain(RECORDED.data.dataset.sha256);
    expect(provenance).toContain('node-llama-cpp 3.0.0, llama.cpp ggml-org/llama.cpp b1234');
    expect(provenance).not.toContain('not recorded</td>');
    expect(provenance).toContain('<tr><th>re-scored</th><td>rougeLsum at 2026-01-02T00:00:00Z with reader roberta-squad by ambiqa 0.1.0 <code class="hash">fedcba9876543210</code>');
    const rag = readFileSync(join(out, 'runs', 'rag', 'index.html'), 'utf8');
    const ragProvenance = rag.slice(rag.indexOf('<section class="provenance">'), rag.indexOf('</section>', rag.indexOf('<section class="provenance">')));
    expect(ragProvenance).toMatch(/<th>commit<\/th><td class="missing">not recorded<\/td>/);
    expect(ragProvenance).toMatch(/<th>dataset sha256<\/th><td class="missing">not recorded<\/td>/);
    expect(ragProvenance).toContain('scripted/test');
    const comparison = readFileSync(join(out, 'comparisons', 'toc-vs-rag', 'index.html'), 'utf8');
    expect(comparison).toContain(RECORDED.code.commit);
    const index = readFileSync(join(out, 'index.html'), 'utf8');
    expect(index).toContain(RECORDED.code.commit.slice(0, 12));
    expect(index).toContain('commit not recorded');
  });

  it('reads provenance in MLflow tag names and `Provenance` field names too', () => {
    const fromTags = normaliseProvenance({ tags: { 'ambiqa.git.commit': 'c0ffee', 'ambiqa.git.dirty': 'true', 'ambiqa.model.llm': 'qwen', 'ambiqa.model.llm.sha256': 'ab12', 'ambiqa.dataset.sha256': 'cd34' } });
    expect(fromTags).toMatchObject({ commit: 'c0ffee', dirty: true, models: [{ role: 'llm', name: 'qwen', sha256: 'ab12' }], datasetSha256: 'cd34' });
    const fromFields = normaliseProvenance({ gitCommit: 'beef', gitDirty: false, ambiqaVersion: '0.1.0', models: { embedder: { name: 'minilm', sha256: 'ef56' } } });
    expect(fromFields).toMatchObject({ commit: 'beef', dirty: false, ambiqaVersion: '0.1.0', models: [{ role: 'embedder', name: 'minilm', sha256: 'ef56' }], dataFiles: [] });
    expect(fromFields.datasetSha256).toBeUndefined();
    expect(normaliseProvenance({})).toEqual({ models: [], dataFiles: [] });
  });

  it('copies a run’s provenance.json beside its page, so the bundled run folder can be re-run', () => {
    // The fixture is a provenance.json as reproduce's recording writes it (its schema reads it).
    expect(readRunJson(join(study.toc, 'provenance.json'), 'provenance')?.code.commit).toBe(RECORDED.code.commit);
    expect(JSON.parse(readFileSync(join(out, 'runs', 'toc', 'provenance.json'), 'utf8'))).toEqual(RECORDED);
    expect(existsSync(join(out, 'runs', 'rag', 'provenance.json'))).toBe(false);
  });

  it('is a target `ambiqa reproduce` finds its runs in (each run folder of the bundle has config.yaml, results.jsonl and provenance.json)', async () => {
    const targets = await reproductionTargets(out);
    expect(targets.map((d) => relative(out, d)).sort()).toEqual(['runs/rag', 'runs/toc', 'runs/ve.threshold-2', 'runs/ve.threshold-3']);
  });

  it('copies a figure’s PNG beside its page and offers it as the fallback', () => {
    expect(existsSync(join(out, 'runs', 'toc', 'figures', 'pruning-effect.png'))).toBe(true);
    const toc = readFileSync(join(out, 'runs', 'toc', 'index.html'), 'utf8');
    const section = toc.slice(toc.indexOf('id="fig-pruning-effect"'));
    expect(section.slice(0, section.indexOf('</section>'))).toContain('<noscript><img class="png-fallback" src="figures/pruning-effect.png"');
  });

  it('downloads each run’s rows as JSONL (the rows as written) and CSV with formulas guarded', () => {
    const jsonl = readFileSync(join(out, 'runs', 'rag', 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string; output: string });
    const ragRows = readFileSync(join(study.rag, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string; output: string });
    expect(jsonl).toEqual(ragRows);
    const csv = parseCsv(readFileSync(join(out, 'runs', 'rag', 'results.csv'), 'utf8'));
    expect(csv[0]).toEqual(['id', 'question', 'output', 'str_em', 'rougeLsum']);
    expect(csv.length).toBe(ragRows.length + 1);
    expect(csv[1]![2]).toBe(INJECTIONS.join('\n'));
    FORMULAS.forEach((f, i) => expect(csv[i + 2]![2]).toBe(`'${f}`));
    expect(csv[2 + FORMULAS.length]![2]).toMatch(/^answer, "quoted"\nsecond line/);
    // The scores stay numbers.
    expect(csv[1]![3]).toBe('0');
  });

  it('escapes model output in the pages: no injected element reaches the HTML', () => {
    const rag = readFileSync(join(out, 'runs', 'rag', 'index.html'), 'utf8');
    const outsideScripts = rag.replace(/<script[^>]*>[\s\S]*?<\/script>/g, '');
    for (const s of INJECTIONS) expect(outsideScripts).not.toContain(s);
    expect(outsideScripts).toContain('&lt;script&gt;window.__pwned');
  });
});

describe('ambiqa bundle: secrets', () => {
  it('masks a known secret in every file of the bundle, pages, downloads and copies alike', async () => {
    const secret = 'sk-bundle-test-0123456789abcdef';
    const dir = join(tmp, 'leaky');
    writeRunDir(dir, run('leaky', { name: 'leaky', note: `key ${secret}` }, [result('q1', { em: 100 }, { output: `my key is ${secret}`, question: `is ${secret} a key?` })], [trace('vanilla-rag', 'q1', { kind: 'baseline' } as never, { output: secret })]));
    registerSecret(secret);
    try {
      const leaky = join(tmp, 'leaky-bundle');
      await buildBundle([dir], { out: leaky, methods: methodCatalog() });
      const files = (function walk(d: string): string[] {
        return readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
      })(leaky);
      expect(files.map((f) => relative(leaky, f)).sort()).toEqual(['ambiqa-bundle.json', 'assets/plotly.min.js', 'index.html', 'runs/leaky/config.yaml', 'runs/leaky/index.html', 'runs/leaky/metrics.json', 'runs/leaky/results.csv', 'runs/leaky/results.jsonl']);
      for (const f of files) expect(readFileSync(f, 'utf8').includes(secret), f).toBe(false);
      expect(readFileSync(join(leaky, 'runs', 'leaky', 'results.csv'), 'utf8')).toContain('my key is [redacted]');
    } finally {
      clearRegisteredSecrets();
    }
  });
});

describe('ambiqa bundle: trials', () => {
  it('keeps every (question, trial) row in the downloads and counts questions × trials on the index', async () => {
    const dir = join(tmp, 'trials-run');
    const rows = ['q1', 'q2'].flatMap((id) => [0, 1, 2].map((t) => ({ ...result(id, { em: t === 1 ? 0 : 100 }, { output: `${id} answer ${t}` }), ...(t > 0 ? { trial: t } : {}) })));
    writeRunDir(dir, run('trials', { name: 'trials', trials: 3 }, rows, []));
    const trialsOut = join(tmp, 'trials-bundle');
    await buildBundle([dir], { out: trialsOut, methods: methodCatalog() });
    const csv = parseCsv(readFileSync(join(trialsOut, 'runs', 'trials', 'results.csv'), 'utf8'));
    expect(csv[0]).toEqual(['id', 'trial', 'question', 'output', 'em']);
    expect(csv.slice(1).map((r) => `${r[0]}#${r[1]}:${r[3]}:${r[4]}`).sort()).toEqual([
      'q1#0:q1 answer 0:100', 'q1#1:q1 answer 1:0', 'q1#2:q1 answer 2:100', 'q2#0:q2 answer 0:100', 'q2#1:q2 answer 1:0', 'q2#2:q2 answer 2:100',
    ]);
    expect(readFileSync(join(trialsOut, 'runs', 'trials', 'results.jsonl'), 'utf8').trim().split('\n')).toHaveLength(6);
    expect(readFileSync(join(trialsOut, 'index.html'), 'utf8')).toContain('<td class="num">2 × 3 trials</td>');
  });
});

describe('CSV cells', () => {
  it('guards formula starts in text, quotes commas, quotes and line breaks, and leaves numbers alone', () => {
    expect(csvCell('=1+1')).toBe("'=1+1");
    expect(csvCell('@x')).toBe("'@x");
    expect(csvCell('\tx')).toBe("'\tx");
    expect(csvCell('-1')).toBe("'-1");
    expect(csvCell(-1)).toBe('-1');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('=a,"b"')).toBe(`"'=a,""b"""`);
    expect(csvCell(Number.NaN)).toBe('');
    expect(csvCell(undefined)).toBe('');
  });

  it('has a trial column when rows carry trials, and an error column when a row failed', () => {
    const rows = [
      result('q1', { em: 100 }),
      { ...result('q1', { em: 0 }), trial: 1 },
      { ...result('q2', {}), scores: scoresOf({}), error: '+boom' },
    ];
    const csv = parseCsv(resultsCsv(rows));
    expect(csv[0]).toEqual(['id', 'trial', 'question', 'output', 'error', 'em']);
    expect(csv.slice(1).map((r) => [r[0], r[1], r[4], r[5]])).toEqual([['q1', '0', '', '100'], ['q1', '1', '', '0'], ['q2', '0', "'+boom", '']]);
  });
});

describe('ambiqa bundle: bad input', () => {
  async function cli(args: string[]): Promise<{ code: number; errors: string[]; printed: string[] }> {
    const errors: string[] = [];
    const printed: string[] = [];
    const err = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void errors.push(a.join(' ')));
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void printed.push(a.join(' ')));
    try {
      return { code: await main(['bundle', ...args]), errors, printed };
    } finally {
      err.mockRestore();
      log.mockRestore();
    }
  }

  it('names a path that is not a run, sweep or comparison in one line', async () => {
    const stray = join(tmp, 'stray');
    mkdirSync(stray, { recursive: true });
    writeFileSync(join(stray, 'notes.json'), '{"kind": "something"}');
    for (const bad of [stray, join(stray, 'notes.json'), join(tmp, 'missing')]) {
      const r = await cli([study.rag, bad, '--out', join(tmp, 'never')]);
      expect(r.code).toBe(1);
      expect(r.errors[0]!.split('\n')[0]).toMatch(new RegExp(`^ambiqa bundle: ${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: (not a run folder|does not exist)`));
      expect(existsSync(join(tmp, 'never'))).toBe(false);
    }
    expect(() => classifyBundleInput(out)).toThrow(/is an ambiqa bundle, not a run, sweep or comparison/);
  });

  it('refuses an existing --out that is not a bundle unless --force, and replaces a bundle', async () => {
    const mine = join(tmp, 'mine');
    mkdirSync(mine, { recursive: true });
    writeFileSync(join(mine, 'thesis.tex'), 'keep me');
    const refused = await cli([study.rag, '--out', mine]);
    expect(refused.code).toBe(1);
    expect(refused.errors[0]!.split('\n')[0]).toBe(`ambiqa bundle: --out ${mine}: exists and is not an ambiqa bundle (no ambiqa-bundle.json); refusing to replace it`);
    expect(readFileSync(join(mine, 'thesis.tex'), 'utf8')).toBe('keep me');

    const forced = await cli([study.rag, '--out', mine, '--force']);
    expect(forced.code).toBe(0);
    expect(forced.printed.join('\n')).toMatch(/wrote .*mine\/index\.html: 1 run, 0 sweep and 0 comparison pages, [\d.]+ MB/);
    expect(existsSync(join(mine, 'thesis.tex'))).toBe(false);

    // A bundle is replaced without --force: the old pages go.
    const again = await cli([study.toc, '--out', mine]);
    expect(again.code).toBe(0);
    expect(readBundleManifest(mine)!.entries.map((e) => e.name)).toEqual(['toc']);
    expect(existsSync(join(mine, 'runs', 'rag'))).toBe(false);
  });

  it('names a missing --out, no inputs and a bad --traces in one line each', async () => {
    expect((await cli([study.rag])).errors[0]!.split('\n')[0]).toBe('ambiqa bundle: --out <dir> is required');
    expect((await cli(['--out', join(tmp, 'never')])).errors[0]!.split('\n')[0]).toBe('ambiqa bundle: no run folders, sweep folders or comparison files given');
    expect((await cli([study.rag, '--out', join(tmp, 'never'), '--traces', 'some'])).errors[0]!.split('\n')[0]).toBe("ambiqa bundle: --traces: 'some' is not one of compact, full, none");
    expect(existsSync(join(tmp, 'never'))).toBe(false);
  });

  it('refuses an --out that holds an input', async () => {
    const r = await cli([study.rag, '--out', join(tmp, 'runs'), '--force']);
    expect(r.code).toBe(1);
    expect(r.errors[0]!.split('\n')[0]).toContain(`holds the input ${study.rag}`);
    expect(existsSync(join(study.rag, 'results.jsonl'))).toBe(true);
  });
});
