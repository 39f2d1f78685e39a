import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { methodCatalog } from '../../pipelines/registry';

export const summary = 'one static site for a study: its runs, sweeps and comparisons, cross-linked, with per-question downloads';

const help = `usage: ambiqa bundle <run dir | sweep dir | comparison.json> … --out <dir> [options]

Writes one static site that opens from file:// and from any static host: index.html lists every
run, sweep and comparison with its headline metrics and what produced it; each has a page drawn
by the same renderers as \`ambiqa report\`, with plotly.js written once under assets/. A sweep's
page links its points' run pages, a comparison's page links its runs when they are bundled,
every page links back to the index. Each run's rows are downloadable as results.jsonl and
results.csv beside its page. Nothing on a page asks the network for anything. Nothing is re-run.

options:
  --out <dir>        the bundle folder (required); an existing bundle there is replaced
  --force            replace --out even when it is not a bundle (it is deleted first)
  --png              render a PNG of every figure whose run or sweep folder holds none (needs
                     chromium; without it only the PNGs the folders hold are copied)
  --traces <mode>    traces embedded in run and comparison pages: compact (default) | full | none
  --data <file>      dataset file with the gold of rows written before format 3
  -h, --help         this help`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      force: { type: 'boolean', default: false },
      png: { type: 'boolean', default: false },
      traces: { type: 'string' },
      data: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(help);
    return 0;
  }
  if (positionals.length === 0) throw new AmbiqaError('no run folders, sweep folders or comparison files given', 'e.g. `ambiqa bundle artifacts/runs/rag artifacts/sweeps/ve --out study`');
  if (!values.out) throw new AmbiqaError('--out <dir> is required', 'the folder the site is written to');
  const traces = values.traces;
  if (traces !== undefined && !['compact', 'full', 'none'].includes(traces)) throw new AmbiqaError(`--traces: '${traces}' is not one of compact, full, none`);
  // Loaded lazily: `ambiqa --help` must not read plotly.js.
  const { buildBundle } = await import('../../report/bundle');
  const started = performance.now();
  const built = await buildBundle(positionals, {
    out: values.out,
    force: values.force,
    png: values.png,
    methods: methodCatalog(),
    ...(traces ? { traces: traces as 'compact' | 'full' | 'none' } : {}),
    ...(values.data ? { dataPath: values.data } : {}),
  });
  for (const note of built.notes) console.error(`note: ${note}`);
  const count = (kind: string) => built.manifest.entries.filter((e) => e.kind === kind).length;
  console.log(
    `wrote ${built.out}/index.html: ${count('run')} run, ${count('sweep')} sweep and ${count('comparison')} comparison pages, ` +
      `${(built.bytes / 1e6).toFixed(1)} MB in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return 0;
}
