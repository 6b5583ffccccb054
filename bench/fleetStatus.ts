import { parseArgs } from 'node:util';
import type pg from 'pg';
import { openDatabase, queryRows, sql } from '../src/db/connect.ts';
import { openFleetDatabase } from '../src/db/fleet.ts';
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
 *   --tickets N      tickets per account, two thirds with a detail. @default 300
 *   --requests N     ledger rows per account in the last 24 h (the small workload spends ~1,000). @default 1000
 *   --runs N         timed reads. @default 5
 *
 * Setting up is idempotent and slow the first time (a migration per schema, ~1–2 s each, two at a time): the schemas,
 * rows and accounts already there are kept, so a second run only measures. The accounts get every state (ok, failing,
 * auth_failed, new, paused); no worker runs. Reported: the median and the slowest read, and the statements of one read
 * (counted at the pool).
 */

const { values: opts } = parseArgs({
  options: {
    database: { type: 'string', default: process.env.BENCH_DATABASE_URL },
    accounts: { type: 'string', default: '1000' },
    tickets: { type: 'string', default: '300' },
    requests: { type: 'string', default: '1000' },
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
  const [row] = await queryRows<{ n: number }>(fleet.db, sql`select count(*)::int as n from ${s}.tickets`);
  if (row!.n > 0) continue;
  const since = new Date(now - DAY_MS).toISOString();
  await fleet.db.transaction(async (tx) => {
    await tx.execute(sql`insert into ${s}.tickets (id, in_open, in_resolved, first_seen_at, last_seen_at, detail_synced_at, deleted_at)
      select 't' || g, g % 3 = 0, g % 3 <> 0, now(), now(), case when g % 3 <> 2 then now() end, case when g % 50 = 0 then now() end
      from generate_series(1, ${Number(opts.tickets)}) g`);
    await tx.execute(sql`insert into ${s}.api_requests (at, method, path, status, duration_ms, kind, ratelimit_remaining)
      select ${since}::timestamptz + (g * interval '86 seconds'), 'GET', '/api/v1/tickets/x', case when g % 97 = 0 then 503 else 200 end,
        40, 'detail', 60 - (g % 7)
      from generate_series(1, ${Number(opts.requests)}) g`);
    await tx.execute(sql`insert into ${s}.sync_runs (started_at, finished_at, requests, error)
      select now() - g * interval '15 minutes', now() - g * interval '15 minutes' + interval '10 seconds', 10,
        case when (g + ${i}) % 5 = 0 then 'ticket 7: HTTP 503' end
      from generate_series(1, 96) g`);
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

// 3. The reads, timed, statements counted at the pool.
const pool = (fleet.db as unknown as { $client: pg.Pool }).$client;
let statements = 0;
const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
(pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
  statements++;
  return query(...args);
};
const jobsSchema = `${FLEET}_jobs`;
const queues = queueReader(fleet.db, jobsSchema);
const times: number[] = [];
let counted = 0;
let text = '';
for (let run = 0; run < Number(opts.runs); run++) {
  statements = 0;
  const started = performance.now();
  const status = await loadFleetStatus({ db: fleet.db, schema: FLEET, jobsSchema, queues, now: Date.now() });
  times.push(performance.now() - started);
  counted = statements;
  if (run === 0) text = formatFleetStatus(status);
}
await fleet.close();
times.sort((a, b) => a - b);
console.log(text.split('\n').slice(0, 12).join('\n'));
console.log(
  JSON.stringify({ accounts: n, runs: times.length, medianMs: Math.round(times[times.length >> 1]!), maxMs: Math.round(times.at(-1)!), statements: counted }),
);
