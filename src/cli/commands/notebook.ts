import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { projectRoot } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { executeNotebook, jupyterBinary, jupyterEnv, registerKernel } from '../../notebook/kernel';

export const summary = 'open the TypeScript notebooks in Jupyter (registers the tslab kernel locally)';

const help = `usage: ambiqa notebook [options]

Registers the tslab TypeScript kernel under <repo>/.jupyter (git-ignored; AMBIQA_JUPYTER_PREFIX
moves it) and starts Jupyter at the repository root, opened on notebooks/. The kernel always runs
from the repository root, so notebooks import the library as './src/...'.

options:
  --port <n>              Jupyter port (default: Jupyter's, 8888)
  --ip <address>          listen address (default 127.0.0.1; 0.0.0.0 inside a container)
  --no-browser            do not open a browser
  --register-only         only write the kernel spec and print where it is
  --print-env             with --register-only: print shell exports for JUPYTER_PATH
  --execute [nb ...]      run notebooks headless (default: every notebooks/*.ipynb) into --out
  --out <dir>             where --execute writes executed copies (default: a temp dir)
  -h, --help              this help`;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      ip: { type: 'string' },
      'no-browser': { type: 'boolean', default: false },
      'register-only': { type: 'boolean', default: false },
      'print-env': { type: 'boolean', default: false },
      execute: { type: 'boolean', default: false },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(help);
    return 0;
  }
  if (positionals.length > 0 && !values.execute) {
    throw new AmbiqaError(`unexpected argument '${positionals[0]}'`, 'notebook paths are only taken with --execute');
  }
  if (values.port !== undefined && !/^\d+$/.test(values.port)) throw new AmbiqaError(`--port: '${values.port}' is not a port number`);

  const reg = registerKernel();
  if (values['register-only']) {
    if (values['print-env']) {
      const env = jupyterEnv(reg, {});
      console.log(`export JUPYTER_PATH=${shellQuote(env.JUPYTER_PATH!)}`);
      console.log('export PYDEVD_DISABLE_FILE_VALIDATION=1');
    } else {
      console.log(`kernel '${reg.name}' written to ${reg.kernelJson}`);
      console.log(`Jupyter finds it with JUPYTER_PATH=${reg.jupyterPath}`);
    }
    return 0;
  }

  if (values.execute) {
    const notebooks = positionals.length > 0
      ? positionals.map((p) => resolve(p))
      : readdirSync(join(projectRoot, 'notebooks')).filter((f) => /^\d\d-.*\.ipynb$/.test(f)).sort().map((f) => join(projectRoot, 'notebooks', f));
    const outDir = values.out ? resolve(values.out) : mkdtempSync(join(tmpdir(), 'ambiqa-notebooks-'));
    let failed = 0;
    for (const nb of notebooks) {
      const result = await executeNotebook(nb, { outDir, registration: reg });
      console.log(`${result.ok ? 'ok    ' : 'FAILED'} ${nb} (${result.seconds.toFixed(0)} s) → ${result.output}`);
      if (!result.ok) {
        failed += 1;
        console.error(result.log.split('\n').slice(-40).join('\n'));
      }
    }
    return failed === 0 ? 0 : 1;
  }

  const jupyter = jupyterBinary();
  const args = ['notebook', `--notebook-dir=${reg.root}`, '--NotebookApp.default_url=/tree/notebooks'];
  if (values.port) args.push(`--port=${values.port}`);
  if (values.ip) args.push(`--ip=${values.ip}`);
  if (values['no-browser']) args.push('--no-browser');
  // Containers and CI often run as root, which Jupyter refuses without this flag.
  if (typeof process.getuid === 'function' && process.getuid() === 0) args.push('--allow-root');
  console.log(`kernel '${reg.name}' registered in ${reg.prefix}; starting Jupyter at ${reg.root} (Ctrl-C to stop)`);
  const child = spawn(jupyter, args, { cwd: reg.root, env: jupyterEnv(reg), stdio: 'inherit' });
  // Jupyter handles Ctrl-C itself (it asks to confirm); do not die before it does.
  const ignore = () => {};
  process.on('SIGINT', ignore);
  return await new Promise<number>((resolvePromise, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      process.off('SIGINT', ignore);
      resolvePromise(code ?? 1);
    });
  });
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
