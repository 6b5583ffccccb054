import { intOption } from '../options.ts';
import { MINUTE_MS, SECOND_MS } from '../time.ts';

/**
 * The fleet's clockwork: how long a pass may hold a worker's slot, how soon pg-boss gives up on a job whose worker
 * died, how often workers look for due jobs and for broken chains. The defaults are derived here; tests and the bench
 * shrink them (every field is an option of `startFleetWorker` and a hidden flag of `fleet run`).
 *
 * ## Fairness: the slice
 * "A busy account never delays another account's due poll", and the bench wants every due poll started within 30 s of
 * its `wakeAt`. A due job waits for a free slot of some worker; a slot frees at the latest when the pass in it ends, so
 * no pass may hold one long: SyncEngine.pass stops *starting* requests after `sliceMs` (the requests in flight finish,
 * a reply POST included, what they brought is written), the reply outbox gets `deliverySliceMs` after it, and the
 * account's next job is queued at once (2 s later) behind every job already due. Worst wait of a due poll when every
 * slot is busy: slice 15 s + the request in flight (~1 s on a healthy API) + delivery 5 s + a fetch poll 2 s ≈ 23 s
 * < 30 s. A busy account loses nothing: its next slice follows 2 s later, behind the due work of the others. Live
 * work waits less: its jobs are fetched first (priorities, jobQueue.ts), and while more of it waits than a worker has
 * free slots, the worker's passes end at their next background request (`liveWaiting`, refreshed every
 * pollIntervalMs), so a slot frees within a request or two.
 * (A hung request is bounded by the API client's own 30 s timeout; the lock, not the slice, is what keeps the account
 * single-threaded then, see below.)
 *
 * ## Takeover: expiry and maintenance
 * pg-boss 10 has no heartbeat. A job whose worker died stays `active` until `expireInSeconds` after it started; then
 * pg-boss's maintenance (every `maintenanceIntervalSeconds`, run by one worker of the fleet at a time) fails it into
 * `retry`, due after `retryDelaySeconds` (doubled per retry, with jitter: 1–2 s for the first), raised to live priority
 * by the next promote (every `pollIntervalMs`, jobQueue.promote) so that no background backlog stands before it, and
 * the next fetch of any worker takes it. The account's lock went with the dead worker's connection (PostgreSQL
 * ends the session of a killed process at once; a partition after ~25 s of keepalives). Maintenance runs when the last
 * run is older than its interval, each process timing itself, so two runs can be almost 2 intervals apart. Bound:
 *
 *     expire 30 + 2 × maintenance 10 + retry delay 2 + promote and fetch 2 = 54 s  ≤  60 s (issue 14's target)
 *
 * (`takeoverBoundMs`). A handler normally ends well within `expireInSeconds`: slice 15 + in flight ~1 + delivery 5 +
 * lock, open, plan ~1 ≈ 22 s < 30. One that does not (a hung API) is failed into `retry` while it still runs; the
 * next worker's try at the account's lock finds it held and lets the job go, and the holder queues the successor when
 * it ends: the lock is the fence, expiry only the alarm.
 *
 * ## Chains: the reconciler
 * Each pass queues its successor. A chain breaks when a worker dies between the end of a pass and the send, when a
 * job's retries run out, when an account is added or resumed through SQL without announcing it, or when a job found
 * the account's lock held by someone else. Every `reconcileMs` each worker (at a random phase) queues a job for every
 * active account with none; an account added with `accounts add` is announced and starts within a fetch poll.
 * A timer of each worker rather than pg-boss's `schedule`: its cron is minute-grained, goes through a queue of its own
 * (and is off when jobs are archived sooner than a minute), and would add a job's hop to a repair that is one indexed
 * query; several workers repairing at once are harmless, as every send of a chain holds the account's chain lock.
 */
export interface FleetTiming {
  /** A pass starts no request after this long. @default 15000 */
  sliceMs: number;
  /** The reply outbox after a pass takes no new row after this long. @default 5000 */
  deliverySliceMs: number;
  /** pg-boss fails an active job this long after it started (its worker is presumed dead). @default 30 */
  expireInSeconds: number;
  /** How often pg-boss's maintenance (expiry, archive) runs in the fleet. @default 10 */
  maintenanceIntervalSeconds: number;
  /** Delay before the first retry of a failed or expired job, doubling with jitter. @default 1 */
  retryDelaySeconds: number;
  /** Retries of a job before it is failed for good (the reconciler then starts a new one). @default 4 */
  retryLimit: number;
  /** How often an idle worker asks for due jobs. @default 2000 */
  pollIntervalMs: number;
  /** How often each worker repairs broken chains. @default 30000 */
  reconcileMs: number;
  /**
   * The earliest a pass's successor may start: a queued job of an account must never fall due while its job is
   * active (pg-boss 10 would then fail every fetch of the queue: see FLEET.md). @default 2000
   */
  successorGapMs: number;
  /** A graceful stop waits this long for passes to reach a request boundary before cutting requests off. @default 7000 */
  stopGraceMs: number;
  /**
   * The longest an account waits for its next pass whatever its plan says (a sweep is due within ~35 min at the default
   * limits anyway): what the plan cannot foresee — another client of the token, a clock jump — is seen by then. A
   * reply inserted meanwhile does not wait for it (the outbox's trigger wakes the fleet). @default 1800000 (30 min)
   */
  maxWaitMs: number;
}

export const DEFAULT_TIMING: Readonly<FleetTiming> = Object.freeze({
  sliceMs: 15 * SECOND_MS,
  deliverySliceMs: 5 * SECOND_MS,
  expireInSeconds: 30,
  maintenanceIntervalSeconds: 10,
  retryDelaySeconds: 1,
  retryLimit: 4,
  pollIntervalMs: 2 * SECOND_MS,
  reconcileMs: 30 * SECOND_MS,
  successorGapMs: 2 * SECOND_MS,
  stopGraceMs: 7 * SECOND_MS,
  maxWaitMs: 30 * MINUTE_MS,
});

/** The defaults with `overrides`, each checked (whole positive numbers; pg-boss's own floors). */
export function fleetTiming(overrides: Partial<FleetTiming> = {}): FleetTiming {
  const t = { ...DEFAULT_TIMING, ...overrides };
  // Zero is a choice only for these: no retry delay, no retries, no gap, no grace.
  const mayBeZero = new Set(['retryDelaySeconds', 'retryLimit', 'successorGapMs', 'stopGraceMs']);
  for (const [name, value] of Object.entries(t)) intOption(name, value, 0, mayBeZero.has(name) ? 0 : 1);
  // pg-boss polls no faster than every 500 ms.
  intOption('pollIntervalMs', t.pollIntervalMs, 0, 500);
  return t;
}

/**
 * The longest a dead worker's account waits before another worker runs it (see the header): expiry, two maintenance
 * intervals, the first retry's delay at most (2 × retryDelaySeconds, jitter included) and a fetch poll.
 */
export function takeoverBoundMs(t: FleetTiming): number {
  return (t.expireInSeconds + 2 * t.maintenanceIntervalSeconds + 2 * t.retryDelaySeconds) * SECOND_MS + t.pollIntervalMs;
}
