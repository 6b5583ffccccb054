import { msOption } from '../options.ts';

/**
 * Turn-taking on a single database session shared by several users: the daemon and each socket connection of the
 * embedded database (see sqlSocket.ts).
 *
 * State machine. The session is either FREE or HELD by one user. One unit of work runs at a time, in arrival order,
 * except that while the session is HELD only the holder's work may run; the others wait, in order, behind it.
 * After each unit, `holds(user)` decides: a user who leaves a transaction block open, or stops in the middle of a
 * protocol cycle (Parse … Sync, a COPY), keeps holding; otherwise the session is FREE again.
 *
 *   FREE --(unit of user U ends, holds(U))--> HELD(U) --(unit of U ends, !holds(U))--> FREE
 *
 * Warning: a holder stops everyone else, even one that keeps sending something (a client with autocommit off that runs
 * a query every 30 s and never commits). Once others have waited `holdTimeoutMs` behind the same holder, counted from
 * when the first of them began to wait and not restarted by the holder's own units, `onHoldTimeout(holder)` is called
 * at the holder's next pause so the owner of that user can end it (PostgreSQL's transaction_timeout, but only when
 * someone is actually kept waiting).
 */

export type SessionUser = 'daemon' | number;

export interface SessionSchedulerOptions {
  /** Whether `user`, whose unit just ended, still holds the session. */
  holds: (user: SessionUser) => boolean;
  /** Called, between the holder's units, once it has kept others waiting for `holdTimeoutMs`. */
  onHoldTimeout?: (holder: SessionUser) => void;
  /** @default 60_000; 0 = wait for the holder forever */
  holdTimeoutMs?: number;
}

interface Unit {
  user: SessionUser;
  work: (previous: SessionUser | null) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export class SessionScheduler {
  readonly #holds: (user: SessionUser) => boolean;
  readonly #onHoldTimeout: ((holder: SessionUser) => void) | undefined;
  readonly #holdTimeoutMs: number;
  #queue: Unit[] = [];
  #running = false;
  #holder: SessionUser | null = null;
  /** The user of the last unit that ran: its settings may still be in the session. */
  #previous: SessionUser | null = null;
  #holdTimer: NodeJS.Timeout | undefined;
  /** When (performance.now()) the first unit of another user began to wait behind the current holder; null if none. */
  #waitingSince: number | null = null;

  constructor(options: SessionSchedulerOptions) {
    this.#holds = options.holds;
    this.#onHoldTimeout = options.onHoldTimeout;
    this.#holdTimeoutMs = msOption('holdTimeoutMs', options.holdTimeoutMs, 60_000);
  }

  /** The user holding the session between units, or null when it is free. */
  get holder(): SessionUser | null {
    return this.#holder;
  }

  /** Units waiting for their turn. */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Runs `work` when it is `user`'s turn. `work` receives the user of the unit that ran before it, so it can restore
   * session settings another user may have changed.
   */
  run<T>(user: SessionUser, work: (previous: SessionUser | null) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ user, work, resolve: resolve as (value: unknown) => void, reject });
      this.#noteWaiting();
      this.#pump();
    });
  }

  /** Rejects every waiting unit of `user` (its connection is gone). A unit already running finishes. */
  cancel(user: SessionUser, error: Error): void {
    const kept: Unit[] = [];
    for (const unit of this.#queue) {
      if (unit.user === user) unit.reject(error);
      else kept.push(unit);
    }
    this.#queue = kept;
    this.#noteWaiting();
    this.#pump();
  }

  #pump(): void {
    if (this.#running) return;
    const holder = this.#holder;
    const index = holder === null ? (this.#queue.length > 0 ? 0 : -1) : this.#queue.findIndex((u) => u.user === holder);
    if (index === -1) {
      this.#armHoldTimer();
      return;
    }
    this.#disarmHoldTimer();
    const [unit] = this.#queue.splice(index, 1);
    this.#running = true;
    void this.#execute(unit!);
  }

  async #execute(unit: Unit): Promise<void> {
    const previous = this.#previous;
    let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await unit.work(previous) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    // Decide the next holder before anyone awaiting this unit runs, so their next unit queues behind the right one.
    let holder: SessionUser | null;
    try {
      holder = this.#holds(unit.user) ? unit.user : null;
    } catch {
      holder = null;
    }
    if (holder !== this.#holder) this.#waitingSince = null;
    this.#holder = holder;
    this.#noteWaiting();
    this.#previous = unit.user;
    this.#running = false;
    if (outcome.ok) unit.resolve(outcome.value);
    else unit.reject(outcome.error);
    this.#pump();
  }

  /** Starts counting when someone begins to wait behind the holder, and stops when nobody does any more. */
  #noteWaiting(): void {
    const holder = this.#holder;
    if (holder === null || !this.#queue.some((u) => u.user !== holder)) this.#waitingSince = null;
    else this.#waitingSince ??= performance.now();
  }

  #armHoldTimer(): void {
    const holder = this.#holder;
    if (holder === null || this.#queue.length === 0 || this.#holdTimeoutMs <= 0 || !this.#onHoldTimeout) return;
    if (this.#holdTimer) return;
    const waited = performance.now() - (this.#waitingSince ?? performance.now());
    this.#holdTimer = setTimeout(() => {
      this.#holdTimer = undefined;
      // Still the same quiet holder, still someone waiting: give up on it.
      if (this.#holder === holder && !this.#running && this.#queue.length > 0) this.#onHoldTimeout?.(holder);
    }, Math.max(0, this.#holdTimeoutMs - waited));
    this.#holdTimer.unref();
  }

  #disarmHoldTimer(): void {
    if (this.#holdTimer) clearTimeout(this.#holdTimer);
    this.#holdTimer = undefined;
  }
}
