import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { openDatabase, queryRows, sql } from '../src/db/connect.ts';
import { openFleetDatabase, type FleetDatabase } from '../src/db/fleet.ts';
import { migratedSchemas } from '../src/db/repos/fleetStatus.ts';
import { loadFleetStatus } from '../src/fleet/fleetStatus.ts';
import { formatFleetStatus } from '../src/fleet/formatFleetStatus.ts';
import { queueReader } from '../src/fleet/queueStatus.ts';
import { DAY_MS } from '../src/time.ts';

/**
 * `npm run bench:fleet-status` — how long `fleet status` takes to read a fleet of N accounts, and how many statements.
 *
 *   --database URL   a PostgreSQL database of its own (it gets N schemas tm_b0001…, a control schema tm_bench_fleet and
 *                    pg-boss's tm_bench_fleet_jobs). @default $BENCH_DATABASE_URL
 *   --accounts N     @default 1000
 *   --tickets N      tickets per account, two thirds with a detail. @default 440 (the small workload's)
 *   --requests N     ledger rows per account in the last 24 h. @default 1250 (the small workload sends 1,246 a day)
 *   --runs N         timed reads. @default 5
 *
 * Setting up is idempotent and slow the first time (a migration per schema, ~1–2 s each, two at a time): the schemas,
 * rows and accounts already there are kept (topped up to the counts asked), so a second run only measures. The
 * accounts get every state (ok, failing, auth_failed, new, paused); no worker runs. Reported, over --runs reads each:
 * cold (a new connection per read, as `fleet status` makes one) and warm (the same connection again, as fleet run's
 * routes keep one): wall time (median, slowest), and the CPU time of the database's sessions (/proc: PostgreSQL must
 * run on this machine) and of this process (medians), which other work on the machine changes far less than the wall
 * time; the statements of one read (counted at the pool); the load average.
 */

const { values: opts } = parseArgs({
  options: {
    database: { type: 'string', default: process.env.BENCH_DATABASE_URL },
    accounts: { type: 'string', default: '1000' },
    tickets: { type: 'string', default: '440' },
    requests: { type: 'string', default: '1250' },
    runs: { type: 'string', default: '5' },
  },
});
if (!opts.database) throw new Error('--database postgres://… (or BENCH_DATABASE_URL): a database of its own');
const databaseUrl = opts.database;
const n = Number(opts.accounts);
const names = Array.from({ length: n }, (_, i) => `b${String(i + 1).padStart(4, '0')}`);
const FLEET = 'tm_bench_fleet';

const fleet = await openFleetDatabase({ databaseUrl, schema: FLEET, poolSize: 2 });
await fleet.migrate();
const now = Date.now();

// 1. The mirrors: migrated, then filled where empty.
const migrated = await migratedSchemas(fleet.db, names.map((a) => `tm_${a}`));
const missing = names.filter((a) => !migrated.has(`tm_${a}`));
let next = 0;
await Promise.all(
  [0, 1].map(async () => {
    while (next < missing.length) {
      const schema = `tm_${missing[next++]!}`;
      const database = await openDatabase({ databaseUrl, schema, poolSize: 1 });
      await database.migrate();
      await database.close();
    }
  }),
);
if (missing.length > 0) console.log(`migrated ${missing.length} schemas`);
let filled = 0;
for (const [i, account] of names.entries()) {
  const s = sql.raw(`"tm_${account}"`);
  const since = new Date(now - DAY_MS).toISOString();
  const [row] = await queryRows<{ tickets: number; requests: number; runs: number }>(
    fleet.db,
    sql`select (select count(*)::int from ${s}.tickets) as tickets,
      (select count(*)::int from ${s}.api_requests where at > ${since}::timestamptz) as requests,
      (select count(*)::int from ${s}.sync_runs) as runs`,
  );
  const tickets = Number(opts.tickets) - row!.tickets;
  const requests = Number(opts.requests) - row!.requests;
  if (tickets <= 0 && requests <= 0 && row!.runs > 0) continue;
  await fleet.db.transaction(async (tx) => {
    // Tickets: two thirds with a detail, one in fifty deleted.
    if (tickets > 0) {
      await tx.execute(sql`insert into ${s}.tickets (id, in_open, in_resolved, first_seen_at, last_seen_at, detail_synced_at, deleted_at)
        select 't' || g, g % 3 = 0, g % 3 <> 0, now(), now(), case when g % 3 <> 2 then now() end, case when g % 50 = 0 then now() end
        from generate_series(${row!.tickets + 1}::int, ${Number(opts.tickets)}::int) g`);
    }
    // The ledger: requests spread over the last 24 h, each with the server's remaining count (no other client).
    if (requests > 0) {
      await tx.execute(sql`insert into ${s}.api_requests (at, method, path, status, duration_ms, kind, ratelimit_remaining)
        select ${since}::timestamptz + interval '1 minute' + (random() * interval '23 hours 58 minutes'), 'GET', '/api/v1/ticket/x',
          case when g % 97 = 0 then 503 else 200 end, 40, 'detail', 59
        from generate_series(1, ${requests}::int) g`);
    }
    if (row!.runs === 0) {
      await tx.execute(sql`insert into ${s}.sync_runs (started_at, finished_at, requests, error)
        select now() - g * interval '15 minutes', now() - g * interval '15 minutes' + interval '10 seconds', 10,
          case when (g + ${i}) % 5 = 0 then 'ticket 7: HTTP 503' end
        from generate_series(1, 96) g`);
    }
  });
  filled++;
}
if (filled > 0) console.log(`filled ${filled} mirrors`);

