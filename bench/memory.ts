import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';

/**
 * `npm run bench:memory` — the resident memory of the real daemon (`ticket-mirror run`, the embedded database and its
 * SQL socket, the status server) against the built-in simulator, read from /proc/PID/status (VmRSS, VmHWM):
 *
 * 1. fresh: an empty data folder; sampled until the daemon runs ("start"), while it backfills, then `--rest` seconds
 *    with nothing left to do ("at rest");
 * 2. reopened: the same folder after a graceful stop; sampled from start through the same rest.
 *
 * Each phase reports the daemon's VmRSS at its end and its highest sample, and VmHWM (the kernel's peak) at its end.
 * `tree` is the highest sum of VmRSS over the daemon and every process under it (a short-lived helper included).
 *
 *   --tickets N   tickets in the simulator (a third of them open). @default 50
 *   --rest S      seconds of rest measured after the backfill, and after the reopened start. @default 60
 *
 * The simulator runs in this process, with limits far above the real ones (600 requests a minute, 200,000 a day) so
 * that the backfill takes minutes, not days: it goes as fast as the per-minute allowance lets it.
 */

const BIN = fileURLToPath(new URL('../bin/ticket-mirror.js', import.meta.url));
const MINUTE_LIMIT = 600;
const DAILY_LIMIT = 200_000;
const SAMPLE_MS = 200;

const { values: opts } = parseArgs({
  options: {
    tickets: { type: 'string', default: '50' },
    rest: { type: 'string', default: '60' },
  },
});
const tickets = Math.max(3, Number(opts.tickets));
const restMs = Math.max(1, Number(opts.rest)) * 1000;

interface Memory {
  rssMb: number;
  hwmMb: number;
}

interface PhaseResult {
  phase: string;
  seconds: number;
  /** VmRSS at the end of the phase. */
  endMb: number;
  /** Highest VmRSS sampled during the phase. */
  maxMb: number;
  /** VmHWM at the end of the phase: the peak since the process started, samples or not. */
  hwmMb: number;
  /** Highest sum of VmRSS over the daemon and its descendants. */
  treeMaxMb: number;
}

/** VmRSS and VmHWM of a process, in MB; null once it is gone. */
function memoryOf(pid: number): Memory | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

/** The pid and every pid below it, from the parent pid in /proc/N/stat. */
function processTree(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      // gone meanwhile
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parentOf) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/** Samples a process every SAMPLE_MS into the current phase. */
class Sampler {
  #phase = { name: '', started: 0, maxMb: 0, treeMaxMb: 0 };
  readonly results: PhaseResult[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    this.#timer = setInterval(() => this.sample(), SAMPLE_MS);
  }

  sample(): Memory | null {
    const m = memoryOf(this.pid);
    if (!m) return null;
    const tree = processTree(this.pid).reduce((sum, pid) => sum + (memoryOf(pid)?.rssMb ?? 0), 0);
    this.#phase.maxMb = Math.max(this.#phase.maxMb, m.rssMb);
    this.#phase.treeMaxMb = Math.max(this.#phase.treeMaxMb, tree);
    return m;
  }

  begin(name: string): void {
    this.#phase = { name, started: performance.now(), maxMb: 0, treeMaxMb: 0 };
    this.sample();
  }

