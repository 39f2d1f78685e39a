import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A stand-in for `jupyter` (set as AMBIQA_JUPYTER), for `ambiqa notebook` tests: the real
 * JupyterLab takes a minute to start on a busy machine. It prints `fake jupyter <args>`, starts
 * a helper of its own (`sleep 602`, as Jupyter starts kernels) and then, by `mode`:
 *
 *   - `honest`: serves `/api/status` on `--ip`/`--port` as Jupyter does: 200 with the token it got
 *     in JUPYTER_TOKEN, 403 without; its banner prints the URL with the token, as Jupyter's does;
 *   - `open`: serves, but answers 200 to every request (it ignores the token);
 *   - `outside`: an impostor. It starts the real listener through a double fork (reparented to
 *     init, outside the command's tree) and waits. That listener tells requests with a token
 *     from those without (200 / 403), as Jupyter would, but never saw the token;
 *   - `crash`: exits with status 3 at once.
 *
 * `files.pid` gets the PID of the process that listens, `files.token` the token it was given,
 * `files.started` is written when it starts.
 */
export type FakeJupyterMode = 'honest' | 'open' | 'outside' | 'crash';

export interface FakeJupyter {
  command: string;
  files: { pid: string; token: string; started: string };
}

export function fakeJupyter(dir: string, name: string, mode: FakeJupyterMode): FakeJupyter {
  const root = join(dir, name);
  mkdirSync(root, { recursive: true });
  const files = { pid: join(root, 'listener.pid'), token: join(root, 'token'), started: join(root, 'started') };
  const listener = join(root, 'listener.cjs');
  writeFileSync(
    listener,
    `const fs = require('node:fs');
const [port, ip, mode] = process.argv.slice(2);
fs.writeFileSync(${JSON.stringify(files.pid)}, String(process.pid));
require('node:http').createServer((req, res) => {
  const token = process.env.JUPYTER_TOKEN;
  const auth = req.headers.authorization;
  const ok = mode === 'open' || (mode === 'outside' ? auth !== undefined : token !== undefined && auth === 'token ' + token);
  res.statusCode = req.url === '/api/status' && ok ? 200 : 403;
  res.setHeader('content-type', 'application/json');
  res.end(ok ? '{"started":"now"}' : '{"message":"Forbidden"}');
}).listen(Number(port), ip, () => {
  if (mode !== 'outside') console.error('    http://' + ip + ':' + port + '/lab?token=' + process.env.JUPYTER_TOKEN);
});
`,
  );
  const main = join(root, 'jupyter.cjs');
  writeFileSync(
    main,
    `const fs = require('node:fs');
const { spawn } = require('node:child_process');
const opt = (name) => (process.argv.find((a) => a.startsWith('--' + name + '=')) || '').split('=')[1];
fs.writeFileSync(${JSON.stringify(files.started)}, '');
fs.writeFileSync(${JSON.stringify(files.token)}, process.env.JUPYTER_TOKEN || '');
console.log('fake jupyter ' + process.argv.slice(2).join(' '));
const mode = ${JSON.stringify(mode)};
if (mode === 'crash') process.exit(3);
spawn('sleep', ['602'], { stdio: 'ignore' });
if (mode === 'outside') {
  const env = { ...process.env, JUPYTER_TOKEN: '' };
  spawn('sh', ['-c', '"$0" "$1" "$2" "$3" outside </dev/null >/dev/null 2>&1 &', process.execPath, ${JSON.stringify(listener)}, opt('port'), opt('ip')], { stdio: 'ignore', env });
  setInterval(() => {}, 1000);
} else {
  process.argv = [process.argv[0], ${JSON.stringify(listener)}, opt('port'), opt('ip'), mode];
  require(${JSON.stringify(listener)});
}
`,
  );
  const command = join(root, 'jupyter');
  writeFileSync(command, `#!/bin/sh\nexec "${process.execPath}" "${main}" "$@"\n`);
  chmodSync(command, 0o755);
  return { command, files };
}
