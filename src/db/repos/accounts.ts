import { queryRows, sql, type Tx } from '../connect.ts';
import type { ACCOUNT_STATES } from '../fleetSchema.ts';
import { ts } from './rows.ts';

/**
 * Every SQL statement on the fleet's control schema (FLEET_SCHEMA, db/fleet.ts): the accounts and the views across
 * them. Names are unqualified: the fleet database's search_path is its schema. Callers own the transaction.
 *
 * Workers read an account's row at each job, so an edit through SQL (`update accounts set paused_at = now()`) takes
 * effect at its next pass, as one through the CLI does.
 */

export type AccountState = (typeof ACCOUNT_STATES)[number];

export interface Account {
  name: string;
  schemaName: string;
  apiUrl: string;
  /** tokenSeal.ts's blob; opened only in a worker's memory. */
  tokenSealed: Buffer;
  dailyLimit: number;
  minuteLimit: number;
  reserve: number;
  pausedAt: string | null;
  createdAt: string;
  // Written by workers (recordPassOutcome):
  state: AccountState;
  failures: number;
  notBefore: string | null;
  lastPassAt: string | null;
  lastPassRequests: number | null;
  lastError: string | null;
  nextPassAt: string | null;
  worker: string | null;
}

/** What `accounts add` (or an SQL insert) gives; the rest of the row is the workers'. */
export type NewAccount = Pick<Account, 'name' | 'schemaName' | 'apiUrl' | 'tokenSealed' | 'dailyLimit' | 'minuteLimit' | 'reserve'> & {
  /** Added paused (`accounts add` then `resume`). @default null */
  pausedAt?: string | null;
};

export interface PassOutcome {
  state: AccountState;
  failures: number;
  notBefore: string | null;
  lastPassAt: string;
  lastPassRequests: number;
  lastError: string | null;
  nextPassAt: string | null;
  worker: string;
}

/** An account of that name exists, or another account's mirror is in that schema already. */
export class AccountExistsError extends Error {
  override name = 'AccountExistsError';
  constructor(
    readonly account: string,
    /** What is taken: the name, or the schema (by `holder`). */
    readonly taken: 'name' | 'schema',
    readonly schema: string,
    readonly holder: string,
  ) {
    super(
      taken === 'name'
        ? `account ${account} exists already`
        : `schema ${schema} holds the mirror of account ${holder} already: give account ${account} another one (--schema)`,
    );
  }
}

interface AccountRow {
  name: string;
  schema_name: string;
  api_url: string;
  token_sealed: Buffer;
  daily_limit: number;
  minute_limit: number;
  reserve: number;
  paused_at: string | null;
  created_at: string;
  state: AccountState;
  failures: number;
  not_before: string | null;
  last_pass_at: string | null;
  last_pass_requests: number | null;
  last_error: string | null;
  next_pass_at: string | null;
  worker: string | null;
}

const COLUMNS = sql.raw(`name, schema_name, api_url, token_sealed, daily_limit, minute_limit, reserve, paused_at::text, created_at::text,
  state, failures, not_before::text, last_pass_at::text, last_pass_requests, last_error, next_pass_at::text, worker`);

function toAccount(r: AccountRow): Account {
  return {
    name: r.name,
    schemaName: r.schema_name,
    apiUrl: r.api_url,
    tokenSealed: r.token_sealed,
    dailyLimit: r.daily_limit,
    minuteLimit: r.minute_limit,
    reserve: Number(r.reserve),
    pausedAt: ts(r.paused_at),
    createdAt: ts(r.created_at)!,
    state: r.state,
    failures: r.failures,
    notBefore: ts(r.not_before),
    lastPassAt: ts(r.last_pass_at),
    lastPassRequests: r.last_pass_requests,
    lastError: r.last_error,
    nextPassAt: ts(r.next_pass_at),
    worker: r.worker,
  };
}

/**
 * Adds an account; AccountExistsError when the name or the schema is taken (nothing written, the transaction usable).
 * The fleet views leave the account out until its schema is migrated.
 */
export async function insertAccount(tx: Tx, a: NewAccount): Promise<void> {
  const inserted = await queryRows<{ name: string }>(
    tx,
    sql`insert into accounts (name, schema_name, api_url, token_sealed, daily_limit, minute_limit, reserve, paused_at)
        values (${a.name}, ${a.schemaName}, ${a.apiUrl}, ${a.tokenSealed}, ${a.dailyLimit}, ${a.minuteLimit}, ${a.reserve}, ${a.pausedAt ?? null})
        on conflict do nothing
        returning name`,
  );
  if (inserted.length === 1) return;
  const [holder] = await queryRows<{ name: string; schema_name: string }>(
    tx,
    sql`select name, schema_name from accounts where name = ${a.name} or schema_name = ${a.schemaName} order by name = ${a.name} desc limit 1`,
  );
  if (!holder) throw new Error(`account ${a.name} was neither inserted nor found`);
  throw new AccountExistsError(a.name, holder.name === a.name ? 'name' : 'schema', a.schemaName, holder.name);
}

export async function getAccount(tx: Tx, name: string): Promise<Account | undefined> {
  const [row] = await queryRows<AccountRow>(tx, sql`select ${COLUMNS} from accounts where name = ${name}`);
  return row ? toAccount(row) : undefined;
}

