import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { survivesLostConnections, type Db } from '../db/connect.ts';
import { recordPassOutcome, type PassOutcome } from '../db/repos/accounts.ts';
import { databaseNowMs, lockAccountChain, openJobs, promoteLiveJobs, type OpenJob } from '../db/repos/fleetJobs.ts';
import { safeErrorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { SECOND_MS } from '../time.ts';
import type { FleetTiming } from './timing.ts';

/**
 * The fleet's use of pg-boss 10: one queue, `account-pass`, policy `stately`, a job per pass of one account, keyed by
 * the account's name (singletonKey). Stately means at most one job of a key per state — one queued (`created`), one
 * `retry`, one `active` — so an account never has two passes queued, nor two running through the engine.
 *
 * The chain of an account: each pass queues its successor, due at the planner's `wakeAt`. Every write of a chain
 * (the successor with the pass's bookkeeping and completion; a new chain from the reconciler or a wake-up; moving a
 * queued job forward) happens in one transaction holding the account's chain lock (lockAccountChain), which
 * serialises the fleet's senders of that account. Two rules keep pg-boss 10's fetch from failing (a fetch that would
 * activate a second job of an active key violates the stately index, and pg-boss swallows the error and returns no job
 * at all, for every account behind it):
 *
 * 1. nothing but a pass's own finish queues a job for an account that has one active, and that job is completed in
 *    the same transaction (the successor may then be due at once: the hand-back of a graceful stop);
 * 2. a job that starts while its account has another in `retry` cancels that one (a retry of a pass whose worker died
 *    after the pass had already queued its successor), and a retried job that finds a queued successor lets it run
 *    and ends (`claimChain`).
 *
 * Priorities: a job for live work (a list due, a reply, an operator's action, a first pass) carries LIVE_PRIORITY and
 * is fetched before background work (a backfill's next slice) due as long; a background job carries, in its data, when
 * its account's next list falls due (`liveAt`), and `promote` raises it then — pg-boss 10 cannot change a queued job's
 * priority, so that one UPDATE of its job table is ours (fleetJobs.promoteLiveJobs).
 *
 * Its pool: `poolSize` connections, used by pg-boss (fetch, maintenance) and by these transactions; search_path is the
 * control schema, so the accounts repository works inside them.
 */

export const QUEUE = 'account-pass';

/** A job's data. `manual`: started by an operator's action (add, resume): the account's back-off does not hold it. */
export interface PassJobData {
  account: string;
  manual?: boolean;
  /** When the account's live work falls due (epoch ms, the database's clock): the job is raised to LIVE_PRIORITY then. */
  liveAt?: number;
}

export interface PassJob {
  id: string;
  account: string;
  manual: boolean;
  /** Retries of this job so far (0: its first run). */
  retryCount: number;
  /** When it was due (start_after), epoch ms. */
  startAfter: number;
  /** pg-boss's priority when it was fetched (LIVE_PRIORITY: live work). */
  priority: number;
  /** Its data's `liveAt` (epoch ms, the database's clock), when it is a number. */
  liveAt: number | null;
}

/** How a new job's start is given: at an instant of the database's clock, or now. */
export interface Successor {
  /** Milliseconds from now (the database's now); 0 or less: due at once. */
  delayMs: number;
  manual?: boolean;
  /** pg-boss's priority (higher first): LIVE_PRIORITY for a pass a list or a reply is due for. @default 0 */
  priority?: number;
  /**
   * For background work (priority 0): milliseconds from now until the account's live work (its next list poll) falls
   * due; `promote` raises the job to LIVE_PRIORITY then, so a job queued behind others is not left behind them once a
   * list of its account is due.
   */
  liveInMs?: number;
}

/** The priority of a job for live work (a list due, a reply): fetched before background work due as long. */
export const LIVE_PRIORITY = 1;

export type EnsureResult = 'running' | 'queued' | 'moved' | 'sent';

export interface JobQueueOptions {
  databaseUrl: string;
  /** The control schema (search_path); pg-boss lives in `<fleetSchema>_jobs`. */
  fleetSchema: string;
  timing: FleetTiming;
  logger: Logger;
  /** @default 3 */
  poolSize?: number;
  /** The sessions' application_name (at most 63 bytes). @default 'ticket-mirror fleet jobs' */
  applicationName?: string;
}

/** Where pg-boss keeps the fleet's jobs. */
export function jobsSchemaOf(fleetSchema: string): string {
  return `${fleetSchema}_jobs`;
}

type Tx = { tx: Db; boss: PgBoss.Db };

export class JobQueue {
  readonly jobsSchema: string;
  readonly #o: JobQueueOptions;
  readonly #pool: pg.Pool;
  readonly #boss: PgBoss;
  #started = false;
  #fetchErrorToldAt = -Infinity;

  constructor(o: JobQueueOptions) {
    this.#o = o;
    this.jobsSchema = jobsSchemaOf(o.fleetSchema);
    this.#pool = new pg.Pool({
      connectionString: o.databaseUrl,
      max: o.poolSize ?? 3,
      application_name: (o.applicationName ?? 'ticket-mirror fleet jobs').slice(0, 63),
      options: `-c TimeZone=UTC -c search_path=${o.fleetSchema}`,
      connectionTimeoutMillis: 10_000,
    });
    survivesLostConnections(this.#pool);
    const t = o.timing;
    this.#boss = new PgBoss({
      db: { executeSql: (text, values) => this.#execute(text, values) },
      schema: this.jobsSchema,
      // Jobs are fetched by the worker's own loop (slots, graceful stop), never by pg-boss's work(); no cron either:
      // the reconciler is a timer of each worker.
      schedule: false,
      supervise: true,
      migrate: true,
      maintenanceIntervalSeconds: t.maintenanceIntervalSeconds,
      // A finished job is history after an hour, gone after a day: the job table stays the size of the queue.
      archiveCompletedAfterSeconds: 3_600,
      deleteAfterDays: 1,
    });
    this.#boss.on('error', (error) => o.logger.warn({ err: safeErrorMessage(error) }, 'pg-boss reported an error'));
  }

  /**
   * pg-boss's statements through the pool. One of its own transactions (install, maintenance) that fails leaves its
   * connection inside an aborted transaction block; it is rolled back before the connection goes back.
   */
  async #execute(text: string, values?: unknown[]): Promise<{ rows: any[] }> {
    const client = await this.#pool.connect();
    try {
      return await client.query(text, values);
    } catch (error) {
      await client.query('rollback').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /** Installs or migrates pg-boss's schema (once per fleet, whoever comes first) and the queue. */
  async start(): Promise<void> {
    if (this.#started) return;
    await this.#boss.start();
    const t = this.#o.timing;
    const queue: PgBoss.Queue = {
      name: QUEUE,
      policy: 'stately',
      expireInSeconds: t.expireInSeconds,
      retryLimit: t.retryLimit,
      retryDelay: t.retryDelaySeconds,
      retryBackoff: true,
    };
    // Workers that start together would deadlock in pg-boss 10's create_queue (two inserts into its queue table, each
    // waiting on the other's partition lock: ERROR 40P01, seen when bench:fleet starts three workers): one at a time.
    await this.#oneAtATime(`ticket-mirror:fleet-queue:${this.jobsSchema}`, async () => {
      await this.#boss.createQueue(QUEUE, queue);
      // A queue created by an older worker takes this one's settings (each job carries its own anyway: #sendOptions).
      await this.#boss.updateQueue(QUEUE, queue);
    });
    this.#started = true;
  }

  /** Runs `work` holding a session advisory lock on `key`, on a connection of the pool kept for it meanwhile. */
  async #oneAtATime(key: string, work: () => Promise<void>): Promise<void> {
    const client = await this.#pool.connect();
    try {
      await client.query('select pg_advisory_lock(hashtext($1))', [key]);
      try {
        await work();
      } finally {
        await client.query('select pg_advisory_unlock(hashtext($1))', [key]);
      }
    } finally {
      client.release();
    }
  }

  /**
   * Up to `batchSize` due jobs, now active for this worker. Never throws: pg-boss answers any trouble with no job. Its
   * error is told here all the same (at most once a minute), since a fetch that keeps failing — the database, or the
   * stately pitfall of the header — stops the fleet without a word otherwise.
   */
  async fetch(batchSize: number): Promise<PassJob[]> {
    const db: PgBoss.Db = {
      executeSql: async (text, values) => {
        try {
          return await this.#execute(text, values);
        } catch (error) {
          const now = performance.now();
          if (now - this.#fetchErrorToldAt > 60_000) {
            this.#fetchErrorToldAt = now;
            this.#o.logger.warn({ err: safeErrorMessage(error) }, 'pg-boss could not fetch jobs (it answers no job); trying again');
          }
          throw error;
        }
      },
    };
    const jobs = await this.#boss.fetch<PassJobData>(QUEUE, { batchSize, includeMetadata: true, db });
    return jobs.map((j) => ({
      id: j.id,
      account: typeof j.data?.account === 'string' ? j.data.account : '',
      manual: j.data?.manual === true,
      retryCount: j.retryCount,
      startAfter: new Date(j.startAfter).getTime(),
      priority: typeof j.priority === 'number' ? j.priority : 0,
      liveAt: typeof j.data?.liveAt === 'number' && Number.isFinite(j.data.liveAt) ? j.data.liveAt : null,
    }));
  }

  /**
   * At the start of a job: does it carry the account's chain? A job in `retry` of the account is cancelled when this one
   * is the fresher (it belongs to a pass that is over); a retried job that finds a queued successor lets that one run.
   */
  claimChain(job: PassJob): Promise<'run' | 'redundant'> {
    return this.#transaction(async ({ tx, boss }) => {
      await lockAccountChain(tx, job.account);
      const others = (await this.#openJobs(tx, job.account, true)).filter((j) => j.id !== job.id);
      if (job.retryCount > 0 && others.some((j) => j.state === 'created')) return 'redundant';
      const retries = others.filter((j) => j.state === 'retry').map((j) => j.id);
      if (retries.length > 0) await this.#boss.cancel(QUEUE, retries, { db: boss });
      return 'run';
    });
  }

  /**
   * Ends a job: records the pass's outcome (if any), completes the job and queues its successor (if any), in one
   * transaction. A job that pg-boss expired meanwhile (its handler outlived expireInSeconds) is cancelled instead of
   * completed, so that its retry does not run the account again. The successor is not sent when the account has a job
   * queued already (nothing else queues one while this job is active; see the header).
   */
  finish(job: PassJob, o: { outcome?: PassOutcome; successor?: Successor } = {}): Promise<void> {
    return this.#transaction(async ({ tx, boss }) => {
      await lockAccountChain(tx, job.account);
      if (o.outcome) await recordPassOutcome(tx, job.account, o.outcome);
      const done = (await this.#boss.complete(QUEUE, job.id, {}, { db: boss })) as unknown as { affected?: number } | undefined;
      if (!done?.affected) await this.#boss.cancel(QUEUE, job.id, { db: boss });
      if (!o.successor) return;
      const queued = (await this.#openJobs(tx, job.account, false)).some((j) => j.id !== job.id && j.state !== 'active');
      if (!queued) await this.#send({ tx, boss }, job.account, o.successor);
    });
  }

  /** Fails a job whose handler threw: pg-boss retries it (retryDelaySeconds, doubling) until retryLimit. */
  async fail(job: PassJob, error: unknown): Promise<void> {
    await this.#boss.fail(QUEUE, job.id, { message: safeErrorMessage(error) });
  }

  /**
   * Makes sure the account has a chain: a new job due now when it has none. `bringForward`: a queued job due later than
   * `delayMs` from now, or of a lower `priority`, is replaced by one due then with it (an operator's action, a reply
   * waiting: in a busy fleet a queued background slice would keep the reply behind every job due before it). An active
   * job is left alone: its worker queues the successor (and hears the same wake-up).
   */
  ensureChain(account: string, o: { bringForward: boolean; manual?: boolean; delayMs?: number; priority?: number }): Promise<EnsureResult> {
    return this.#transaction(async ({ tx, boss }) => {
      await lockAccountChain(tx, account);
      const open = await this.#openJobs(tx, account, true);
      if (open.some((j) => j.state === 'active')) return 'running';
      const successor: Successor = { delayMs: o.delayMs ?? 0, ...(o.manual ? { manual: true } : {}), ...(o.priority ? { priority: o.priority } : {}) };
      const queued = open[0];
      if (!queued) {
        await this.#send({ tx, boss }, account, successor);
        return 'sent';
      }
      // Moved only when that gains more than a second.
      const sooner = queued.dueInMs > successor.delayMs + SECOND_MS;
      const higher = (successor.priority ?? 0) > queued.priority;
      if (!o.bringForward || (!sooner && !higher)) return 'queued';
      await this.#boss.cancel(QUEUE, open.map((j) => j.id), { db: boss });
      // What the jobs replaced carried stays: an operator's start (its back-off set aside), a higher priority.
      if (open.some((j) => j.manual)) successor.manual = true;
      const priority = Math.max(successor.priority ?? 0, ...open.map((j) => j.priority));
      if (priority > 0) successor.priority = priority;
      await this.#send({ tx, boss }, account, successor);
      return 'moved';
    });
  }

  /** Stops pg-boss's maintenance and closes the pool. */
  async stop(): Promise<void> {
    if (this.#started) await this.#boss.stop({ graceful: false, close: false }).catch(() => {});
    await this.#pool.end().catch(() => {});
  }

  #openJobs(tx: Db, account: string, lock: boolean): Promise<OpenJob[]> {
    return openJobs(tx, { jobsSchema: this.jobsSchema, queue: QUEUE, account, lock });
  }

  /**
   * Raises the queued jobs whose live work has fallen due (see Successor.liveInMs) and the retries (a dead worker's
   * accounts), and counts the live jobs due and waiting for a worker. Each worker calls it every pollIntervalMs.
   */
  promote(): Promise<{ promoted: number; waiting: number }> {
    return this.#transaction(({ tx }) => promoteLiveJobs(tx, { jobsSchema: this.jobsSchema, queue: QUEUE, priority: LIVE_PRIORITY }));
  }

  async #send({ tx, boss }: Tx, account: string, s: Successor): Promise<void> {
    const data: PassJobData = { account, ...(s.manual ? { manual: true } : {}) };
    if (s.liveInMs !== undefined && Number.isFinite(s.liveInMs) && (s.priority ?? 0) < LIVE_PRIORITY) {
      // By the database's clock, as startAfter is: no skew between the worker's clock and the server's.
      data.liveAt = (await databaseNowMs(tx)) + Math.max(0, Math.round(s.liveInMs));
    }
    const t = this.#o.timing;
    await this.#boss.send(QUEUE, data, {
      singletonKey: account,
      // Seconds from the database's now (pg-boss adds them to now() in SQL): no clock skew between worker and server.
      ...(s.delayMs > 0 ? { startAfter: Math.round(s.delayMs) / 1000 } : {}),
      ...(s.priority ? { priority: s.priority } : {}),
      expireInSeconds: t.expireInSeconds,
      retryLimit: t.retryLimit,
      retryDelay: t.retryDelaySeconds,
      retryBackoff: true,
      db: boss,
    });
  }

  async #transaction<T>(fn: (t: Tx) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('begin');
      const result = await fn({
        tx: drizzlePg(client) as unknown as Db,
        boss: { executeSql: (text, values) => client.query(text, values) },
      });
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch((e: Error) => (broken = e));
      throw error;
    } finally {
      client.release(broken);
    }
  }
}