// 2. The accounts, in every state.
const [{ count }] = (await queryRows<{ count: number }>(fleet.db, sql`select count(*)::int as count from accounts`)) as [{ count: number }];
if (count < n) {
  const states = ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'failing', 'auth_failed', 'new', 'ok'];
  const rows = names.map((a, i) => {
    const state = states[i % states.length]!;
    const pass = state === 'new' ? null : new Date(now - (i % 60) * 60_000).toISOString();
    return sql`(${a}, ${`tm_${a}`}, 'http://127.0.0.1:1', ${Buffer.alloc(64, 1)}, ${state}, ${state === 'ok' || state === 'new' ? 0 : 3},
      ${pass}::timestamptz, ${pass === null ? null : 12}, ${state === 'failing' ? 'server error: HTTP 503' : state === 'auth_failed' ? 'HTTP 401: token rejected' : null},
      ${pass === null ? null : new Date(now + 60_000).toISOString()}::timestamptz, ${pass === null ? null : 'bench-worker'},
      ${i % 97 === 0 ? new Date(now).toISOString() : null}::timestamptz)`;
  });
  await fleet.db.execute(sql`insert into accounts (name, schema_name, api_url, token_sealed, state, failures, last_pass_at, last_pass_requests,
      last_error, next_pass_at, worker, paused_at) values ${sql.join(rows, sql`, `)} on conflict do nothing`);
  console.log(`added ${n - count} accounts`);
}

// 3. The reads, timed: cold (a new connection, as `fleet status` makes) and warm (the same one, as fleet run's routes).
await fleet.close();
const jobsSchema = `${FLEET}_jobs`;
let statements = 0;
const counted = (db: FleetDatabase) => {
  const pool = (db.db as unknown as { $client: pg.Pool }).$client;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    statements++;
    return query(...args);
  };
  return db;
};
/** CPU time (ms) the database's sessions of this bench have used so far: they run on this machine (/proc). */
const backendCpuMs = async (db: FleetDatabase) => {
  const pids = await queryRows<{ pid: number }>(db.db, sql`select pid from pg_stat_activity where datname = current_database() and application_name = 'ticket-mirror fleet'`);
  let ticks = 0;
  for (const { pid } of pids) {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * 10;
};
const read = async (db: FleetDatabase) => {
  const cpu0 = process.cpuUsage();
  statements = 0;
  const started = performance.now();
  const status = await loadFleetStatus({ db: db.db, schema: FLEET, jobsSchema, queues: queueReader(db.db, jobsSchema), now: Date.now() });
  const ms = performance.now() - started;
  const counted = statements;
  const node = process.cpuUsage(cpu0);
  return { ms, status, statements: counted, nodeCpuMs: (node.user + node.system) / 1000 };
};
const runs = Number(opts.runs);
const cold: Array<{ ms: number; nodeCpuMs: number; dbCpuMs: number }> = [];
let text = '';
let perRead = 0;
for (let run = 0; run < runs; run++) {
  const db = counted(await openFleetDatabase({ databaseUrl, schema: FLEET, poolSize: 2 }));
  const r = await read(db);
  // New sessions: all the CPU they used is this read's (and their start).
  cold.push({ ms: r.ms, nodeCpuMs: r.nodeCpuMs, dbCpuMs: await backendCpuMs(db) });
  await db.close();
  perRead = r.statements;
  if (run === 0) text = formatFleetStatus(r.status);
}
const warm: Array<{ ms: number; nodeCpuMs: number; dbCpuMs: number }> = [];
const db = counted(await openFleetDatabase({ databaseUrl, schema: FLEET, poolSize: 2 }));
await read(db);
for (let run = 0; run < runs; run++) {
  const before = await backendCpuMs(db);
  const r = await read(db);
  warm.push({ ms: r.ms, nodeCpuMs: r.nodeCpuMs, dbCpuMs: (await backendCpuMs(db)) - before });
}
await db.close();
const median = (xs: number[]) => Math.round([...xs].sort((a, b) => a - b)[xs.length >> 1]!);
console.log(text.split('\n').slice(0, 12).join('\n'));
const summary = (xs: Array<{ ms: number; nodeCpuMs: number; dbCpuMs: number }>) => ({
  wallMedianMs: median(xs.map((x) => x.ms)),
  wallMaxMs: Math.round(Math.max(...xs.map((x) => x.ms))),
  dbCpuMedianMs: median(xs.map((x) => x.dbCpuMs)),
  nodeCpuMedianMs: median(xs.map((x) => x.nodeCpuMs)),
});
console.log(
  JSON.stringify({
    accounts: n,
    ledgerRowsPerAccount: Number(opts.requests),
    ticketsPerAccount: Number(opts.tickets),
    statements: perRead,
    cold: summary(cold),
    warm: summary(warm),
    loadAverage1m: Number(loadavg()[0]!.toFixed(1)),
    cores: cpus().length,
  }),
);
