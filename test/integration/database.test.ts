import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { readFileSync } from 'node:fs';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql } from '../../src/db/connect.ts';
import { migrationState, notMigrated } from '../../src/db/migrationState.ts';
import { DataFolderLockedError } from '../../src/db/pgliteLock.ts';
import { NewerSchemaError } from '../../src/errors.ts';
import { tickets } from '../../src/db/schema.ts';
import { canonicalTimestamp } from '../../src/time.ts';
import { backends, freshPglite, postgresUrl, type TestDatabase } from '../helpers/db.ts';

/** Every migration of the journal is applied exactly once. */
const MIGRATION_COUNT: number = JSON.parse(readFileSync(new URL('../../migrations/meta/_journal.json', import.meta.url), 'utf8')).entries.length;

const CONTRACT_TABLES = ['api_requests', 'attachments', 'messages', 'reply_outbox', 'sync_runs', 'ticket_history', 'tickets'];

describe.each(backends)('database on $name', ({ open }) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await open();
  });
  afterAll(() => database.destroy());

  it('creates every contract table, and migrating again is a no-op', async () => {
    await database.migrate();
    const rows = await queryRows<{ table_name: string }>(
      database.db,
      sql`select table_name from information_schema.tables where table_schema = current_schema() order by 1`,
    );
    expect(rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(CONTRACT_TABLES));
    const applied = await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from __ticket_mirror_migrations`);
    expect(applied[0]!.n).toBe(MIGRATION_COUNT);
  });

  it('refuses a schema a newer version migrated, before migrating or writing it; status says so', async () => {
    await database.migrate();
    const newest = Math.max(...JSON.parse(readFileSync(new URL('../../migrations/meta/_journal.json', import.meta.url), 'utf8')).entries.map((e: { when: number }) => e.when));
    await database.db.execute(sql`insert into __ticket_mirror_migrations (hash, created_at) values ('from-a-newer-version', ${newest + 86_400_000})`);
    try {
      await expect(database.migrate()).rejects.toThrow(NewerSchemaError);
      const state = await migrationState(database.db, database.schema);
      expect(state).toMatchObject({ pending: 0, newer: true });
      expect(notMigrated(state)).toMatch(/^migrated by a newer version of ticket-mirror/);
    } finally {
      await database.db.execute(sql`delete from __ticket_mirror_migrations where hash = 'from-a-newer-version'`);
    }
    await database.migrate();
  });

  it('keeps microseconds: 2024-05-01T10:20:30.123456Z comes back as the same instant', async () => {
    const instant = '2024-05-01T10:20:30.123456Z';
    await database.db
      .insert(tickets)
      .values({ id: 'micro', createdAt: instant, firstSeenAt: instant, lastSeenAt: instant, closedAt: '2024-05-01T10:20:30.000001Z' });
    const [row] = await database.db.select().from(tickets).where(eq(tickets.id, 'micro'));
    expect(canonicalTimestamp(row!.createdAt!)).toBe(instant);
    expect(canonicalTimestamp(row!.closedAt!)).toBe('2024-05-01T10:20:30.000001Z');
    const [text] = await queryRows<{ t: string }>(
      database.db,
      sql`select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as t from tickets where id = 'micro'`,
    );
    expect(text!.t).toBe(instant);
  });

  it('rejects a reply_outbox row whose message is too short, at insert time', async () => {
    await expect(
      database.db.execute(sql`insert into reply_outbox (ticket_id, message) values ('t1', 'ab')`),
    ).rejects.toThrow();
    // The spec's rule counts characters as given (code points): blanks count, two emoji are two.
    await expect(database.db.execute(sql`insert into reply_outbox (ticket_id, message) values ('t1', '👍👍')`)).rejects.toThrow();
    await database.db.execute(sql`insert into reply_outbox (ticket_id, message) values ('t1', '  a ')`);
    await database.db.execute(sql`delete from reply_outbox`);
    await database.db.execute(sql`insert into reply_outbox (ticket_id, message) values ('t1', 'Thanks!')`);
    const [row] = await queryRows<{ state: string; attempts: number }>(database.db, sql`select state, attempts from reply_outbox`);
    expect(row).toEqual({ state: 'pending', attempts: 0 });
  });
});

describe('embedded database lock', () => {
  it('refuses a second opener of the same data folder while the first holds it', async () => {
    const first = await freshPglite();
    try {
      await expect(openDatabase({ pgliteDir: first.dir })).rejects.toBeInstanceOf(DataFolderLockedError);
    } finally {
      await first.close();
    }
    const again = await openDatabase({ pgliteDir: first.dir });
    await again.close();
    await first.destroy();
  });

  it('takes over a lock left by a process that died', async () => {
    const db = await freshPglite();
    await db.close();
    // A pid that is certainly not running: a child that has exited.
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(`${db.dir}/ticket-mirror.lock`, child.stdout.toString());
    const reopened = await openDatabase({ pgliteDir: db.dir });
    await reopened.close();
    await db.destroy();
  });
});

describe.skipIf(!postgresUrl)('DB_SCHEMA on PostgreSQL', () => {
  it('places the tables in the configured schema, not in public', async () => {
    const database = await openDatabase({ databaseUrl: postgresUrl!, schema: 'tm_schema_probe' });
    try {
      await database.migrate();
      const rows = await queryRows<{ table_schema: string }>(
        database.db,
        sql`select distinct table_schema from information_schema.tables where table_name = 'tickets' and table_schema = 'tm_schema_probe'`,
      );
      expect(rows).toHaveLength(1);
    } finally {
      await database.db.execute(sql`drop schema tm_schema_probe cascade`);
      await database.close();
    }
  });
});

describe.skipIf(!postgresUrl)('PostgreSQL ending a connection the mirror holds', () => {
  it('fails the query that uses it, never the process (pg_terminate_backend between two statements of a transaction)', async () => {
    const database = await openDatabase({ databaseUrl: postgresUrl!, schema: 'public' });
    const admin = new pg.Client({ connectionString: postgresUrl! });
    await admin.connect();
    try {
      // The client the pool hands out, as a transaction holds it between two statements: the pool's own listener is off.
      const pool = (database.db as unknown as { $client: pg.Pool }).$client;
      const client = await pool.connect();
      const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
      const closed = new Promise((resolve) => (client as unknown as { connection: { stream: NodeJS.EventEmitter } }).connection.stream.once('close', resolve));
      await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
      // The server's FATAL and the socket's end arrive with no query running: pg emits 'error' on the client. Without a
      // listener of the client's own that was an uncaught exception, and the daemon exited 1 (a helper's probe).
      await closed;
      await expect(client.query('select 1')).rejects.toThrow();
      client.release();
      // The pool goes on with a new connection.
      expect(await queryRows<{ one: number }>(database.db, sql`select 1 as one`)).toEqual([{ one: 1 }]);
    } finally {
      await admin.end();
      await database.close();
    }
  });
});
