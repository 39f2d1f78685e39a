import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { AmbiqaError } from '../../errors';
import { methodCatalog } from '../../pipelines/registry';
import { aggregateResults } from '../../experiments/bindings';
import { parseGroupBy } from '../../experiments/cli-support';

export const summary = 'write a self-contained HTML report (and figure files) for a run or sweep directory';

const help = `usage: ambiqa report <run dir | sweep dir | comparison.json> [--out report.html] [options]

Reads what \`ambiqa run\` / \`ambiqa sweep\` wrote (config.yaml, results.jsonl, traces.jsonl,
metrics.json) and writes one HTML file with the config, metrics with 95% CIs, usage, figures and
a sortable, filterable table of examples with their traces. Nothing is re-run. Given the JSON
file of \`ambiqa compare\`, writes its side-by-side report (default: report.html beside it).

options:
  --out <file>            report file (default: <dir>/report.html)
  --data <file>           dataset file with the gold of rows written before format 3 (default: the run config's dataset.path); format-3 rows carry their own
  --coverage <file>       an \`ambiqa coverage --out\` JSON file to plot (repeatable)
  --tree-example <id>     which example's clarification tree to draw (ToC runs)
  --group-by f1,f2        metrics by group as well: metrics.json's groups, else computed from the
                          rows (kind and label derive from any run; other fields need a run
                          recorded with groupBy). With a comparison file: ignored (its groups
                          are those \`ambiqa compare --group-by\` paired)
  --traces <mode>         compact (default for runs) | full | none (default for sweeps)
  --figures-dir <dir>     also write every figure as <name>.html and <name>.png there
  --no-png                HTML figure files only (no chromium needed)
  --mlflow                attach the report and the figures (HTML + PNG) to the run's (or sweep's)
                          MLflow run, found through its mlflow.json
  -h, --help              this help`;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      data: { type: 'string' },
      coverage: { type: 'string', multiple: true },
      'tree-example': { type: 'string' },
      traces: { type: 'string' },
      'group-by': { type: 'string' },
      'figures-dir': { type: 'string' },
      'no-png': { type: 'boolean', default: false },
      mlflow: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(help);
    return 0;
  }
  if (positionals.length !== 1) {
    throw new AmbiqaError(
      positionals.length === 0 ? 'ambiqa report needs a run or sweep directory' : `ambiqa report takes one directory, got ${positionals.length}`,
      'e.g. `ambiqa report artifacts/runs/toc-asqa --out report.html`',
    );
  }
  const traces = values.traces;
  if (traces !== undefined && !['compact', 'full', 'none'].includes(traces)) {
    throw new AmbiqaError(`--traces: '${traces}' is not one of compact, full, none`);
  }
  const dir = positionals[0];
  const { isComparisonFile, readComparison, writeComparisonReport } = await import('../../report/compare');
  if (isComparisonFile(dir)) {
    const out = writeComparisonReport(readComparison(dir), values.out ?? join(dir, '..', 'report.html'), traces ? { traceMode: traces as 'compact' | 'full' | 'none' } : {});
    console.log(`wrote ${out} (comparison report)`);
    return 0;
  }
  // Loaded lazily: `ambiqa --help` must not read plotly.js.
  const { buildReport, writeReport, exportReportFigures, logFiguresToRun } = await import('../../report/index');
  const report = buildReport(dir, {
    // Each method's figures, decision statistics and judges, from the pipeline registry.
    methods: methodCatalog(),
    ...(values.data ? { dataPath: values.data } : {}),
    ...(values.coverage ? { coverageFiles: values.coverage } : {}),
    ...(values['tree-example'] ? { treeExample: values['tree-example'] } : {}),
    ...(traces ? { traces: traces as 'compact' | 'full' | 'none' } : {}),
    ...(values['group-by'] !== undefined ? { groupBy: parseGroupBy(values['group-by']), aggregate: aggregateResults } : {}),
  });
  const out = writeReport(report, values.out ?? join(dir, 'report.html'));
  for (const note of report.notes) console.error(`note: ${note}`);
  console.log(`wrote ${out} (${report.figures.figures.length} figures, ${(report.html.length / 1e6).toFixed(1)} MB)`);
  if (values['figures-dir']) {
    const exported = await exportReportFigures(report, values['figures-dir'], { png: !values['no-png'] });
    console.log(`wrote ${exported.reduce((n, e) => n + e.files.length, 0)} figure files to ${values['figures-dir']}`);
  }
  if (values.mlflow) {
    const target = report.loaded.kind === 'run' ? report.loaded.run : report.loaded.sweep;
    const figures = Object.fromEntries(report.figures.figures.map((f) => [f.name, f.figure]));
    const exported = await logFiguresToRun(target, figures, { png: !values['no-png'], files: [out] });
    const url = target.mlflow?.runUrl ? ` (${target.mlflow.runUrl})` : '';
    console.log(`logged the report and ${exported.reduce((n, e) => n + e.files.length, 0)} figure files to MLflow run ${target.mlflow?.runId}${url}`);
  }
  return 0;
}
