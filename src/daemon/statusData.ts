import type { Config } from '../config/loadConfig.ts';
import type { Db } from '../db/connect.ts';
import { requestsByHour } from '../db/repos/ledger.ts';
import { runErrors } from '../db/repos/runs.ts';
import type { ListActivity } from '../db/repos/work.ts';
import { safeText } from '../logger.ts';
import { mirrorStatus, type MirrorStatus } from '../sync/status.ts';
import { canonicalTimestamp, DAY_MS, HOUR_MS, MINUTE_MS } from '../time.ts';
import type { Readiness } from './readiness.ts';
import type { ReplicaHealth } from './replica.ts';

/** Requests of one clock hour (UTC). */
export interface HourBar {
  /** Start of the hour, epoch ms. */
  start: number;
  requests: number;
  /** Requests that got no answer, a 429 or a server error. */
  failed: number;
}

export interface RecentError {
  /** When the pass started (canonical timestamp). */
  at: string;
  error: string;
}

/** Everything the status page shows; read from the database alone, like `status`. */
export interface StatusPageData {
  status: MirrorStatus;
  health: ReplicaHealth;
  readiness: Readiness;
  /** The 24 clock hours up to the current one, oldest first. */
  hours: HourBar[];
  /** The last passes that recorded an error, newest first. */
  errors: RecentError[];
}

export async function loadStatusPageData(
  db: Db,
  config: Pick<Config, 'dailyLimit' | 'minuteLimit' | 'reserve'>,
  now: number,
  health: ReplicaHealth,
  readiness: Readiness,
  activity?: ListActivity,
): Promise<StatusPageData> {
  const [status, hours, errors] = await Promise.all([mirrorStatus(db, config, now, activity), requestsPerHour(db, now), recentErrors(db, 10)]);
  return { status, health, readiness, hours, errors };
}

/** A ledger row without an outcome for longer than this lost its process mid-request (one attempt times out at 30 s). */
const IN_FLIGHT_MS = 2 * MINUTE_MS;

/** The ledger by clock hour over the last 24 h, every hour present (zeros included). */
export async function requestsPerHour(db: Db, now: number): Promise<HourBar[]> {
  const rows = await requestsByHour(db, now - DAY_MS, now, now - IN_FLIGHT_MS);
  const byHour = new Map(rows.map((r) => [Number(r.hour_ms), r]));
  const current = Math.floor(now / HOUR_MS) * HOUR_MS;
  return Array.from({ length: 24 }, (_, i) => {
    const start = current - (23 - i) * HOUR_MS;
    const row = byHour.get(start);
    return { start, requests: row?.requests ?? 0, failed: row?.failed ?? 0 };
  });
}

export async function recentErrors(db: Db, limit: number): Promise<RecentError[]> {
  const rows = await runErrors(db, limit);
  return rows.map((r) => ({ at: canonicalTimestamp(String(r.started_at)), error: safeText(r.error) }));
}
