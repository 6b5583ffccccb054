import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql, type Database } from '../../src/db/connect.ts';
import { DatabaseError, safeErrorMessage, sqlStateOf } from '../../src/errors.ts';
import { postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { count, mirrorAsTruth, truthOf, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/** The error `promise` rejects with, or null when it resolves. */
function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => null,
    (error: unknown) => error,
  );
}

/**
 * A user's session that holds a lock on a table the mirror writes — `LOCK TABLE` in a psql left open, an `ALTER`, a
 * `CREATE INDEX` — made a pass wait as long as that session lived. On PostgreSQL the daemon's statements now wait
 * `lockTimeoutMs` at most: the pass fails, says why, loses nothing, and the next one after the lock is gone mirrors
 * all. Migrations still wait for a lock as long as it takes (replicas starting together). The timeouts here are the
 * database's own (a few hundred ms of real time): the test never sleeps, it asks the database.
 */
describe.skipIf(!postgresUrl)('a lock another session holds (PostgreSQL)', () => {
  const LOCK_TIMEOUT_MS = 300;
  let database: TestDatabase;
  let mirror: VirtualMirror;
  let user: pg.Client;
  const schema = `tm_lock_${randomBytes(5).toString('hex')}`;

  async function open(): Promise<Database> {
    return openDatabase({ databaseUrl: postgresUrl!, schema, lockTimeoutMs: LOCK_TIMEOUT_MS });
  }

  beforeEach(async () => {
    const opened = await open();
    await opened.migrate();
    database = {
      ...opened,
      async destroy() {
        await opened.close();
        await user.query(`drop schema if exists "${schema}" cascade`);
      },
    };
    mirror = await virtualMirror(database);
    user = new pg.Client({ connectionString: postgresUrl!, options: `-c search_path=${schema}` });
    await user.connect();
  });

  afterEach(async () => {
    await user.query('rollback');
    await mirror.close();
    await database.destroy();
    await user.end();
  });

  it('fails the pass after lock_timeout with a clear reason (a CREATE INDEX\'s lock), and the next pass after the lock is gone mirrors all', async () => {
    await mirror.runFor(10 * 60_000);
    const before = await mirrorAsTruth(mirror.db);
    expect(before).toEqual(truthOf(mirror.sim));
    mirror.sim.model.newTicket();
    await user.query('begin');
    // What CREATE INDEX takes: the tables can be read, not written.
    await user.query('lock table tickets in share mode');
    mirror.clock.advance(10 * 60_000);
    const failure = await failureOf(mirror.engine.pass());
    expect(failure).toBeInstanceOf(DatabaseError);
    expect((failure as DatabaseError).sqlState).toBe('55P03');
    expect((failure as Error).message).toMatch(/lock timeout \(SQLSTATE 55P03\): another session held a lock on a table the mirror writes/);
    await user.query('rollback');
    // The failed pass is on record, and the mirror lost nothing.
    expect(await count(mirror.db, sql`select count(*) as n from sync_runs where error like '%55P03%'`)).toBe(1);
    expect(await mirrorAsTruth(mirror.db)).toEqual(before);
    await mirror.runFor(20 * 60_000);
    expect(await mirrorAsTruth(mirror.db)).toEqual(truthOf(mirror.sim));
    expect(await mirrorAsTruth(mirror.db)).not.toEqual(before);
  });

  it('a lock that stops reading too (LOCK TABLE, ALTER) fails the pass as soon as it plans, told as safely', async () => {
    await mirror.runFor(60_000);
    await user.query('begin');
    await user.query('lock table tickets in access exclusive mode');
    mirror.clock.advance(10 * 60_000);
    const failure = await failureOf(mirror.engine.pass());
    expect(sqlStateOf(failure)).toBe('55P03');
    expect(safeErrorMessage(failure)).toMatch(/lock timeout \(SQLSTATE 55P03\): another session held a lock/);
    await user.query('rollback');
    await mirror.runFor(10 * 60_000);
    expect(await mirrorAsTruth(mirror.db)).toEqual(truthOf(mirror.sim));
  });

  it('a migration waits for another session’s lock beyond lock_timeout', async () => {
    // Another replica migrating: it holds the migrate lock.
    await user.query('select pg_advisory_lock(hashtext($1))', [`ticket-mirror:migrate:${schema}`]);
    const applicationName = `tm-lock-test ${schema}`;
    const second = await openDatabase({ databaseUrl: postgresUrl!, schema, lockTimeoutMs: LOCK_TIMEOUT_MS, applicationName });
    try {
      let failed: unknown = null;
      const migrating = second.migrate().catch((error: unknown) => {
        failed = error;
      });
      // Until the database says the migration has waited for that lock three times the lock timeout (without the fix
      // it fails after one): the database's clock, asked again and again, not a sleep of the test's.
      for (let waited = false; !waited; ) {
        if (failed !== null) throw failed;
        const [row] = await queryRows<{ waited: boolean }>(
          database.db,
          sql`select coalesce(bool_or(clock_timestamp() - a.query_start > ${`${3 * LOCK_TIMEOUT_MS} milliseconds`}::interval), false) as waited
              from pg_stat_activity a join pg_locks l on l.pid = a.pid
              where a.application_name = ${applicationName} and l.locktype = 'advisory' and not l.granted`,
        );
        waited = row!.waited;
      }
      await user.query('select pg_advisory_unlock(hashtext($1))', [`ticket-mirror:migrate:${schema}`]);
      await migrating;
      expect(failed).toBeNull();
      // Its connection went back to the pool with the session's lock_timeout.
      const [setting] = await queryRows<{ t: string }>(second.db, sql`select current_setting('lock_timeout') as t`);
      expect(setting!.t).toBe(`${LOCK_TIMEOUT_MS}ms`);
    } finally {
      await second.close();
    }
  });
});
