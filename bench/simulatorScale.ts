import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createFleetActivityDriver, startSimulator } from '../src/simulator/index.ts';
import { DAY_MS } from '../src/time.ts';
import { SMALL } from './workload.ts';

/**
 * `npm run bench:simulator` — what one simulator costs when it serves a fleet: `--accounts` (1,000) accounts of the
 * small workload (40 open, 400 resolved tickets each) on one API port, in this process; the requests come from a
 * child process (a second core), over `--connections` keep-alive connections.
 *
 * 1. registered: RSS and time of `addAccount` for `--registered` accounts (default: `--accounts`), none built yet;
 *    only the first `--accounts` of them are used from then on;
 * 2. built: each account's four lists, its first requests: the first builds its dataset lazily, each one encodes a
 *    list (cached until the next change); RSS after, and the time per account;
 * 3. throughput: `--seconds` of requests spread over every account, half lists (open, self, unassigned, resolved
 *    in a mirror's proportions), half details of random tickets; requests/s, latency, this process's CPU and its
 *    CPU time per request (which does not depend on what else the machine runs, unlike requests/s);
 * 4. activity: a weekday of the small workload's activity in every account, stepped by the fleet driver; the time it
 *    takes and the RSS after (changed tickets keep their messages).
 *
 * The accounts' limits are raised (10,000 a minute, 10,000,000 a day) so that every request is answered in full:
 * this measures the simulator, not the quota. RSS is read from /proc after a full GC (run with --expose-gc, as the
 * npm script does). `--json` prints one JSON line at the end.
 */

const { values: opts } = parseArgs({
  options: {
    accounts: { type: 'string', default: '1000' },
    registered: { type: 'string' },
    seconds: { type: 'string', default: '20' },
    connections: { type: 'string', default: '32' },
    json: { type: 'boolean', default: false },
    load: { type: 'boolean', default: false },
  },
});

interface LoadPlan {
  url: string;
  tokens: string[];
  phase: 'touch' | 'mixed';
  seconds: number;
  connections: number;
  /** For `mixed`: ticket ids per token (from the touch phase). */
  ids?: string[][];
}

interface LoadResult {
  requests: number;
  seconds: number;
  statuses: Record<string, number>;
  byKind: Record<string, { count: number; p50Ms: number; p99Ms: number }>;
  /** For `touch`: the open tickets' ids per token. */
  ids?: string[][];
  clientCpuS: number;
}

if (opts.load) {
  process.once('message', (plan: LoadPlan) => void runLoad(plan).then((result) => process.send!(result, () => process.exit(0))));
} else {
  await main();
}

