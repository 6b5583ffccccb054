import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { configWarnings, parseApiUrl } from '../config/loadConfig.ts';
import { openDatabase, shippedViews, type Database } from '../db/connect.ts';
import { UNPREPARED_WARNING } from '../db/preparedStatements.ts';
import type { FleetDatabase } from '../db/fleet.ts';
import { migrationState } from '../db/migrationState.ts';
import { fleetChannels, refreshFleetViews, type Account } from '../db/repos/accounts.ts';
import { installReplyNotify, mirrorExists, replyNotifyInstalled } from '../db/repos/fleetJobs.ts';
import { logViewsRestored, missingViews } from '../db/repos/views.ts';
import { logPasses } from '../daemon/compose.ts';
import type { Logger } from '../logger.ts';
import { rememberSecret } from '../secrets.ts';
import { SyncEngine } from '../sync/engine.ts';
import { openToken, type FleetKey } from './tokenSeal.ts';

/**
 * What a worker keeps of an account between its passes: the account's Database (its schema, one connection: a pass's
 * statements run one at a time, as on the embedded database) and its
 * SyncEngine, built through the daemon's composition (same logging of passes), with the token opened from its sealed
 * blob here and only here, into the engine's memory.
 *
 * An engine remembers the budget it has spent (its gate's samples, loaded from the ledger at init). Another worker may
 * have run the account since this one last did, so before each pass the ledger's newest row is compared with the one
 * seen at the end of this process's last pass: another process's rows mean a fresh engine (ledger reloaded). A change
 * of the account's row that the engine was built from (API URL, token, limits, schema) means one too.
 *
 * At most `capacity` entries are kept (the worker's concurrency): the least recently used idle one is closed when a
 * new one is needed, so a worker holds at most `capacity` connections for account databases. Each schema is migrated
 * once per process (and gets the reply trigger, and the fleet views are refreshed to include it).
 */

export interface AccountRuntime {
  readonly account: string;
  readonly database: Database;
  readonly engine: SyncEngine;
  /** Aborting it cuts the engine's requests off (the account's lock was lost; a hard stop). */
  readonly abort: AbortController;
  /** What the entry was built from (see fingerprint). */
  readonly fingerprint: string;
  busy: boolean;
  usedAt: number;
  /** A pass saw it fail (lock lost, cut off): closed when released. */
  broken: boolean;
}

export interface RuntimeCacheOptions {
  fleet: FleetDatabase;
  key: FleetKey;
  clock: Clock;
  logger: Logger;
  /** Entries kept open. */
  capacity: number;
  /** In the application_name of each account's session (`tm <account> <worker>`), as pg_stat_activity shows it. */
  workerId: string;
  /** Aborted by a hard stop: every engine's requests are cut off. */
  hardStop: AbortSignal;
  /** Largest API answer read (API_MAX_RESPONSE_BYTES). */
  maxResponseBytes?: number;
}

/** Everything of the row an engine is built from; the token as a digest of its sealed blob, never the token. */
export function fingerprint(a: Account): string {
  const sealed = createHash('sha256').update(a.tokenSealed).digest('hex').slice(0, 16);
  return [a.schemaName, a.apiUrl, sealed, a.dailyLimit, a.minuteLimit, a.reserve].join('|');
}

export class RuntimeCache {
  readonly #o: RuntimeCacheOptions;
  readonly #entries = new Map<string, AccountRuntime>();
  readonly #migrated = new Set<string>();

  constructor(o: RuntimeCacheOptions) {
    this.#o = o;
  }

  /** The account's runtime, ready for a pass, marked busy. Throws SealError when its token does not open. */
  async acquire(account: Account): Promise<AccountRuntime> {
    let entry = this.#entries.get(account.name);
    if (entry && (entry.broken || entry.fingerprint !== fingerprint(account))) {
      await this.#close(entry);
      entry = undefined;
    }
    // (Another process's requests since the last pass of the account: the engine loads the budget again itself.)
    if (!entry) {
      await this.#makeRoom();
      const database = await openDatabase({
        databaseUrl: this.#o.fleet.databaseUrl,
        schema: account.schemaName,
        poolSize: 1,
        applicationName: `tm ${account.name} ${this.#o.workerId}`,
        onUnprepared: (error) => this.#o.logger.child({ account: account.name }).warn({ err: error }, UNPREPARED_WARNING),
      });
      try {
        await this.#migrateOnce(account, database);
        entry = this.#build(account, database);
      } catch (error) {
        await database.close().catch(() => {});
        throw error;
      }
    }
    entry.busy = true;
    entry.usedAt = this.#o.clock.now();
    try {
      await entry.engine.init();
    } catch (error) {
      entry.broken = true;
      this.release(entry);
      throw error;
    }
    return entry;
  }

