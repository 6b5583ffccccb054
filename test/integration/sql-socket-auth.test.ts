import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql } from '../../src/db/connect.ts';
import { socketPassword } from '../../src/db/socketPassword.ts';
import { serveEmbeddedDatabase, type EmbeddedDatabaseServer } from '../../src/db/sqlSocket.ts';
import { freshPglite, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/runProcess.ts';

/**
 * The embedded database's SQL socket gives PGlite's superuser session to whoever connects, so it asks for a password
 * first (SCRAM-SHA-256): the one in PGLITE_PASSWORD, or one generated once and kept in PGLITE_DIR/sql-password, mode
 * 0600. Before, any local user could connect without one, read everything and insert into reply_outbox.
 */

const execFileAsync = promisify(execFile);

async function connectPg(port: number, password: string | undefined): Promise<pg.Client> {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', password });
  c.on('error', () => {});
  await c.connect();
  return c;
}

/** The error a connection attempt ends with (null when it connects). */
async function refusal(port: number, password: string | undefined): Promise<{ code?: string; message: string } | null> {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', password });
  c.on('error', () => {});
  try {
    await c.connect();
    await c.end();
    return null;
  } catch (error) {
    await c.end().catch(() => {});
    return error as { code?: string; message: string };
  }
}

function psql(port: number, password: string | undefined): Promise<string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), PGCONNECT_TIMEOUT: '5' };
  if (password !== undefined) env.PGPASSWORD = password;
  // -w: never prompt; a missing password is an error at once.
  return execFileAsync('psql', ['-w', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-XAtc', 'select 42'], { env }).then((r) =>
    r.stdout.trim(),
  );
}

const cstring = (s: string) => Buffer.from(`${s}\0`);
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const startupMessage = () => {
  const params = Buffer.concat([cstring('user'), cstring('postgres'), cstring('database'), cstring('postgres'), Buffer.of(0)]);
  return Buffer.concat([int32(params.length + 8), int32(196608), params]);
};
const query = (text: string) => Buffer.concat([Buffer.from('Q'), int32(4 + Buffer.byteLength(text) + 1), cstring(text)]);

/**
 * Writes `bytes` and resolves with everything received until the server closes the connection; a reset counts as a
 * close (a server that closes with bytes of ours unread makes the kernel send one).
 */
async function untilClosed(socket: Socket, bytes?: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  let failure: Error | undefined;
  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') failure = error;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  if (socket.connecting) await once(socket, 'connect');
  if (bytes) socket.write(bytes);
  await closed;
  if (failure) throw failure;
  return Buffer.concat(chunks);
}

/** The SQLSTATE of the first ErrorResponse in a backend's output. */
function sqlState(output: Buffer): string | null {
  for (let i = 0; i + 5 <= output.length; i += 1 + output.readInt32BE(i + 1)) {
    if (output[i] !== 0x45) continue; // 'E'
    const fields = output.subarray(i + 5, i + 1 + output.readInt32BE(i + 1)).toString('utf8').split('\0');
    return fields.find((f) => f.startsWith('C'))?.slice(1) ?? null;
  }
  return null;
}

/** Waits for a condition by yielding to the event loop, never on the clock. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100_000; i++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition never became true');
}

/**
 * A password message that announces 1 GB, then 256 kB of it, before any password: resolves with what the server sent
 * once it closed the connection (it stops listening long before the end).
 */
async function floodBeforeAuth(port: number): Promise<Buffer> {
  const socket = connect(port, '127.0.0.1');
  const output = untilClosed(socket);
  await once(socket, 'connect');
  socket.write(Buffer.concat([startupMessage(), Buffer.from('p'), int32(1_000_000_000)]));
  for (let i = 0; i < 16 && !socket.destroyed; i++) socket.write(Buffer.alloc(16 * 1024, 0x61));
  return output;
}

