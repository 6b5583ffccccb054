import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  check,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  type AnyPgColumn,
} from 'drizzle-orm/pg-core';
import { MAX_JSON_DEPTH } from '../api/listBody.ts';
import { instantsInSpan } from './instants.ts';

/**
 * The mirror's tables. Names and columns of the public contract (shared/contract.md) are binding: BI dashboards query
 * them. Tables are declared without a schema and reached through `search_path`, so `DB_SCHEMA` can place them anywhere.
 *
 * Every instant is `timestamptz` in drizzle's string mode: drizzle's Date mode and the raw drivers would drop the
 * microseconds the API gives. Values are read back through `canonicalTimestamp` when compared.
 */
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'string', precision: 6 });

/**
 * A jsonb column nests no deeper than any answer of the API may (MAX_JSON_DEPTH, api/listBody.ts; jsonpath's `.**{n}`
 * descends n levels and no further). A value nested thousands deep, written by hand, overflowed the stack of the code
 * that compares or writes it back, and stopped every pass. A value too small to nest that deep is not walked (a list
 * poll rewrites thousands of rows, each checked).
 */
const shallowJson = (name: string, column: AnyPgColumn) =>
  check(
    name,
    sql`case when pg_column_size(${column}) < 512 then true else not jsonb_path_exists(${column}, ${sql.raw(`'$.**{${MAX_JSON_DEPTH + 1}}'`)}) end`,
  );

/**
 * Stored with fillfactor 50 (migration 0003; drizzle cannot declare a table's storage parameters): each list poll
 * updates every ticket it lists, and half-free pages let those updates stay heap-only (HOT), leaving the indexes alone.
 */
export const tickets = pgTable(
  'tickets',
  {
    id: text('id').primaryKey(),
    name: text('name'),
    email: text('email'),
    status: text('status'),
    priority: text('priority'),
    hasUnreadMessages: boolean('has_unread_messages'),
    repliedToCustomer: boolean('replied_to_customer'),
    closedAt: ts('closed_at'),
    lastContactAt: ts('last_contact_at'),
    createdAt: ts('created_at'),
    updatedAt: ts('updated_at'),
    assignedTo: jsonb('assigned_to'),
    widgetId: text('widget_id'),
    widgetName: text('widget_name'),
    aiSummary: text('ai_summary'),
    // List membership as last seen.
    inOpen: boolean('in_open').notNull().default(false),
    inSelf: boolean('in_self').notNull().default(false),
    inUnassigned: boolean('in_unassigned').notNull().default(false),
    inResolved: boolean('in_resolved').notNull().default(false),
    // Mirror bookkeeping.
    firstSeenAt: ts('first_seen_at').notNull(),
    lastSeenAt: ts('last_seen_at').notNull(),
    detailSyncedAt: ts('detail_synced_at'),
    missingSince: ts('missing_since'),
    deletedAt: ts('deleted_at'),
    raw: jsonb('raw'),
    /** Set when a list showed a change the stored detail does not reflect yet; cleared by the next detail fetch. */
    detailDueSince: ts('detail_due_since'),
    /** Last time an observation still saw the current tracked state (see ticket_history.changed_after). */
    stateSeenAt: ts('state_seen_at'),
    /** Consecutive failures to fetch or store this ticket's detail; drives a per-ticket back-off. */
    detailFailures: integer('detail_failures').notNull().default(0),
    detailRetryAfter: ts('detail_retry_after'),
    /** `assigned_to ->> 'id'` as a plain column for joins (agents view); kept by PostgreSQL, so rebuild keeps it too. */
    assignedToId: text('assigned_to_id').generatedAlwaysAs(sql`assigned_to ->> 'id'`),
  },
  (t) => [
    check('tickets_detail_failures_check', sql`${t.detailFailures} >= 0`),
    shallowJson('tickets_assigned_to_check', t.assignedTo),
    instantsInSpan('tickets', [
      t.closedAt,
      t.lastContactAt,
      t.createdAt,
      t.updatedAt,
      t.firstSeenAt,
      t.lastSeenAt,
      t.detailSyncedAt,
      t.missingSince,
      t.deletedAt,
      t.detailDueSince,
      t.stateSeenAt,
      t.detailRetryAfter,
    ]),
    index('tickets_created_at_idx').on(t.createdAt),
    index('tickets_detail_due_idx').on(t.detailDueSince).where(sql`detail_due_since is not null`),
    index('tickets_detail_synced_idx').on(t.detailSyncedAt),
    index('tickets_open_idx').on(t.inOpen).where(sql`in_open`),
  ],
);

