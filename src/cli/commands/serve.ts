import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultCatalog } from '../../config/catalog';
import { readModelManifest } from '../../config/models';
import { cacheDir, venvDir } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { parsePositiveInt } from '../../experiments/cli-support';
import { defaultThreads, machineLooksIdle } from '../../llm/providers/llama-cpp';
import { llamaServerMissing, startLlamaServer } from '../../setup/llama-server';

export const summary = "serve the embedded GGUF over an OpenAI-compatible API (llama.cpp's server), shared by runs and notebooks";

const HELP = `usage: ambiqa serve [options]

Starts llama.cpp's OpenAI-compatible server (llama-cpp-python, installed by
\`npx ambiqa setup --server\`) on the embedded GGUF and prints its base URL. The model loads
once; CLI runs and notebook kernels then share it through the openai-compatible provider:

  llm: { provider: openai-compatible, baseUrl: <printed URL>, model: <printed name> }

It answers /v1/chat/completions with logprobs/top_logprobs, so graded judgments work.
Ctrl-C, SIGTERM or SIGHUP stops it; so does this command's end for any other reason (a
watchdog stops the server when this process dies, SIGKILL included).

options:
  --port P        port to listen on (default 8080; 0 picks a free one)
  --host H        address the server binds (default 127.0.0.1, this machine only; it has no
                  authentication, so bind another address only on a network you trust)
  --llm NAME      a catalog LLM fetched by \`ambiqa setup --llm NAME\`, or a .gguf path
                  (default: the setup manifest's model)
  --threads N     CPU threads (default: AMBIQA_LLM_THREADS, else the cores, one fewer when busy)
  --context N     context window in tokens (default 4096, the embedded provider's)
  --quiet         do not print the server's own log
  -h, --help      this help`;

/** The GGUF for `--llm`: a catalog name whose file setup fetched, a path, or the manifest's model. */
export function servedModel(llm: string | undefined): { path: string; name: string } {
  if (!llm) {
    const m = readModelManifest();
    return { path: m.llm.file, name: m.llm.name };
  }
  const entry = defaultCatalog.llms.find((e) => e.name === llm);
  if (entry) {
    const path = join(cacheDir(), 'models', 'llm', entry.file);
    if (!existsSync(path)) throw new AmbiqaError(`--llm ${llm}: ${path} is not fetched yet`, `run \`npx ambiqa setup --llm ${llm}\` first`);
    return { path, name: entry.name };
  }
  if (llm.endsWith('.gguf') && existsSync(llm)) return { path: resolve(llm), name: llm.split('/').pop()!.replace(/\.gguf$/, '') };
  throw new AmbiqaError(`--llm ${llm}: not a catalog LLM and not a .gguf file`, `see \`npx ambiqa setup --list\` (known: ${defaultCatalog.llms.map((e) => e.name).join(', ')})`);
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      llm: { type: 'string' },
      threads: { type: 'string' },
      context: { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const port = values.port === undefined ? 8080 : values.port === '0' ? undefined : parsePositiveInt(values.port, '--port');
  if (port !== undefined && port > 65535) throw new AmbiqaError(`--port ${port}: must be at most 65535`);
  const threads = values.threads !== undefined ? parsePositiveInt(values.threads, '--threads') : defaultThreads(process.env, machineLooksIdle);
  const contextSize = values.context !== undefined ? parsePositiveInt(values.context, '--context') : 4096;
  const model = servedModel(values.llm);
  const missing = llamaServerMissing(venvDir());
  if (missing) throw missing;
  console.error(`starting llama.cpp's server on ${model.path} (${threads} thread${threads === 1 ? '' : 's'}, context ${contextSize})…`);

  const server = await startLlamaServer({
    venvDir: venvDir(),
    modelPath: model.path,
    alias: model.name,
    ...(values.host ? { host: values.host } : {}),
    ...(port !== undefined ? { port } : {}),
    threads,
    contextSize,
    ...(values.quiet ? {} : { onLog: (text: string) => process.stderr.write(text) }),
  });
  let stopping = false;
  const onSignal = (name: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    console.error(`\n${name}: stopping the server`);
    void server.stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  // Printed once the signals are taken: until a listener exists SIGTERM keeps its default action,
  // and a script that stops the server as soon as it reads the URL would kill this process instead.
  // The URL on stdout alone, so that a script can read it: `URL=$(npx ambiqa serve … | head -1)`.
  console.log(server.baseUrl);
  console.error(`serving model "${server.model}" at ${server.baseUrl}; in a config:\n  llm: { provider: openai-compatible, baseUrl: ${server.baseUrl}, model: ${server.model} }\nCtrl-C stops it.`);
  try {
    const code = await server.exited;
    if (stopping) {
      console.error('server stopped');
      return 0;
    }
    console.error(`the server exited by itself (code ${code})`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
  }
}
