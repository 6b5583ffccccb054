import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { JobQueue, jobsSchemaOf, LIVE_PRIORITY } from '../../src/fleet/jobQueue.ts';
import { fleetTiming } from '../../src/fleet/timing.ts';
import { createLogger } from '../../src/logger.ts';
import { postgresUrl } from '../helpers/db.ts';

/**
 * Workers that start together: each installs pg-boss and creates the fleet's queue. pg-boss 10's create_queue, run by
 * several at once on a fresh schema, deadlocks (ERROR 40P01: bench:fleet lost a worker of three at start so); the
 * queue makes them take turns.
 */
describe.skipIf(!postgresUrl)('the fleet queue: started by several workers at once, priorities', { timeout: 120_000 }, () => {
  const schemas: string[] = [];
  /** Queues and clients a test opened, closed after it whatever its outcome. */
  const opened: Array<() => Promise<unknown>> = [];
  /** A started queue on a fresh fleet schema; `jobs`: pg-boss's job table there. */
  const startedQueue = async (timing: Parameters<typeof fleetTiming>[0] = {}) => {
    const fleetSchema = `tm_fq_${randomBytes(3).toString('hex')}`;
    schemas.push(fleetSchema);
    const queue = new JobQueue({ databaseUrl: postgresUrl!, fleetSchema, timing: fleetTiming(timing), logger: createLogger('silent') });
    opened.push(() => queue.stop());
    await queue.start();
    return { queue, jobs: `"${jobsSchemaOf(fleetSchema)}".job` };
  };
  const adminClient = async () => {
    const admin = new pg.Client({ connectionString: postgresUrl! });
    opened.push(() => admin.end());
    await admin.connect();
    return admin;
  };
  afterEach(async () => {
    for (const close of opened.splice(0).reverse()) await close().catch(() => {});
    const admin = new pg.Client({ connectionString: postgresUrl! });
    await admin.connect();
    for (const schema of schemas.splice(0)) {
      await admin.query(`drop schema if exists "${jobsSchemaOf(schema)}" cascade`);
      await admin.query(`drop schema if exists "${schema}" cascade`);
    }
    await admin.end();
  });

  it('five workers starting at the same instant on a fresh schema all start, with one queue', async () => {
    for (let round = 0; round < 3; round++) {
      const fleetSchema = `tm_fq_${randomBytes(3).toString('hex')}`;
      schemas.push(fleetSchema);
      const queues = Array.from(
        { length: 5 },
        () => new JobQueue({ databaseUrl: postgresUrl!, fleetSchema, timing: fleetTiming({}), logger: createLogger('silent') }),
      );
      try {
        const results = await Promise.allSettled(queues.map((q) => q.start()));
        expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
      } finally {
        await Promise.all(queues.map((q) => q.stop()));
      }
      const admin = new pg.Client({ connectionString: postgresUrl! });
      await admin.connect();
      const { rows } = await admin.query(`select name, policy from "${jobsSchemaOf(fleetSchema)}".queue`);
      await admin.end();
      expect(rows).toEqual([{ name: 'account-pass', policy: 'stately' }]);
    }
  });

  it('a live wake-up (a reply) replaces a queued background job due as soon, so it is fetched before the others', async () => {
    const { queue } = await startedQueue();
    // Three accounts with background jobs due now, queued in this order; then a reply wakes the last one.
    for (const account of ['a', 'b', 'c']) expect(await queue.ensureChain(account, { bringForward: false })).toBe('sent');
    expect(await queue.ensureChain('c', { bringForward: false, priority: LIVE_PRIORITY })).toBe('queued');
    expect(await queue.ensureChain('c', { bringForward: true, priority: LIVE_PRIORITY })).toBe('moved');
    // Nothing to gain a second time.
    expect(await queue.ensureChain('c', { bringForward: true, priority: LIVE_PRIORITY })).toBe('queued');
    const first = await queue.fetch(1);
    expect(first.map((j) => j.account)).toEqual(['c']);
    const rest = await queue.fetch(5);
    expect(rest.map((j) => j.account).sort()).toEqual(['a', 'b']);
  });

  it('a background job whose list falls due is raised to live and fetched before older background jobs; garbage is left alone', async () => {
    const { queue, jobs } = await startedQueue();
    const admin = await adminClient();
    // a and b: background work due now, lists due later; c: queued last, its list due now; d: its list due in a minute.
    for (const account of ['a', 'b']) expect(await queue.ensureChain(account, { bringForward: false })).toBe('sent');
    const job = (account: string) => ({ id: '', account, manual: false, retryCount: 0, startAfter: 0, priority: 0, liveAt: null });
    for (const [account, liveInMs] of [['c', 0], ['d', 60_000]] as const) {
      // A successor is queued by finish(); the job it finishes does not exist here, which finish tolerates.
      await queue.finish({ ...job(account), id: '00000000-0000-0000-0000-000000000000' }, { successor: { delayMs: 0, liveInMs } });
    }
    // A job inserted by hand with a liveAt that is not a number.
    await admin.query(`update ${jobs} set data = data || '{"liveAt": "soon"}' where singleton_key = 'b'`);
    expect(await queue.promote()).toEqual({ promoted: 1, waiting: 1 });
    expect(await queue.promote()).toEqual({ promoted: 0, waiting: 1 });
    const [c] = await queue.fetch(1);
    expect(c).toMatchObject({ account: 'c', priority: LIVE_PRIORITY });
    const rest = (await queue.fetch(5)).sort((x, y) => x.account.localeCompare(y.account));
    expect(rest.map((j) => j.account)).toEqual(['a', 'b', 'd']);
    // d's list falls due in a minute by the database's clock; a liveAt that is not a number is none.
    expect(rest[2]!.liveAt! - Date.now()).toBeGreaterThan(50_000);
    expect(rest[1]!.liveAt).toBeNull();
  });

  it('a reply that replaces an operator\'s queued start keeps it an operator\'s start', async () => {
    const { queue } = await startedQueue();
    expect(await queue.ensureChain('a', { bringForward: true, manual: true, delayMs: 60_000 })).toBe('sent');
    expect(await queue.ensureChain('a', { bringForward: true, priority: LIVE_PRIORITY })).toBe('moved');
    expect((await queue.fetch(1)).map((j) => [j.account, j.manual])).toEqual([['a', true]]);
  });

  it("a job in retry (its worker died or failed mid-pass) is raised to live: a dead worker's accounts go before background work", async () => {
    const { queue, jobs } = await startedQueue({ retryDelaySeconds: 0 });
    const admin = await adminClient();
    for (const account of ['a', 'b', 'c']) expect(await queue.ensureChain(account, { bringForward: false })).toBe('sent');
    const [a] = await queue.fetch(1);
    expect(a!.account).toBe('a');
    await queue.fail(a!, new Error('the worker died'));
    expect((await queue.promote()).promoted).toBe(1);
    const { rows } = await admin.query(`select singleton_key as account, state, priority from ${jobs} order by 1`);
    expect(rows).toEqual([
      { account: 'a', state: 'retry', priority: LIVE_PRIORITY },
      { account: 'b', state: 'created', priority: 0 },
      { account: 'c', state: 'created', priority: 0 },
    ]);
  });
});