async function main(): Promise<void> {
  const count = Number(opts.accounts);
  const registered = Math.max(count, Number(opts.registered ?? count));
  const seconds = Number(opts.seconds);
  const connections = Number(opts.connections);
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) process.stderr.write('warning: no --expose-gc; RSS figures include garbage\n');
  const rss = (): number => {
    gc?.();
    gc?.();
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return Math.round(Number(kb) / 1024);
  };
  const heapMb = (): number => Math.round(process.memoryUsage().heapUsed / 1024 / 1024);
  const log = (line: string): void => void process.stderr.write(`${line}\n`);

  const limits = { minuteLimit: 10_000, dailyLimit: 10_000_000 };
  const sizes = { openTickets: SMALL.openTickets, resolvedTickets: SMALL.resolvedTickets };
  const token = (k: number): string => `sim-token-${k}`;
  const sim = await startSimulator({ accounts: [{ token: token(1) }], seed: SMALL.seed, ...sizes, ...limits, logLimit: 2_000 });
  const baseMb = rss();
  let t0 = performance.now();
  for (let k = 2; k <= registered; k++) sim.addAccount({ token: token(k) });
  const registerUs = ((performance.now() - t0) * 1000) / Math.max(1, registered - 1);
  const registeredMb = rss();
  const heapMbAtRegistration = heapMb();
  log(`registered ${registered} accounts: ${registerUs.toFixed(1)} µs each, RSS ${registeredMb} MB (simulator alone ${baseMb} MB)`);

  const active = sim.accounts().slice(0, count);
  const tokens = active.map((a) => a.token);
  t0 = performance.now();
  const touch = await load({ url: sim.url, tokens, phase: 'touch', seconds: 0, connections });
  const buildMs = (performance.now() - t0) / count;
  const registeredHeapMb = heapMbAtRegistration;
  const builtMb = rss();
  const builtHeapMb = heapMb();
  const perAccountKb = Math.round(((builtMb - registeredMb) * 1024) / count);
  const perAccountHeapKb = Math.round(((builtHeapMb - registeredHeapMb) * 1024) / count);
  log(`built ${count} accounts lazily (first requests: the four lists): ${buildMs.toFixed(1)} ms each, RSS ${builtMb} MB, heap ${builtHeapMb} MB (${perAccountKb} KB of RSS, ${perAccountHeapKb} KB of heap an account)`);

  const cpu0 = process.cpuUsage();
  const mixed = await load({ url: sim.url, tokens, phase: 'mixed', seconds, connections, ids: touch.ids });
  const cpu = process.cpuUsage(cpu0);
  const simCpu = (cpu.user + cpu.system) / 1e6 / mixed.seconds;
  const reqPerS = Math.round(mixed.requests / mixed.seconds);
  const servedMb = rss();
  const cpuUsPerRequest = Math.round(((cpu.user + cpu.system) / mixed.requests));
  log(`throughput: ${reqPerS} req/s over ${mixed.seconds.toFixed(1)} s (statuses ${JSON.stringify(mixed.statuses)}), simulator CPU ${(simCpu * 100).toFixed(0)} % (${cpuUsPerRequest} µs a request), client CPU ${((mixed.clientCpuS / mixed.seconds) * 100).toFixed(0)} %; load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`);
  for (const [kind, k] of Object.entries(mixed.byKind)) log(`  ${kind.padEnd(10)} ${String(k.count).padStart(7)}  p50 ${k.p50Ms.toFixed(2)} ms  p99 ${k.p99Ms.toFixed(2)} ms`);

  const driver = createFleetActivityDriver({ accounts: () => active, ratesPerDay: SMALL.ratesPerDay, seed: SMALL.activitySeed });
  // A weekday, in hour steps (the driver applies each mutation at the clock's now: real time here).
  const monday = Date.UTC(2026, 0, 5);
  t0 = performance.now();
  let mutations = 0;
  for (let h = 0; h < 24; h++) mutations += driver.step(monday + h * (DAY_MS / 24), monday + (h + 1) * (DAY_MS / 24)).length;
  const activityMs = performance.now() - t0;
  const activeMb = rss();
  log(`activity: a weekday in every active account, ${mutations} mutations in ${activityMs.toFixed(0)} ms; RSS ${activeMb} MB`);
  await sim.close();

  const result = {
    accounts: count,
    registered,
    ticketsPerAccount: sizes.openTickets + sizes.resolvedTickets,
    rssMb: { simulatorAlone: baseMb, registered: registeredMb, built: builtMb, afterThroughput: servedMb, afterWeekday: activeMb },
    heapMb: { registered: registeredHeapMb, built: builtHeapMb },
    registerUsPerAccount: Number(registerUs.toFixed(1)),
    buildMsPerAccount: Number(buildMs.toFixed(1)),
    builtKbPerAccount: { rss: perAccountKb, heap: perAccountHeapKb },
    throughput: { reqPerS, cpuUsPerRequest, seconds: Number(mixed.seconds.toFixed(1)), connections, simulatorCpu: Number(simCpu.toFixed(2)), statuses: mixed.statuses, byKind: mixed.byKind },
    loadAverage: Number(loadavg()[0]!.toFixed(1)),
    weekday: { mutations, ms: Math.round(activityMs) },
  };
  if (opts.json) process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** Runs one phase in a child process (this file with --load), which reports back over IPC. */