describe('the SQL socket asks for the password', () => {
  let database: TestDatabase & { dir: string };
  let server: EmbeddedDatabaseServer;
  let password: string;

  beforeAll(async () => {
    database = await freshPglite();
    password = socketPassword({ configured: undefined, pgliteDir: database.dir }).password;
    server = await serveEmbeddedDatabase(database, { port: 0, password });
  });
  afterAll(async () => {
    await server?.close();
    await database?.destroy();
  });

  it('lets pg in with the right password', async () => {
    const c = await connectPg(server.port, password);
    expect((await c.query('select current_user as u')).rows).toEqual([{ u: 'postgres' }]);
    await c.end();
  });

  it('refuses a wrong password with FATAL 28P01', async () => {
    expect(await refusal(server.port, 'not-the-password')).toMatchObject({ code: '28P01', message: 'password authentication failed for user "postgres"' });
  });

  it('refuses a client without a password (pg and psql give up when asked for one)', async () => {
    expect((await refusal(server.port, undefined))?.message).toMatch(/password/);
    await expect(psql(server.port, undefined)).rejects.toThrow(/no password supplied/);
  });

  it('serves psql with PGPASSWORD, and refuses it a wrong one', async () => {
    expect(await psql(server.port, password)).toBe('42');
    await expect(psql(server.port, 'not-the-password')).rejects.toThrow(/password authentication failed for user "postgres"/);
  });

  it('never runs what a client sends instead of the password (FATAL 08P01, then the connection closes)', async () => {
    const output = await untilClosed(connect(server.port, '127.0.0.1'), Buffer.concat([startupMessage(), query('create table pwned (x int)')]));
    expect(output.subarray(0, 1).toString()).toBe('R'); // AuthenticationSASL, the one thing said before the refusal
    expect(sqlState(output)).toBe('08P01');
    const [row] = await queryRows<{ n: number }>(server.db, sql`select count(*)::int as n from pg_class where relname = 'pwned'`);
    expect(row!.n).toBe(0);
  });

  it('refuses bytes that are not a startup message', async () => {
    const output = await untilClosed(connect(server.port, '127.0.0.1'), query('select 1'));
    expect(sqlState(output)).toBe('08P01');
  });

  it('closes a connection that sends more than a password exchange needs before authenticating', async () => {
    // Patient about time (an hour), so only the size limit can close this connection within the test's time limit.
    const patient = await serveEmbeddedDatabase(database, { port: 0, password, authTimeoutMs: 3_600_000 });
    try {
      // Closed by the server (its FATAL 08P01 may be overtaken by the reset of the bytes it left unread).
      expect([null, '08P01']).toContain(sqlState(await floodBeforeAuth(patient.port)));
      await until(() => patient.stats().connections === 0);
    } finally {
      await patient.close();
    }
  });

  it('ends an authenticated connection whose message is longer than maxMessageBytes, and serves the others', async () => {
    const small = await serveEmbeddedDatabase(database, { port: 0, password, maxMessageBytes: 64 * 1024 });
    const other = await connectPg(small.port, password);
    const big = await connectPg(small.port, password);
    big.on('error', () => {});
    try {
      // Under the limit: served as ever.
      const fits = `select '${'x'.repeat(60 * 1024)}' as s`;
      expect((await big.query(fits)).rows[0].s).toHaveLength(60 * 1024);
      // Over it (declared in the header: the server does not wait for the body), the connection ends with 54000.
      const failure = await big.query(`select '${'x'.repeat(200 * 1024)}' as s`).then(
        () => null,
        (error: unknown) => error as { code?: string; message: string },
      );
      // The FATAL, or (its bytes overtaken by the reset of the body the server left unread) the connection's end.
      if (failure?.code === '54000') {
        expect(failure.message).toMatch(/longer than the embedded database's SQL socket takes \(65536\)/);
      } else {
        expect(failure?.message).toMatch(/Connection terminated|ECONNRESET|EPIPE/);
      }
      await until(() => small.stats().connections === 1);
      expect((await other.query('select 3 as n')).rows).toEqual([{ n: 3 }]);
    } finally {
      await other.end();
      await big.end().catch(() => {});
      await small.close();
    }
  });

  it('closes such a connection at once while another client holds the session, taking no more of its bytes', async () => {
    const patient = await serveEmbeddedDatabase(database, { port: 0, password, authTimeoutMs: 3_600_000 });
    const holder = await connectPg(patient.port, password);
    try {
      // The session is this client's until it commits: the flood's handler cannot detach before then.
      await holder.query('begin');
      await holder.query('select 1');
      // Closed while the holder still holds (before, it waited for the session and took every byte meanwhile).
      expect([null, '08P01']).toContain(sqlState(await floodBeforeAuth(patient.port)));
      expect((await holder.query('select 2 as n')).rows).toEqual([{ n: 2 }]);
      await holder.query('commit');
      await until(() => patient.stats().connections === 1);
    } finally {
      await holder.end();
      await patient.close();
    }
  });

  it('closes a connection that does not authenticate within authTimeoutMs', async () => {
    const impatient = await serveEmbeddedDatabase(database, { port: 0, password, authTimeoutMs: 100 });
    try {
      // The server's own timer ends this wait: the client sends its startup message and then nothing.
      const output = await untilClosed(connect(impatient.port, '127.0.0.1'), startupMessage());
      expect(sqlState(output)).toBe('57014');
    } finally {
      await impatient.close();
    }
  });
});

describe('the password file', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tm-socket-password-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is made once, readable by its owner alone, and the same password after a restart', async () => {
    const pgliteDir = join(dir, 'data', 'pglite');
    const first = await openDatabase({ pgliteDir });
    await first.migrate();
    // The data folder itself is its owner's alone, as PostgreSQL requires of a data directory.
    expect(statSync(pgliteDir).mode & 0o777).toBe(0o700);
    const made = socketPassword({ configured: undefined, pgliteDir });
    expect(made).toMatchObject({ from: 'file', file: join(pgliteDir, 'sql-password') });
    expect(statSync(join(pgliteDir, 'sql-password')).mode & 0o777).toBe(0o600);
    expect(made.password).toMatch(/^[\w-]{32}$/);
    let server = await serveEmbeddedDatabase(first, { port: 0, password: made.password });
    await (await connectPg(server.port, made.password)).end();
    await server.close();
    await first.close();

    // A restart: the same folder, the same password; BI tools keep their saved connections.
    const again = await openDatabase({ pgliteDir });
    const kept = socketPassword({ configured: undefined, pgliteDir });
    expect(kept.password).toBe(made.password);
    server = await serveEmbeddedDatabase(again, { port: 0, password: kept.password });
    try {
      const c = await connectPg(server.port, made.password);
      expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
      await c.end();
    } finally {
      await server.close();
      await again.close();
    }
    expect(statSync(join(pgliteDir, 'sql-password')).mode & 0o777).toBe(0o600);

    // `status` says how to connect: the psql line names the file, and the password itself is printed nowhere.
    const status = await runCli(['status'], { PGLITE_DIR: pgliteDir, LOG_LEVEL: 'info' }, dir);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`sql       PGPASSWORD="$(cat ${pgliteDir}/sql-password)" psql -h 127.0.0.1 -p 5433 -U postgres -d postgres`);
    expect(status.stdout + status.stderr).not.toContain(made.password);
    const json = await runCli(['status', '--json'], { PGLITE_DIR: pgliteDir, PGLITE_PASSWORD: 'from-the-environment' }, dir);
    expect(JSON.parse(json.stdout).sql).toEqual({
      host: '127.0.0.1',
      port: 5433,
      user: 'postgres',
      database: 'postgres',
      passwordVariable: 'PGLITE_PASSWORD',
      psql: 'PGPASSWORD="$PGLITE_PASSWORD" psql -h 127.0.0.1 -p 5433 -U postgres -d postgres',
    });
    expect(json.stdout + json.stderr).not.toContain('from-the-environment');
  }, 120_000);

  it('narrows a file that others could read to 0600, and keeps its password', () => {
    const pgliteDir = mkdtempSync(join(dir, 'loose-'));
    writeFileSync(join(pgliteDir, 'sql-password'), 'a-password-set-by-hand\n', { mode: 0o644 });
    chmodSync(join(pgliteDir, 'sql-password'), 0o644);
    expect(socketPassword({ configured: undefined, pgliteDir }).password).toBe('a-password-set-by-hand');
    expect(statSync(join(pgliteDir, 'sql-password')).mode & 0o777).toBe(0o600);
  });

  it('replaces an empty file with a new password', () => {
    const pgliteDir = mkdtempSync(join(dir, 'empty-'));
    writeFileSync(join(pgliteDir, 'sql-password'), '', { mode: 0o600 });
    const made = socketPassword({ configured: undefined, pgliteDir });
    expect(made.password).toMatch(/^[\w-]{32}$/);
    expect(readFileSync(join(pgliteDir, 'sql-password'), 'utf8')).toBe(`${made.password}\n`);
  });

  it('is neither read nor written when PGLITE_PASSWORD is set', () => {
    const pgliteDir = mkdtempSync(join(dir, 'env-'));
    expect(socketPassword({ configured: 'set-in-the-environment', pgliteDir })).toEqual({ password: 'set-in-the-environment', from: 'PGLITE_PASSWORD' });
    expect(existsSync(join(pgliteDir, 'sql-password'))).toBe(false);
  });
});
