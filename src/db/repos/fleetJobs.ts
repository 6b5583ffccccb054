import { queryRows, quoteIdent, sql, type Tx } from '../connect.ts';

/**
 * The fleet worker's own SQL beside pg-boss's: reads of the engine's job table (pg-boss 10, schema `<FLEET_SCHEMA>_jobs`)
 * that its API has no call for — which accounts have no job at all, and an account's unfinished jobs, locked — and the
 * trigger through which a reply inserted into an account's outbox wakes the fleet. pg-boss itself writes every job
 * (send, fetch, complete, fail, cancel, expire); nothing here does. Callers own the transaction; the control schema's
 * tables are reached through the search_path of the fleet database (db/fleet.ts).
 *
 * The predicates repeat those of pg-boss's unique index on stately queues (`state <= 'active' and policy = 'stately'`,
 * keyed by `coalesce(singleton_key, '')`) so that PostgreSQL answers them from that index.
 */

export type OpenJobState = 'created' | 'retry' | 'active';

export interface OpenJob {
  id: string;
  state: OpenJobState;
  /** start_after, epoch ms. */
  startAfter: number;
  /** How long until it is due, by the database's clock (ms; negative: overdue). */
  dueInMs: number;
  /** pg-boss's priority (higher first). */
  priority: number;
  /** Started by an operator's action (its data's `manual`). */
  manual: boolean;
}

const jobTable = (jobsSchema: string) => sql.raw(`${quoteIdent(jobsSchema)}.job`);

/** Active accounts (not paused) with no job created, in retry or active in `queue`: their chain of passes is broken. */
export async function accountsWithoutJob(tx: Tx, o: { jobsSchema: string; queue: string }): Promise<string[]> {
  const rows = await queryRows<{ name: string }>(
    tx,
    sql`select a.name from accounts a
        where a.paused_at is null
          and not exists (
            select 1 from ${jobTable(o.jobsSchema)} j
            where j.name = ${o.queue} and j.state <= 'active' and j.policy = 'stately' and coalesce(j.singleton_key, '') = a.name)
        order by a.name`,
  );
  return rows.map((r) => r.name);
}

/**
 * The account's jobs that are not finished (at most one per state: the stately queue's rule), oldest first. `lock`
 * takes them FOR UPDATE, so that a concurrent fetch (FOR UPDATE SKIP LOCKED) passes them by until the transaction ends.
 */
export async function openJobs(tx: Tx, o: { jobsSchema: string; queue: string; account: string; lock?: boolean }): Promise<OpenJob[]> {
  const rows = await queryRows<{ id: string; state: OpenJobState; start_ms: string | number; due_in_ms: string | number; priority: number; manual: boolean }>(
    tx,
    sql`select id::text as id, state::text as state, priority, coalesce(j.data -> 'manual' = 'true'::jsonb, false) as manual,
          (extract(epoch from start_after) * 1000)::bigint as start_ms,
          (extract(epoch from start_after - now()) * 1000)::bigint as due_in_ms
        from ${jobTable(o.jobsSchema)} j
        where j.name = ${o.queue} and j.state <= 'active' and j.policy = 'stately' and coalesce(j.singleton_key, '') = ${o.account}
        order by j.created_on, j.id
        ${o.lock ? sql`for update` : sql``}`,
  );
  return rows.map((r) => ({
    id: r.id,
    state: r.state,
    startAfter: Number(r.start_ms),
    dueInMs: Number(r.due_in_ms),
    priority: Number(r.priority),
    manual: r.manual === true,
  }));
}

/** The database's clock, epoch ms (inside a transaction: its start, the instant pg-boss's startAfter counts from). */
export async function databaseNowMs(tx: Tx): Promise<number> {
  const [row] = await queryRows<{ ms: string | number }>(tx, sql`select (extract(epoch from now()) * 1000)::bigint as ms`);
  return Number(row!.ms);
}