function load(plan: LoadPlan): Promise<LoadResult> {
  const child = fork(new URL(import.meta.url), ['--load'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (result) => resolve(result as LoadResult));
    child.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`load generator exited with ${code}`))));
    child.send(plan);
  });
}

const KINDS = [
  ['open', '/api/v1/tickets', 25],
  ['self', '/api/v1/tickets/self', 10],
  ['unassigned', '/api/v1/tickets/unassigned', 10],
  ['resolved', '/api/v1/tickets/resolved', 5],
  ['detail', '', 50],
] as const;

async function runLoad(plan: LoadPlan): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: plan.connections });
  const statuses: Record<string, number> = {};
  const latencies = new Map<string, number[]>();
  const ids: string[][] = plan.tokens.map(() => []);
  const cpu0 = process.cpuUsage();
  const begun = performance.now();
  let next = 0;
  let rng = 12345;
  const random = (): number => ((rng = (Math.imul(rng, 1103515245) + 12345) >>> 0) / 2 ** 32);

  const send = (token: string, path: string, keep: boolean): Promise<{ status: number | string; body?: string }> =>
    new Promise((resolve, reject) => {
      const req = request(`${plan.url}${path}`, { agent, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => keep && chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: keep ? Buffer.concat(chunks).toString() : undefined }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });

  const worker = async (): Promise<void> => {
    for (;;) {
      const n = next++;
      let kind: string;
      let path: string;
      let i: number;
      if (plan.phase === 'touch') {
        // Each account's open list first (its ids), then its other lists.
        if (n >= 4 * plan.tokens.length) return;
        i = n % plan.tokens.length;
        [kind, path] = n < plan.tokens.length ? ['first', KINDS[0][1]] : ['firstList', KINDS[Math.floor(n / plan.tokens.length)]![1]];
      } else {
        if (performance.now() - begun > plan.seconds * 1000) return;
        i = n % plan.tokens.length;
        let r = random() * 100;
        const chosen = KINDS.find(([, , weight]) => (r -= weight) < 0) ?? KINDS[0];
        kind = chosen[0];
        const pool = plan.ids![i]!;
        path = kind === 'detail' ? `/api/v1/ticket/${pool[Math.floor(random() * pool.length)]}` : chosen[1];
      }
      const started = performance.now();
      // A keep-alive connection the server closed just as it was reused: sent once more (as HTTP clients do for a
      // GET); a second failure is counted by its code.
      const once = (): ReturnType<typeof send> => send(plan.tokens[i]!, path, kind === 'first');
      const res = await once()
        .catch(once)
        .catch((error: NodeJS.ErrnoException) => ({ status: error.code ?? 'error', body: undefined }));
      const list = latencies.get(kind) ?? [];
      list.push(performance.now() - started);
      latencies.set(kind, list);
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.body !== undefined) ids[i] = (JSON.parse(res.body) as { id: string }[]).map((t) => t.id);
    }
  };
  await Promise.all(Array.from({ length: plan.connections }, worker));
  const seconds = (performance.now() - begun) / 1000;
  const cpu = process.cpuUsage(cpu0);
  agent.destroy();
  const byKind: LoadResult['byKind'] = {};
  for (const [kind, list] of latencies) {
    list.sort((a, b) => a - b);
    const at = (q: number): number => Number(list[Math.min(list.length - 1, Math.floor(q * list.length))]!.toFixed(2));
    byKind[kind] = { count: list.length, p50Ms: at(0.5), p99Ms: at(0.99) };
  }
  const requests = Object.values(statuses).reduce((a, b) => a + b, 0);
  return { requests, seconds, statuses, byKind, ids: plan.phase === 'touch' ? ids : undefined, clientCpuS: (cpu.user + cpu.system) / 1e6 };
}
