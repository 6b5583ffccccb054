import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { syncLockKey } from '../../src/daemon/leader.ts';
import { LockSession } from '../../src/fleet/lockSession.ts';
import { createLogger } from '../../src/logger.ts';
import { postgresUrl } from '../helpers/db.ts';
import { lostOf } from '../helpers/fleet.ts';

/**
 * A fleet worker's one session for its accounts' locks: the lock `run` takes, fenced between sessions and within one
 * (advisory locks are re-entrant per session), every lease lost at once when the session goes, a new session after.
 */
describe.skipIf(!postgresUrl)('the lock session of a fleet worker', { timeout: 60_000 }, () => {
  const sessions: LockSession[] = [];
  const clients: pg.Client[] = [];
  const session = () => {
    const s = new LockSession({ databaseUrl: postgresUrl!, applicationName: 'tm fleet locks test', logger: createLogger('silent'), heartbeatMs: 200 });
    sessions.push(s);
    return s;
  };
  const client = async () => {
    const c = new pg.Client({ connectionString: postgresUrl! });
    await c.connect();
    clients.push(c);
    return c;
  };
  const schema = () => `tm_lock_${Math.random().toString(36).slice(2, 10)}`;
  afterEach(async () => {
    await Promise.all(sessions.splice(0).map((s) => s.close()));
    await Promise.all(clients.splice(0).map((c) => c.end()));
  });

  it('one holder per schema: another session, and a second try of the same one, are refused until it is released', async () => {
    const [a, b] = [session(), session()];
    const s = schema();
    const lease = await a.tryLock(s);
    expect(lease).not.toBeNull();
    expect(await a.tryLock(s)).toBeNull();
    expect(await b.tryLock(s)).toBeNull();
    // Another schema is free, on the same session.
    const other = await a.tryLock(schema());
    expect(other?.session).toEqual(lease!.session);
    await lease!.release();
    await lease!.release();
    const taken = await b.tryLock(s);
    expect(taken).not.toBeNull();
    expect(taken!.session!.pid).not.toBe(lease!.session!.pid);
    expect(other!.lost.aborted).toBe(false);
  });

  it('a `run` holding the schema lock on its own session fences it', async () => {
    const run = await client();
    const s = schema();
    await run.query('select pg_advisory_lock(hashtext($1))', [syncLockKey(s)]);
    expect(await session().tryLock(s)).toBeNull();
    await run.query('select pg_advisory_unlock(hashtext($1))', [syncLockKey(s)]);
    expect(await sessions[0]!.tryLock(s)).not.toBeNull();
  });

  it('the session killed: every lease is lost at once, its locks are free for others, and the next try opens a new session', async () => {
    const a = session();
    const [s1, s2] = [schema(), schema()];
    const l1 = (await a.tryLock(s1))!;
    const l2 = (await a.tryLock(s2))!;
    const lost = Promise.all([l1, l2].map(lostOf));
    const admin = await client();
    await admin.query('select pg_terminate_backend($1)', [l1.session!.pid]);
    await lost;
    expect(String(l1.lost.reason)).toMatch(/lock lost/);
    expect(await session().tryLock(s1)).not.toBeNull();
    const again = await a.tryLock(s2);
    expect(again).not.toBeNull();
    expect(again!.session!.pid).not.toBe(l1.session!.pid);
    // A lease of the dead session released late does nothing to the new one's.
    await l2.release();
    expect(await session().tryLock(s2)).toBeNull();
  });

  it('tries that find the session dead at once open one new session between them', async () => {
    const a = session();
    const first = (await a.tryLock(schema()))!;
    const admin = await client();
    await admin.query('select pg_terminate_backend($1)', [first.session!.pid]);
    // The loss may come before the admin's answer does.
    await lostOf(first);
    const leases = await Promise.all(Array.from({ length: 5 }, () => a.tryLock(schema())));
    expect(new Set(leases.map((l) => l!.session!.pid)).size).toBe(1);
  });
});
