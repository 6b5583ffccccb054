import { once } from 'node:events';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { createEngine } from '../../src/daemon/compose.ts';
import { postgresLeadership } from '../../src/daemon/leader.ts';
import { Replica } from '../../src/daemon/replica.ts';
import { createLogger } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { freshPostgres, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { waitUntil } from '../helpers/runProcess.ts';

/**
 * Leadership in one process, two replicas on one schema: what an operator cannot provoke on demand — the leader's
 * lock connection killed by PostgreSQL in the middle of a request — made to happen with pg_terminate_backend.
 */
describe.skipIf(!postgresUrl)('leadership on PostgreSQL', () => {
  const logger = createLogger('silent');
  let sim: RunningSimulator;
  let database: TestDatabase;
  let admin: pg.Client;
  const replicas: Replica[] = [];

  beforeEach(async () => {
    sim = await startSimulator({ seed: 41, openTickets: 4, resolvedTickets: 4 });
    database = await freshPostgres('tm_leader');
    admin = new pg.Client({ connectionString: postgresUrl! });
    await admin.connect();
  });
  afterEach(async () => {
    await Promise.all(replicas.splice(0).map((r) => r.stop()));
    sim.faults.clear();
    await sim.close();
    await admin.end();
    await database.destroy();
  });

  const replica = () => {
    const config = loadConfig(
      { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, DATABASE_URL: postgresUrl!, DB_SCHEMA: database.schema },
      { dotenv: false },
    );
    const r = new Replica({
      // Short intervals keep the test quick; the defaults are 5 s each.
      leadership: postgresLeadership({ databaseUrl: postgresUrl!, schema: database.schema, logger, pollMs: 100, heartbeatMs: 200 }),
      engine: (signal, tokenWorked) => createEngine(config, database, logger, systemClock, signal, tokenWorked),
      clock: systemClock,
      logger,
      graceMs: 100,
    });
    replicas.push(r);
    return r;
  };

  /** The backend pids of this schema's leader sessions, and which of them holds the lock. */
  const sessions = async () => {
    const { rows } = await admin.query<{ pid: number; holds: boolean; state: string; query: string }>(
      `select a.pid, a.state, a.query,
         exists (select 1 from pg_locks l where l.pid = a.pid and l.locktype = 'advisory' and l.granted) as holds
       from pg_stat_activity a where a.application_name = $1`,
      [`ticket-mirror leader ${database.schema}`],
    );
    return rows;
  };

  it('exactly one of two replicas leads; the standby takes over when the leader stops', async () => {
    const a = replica();
    const b = replica();
    a.start();
    await once(a.events, 'leader:acquired');
    b.start();
    // The standby has tried the lock (its session sits idle after the attempt) and stays a standby.
    await waitUntil('the standby has tried the lock', async () => {
      const s = await sessions();
      return s.length === 2 && s.some((x) => !x.holds && x.state === 'idle' && x.query.includes('pg_try_advisory_lock'));
    }, 10_000);
    expect(b.role).toBe('standby');
    expect(b.health).toMatchObject({ role: 'standby', state: 'standby' });
    expect((await sessions()).filter((x) => x.holds)).toHaveLength(1);

    const takeover = once(b.events, 'leader:acquired');
    await a.stop();
    await takeover;
    expect(a.role).toBe('stopped');
    expect(b.role).toBe('leader');
  });

  it('a replica that regains leadership takes a first login page as a hiccup, not a rejected token', async () => {
    const a = replica();
    const firstPass = once(a.events, 'pass:finished');
    a.start();
    await once(a.events, 'leader:acquired');
    const [first] = await firstPass;
    expect(first.stoppedBy).toBeNull();

    // The term ends (its lock connection killed); the next term's first answer is a proxy's login page.
    const lost = once(a.events, 'leader:lost');
    const again = once(a.events, 'leader:acquired');
    await admin.query('select pg_terminate_backend($1)', [(await sessions()).find((x) => x.holds)!.pid]);
    await lost;
    sim.faults.inject({ kind: 'html' });
    const [{ engine }] = await again;
    const [second] = await once(a.events, 'pass:finished');
    expect(second.stoppedBy).toBeNull();
    expect(engine.tokenWorked).toBe(true);
    expect(a.health.state).not.toBe('auth_failed');
  });

  it("losing the lock's connection cuts the leader's running pass short at once; the standby takes over", async () => {
    // Every answer takes 20 s: the leader is in the middle of a request when its lock connection dies.
    sim.faults.inject({ kind: 'slow', delayMs: 20_000, times: 1_000 });
    const a = replica();
    const b = replica();
    a.start();
    await once(a.events, 'leader:acquired');
    await waitUntil('a request is in flight', () => sim.log.some((request) => request.status === 0), 10_000);
    b.start();

    const interrupted = once(a.events, 'pass:finished');
    const lost = once(a.events, 'leader:lost');
    const takeover = once(b.events, 'leader:acquired');
    const holder = (await sessions()).find((x) => x.holds)!;
    await admin.query('select pg_terminate_backend($1)', [holder.pid]);

    const [summary] = await interrupted;
    expect(summary.stoppedBy).not.toBeNull();
    // The pass ended while its request was still unanswered: cut short, not finished.
    expect(sim.log.some((request) => request.status === 0)).toBe(true);
    const [{ reason }] = await lost;
    expect(reason).toMatch(/leadership lost/);
    await takeover;
    expect(a.role).toBe('standby');
    expect((await sessions()).filter((x) => x.holds)).toHaveLength(1);
  });
});
