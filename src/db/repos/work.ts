import type { SQL } from 'drizzle-orm';
import { LIST_NAMES, type ListName } from '../../api/endpoints.ts';
import { BUCKET_MS, emptyHistory, HISTORY_BUCKETS, requestUsage, type ListState, type PlannerHistory } from '../../model/plannerHistory.ts';
import { learnedMultipliers, neutralMultipliers } from '../../model/revalidation.ts';
import { CLOCK_SET_BACK_MS, DAY_MS, HOUR_MS, isoMicros, SECOND_MS } from '../../time.ts';
import { queryRows, sql, type Tx } from '../connect.ts';
import { ledgerGainedOf, ledgerGainedSql, type LedgerGained } from './ledger.ts';

/**
 * What the planner needs to know of the mirror, and the tickets it picks, each in one query. The orderings are the
 * planner's policy (see `planPass`); they live in SQL so that a mirror of any size is never loaded whole.
 */

/** The ticket's retry back-off (see recordDetailFailure), if any, is over at `at`. */
function backoffOver(at: string): SQL {
  return sql`(detail_retry_after is null or detail_retry_after <= ${at}::timestamptz)`;
}

/**
 * The ticket's detail may be fetched at `at`: not deleted, and not backing off. Due details skip the first test (see
 * `pickDue`).
 */
function fetchable(at: string): SQL {
  return sql`(deleted_at is null and ${backoffOver(at)})`;
}

/** A span in seconds, as an SQL literal, for arithmetic on `extract(epoch from …)`. */
function seconds(ms: number): SQL {
  return sql.raw(`${ms / SECOND_MS}.0`);
}

/**
 * e^(−span/τ) for a span in seconds (a negative span counts as 0). The exponent stops at 100 (e^−100 ≈ 4·10⁻⁴⁴:
 * nothing is left): beyond ~745 τ the numeric result is too small for a float8, and PostgreSQL raises "out of range"
 * where it could give 0 — an instant decades old (a clock that started at 1970, a row a user wrote) would fail every
 * statement that reads it.
 */
function decay(spanSeconds: SQL, tauMs: number): SQL {
  return sql`exp(-least(100.0, greatest(0.0, ${spanSeconds}) / ${seconds(tauMs)}))`;
}

/** The list names as a Postgres array literal, for `= any(...)` and `unnest(...)`. */
const LIST_ARRAY = `{${LIST_NAMES.join(',')}}`;

export interface WorkCounts {
  due: number;
  backfill: number;
  /** Tickets in the open list (not deleted): the ones whose details may change without a list showing it. */
  open: number;
  /** When the stalest detail revalidation could pick was read (epoch ms), or null when there is none. */
  oldestDetailAt: number | null;
  /** The same among the open tickets: how far revalidation is behind on the ones whose details change. */
  oldestOpenDetailAt: number | null;
}

export async function countWork(tx: Tx, now: number): Promise<WorkCounts> {
  const [row] = await queryRows<WorkCountRow>(tx, sql`select ${workCountColumns(isoMicros(now))}`);
  return workCountsOf(row);
}

interface WorkCountRow {
  due: number;
  backfill: number;
  open: number;
  oldest_ms: string | number | null;
  oldest_open_ms: string | number | null;
}

/**
 * countWork's figures as columns of a select: counts over partial ranges of indexes (detail_due_since,
 * detail_synced_at, in_open), not a scan of every ticket; the planner asks after every pass.
 */
function workCountColumns(at: string): SQL {
  return sql`(select count(*) from tickets where detail_due_since is not null and ${backoffOver(at)})::int as due,
      (select count(*) from tickets where detail_synced_at is null and detail_due_since is null and ${fetchable(at)})::int as backfill,
      (select count(*) from tickets where in_open and deleted_at is null)::int as open,
      (select (extract(epoch from min(detail_synced_at)) * 1000)::bigint from tickets
        where detail_synced_at is not null and detail_due_since is null and ${fetchable(at)}) as oldest_ms,
      (select (extract(epoch from min(detail_synced_at)) * 1000)::bigint from tickets
        where in_open and detail_synced_at is not null and detail_due_since is null and ${fetchable(at)}) as oldest_open_ms`;
}

function workCountsOf(row: WorkCountRow | undefined): WorkCounts {
  return {
    due: row?.due ?? 0,
    backfill: row?.backfill ?? 0,
    open: row?.open ?? 0,
    oldestDetailAt: row?.oldest_ms == null ? null : Number(row.oldest_ms),
    oldestOpenDetailAt: row?.oldest_open_ms == null ? null : Number(row.oldest_open_ms),
  };
}