export const messages = pgTable(
  'messages',
  {
    id: text('id').primaryKey(),
    ticketId: text('ticket_id')
      .notNull()
      .references(() => tickets.id),
    messageType: text('message_type'),
    ticketStatus: text('ticket_status'),
    message: text('message'),
    outboundSent: boolean('outbound_sent'),
    outboundDeliveredAt: ts('outbound_delivered_at'),
    outboundBounced: boolean('outbound_bounced'),
    outboundSpamComplaint: boolean('outbound_spam_complaint'),
    outboundError: text('outbound_error'),
    createdAt: ts('created_at'),
    author: jsonb('author'),
    removedAt: ts('removed_at'),
    /** `author ->> 'id'` as a plain column. */
    authorId: text('author_id').generatedAlwaysAs(sql`author ->> 'id'`),
    /** The last time a detail (or a posted reply's answer) confirmed the row; it stays put once the row is removed. */
    syncedAt: ts('synced_at'),
  },
  (t) => [
    instantsInSpan('messages', [t.outboundDeliveredAt, t.createdAt, t.removedAt, t.syncedAt]),
    shallowJson('messages_author_check', t.author),
    index('messages_ticket_idx').on(t.ticketId, t.createdAt),
  ],
);

export const attachments = pgTable(
  'attachments',
  {
    id: text('id').primaryKey(),
    ticketId: text('ticket_id')
      .notNull()
      .references(() => tickets.id),
    messageId: text('message_id').references(() => messages.id),
    name: text('name'),
    mimeType: text('mime_type'),
    size: bigint('size', { mode: 'number' }),
    removedAt: ts('removed_at'),
    /** The last time a detail confirmed the row. */
    syncedAt: ts('synced_at'),
  },
  (t) => [
    instantsInSpan('attachments', [t.removedAt, t.syncedAt]),
    index('attachments_ticket_idx').on(t.ticketId),
    index('attachments_message_idx').on(t.messageId),
  ],
);

/** SCD type 2: one row per observed state; the change happened in (changed_after, valid_from]. */
export const ticketHistory = pgTable(
  'ticket_history',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    ticketId: text('ticket_id')
      .notNull()
      .references(() => tickets.id),
    status: text('status'),
    priority: text('priority'),
    assignedTo: jsonb('assigned_to'),
    inOpen: boolean('in_open').notNull(),
    inSelf: boolean('in_self').notNull(),
    inUnassigned: boolean('in_unassigned').notNull(),
    inResolved: boolean('in_resolved').notNull(),
    validFrom: ts('valid_from').notNull(),
    validTo: ts('valid_to'),
    changedAfter: ts('changed_after'),
    /** `assigned_to ->> 'id'` as a plain column. */
    assignedToId: text('assigned_to_id').generatedAlwaysAs(sql`assigned_to ->> 'id'`),
  },
  (t) => [
    instantsInSpan('ticket_history', [t.validFrom, t.validTo, t.changedAfter]),
    shallowJson('ticket_history_assigned_to_check', t.assignedTo),
    index('ticket_history_ticket_idx').on(t.ticketId, t.validFrom),
    uniqueIndex('ticket_history_current_idx').on(t.ticketId).where(sql`valid_to is null`),
    index('ticket_history_valid_idx').on(t.validFrom, t.validTo),
  ],
);

export const OUTBOX_STATES = ['pending', 'sending', 'sent', 'failed'] as const;
export type OutboxState = (typeof OUTBOX_STATES)[number];

export const replyOutbox = pgTable(
  'reply_outbox',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    ticketId: text('ticket_id').notNull(),
    message: text('message').notNull(),
    requestedAt: ts('requested_at').notNull().defaultNow(),
    state: text('state', { enum: OUTBOX_STATES }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    error: text('error'),
    messageId: text('message_id'),
    sentAt: ts('sent_at'),
    /** When a pending row may be tried again after a transient failure. */
    nextAttemptAt: ts('next_attempt_at'),
    /** When the row entered `sending`: the POST may have gone out from then on. */
    sendingSince: ts('sending_since'),
    /**
     * How the row was inserted, as the trigger `reply_outbox_inserted` (migration 0005) judged it, whatever the INSERT
     * said: `request` — ticket_id and message only, a reply to send; `forged` — with columns only the daemon writes
     * (state, message_id, next_attempt_at …), kept as `failed` and never delivered nor trusted.
     */
    insertedAs: text('inserted_as', { enum: ['request', 'forged'] }).notNull().default('request'),
    /**
     * The claim, set while a deliverer works on the row (its POST or its check in flight) and cleared by every other
     * move: who (a term of leadership, one command's run), and what can prove it gone after a crash — `embedded` (it
     * had the embedded database open, which one process only can) or `leader` (it held the PostgreSQL leader lock in
     * the session claimer_pid / claimer_started); null: nothing can. See releaseAbandonedClaims.
     */
    claimedBy: text('claimed_by'),
    claimedVia: text('claimed_via', { enum: ['embedded', 'leader'] }),
    claimerPid: integer('claimer_pid'),
    claimerStarted: ts('claimer_started'),
  },
  (t) => [
    check('reply_outbox_state_check', sql`${t.state} in ('pending', 'sending', 'sent', 'failed')`),
    check('reply_outbox_inserted_as_check', sql`${t.insertedAs} in ('request', 'forged')`),
    check('reply_outbox_claimed_via_check', sql`${t.claimedVia} in ('embedded', 'leader')`),
    check('reply_outbox_message_check', sql`char_length(${t.message}) >= 3`),
    check('reply_outbox_ticket_check', sql`char_length(btrim(${t.ticketId})) > 0`),
    index('reply_outbox_open_idx').on(t.id).where(sql`state in ('pending', 'sending')`),
  ],
);

