import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import type { Lease } from '../../src/daemon/leader.ts';
import { openFleetDatabase, type FleetDatabase } from '../../src/db/fleet.ts';
import { getAccount, insertAccount } from '../../src/db/repos/accounts.ts';
import { runAccountJob, type JobContext } from '../../src/fleet/accountJob.ts';
import { RuntimeCache } from '../../src/fleet/accountRuntime.ts';
import { JobQueue, jobsSchemaOf, LIVE_PRIORITY } from '../../src/fleet/jobQueue.ts';
import { LockSession } from '../../src/fleet/lockSession.ts';
import { fleetTiming } from '../../src/fleet/timing.ts';
import { parseFleetKey, sealToken } from '../../src/fleet/tokenSeal.ts';
import type { FleetWorkerEventMap } from '../../src/fleet/workerEvents.ts';
import { createLogger } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { postgresUrl } from '../helpers/db.ts';
import { lostOf } from '../helpers/fleet.ts';

/**
 * One job of a fleet worker, run in this process against the real PostgreSQL and a simulator over HTTP: the lock's
 * session dies while the account's runtime is being opened (its schema migrated, its token decrypted), before the
 * pass's first request. PostgreSQL has let the lock go at that instant, so another worker may be running the account
 * already: this job must send nothing, and hand the account back, due at once (the test's successor gap is 0) and
 * ahead of background work, with its state untouched.
 */
describe.skipIf(!postgresUrl)('a fleet job whose lock is lost before its pass starts', { timeout: 120_000 }, () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of cleanups.splice(0).reverse()) await close().catch(() => {});
  });

  it('sends no request, keeps the account\'s state and queues its successor', async () => {
    const schema = `tm_fj_${randomBytes(3).toString('hex')}`;
    const admin = new pg.Client({ connectionString: postgresUrl! });
    await admin.connect();
    cleanups.push(async () => {
      await admin.query(`drop schema if exists "${jobsSchemaOf(schema)}" cascade`);
      for (const s of [schema, `${schema}_acme`]) await admin.query(`drop schema if exists "${s}" cascade`);
      await admin.end();
    });
    const fleet: FleetDatabase = await openFleetDatabase({ databaseUrl: postgresUrl!, schema, poolSize: 2 });
    cleanups.push(() => fleet.close());
    await fleet.migrate();
    const sim: RunningSimulator = await startSimulator({ seed: 7, openTickets: 5, resolvedTickets: 10, token: 'token-of-acme' });
    cleanups.push(() => sim.close());
    const key = parseFleetKey(randomBytes(32).toString('base64'));
    await insertAccount(fleet.db, {
      name: 'acme',
      schemaName: `${schema}_acme`,
      apiUrl: sim.url,
      tokenSealed: sealToken(key, 'acme', 'token-of-acme'),
      dailyLimit: 1440,
      minuteLimit: 60,
      reserve: 0.1,
    });
    const before = (await getAccount(fleet.db, 'acme'))!;

    const logger = createLogger('silent');
    // No gap before a successor: one handed back is due at once.
    const timing = fleetTiming({ successorGapMs: 0 });
    const queue = new JobQueue({ databaseUrl: postgresUrl!, fleetSchema: schema, timing, logger });
    cleanups.push(() => queue.stop());
    await queue.start();
    const locks = new LockSession({ databaseUrl: postgresUrl!, applicationName: 'tm fleet job test', logger });
    cleanups.push(() => locks.close());
    const stopping = new AbortController();
    const hardStop = new AbortController();
    const cache = new RuntimeCache({ fleet, key, clock: systemClock, logger, capacity: 1, workerId: 'test:1', hardStop: hardStop.signal });
    cleanups.push(() => cache.closeAll());

    // The lease the job takes, seen here; its session is killed once the runtime is open, and its loss awaited.
    let lease: Lease | undefined;
    const tryLock = locks.tryLock.bind(locks);
    locks.tryLock = async (s) => (lease = (await tryLock(s)) ?? undefined) ?? null;
    const acquire = cache.acquire.bind(cache);
    cache.acquire = async (account) => {
      const runtime = await acquire(account);
      await admin.query('select pg_terminate_backend($1)', [lease!.session!.pid]);
      await lostOf(lease!);
      return runtime;
    };
    const events = new EventEmitter<FleetWorkerEventMap>();
    const ctx: JobContext = {
      fleet,
      queue,
      locks,
      cache,
      clock: systemClock,
      logger,
      timing,
      workerId: 'test:1',
      events,
      stopping: stopping.signal,
      hardStop: hardStop.signal,
      woken: new Map(),
      liveWaiting: () => false,
    };

    expect(await queue.ensureChain('acme', { bringForward: false })).toBe('sent');
    const [job] = await queue.fetch(1);
    expect(job?.account).toBe('acme');
    await runAccountJob(ctx, job!);

    expect(lease?.lost.aborted).toBe(true);
    expect(sim.log).toEqual([]);
    const after = (await getAccount(fleet.db, 'acme'))!;
    expect({ state: after.state, failures: after.failures, lastError: after.lastError, notBefore: after.notBefore }).toEqual({
      state: before.state,
      failures: before.failures,
      lastError: before.lastError,
      notBefore: before.notBefore,
    });
    // Handed back: its successor is due now, for whichever worker fetches it first, ahead of background work.
    const [next] = await queue.fetch(1);
    expect(next).toMatchObject({ account: 'acme', priority: LIVE_PRIORITY });
  });
});