/**
 * Tickets whose detail a list asked for, oldest request first. Deleted ones are not skipped: one stays due only when a
 * list showed it change after the request that found it gone (see markDeleted), and that is worth a second look.
 */
export async function pickDue(tx: Tx, now: number, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const rows = await queryRows<{ id: string }>(
    tx,
    sql`select id from tickets where detail_due_since is not null and ${backoffOver(isoMicros(now))}
        order by detail_due_since, id limit ${limit}`,
  );
  return rows.map((r) => r.id);
}

/** Never-fetched tickets: open before resolved, newest first. */
export async function pickBackfill(tx: Tx, now: number, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const rows = await queryRows<{ id: string }>(
    tx,
    sql`select id from tickets where detail_synced_at is null and detail_due_since is null and ${fetchable(isoMicros(now))}
        order by in_open desc, in_self desc, in_unassigned desc, created_at desc nulls last, id limit ${limit}`,
  );
  return rows.map((r) => r.id);
}

/** A ticket's last known activity: its last contact, update or creation, whichever is latest (null when none is known). */
const LAST_ACTIVITY = sql.raw('greatest(last_contact_at, updated_at, created_at)');

/**
 * The fixed weights of a re-read, before learning: a ticket in an active list (open, self, unassigned) weighs 1, one
 * only resolved 1/200; unread messages ×1.5; activity (last contact, update, creation) in the last day up to ×1.5,
 * fading over a day. Times the staleness in hours, it is the re-read's expected worth (`expected` in
 * revalidation_learning).
 */
/** In a list of live tickets (open, the user's, unassigned), where a detail may change unseen: not resolved only. */
const IN_ACTIVE_LIST = sql.raw('(in_open or in_self or in_unassigned)');

function fixedWeight(at: string): SQL {
  return sql`(case when ${IN_ACTIVE_LIST} then 1.0 else 0.005 end)
    * (case when has_unread_messages then 1.5 else 1.0 end)
    * (1.0 + (case when ${LAST_ACTIVITY} is null then 0.0
        else 0.5 * ${decay(sql`extract(epoch from (${at}::timestamptz - ${LAST_ACTIVITY}))`, DAY_MS)} end))`;
}

/**
 * The class a ticket's re-read is learnt in (0 … REVALIDATION_CLASSES − 1): in an active list or only resolved; unread
 * messages or not; its last activity within 6 h, within a day, or older (or unknown).
 */
function revalidationClass(at: string): SQL {
  return sql`((case when ${IN_ACTIVE_LIST} then 0 else 6 end)
    + (case when has_unread_messages then 3 else 0 end)
    + (case when ${LAST_ACTIVITY} is null then 2
        when ${LAST_ACTIVITY} > ${at}::timestamptz - interval '6 hours' then 0
        when ${LAST_ACTIVITY} > ${at}::timestamptz - interval '1 day' then 1
        else 2 end))`;
}

/** Hours since the ticket's detail was read. */
function staleHours(at: string): SQL {
  return sql`(extract(epoch from (${at}::timestamptz - detail_synced_at)) / ${seconds(HOUR_MS)})`;
}

/**
 * Details to re-read for changes no list shows, most likely changed first. A ticket's chance of holding an unseen
 * change grows with the time since its detail was read, at the rate the ticket changes: so the score is staleness ×
 * weight. The fixed weight (fixedWeight) is higher for a ticket in an open list (resolved ones all but never change
 * without a list showing it: a reopening does), for an unread one (its customer is waiting and writes again, and a
 * message on an unread ticket changes nothing a list shows), and for one active in the last day or so (none when its
 * activity is unknown); the bonuses stay small (at most 2.25× together). It is multiplied by what the mirror has learnt
 * of the ticket's class (`multipliers`, from revalidationMultipliers: within [½, 2]; all 1 is the fixed order). Every
 * open ticket must come round, or the mirror is never exact: one not read for `maxAgeMs` (Plan.revalidateMaxAgeMs)
 * goes first, stalest first, whatever its weight. A detail read within the last `minAgeMs` is never re-read
 * (the planner derives it: `Plan.revalidateMinAgeMs`): with a budget far larger than the mirror, revalidation would
 * otherwise read the same few tickets on every pass.
 *
 * Each pick carries what its re-read teaches (revalidationLearnt): the ticket's class and the staleness × fixed weight
 * it was ranked by, as the ticket stood before its detail is written again — the ranking's own figures, not a second
 * read of the row.
 */
