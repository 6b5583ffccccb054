import { randomBytes } from 'node:crypto';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { ManualClock } from '../../src/clock.ts';
import { openDatabase, type Database } from '../../src/db/connect.ts';
import { openFleetDatabase, type FleetDatabase } from '../../src/db/fleet.ts';
import { insertAccount, recordPassOutcome, setPaused } from '../../src/db/repos/accounts.ts';
import { jobsSchemaOf, QUEUE } from '../../src/fleet/jobQueue.ts';
import { parseFleetKey, sealToken } from '../../src/fleet/tokenSeal.ts';
import { createLogger } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { MINUTE_MS } from '../../src/time.ts';

/**
 * A fleet of five accounts, one per state, set up without a worker: each migrated account's mirror is filled by real
 * passes of the engine against a simulator of its own (in virtual time, half an hour ago), then its row gets the
 * outcome a worker would have recorded (repos/accounts.ts). pg-boss is installed in `<schema>_jobs` with the
 * worker's queue: acme's next job queued for later, broken's job active and its successor due.
 *
 * | account | state       | mirror                                                             |
 * |---------|-------------|--------------------------------------------------------------------|
 * | acme    | ok          | 3 clean passes                                                     |
 * | broken  | failing ×3  | 2 clean passes, then one whose list polls got HTTP 500             |
 * | locked  | auth_failed | migrated, no pass; its last error is hostile HTML                  |
 * | fresh   | new         | not migrated                                                       |
 * | resting | paused      | not migrated                                                       |
 *
 * Added in that order, so acme and broken are the two oldest.
 */

export const LIMITS = { daily: 1440, minute: 60, reserve: 0.1 };
export const HOSTILE_ERROR = 'HTTP 401 <script>alert("owned")</script> <img src=x onerror=alert(1)> &amp;';
/** A failing account's error as a careless worker might have stored it: a bearer token and a terminal escape. */
export const LEAKY_ERROR = 'server error: HTTP 500 for GET /api/v1/tickets (Authorization: Bearer sekrit-token-123) \u001b[31mred';

export interface FleetFixture {
  fleet: FleetDatabase;
  databaseUrl: string;
  /** The control schema; pg-boss's is jobsSchemaOf(it). */
  schema: string;
  mirrors: Record<'acme' | 'broken' | 'locked', Database>;
  sims: Record<'acme' | 'broken', RunningSimulator>;
  /** Every request the simulators have received so far. */
  requests(): number;
  destroy(): Promise<void>;
}

export async function fleetFixture(databaseUrl: string): Promise<FleetFixture> {
  const schema = `tf_${randomBytes(4).toString('hex')}`;
  const fleet = await openFleetDatabase({ databaseUrl, schema, poolSize: 2 });
  await fleet.migrate();
  const key = parseFleetKey(randomBytes(32).toString('base64'));
  const clock = new ManualClock(Date.now() - 30 * MINUTE_MS);
  const logger = createLogger('silent');
  const mirrors = {} as FleetFixture['mirrors'];
  const sims = {} as FleetFixture['sims'];

  const add = async (name: string, o: { migrate: boolean; apiUrl?: string }) => {
    const schemaName = `${schema}_${name}`;
    await insertAccount(fleet.db, {
      name,
      schemaName,
      apiUrl: o.apiUrl ?? 'http://127.0.0.1:9',
      tokenSealed: sealToken(key, name, `token-of-${name}`),
      dailyLimit: LIMITS.daily,
      minuteLimit: LIMITS.minute,
      reserve: LIMITS.reserve,
    });
    if (!o.migrate) return null;
    const database = await openDatabase({ databaseUrl, schema: schemaName, poolSize: 2 });
    await database.migrate();
    return database;
  };
  const passes = async (database: Database, sim: RunningSimulator, n: number) => {
    const engine = new SyncEngine({
      db: database.db,
      apiUrl: sim.url,
      apiToken: sim.token,
      clock,
      limits: LIMITS,
      logger,
      realTime: false,
      sleep: async (ms) => void clock.advance(ms),
    });
    for (let i = 0; i < n; i++) {
      await engine.pass();
      clock.advance(15_000);
    }
  };
  const outcome = (state: 'ok' | 'failing' | 'auth_failed', failures: number, lastError: string | null) => ({
    state,
    failures,
    notBefore: null,
    lastPassAt: new Date(clock.now()).toISOString(),
    lastPassRequests: 7,
    lastError,
    nextPassAt: new Date(Date.now() + 10 * MINUTE_MS).toISOString(),
    worker: 'host-a:4242',
  });

  for (const name of ['acme', 'broken'] as const) {
    sims[name] = await startSimulator({ seed: name === 'acme' ? 31 : 32, openTickets: 6, resolvedTickets: 30, clock, token: `token-of-${name}` });
    mirrors[name] = (await add(name, { migrate: true, apiUrl: sims[name].url }))!;
  }
  mirrors.locked = (await add('locked', { migrate: true }))!;
  await add('fresh', { migrate: false });
  await add('resting', { migrate: false });

  await passes(mirrors.acme, sims.acme, 3);
  await recordPassOutcome(fleet.db, 'acme', outcome('ok', 0, null));
  await passes(mirrors.broken, sims.broken, 2);
  sims.broken.faults.inject({ kind: 'status500', match: '/api/v1/tickets', times: 100 });
  await passes(mirrors.broken, sims.broken, 1);
  await recordPassOutcome(fleet.db, 'broken', outcome('failing', 3, LEAKY_ERROR));
  await recordPassOutcome(fleet.db, 'locked', outcome('auth_failed', 1, HOSTILE_ERROR));
  await setPaused(fleet.db, 'resting', new Date().toISOString());

  // pg-boss as the workers leave it: acme's next pass queued for later; broken's running, its successor due.
  const boss = new PgBoss({ connectionString: databaseUrl, schema: jobsSchemaOf(schema), supervise: false, schedule: false, max: 1 });
  await boss.start();
  await boss.createQueue(QUEUE, { name: QUEUE, policy: 'stately' });
  await boss.send(QUEUE, { account: 'acme' }, { singletonKey: 'acme', startAfter: 3_600 });
  await boss.send(QUEUE, { account: 'broken' }, { singletonKey: 'broken' });
  const fetched = await boss.fetch(QUEUE, { batchSize: 5 });
  if (fetched.length !== 1) throw new Error(`expected broken's job only, fetched ${fetched.length}`);
  await boss.send(QUEUE, { account: 'broken' }, { singletonKey: 'broken' });
  await boss.stop({ graceful: false, close: true });

  return {
    fleet,
    databaseUrl,
    schema,
    mirrors,
    sims,
    requests: () => sims.acme.log.length + sims.broken.log.length,
    async destroy() {
      await fleet.close();
      for (const m of Object.values(mirrors)) await m.close();
      for (const s of Object.values(sims)) await s.close();
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        const { rows } = await client.query<{ nspname: string }>('select nspname from pg_namespace where nspname like $1', [`${schema}%`]);
        for (const { nspname } of rows) await client.query(`drop schema "${nspname}" cascade`);
      } finally {
        await client.end();
      }
    },
  };
}
