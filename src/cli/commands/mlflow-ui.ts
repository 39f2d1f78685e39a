import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { artifactsDir, venvDir } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { advertiseServer, startLocalServer } from '../../tracking/server';

export const summary = 'start the local MLflow server (UI + REST) in the foreground to browse past runs';

const HELP = `usage: ambiqa mlflow-ui [options]

Starts the project's MLflow server from the venv (${venvDir()}) with the sqlite store and
artifacts under artifacts/mlflow/, prints its address, and keeps it running until Ctrl-C,
SIGTERM or SIGHUP; it also stops when this command dies for any other reason (a watchdog).
While it runs, other ambiqa commands (without MLFLOW_TRACKING_URI) log to it instead of
starting their own.

options:
  --port <n>          port to listen on (default: a free one)
  --host <addr>       address the server binds (default 127.0.0.1, this machine only; the
                      server has no authentication and is not meant to be public)
  --store-dir <dir>   store folder (default ${join(artifactsDir(), 'mlflow')})
  -h, --help          show this help`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'store-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new AmbiqaError(`--port: '${values.port}' is not a port number`, 'give an integer from 1 to 65535, or leave it out for a free port');
    }
  }
  if (process.env.MLFLOW_TRACKING_URI) {
    console.error(`note: MLFLOW_TRACKING_URI=${process.env.MLFLOW_TRACKING_URI} is set, so ambiqa commands log there; this local server shows the local store only.`);
  }
  const storeDir = values['store-dir'] ?? join(artifactsDir(), 'mlflow');
  // The stop signals are taken before anything is started or printed: until a listener exists,
  // Node leaves SIGTERM's default action in place, so a signal sent the moment the URL appears
  // (as a script or test does) would kill this process before it stops the server.
  let stopRequested = false;
  let wake = (): void => {};
  const onSignal = (): void => {
    stopRequested = true;
    wake();
  };
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const s of signals) process.on(s, onSignal);
  try {
    console.error(`starting MLflow (store: ${storeDir}) …`);
    const server = await startLocalServer({
      storeDir,
      keepAlive: true,
      ...(port !== undefined ? { port } : {}),
      ...(values.host ? { host: values.host } : {}),
    });
    const unadvertise = advertiseServer(server);
    // A server that ended by itself (killed, crashed) is a failure of this command, not a stop.
    let died = false;
    if (!stopRequested) {
      console.log(`MLflow UI: ${server.uri}`);
      console.log(`to log to it from another shell: export MLFLOW_TRACKING_URI=${server.uri}`);
      console.log('press Ctrl-C to stop');
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (stopRequested) resolve();
        void server.exited.then(() => {
          if (!stopRequested) died = true;
          resolve();
        });
      });
    }
    if (died) {
      unadvertise();
      console.error(`the MLflow server at ${server.uri} exited by itself; see ${server.logFile}`);
      return 1;
    }
    console.error('stopping MLflow …');
    unadvertise();
    await server.stop();
    return 0;
  } finally {
    for (const s of signals) process.off(s, onSignal);
  }
}
