import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql, type Database } from '../../src/db/connect.ts';
import { namingClient, StatementNames } from '../../src/db/preparedStatements.ts';
import { sqlStateOf } from '../../src/errors.ts';
import { postgresUrl } from '../helpers/db.ts';
import { count, mirrorAsTruth, truthOf, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/** The error `promise` rejects with, or null when it resolves. */
function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => null,
    (error: unknown) => error,
  );
}

describe('StatementNames', () => {
  const error = (code: string, message = 'refused') => Object.assign(new Error(message), { code });

  it('names a text the second time it is sent, the same name every time, another text another name', () => {
    const names = new StatementNames();
    expect(names.nameFor('select $1')).toBeUndefined();
    const name = names.nameFor('select $1');
    expect(name).toMatch(/^tm_[0-9a-f]{32}$/);
    expect(names.nameFor('select $1')).toBe(name);
    expect(names.nameFor('select $1 ')).toBeUndefined();
    expect(names.nameFor('select $1 ')).not.toBe(name);
  });

  it('counts at most `texts` texts, then counts afresh (a text that varied with its values fills nothing)', () => {
    const names = new StatementNames(undefined, 200, 2);
    names.nameFor('a $1');
    names.nameFor('b $1');
    names.nameFor('c $1'); // the third: the count starts over with it
    expect(names.nameFor('a $1')).toBeUndefined();
    expect(names.nameFor('c $1')).toMatch(/^tm_/);
  });

  it('turns off, telling once, on the errors that say named statements cannot work here, and on no other', () => {
    const told: Error[] = [];
    const names = new StatementNames((e) => told.push(e));
    names.nameFor('select $1');
    names.failed(error('23505', 'duplicate key'));
    names.failed(error('0A000', 'not supported'));
    names.failed('not an error');
    expect(names.off).toBeNull();
    expect(names.nameFor('select $1')).toMatch(/^tm_/);
    const gone = error('26000', 'prepared statement "tm_x" does not exist');
    names.failed(gone);
    names.failed(error('42P05', 'prepared statement "tm_x" already exists'));
    expect(told).toEqual([gone]);
    expect(names.off).toBe(gone);
    expect(names.nameFor('select $1')).toBeUndefined();
    const altered = new StatementNames();
    altered.failed(error('0A000', 'cached plan must not change result type'));
    expect(altered.off).not.toBeNull();
  });
});

describe.skipIf(!postgresUrl)('named prepared statements on PostgreSQL', () => {
  const schema = `tm_prep_${randomBytes(5).toString('hex')}`;
  let admin: pg.Client;

  beforeEach(async () => {
    admin = new pg.Client({ connectionString: postgresUrl! });
    await admin.connect();
  });

  afterEach(async () => {
    await admin.query(`drop schema if exists "${schema}" cascade`);
    await admin.end();
  });

  /** The session's prepared statements (the pool holds one session). */
  async function prepared(db: Database['db']): Promise<Array<{ name: string; statement: string }>> {
    return queryRows(db, sql`select name, statement from pg_prepared_statements order by statement`);
  }

  it('a statement with parameters sent again is prepared once a session; one sent once, or without parameters, is not', async () => {
    const database = await openDatabase({ databaseUrl: postgresUrl!, schema, poolSize: 1 });
    try {
      for (let i = 0; i < 3; i++) expect(await queryRows(database.db, sql`select ${i}::int + 1 as n`)).toEqual([{ n: i + 1 }]);
      await queryRows(database.db, sql`select ${1}::int + 2 as n`);
      for (let i = 0; i < 3; i++) await queryRows(database.db, sql`select 5 as n`);
      const statements = await prepared(database.db);
      expect(statements).toEqual([{ name: expect.stringMatching(/^tm_/) as unknown as string, statement: 'select $1::int + 1 as n' }]);
    } finally {
      await database.close();
    }
  });

  it('a session holds at most perSession of them; the others go unnamed and still run', async () => {
    const pool = new pg.Pool({ connectionString: postgresUrl!, max: 1, Client: namingClient(new StatementNames(undefined, 2)) });
    try {
      for (const text of ['select $1::int as a', 'select $1::int as b', 'select $1::int as c']) {
        for (let i = 0; i < 3; i++) expect((await pool.query(text, [i])).rows).toEqual([{ [text.slice(-1)]: i }]);
      }
      const { rows } = await pool.query('select statement from pg_prepared_statements order by statement');
      expect(rows).toEqual([{ statement: 'select $1::int as a' }, { statement: 'select $1::int as b' }]);
    } finally {
      await pool.end();
    }
  });

  it('a table altered by hand so that a statement’s result changes type: that statement fails once, told once, and the next runs unprepared', async () => {
    const told: Error[] = [];
    const pool = new pg.Pool({ connectionString: postgresUrl!, max: 1, Client: namingClient(new StatementNames((e) => told.push(e))) });
    try {
      await admin.query(`create schema "${schema}"; create table "${schema}".t (id int primary key, a text); insert into "${schema}".t values (1, 'x')`);
      const read = () => pool.query(`select * from "${schema}".t where id = $1`, [1]);
      await read();
      expect((await read()).rows).toEqual([{ id: 1, a: 'x' }]);
      await admin.query(`alter table "${schema}".t add column b int default 7`);
      const failure = await failureOf(read());
      expect(sqlStateOf(failure)).toBe('0A000');
      expect(told).toEqual([failure]);
      expect((await read()).rows).toEqual([{ id: 1, a: 'x', b: 7 }]);
      expect((await read()).rows).toEqual([{ id: 1, a: 'x', b: 7 }]);
      expect(told).toHaveLength(1);
    } finally {
      await pool.end();
    }
  });

  describe('behind a pooler that moves the session (the server forgets the statements the client parsed)', () => {
    let database: Database & { destroy(): Promise<void> };
    let mirror: VirtualMirror;
    const told: Error[] = [];

    beforeEach(async () => {
      told.length = 0;
      const opened = await openDatabase({ databaseUrl: postgresUrl!, schema, poolSize: 1, onUnprepared: (e) => told.push(e) });
      await opened.migrate();
      database = { ...opened, destroy: () => opened.close() };
      mirror = await virtualMirror(database);
    });

    afterEach(async () => {
      await mirror.close();
      await database.close();
    });

    it('fails one pass before any request, told once; the next passes run unprepared and mirror all, nothing lost', async () => {
      await mirror.runFor(10 * 60_000);
      expect(await mirrorAsTruth(mirror.db)).toEqual(truthOf(mirror.sim));
      expect((await prepared(mirror.db)).length).toBeGreaterThan(5);
      const requests = await count(mirror.db, sql`select count(*) as n from api_requests`);
      // What a pooler in transaction mode does: the next transaction runs on a server session that never parsed them.
      await queryRows(mirror.db, sql`deallocate all`);
      mirror.sim.model.newTicket();
      mirror.clock.advance(10 * 60_000);
      const failure = await failureOf(mirror.engine.pass());
      expect(sqlStateOf(failure)).toBe('26000');
      expect(told.map(sqlStateOf)).toEqual(['26000']);
      expect(await count(mirror.db, sql`select count(*) as n from api_requests`)).toBe(requests);
      await mirror.runFor(20 * 60_000);
      expect(await mirrorAsTruth(mirror.db)).toEqual(truthOf(mirror.sim));
      expect(await prepared(mirror.db)).toEqual([]);
      expect(told).toHaveLength(1);
    });
  });
});
