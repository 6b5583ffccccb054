import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { quoteIdent } from '../src/db/connect.ts';
import { startSimulator, createFleetActivityDriver, type FleetMutation } from '../src/simulator/index.ts';
import { findPostgres } from './benchDatabase.ts';
import { ChangeRecorder, type Change } from './changeRecorder.ts';
import { analyseFleet, renderFleetMarkdown, singleAccountFields, targetsOf, type AnalyseInput, type FleetRunFigures } from './fleetAnalysis.ts';
import { accountName, accountToken, announceAll, benchDatabaseUrl, FLEET_SCHEMA, provision } from './fleetSetup.ts';
import { ProcessSampler } from './procStats.ts';
import { SMALL } from './workload.ts';

/**
 * `npm run bench:fleet`: a fleet in real time on this machine (issue 14). `--accounts` (1,000) accounts of the small
 * workload (40 open / 400 resolved, each its own 1,440/day and 60/min in the simulator) synced by `--workers` (3)
 * `fleet run` processes of `--concurrency` (20 slots: 3 × (7 + 20) = 81 of PostgreSQL's 100 connections) for
 * `--minutes` (10); `--registered` (10,000) accounts in all, the rest paused, so the engine carries a large registry.
 * At `--kill-at` minutes (5; 0 = never), or later at the first second it runs passes, replies are inserted in 50
 * accounts and, half a second later, one worker is killed with SIGKILL. The simulator runs in this process, its
 * activity at `--activity-scale` (20) × the small workload's rates so that every account sees changes within the run.
 * `--quick`: 60 accounts, 600 registered, 3 minutes, the kill at 1.5. `--out FILE` writes the results there;
 * `--single-from FILE` takes the single-account figure from a control run's results (see singleAccountFigure).
 * `--settle M` (half the run): the list-visible lag is also given over the changes made at least M minutes before the
 * end, which a sweep had time to see; a control run with the same M is compared on that. `--database NAME`
 * (tm_fleet_bench): the bench database, so that a control run can run beside the fleet.
 * `--rescore FILE --single-from CONTROL`: recomputes a run's targets against a control run made beside it.
 * `--provision-only`: migrate and register, then stop (the account schemas are kept for the next run). Writes
 * bench/fleet-results.json and prints the README's table.
 */

// node:util's parser, strict: an unknown flag (`--minute 60`) or a flag without its value is refused, not ignored.
const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'provision-only': { type: 'boolean', default: false },
    accounts: { type: 'string' },
    registered: { type: 'string' },
    workers: { type: 'string' },
    concurrency: { type: 'string' },
    minutes: { type: 'string' },
    'kill-at': { type: 'string' },
    'activity-scale': { type: 'string' },
    settle: { type: 'string' },
    out: { type: 'string' },
    database: { type: 'string' },
    rescore: { type: 'string' },
    'single-from': { type: 'string' },
  },
  strict: true,
  allowPositionals: false,
});
const quick = opts.quick;
type NumberFlag = 'accounts' | 'registered' | 'workers' | 'concurrency' | 'minutes' | 'kill-at' | 'activity-scale' | 'settle';
const num = (name: NumberFlag, fallback: number) => {
  const value = opts[name];
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`--${name} needs a number ≥ 0`);
  return n;
};
const ACCOUNTS = num('accounts', quick ? 60 : 1_000);
const REGISTERED = Math.max(ACCOUNTS, num('registered', quick ? 600 : 10_000));
const WORKERS = num('workers', 3);
const CONCURRENCY = num('concurrency', 20);
const MINUTES = num('minutes', quick ? 3 : 10);
const KILL_AT = num('kill-at', quick ? 1.5 : 5);
const SCALE = num('activity-scale', 20);
// Changes made this long before the end count in the settled list-visible lag (see listLagTarget): half the run.
const SETTLE_MS = num('settle', MINUTES / 2) * 60_000;
const STEP_MS = 15_000;
const REPLIES = Math.min(50, ACCOUNTS);

