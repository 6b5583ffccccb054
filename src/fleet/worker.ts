import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import pg from 'pg';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { FleetDatabase } from '../db/fleet.ts';
import { quoteIdent } from '../db/connect.ts';
import { fleetChannels } from '../db/repos/accounts.ts';
import { accountsWithoutJob } from '../db/repos/fleetJobs.ts';
import { ACCOUNT_NAME_PATTERN } from '../db/fleetSchema.ts';
import { safeErrorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { intOption } from '../options.ts';
import { runAccountJob, type JobContext } from './accountJob.ts';
import { RuntimeCache } from './accountRuntime.ts';
import { JobQueue, LIVE_PRIORITY, QUEUE, type PassJob } from './jobQueue.ts';
import { LockSession } from './lockSession.ts';
import { fleetTiming, type FleetTiming } from './timing.ts';
import type { FleetKey } from './tokenSeal.ts';
import type { FleetWorkerEventMap } from './workerEvents.ts';

/**
 * A fleet worker: `concurrency` passes at once, of whichever accounts are due, taken from pg-boss's queue
 * (jobQueue.ts). Identical workers on any number of machines share one PostgreSQL; which one runs an account's next
 * pass is whichever fetches its job first (see accountJob.ts for one job, timing.ts for the clockwork).
 *
 * Its lifecycle:
 *
 *   start ─▶ running: fetch due jobs into free slots (every pollIntervalMs, and at once when a slot frees or the fleet
 *            │         is woken), repair broken chains (every reconcileMs), hear wake-ups (LISTEN)
 *            └─ stop() ─▶ stopping: no fetch; running passes stop starting requests and hand their accounts back
 *                        ─ after stopGraceMs, requests in flight are cut off ─▶ pg-boss stopped, pools closed
 *
 * Wake-ups (on the fleet's channels, fleetChannels): `accounts add` and `accounts resume` announce the account (a
 * manual start: its back-off does not hold it), and a reply inserted into an account's outbox announces it (its trigger,
 * installed when the worker migrates the schema). Every worker hears them: the one running the account queues its
 * successor soon; the others make sure a job is due now (jobQueue.ensureChain, which leaves an active one alone).
 *
 * Connections to PostgreSQL per worker: the control schema's pool (2, the caller's), the job pool (3), the LISTEN
 * session (1), the accounts' lock session (1, lockSession.ts) and per slot the account's database (1: a pass's
 * statements run one at a time) — at most 7 + concurrency (concurrency 4: 11). With max_connections = 100 and a few
 * kept for superusers and the operator, 3 workers of concurrency 23 fit (90).
 */

export interface FleetWorkerOptions {
  config: Pick<Config, 'maxResponseBytes'>;
  fleet: FleetDatabase;
  key: FleetKey;
  logger: Logger;
  clock: Clock;
  /** Passes at once in this process. @default 4 */
  concurrency?: number;
  /** Shown in the accounts' rows, logs and lock sessions. @default `<host>:<pid>` */
  workerId?: string;
  /** See timing.ts; the defaults are derived there. */
  timing?: Partial<FleetTiming>;
}

export interface FleetWorker {
  readonly workerId: string;
  readonly concurrency: number;
  readonly timing: FleetTiming;
  readonly events: EventEmitter<FleetWorkerEventMap>;
  /** The accounts whose pass runs in this process now. */
  accounts(): string[];
  /** Graceful (see the lifecycle above): resolves within stopGraceMs + ~2 s. Idempotent. */
  stop(): Promise<void>;
}

/** Connections a worker opens at most (see the header): for the README's arithmetic and the CLI's log. */
export function connectionsPerWorker(concurrency: number): number {
  return 7 + concurrency;
}

const ACCOUNT_NAME = new RegExp(ACCOUNT_NAME_PATTERN);

export function defaultWorkerId(): string {
  return `${hostname().slice(0, 20)}:${process.pid}`;
}

export async function startFleetWorker(o: FleetWorkerOptions): Promise<FleetWorker> {
  const worker = new Worker(o);
  await worker.start();
  return worker;
}

class Worker implements FleetWorker {
  readonly workerId: string;
  readonly concurrency: number;
  readonly timing: FleetTiming;
  readonly events = new EventEmitter<FleetWorkerEventMap>();
  readonly #o: FleetWorkerOptions;
  readonly #queue: JobQueue;
  readonly #locks: LockSession;
  readonly #cache: RuntimeCache;
  readonly #stopping = new AbortController();
  readonly #hardStop = new AbortController();
  /** Running jobs by account. */
  readonly #running = new Map<string, Promise<void>>();
  readonly #woken = new Map<string, { manual: boolean }>();
  readonly #ctx: JobContext;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #reconcileTimer: NodeJS.Timeout | undefined;
  #promoteTimer: NodeJS.Timeout | undefined;
  #promoting = false;
  /** When a failed promote was last told (at most once a minute: it is tried every pollIntervalMs). */
  #promoteErrorToldAt = -Infinity;
  /** Live jobs due and waiting for a worker, as the last promote or fetch saw them. */
  #liveWaiting = 0;
  #listener: pg.Client | undefined;
  #stopped: Promise<void> | undefined;

  constructor(o: FleetWorkerOptions) {
    this.#o = o;
    this.workerId = o.workerId ?? defaultWorkerId();
    this.concurrency = intOption('concurrency', o.concurrency, 4);
    this.timing = fleetTiming(o.timing);
    const logger = o.logger.child({ worker: this.workerId });
    this.#queue = new JobQueue({
      databaseUrl: o.fleet.databaseUrl,
      fleetSchema: o.fleet.schema,
      timing: this.timing,
      logger,
      applicationName: `tm fleet jobs ${this.workerId}`,
    });
    this.#locks = new LockSession({ databaseUrl: o.fleet.databaseUrl, applicationName: `tm fleet locks ${this.workerId}`, logger });
    this.#cache = new RuntimeCache({
      fleet: o.fleet,
      key: o.key,
      clock: o.clock,
      logger,
      capacity: this.concurrency,
      workerId: this.workerId,
      hardStop: this.#hardStop.signal,
      maxResponseBytes: o.config.maxResponseBytes,
    });
    this.#ctx = {
      fleet: o.fleet,
      queue: this.#queue,
      locks: this.#locks,
      cache: this.#cache,
      clock: o.clock,
      logger,
      timing: this.timing,
      workerId: this.workerId,
      events: this.events,
      stopping: this.#stopping.signal,
      hardStop: this.#hardStop.signal,
      woken: this.#woken,
      // Live work that this worker's free slots cannot take at once: the passes running leave their background work.
      liveWaiting: () => this.#liveWaiting > this.concurrency - this.#running.size,
    };
  }

  get #logger(): Logger {
    return this.#ctx.logger;
  }

  accounts(): string[] {
    return [...this.#running.keys()];
  }

  async start(): Promise<void> {
    await this.#queue.start();
    await this.#listen();
    this.#loop = this.#fetchLoop();
    // Every worker repairs chains: at once (a fleet's first worker starts every account), then every reconcileMs, the
    // second time after a random half to a whole interval, so that workers started together do not do it in step.
    void this.#reconcile();
    const every = this.timing.reconcileMs;
    const first = setTimeout(
      () => {
        void this.#reconcile();
        this.#reconcileTimer = setInterval(() => void this.#reconcile(), every);
      },
      Math.floor(every * (0.5 + Math.random() / 2)),
    );
    this.#reconcileTimer = first;
    this.#promoteTimer = setInterval(() => void this.#promote(), this.timing.pollIntervalMs);
    this.#logger.info({ concurrency: this.concurrency, queue: QUEUE, jobsSchema: this.#queue.jobsSchema }, 'fleet worker started');
  }

  /** Fills free slots with due jobs; sleeps until the poll interval passes, a slot frees, or a wake-up. */
  async #fetchLoop(): Promise<void> {
    const signal = this.#stopping.signal;
    while (!signal.aborted) {
      const free = this.concurrency - this.#running.size;
      let fetched = 0;
      if (free > 0) {
        const jobs = await this.#queue.fetch(free);
        fetched = jobs.length;
        // Fewer than asked for: nothing else is due, live or not.
        if (fetched < free) this.#liveWaiting = 0;
        for (const job of jobs) this.#startJob(job);
      }
      // All asked for came: more may be due (unless no slot is left, then a freed one wakes the loop).
      if (fetched > 0 && fetched === free && this.#running.size < this.concurrency) continue;
      await new Promise<void>((resolve) => {
        // A stop that came while the fetch was out would otherwise wait here for the whole interval.
        if (signal.aborted) return resolve();
        const timer = setTimeout(done, this.#running.size < this.concurrency ? this.timing.pollIntervalMs : 60_000);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        this.#wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
      this.#wake = undefined;
    }
  }

  #startJob(job: PassJob): void {
    // Two jobs of one account in one process cannot be (stately); a key is tracked by its job id if ever they were.
    const key = this.#running.has(job.account) ? `${job.account}#${job.id}` : job.account;
    const done = runAccountJob(this.#ctx, job)
      .catch(async (error: unknown) => {
        // The control schema or the job table failed us: pg-boss retries the job (retryDelaySeconds, doubling).
        this.#logger.error({ account: job.account, err: safeErrorMessage(error) }, 'fleet job failed; pg-boss will retry it');
        await this.#queue.fail(job, error).catch(() => {});
      })
      .finally(() => {
        this.#running.delete(key);
        this.#wake?.();
      });
    this.#running.set(key, done);
  }

  /**
   * Raises the background jobs whose account's list has fallen due to live (jobQueue.promote), and learns how much
   * live work waits: while more waits than this worker has free slots, its passes leave their background work.
   */
  async #promote(): Promise<void> {
    if (this.#stopping.signal.aborted || this.#promoting) return;
    this.#promoting = true;
    try {
      const { promoted, waiting } = await this.#queue.promote();
      this.#liveWaiting = waiting;
      this.events.emit('jobs:live', { promoted, waiting });
      if (waiting > 0) this.#wake?.();
    } catch (error) {
      const now = performance.now();
      if (now - this.#promoteErrorToldAt > 60_000) {
        this.#promoteErrorToldAt = now;
        this.#logger.warn({ err: safeErrorMessage(error) }, 'could not raise the jobs whose lists fell due; trying again every poll');
      }
    } finally {
      this.#promoting = false;
    }
  }

  /** Queues a job for every active account that has none (see timing.ts, "Chains"). */
  async #reconcile(): Promise<void> {
    if (this.#stopping.signal.aborted) return;
    try {
      const orphans = await accountsWithoutJob(this.#o.fleet.db, { jobsSchema: this.#queue.jobsSchema, queue: QUEUE });
      let started = 0;
      for (const account of orphans) {
        if (this.#stopping.signal.aborted) break;
        // Its lists are due (never polled, or its chain broke): live work.
        const result = await this.#queue.ensureChain(account, { bringForward: false, priority: LIVE_PRIORITY });
        if (result === 'sent') {
          started++;
          this.events.emit('chain:woken', { account, via: 'reconcile', result });
        }
      }
      if (started > 0) {
        this.#logger.info({ accounts: started }, 'started the passes of accounts that had no job queued');
        this.#wake?.();
      }
    } catch (error) {
      this.#logger.warn({ err: safeErrorMessage(error) }, 'could not look for accounts without a job; trying again later');
    }
  }

  /** LISTENs for wake-ups on a session of its own; it comes back by itself after a failure (the reconciler covers the gap). */
  async #listen(): Promise<void> {
    if (this.#stopping.signal.aborted) return;
    const client = new pg.Client({ connectionString: this.#o.fleet.databaseUrl, application_name: `tm fleet listen ${this.workerId}`.slice(0, 63) });
    const retry = () => {
      if (this.#listener !== client) return;
      this.#listener = undefined;
      void client.end().catch(() => {});
      if (!this.#stopping.signal.aborted) setTimeout(() => void this.#listen(), this.timing.reconcileMs).unref();
    };
    client.on('error', retry);
    client.on('end', retry);
    client.on('notification', (n) => void this.#onWakeUp(n.channel, n.payload ?? ''));
    this.#listener = client;
    try {
      await client.connect();
      const channels = fleetChannels(this.#o.fleet.schema);
      await client.query(`listen ${quoteIdent(channels.announce)}; listen ${quoteIdent(channels.reply)}`);
    } catch (error) {
      this.#logger.warn({ err: safeErrorMessage(error) }, 'cannot listen for wake-ups; accounts added will start at the next reconciliation');
      retry();
    }
  }

  async #onWakeUp(channel: string, account: string): Promise<void> {
    if (this.#stopping.signal.aborted || !ACCOUNT_NAME.test(account)) return;
    const manual = channel === fleetChannels(this.#o.fleet.schema).announce;
    if (this.#running.has(account)) {
      // Its successor is queued soon by its own pass (accountJob.record).
      this.#woken.set(account, { manual: manual || this.#woken.get(account)?.manual === true });
      return;
    }
    try {
      // Live work (a reply, an operator's action): ahead of background slices due as long.
      const result = await this.#queue.ensureChain(account, { bringForward: true, manual, priority: LIVE_PRIORITY });
      this.events.emit('chain:woken', { account, via: manual ? 'announce' : 'reply', result });
      if (result === 'sent' || result === 'moved') this.#wake?.();
    } catch (error) {
      this.#logger.warn({ account, err: safeErrorMessage(error) }, 'could not start the account woken up; the reconciler will');
    }
  }

  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      const started = performance.now();
      this.#stopping.abort(new Error('the worker is stopping'));
      clearTimeout(this.#reconcileTimer);
      clearInterval(this.#reconcileTimer);
      clearInterval(this.#promoteTimer);
      const listener = this.#listener;
      this.#listener = undefined;
      await listener?.end().catch(() => {});
      const running = [...this.#running.keys()];
      if (running.length > 0) this.#logger.info({ accounts: running }, 'stopping: the passes running stop at their next request and hand their accounts back');
      await this.#loop;
      const all = Promise.allSettled([...this.#running.values()]);
      const grace = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), this.timing.stopGraceMs).unref());
      if ((await Promise.race([all, grace])) === 'late') {
        this.#logger.warn({ accounts: this.accounts() }, 'stopping: passes still running; cutting their requests off');
        this.#hardStop.abort(new Error('stopped: the running pass was cut short'));
        await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
      }
      await this.#queue.stop();
      await this.#cache.closeAll();
      await this.#locks.close();
      this.#logger.info({ tookMs: Math.round(performance.now() - started) }, 'fleet worker stopped');
    })();
    return this.#stopped;
  }
}