/** The quota ledger: one row per request sent, failures included. The budget is computed from it. */
export const apiRequests = pgTable(
  'api_requests',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    at: ts('at').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    /** Null when no response arrived (network error, timeout). */
    status: integer('status'),
    durationMs: integer('duration_ms'),
    /** What the request was for: api/endpoints.ts RequestKind (list_*, detail, backfill, revalidate, reply, lookup). */
    kind: text('kind'),
    /** The server's x-ratelimit-remaining, when it sent one. */
    ratelimitRemaining: integer('ratelimit_remaining'),
  },
  (t) => [instantsInSpan('api_requests', [t.at]), index('api_requests_at_idx').on(t.at)],
);

export const syncRuns = pgTable(
  'sync_runs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    startedAt: ts('started_at').notNull(),
    finishedAt: ts('finished_at'),
    requests: integer('requests').notNull().default(0),
    ticketsChanged: integer('tickets_changed').notNull().default(0),
    detailsFetched: integer('details_fetched').notNull().default(0),
    error: text('error'),
  },
  (t) => [instantsInSpan('sync_runs', [t.startedAt, t.finishedAt]), index('sync_runs_started_idx').on(t.startedAt)],
);

/** One row per list poll that got a valid answer: the planner adapts each list's interval to its rate of change. */
export const listPolls = pgTable(
  'list_polls',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    list: text('list').notNull(),
    at: ts('at').notNull(),
    items: integer('items').notNull(),
    changes: integer('changes').notNull(),
    /** Tickets this poll showed leaving but kept in the list, until the next poll confirms (the differ's confirmShrink). */
    withheld: integer('withheld').notNull().default(0),
  },
  (t) => [
    instantsInSpan('list_polls', [t.at]),
    // Counts, never below zero: a negative one (written by hand) made the sweep schedule 0/0, and every pass failed.
    check('list_polls_counts_check', sql`${t.items} >= 0 and ${t.changes} >= 0 and ${t.withheld} >= 0`),
    index('list_polls_list_idx').on(t.list, t.at),
  ],
);

/**
 * What revalidation has learnt of which details change unseen: per class of ticket (db/repos/work.ts
 * `revalidationClass`), its re-reads, how many found a change, and how many the fixed weights expected, each decayed
 * with a time constant of a week. Bookkeeping, a few rows: the re-read order weights each class by found / expected.
 */
export const revalidationLearning = pgTable(
  'revalidation_learning',
  {
    class: smallint('class').primaryKey(),
    reads: doublePrecision('reads').notNull(),
    found: doublePrecision('found').notNull(),
    expected: doublePrecision('expected').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [instantsInSpan('revalidation_learning', [t.updatedAt])],
);

/**
 * The reporting settings of the daemon's configuration (REPORT_TIMEZONE, REPORT_BUSINESS_HOURS, REPORT_SLA_*), one row
 * written by every migrate (db/repos/reportSettings.ts), read by the BI views: SQL cannot see the environment.
 */
export const reportSettings = pgTable(
  'report_settings',
  {
    /** Always true: the table holds one row. */
    id: boolean('id').primaryKey().default(true),
    timeZone: text('time_zone').notNull().default('UTC'),
    /** REPORT_BUSINESS_HOURS as given; null when unset. */
    businessHours: text('business_hours'),
    /** The same, parsed: `[{ isodow, opens, closes }]` in local time of time_zone; null when unset. */
    businessWindows: jsonb('business_windows'),
    slaFirstResponseSeconds: integer('sla_first_response_seconds'),
    slaResolutionSeconds: integer('sla_resolution_seconds'),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    check('report_settings_one_row', sql`${t.id}`),
    // What config/reportSettings.ts parses REPORT_BUSINESS_HOURS into, and business_seconds() casts without a check:
    // one window of another shape (written by hand) failed every view and report that counts business hours. An array
    // of objects (strict: lax jsonpath unwraps a nested array), each isodow a digit 1-7 as written (1.0 is a number,
    // but not an int to cast), opens and closes HH:MM with opens first.
    check(
      'report_settings_business_windows_check',
      sql`${t.businessWindows} is null or (jsonb_typeof(${t.businessWindows}) = 'array'
        and not jsonb_path_exists(${t.businessWindows}, 'strict $[*] ? (@.type() != "object")')
        and jsonb_path_query_array(${t.businessWindows}, '$[*].isodow')::text ~ '^\\[([1-7](, [1-7])*)?\\]$'
        and not jsonb_path_exists(${t.businessWindows}, ${sql.raw(
          `'$[*] ? (!(@.isodow.type() == "number"` +
            ` && @.opens.type() == "string" && @.opens like_regex "^([01][0-9]|2[0-3]):[0-5][0-9]$"` +
            ` && @.closes.type() == "string" && @.closes like_regex "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$" && @.opens < @.closes))'`,
        )}))`,
    ),
  ],
);
