import { EventEmitter, once } from 'node:events';
import type { Clock } from '../clock.ts';
import { coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { msOption } from '../options.ts';
import type { SyncEngine } from '../sync/engine.ts';
import type { PassSummary } from '../sync/events.ts';
import { Daemon, type AfterPass, type DaemonHealth } from './daemon.ts';
import type { Lease, Leadership } from './leader.ts';

/**
 * One `run` process among possibly several on the same database. Its state machine:
 *
 *   standby ──lock acquired──▶ leader ──lock lost──▶ standby
 *      │                         │
 *      └────────stop()───────────┴──▶ stopped
 *
 * Each term as leader gets a fresh engine, built with the term's signal, and a Daemon that ticks it. The fresh engine
 * reloads the request ledger, which the previous leader kept writing. The term's signal aborts when the lock is lost
 * — the engine's requests are cut off at once and no reply goes out — or when a graceful stop runs out of patience.
 *
 * One AbortController holds the lifecycle: stop() stops ticking, lets the running pass finish for up to `graceMs`,
 * then aborts everything still in flight. start() and stop() are idempotent.
 */

export type Role = 'standby' | 'leader' | 'stopped';

export interface ReplicaHealth {
  role: Role;
  /** The leader's sync health; `standby` while another process syncs. */
  state: DaemonHealth['state'] | 'standby';
  reason: string | null;
  /** The last pass of this process, kept across terms. */
  lastPass: DaemonHealth['lastPass'];
}

export interface ReplicaEventMap {
  'leader:acquired': [{ engine: SyncEngine }];
  'leader:lost': [{ reason: string }];
  /** Every pass of every term, so that a listener need not follow the engines. */
  'pass:finished': [PassSummary];
}

export interface ReplicaOptions {
  leadership: Leadership;
  /**
   * A new engine for a term of leadership; `signal` aborts when the term ends; `tokenWorked` says the API's JSON came
   * back in an earlier term (for createEngine: a first HTML page of this term is then a hiccup, not a bad token).
   */
  engine: (signal: AbortSignal, tokenWorked: boolean) => SyncEngine;
  clock: Clock;
  logger: Logger;
  /** Makes a term's work after each pass (the reply outbox) for the term's engine and lease (its lock's session). */
  afterPass?: (engine: SyncEngine, lease: Lease) => AfterPass;
  /** How long stop() lets a running pass finish before aborting its requests. @default 5000 */
  graceMs?: number;
}

export class Replica {
  readonly events = new EventEmitter<ReplicaEventMap>();
  readonly #o: ReplicaOptions;
  readonly #abort = new AbortController();
  #loop: Promise<void> | null = null;
  /** The API's JSON came back in one of this process's terms. */
  #tokenWorked = false;
  #stopping: Promise<void> | null = null;
  #daemon: Daemon | null = null;
  #role: Role = 'standby';
  #lastHealth: DaemonHealth | null = null;

  constructor(options: ReplicaOptions) {
    this.#o = options;
  }

  get role(): Role {
    return this.#role;
  }

  get health(): ReplicaHealth {
    const daemon = this.#daemon?.health ?? this.#lastHealth;
    if (this.#role === 'leader' && daemon) return { role: 'leader', ...daemon };
    return { role: this.#role, state: this.#role === 'stopped' ? 'stopped' : 'standby', reason: null, lastPass: daemon?.lastPass ?? null };
  }

  /** Starts competing for leadership; returns at once. */
  start(): void {
    if (this.#loop || this.#abort.signal.aborted) return;
    this.#o.logger.info('waiting for leadership');
    this.#loop = this.#run();
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      let lease: Lease;
      try {
        lease = await this.#o.leadership.acquire(signal);
      } catch {
        break; // acquire() only gives up when stopped
      }
      await this.#lead(lease);
    }
    this.#role = 'stopped';
  }

  async #lead(lease: Lease): Promise<void> {
    const term = AbortSignal.any([this.#abort.signal, lease.lost]);
    let engine: SyncEngine | undefined;
    try {
      engine = this.#o.engine(term, this.#tokenWorked);
      engine.events.on('pass:finished', (summary) => this.events.emit('pass:finished', summary));
      const daemon = new Daemon({
        engine,
        clock: this.#o.clock,
        logger: this.#o.logger,
        signal: term,
        afterPass: this.#o.afterPass?.(engine, lease),
      });
      this.#daemon = daemon;
      this.#role = 'leader';
      this.#o.logger.info('leading: this process syncs');
      this.events.emit('leader:acquired', { engine });
      await daemon.start();
      if (!term.aborted) await once(term, 'abort');
      await daemon.stop();
    } finally {
      this.#tokenWorked ||= engine?.tokenWorked ?? false;
      this.#lastHealth = this.#daemon?.health ?? null;
      this.#daemon = null;
      this.#role = 'standby';
      await lease.release();
      if (lease.lost.aborted) this.events.emit('leader:lost', { reason: coerceError(lease.lost.reason).message });
    }
  }

  /** Stops gracefully: no new pass, the running one gets `graceMs`, then everything in flight is aborted. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const grace = setTimeout(() => this.#abort.abort(new Error('stopped: the running pass was cut short')), msOption('graceMs', this.#o.graceMs, 5_000));
      try {
        await this.#daemon?.stop();
      } finally {
        clearTimeout(grace);
        this.#abort.abort(new Error('stopped'));
        await this.#loop;
        this.#role = 'stopped';
      }
    })();
    return this.#stopping;
  }
}
