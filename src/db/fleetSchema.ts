import { sql } from 'drizzle-orm';
import { check, customType, doublePrecision, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { instantsInSpan } from './instants.ts';

/**
 * The fleet's control schema (FLEET_SCHEMA, default ticket_mirror_fleet): the accounts a fleet mirrors, one row each.
 * Each account's own data lives in a schema of its own (`schema_name`, the contract's tables unchanged; see the README's
 * fleet section for why). Declared without a schema and reached through `search_path`, like db/schema.ts; its
 * migrations are generated into migrations/fleet/ by `npm run db:generate` (drizzle.fleet.config.ts).
 *
 * The cross-account views (fleet_tickets, account_backlog, …) are not declared here: they are SQL (migration fleet/0002),
 * views over functions that read this table when queried.
 */

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'string', precision: 6 });

const bytea = customType<{ data: Buffer; driverData: Buffer }>({
  dataType: () => 'bytea',
});

/** An account's name: lower case, starts with a letter, at most 40; also its default schema's suffix and a metric label. */
export const ACCOUNT_NAME_PATTERN = '^[a-z][a-z0-9_]{0,39}$';
/** A schema an account's tables may live in: a lower-case SQL identifier that is not one of PostgreSQL's own. */
export const SCHEMA_NAME_PATTERN = '^[a-z_][a-z0-9_]{0,62}$';

/** The states a worker records (`recordPassOutcome`); `new` until the first pass. */
export const ACCOUNT_STATES = ['new', 'ok', 'failing', 'auth_failed'] as const;

export const accounts = pgTable(
  'accounts',
  {
    name: text('name').primaryKey(),
    schemaName: text('schema_name').notNull().unique('accounts_schema_name_key'),
    apiUrl: text('api_url').notNull(),
    tokenSealed: bytea('token_sealed').notNull(),
    dailyLimit: integer('daily_limit').notNull().default(1440),
    minuteLimit: integer('minute_limit').notNull().default(60),
    reserve: doublePrecision('reserve').notNull().default(0.1),
    pausedAt: ts('paused_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    // Written by the workers, at the end of each pass.
    state: text('state').notNull().default('new'),
    failures: integer('failures').notNull().default(0),
    notBefore: ts('not_before'),
    lastPassAt: ts('last_pass_at'),
    lastPassRequests: integer('last_pass_requests'),
    lastError: text('last_error'),
    nextPassAt: ts('next_pass_at'),
    worker: text('worker'),
  },
  (t) => [
    check('accounts_name_check', sql`${t.name} ~ '^[a-z][a-z0-9_]{0,39}$'`),
    check('accounts_schema_name_check', sql`${t.schemaName} ~ '^[a-z_][a-z0-9_]{0,62}$' and ${t.schemaName} !~ '^pg_' and ${t.schemaName} <> 'information_schema'`),
    check('accounts_api_url_check', sql`${t.apiUrl} ~ '^https?://'`),
    check('accounts_token_sealed_check', sql`octet_length(${t.tokenSealed}) > 33`),
    check('accounts_daily_limit_check', sql`${t.dailyLimit} > 0`),
    check('accounts_minute_limit_check', sql`${t.minuteLimit} > 0`),
    check('accounts_reserve_check', sql`${t.reserve} >= 0 and ${t.reserve} < 1`),
    check('accounts_state_check', sql`${t.state} in ('new', 'ok', 'failing', 'auth_failed')`),
    check('accounts_failures_check', sql`${t.failures} >= 0`),
    // As every mirror's instants: one row set to `infinity` by hand (to pause for ever, say) stopped accounts list,
    // fleet status and the worker's /metrics for every account.
    instantsInSpan('accounts', [t.pausedAt, t.createdAt, t.notBefore, t.lastPassAt, t.nextPassAt]),
  ],
);
