import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { eq } from 'drizzle-orm';
import pg from 'pg';
import sasl from 'pg/lib/crypto/sasl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { tickets } from '../../src/db/schema.ts';
import { serveEmbeddedDatabase, type EmbeddedDatabaseServer } from '../../src/db/sqlSocket.ts';
import { freshPglite, type TestDatabase } from '../helpers/db.ts';

// psql runs as a child process: a synchronous exec would block the event loop that serves it.
const execFileAsync = promisify(execFile);

const NOW = '2024-05-01T10:20:30.123456Z';
/** Every connection authenticates (see sql-socket-auth.test.ts). */
const PASSWORD = 'socket-test-password';

function psql(port: number, command: string): Promise<string> {
  return execFileAsync('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-XAtc', command], {
    env: { ...process.env, PGCONNECT_TIMEOUT: '10', PGPASSWORD: PASSWORD },
  }).then((r) => r.stdout.trim());
}

async function client(port: number): Promise<pg.Client> {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', password: PASSWORD });
  c.on('error', () => {});
  await c.connect();
  return c;
}

/** Waits for a condition by yielding to the event loop, never on the clock. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100_000; i++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition never became true');
}

function track<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false;
  const tracked = promise.finally(() => {
    settled = true;
  });
  return { promise: tracked, settled: () => settled };
}

const daemonCount = async (db: EmbeddedDatabaseServer['db'], like = '%') =>
  (await queryRows<{ n: number }>(db, sql`select count(*)::int as n from tickets where id like ${like}`))[0]!.n;

describe('SQL socket of the embedded database', () => {
  let database: TestDatabase;
  let server: EmbeddedDatabaseServer;
  let a: pg.Client;
  let b: pg.Client;

  beforeAll(async () => {
    database = await freshPglite();
    server = await serveEmbeddedDatabase(database, { port: 0, password: PASSWORD });
    a = await client(server.port);
    b = await client(server.port);
  });
  afterAll(async () => {
    await a?.end().catch(() => {});
    await b?.end().catch(() => {});
    await server?.close();
    await database?.destroy();
  });

  it('serves psql and pg clients while the daemon writes', async () => {
    expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/postgres`);
    const writes = (async () => {
      for (let i = 0; i < 40; i++) {
        await server.db.insert(tickets).values({ id: `w${String(i).padStart(2, '0')}`, firstSeenAt: NOW, lastSeenAt: NOW, createdAt: NOW });
      }
    })();
    const seen: number[] = [];
    const reads = (async () => {
      for (let i = 0; i < 20; i++) {
        const [x, y] = await Promise.all([
          a.query(`select count(*)::int as n from tickets where id like 'w%'`),
          b.query('select count(*)::int as n from tickets where id like $1', ['w%']),
        ]);
        seen.push(x.rows[0].n, y.rows[0].n);
      }
    })();
    const fromPsql = psql(server.port, `select count(*) from tickets where id like 'w%'`);
    await Promise.all([writes, reads]);
    expect(Number(await fromPsql)).toBeGreaterThanOrEqual(0);
    expect(Number(await fromPsql)).toBeLessThanOrEqual(40);
    expect(seen.every((n) => n >= 0 && n <= 40)).toBe(true);
    // Counts only grow: every reader sees a prefix of the daemon's committed inserts.
    expect(await psql(server.port, `select count(*) from tickets where id like 'w%'`)).toBe('40');
    expect((await b.query(`select count(*)::int as n from tickets where id like 'w%'`)).rows[0].n).toBe(40);
    expect(await psql(server.port, 'select current_database()')).toBe('postgres');
  });

  it("keeps a client's open transaction from the daemon: its reads do not see it, its write waits", async () => {
    await a.query('begin');
    await a.query(`insert into tickets (id, first_seen_at, last_seen_at) values ('c1', now(), now())`);
    expect(server.stats().holder).toBe('client');

    const daemonWrite = track(server.db.insert(tickets).values({ id: 'd1', firstSeenAt: NOW, lastSeenAt: NOW }));
    const daemonRead = track(daemonCount(server.db, 'c1'));
    await until(() => server.stats().waiting >= 2);
    // Had the daemon's insert interleaved, it would have run inside this very transaction (one shared session).
    expect((await a.query(`select id from tickets where id in ('c1', 'd1') order by id`)).rows).toEqual([{ id: 'c1' }]);
    // Another client waits too, behind the daemon.
    const other = track(b.query(`select count(*)::int as n from tickets where id in ('c1', 'd1')`));
    await until(() => server.stats().waiting >= 3);
    expect(daemonWrite.settled() || daemonRead.settled() || other.settled()).toBe(false);

    await a.query('rollback');
    await daemonWrite.promise;
    // Had the read interleaved, it would have counted the uncommitted c1.
    expect(await daemonRead.promise).toBe(0);
    expect((await other.promise).rows[0].n).toBe(1); // d1 only
    expect(server.stats()).toMatchObject({ waiting: 0, holder: null });
  });

  it("keeps clients out of the daemon's transaction", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inside = false;
    const daemonTx = track(
      server.db.transaction(async (tx) => {
        await tx.insert(tickets).values({ id: 'tx1', firstSeenAt: NOW, lastSeenAt: NOW });
        inside = true;
        await gate;
        tx.rollback();
      }),
    );
    await until(() => inside);
    const fromClient = track(a.query(`select count(*)::int as n from tickets where id = 'tx1'`));
    await until(() => server.stats().waiting >= 1);
    expect(fromClient.settled()).toBe(false);
    release();
    await expect(daemonTx.promise).rejects.toThrow();
    // Had the client's query run inside the daemon's transaction, it would have counted tx1.
    expect((await fromClient.promise).rows[0].n).toBe(0);
  });

  it("a client's SET search_path, time zone or read-only default does not break the daemon's next query", async () => {
    await server.db.insert(tickets).values({ id: 's1', firstSeenAt: NOW, lastSeenAt: NOW, createdAt: NOW });
    await a.query(`set search_path to nowhere`);
    await a.query(`set time zone 'America/New_York'`);
    await a.query('set default_transaction_read_only = on');
    // The session is shared: the client's own next query no longer finds the table.
    await expect(a.query('select count(*) from tickets')).rejects.toThrow(/does not exist/);

    const [row] = await server.db.select({ createdAt: tickets.createdAt }).from(tickets).where(eq(tickets.id, 's1'));
    expect(row!.createdAt).toBe('2024-05-01 10:20:30.123456+00');
    await server.db.update(tickets).set({ name: 'written' }).where(eq(tickets.id, 's1'));
    // …and the daemon's settings are what clients see after its turn.
    expect((await a.query(`select name, current_setting('TimeZone') as tz from tickets where id = 's1'`)).rows).toEqual([
      { name: 'written', tz: 'UTC' },
    ]);
  });

  it('holds the session for a client between Parse and Sync (an extended-query cycle)', async () => {
    const raw = await RawClient.open(server.port);
    raw.send(message('P', cstring(''), cstring(`select count(*)::int::text from tickets where id = 'x1'`), int16(0)), message('H'));
    await raw.waitFor('1'); // ParseComplete
    const daemonWrite = track(server.db.insert(tickets).values({ id: 'x1', firstSeenAt: NOW, lastSeenAt: NOW }));
    raw.send(message('B', cstring(''), cstring(''), int16(0), int16(0), int16(0)), message('E', cstring(''), int32(0)), message('H'));
    const dataRow = await raw.waitFor('D');
    // Count 0: the daemon's insert did not slip in between Parse and Execute.
    expect(dataRow.subarray(6).toString()).toBe('0');
    expect(daemonWrite.settled()).toBe(false);
    raw.send(message('S'));
    await raw.waitFor('Z');
    await daemonWrite.promise;
    expect(await daemonCount(server.db, 'x1')).toBe(1);
    raw.end();
  });

  it('refuses a message PostgreSQL does not have with FATAL 08P01, never handing it to PGlite (which loops on it forever)', async () => {
    // PGlite answers such a message with FATAL "protocol synchronization was lost" over and over, without returning, so
    // nothing else in the process would ever run again (this test included): here it is refused before PGlite sees it.
    const pglite = database.pglite!;
    const original = pglite.execProtocolRawStream.bind(pglite);
    const wouldLoop: string[] = [];
    pglite.execProtocolRawStream = (bytes, options) => {
      const type = String.fromCharCode(bytes[0] ?? 0);
      // The startup message (no type byte: its length comes first) and the protocol's own messages go through.
      if (bytes[0] === 0 || ('BCcDdEFfHPQSX'.includes(type) && bytes.length >= 5)) return original(bytes, options);
      wouldLoop.push(type);
      return Promise.reject(new Error(`PGlite would loop on message "${type}"`));
    };
    try {
      // 'z' is no frontend message; 'p' (a password) is one only before authentication; a length below 4 cannot be.
      for (const bytes of [message('z', cstring('x')), message('p', cstring('again')), Buffer.concat([Buffer.from('Q'), int32(2), Buffer.from('s')])]) {
        const raw = await RawClient.open(server.port);
        const output = await raw.untilClosed(bytes);
        expect(output).toMatch(/FATAL.*08P01.*invalid (frontend message type|message length)/s);
        expect(output).not.toMatch(/synchronization was lost/);
        // The daemon's session goes on.
        expect(await daemonCount(server.db, 'none')).toBe(0);
        expect(server.stats()).toMatchObject({ holder: null, waiting: 0 });
      }
      expect(wouldLoop).toEqual([]);
    } finally {
      pglite.execProtocolRawStream = original;
    }
  });

  it("refuses psql's \\copy … from by name, closing that connection: PGlite would stop the daemon over it; \\copy … to works", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tm-copy-'));
    try {
      const rows = join(dir, 'rows.tsv');
      writeFileSync(rows, 'copied\tsome reply text\n');
      const refused = await psql(server.port, `\\copy reply_outbox (ticket_id, message) from '${rows}'`).then(
        () => 'accepted',
        (error: { stderr?: string }) => error.stderr ?? String(error),
      );
      expect(refused).toContain('COPY FROM STDIN');
      expect(refused).toContain('not supported');
      // The daemon's session goes on, nothing was copied, and the next client is served, COPY TO included.
      expect(await queryRows(server.db, sql`select count(*)::int as n from reply_outbox where ticket_id = 'copied'`)).toEqual([{ n: 0 }]);
      expect(server.stats()).toMatchObject({ holder: null, waiting: 0 });
      expect(await psql(server.port, `\\copy (select 'out' as x union all select 'put') to stdout`)).toBe('out\nput');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(["copy (select 1) to program 'id'", "create temp table t (a text); copy t from program 'echo hi'"])(
    'refuses %j by name, closing that connection: PGlite never answered it, and every later query failed',
    async (statement) => {
      const c = await client(server.port);
      const refused = await c.query(statement).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
      await c.end().catch(() => undefined);
      expect(refused).toContain('PROGRAM are not supported');
      // The daemon's session goes on, and the next client is served.
      expect(server.stats()).toMatchObject({ holder: null, waiting: 0 });
      expect(await queryRows(server.db, sql`select 1 as one`)).toEqual([{ one: 1 }]);
      expect(await psql(server.port, `select 'still here'`)).toBe('still here');
    },
  );

  it("rolls back what a client left open when it disconnects", async () => {
    const c = await client(server.port);
    await c.query('begin');
    await c.query(`insert into tickets (id, first_seen_at, last_seen_at) values ('gone', now(), now())`);
    const daemonRead = track(daemonCount(server.db, 'gone'));
    await c.end();
    expect(await daemonRead.promise).toBe(0);
    expect(server.stats().holder).toBe(null);
  });
});

describe('SQL socket limits', () => {
  let database: TestDatabase;
  let server: EmbeddedDatabaseServer;
  beforeAll(async () => {
    database = await freshPglite();
    server = await serveEmbeddedDatabase(database, { port: 0, password: PASSWORD, maxConnections: 1, holdTimeoutMs: 50 });
  });
  afterAll(async () => {
    await server?.close();
    await database?.destroy();
  });

  it('refuses a connection over maxConnections with FATAL 53300', async () => {
    const first = await client(server.port);
    try {
      const error = await client(server.port).then(
        () => null,
        (e: { code?: string }) => e,
      );
      expect(error?.code).toBe('53300');
    } finally {
      await first.end();
    }
  });

  it('disconnects a client idle in a transaction once the daemon has waited holdTimeoutMs, and rolls it back', async () => {
    await until(() => server.stats().connections === 0);
    const c = await client(server.port);
    const ended = new Promise<unknown>((resolve) => c.once('error', resolve));
    await c.query('begin');
    await c.query(`insert into tickets (id, first_seen_at, last_seen_at) values ('idle', now(), now())`);
    // The daemon waits; the idle holder is let go after the timeout, so this resolves without any sleep here.
    expect(await daemonCount(server.db, 'idle')).toBe(0);
    expect(String(await ended)).toMatch(/idle in transaction|terminat|Connection terminated/i);
    await server.close();
    await server.close();
    // The daemon's handle outlives the socket.
    expect(await daemonCount(server.db)).toBe(0);
  });
});

// --- a minimal raw protocol client, to stop in the middle of an extended-query cycle -----------------------------

const int16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const cstring = (s: string) => Buffer.from(`${s}\0`);
function message(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from(type), int32(body.length + 4), body]);
}

class RawClient {
  #buffer = Buffer.alloc(0);
  #messages: Array<{ type: string; body: Buffer }> = [];
  #waiters: Array<() => void> = [];

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      while (this.#buffer.length >= 5 && this.#buffer.length >= 1 + this.#buffer.readInt32BE(1)) {
        const length = this.#buffer.readInt32BE(1);
        this.#messages.push({ type: String.fromCharCode(this.#buffer[0]!), body: this.#buffer.subarray(5, 1 + length) });
        this.#buffer = this.#buffer.subarray(1 + length);
      }
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  static async open(port: number): Promise<RawClient> {
    const socket = connect(port, '127.0.0.1');
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const raw = new RawClient(socket);
    const params = Buffer.concat([cstring('user'), cstring('postgres'), cstring('database'), cstring('postgres'), Buffer.of(0)]);
    socket.write(Buffer.concat([int32(params.length + 8), int32(196608), params]));
    // SCRAM-SHA-256 with node-postgres' own client half, so the server is checked against another implementation.
    expect((await raw.waitFor('R')).readInt32BE(0)).toBe(10); // AuthenticationSASL
    const session = sasl.startSession(['SCRAM-SHA-256']);
    const first = Buffer.from(session.response);
    raw.send(message('p', cstring(session.mechanism), int32(first.length), first));
    const serverFirst = await raw.waitFor('R'); // AuthenticationSASLContinue
    await sasl.continueSession(session, PASSWORD, serverFirst.subarray(4).toString());
    raw.send(message('p', Buffer.from(session.response)));
    const serverFinal = await raw.waitFor('R'); // AuthenticationSASLFinal: the server knows the password too
    sasl.finalizeSession(session, serverFinal.subarray(4).toString());
    await raw.waitFor('Z');
    return raw;
  }

  send(...messages: Buffer[]): void {
    this.socket.write(Buffer.concat(messages));
  }

  /** The body of the next message of `type`, consuming everything before it. */
  async waitFor(type: string): Promise<Buffer> {
    for (;;) {
      const index = this.#messages.findIndex((m) => m.type === type);
      if (index !== -1) return this.#messages.splice(0, index + 1)[index]!.body;
      const errorMessage = this.#messages.find((m) => m.type === 'E');
      if (errorMessage) throw new Error(`backend error: ${errorMessage.body.toString()}`);
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  end(): void {
    this.socket.end(message('X'));
  }

  /** Sends `bytes`, then resolves with everything received (as latin1, unparsed) once the server closes the connection. */
  async untilClosed(bytes: Buffer): Promise<string> {
    const chunks: Buffer[] = [];
    this.socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    this.socket.on('error', () => {}); // a reset of bytes the server left unread is a close too
    const closed = new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
    this.socket.write(bytes);
    await closed;
    return Buffer.concat(chunks).toString('latin1');
  }
}
