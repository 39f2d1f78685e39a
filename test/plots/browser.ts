/** Open HTML files in the same headless chromium the exporter uses, to test what a reader sees. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM_ARGS, chromiumPath } from '../../src/plots/export';

/** Script text an attacker would put into model output; each sets a global if it ever runs. */
export const INJECTIONS = [
  '<script>window.__pwned = "script"</script>',
  '<img src=x onerror="window.__pwned = \'img\'">',
  '</script><script>window.__pwned = "breakout"</script>',
  '<svg onload="window.__pwned = \'svg\'"></svg>',
];

export interface Browser {
  open(path: string): Promise<{ page: Page; dialogs: string[] }>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  const dir = mkdtempSync(join(tmpdir(), 'ambiqa-test-chromium-'));
  const context: BrowserContext = await chromium.launchPersistentContext(dir, {
    executablePath: chromiumPath(),
    headless: true,
    args: CHROMIUM_ARGS,
  });
  return {
    async open(path: string) {
      const page = await context.newPage();
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      await page.goto(`file://${path}`, { waitUntil: 'load', timeout: 60_000 });
      return { page, dialogs };
    },
    async close() {
      await context.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