export async function pickRevalidate(
  tx: Tx,
  now: number,
  limit: number,
  minAgeMs: number,
  multipliers: readonly number[] = neutralMultipliers(),
  maxAgeMs = Infinity,
): Promise<RevalidationPick[]> {
  if (limit <= 0) return [];
  const at = isoMicros(now);
  // An open ticket not read for maxAgeMs goes first, stalest first (Plan.revalidateMaxAgeMs): every one comes round.
  const overdue = Number.isFinite(maxAgeMs) ? sql`${IN_ACTIVE_LIST} and detail_synced_at < ${isoMicros(now - maxAgeMs)}::timestamptz` : sql`false`;
  const learnt = `{${multipliers.map((m) => (Number.isFinite(m) && m > 0 ? m : 1)).join(',')}}`;
  const rows = await queryRows<{ id: string; cls: number; expected: number | string }>(
    tx,
    sql`select id, cls, expected from (
          select id, ${revalidationClass(at)}::int as cls, (${fixedWeight(at)} * ${staleHours(at)})::float8 as expected,
            (${overdue}) as overdue, detail_synced_at as read_at from tickets
          where detail_synced_at < ${isoMicros(now - minAgeMs)}::timestamptz and detail_due_since is null
            and ${fetchable(at)}) t
        order by overdue desc, case when overdue then read_at end, coalesce((${learnt}::float8[])[cls + 1], 1.0) * expected desc, id
        limit ${limit}`,
  );
  return rows.map((r) => ({ id: r.id, cls: Number(r.cls), expected: Number(r.expected) }));
}

/** A re-read about to be made: the ticket's class and its expected worth under the fixed weights (see fixedWeight). */
export interface RevalidationSample {
  cls: number;
  expected: number;
}

/** A ticket picked for a re-read, with what that re-read will teach. */
export interface RevalidationPick extends RevalidationSample {
  id: string;
}

/** Time constant of the learning's decay: what was seen a week ago counts e^−1 as much as what is seen now. */
const LEARNING_DECAY_MS = 7 * DAY_MS;

/**
 * A statement's part (a data-modifying CTE) that adds one re-read to its class's counts, the older counts decayed to
 * `at`; `found` says whether the re-read found a change. writeDetail runs it in the statement that writes the detail.
 * The row's instant becomes `at` even when it was later (a clock set back, a row a user stamped in the future): the
 * older counts are then taken whole, and the decay goes on from `at` — kept, a future instant would stop it until then.
 */
export function revalidationLearnt(sample: RevalidationSample, found: SQL, at: number): SQL {
  const d = decay(sql`extract(epoch from (excluded.updated_at - l.updated_at))`, LEARNING_DECAY_MS);
  return sql`
    insert into revalidation_learning as l (class, reads, found, expected, updated_at)
    select ${sample.cls}, 1, case when ${found} then 1 else 0 end, ${sample.expected}, ${isoMicros(at)}::timestamptz
    on conflict (class) do update set
      reads = l.reads * ${d} + 1,
      found = l.found * ${d} + excluded.found,
      expected = l.expected * ${d} + excluded.expected,
      updated_at = excluded.updated_at`;
}

/**
 * Each class's learnt multiplier (see learnedMultipliers), from revalidation_learning's counts as they stand: a class
 * re-read rarely — because it was learnt to find little — keeps that evidence until it is re-read again. (Decaying the
 * counts to now brought such classes, the resolved tickets' above all, back towards 1 between their re-reads: more of
 * them re-read, and on `small` detail-only changes found later, p50 1.1 → 1.2 h; bench/README.md.)
 */
export async function revalidationMultipliers(tx: Tx): Promise<number[]> {
  const rows = await queryRows<{ class: number; found: number | string; expected: number | string }>(
    tx,
    sql`select class, found, expected from revalidation_learning`,
  );
  return learnedMultipliers(rows.map((r) => ({ cls: Number(r.class), found: Number(r.found), expected: Number(r.expected) })));
}

/** What a plan reads of the mirror (see plannerInputs). */
export interface PlannerInputs {
  lists: Record<ListName, ListState>;
  work: WorkCounts;
  history: PlannerHistory;
  /** What the ledger gained after the row plannerInputs was given (`ledger`), when it was given one. */
  ledger?: LedgerGained;
}

