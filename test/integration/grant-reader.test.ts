import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantReaderCommand } from '../../src/cli/commands/grantReader.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { grantReader, InvalidRoleNameError } from '../../src/db/grantReader.ts';
import { ConfigError } from '../../src/errors.ts';
import { createLogger } from '../../src/logger.ts';
import { freshPostgres, postgresUrl, type TestDatabase } from '../helpers/db.ts';

const uniqueRole = () => `tm_reader_${randomBytes(5).toString('hex')}`;

/** A session as `role` (trust auth: no password), finding the tables in `schema`. */
async function connectAs(role: string, schema: string): Promise<pg.Client> {
  const url = new URL(postgresUrl!);
  const client = new pg.Client({
    host: url.hostname,
    port: Number(url.port || 5432),
    database: url.pathname.slice(1) || 'postgres',
    user: role,
    options: `-c search_path=${schema}`,
  });
  await client.connect();
  return client;
}

async function dropRole(database: TestDatabase, role: string): Promise<void> {
  await database.db.execute(sql.raw(`drop owned by "${role}"`));
  await database.db.execute(sql.raw(`drop role "${role}"`));
}

function sqlState(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'no error',
    (error: { code?: string }) => error.code ?? String(error),
  );
}

describe.skipIf(!postgresUrl)('grantReader on PostgreSQL (PGlite has one superuser and no authentication: not run there)', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshPostgres('gr');
    await database.db.execute(sql`insert into tickets (id, in_open, first_seen_at, last_seen_at) values ('t1', true, now(), now())`);
  });
  afterAll(() => database.destroy());

  it('lets the role read tables and views and insert into reply_outbox, and denies every other write', async () => {
    const role = uniqueRole();
    expect(await grantReader(database.db, database.schema, role)).toEqual({ role, created: true });
    const reader = await connectAs(role, database.schema);
    try {
      expect((await reader.query('select count(*)::int as n from tickets')).rows).toEqual([{ n: 1 }]);
      expect((await reader.query('select assignee_name, open_tickets::int as n from open_by_assignee')).rows).toEqual([
        { assignee_name: 'unassigned', n: 1 },
      ]);
      const inserted = await reader.query(`insert into reply_outbox (ticket_id, message) values ('t1', 'Thank you!') returning id, state`);
      expect(inserted.rows).toEqual([{ id: expect.any(String), state: 'pending' }]);
      // Every column but the request's own is the daemon's: a reader cannot forge a sent row, a claimed message id, a
      // row that never comes due, or its own verdict.
      for (const [column, value] of [
        ['state', `'sent'`],
        ['message_id', `'M-forged'`],
        ['next_attempt_at', `'infinity'`],
        ['sent_at', 'now()'],
        ['attempts', '9'],
        ['error', `'x'`],
        ['sending_since', 'now()'],
        ['inserted_as', `'request'`],
        ['requested_at', 'now()'],
      ]) {
        expect(await sqlState(reader.query(`insert into reply_outbox (ticket_id, message, ${column}) values ('t1', 'Thank you!', ${value})`))).toBe('42501');
      }

      expect(await sqlState(reader.query(`update reply_outbox set message = 'changed it'`))).toBe('42501');
      expect(await sqlState(reader.query('delete from reply_outbox'))).toBe('42501');
      expect(await sqlState(reader.query(`insert into tickets (id, first_seen_at, last_seen_at) values ('x', now(), now())`))).toBe('42501');
      expect(await sqlState(reader.query('create table mine (id int)'))).toBe('42501');
    } finally {
      await reader.end();
    }
    // Nothing else anywhere in the schema: INSERT of reply_outbox's ticket_id and message is the only write privilege.
    const privileges = await queryRows<{ table_name: string; privilege_type: string }>(
      database.db,
      sql`select table_name::text, privilege_type::text from information_schema.role_table_grants
          where grantee = ${role} and table_schema = ${database.schema} and privilege_type <> 'SELECT'`,
    );
    expect(privileges).toEqual([]);
    const columns = await queryRows<{ table_name: string; column_name: string; privilege_type: string }>(
      database.db,
      sql`select table_name::text, column_name::text, privilege_type::text from information_schema.role_column_grants
          where grantee = ${role} and table_schema = ${database.schema} and privilege_type <> 'SELECT'
          order by column_name`,
    );
    expect(columns).toEqual([
      { table_name: 'reply_outbox', column_name: 'message', privilege_type: 'INSERT' },
      { table_name: 'reply_outbox', column_name: 'ticket_id', privilege_type: 'INSERT' },
    ]);
    const [rows] = await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from reply_outbox`);
    expect(rows!.n).toBe(1);
    await dropRole(database, role);
  });

  it('a role it creates finds the tables of a schema other than public by their names alone; a role that existed keeps its search_path', async () => {
    expect(database.schema).not.toBe('public');
    const role = uniqueRole();
    await grantReader(database.db, database.schema, role);
    const url = new URL(postgresUrl!);
    const client = new pg.Client({ host: url.hostname, port: Number(url.port || 5432), database: url.pathname.slice(1) || 'postgres', user: role });
    await client.connect();
    try {
      expect((await client.query('select count(*)::int as n from tickets')).rows).toEqual([{ n: 1 }]);
    } finally {
      await client.end();
    }
    const existing = uniqueRole();
    await database.db.execute(sql.raw(`create role "${existing}" login`));
    await grantReader(database.db, database.schema, existing);
    const [settings] = await queryRows<{ config: string[] | null }>(database.db, sql`select rolconfig as config from pg_roles where rolname = ${existing}`);
    expect(settings!.config).toBeNull();
    await dropRole(database, role);
    await dropRole(database, existing);
  });

  it('narrows the table-wide INSERT an earlier version granted to (ticket_id, message)', async () => {
    const role = uniqueRole();
    await grantReader(database.db, database.schema, role);
    await database.db.execute(sql.raw(`grant insert on table reply_outbox to "${role}"`));
    expect(await grantReader(database.db, database.schema, role)).toEqual({ role, created: false });
    const reader = await connectAs(role, database.schema);
    try {
      expect(await sqlState(reader.query(`insert into reply_outbox (ticket_id, message, state) values ('t1', 'Thank you!', 'sent')`))).toBe('42501');
      expect((await reader.query(`insert into reply_outbox (ticket_id, message) values ('t1', 'Thanks again!') returning state`)).rows).toEqual([
        { state: 'pending' },
      ]);
    } finally {
      await reader.end();
      await database.db.execute(sql`delete from reply_outbox`);
      await dropRole(database, role);
    }
  });

  it('makes tables created later by the migrating user readable, and is idempotent', async () => {
    const role = uniqueRole();
    await grantReader(database.db, database.schema, role);
    expect(await grantReader(database.db, database.schema, role)).toEqual({ role, created: false });
    await database.db.execute(sql`create table later_table (n int)`);
    await database.db.execute(sql`insert into later_table values (7)`);
    const reader = await connectAs(role, database.schema);
    try {
      expect((await reader.query('select n from later_table')).rows).toEqual([{ n: 7 }]);
      expect(await sqlState(reader.query('insert into later_table values (8)'))).toBe('42501');
    } finally {
      await reader.end();
      await database.db.execute(sql`drop table later_table`);
      await dropRole(database, role);
    }
  });

  it('rejects a role name that is not a plain identifier, before touching the database', async () => {
    await expect(grantReader(database.db, database.schema, 'x"; drop table tickets; --')).rejects.toBeInstanceOf(InvalidRoleNameError);
    await expect(grantReader(database.db, database.schema, 'pg_reader')).rejects.toBeInstanceOf(InvalidRoleNameError);
    await expect(grantReader(database.db, database.schema, 'Reader')).rejects.toBeInstanceOf(InvalidRoleNameError);
  });

  it('the grant-reader command migrates and grants on DATABASE_URL, and refuses the embedded database', async () => {
    const role = uniqueRole();
    const logger = createLogger('silent');
    const config = loadConfig({ DATABASE_URL: postgresUrl!, DB_SCHEMA: database.schema }, { dotenv: false });
    await grantReaderCommand({ config, logger }, role);
    const [granted] = await queryRows<{ select: boolean; insert: boolean; insert_message: boolean; insert_state: boolean; update: boolean }>(
      database.db,
      sql`select has_table_privilege(${role}, 'reply_outbox', 'select') as select,
                 has_any_column_privilege(${role}, 'reply_outbox', 'insert') as insert,
                 has_column_privilege(${role}, 'reply_outbox', 'message', 'insert') as insert_message,
                 has_column_privilege(${role}, 'reply_outbox', 'state', 'insert') as insert_state,
                 has_table_privilege(${role}, 'reply_outbox', 'update') as update`,
    );
    expect(granted).toEqual({ select: true, insert: true, insert_message: true, insert_state: false, update: false });
    await dropRole(database, role);

    const embedded = loadConfig({ PGLITE_DIR: '/nonexistent' }, { dotenv: false });
    await expect(grantReaderCommand({ config: embedded, logger }, role)).rejects.toBeInstanceOf(ConfigError);
    await expect(grantReaderCommand({ config, logger }, 'bad name')).rejects.toBeInstanceOf(ConfigError);
  });
});
