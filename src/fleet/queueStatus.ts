import type pg from 'pg';
import PgBoss from 'pg-boss';
import type { Db } from '../db/connect.ts';
import { activeJobs, dueJobs } from '../db/repos/fleetStatus.ts';
import { safeErrorMessage } from '../errors.ts';
import { canonicalTimestamp } from '../time.ts';
import { QUEUE } from './jobQueue.ts';

/**
 * pg-boss's own view of the fleet's work, through its API (getQueues, getQueueSize): per queue, the jobs queued
 * (`created`: each account's next pass, mostly due later), in `retry` (a failed or expired pass, its worker presumably
 * dead) and `active` (running now). Beside it, what the API has no call for: how many queued jobs are due and how long
 * the oldest has waited — a fleet that keeps up has that near zero.
 *
 * The reader is a PgBoss that is never started: no install, no maintenance, no polling; its statements go through
 * the fleet database's own pool. Reads only, so `fleet status` beside running workers changes nothing.
 */

export interface QueueStatus {
  name: string;
  policy: string;
  /** Jobs in state created: queued, due now or later. */
  queued: number;
  retry: number;
  active: number;
  /** Of queued and retry, those whose start_after has come. */
  due: number;
  /** Seconds the oldest due job has waited past its start_after (the database's clock); null when none is due. */
  oldestDueWaitSeconds: number | null;
}

export interface QueuesView {
  /** pg-boss's schema (`<FLEET_SCHEMA>_jobs`). */
  schema: string;
  /** null when pg-boss is not installed there yet (no worker has started) or could not be read: see `problem`. */
  queues: QueueStatus[] | null;
  problem?: string;
}

/** What is read of pg-boss: a started instance of the worker, or the reader below. */
export type QueueReader = Pick<PgBoss, 'getQueues' | 'getQueueSize' | 'isInstalled'>;

/** A PgBoss over the pool of `db` (a fleet database's handle), never started: for its read calls only. */
export function queueReader(db: Db, jobsSchema: string): QueueReader {
  const pool = (db as unknown as { $client?: pg.Pool }).$client;
  if (!pool || typeof pool.query !== 'function') throw new Error('queueReader needs a node-postgres drizzle handle');
  return new PgBoss({ db: { executeSql: (text, values) => pool.query(text, values) }, schema: jobsSchema });
}

/**
 * Each queue's counts, and when each account's running pass started (its active job in the worker's queue). getQueueSize
 * counts the jobs in states before the one given (created < retry < active < completed), so three calls give the three
 * states; they are three statements, so a job moving between them may be counted in neither or both for a moment
 * (clamped at 0).
 */
export async function readQueues(reader: QueueReader, db: Db, jobsSchema: string): Promise<{ view: QueuesView; running: Map<string, string> }> {
  const running = new Map<string, string>();
  try {
    if (!(await reader.isInstalled())) {
      return { view: { schema: jobsSchema, queues: null, problem: 'pg-boss is not installed yet: no worker has started' }, running };
    }
    const queues: QueueStatus[] = [];
    for (const q of await reader.getQueues()) {
      const [created, beforeActive, open, due] = await Promise.all([
        reader.getQueueSize(q.name, { before: 'retry' }),
        reader.getQueueSize(q.name, { before: 'active' }),
        reader.getQueueSize(q.name, { before: 'completed' }),
        dueJobs(db, { jobsSchema, queue: q.name }),
      ]);
      queues.push({
        name: q.name,
        policy: q.policy ?? 'standard',
        queued: created,
        retry: Math.max(0, beforeActive - created),
        active: Math.max(0, open - beforeActive),
        due: due.due,
        oldestDueWaitSeconds: due.oldestWaitSeconds === null ? null : Math.max(0, Math.round(due.oldestWaitSeconds)),
      });
    }
    queues.sort((a, b) => a.name.localeCompare(b.name));
    if (queues.some((q) => q.name === QUEUE)) {
      for (const [account, started] of await activeJobs(db, { jobsSchema, queue: QUEUE })) running.set(account, canonicalTimestamp(started));
    }
    return { view: { schema: jobsSchema, queues }, running };
  } catch (error) {
    return { view: { schema: jobsSchema, queues: null, problem: `pg-boss could not be read: ${safeErrorMessage(error)}` }, running };
  }
}