  end(label: string): PhaseResult {
    const m = this.sample() ?? { rssMb: 0, hwmMb: 0 };
    const p = this.#phase;
    const result = { phase: label, seconds: (performance.now() - p.started) / 1000, endMb: m.rssMb, maxMb: p.maxMb, hwmMb: m.hwmMb, treeMaxMb: p.treeMaxMb };
    this.results.push(result);
    log(`${label}: VmRSS ${mb(result.endMb)} (max ${mb(result.maxMb)}), VmHWM ${mb(result.hwmMb)}, tree max ${mb(result.treeMaxMb)}, ${result.seconds.toFixed(1)} s`);
    return result;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

interface Daemon {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

async function startDaemon(sim: RunningSimulator, dataDir: string, cwd: string): Promise<Daemon> {
  const child = spawn(process.execPath, [BIN, 'run'], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: cwd,
      TICKETS_API_URL: sim.url,
      TICKETS_API_TOKEN: sim.token,
      PGLITE_DIR: dataDir,
      PGLITE_PORT: String(await freePort()),
      HTTP_PORT: String(await freePort()),
      API_DAILY_LIMIT: String(DAILY_LIMIT),
      API_MINUTE_LIMIT: String(MINUTE_LIMIT),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, output: () => out, exited };
}

/** Polls `check` every 100 ms; a bench has no event to await in another process. */
async function until(what: string, check: () => boolean, daemon: Daemon, timeoutMs = 600_000): Promise<void> {
  const started = performance.now();
  while (!check()) {
    if (daemon.child.exitCode !== null) throw new Error(`the daemon exited (${daemon.child.exitCode}) before ${what}:\n${daemon.output().slice(-3000)}`);
    if (performance.now() - started > timeoutMs) throw new Error(`timed out waiting until ${what}:\n${daemon.output().slice(-3000)}`);
    await sleep(100);
  }
}

/** Tickets whose detail the simulator has served at least once. */
function detailsServed(sim: RunningSimulator): number {
  const ids = new Set<string>();
  for (const entry of sim.log) {
    const m = /^\/api\/v1\/ticket\/([^/?]+)$/.exec(entry.path.split('?')[0]!);
    if (entry.method === 'GET' && entry.status === 200 && m) ids.add(m[1]!);
  }
  return ids.size;
}

async function runPhases(sim: RunningSimulator, dataDir: string, cwd: string, label: string, backfill: boolean): Promise<void> {
  const daemon = await startDaemon(sim, dataDir, cwd);
  const sampler = new Sampler(daemon.child.pid!);
  try {
    sampler.begin('start');
    await until('it runs', () => daemon.output().includes('ticket-mirror is running'), daemon);
    sampler.end(`${label}: after start`);
    if (backfill) {
      sampler.begin('backfill');
      await until('the backfill is done', () => detailsServed(sim) >= tickets, daemon);
      // The last detail is written a moment after it was served.
      await sleep(2_000);
      sampler.end(`${label}: backfill`);
    }
    sampler.begin('rest');
    await sleep(restMs);
    sampler.end(`${label}: at rest (${restMs / 1000} s)`);
  } finally {
    sampler.stop();
    daemon.child.kill('SIGTERM');
    const code = await daemon.exited;
    if (code !== 0) log(`the daemon exited with ${code}:\n${daemon.output().slice(-3000)}`);
  }
  results.push(...sampler.results);
}

const results: PhaseResult[] = [];
const open = Math.round(tickets / 3);
const sim = await startSimulator({ seed: 42, openTickets: open, resolvedTickets: tickets - open, dailyLimit: DAILY_LIMIT, minuteLimit: MINUTE_LIMIT });
const cwd = mkdtempSync(join(tmpdir(), 'tm-memory-'));
try {
  const dataDir = join(cwd, 'pglite');
  log(`${tickets} tickets (${open} open); node ${process.version}; data folder ${dataDir}`);
  await runPhases(sim, dataDir, cwd, 'fresh', true);
  await runPhases(sim, dataDir, cwd, 'reopened', false);
} finally {
  await sim.close();
  rmSync(cwd, { recursive: true, force: true });
}

process.stdout.write(
  [
    `\n### Resident memory of \`run\` on the embedded database, ${tickets} tickets (\`npm run bench:memory -- --tickets ${tickets}\`)\n`,
    '| phase | VmRSS at its end | highest VmRSS | VmHWM | highest, with child processes |',
    '|---|---:|---:|---:|---:|',
    ...results.map((r) => `| ${r.phase} | ${mb(r.endMb)} | ${mb(r.maxMb)} | ${mb(r.hwmMb)} | ${mb(r.treeMaxMb)} |`),
    '',
  ].join('\n'),
);

function mb(n: number): string {
  return `${Math.round(n)} MB`;
}

function log(line: string): void {
  process.stderr.write(`[bench:memory] ${line}\n`);
}
