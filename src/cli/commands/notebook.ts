import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { venvDir } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { assertPortFree, firstFreePort } from '../../common/port';
import { describeExit, startLab } from '../../notebook/lab';
import { docsNotebooksDir, finishDocsCopy, projectNotebooks } from '../../notebook/docs';
import { executeNotebook, jupyterBinary, jupyterEnv, jupyterPath, registerKernel } from '../../notebook/kernel';
import { consoleReporter } from '../../setup/context';
import { ensureJupyter, markVenvCommonJs, missingJupyterPackages, venvPython } from '../../setup/venv';
import { ensureToolSet } from '../../setup/tools';

export const summary = 'open the TypeScript notebooks in JupyterLab 4 (tslab kernel, plotly renderer; from the project venv)';

/** An executed notebook for docs/ must stay small enough to open anywhere (figures are PNGs, not plotly.js). */
export const MAX_DOCS_NOTEBOOK_BYTES = 1_000_000;

const help = `usage: ambiqa notebook [options]

Starts JupyterLab 4 from the project venv (.venv, installed by \`npx ambiqa setup\` beside MLflow,
with plotly's renderer so figures are interactive) at the repository root, opened on notebooks/.
The tslab TypeScript kernel is registered under <repo>/.jupyter (git-ignored; AMBIQA_JUPYTER_PREFIX
moves it) and always runs from the repository root, so notebooks anywhere import the library as
\`import { run, show } from 'ambiqa'\`.

options:
  --port <n>              JupyterLab port (default: 8888, or the first free one after it); refused
                          when another program holds it
  --ip <address>          address JupyterLab binds (default 127.0.0.1, this machine only,
                          container or not; --ip 0.0.0.0 to reach it from elsewhere, e.g. from
                          the host of a container — anyone who can reach it then needs only
                          the token)
  --no-browser            do not open a browser (the URL with its token is printed once
                          JupyterLab is proven to be what answers on the port)
  --register-only         only write the kernel spec and print where it is
  --print-env             with --register-only: print shell exports for JUPYTER_PATH
  --execute [nb ...]      run notebooks headless (default: every notebooks/NN-*.ipynb) into --out
  --out <dir>             where --execute writes executed copies (default: a temp dir)
  --execute-docs [nb ...] run notebooks headless (default: all of them) and write the executed
                          copies to docs/notebooks/, stamped with their source's hash (loads the
                          embedded model when the notebook uses it)
  -h, --help              this help

Ctrl-C, SIGTERM or SIGHUP stops JupyterLab and its kernels; so does this command's end for any
other reason (a watchdog stops them when it dies).`;

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
      'execute-docs': { type: 'boolean', default: false },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(help);
    return 0;
  }
  const executing = values.execute || values['execute-docs'];
  if (positionals.length > 0 && !executing) {
    throw new AmbiqaError(`unexpected argument '${positionals[0]}'`, 'notebook paths are only taken with --execute or --execute-docs');
  }
  if (values.execute && values['execute-docs']) throw new AmbiqaError('--execute and --execute-docs: choose one');
  if (values['execute-docs'] && values.out) throw new AmbiqaError('--out: --execute-docs always writes to docs/notebooks/');
  // Port 0 would let Jupyter pick one this command could not check.
  if (values.port !== undefined && !(/^\d+$/.test(values.port) && Number(values.port) >= 1 && Number(values.port) <= 65535)) {
    throw new AmbiqaError(`--port: '${values.port}' is not a port number (1 to 65535)`);
  }
  for (const p of positionals) if (!existsSync(p)) throw new AmbiqaError(`notebook not found: ${p}`);

  // The tslab kernel lives in the tool folder; the first `ambiqa notebook` installs it (src/setup/tools.ts),
  // saying so on stderr: `--print-env`'s stdout is eval'd by scripts/jupyter-kernel.sh's users.
  await ensureToolSet('notebook', { report: { ...consoleReporter(true), did: (m) => console.error(`+ ${m}`) } });
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

  if (executing) {
    await ensureProjectJupyter();
    const notebooks = positionals.length > 0 ? positionals.map((p) => resolve(p)) : projectNotebooks();
    const docs = values['execute-docs'];
    const outDir = docs ? docsNotebooksDir() : values.out ? resolve(values.out) : mkdtempSync(join(tmpdir(), 'ambiqa-notebooks-'));
    let failed = 0;
    for (const nb of notebooks) {
      const result = await executeNotebook(nb, { outDir, registration: reg });
      let output = result.output;
      if (result.ok && docs) {
        // docs/notebooks/<same name>: a reader finds the executed copy under the notebook's own name.
        output = join(outDir, basename(nb));
        renameSync(result.output, output);
        finishDocsCopy(output, nb, result.seconds);
        const bytes = statSync(output).size;
        if (bytes >= MAX_DOCS_NOTEBOOK_BYTES) {
          console.error(`${output}: ${(bytes / 1e6).toFixed(2)} MB, over the ${MAX_DOCS_NOTEBOOK_BYTES / 1e6} MB a shared notebook may weigh (a figure or table too large?)`);
          failed += 1;
        }
      }
      console.log(`${result.ok ? 'ok    ' : 'FAILED'} ${nb} (${result.seconds.toFixed(0)} s) → ${output}`);
      if (!result.ok) {
        failed += 1;
        console.error(result.log.split('\n').slice(-40).join('\n'));
      }
    }
    return failed === 0 ? 0 : 1;
  }

  await ensureProjectJupyter();
  const jupyter = jupyterBinary();
  // The read-only extension manager: no PyPI or npm queries at start-up (the pypi one asks yarn for
  // its registry and prints a stack trace when that fails); extensions come pinned with the venv.
  const args = ['lab', `--ServerApp.root_dir=${reg.root}`, '--ServerApp.default_url=/lab/tree/notebooks', '--LabApp.extension_manager=readonly'];
  const ip = values.ip ?? '127.0.0.1';
  // The port is always chosen here and given to Jupyter with port_retries=0: Jupyter may not move
  // to another one, so the port this command checks is the one it serves. A given port another
  // program holds is refused; without --port, the first free one from Jupyter's default 8888.
  let port: number;
  if (values.port) {
    port = Number(values.port);
    await assertPortFree(ip, port, '--port');
  } else port = await firstFreePort(ip, 8888, 50);
  // Containers and CI often run as root, which Jupyter refuses without this flag.
  if (typeof process.getuid === 'function' && process.getuid() === 0) args.push('--allow-root');
  console.log(`kernel '${reg.name}' registered in ${reg.prefix}; starting JupyterLab at ${reg.root}, bound to ${ip} port ${port} (Ctrl-C to stop)`);
  // Under a watchdog (src/common/supervise.ts): JupyterLab and its kernels stop with this command,
  // however it ends. Its own group, so a Ctrl-C reaches it through us: it stops without the
  // "Shut down this Jupyter server (y/[n])?" prompt, which a stopped command could not answer.
  // Its URL (with a fresh token) is announced, and a browser opened, only once what answers on
  // the port is proven to be this JupyterLab (src/notebook/lab.ts).
  const lab = startLab({ jupyter, args, cwd: reg.root, env: jupyterEnv(reg), ip, port });
  let stopping = false;
  const onSignal = (name: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    console.error(`\n${name}: stopping JupyterLab`);
    void lab.supervised.stop();
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  let redirect: string | undefined;
  try {
    let url: string;
    try {
      url = await lab.ready;
    } catch (error) {
      if (stopping) return 0;
      throw error;
    }
    if (!stopping) {
      console.log(`JupyterLab (checked: the server this command started): ${url}`);
      if (!values['no-browser']) redirect = openBrowser(url);
    }
    const code = await lab.supervised.exited;
    if (stopping) return 0;
    if (code === 0) {
      console.error(`JupyterLab on port ${port} shut down`);
      return 0;
    }
    console.error(`port ${port}: JupyterLab exited with ${describeExit(code)} (it died while this command ran)`);
    return 1;
  } finally {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
    if (redirect) rmSync(redirect, { recursive: true, force: true });
  }
}