  /** Back after a pass; a broken entry is closed. */
  release(entry: AccountRuntime): void {
    entry.busy = false;
    if (entry.broken) void this.#close(entry);
  }

  /** Names of the accounts kept open. */
  get accounts(): string[] {
    return [...this.#entries.keys()];
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.#entries.values()].map((e) => this.#close(e)));
  }

  #build(account: Account, database: Database): AccountRuntime {
    const logger = this.#o.logger.child({ account: account.name });
    // The one place the token is opened: into the engine's memory, for this process's passes of the account.
    const apiToken = openToken(this.#o.key, account.name, account.tokenSealed);
    rememberSecret(apiToken);
    // A row written through SQL is checked as `accounts add` checks --api-url: one with a query or a fragment (which
    // the table's check lets through) would send every request to the base itself.
    const { url: apiUrl } = parseApiUrl(account.apiUrl, `api_url of account ${account.name}`);
    for (const warning of configWarnings({ apiUrl })) {
      logger.warn(warning.replace(/^TICKETS_API_URL=\S+/, `the API URL of account ${account.name}`));
    }
    const abort = new AbortController();
    const engine = new SyncEngine({
      db: database.db,
      apiUrl,
      apiToken,
      clock: this.#o.clock,
      limits: { daily: account.dailyLimit, minute: account.minuteLimit, reserve: account.reserve },
      logger,
      ...(this.#o.maxResponseBytes ? { maxResponseBytes: this.#o.maxResponseBytes } : {}),
      signal: AbortSignal.any([this.#o.hardStop, abort.signal]),
    });
    logPasses(engine, logger);
    const entry: AccountRuntime = {
      account: account.name,
      database,
      engine,
      abort,
      fingerprint: fingerprint(account),
      busy: false,
      usedAt: this.#o.clock.now(),
      broken: false,
    };
    this.#entries.set(account.name, entry);
    return entry;
  }

  async #migrateOnce(account: Account, database: Database): Promise<void> {
    if (this.#migrated.has(account.schemaName)) return;
    const existed = await mirrorExists(database.db, account.schemaName);
    // A current schema is left as it is: every worker's first pass of every account would otherwise rewrite its
    // comments (and take the migration lock), which a fleet of thousands pays for at each start. Unless a BI view is
    // missing (a user dropped it): migrate makes it again, as `run` does at each start (one catalog query to know).
    // A schema a newer version migrated is refused by migrate (db/migrationState.ts).
    const state = existed ? await migrationState(database.db, account.schemaName) : null;
    const current = state !== null && state.pending === 0 && !state.newer;
    if (!current || (await missingViews(database.db, shippedViews())).length > 0) {
      logViewsRestored(this.#o.logger.child({ account: account.name }), await database.migrate());
    }
    const target = { schema: account.schemaName, account: account.name, channel: fleetChannels(this.#o.fleet.schema).reply };
    if (!(await replyNotifyInstalled(database.db, target))) await database.db.transaction((tx) => installReplyNotify(tx, target));
    // The views across the fleet leave out an account until its schema has the tables: rebuilt once it has them (not
    // by every worker that opens an existing mirror, as a rebuild reads every account's schema).
    if (!existed) await refreshFleetViews(this.#o.fleet.db);
    this.#migrated.add(account.schemaName);
  }

  /** Closes the least recently used idle entries until one more fits. */
  async #makeRoom(): Promise<void> {
    const idle = [...this.#entries.values()].filter((e) => !e.busy).sort((a, b) => a.usedAt - b.usedAt);
    while (this.#entries.size >= this.#o.capacity && idle.length > 0) await this.#close(idle.shift()!);
  }

  async #close(entry: AccountRuntime): Promise<void> {
    if (this.#entries.get(entry.account) === entry) this.#entries.delete(entry.account);
    entry.abort.abort(new Error('closed'));
    await entry.database.close().catch(() => {});
  }
}
