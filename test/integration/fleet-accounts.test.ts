import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantReaderCommand } from '../../src/cli/commands/grantReader.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { parseBusinessHours } from '../../src/config/reportSettings.ts';
import { openDatabase, queryRows, sql, type Database, type Tx } from '../../src/db/connect.ts';
import { FLEET_FUNCTIONS, FLEET_RELATIONS } from '../../src/db/fleetComments.ts';
import { openFleetDatabase, type FleetDatabase } from '../../src/db/fleet.ts';
import {
  AccountExistsError,
  deleteAccount,
  getAccount,
  insertAccount,
  listAccounts,
  recordPassOutcome,
  refreshFleetViews,
  setPaused,
  tryLockAccountSchema,
  type NewAccount,
} from '../../src/db/repos/accounts.ts';
import { applyComments } from '../../src/db/repos/comments.ts';
import { createLogger } from '../../src/logger.ts';
import { openToken, parseFleetKey, sealToken } from '../../src/fleet/tokenSeal.ts';
import { postgresUrl } from '../helpers/db.ts';

/**
 * The fleet's control schema on a real PostgreSQL: the accounts table and its rules, its repository, the views across
 * accounts (two account schemas with their own report settings), and a reader granted one account only.
 */

const suffix = randomBytes(4).toString('hex');
const FLEET = `fleet_${suffix}`;
const key = parseFleetKey(randomBytes(32).toString('base64'));

const account = (name: string, over: Partial<NewAccount> = {}): NewAccount => ({
  name,
  schemaName: `tm_${name}`,
  apiUrl: 'https://help.example.com',
  tokenSealed: sealToken(key, name, `token-of-${name}`),
  dailyLimit: 1440,
  minuteLimit: 60,
  reserve: 0.1,
  ...over,
});

const sqlState = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => 'no error',
    (error: { code?: string; cause?: { code?: string } }) => error.cause?.code ?? error.code ?? String(error),
  );