/**
 * Opens the URL the way Jupyter does, through a redirect file only this user can read rather
 * than on a command line every user can see (the URL holds the token); undefined when no Python
 * with its webbrowser module is at hand (the URL was printed). Returns the folder to remove.
 */
function openBrowser(url: string): string | undefined {
  const python = venvPython(venvDir());
  if (!existsSync(python)) return undefined;
  const folder = mkdtempSync(join(tmpdir(), 'ambiqa-lab-'));
  const file = join(folder, 'open.html');
  const href = url.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  writeFileSync(file, `<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${href}"></head><body><a href="${href}">JupyterLab</a></body></html>\n`, { mode: 0o600 });
  const opener = spawn(python, ['-m', 'webbrowser', '-t', pathToFileURL(file).href], { stdio: 'ignore', detached: true });
  opener.on('error', () => undefined);
  opener.unref();
  return folder;
}

const STOP_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * JupyterLab, nbconvert and plotly are part of the venv `ambiqa setup` makes; a venv made before
 * they were gets them here (about a minute, once). AMBIQA_JUPYTER (another Jupyter) skips this.
 */
async function ensureProjectJupyter(): Promise<void> {
  if (process.env.AMBIQA_JUPYTER) return;
  const venv = venvDir();
  if (!existsSync(venvPython(venv))) {
    throw new AmbiqaError(`no project venv at ${venv} (JupyterLab is installed there)`, 'run `npx ambiqa setup` first (the quick start\'s first command does)');
  }
  markVenvCommonJs(venv);
  if (missingJupyterPackages(venv).length > 0 || !existsSync(jupyterPath())) await ensureJupyter({ venvDir: venv, report: consoleReporter(false) });
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
