import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { freePort, get, waitUntil } from '../helpers/runProcess.ts';

/**
 * SIGTERM or SIGINT to whatever a person or a supervisor started — `npm start`, the bin, the shell `npx` puts in
 * between — stops the daemon gracefully within 10 s; nothing is left holding the embedded database's lock. npm runs a
 * script through `sh -c`, which does not pass a signal on: before package.json's scripts `exec`-ed node, npm exited
 * 143 at once and the daemon ran on, orphaned.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/ticket-mirror.js');

interface Launched {
  readonly child: ChildProcess;
  readonly dataDir: string;
  readonly httpUrl: string;
  output(): string;
  /** Resolves when the launched process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when every process that held its stdout has exited (the daemon too, wherever it was re-parented). */
  readonly outputClosed: Promise<void>;
}

function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
  // A zombie that nobody has reaped yet has stopped all the same.
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
  } catch {
    return true;
  }
}

describe('stopping the daemon through the way it was started', { timeout: 180_000 }, () => {
  let sim: RunningSimulator;
  let home: string;
  const launched: Launched[] = [];

  beforeAll(async () => {
    sim = await startSimulator({ seed: 61, openTickets: 2, resolvedTickets: 2 });
    home = mkdtempSync(join(tmpdir(), 'tm-launch-'));
  });
  afterEach(async () => {
    for (const l of launched.splice(0)) {
      if (l.child.exitCode === null && l.child.signalCode === null) l.child.kill('SIGKILL');
      const pidFile = join(l.dataDir, 'ticket-mirror.lock');
      if (existsSync(pidFile)) {
        const pid = Number(readFileSync(pidFile, 'utf8'));
        if (pid > 0 && !isGone(pid)) process.kill(pid, 'SIGKILL');
      }
    }
  });
  afterAll(async () => {
    await sim?.close();
    rmSync(home, { recursive: true, force: true });
  });

  const launch = async (command: string, args: string[], o: { dataDir?: string; env?: Record<string, string>; group?: boolean } = {}) => {
    const dataDir = o.dataDir ?? mkdtempSync(join(home, 'pglite-'));
    const httpPort = await freePort();
    const child = spawn(command, args, {
      cwd: ROOT,
      detached: o.group ?? false,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        TICKETS_API_URL: sim.url,
        TICKETS_API_TOKEN: sim.token,
        // The environment wins over a developer's .env in the repository.
        TICKETS_API_TOKEN_FILE: '',
        DATABASE_URL: '',
        PGLITE_DIR: dataDir,
        PGLITE_PORT: '0',
        HTTP_PORT: String(httpPort),
        LOG_LEVEL: 'info',
        ...o.env,
      },
    });
    let log = '';
    child.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const l: Launched = {
      child,
      dataDir,
      httpUrl: `http://127.0.0.1:${httpPort}`,
      output: () => log,
      exited: new Promise((done) => child.once('exit', (code, signal) => done({ code, signal }))),
      outputClosed: Promise.all([
        new Promise<void>((done) => child.stdout!.once('close', done)),
        new Promise<void>((done) => child.stderr!.once('close', done)),
      ]).then(() => undefined),
    };
    launched.push(l);
    const asRun = { child, output: l.output } as Parameters<typeof waitUntil>[3];
    await waitUntil('the daemon answers /healthz', async () => (await get(`${l.httpUrl}/healthz`))?.status === 200, 90_000, asRun);
    return { ...l, daemonPid: Number(readFileSync(join(dataDir, 'ticket-mirror.lock'), 'utf8')) };
  };

  /** Resolves with the seconds it took until `done`; fails past 10 s. */
  const within10s = async (done: Promise<unknown>) => {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('still running 10 s after the signal')), 10_000);
    });
    try {
      await Promise.race([done, late]);
    } finally {
      clearTimeout(timer);
    }
    return (performance.now() - started) / 1000;
  };

  it('`npm start` + SIGTERM to npm: npm exits 0 within 10 s, the daemon has stopped and released the lock', async ({ annotate }) => {
    const npm = await launch('npm', ['start']);
    expect(npm.daemonPid).not.toBe(npm.child.pid);
    npm.child.kill('SIGTERM');
    const seconds = await within10s(npm.exited);
    await annotate(`npm exited ${seconds.toFixed(1)} s after SIGTERM`);
    expect(await npm.exited).toEqual({ code: 0, signal: null });
    await npm.outputClosed;
    expect(isGone(npm.daemonPid)).toBe(true);
    expect(npm.output()).toContain('"msg":"stopped"');
    expect(existsSync(join(npm.dataDir, 'ticket-mirror.lock'))).toBe(false);

    // The next start on the same data folder is not refused; the bin itself stops the same way.
    const bin = await launch(process.execPath, [BIN, 'run'], { dataDir: npm.dataDir });
    expect(bin.daemonPid).toBe(bin.child.pid);
    bin.child.kill('SIGTERM');
    await within10s(bin.exited);
    expect(await bin.exited).toEqual({ code: 0, signal: null });
    expect(bin.output()).toContain('"msg":"stopped"');
    expect(existsSync(join(npm.dataDir, 'ticket-mirror.lock'))).toBe(false);
  }, 170_000);

  it("Ctrl-C on `npm start` (SIGINT to the whole group, which npm passes on too) stops gracefully, not by force", async () => {
    const npm = await launch('npm', ['start'], { group: true });
    process.kill(-npm.child.pid!, 'SIGINT');
    await within10s(npm.exited);
    expect(await npm.exited).toEqual({ code: 0, signal: null });
    await npm.outputClosed;
    expect(isGone(npm.daemonPid)).toBe(true);
    expect(npm.output()).toContain('"msg":"stopped"');
    expect(npm.output()).not.toContain('second signal');
  }, 170_000);

  it('the shell npx puts in between dies of the SIGTERM npm passes on: the daemon stops all the same', async () => {
    // What `npx ticket-mirror run` runs: npm spawns `sh -c 'ticket-mirror' run` with npm_lifecycle_event=npx and, on
    // SIGTERM, signals that shell, which dies without passing the signal on.
    const sh = await launch('sh', ['-c', `"${process.execPath}" "${BIN}" run`], { env: { npm_lifecycle_event: 'npx' } });
    expect(sh.daemonPid).not.toBe(sh.child.pid);
    sh.child.kill('SIGTERM');
    expect(await sh.exited).toEqual({ code: null, signal: 'SIGTERM' });
    await within10s(sh.outputClosed);
    expect(isGone(sh.daemonPid)).toBe(true);
    expect(sh.output()).toContain('"reason":"the npm process that started it is gone"');
    expect(sh.output()).toContain('"msg":"stopped"');
    expect(existsSync(join(sh.dataDir, 'ticket-mirror.lock'))).toBe(false);
  }, 170_000);
});
