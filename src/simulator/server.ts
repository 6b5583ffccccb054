import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../clock.ts';
import { AccountRegistry, appendLog, type AccountSpec, type SimulatorAccount } from './accounts.ts';
import { ADMIN_PREFIX, adminAnswer } from './admin.ts';
import { createApiHandler, type RequestLogEntry, type RequestOwner } from './api.ts';
import type { FaultInjector } from './faults.ts';
import { send } from './http.ts';
import type { SimulatorModel } from './model.ts';
import { createStorageHandler } from './storage.ts';

export interface SimulatorOptions {
  /**
   * Serve these accounts, each with its own token, dataset, limits, faults and log, on the same two origins; each
   * is built on its first request (accounts.ts). Without it, one account from `token` and the options below. With
   * it, `seed` (the first account's; the next ones count up from it), `openTickets`, `resolvedTickets`,
   * `minuteLimit` and `dailyLimit` are what an account gets when its spec does not say.
   */
  accounts?: readonly AccountSpec[];
  /** Keep at least this many (at most twice as many) entries in each account's request log. @default unlimited */
  logLimit?: number;
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
  /** The first account's token (the only one's, without `accounts`). */
  readonly token: string;
  /** The first account's model (built now, if it was not yet). */
  readonly model: SimulatorModel;
  /** The first account's faults. */
  readonly faults: FaultInjector;
  /**
   * The first account's requests, in arrival order (control routes excepted). Without `accounts`, every request the
   * API origin received, whatever its token, as it always was.
   */
  readonly log: RequestLogEntry[];
  /** With `accounts`: the requests whose token names no account (missing or wrong), in arrival order. */
  readonly unclaimed: RequestLogEntry[];
  /** The account a token names. */
  account(token: string): SimulatorAccount | undefined;
  /** Every account, in the order they were added (ordinal 1 first). */
  accounts(): readonly SimulatorAccount[];
  /** Adds an account to the running simulator: cheap, its dataset is built on its first request. */
  addAccount(spec: AccountSpec): SimulatorAccount;
  /** Stops both origins, dropping open connections; idempotent. */
  close(): Promise<void>;
}

/** A faithful fake of the Support Ticket API over real HTTP: the API origin and a storage origin for attachments. */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<RunningSimulator> {
  const clock = opts.clock ?? systemClock;
  const host = opts.host ?? '127.0.0.1';
  const single = opts.accounts === undefined;
  if (!single && opts.token !== undefined) throw new RangeError('token is for one account; with accounts, each has its own');
  if (!single && opts.accounts!.length === 0) throw new RangeError('accounts needs at least one account');
  const logLimit = opts.logLimit ?? Infinity;
  if (!(logLimit === Infinity || (Number.isInteger(logLimit) && logLimit >= 1))) {
    throw new RangeError(`logLimit must be a whole number ≥ 1 (${logLimit})`);
  }

  const storageServer = createServer();
  const storageUrl = await listen(storageServer, host, opts.storagePort ?? 0);
  // Attachment links name the storage origin, whose address is known only once it listens.
  const defaults = {
    seed: opts.seed ?? 1,
    openTickets: opts.openTickets ?? 40,
    resolvedTickets: opts.resolvedTickets ?? 120,
    dailyLimit: opts.dailyLimit ?? 1440,
    minuteLimit: opts.minuteLimit ?? 60,
  };
  const registry = new AccountRegistry({ clock, storageUrl, defaults, logLimit, rootAccount: single });
  try {
    registry.addAll(single ? [{ token: opts.token ?? 'sim-token' }] : opts.accounts!);
  } catch (error) {
    await stop(storageServer);
    throw error;
  }
  const first = registry.first();
  storageServer.on('request', createStorageHandler((ordinal) => registry.byLinkPrefix(ordinal)?.builtModel(), clock));

  const unclaimed: RequestLogEntry[] = [];
  // A single-account simulator's one account owns every request, as it always did.
  const stranger: RequestOwner = single
    ? first
    : { record: (entry) => appendLog(unclaimed, entry, logLimit), takeFault: () => undefined, minuteLimit: defaults.minuteLimit };
  const api = createApiHandler({ clock, account: (token) => registry.get(token), stranger, latencyMs: opts.latencyMs ?? 0 });
  const apiServer = createServer((req, res) => {
    const answered = req.url?.startsWith(ADMIN_PREFIX)
      ? adminAnswer({ clock, accounts: registry }, req).then((answer) => send(res, answer))
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
  return {
    url,
    storageUrl,
    token: first.token,
    get model() {
      return first.model;
    },
    get faults() {
      return first.faults;
    },
    log: first.log,
    unclaimed,
    account: (token) => registry.get(token),
    accounts: () => registry.all(),
    addAccount: (spec) => registry.add(spec),
    close,
  };
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