/**
 * The list activity of the last eight days — list changes and polls per clock half hour — kept from one plan to the
 * next, so that a plan reads only the polls recorded since the one before instead of eight days of list_polls (at
 * `abundant`'s 600 polls an hour, 115,000 rows: 160 ms on PostgreSQL, 450 ms on PGlite, where the polls since take
 * 2–3 and 6–8 ms; a plan comes after every pass and at every wake).
 * A plan reads the polls the last one did not count: those recorded after it (a higher id) and those whose instant it
 * has passed since (a poll dated ahead of the clock counts once its half hour comes, as in a whole read). list_polls is
 * the mirror's own log, one row a poll, never changed but by a clock set back (restampFuture): a plan at an instant
 * before the last one's reads it whole again. What it does not see until the next whole read (a restart): a row a user
 * deletes or changes, one inserted with an id below the newest one and an instant already passed, and the bound a row
 * inserted before counted polls puts on them (each poll's changes are bounded by the poll before it: plannerInputs).
 */
export class ListActivity {
  /** Changes and polls by half hour (epoch ms / BUCKET_MS). */
  readonly #buckets = new Map<number, { changes: number; polls: number }>();
  /** The newest list_polls id the last read saw (PostgreSQL's bigint, as text), or null: read whole next time. */
  #lastId: string | null = null;
  /** The instant of the last read: a poll dated up to it, with an id up to `lastId`, is counted. */
  #readTo = 0;
  /** A read is under way (between `unread` and `add` or `abandon`): a second one at once would count its polls twice. */
  #busy = false;

  get busy(): boolean {
    return this.#busy;
  }

  /** Starts a read at `now`: the polls it must count (an SQL condition on list_polls), or null for all of them. */
  unread(now: number): SQL | null {
    this.#busy = true;
    if (this.#lastId === null || now < this.#readTo) {
      this.#buckets.clear();
      this.#lastId = null;
      return null;
    }
    return sql`(id > ${this.#lastId}::bigint or at > ${isoMicros(this.#readTo)}::timestamptz)`;
  }

