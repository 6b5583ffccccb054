import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * `ticket-mirror run` as a real child process, for what only a process can show: signals, `kill -9`, a data-folder
 * lock, a second replica. Its environment is given in full (nothing leaks in from the test's own), and it runs in an
 * empty folder of its own, so no `.env` is read.
 */

const BIN = resolve(import.meta.dirname, '../../bin/ticket-mirror.js');

export interface RunProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Its working folder; the embedded database is in `pglite/` there unless PGLITE_DIR says otherwise. */
  readonly cwd: string;
  /** http://127.0.0.1:HTTP_PORT */
  readonly httpUrl: string;
  /** Everything it wrote to stdout and stderr so far (its log). */
  output(): string;
  /** Resolves when it has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Kills it (SIGKILL) if it still runs and removes its folder. Idempotent. */
  dispose(): Promise<void>;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs one command of the real command line in a child process, asynchronously (a simulator in this process must go on
 * answering it), with only PATH and `env` in its environment, `stdin` as its input.
 */
export function runCli(args: string[], env: Record<string, string>, cwd: string, stdin = ''): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

export function startRun(env: Record<string, string>): RunProcess {
  return startCommand(['run'], env);
}

/** Any long-running command of the CLI (`fleet run …`) as startRun starts `run`: its own folder, only `env`. */
export function startCommand(args: string[], env: Record<string, string>): RunProcess {
  const cwd = mkdtempSync(join(tmpdir(), 'tm-run-'));
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, PGLITE_DIR: join(cwd, 'pglite'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => done({ code, signal })),
  );
  let disposed: Promise<void> | undefined;
  return {
    child,
    pid: child.pid!,
    cwd,
    httpUrl: `http://127.0.0.1:${env.HTTP_PORT}`,
    output: () => log,
    exited,
    dispose() {
      disposed ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGKILL');
          await exited;
        }
        rmSync(cwd, { recursive: true, force: true });
      })();
      return disposed;
    },
  };
}

/** `run` against a simulator, on a schema of a PostgreSQL, with an HTTP port of its own and an `info` log. */
export async function startRunOnPostgres(sim: { url: string; token: string }, databaseUrl: string, schema: string): Promise<RunProcess> {
  return startRun({
    TICKETS_API_URL: sim.url,
    TICKETS_API_TOKEN: sim.token,
    DATABASE_URL: databaseUrl,
    DB_SCHEMA: schema,
    HTTP_PORT: String(await freePort()),
    LOG_LEVEL: 'info',
  });
}

/** GET a URL; null when nothing answers. */
export async function get(url: string): Promise<{ status: number; body: string } | null> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return { status: response.status, body: await response.text() };
  } catch {
    return null;
  }
}

/**
 * Polls `check` every 100 ms until it holds, for at most `timeoutMs`; returns the milliseconds it took. Only for
 * waiting on another process, which has no event to await: a deadline bounds it, and nothing depends on its pace.
 */
export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, run?: RunProcess): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}${run ? `; its log:\n${run.output().slice(-4000)}` : ''}`);
    }
    // Killed by a signal (SIGKILL, the OOM killer, a V8 abort), it has exitCode null and signalCode set.
    if (run && (run.child.exitCode !== null || run.child.signalCode !== null)) {
      throw new Error(`the process exited (${run.child.exitCode ?? run.child.signalCode}) before ${what}; its log:\n${run.output().slice(-4000)}`);
    }
    await sleep(100);
  }
  return performance.now() - started;
}