/** All accounts by name; `activeOnly`: those not paused. */
export async function listAccounts(tx: Tx, opts: { activeOnly?: boolean } = {}): Promise<Account[]> {
  const rows = await queryRows<AccountRow>(
    tx,
    opts.activeOnly
      ? sql`select ${COLUMNS} from accounts where paused_at is null order by name`
      : sql`select ${COLUMNS} from accounts order by name`,
  );
  return rows.map(toAccount);
}

/** Pauses (an instant) or resumes (null) an account; false when there is none of that name. */
export async function setPaused(tx: Tx, name: string, pausedAt: string | null): Promise<boolean> {
  const rows = await queryRows<{ name: string }>(tx, sql`update accounts set paused_at = ${pausedAt} where name = ${name} returning name`);
  return rows.length === 1;
}

/** Removes an account's row (its schema stays: see dropAccountSchema); false when there is none of that name. */
export async function deleteAccount(tx: Tx, name: string): Promise<boolean> {
  const rows = await queryRows<{ name: string }>(tx, sql`delete from accounts where name = ${name} returning name`);
  return rows.length === 1;
}

/** What a worker records at the end of a pass, in the transaction of the pass's bookkeeping. */
export async function recordPassOutcome(tx: Tx, name: string, o: PassOutcome): Promise<void> {
  await tx.execute(
    sql`update accounts set state = ${o.state}, failures = ${o.failures}, not_before = ${o.notBefore}, last_pass_at = ${o.lastPassAt},
          last_pass_requests = ${o.lastPassRequests}, last_error = ${o.lastError}, next_pass_at = ${o.nextPassAt}, worker = ${o.worker}
        where name = ${name}`,
  );
}

/** Replaces an account's sealed token (a new token, or the same one under a new FLEET_KEY); false when there is none. */
export async function replaceSealedToken(tx: Tx, name: string, tokenSealed: Buffer): Promise<boolean> {
  const rows = await queryRows<{ name: string }>(tx, sql`update accounts set token_sealed = ${tokenSealed} where name = ${name} returning name`);
  return rows.length === 1;
}

/**
 * How many accounts the views across the fleet (fleet_tickets, account_backlog, account_first_response,
 * account_resolution) can read: those whose schema has its tickets table. There is nothing to rebuild: since fleet
 * migration 0002 the views read the accounts table when they are queried, one account's query at a time, so an account
 * added, removed or just migrated is in them at once. A worker calls this after first migrating an account's schema.
 */
export async function refreshFleetViews(tx: Tx): Promise<number> {
  const [row] = await queryRows<{ n: number }>(
    tx,
    sql`select count(*)::int as n from accounts a where to_regclass(format('%I.tickets', a.schema_name)) is not null`,
  );
  return row!.n;
}

/**
 * Drops the schema of an account's mirror and everything in it; call it after deleteAccount, in the same transaction. Refuses `public` (an adopted single-account mirror lives there, and other
 * things may too) and any name that is not a plain lower-case identifier.
 */
export async function dropAccountSchema(tx: Tx, schema: string): Promise<void> {
  if (schema === 'public' || !/^[a-z_][a-z0-9_]{0,62}$/.test(schema) || schema.startsWith('pg_')) {
    throw new Error(`schema ${JSON.stringify(schema)} is not dropped: only an account's own schema is`);
  }
  await tx.execute(sql.raw(`drop schema if exists "${schema}" cascade`));
}

/** Whether a schema of that name exists (an account added with one holds a mirror already: adopted). */
export async function schemaExists(tx: Tx, schema: string): Promise<boolean> {
  const [row] = await queryRows<{ found: boolean }>(tx, sql`select exists (select 1 from pg_namespace where nspname = ${schema}) as found`);
  return row!.found;
}

/**
 * Takes, until the transaction ends, the lock that a pass of the account's mirror holds for its whole length
 * (`ticket-mirror:sync:<schema>`, the session lock of daemon/leader.ts that `run` and a fleet worker take); false when a
 * pass holds it now. While it is held here no pass can start: what the transaction does to the schema is not raced.
 */
export async function tryLockAccountSchema(tx: Tx, schema: string): Promise<boolean> {
  const [row] = await queryRows<{ locked: boolean }>(tx, sql`select pg_try_advisory_xact_lock(hashtext(${`ticket-mirror:sync:${schema}`})) as locked`);
  return row!.locked;
}

/**
 * A fleet's PostgreSQL channels, named after its schema (at most 57 characters: both fit in 63), so that two fleets in
 * one database do not wake each other's workers: `announce`, on which an account that may be synced now (added,
 * resumed) is announced, and `reply`, on which an account's reply outbox announces a row inserted; the account's name
 * is the payload. The default fleet's: `ticket_mirror_fleet` and `ticket_mirror_fleet_reply`.
 */
export function fleetChannels(fleetSchema: string): { announce: string; reply: string } {
  return { announce: fleetSchema, reply: `${fleetSchema}_reply` };
}

/**
 * Announces that `name` may be synced at once (pg_notify on the fleet's announce channel, delivered when the transaction
 * commits): the hook through which a worker listening there can start the account's chain of passes without waiting
 * for its next look at the table.
 */
export async function announceAccount(tx: Tx, fleetSchema: string, name: string): Promise<void> {
  await tx.execute(sql`select pg_notify(${fleetChannels(fleetSchema).announce}, ${name})`);
}
