import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/connect.ts';
import { startFleetHttpServer, type FleetHttpServer } from '../../src/fleet/httpServer.ts';
import type { FleetWorker } from '../../src/fleet/worker.ts';
import { createLogger } from '../../src/logger.ts';

/**
 * `fleet run`'s HTTP server against request targets a hostile client may send: each gets a clear 4xx, the server keeps
 * answering, and a route sees only a parsed path and query. (No database: none of these reach /readyz.)
 */

/** Sends `target` verbatim (fetch would normalise it) and returns the status line's code. */
function rawGet(port: number, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
    socket.on('error', reject);
  });
}

describe("fleet run's HTTP server and hostile request targets", () => {
  let server: FleetHttpServer;
  const seen: string[] = [];
  beforeAll(async () => {
    const worker = { workerId: 'w', concurrency: 1, accounts: () => [] } as unknown as FleetWorker;
    server = await startFleetHttpServer({
      host: '127.0.0.1',
      port: 0,
      worker,
      db: {} as Db,
      logger: createLogger('silent'),
      routes: {
        '/echo': async (_req, url) => {
          seen.push(`${url.pathname}?${url.searchParams.toString()}`);
          return { status: 200, type: 'text/plain', body: 'ok\n' };
        },
      },
    });
  });
  afterAll(() => server.close());

  it.each([
    ['//', 404],
    ['//evil.example/healthz', 404],
    ['*', 400],
    ['evil.example:443', 400],
    ['http://[::1', 400],
    ['/%zz', 404],
  ])('GET %s answers %i, not 500', async (target, status) => {
    expect(await rawGet(server.port, target)).toBe(status);
    expect(await rawGet(server.port, '/healthz')).toBe(200);
  });

  it('requests pipelined by the hundred: a few reach the routes, the rest are answered 503 busy', async () => {
    const before = seen.length;
    const n = 300;
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(server.port, '127.0.0.1', () =>
        socket.write(`${'GET /echo?p=1 HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(n - 1)}GET /echo?p=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
      );
      let out = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (out += chunk));
      socket.on('close', () => resolve(out));
      socket.on('error', reject);
    });
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    expect(statuses.filter((s) => s === 200).length).toBe(seen.length - before);
    expect(seen.length - before).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(50);
    expect(await rawGet(server.port, '/healthz')).toBe(200);
    seen.splice(before);
  });

  it('a route gets the path and the query of an absolute-form or origin-form target', async () => {
    expect(await rawGet(server.port, '/echo?a=1&b=%zz')).toBe(200);
    expect(await rawGet(server.port, 'http://x/echo?c=2')).toBe(200);
    expect(seen).toEqual(['/echo?a=1&b=%25zz', '/echo?c=2']);
  });
});

describe("fleet run's HTTP server and slow clients", () => {
  it('lets a trickled request head go at the head timeout, and closes connections beyond its limit unanswered', async () => {
    const worker = { workerId: 'w', concurrency: 1, accounts: () => [] } as unknown as FleetWorker;
    const server = await startFleetHttpServer({
      host: '127.0.0.1',
      port: 0,
      worker,
      db: {} as Db,
      logger: createLogger('silent'),
      limits: { maxConnections: 1, headersTimeoutMs: 300, requestTimeoutMs: 400, checkEveryMs: 50 },
    });
    try {
      const open = (bytes: string) =>
        new Promise<{ ended: Promise<string> }>((resolve) => {
          let text = '';
          const socket = connect(server.port, '127.0.0.1', () => {
            socket.write(bytes);
            resolve({ ended });
          });
          socket.setEncoding('latin1');
          socket.on('data', (chunk: string) => (text += chunk));
          socket.on('error', () => {});
          const ended = new Promise<string>((done) => socket.once('close', () => done(text)));
        });
      const trickler = await open('GET /healthz HTTP/1.1\r\nHost: x\r\n');
      const beyond = await open('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(await beyond.ended).toBe('');
      expect(await trickler.ended).toMatch(/^(HTTP\/1\.1 408 [\s\S]*)?$/);
      // Its one connection free again, the server answers.
      expect(await rawGet(server.port, '/healthz')).toBe(200);
    } finally {
      await server.close();
    }
  });
});
