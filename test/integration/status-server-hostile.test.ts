import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import type { HttpLimits } from '../../src/daemon/httpLimits.ts';
import { startService, type Service } from '../../src/daemon/service.ts';
import { createLogger } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { freshPglite, type TestDatabase } from '../helpers/db.ts';
import { freePort, get, startRun, waitUntil, type RunProcess } from '../helpers/runProcess.ts';

/**
 * Whatever arrives on the status server's port — a request target `new URL` refuses, a header far too large, a TLS
 * handshake on the plain port, a method it does not serve — gets an HTTP answer or a closed socket, and the server
 * (and the process) go on answering /healthz.
 */

/** Writes `bytes` on a fresh connection and resolves with everything the server sent before it closed. */
async function exchange(port: number, bytes: string | Buffer): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  let failure: Error | undefined;
  // A reset is a closed socket too: a server that closes with bytes of ours unread makes the kernel send one.
  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'ECONNRESET') failure = error;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await once(socket, 'connect');
  socket.write(bytes);
  // The answer says `Connection: close` (or the server gives up on the bytes), so the server ends the connection.
  socket.setTimeout(10_000, () => socket.destroy(new Error('the server neither answered nor closed within 10 s')));
  await closed;
  if (failure) throw failure;
  return Buffer.concat(chunks).toString('latin1');
}

const statusLine = (answer: string) => answer.split('\r\n', 1)[0];

/** The first bytes of a TLS 1.2 ClientHello, as a browser sends them to https://host:9464. */
const CLIENT_HELLO = Buffer.from(
  '16030100a5010000a10303' + '00'.repeat(32) + '000020c02bc02fc02cc030cca9cca8c009c013c00ac014009c009d002f0035c012000a0100005800000014',
  'hex',
);

const HOSTILE: Array<{ what: string; bytes: string | Buffer; answer: RegExp }> = [
  { what: 'GET //', bytes: 'GET // HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', answer: /^HTTP\/1\.1 404 / },
  { what: 'a port new URL refuses', bytes: 'GET //:99999/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', answer: /^HTTP\/1\.1 404 / },
  { what: 'an unclosed IPv6 authority', bytes: 'GET //[::1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', answer: /^HTTP\/1\.1 404 / },
  { what: 'user info in the target', bytes: 'GET //a@b:c/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', answer: /^HTTP\/1\.1 404 / },
  { what: 'a broken absolute-form target', bytes: 'GET http://[/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', answer: /^HTTP\/1\.1 400 / },
  { what: 'the asterisk form', bytes: 'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', answer: /^HTTP\/1\.1 400 / },
  // 431, or a reset that overtakes it (Node 26 closes at once, with most of the 100 kB still unread).
  { what: 'a 100 kB header', bytes: `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`, answer: /^(HTTP\/1\.1 431 .*)?$/ },
  { what: 'TLS bytes on the plain port', bytes: CLIENT_HELLO, answer: /^(HTTP\/1\.1 400 .*)?$/ },
  { what: 'a method nobody knows', bytes: 'BREW /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', answer: /^HTTP\/1\.1 400 / },
  { what: 'POST with a body', bytes: 'POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello', answer: /^HTTP\/1\.1 405 / },
  { what: 'PUT where nothing is', bytes: 'PUT /nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n', answer: /^HTTP\/1\.1 404 / },
  { what: 'DELETE on the status page', bytes: 'DELETE /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', answer: /^HTTP\/1\.1 405 / },
  { what: 'garbage', bytes: Buffer.from([0, 1, 2, 255, 254, 13, 10, 13, 10]), answer: /^(HTTP\/1\.1 400 .*)?$/ },
];

describe('the status server under hostile input', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  let service: Service;
  let port: number;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 52, openTickets: 2, resolvedTickets: 2 });
    database = await freshPglite();
    const config = loadConfig(
      { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, HTTP_PORT: String(await freePort()), PGLITE_PORT: '0' },
      { dotenv: false },
    );
    service = await startService({ config, database, logger: createLogger('silent'), clock: systemClock });
    port = service.http!.port;
  });
  afterAll(async () => {
    await service?.stop();
    await sim?.close();
    await database?.destroy();
  });

  it.each(HOSTILE)('answers $what with an HTTP error or a closed socket, and /healthz still answers', async ({ bytes, answer }) => {
    expect(statusLine(await exchange(port, bytes))).toMatch(answer);
    const healthz = await fetch(`${service.http!.url}/healthz`);
    expect([healthz.status, await healthz.text()]).toEqual([200, 'ok\n']);
  });

  it('a thousand requests pipelined on one connection: a few read the database, the rest are told to come back', async () => {
    const n = 1_000;
    const pipelined = `${'GET /report HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(n - 1)}GET /report HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;
    const answer = exchange(port, pipelined);
    // Meanwhile the probes answer: they wait for no report.
    const healthz = await fetch(`${service.http!.url}/healthz`);
    expect(healthz.status).toBe(200);
    const statuses = [...(await answer).matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    const ok = statuses.filter((s) => s === 200).length;
    // At most the server's maxRequestsPerSocket (100) are answered by a route; of those, those beyond the 2 read at once
    // and the 8 waiting get 503 "busy" at once; Node answers those beyond the 100 with 503 itself.
    expect(ok).toBeGreaterThan(0);
    expect(ok).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(50);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
  });

  it('serves the absolute form of a good target', async () => {
    const answer = await exchange(port, `GET http://127.0.0.1:${port}/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(statusLine(answer)).toBe('HTTP/1.1 200 OK');
    expect(answer).toMatch(/\r\n\r\n(3\r\n)?ok\n/); // chunked or not
  });
});