const HERE = fileURLToPath(new URL('.', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/ticket-mirror.js', import.meta.url));
const log = (line: string) => process.stderr.write(`[bench:fleet] ${line}\n`);

// `--rescore FILE --single-from CONTROL`: a run's targets again, against a control run made beside it.
const rescoring = opts.rescore;
if (rescoring !== undefined) {
  const file = rescoring;
  const { targets: _old, ...figures } = JSON.parse(readFileSync(file, 'utf8')) as FleetRunFigures;
  const scored = { ...figures, listLag: { ...figures.listLag, ...singleAccountFields(singleAccountFigure()) } };
  const rescored: FleetRunFigures = { ...scored, targets: targetsOf(scored) };
  writeFileSync(file, `${JSON.stringify(rescored, null, 2)}\n`);
  process.stdout.write(`${renderFleetMarkdown(rescored)}\n`);
  process.exit(0);
}

const baseUrl = await findPostgres();
if (!baseUrl) throw new Error('bench:fleet needs PostgreSQL (DATABASE_URL, TEST_DATABASE_URL or 127.0.0.1:5432)');
const url = await benchDatabaseUrl(baseUrl, opts.database);
const rates = Object.fromEntries(Object.entries(SMALL.ratesPerDay).map(([op, r]) => [op, r * SCALE])) as typeof SMALL.ratesPerDay;

const sim = await startSimulator({
  accounts: Array.from({ length: ACCOUNTS }, (_, i) => ({ token: accountToken(i + 1), openTickets: SMALL.openTickets, resolvedTickets: SMALL.resolvedTickets })),
  seed: SMALL.seed,
  dailyLimit: 1_440,
  minuteLimit: 60,
  logLimit: 100_000,
});
log(`simulator on ${sim.url} with ${ACCOUNTS} accounts`);
const setup = await provision(url, { active: ACCOUNTS, registered: REGISTERED, apiUrl: sim.url, log });
log(
  `provisioned: ${setup.migrated} schemas migrated in ${setup.migratedSeconds.toFixed(0)} s, the rest emptied in ${setup.emptiedSeconds.toFixed(1)} s; ` +
    `${REGISTERED} accounts registered in ${setup.registerSeconds.toFixed(1)} s; views over ${ACCOUNTS} schemas rebuilt in ${setup.viewsRefreshSeconds.toFixed(1)} s`,
);

if (opts['provision-only']) {
  await setup.fleet.close();
  await sim.close();
  process.exit(0);
}

// Every account's dataset is built now (the change recorder reads it), before the clock of the run starts.
const recorders = new Map<number, ChangeRecorder>();
for (const account of sim.accounts()) recorders.set(account.ordinal, new ChangeRecorder(account.model));
const driver = createFleetActivityDriver({ accounts: () => sim.accounts(), ratesPerDay: rates, seed: SMALL.activitySeed });
const changes = new Map<number, Change[]>();

mkdirSync(`${HERE}tmp`, { recursive: true });
interface Worker {
  child: ChildProcess;
  sampler: ProcessSampler;
  id: string;
  exited: Promise<number | null>;
  killed: boolean;
}
const startWorker = (n: number): Worker => {
  const out = createWriteStream(`${HERE}tmp/fleet-worker-${n}.log`);
  const child = spawn(process.execPath, [BIN, 'fleet', 'run', '--concurrency', String(CONCURRENCY)], {
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: url,
      FLEET_KEY: setup.fleetKey,
      FLEET_SCHEMA,
      HTTP_PORT: '0',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, sampler: new ProcessSampler(child.pid!, 5_000), id: `${hostname().slice(0, 20)}:${child.pid}`, exited, killed: false };
};

const db = new pg.Client({ connectionString: url });
await db.connect();
const statBefore = await dbStats(db);
const workers = Array.from({ length: WORKERS }, (_, n) => startWorker(n));
const runStart = Date.now();
await announceAll(setup.fleet, ACCOUNTS);
log(`${WORKERS} workers × ${CONCURRENCY} slots started; running ${MINUTES} min`);

let last = runStart;
let killAt: number | null = null;
let inFlightAtKill: string[] = [];
let repliesAt: number | null = null;
const replyText = (i: number) => `bench reply ${i} of run ${runStart}`;
const end = runStart + MINUTES * 60_000;
// The kill: at --kill-at, or later at the first second the victim is running passes (an idle fleet — every account
// waiting for its next hour's budget — would make the takeover vacuous), at the latest 2.5 min before the end.
const killing = (async () => {
  if (KILL_AT <= 0) return;
  const victim = workers[0]!;
  const from = runStart + KILL_AT * 60_000;
  const deadline = Math.max(from, end - 150_000);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, from - Date.now())));
  // The accounts whose lock the victim's lock session holds (an advisory lock on a bigint key: its low 32 bits in objid).
  const held = () =>
    db.query<{ name: string }>(
      `select acc.name from pg_stat_activity a
         join pg_locks l on l.pid = a.pid and l.locktype = 'advisory' and l.granted
         join ${quoteIdent(FLEET_SCHEMA)}.accounts acc on l.objid::bigint = (hashtext('ticket-mirror:sync:' || acc.schema_name)::bigint & 4294967295)
       where a.application_name = $1`,
      [`tm fleet locks ${victim.id}`.slice(0, 63)],
    );
  for (;;) {
    if ((await held()).rows.length > 0 || Date.now() >= deadline) {
      // Replies inserted a moment before the worker dies, some of them in its passes then: each must be posted once.
      for (let i = 1; i <= REPLIES; i++) {
        const ticket = sim.account(accountToken(i))!.model.list('open')[0];
        if (ticket) await db.query(`insert into ${quoteIdent(`tm_${accountName(i)}`)}.reply_outbox (ticket_id, message) values ($1, $2)`, [ticket.id, replyText(i)]);
      }
      repliesAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 500));
      inFlightAtKill = (await held()).rows.map((r) => r.name);
      victim.child.kill('SIGKILL');
      victim.killed = true;
      killAt = Date.now();
      log(`killed worker ${victim.id} (SIGKILL) at ${((killAt - runStart) / 60_000).toFixed(1)} min with ${inFlightAtKill.length} passes in flight`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
})();
while (Date.now() < end) {
  await new Promise((resolve) => setTimeout(resolve, Math.min(STEP_MS, end - Date.now())));
  const now = Date.now();
  for (const m of driver.step(last, now) as FleetMutation[]) {
    const recorded = recorders.get(m.account)!.record([m]);
    const list = changes.get(m.account) ?? [];
    list.push(...recorded);
    changes.set(m.account, list);
  }
  last = now;
}
await killing;

// A graceful stop of the survivors: each must be gone within 10 s.
const stopStarted = Date.now();
const exitMs = await Promise.all(
  workers.map(async (w) => {
    if (w.killed) return null;
    w.child.kill('SIGTERM');
    const code = await w.exited;
    return { ms: Date.now() - stopStarted, code };
  }),
);
const runEnd = stopStarted;
for (const w of workers) w.sampler.stop();
const statAfter = await dbStats(db);

const figures: FleetRunFigures = await analyseFleet({
  db,
  sim,
  changes,
  accounts: ACCOUNTS,
  registered: REGISTERED,
  runStart,
  runEnd,
  killAt,
  inFlightAtKill,
  replies: repliesAt === null ? [] : Array.from({ length: REPLIES }, (_, i) => ({ account: i + 1, text: replyText(i + 1) })),
  workers: workers.map((w, n) => ({ n, killed: w.killed, proc: w.sampler.summary(), exit: exitMs[n] ?? null })),
  dbStats: { before: statBefore, after: statAfter },
  setup: {
    migrated: setup.migrated,
    migratedSeconds: setup.migratedSeconds,
    registerSeconds: setup.registerSeconds,
    viewsRefreshSeconds: setup.viewsRefreshSeconds,
  },
  config: { accounts: ACCOUNTS, registered: REGISTERED, workers: WORKERS, concurrency: CONCURRENCY, minutes: MINUTES, killAt: KILL_AT, activityScale: SCALE, quick },
  singleAccount: singleAccountFigure(),
  settleMs: SETTLE_MS,
  lagsFile: `${HERE}tmp/fleet-lags-${basename(outFile())}`,
});
await db.end();
await setup.fleet.close();
await sim.close();

const file = outFile();
writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`);
process.stdout.write(`${renderFleetMarkdown(figures)}\n`);
log(`wrote ${file}`);
process.exit(0);

function outFile(): string {
  return opts.out ?? (quick ? `${HERE}tmp/fleet-results.quick.json` : `${HERE}fleet-results.json`);
}

/** Transactions and rows the whole bench database saw (pg_stat_database): the engine's overhead with the sync's. */
async function dbStats(client: pg.Client): Promise<{ at: number; xacts: number; tuplesReturned: number; tuplesFetched: number }> {
  const { rows } = await client.query<{ x: string; r: string; f: string }>(
    `select xact_commit + xact_rollback as x, tup_returned as r, tup_fetched as f from pg_stat_database where datname = current_database()`,
  );
  return { at: Date.now(), xacts: Number(rows[0]!.x), tuplesReturned: Number(rows[0]!.r), tuplesFetched: Number(rows[0]!.f) };
}

/**
 * The single-account figure for the 1.5× target: `--single-from FILE`, the results of a control run of this bench in
 * which every account has a slot of its own (`--workers 1 --concurrency N --accounts N`: no account waits for another,
 * as with one `run` each), same workload and minutes; else the single-account bench's small workload (bench/results.json).
 */
function singleAccountFigure(): AnalyseInput['singleAccount'] {
  const from = opts['single-from'];
  if (from !== undefined) {
    const control = JSON.parse(readFileSync(from, 'utf8')) as FleetRunFigures;
    return {
      listP95Ms: control.listLag.p95Ms,
      ...(control.listLag.settled ? { settledP95Ms: control.listLag.settled.p95Ms, settleMs: control.listLag.settled.settleMs } : {}),
      source: `control run: ${control.config.accounts} accounts, each with a slot of its own, ${control.config.minutes} min (${from})`,
    };
  }
  try {
    const results = JSON.parse(readFileSync(`${HERE}results.json`, 'utf8')) as {
      workloads: Array<{ name: string; strategies: Array<{ strategy: string; lags: { whole: { list: { p95: number | null } } } }> }>;
    };
    const small = results.workloads.find((w) => w.name === 'small');
    const mirror = small?.strategies.find((s) => s.strategy === 'ticket-mirror');
    return { listP95Ms: mirror?.lags.whole.list.p95 ?? null, source: 'bench/results.json, small, ticket-mirror, whole run' };
  } catch {
    return { listP95Ms: null, source: 'bench/results.json unreadable' };
  }
}
