import type { Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { Db } from '../db/connect.ts';
import type { SyncEvents } from '../sync/events.ts';
import { backfillEtaMs } from '../sync/planner.ts';
import { mirrorStatus, type MirrorStatus } from '../sync/status.ts';
import type { TerminalLine } from './terminalLine.ts';

/**
 * The backfill as a progress line at the bottom of a terminal, for `run`, `sync` and `demo` when the log is pretty and
 * stderr is a terminal (the caller decides; see `commandContext`). It follows a sync engine's events — each request
 * spends one of the day's budget, each backfilled detail is one more ticket fetched — and re-reads the numbers that
 * `status` shows from the database after a pass that sent requests (and at least once a minute of the engine's clock).
 * The one-line summary of each pass is the pass's log line above it.
 */

export interface BackfillNumbers {
  /** Tickets whose detail was fetched at least once (deleted ones aside). */
  fetched: number;
  /** Tickets the lists have shown (deleted ones aside). */
  known: number;
  /** Never-fetched tickets still to fetch. */
  remaining: number;
  /** Requests the budget still allows in the rolling 24 hours. */
  requestsLeft: number;
  /** Time to the end of the backfill at the planned pace; null when the budget leaves it nothing. */
  etaMs: number | null;
}

/** The progress numbers of a status (what `ticket-mirror status` prints as `backfill` and `budget`). */
export function backfillNumbers(status: Pick<MirrorStatus, 'backfill' | 'budget' | 'plan'>): BackfillNumbers {
  return {
    fetched: status.backfill.fetched,
    known: status.backfill.total,
    remaining: status.backfill.remaining,
    requestsLeft: status.budget.dailyLeft,
    etaMs: backfillEtaMs(status.backfill.remaining, status.plan.daily.background),
  };
}

/** Reads the numbers from the database, as `status` does (no request). */
export function numbersFromDatabase(db: Db, config: Pick<Config, 'dailyLimit' | 'minuteLimit' | 'reserve'>, clock: Clock): () => Promise<BackfillNumbers> {
  return async () => backfillNumbers(await mirrorStatus(db, config, clock.now()));
}

const BAR_WIDTH = 20;
/** Re-read the numbers at least this often (engine clock) even when passes send nothing: the window frees up. */
const REFRESH_IDLE_MS = 60_000;

/** The progress line. */
export function formatProgress(n: BackfillNumbers): string {
  const left = `${n.requestsLeft.toLocaleString('en-US')} requests left today`;
  if (n.known === 0) return `backfill: waiting for the first list poll · ${left}`;
  const tickets = `${n.fetched.toLocaleString('en-US')} of ${n.known.toLocaleString('en-US')} tickets fetched`;
  if (n.remaining === 0) return `mirror: ${tickets} · ${left} · backfill done`;
  const share = Math.min(1, n.fetched / n.known);
  const filled = Math.floor(share * BAR_WIDTH);
  const bar = `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}`;
  const eta = n.etaMs === null ? 'ETA unknown (no budget left for it)' : `ETA ${formatDuration(n.etaMs)}`;
  return `backfill ${bar} ${Math.floor(share * 100)}% · ${tickets} · ${left} · ${eta}`;
}

/** A duration as a person would say it: "under a minute", "about 4 min", "about 3.5 h", "about 2 days". */
export function formatDuration(ms: number): string {
  const minutes = ms / 60_000;
  if (minutes < 1) return 'under a minute';
  if (minutes < 60) return `about ${Math.round(minutes)} min`;
  const hours = minutes / 60;
  if (hours < 10) return `about ${Math.round(hours * 10) / 10} h`;
  if (hours < 48) return `about ${Math.round(hours)} h`;
  return `about ${Math.round(hours / 24)} days`;
}

export class BackfillProgress {
  readonly #line: TerminalLine;
  #numbers: BackfillNumbers | null = null;
  #read: (() => Promise<BackfillNumbers>) | null = null;
  #reading: Promise<void> = Promise.resolve();
  #lastReadAt = Number.NEGATIVE_INFINITY;
  #stopped = false;

  constructor(line: TerminalLine) {
    this.#line = line;
  }

  /** The numbers shown now, or null before the first read. */
  get numbers(): BackfillNumbers | null {
    return this.#numbers;
  }

  /**
   * Follows an engine's events (each term of leadership has an engine of its own; the last one followed gives the
   * numbers); `read` gives the numbers from the database. Resolves when they have been read the first time.
   */
  follow(events: SyncEvents, read: () => Promise<BackfillNumbers>): Promise<void> {
    this.#read = read;
    const onRequest = () => this.#update((n) => ({ ...n, requestsLeft: Math.max(0, n.requestsLeft - 1) }));
    const onDetail = ({ kind }: { kind: string }) => {
      if (kind !== 'backfill') return;
      this.#update((n) => ({ ...n, fetched: Math.min(n.known, n.fetched + 1), remaining: Math.max(0, n.remaining - 1) }));
    };
    const onFinished = ({ requests, finishedAt }: { requests: number; finishedAt: number }) => {
      if (requests > 0 || finishedAt - this.#lastReadAt >= REFRESH_IDLE_MS) {
        this.#lastReadAt = finishedAt;
        void this.refresh();
      }
    };
    events.on('request:sent', onRequest);
    events.on('detail:fetched', onDetail);
    events.on('pass:finished', onFinished);
    return this.refresh();
  }

  /** Re-reads the numbers and redraws. Never throws: a progress line is not worth failing for. */
  refresh(): Promise<void> {
    const read = this.#read;
    if (!read) return this.#reading;
    this.#reading = this.#reading
      .then(read)
      .then((numbers) => {
        this.#numbers = numbers;
        this.#draw();
      })
      .catch(() => {});
    return this.#reading;
  }

  /** Takes the line away for good (before the process prints its result or closes the database); waits for a read. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#line.clear();
    await this.#reading;
  }

  #update(change: (n: BackfillNumbers) => BackfillNumbers): void {
    if (!this.#numbers) return;
    this.#numbers = change(this.#numbers);
    this.#draw();
  }

  #draw(): void {
    if (this.#stopped || !this.#numbers) return;
    this.#line.show(formatProgress(this.#numbers));
  }
}