async function superuser<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl! });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe.skipIf(!postgresUrl)('the fleet control schema on PostgreSQL', () => {
  let fleet: FleetDatabase;
  const a = `a${suffix}`;
  const b = `b${suffix}`;
  const c = `c${suffix}`;
  const schemas = [`tm_${a}`, `tm_${b}`, `tm_${c}`, `tm_x${suffix}`];

  beforeAll(async () => {
    fleet = await openFleetDatabase({ databaseUrl: postgresUrl!, schema: FLEET });
    // Two workers starting together: one migrates, the other waits and finds nothing to do.
    await Promise.all([fleet.migrate(), fleet.migrate()]);
  });
  afterAll(async () => {
    await fleet?.close();
    await superuser((client) => client.query(`drop schema if exists ${[FLEET, ...schemas].map((s) => `"${s}"`).join(', ')} cascade`));
  });

  it('documents every table, view, column and function of the control schema, and nothing it lacks', async () => {
    const again = await fleet.db.transaction((tx) => applyComments(tx, { relations: FLEET_RELATIONS, functions: FLEET_FUNCTIONS }));
    expect(again).toEqual({ written: 0, missing: [] });
    const undocumented = await queryRows<{ what: string }>(
      fleet.db,
      sql`select c.relname || coalesce('.' || a.attname, '') as what
          from pg_class c left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
          where c.relnamespace = ${FLEET}::regnamespace and c.relkind in ('r', 'v') and c.relname not like '\\_\\_%'
            and (obj_description(c.oid, 'pg_class') is null or (a.attname is not null and col_description(c.oid, a.attnum) is null))`,
    );
    expect(undocumented).toEqual([]);
  });

  it('keeps its rules in the table: names, schemas, URLs, limits, reserve, states', async () => {
    const row = (over: Record<string, string>) => {
      const v = { name: `'ok${suffix}'`, schema_name: `'tm_ok${suffix}'`, api_url: `'https://x'`, token_sealed: `'\\x${'01'.repeat(40)}'`, ...over };
      return fleet.db.transaction((tx) =>
        tx.execute(sql.raw(`insert into accounts (${Object.keys(v).join(', ')}) values (${Object.values(v).join(', ')})`)),
      );
    };
    const bads: Array<Record<string, string>> = [
      { name: `'Acme'` },
      { name: `'1acme'` },
      { name: `'acme-co'` },
      { name: `'${'a'.repeat(41)}'` },
      { name: `''` },
      { schema_name: `'pg_catalog'` },
      { schema_name: `'Tm'` },
      { api_url: `'ftp://x'` },
      { token_sealed: `'\\x01'` },
      { daily_limit: '0' },
      { minute_limit: '-1' },
      { reserve: '1' },
      { reserve: '-0.1' },
      { state: `'sleeping'` },
      // An instant the fleet cannot read (accounts list and fleet status stopped at it, for every account).
      { paused_at: `'infinity'` },
      { next_pass_at: `'-infinity'` },
      { last_pass_at: `'10000-01-01T00:00:00Z'` },
      { not_before: `'0044-03-15 00:00:00+00 BC'` },
    ];
    for (const bad of bads) {
      expect({ bad, state: await sqlState(row(bad)) }).toEqual({ bad, state: '23514' });
    }
    expect(await sqlState(row({ name: `'${'a'.repeat(40)}'`, schema_name: `'tm_long${suffix}'` }))).toBe('no error');
    await fleet.db.execute(sql`delete from accounts`);
  });

  it('inserts, reads, lists, pauses through SQL, records a pass and deletes', async () => {
    await fleet.db.transaction((tx) => insertAccount(tx, account(a)));
    const got = await getAccount(fleet.db, a);
    expect(got).toMatchObject({ name: a, schemaName: `tm_${a}`, apiUrl: 'https://help.example.com', dailyLimit: 1440, minuteLimit: 60, reserve: 0.1, pausedAt: null, state: 'new', failures: 0 });
    expect(openToken(key, a, got!.tokenSealed)).toBe(`token-of-${a}`);
    expect(got!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    // The automation path: a plain UPDATE pauses, and the next read (a worker's, at its next job) sees it.
    await fleet.db.execute(sql.raw(`update ${FLEET}.accounts set paused_at = now() where name = '${a}'`));
    expect((await getAccount(fleet.db, a))!.pausedAt).not.toBeNull();
    expect(await listAccounts(fleet.db, { activeOnly: true })).toEqual([]);
    expect(await setPaused(fleet.db, a, null)).toBe(true);
    expect((await listAccounts(fleet.db, { activeOnly: true })).map((x) => x.name)).toEqual([a]);
    expect(await setPaused(fleet.db, `nobody${suffix}`, null)).toBe(false);

    await recordPassOutcome(fleet.db, a, {
      state: 'failing',
      failures: 2,
      notBefore: '2030-01-01T00:00:00.000001Z',
      lastPassAt: '2029-12-31T23:59:00.123456Z',
      lastPassRequests: 7,
      lastError: 'server error 503',
      nextPassAt: null,
      worker: 'host:1',
    });
    expect(await getAccount(fleet.db, a)).toMatchObject({
      state: 'failing',
      failures: 2,
      notBefore: '2030-01-01T00:00:00.000001Z',
      lastPassAt: '2029-12-31T23:59:00.123456Z',
      lastPassRequests: 7,
      lastError: 'server error 503',
      worker: 'host:1',
    });
    expect(await deleteAccount(fleet.db, a)).toBe(true);
    expect(await deleteAccount(fleet.db, a)).toBe(false);
    expect(await getAccount(fleet.db, a)).toBeUndefined();
  });

  it('refuses a taken name or schema with AccountExistsError and leaves the transaction usable', async () => {
    await fleet.db.transaction((tx) => insertAccount(tx, account(a)));
    await fleet.db.transaction(async (tx) => {
      await expect(insertAccount(tx, account(a, { schemaName: `tm_x${suffix}` }))).rejects.toMatchObject({ name: 'AccountExistsError', taken: 'name' });
      const error = await insertAccount(tx, account(`x${suffix}`, { schemaName: `tm_${a}` })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AccountExistsError);
      expect(error).toMatchObject({ taken: 'schema', holder: a });
      // Still usable: nothing was aborted.
      expect((await listAccounts(tx)).map((x) => x.name)).toEqual([a]);
    });
    await deleteAccount(fleet.db, a);
  });

  it("tryLockAccountSchema fails while a pass holds the schema's sync lock", async () => {
    const holder = new pg.Client({ connectionString: postgresUrl! });
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock(hashtext($1))', [`ticket-mirror:sync:tm_${a}`]);
      expect(await fleet.db.transaction((tx) => tryLockAccountSchema(tx, `tm_${a}`))).toBe(false);
      await holder.query('select pg_advisory_unlock(hashtext($1))', [`ticket-mirror:sync:tm_${a}`]);
      expect(await fleet.db.transaction((tx) => tryLockAccountSchema(tx, `tm_${a}`))).toBe(true);
    } finally {
      await holder.end();
    }
  });

  describe('views across accounts', () => {
    let dbA: Database;
    let dbB: Database | undefined;
    beforeAll(async () => {
      // a in UTC without business hours; b in Tokyo, open Mon-Fri 09:00-17:00: each account's views read its own settings.
      dbA = await openDatabase({ databaseUrl: postgresUrl!, schema: `tm_${a}`, poolSize: 1 });
      dbB = await openDatabase({
        databaseUrl: postgresUrl!,
        schema: `tm_${b}`,
        poolSize: 1,
        report: {
          timeZone: 'Asia/Tokyo',
          businessHours: 'Mon-Fri 09:00-17:00',
          businessWindows: parseBusinessHours('Mon-Fri 09:00-17:00'),
          slaFirstResponseSeconds: null,
          slaResolutionSeconds: null,
        },
      });
      await dbA.migrate();
      await dbB.migrate();
      await seed(dbA.db, 'A');
      await seed(dbB.db, 'B');
      // c is added but its schema never made: it is left out of every view, not an error.
      await fleet.db.transaction(async (tx) => {
        await insertAccount(tx, account(a));
        await insertAccount(tx, account(b));
        await insertAccount(tx, account(c));
      });
    });
    afterAll(async () => {
      await dbA?.close();
      await dbB?.close();
    });

    it('fleet_tickets has every account whose schema exists, with the tickets columns', async () => {
      const rows = await queryRows<{ account: string; id: string; status: string }>(
        fleet.db,
        sql`select account, id, status from fleet_tickets order by account, id`,
      );
      expect(rows).toEqual([
        { account: a, id: 'A1', status: 'open' },
        { account: a, id: 'A2', status: 'closed' },
        { account: b, id: 'B1', status: 'open' },
        { account: b, id: 'B2', status: 'closed' },
      ]);
      const columns = await queryRows<{ name: string }>(
        fleet.db,
        sql`select attname::text as name from pg_attribute where attrelid = 'fleet_tickets'::regclass and attnum > 0 order by attnum`,
      );
      expect(columns.map((c) => c.name)).toEqual(Object.keys(FLEET_RELATIONS.fleet_tickets!.columns));
      // A filter on the account gives that account's rows.
      expect(await queryRows(fleet.db, sql`select id from fleet_tickets where account = ${b} order by id`)).toEqual([{ id: 'B1' }, { id: 'B2' }]);
    });

    it("account_backlog, account_first_response and account_resolution follow each account's own report settings", async () => {
      const backlog = await queryRows<{ account: string; day: string; open_tickets: number }>(
        fleet.db,
        sql`select account, day::text as day, open_tickets::int as open_tickets from account_backlog where day <= date '2024-03-03' order by account, day`,
      );
      // Opened 2024-03-01T20:00Z: 1 March in UTC, but 2 March (05:00) in Tokyo.
      expect(backlog).toEqual([
        { account: a, day: '2024-03-01', open_tickets: 2 },
        { account: a, day: '2024-03-02', open_tickets: 2 },
        { account: a, day: '2024-03-03', open_tickets: 1 },
        { account: b, day: '2024-03-02', open_tickets: 2 },
        { account: b, day: '2024-03-03', open_tickets: 2 }, // closed at 05:00 on 4 March in Tokyo
      ]);
      const first = await queryRows<{ account: string; ticket_id: string; s: number; business: number | null }>(
        fleet.db,
        sql`select account, ticket_id, first_response_seconds as s, first_response_business_seconds as business
            from account_first_response order by account, ticket_id`,
      );
      // Answered 1 h after creation, on Saturday 2 March in Tokyo (05:00 -> 06:00): no business hour in between.
      expect(first).toEqual([
        { account: a, ticket_id: 'A1', s: 3600, business: null },
        { account: a, ticket_id: 'A2', s: null, business: null },
        { account: b, ticket_id: 'B1', s: 3600, business: 0 },
        { account: b, ticket_id: 'B2', s: null, business: null },
      ]);
      const resolution = await queryRows<{ account: string; ticket_id: string; s: number }>(
        fleet.db,
        sql`select account, ticket_id, resolution_seconds as s from account_resolution order by account`,
      );
      expect(resolution).toEqual([
        { account: a, ticket_id: 'A2', s: 2 * 86400 },
        { account: b, ticket_id: 'B2', s: 2 * 86400 },
      ]);
    });

    it("holds no dependency on an account's objects, and finds them by name when queried", async () => {
      // A migration of an account's schema may drop or change any view: nothing of the control schema is in its way.
      const [deps] = await queryRows<{ n: number }>(
        fleet.db,
        sql`select count(*)::int as n
            from pg_depend d
            join pg_rewrite r on d.classid = 'pg_rewrite'::regclass and d.objid = r.oid
            join pg_class v on v.oid = r.ev_class
            join pg_class t on d.refclassid = 'pg_class'::regclass and t.oid = d.refobjid
            where v.relnamespace = ${FLEET}::regnamespace and t.relnamespace <> ${FLEET}::regnamespace`,
      );
      expect(deps!.n).toBe(0);
      await dbA.db.execute(sql`alter view ticket_resolution rename to ticket_resolution_away`);
      expect((await queryRows<{ account: string }>(fleet.db, sql`select distinct account from account_resolution`)).map((r) => r.account)).toEqual([b]);
      expect((await queryRows<{ account: string }>(fleet.db, sql`select distinct account from fleet_tickets order by 1`)).map((r) => r.account)).toEqual([a, b]);
      await dbA.db.execute(sql`alter view ticket_resolution_away rename to ticket_resolution`);
      expect((await queryRows<{ account: string }>(fleet.db, sql`select distinct account from account_resolution order by 1`)).map((r) => r.account)).toEqual([a, b]);
    });

    it('leaves a removed account out, and takes in an account whose schema appears, at once', async () => {
      await fleet.db.transaction((tx) => deleteAccount(tx, b));
      expect((await queryRows<{ account: string }>(fleet.db, sql`select distinct account from fleet_tickets`)).map((r) => r.account)).toEqual([a]);
      // Nothing of the fleet depends on b's schema: it can be dropped.
      await dbB!.close();
      dbB = undefined;
      await superuser((client) => client.query(`drop schema "tm_${b}" cascade`));
      const dbC = await openDatabase({ databaseUrl: postgresUrl!, schema: `tm_${c}`, poolSize: 1 });
      try {
        await dbC.migrate();
        await seed(dbC.db, 'C');
      } finally {
        await dbC.close();
      }
      // No refresh: the views read the accounts when queried.
      const counts = sql`select account, count(*)::int as n from fleet_tickets group by 1 order by 1`;
      expect(await queryRows(fleet.db, counts)).toEqual([
        { account: a, n: 2 },
        { account: c, n: 2 },
      ]);
      expect(await refreshFleetViews(fleet.db)).toBe(2);
      // Re-added under the same name with its schema gone: left out again, nothing fails.
      await fleet.db.transaction((tx) => insertAccount(tx, account(b)));
      expect(await queryRows(fleet.db, counts)).toHaveLength(2);
      expect(await refreshFleetViews(fleet.db)).toBe(2);
    });

    it('grant-reader --account: the role reads its account and nothing of the others or of the control schema', async () => {
      const role = `tm_reader_${suffix}`;
      const config = loadConfig({ DATABASE_URL: postgresUrl!, FLEET_SCHEMA: FLEET, LOG_LEVEL: 'silent' }, { dotenv: false });
      const out = await captureStdout(() => grantReaderCommand({ config, logger: createLogger('silent') }, role, { account: a }));
      expect(out).toContain(`schema tm_${a}`);
      const reader = await connectAs(role);
      try {
        expect((await reader.query(`select count(*)::int as n from "tm_${a}".tickets`)).rows).toEqual([{ n: 2 }]);
        expect((await reader.query(`select count(*)::int as n from "tm_${a}".ticket_first_response`)).rows).toEqual([{ n: 2 }]);
        expect(await sqlState(reader.query(`select * from "${FLEET}".accounts`))).toBe('42501');
        expect(await sqlState(reader.query(`select * from "${FLEET}".fleet_tickets`))).toBe('42501');
        expect(await sqlState(reader.query(`select * from "${FLEET}".fleet_tickets_rows()`))).toBe('42501');
        expect(await sqlState(reader.query(`select * from "tm_${c}".tickets`))).toBe('42501');
        // Through a view of its own account no more than the account either.
        expect(await sqlState(reader.query(`create view "tm_${a}".peek as select * from "tm_${c}".tickets`))).toBe('42501');
      } finally {
        await reader.end();
      }
      const privileges = await superuser((client) =>
        client.query<{ schema: string }>(
          `select distinct table_schema::text as schema from information_schema.role_table_grants where grantee = $1`,
          [role],
        ),
      );
      expect(privileges.rows).toEqual([{ schema: `tm_${a}` }]);
      await superuser(async (client) => {
        await client.query(`drop owned by "${role}"`);
        await client.query(`drop role "${role}"`);
      });
    });
  });
});

