import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../clock.ts';
import { ADMIN_PREFIX, adminAnswer } from './admin.ts';
import { createApiHandler, type RequestLogEntry } from './api.ts';
import { FaultInjector } from './faults.ts';
import { send } from './http.ts';
import { SimulatorModel } from './model.ts';
import { RateLimiter } from './rateLimiter.ts';
import { AttachmentSigner, signingSecret } from './signing.ts';
import { createStorageHandler } from './storage.ts';

export interface SimulatorOptions {
  /** Same seed (and same clock start) → identical dataset. @default 1 */
  seed?: number;
  /**
   * All time — timestamps, quota windows, link expiry — comes from it; pass a ManualClock for virtual time.
   * @default systemClock
   */
  clock?: Clock;
  /** The only accepted bearer token. @default 'sim-token' */
  token?: string;
  /** @default 40 */
  openTickets?: number;
  /** @default 120 */
  resolvedTickets?: number;
  /** Requests per minute window. @default 60 */
  minuteLimit?: number;
  /** Requests per rolling 24 h. @default 1440 */
  dailyLimit?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Port of the API origin; 0 picks a free one. @default 0 */
  port?: number;
  /** Port of the storage origin serving attachment files; 0 picks a free one. @default 0 */
  storagePort?: number;
  /** Artificial real-time latency of every API answer. @default 0 */
  latencyMs?: number;
}

export interface RunningSimulator {
  /** The API's base URL; requests go to `${url}/api/v1/...`. */
  url: string;
  /** The separate origin that serves attachment files. */
  storageUrl: string;
  token: string;
  model: SimulatorModel;
  faults: FaultInjector;
  /** Every request the API origin received (control routes excepted), in arrival order. */
  log: RequestLogEntry[];
  /** Stops both origins, dropping open connections; idempotent. */
  close(): Promise<void>;
}

/** A faithful fake of the Support Ticket API over real HTTP: the API origin and a storage origin for attachments. */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<RunningSimulator> {
  const seed = opts.seed ?? 1;
  const clock = opts.clock ?? systemClock;
  const token = opts.token ?? 'sim-token';
  const host = opts.host ?? '127.0.0.1';

  const storageServer = createServer();
  const storageUrl = await listen(storageServer, host, opts.storagePort ?? 0);
  // Attachment links name the storage origin, whose address is known only once it listens.
  const model = new SimulatorModel({
    seed,
    clock,
    openTickets: opts.openTickets,
    resolvedTickets: opts.resolvedTickets,
    signer: new AttachmentSigner(signingSecret(seed), storageUrl),
  });
  storageServer.on('request', createStorageHandler(model, clock));

  const faults = new FaultInjector();
  const log: RequestLogEntry[] = [];
  const limiter = new RateLimiter({ minuteLimit: opts.minuteLimit, dailyLimit: opts.dailyLimit });
  const api = createApiHandler({ model, clock, token, limiter, faults, log, latencyMs: opts.latencyMs ?? 0 });
  const apiServer = createServer((req, res) => {
    const answered = req.url?.startsWith(ADMIN_PREFIX)
      ? adminAnswer({ model, clock, faults, log }, req).then((answer) => send(res, answer))
      : api(req, res);
    // Only a vanished client gets here (e.g. a body that never finished): nobody is left to answer.
    answered.catch(() => res.destroy());
  });
  let url: string;
  try {
    url = await listen(apiServer, host, opts.port ?? 0);
  } catch (error) {
    await stop(storageServer);
    throw error;
  }

  let closing: Promise<void> | undefined;
  const close = () => (closing ??= Promise.all([stop(apiServer), stop(storageServer)]).then(() => undefined));
  return { url, storageUrl, token, model, faults, log, close };
}

/** Listens and returns the origin, e.g. `http://127.0.0.1:43117`. */
function listen(server: Server, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const { port: actual } = server.address() as AddressInfo;
      resolve(`http://${urlHost(host)}:${actual}`);
    });
  });
}

/** A host for URLs: a wildcard address becomes the loopback one (reachable), IPv6 goes in brackets. */
function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

function stop(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Keep-alive connections would otherwise hold close() open for seconds.
    server.closeAllConnections();
  });
}
