import { createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { createLogger } from '../../src/logger.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/runProcess.ts';

/**
 * What a request that failed on the network costs the daily budget, through the real engine, client, gate and ledger:
 * one that never left this host (a real closed port: connection refused) costs nothing — no row in api_requests, no
 * sample in the gate, the attempt in the log — while one that may have reached the server (sent, then no answer before
 * the timeout) is charged like any other.
 */

const LIMITS = { daily: 1440, minute: 60, reserve: 0.1 };

describe.each(backends)('requests that failed on the network, on $name', { timeout: 60_000 }, ({ open }) => {
  let database: TestDatabase;
  let server: Server | undefined;
  const sockets: Socket[] = [];
  let log: string;

  beforeEach(async () => {
    database = await open();
    log = '';
  });
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((done) => (server ? server.close(done) : done(undefined)));
    server = undefined;
    await database.destroy();
  });

  const engineAt = (apiUrl: string) =>
    new SyncEngine({
      db: database.db,
      apiUrl,
      apiToken: 'token-of-the-test',
      clock: systemClock,
      limits: LIMITS,
      logger: createLogger(
        'info',
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            log += chunk.toString();
            done();
          },
        }),
      ),
      // The client's back-off between attempts, skipped: what is counted matters here, not when.
      sleep: async () => {},
      timeoutMs: 300,
    });

  const ledger = async () =>
    (await queryRows<{ n: number; unsettled: number }>(database.db, sql`select count(*)::int as n, count(*) filter (where status is null)::int as unsettled from api_requests`))[0]!;

  it('a refused connection is not charged: the ledger and the gate count 0, the log tells of each attempt', async () => {
    const closed = await freePort();
    const engine = engineAt(`http://127.0.0.1:${closed}`);
    const summary = await engine.pass();
    expect(summary.stoppedBy).toBe('server_error');
    expect(summary.errors.join(' ')).toContain('ECONNREFUSED');
    expect(summary.requests).toBe(0);
    expect(await ledger()).toEqual({ n: 0, unsettled: 0 });
    expect(engine.gate.snapshot().dailyUsed).toBe(0);
    expect(engine.gate.snapshot().minuteUsed).toBe(0);
    // The attempts are not silent: each says it was not counted, and why.
    const attempts = log.split('\n').filter((l) => l.includes('not counted against the budget'));
    expect(attempts.length).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(attempts[0]!)).toMatchObject({ level: 40, code: 'ECONNREFUSED', method: 'GET' });
    // A fresh engine (a restart) reads the same empty ledger.
    const restarted = engineAt(`http://127.0.0.1:${closed}`);
    await restarted.init();
    expect(restarted.gate.snapshot().dailyUsed).toBe(0);
  });

  it('a request sent and then left without an answer until the timeout is charged, in the ledger and the gate', async () => {
    // Accepts the connection and reads the request, never answers.
    server = createServer((socket) => {
      sockets.push(socket);
      socket.on('data', () => {});
    });
    const port = await freePort();
    await new Promise<void>((done) => server!.listen(port, '127.0.0.1', done));
    const engine = engineAt(`http://127.0.0.1:${port}`);
    const summary = await engine.pass();
    expect(summary.stoppedBy).toBe('server_error');
    expect(summary.requests).toBeGreaterThanOrEqual(1);
    const rows = await ledger();
    expect(rows.n).toBe(summary.requests);
    expect(rows.unsettled).toBe(summary.requests);
    expect(engine.gate.snapshot().dailyUsed).toBe(summary.requests);
    expect(log).not.toContain('not counted against the budget');
    const restarted = engineAt(`http://127.0.0.1:${port}`);
    await restarted.init();
    expect(restarted.gate.snapshot().dailyUsed).toBe(summary.requests);
  });
});