/** Two tickets per account: X1 open since 2024-03-01T20:00Z answered an hour later; X2 open two days then closed. */
async function seed(db: Tx, prefix: string): Promise<void> {
  await db.execute(
    sql.raw(`
    insert into tickets (id, status, created_at, closed_at, in_open, in_resolved, first_seen_at, last_seen_at) values
    ('${prefix}1', 'open',   '2024-03-01T20:00:00Z', null,                   true,  false, now(), now()),
    ('${prefix}2', 'closed', '2024-03-01T20:00:00Z', '2024-03-03T20:00:00Z', false, true,  now(), now());
    insert into messages (id, ticket_id, message_type, created_at) values
    ('${prefix}m1', '${prefix}1', 'outbound', '2024-03-01T21:00:00Z');
    insert into ticket_history (ticket_id, in_open, in_self, in_unassigned, in_resolved, valid_from, valid_to) values
    ('${prefix}1', true,  false, false, false, '2024-03-01T20:00:00Z', null),
    ('${prefix}2', true,  false, false, false, '2024-03-01T20:00:00Z', '2024-03-03T20:00:00Z'),
    ('${prefix}2', false, false, false, true,  '2024-03-03T20:00:00Z', null)
  `),
  );
}

async function connectAs(role: string): Promise<pg.Client> {
  const url = new URL(postgresUrl!);
  const client = new pg.Client({ host: url.hostname, port: Number(url.port || 5432), database: url.pathname.slice(1) || 'postgres', user: role });
  await client.connect();
  return client;
}

async function captureStdout(fn: () => Promise<void>): Promise<string> {
  const write = process.stdout.write.bind(process.stdout);
  let text = '';
  process.stdout.write = ((chunk: string | Uint8Array) => {
    text += chunk.toString();
    return true;
  }) as typeof process.stdout.write;
  try {
    await fn();
  } finally {
    process.stdout.write = write;
  }
  return text;
}