  /** Adds what a read at `now` found (per half hour), the newest id it saw with it. */
  add(now: number, lastId: string | number | null, rows: ReadonlyArray<[bucket: number, changes: number, polls: number]>): void {
    for (const [bucket, changes, polls] of rows) {
      const b = this.#buckets.get(Number(bucket)) ?? { changes: 0, polls: 0 };
      b.changes += changes;
      b.polls += polls;
      this.#buckets.set(Number(bucket), b);
    }
    const oldest = Math.floor(now / BUCKET_MS) - (HISTORY_BUCKETS - 1);
    for (const bucket of this.#buckets.keys()) if (bucket < oldest) this.#buckets.delete(bucket);
    // An empty table: every poll to come has a higher id than none, so "after 0" is not enough (a user's row may have a
    // negative id); read whole until one is there.
    this.#lastId = lastId === null ? null : String(lastId);
    this.#readTo = now;
    this.#busy = false;
  }

  /** A read that failed: nothing was counted. */
  abandon(): void {
    this.#busy = false;
  }

  /** PlannerHistory's `changes` and `pollsLastDay` at `now` (the instant of the last `add`). */
  at(now: number): { changes: number[]; pollsLastDay: number } {
    const bucketNow = Math.floor(now / BUCKET_MS);
    const { changes } = emptyHistory();
    let pollsLastDay = 0;
    for (const [bucket, b] of this.#buckets) {
      const k = bucketNow - bucket;
      if (k < 0 || k >= changes.length) continue;
      changes[k]! += b.changes;
      if (k < DAY_MS / BUCKET_MS) pollsLastDay += b.polls;
    }
    return { changes, pollsLastDay };
  }
}

/**
 * Everything a plan reads of the mirror, in one statement (the planner runs after every pass and at every wake: four
 * round trips were most of a quiet wake's cost):
 * - each list's last successful poll up to `now` (and the minute after it, as a clock set back is told: time.ts). A
 *   poll dated further ahead is not the last one: a row a user inserted into list_polls with a date to come would
 *   otherwise keep its list from being polled until then;
 * - the work there is (countWork);
 * - the past (PlannerHistory): the requests still in the rolling window, from `sentAt`, and background's among them,
 *   from `backgroundAt` (see requestUsage: the budget's own samples, not a query); list changes per clock half hour of
 *   the last eight days (the activity the sweeps follow: what `activity` has not counted yet, see ListActivity; a fresh
 *   one reads them all), the first poll ever, and the earliest per-ticket retry. A poll counts at most the changes its
 *   list could show: each item it listed, and each member the list had before it (the previous poll's items and
 *   withheld leaves) leaving. The differ never counts more; a row a user wrote may claim any count up to 2^31 − 1, and
 *   the planner forecasts the details of the hours ahead from these counts: one such row in the current half hour
 *   took every slot of the day's forecast, stretched the sweeps to one a day and stopped revalidation, and in the
 *   history it would again a week later;
 * - given `ledger`, what api_requests gained after its row `after` (ledgerGainedSql: another process's requests?).
 * list_polls is never pruned: each list is read through one index probe, never scanned whole.
 */
export async function plannerInputs(
  tx: Tx,
  now: number,
  sentAt: Iterable<number>,
  backgroundAt: Iterable<number>,
  kept?: ListActivity,
  ledger?: { after: number; own: readonly number[] },
): Promise<PlannerInputs> {
  const at = isoMicros(now);
  const oldest = (Math.floor(now / BUCKET_MS) - (HISTORY_BUCKETS - 1)) * BUCKET_MS;
  // One read at a time counts into `kept`; one while another is under way reads whole.
  const activity = kept && !kept.busy ? kept : new ListActivity();
  const unread = activity.unread(now);
  const [row] = await queryRows<
    WorkCountRow & {
      lists: Array<[string, number | null]> | null;
      retry_ms: string | number | null;
      first_ms: string | number | null;
      activity: Array<[number, number, number]> | null;
      last_id: string | number | null;
      ledger?: [string | number | null, number] | null;
    }
  >(
    tx,
    sql`select ${workCountColumns(at)},
      (select json_agg(json_build_array(l.list,
          (select (extract(epoch from max(at)) * 1000)::bigint from list_polls p
           where p.list = l.list and p.at <= ${isoMicros(now + CLOCK_SET_BACK_MS)}::timestamptz)))
        from unnest(${LIST_ARRAY}::text[]) as l(list)) as lists,
      (select (extract(epoch from min(detail_retry_after)) * 1000)::bigint from tickets where detail_retry_after > ${at}::timestamptz) as retry_ms,
      (select (extract(epoch from min(m)) * 1000)::bigint
        from (select (select min(at) from list_polls p where p.list = l.list) as m from unnest(${LIST_ARRAY}::text[]) as l(list)) f) as first_ms,
      -- date_part, not extract: a double, not a numeric, for every row of eight days of polls (twice as fast).
      (select json_agg(json_build_array(bucket, n, polls)) from (
          select floor(date_part('epoch', at) / ${seconds(BUCKET_MS)})::bigint as bucket,
            sum(least(changes, items + coalesce(before, b.members, 0))) as n, count(*)::int as polls
          from (select list, at, changes::float8, items::float8,
              lag(items::float8 + withheld::float8) over (partition by list order by at, id) as before
            from list_polls
            where list = any(${LIST_ARRAY}::text[]) and at >= ${isoMicros(oldest)}::timestamptz and at <= ${at}::timestamptz
              and ${unread ?? sql`true`}) p
          -- The members before the first poll of each list read here: the newest poll before (not read now).
          left join (select l.list, (select q.items::float8 + q.withheld::float8 from list_polls q
              where q.list = l.list and q.at <= ${at}::timestamptz and ${unread ? sql`not ${unread}` : sql`q.at < ${isoMicros(oldest)}::timestamptz`}
              order by q.at desc, q.id desc limit 1) as members
            from unnest(${LIST_ARRAY}::text[]) as l(list)) b on b.list = p.list
          group by 1) a) as activity,
      (select max(id) from list_polls) as last_id
      ${ledger ? sql`, ${ledgerGainedSql(ledger.after, ledger.own)} as ledger` : sql``}`,
  ).catch((error: unknown) => {
    activity.abandon();
    throw error;
  });
  activity.add(now, row?.last_id ?? null, row?.activity ?? []);
  const lists = {} as Record<ListName, ListState>;
  for (const l of LIST_NAMES) lists[l] = { lastPolledAt: null };
  for (const [list, lastMs] of row?.lists ?? []) if (list in lists) lists[list as ListName] = { lastPolledAt: lastMs === null ? null : Number(lastMs) };
  return {
    lists,
    work: workCountsOf(row),
    history: {
      ...activity.at(now),
      firstPollAt: row?.first_ms == null ? null : Number(row.first_ms),
      ...requestUsage(sentAt, now, backgroundAt),
      nextRetryAt: row?.retry_ms == null ? null : Number(row.retry_ms),
    },
    ...(ledger ? { ledger: ledgerGainedOf(ledger.after, row?.ledger) } : {}),
  };
}
