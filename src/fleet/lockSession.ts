import type pg from 'pg';
import { lockConnection, sessionOf, syncLockKey, type LeaderSession, type Lease } from '../daemon/leader.ts';
import { coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { msOption } from '../options.ts';

/**
 * The accounts' locks of one fleet worker, all held by one PostgreSQL session of its own: the lock `run`'s leader
 * takes (`ticket-mirror:sync:<schema>`), tried once per pass, so a `run` on the same schema and the other workers are
 * fenced exactly as before.
 *
 * One session rather than one per pass: a connection per slot fewer (a worker opens 7 + concurrency, not
 * 6 + 3 × concurrency, see worker.ts) and no connection opened and closed per job. The cost is shared fate: when the
 * session fails (an 'error' or 'end' of the driver, or a heartbeat unanswered within `heartbeatTimeoutMs`), every lease
 * it holds is lost at once and its passes are cut off — which is the rule anyway, as PostgreSQL has let their locks
 * go. The next try opens a new session.
 *
 * Advisory locks are re-entrant within a session: the schemas held are tracked here too, so two passes of one
 * process never share a lock. A lease's `session` is this session, which the reply outbox takes as proof that the
 * deliverer may still be sending while it lives (see deliver.ts); a released lease has no row left `sending`, as a
 * pass's delivery ends before it lets its lock go.
 */

export interface LockSessionOptions {
  databaseUrl: string;
  /** Shown in pg_stat_activity (at most 63 bytes). */
  applicationName: string;
  logger: Logger;
  /** How often the session is checked while it holds a lock. @default 5000 */
  heartbeatMs?: number;
  /** A heartbeat unanswered for this long counts as a lost session. @default 5000 */
  heartbeatTimeoutMs?: number;
}

interface Live {
  client: pg.Client;
  session: LeaderSession;
  /** Held schemas, each with the signal its lease is lost by. */
  held: Map<string, AbortController>;
  dead: boolean;
  timer: NodeJS.Timeout | undefined;
}

export class LockSession {
  readonly #o: LockSessionOptions;
  readonly #heartbeatMs: number;
  readonly #heartbeatTimeoutMs: number;
  #live: Promise<Live | undefined> | undefined;
  #closed = false;

  constructor(o: LockSessionOptions) {
    this.#o = o;
    this.#heartbeatMs = msOption('heartbeatMs', o.heartbeatMs, 5_000, 1);
    this.#heartbeatTimeoutMs = msOption('heartbeatTimeoutMs', o.heartbeatTimeoutMs, 5_000, 1);
  }

  /** One try at the schema's sync lock; null when another session, or another pass of this process, holds it. */
  async tryLock(schema: string): Promise<Lease | null> {
    if (this.#closed) throw new Error('the lock session is closed');
    const live = await this.#session();
    if (live.held.has(schema)) return null;
    const lost = new AbortController();
    // Claimed before the query, so that a second try of this process for the schema meanwhile finds it held.
    live.held.set(schema, lost);
    let locked = false;
    try {
      const { rows } = await live.client.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtext($1)) as locked', [syncLockKey(schema)]);
      locked = rows[0]?.locked === true;
    } catch (error) {
      this.#lose(live, `the lock query failed: ${coerceError(error).message}`);
      throw error;
    } finally {
      if (!locked && live.held.get(schema) === lost) live.held.delete(schema);
    }
    if (!locked) return null;
    if (live.dead) {
      // The session failed while the answer came: the lock is gone with it.
      live.held.delete(schema);
      return null;
    }
    this.#beat(live);
    let released = false;
    return {
      lost: lost.signal,
      session: live.session,
      release: async () => {
        if (released) return;
        released = true;
        if (live.held.get(schema) !== lost) return;
        live.held.delete(schema);
        if (live.dead) return;
        try {
          const { rows } = await live.client.query<{ unlocked: boolean }>('select pg_advisory_unlock(hashtext($1)) as unlocked', [syncLockKey(schema)]);
          if (rows[0]?.unlocked !== true) this.#lose(live, 'the session no longer held a lock it was given');
        } catch (error) {
          // Its lock is not released while the session lives: the session goes, and every lock with it.
          this.#lose(live, `the unlock query failed: ${coerceError(error).message}`);
        }
      },
    };
  }

  /** Ends the session (every lock it holds goes with it). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const live = await this.#live?.catch(() => undefined);
    if (live) {
      this.#lose(live, 'the worker stopped');
      await live.client.end().catch(() => {});
    }
  }

  /** The live session, or a new one: tries queue behind one another here, so a dead session is replaced once. */
  #session(): Promise<Live> {
    const previous = this.#live ?? Promise.resolve(undefined);
    const next = previous.then(
      (live) => (live && !live.dead ? live : this.#open()),
      () => this.#open(),
    );
    this.#live = next;
    return next;
  }

  async #open(): Promise<Live> {
    const client = await lockConnection(this.#o.databaseUrl, this.#o.applicationName, this.#heartbeatTimeoutMs);
    try {
      const live: Live = { client, session: await sessionOf(client), held: new Map(), dead: false, timer: undefined };
      client.on('error', (error) => this.#lose(live, error.message));
      client.on('end', () => this.#lose(live, 'the connection to PostgreSQL closed'));
      return live;
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
  }

  /** Checks the session every heartbeatMs while it holds a lock (pg.Client never reconnects silently). */
  #beat(live: Live): void {
    if (live.timer !== undefined || live.dead) return;
    live.timer = setTimeout(() => {
      live.timer = undefined;
      if (live.dead || live.held.size === 0) return;
      live.client.query('select 1').then(
        () => this.#beat(live),
        (error: unknown) => this.#lose(live, `heartbeat failed: ${coerceError(error).message}`),
      );
    }, this.#heartbeatMs);
    live.timer.unref();
  }

  #lose(live: Live, reason: string): void {
    if (live.dead) return;
    live.dead = true;
    clearTimeout(live.timer);
    const schemas = [...live.held.keys()];
    if (schemas.length > 0 && !this.#closed) this.#o.logger.error({ reason, accounts: schemas.length }, 'the lock session failed; stopping the passes it held');
    for (const lost of live.held.values()) lost.abort(new Error(`lock lost: ${reason}`));
    live.held.clear();
    void live.client.end().catch(() => {});
  }
}
