import type { ManualClock } from '../../src/clock.ts';
import { RateLimitedError } from '../../src/errors.ts';

/** One request of a job, as a thunk; whatever it needs to write happens inside. */
export type Request = () => Promise<void>;

/**
 * A job is an async generator of requests: code between two `yield`s runs once the previous request is done, so a job
 * reads like the script it models (`poll the lists; then fetch what changed`).
 */
export type Job = AsyncGenerator<Request, void, void>;

/**
 * Runs one job at a time in virtual time, one request per `spacingMs` (1 s: the 60-a-minute limit, exactly), moving the
 * clock to each request's instant within the current tick. What happens on a 429 is the baseline's choice:
 * `abandon` ends the job (a cron script dies on the error), `retry` waits for the Retry-After and sends again.
 */
export class JobRunner {
  readonly #clock: ManualClock;
  readonly #spacingMs: number;
  readonly #on429: 'abandon' | 'retry';
  #job: Job | null = null;
  #pending: Request | null = null;
  #nextSlot = -Infinity;
  /** 429s this runner received. */
  throttled = 0;

  constructor(clock: ManualClock, on429: 'abandon' | 'retry', spacingMs = 1_000) {
    this.#clock = clock;
    this.#on429 = on429;
    this.#spacingMs = spacingMs;
  }

  get busy(): boolean {
    return this.#job !== null;
  }

  start(job: Job): void {
    if (this.#job) throw new Error('JobRunner: a job is already running');
    this.#job = job;
  }

  /** Sends what fits in [now, until). */
  async run(now: number, until: number): Promise<void> {
    while (this.#job) {
      if (!this.#pending) {
        const next = await this.#job.next();
        if (next.done) {
          this.#job = null;
          return;
        }
        this.#pending = next.value;
      }
      const at = Math.max(now, this.#nextSlot, this.#clock.now());
      if (at >= until) return;
      this.#clock.set(at);
      this.#nextSlot = at + this.#spacingMs;
      try {
        await this.#pending();
        this.#pending = null;
      } catch (error) {
        if (!(error instanceof RateLimitedError)) throw error;
        this.throttled++;
        if (this.#on429 === 'retry') {
          this.#nextSlot = Math.max(this.#nextSlot, error.retryAt);
        } else {
          this.#pending = null;
          await this.#job.return();
          this.#job = null;
        }
      }
    }
  }
}