/**
 * Raises to `priority` the queued jobs whose live work has fallen due (their data's `liveAt`, epoch ms by the database's
 * clock: a list the account's plan polls then) and every job in `retry` (its worker died or failed mid-pass: the
 * account's takeover, bound to a minute, must not wait behind the fleet's background work); counts the live jobs due
 * and waiting for a worker, these included. pg-boss 10 has no call to change a queued job's priority; its fetch orders by priority, then age, and
 * reads nothing else of it, so the column is ours to raise. A `liveAt` that is not a number (a job inserted by hand)
 * is left alone.
 */
export async function promoteLiveJobs(tx: Tx, o: { jobsSchema: string; queue: string; priority: number }): Promise<{ promoted: number; waiting: number }> {
  const job = jobTable(o.jobsSchema);
  const [row] = await queryRows<{ promoted: number; waiting: number }>(
    tx,
    sql`with promoted as (
          update ${job} set priority = ${o.priority}
          where name = ${o.queue} and priority < ${o.priority}
            and (state = 'retry' or state = 'created'
              and (case when jsonb_typeof(data -> 'liveAt') = 'number' then (data ->> 'liveAt')::numeric end) <= extract(epoch from now()) * 1000)
          returning start_after <= now() as due)
        select (select count(*) from promoted)::int as promoted,
          ((select count(*) from promoted where due) +
           (select count(*) from ${job} where name = ${o.queue} and state in ('created', 'retry') and priority >= ${o.priority} and start_after <= now()))::int as waiting`,
  );
  return { promoted: row?.promoted ?? 0, waiting: row?.waiting ?? 0 };
}

/**
 * Serialises the fleet's senders of one account's jobs (a pass's successor, the reconciler, a wake-up) until the
 * transaction ends, so that "no job yet, send one" is decided by one of them at a time.
 */
export async function lockAccountChain(tx: Tx, account: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`ticket-mirror:fleet-chain:${account}`}))`);
}

/**
 * Makes an INSERT into the account's reply_outbox announce itself on the fleet's reply channel (`channel`, see
 * fleetChannels; once per statement), so that a
 * reply waits seconds for the worker, not until the account's next planned pass. Idempotent; the function and trigger
 * live in the account's schema and go with it. `run` on the same schema is unaffected: nobody listens there.
 */
export async function installReplyNotify(tx: Tx, o: { schema: string; account: string; channel: string }): Promise<void> {
  const schema = quoteIdent(o.schema);
  await tx.execute(
    sql.raw(`create or replace function ${schema}.ticket_mirror_fleet_reply_notify() returns trigger language plpgsql as $$
      begin
        perform pg_notify(tg_argv[0], tg_argv[1]);
        return null;
      end $$`),
  );
  await tx.execute(
    sql.raw(`create or replace trigger ticket_mirror_fleet_reply after insert on ${schema}.reply_outbox
      for each statement execute function ${schema}.ticket_mirror_fleet_reply_notify(${literal(o.channel)}, ${literal(o.account)})`),
  );
}

/** Whether the account's reply trigger is there, announcing this account's name on `channel` (else installReplyNotify). */
export async function replyNotifyInstalled(tx: Tx, o: { schema: string; account: string; channel: string }): Promise<boolean> {
  const [row] = await queryRows<{ args: Buffer }>(
    tx,
    sql`select tgargs as args from pg_trigger
        where tgname = 'ticket_mirror_fleet_reply' and tgrelid = to_regclass(${`${quoteIdent(o.schema)}.reply_outbox`})`,
  );
  return row !== undefined && Buffer.from(row.args).equals(Buffer.from(`${o.channel}\0${o.account}\0`));
}

/** A string literal for DDL, where parameters cannot go; account names are `^[a-z][a-z0-9_]*$` anyway. */
function literal(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** Whether the schema holds a mirror already (its tickets table): an account migrated for the first time has none. */
export async function mirrorExists(tx: Tx, schema: string): Promise<boolean> {
  const [row] = await queryRows<{ found: boolean }>(tx, sql`select to_regclass(${`${quoteIdent(schema)}.tickets`}) is not null as found`);
  return row?.found === true;
}