/** A service on the embedded database with the given HTTP limits; its log lines kept. */
async function limitedService(seed: number, httpLimits: Partial<HttpLimits>) {
  const sim = await startSimulator({ seed, openTickets: 2, resolvedTickets: 2 });
  const database = await freshPglite();
  const lines: Array<{ msg: string; dropped?: number }> = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
  const config = loadConfig(
    { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, HTTP_PORT: String(await freePort()), PGLITE_PORT: '0' },
    { dotenv: false },
  );
  const service = await startService({ config, database, logger, clock: systemClock, httpLimits });
  return {
    service,
    port: service.http!.port,
    lines,
    async close() {
      await service.stop();
      await sim.close();
      await database.destroy();
    },
  };
}

/** A connection that is open (connected), and a promise of its end with whatever the server sent; errors are ends. */
async function hold(port: number, bytes?: string): Promise<{ socket: Socket; ended: Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  const ended = new Promise<string>((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1'))));
  await once(socket, 'connect');
  if (bytes) socket.write(bytes);
  return { socket, ended };
}

/** `promise`, or a failure naming `what` after 10 s (Node's own limits would hold these connections for 60 s or ever). */
function within10s<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: still open after 10 s`)), 10_000))),
  ]).finally(() => clearTimeout(timer));
}

describe('slow clients on the status server (slowloris)', { timeout: 120_000 }, () => {
  it('one that trickles its request head, or sends nothing, is let go at the head timeout; /healthz answers meanwhile', async () => {
    const s = await limitedService(54, { headersTimeoutMs: 400, requestTimeoutMs: 500, idleTimeoutMs: 600, checkEveryMs: 50 });
    try {
      const trickler = await hold(s.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n');
      const silent = await hold(s.port);
      const idleAfterAnswer = await hold(s.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      const healthz = await fetch(`${s.service.http!.url}/healthz`);
      expect([healthz.status, await healthz.text()]).toEqual([200, 'ok\n']);
      // The trickler is told why (408), or simply closed.
      expect(statusLine(await within10s('a trickled head', trickler.ended))).toMatch(/^(HTTP\/1\.1 408 .*)?$/);
      expect(statusLine(await within10s('a connection that sent nothing', silent.ended))).toMatch(/^(HTTP\/1\.1 408 .*)?$/);
      // Answered, then kept alive and never used again: closed at the idle timeout.
      expect(statusLine(await within10s('a kept-alive connection left idle', idleAfterAnswer.ended))).toBe('HTTP/1.1 200 OK');
      expect((await fetch(`${s.service.http!.url}/healthz`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('more connections than allowed: the next ones are closed unanswered, logged once, and the port serves again once some go', async () => {
    const s = await limitedService(55, { maxConnections: 4 });
    try {
      const held = [];
      for (let i = 0; i < 4; i++) held.push(await hold(s.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n'));
      const turnedAway = [];
      for (let i = 0; i < 3; i++) turnedAway.push(await hold(s.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
      for (const t of turnedAway) expect(await within10s('a connection beyond the limit', t.ended)).toBe('');
      for (const h of held) h.socket.destroy();
      await Promise.all(held.map((h) => h.ended));
      const healthz = await within10s('/healthz after the flood', fetch(`${s.service.http!.url}/healthz`));
      expect([healthz.status, await healthz.text()]).toEqual([200, 'ok\n']);
      const flood = s.lines.filter((l) => l.msg.startsWith('HTTP: '));
      expect(flood.map((l) => l.msg)).toEqual(['HTTP: too many connections open; new ones are closed until some go', 'HTTP: accepting connections again']);
      expect(flood[1]!.dropped).toBe(3);
    } finally {
      await s.close();
    }
  });
});

describe('run under a request that used to kill it', { timeout: 120_000 }, () => {
  let sim: RunningSimulator;
  let run: RunProcess | undefined;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 53, openTickets: 2, resolvedTickets: 2 });
  });
  afterAll(async () => {
    await run?.dispose();
    await sim?.close();
  });

  it('answers GET // with 404 and goes on running and answering /healthz', async () => {
    const httpPort = await freePort();
    run = startRun({ TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_PORT: '0', HTTP_PORT: String(httpPort), LOG_LEVEL: 'info' });
    const r = run;
    await waitUntil('the status server answers', async () => (await get(`${r.httpUrl}/healthz`))?.status === 200, 60_000, r);
    for (const target of ['//', '//:99999/x', 'http://[/']) {
      expect(statusLine(await exchange(httpPort, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`))).toMatch(/^HTTP\/1\.1 40[04] /);
    }
    expect(await get(`${r.httpUrl}/healthz`)).toEqual({ status: 200, body: 'ok\n' });
    expect(r.child.exitCode).toBeNull();
    expect(r.output()).not.toContain('Invalid URL');
  }, 100_000);
});

describe("the simulator's storage origin (served inside the `demo` process)", () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 54, openTickets: 1, resolvedTickets: 0 });
  });
  afterAll(async () => sim?.close());

  it('answers a target new URL refuses with 400 and goes on serving', async () => {
    const port = Number(new URL(sim.storageUrl).port);
    expect(statusLine(await exchange(port, 'GET // HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))).toBe('HTTP/1.1 400 Bad Request');
    expect((await fetch(`${sim.storageUrl}/files/x/y`)).status).toBe(403);
  });
});
