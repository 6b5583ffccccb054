/**
 * What every table, column, view and function of the mirror means: the one source of the database's comments
 * (`COMMENT ON`, re-applied by every migrate: db/repos/comments.ts), of docs/schema.md (`npm run docs:schema`,
 * db/schemaPage.ts) and of what BI tools show beside a column (Metabase, Grafana's query builder, DBeaver, `\d+`).
 *
 * A new table, column or view needs its entry here: test/integration/schema-docs.test.ts fails for anything in the
 * database without a comment, and for anything here the database does not have.
 */

/** How a column is measured; appended to its comment so that no one has to guess. */
export const UNITS = {
  instant: 'timestamptz, an instant to the microsecond, shown in the session time zone',
  seconds: 'seconds',
  milliseconds: 'milliseconds',
  bytes: 'bytes',
  localDate: 'date in the report time zone, REPORT_TIMEZONE',
} as const;
export type Unit = keyof typeof UNITS;

export interface ColumnDoc {
  text: string;
  unit?: Unit;
}

export interface RelationDoc {
  kind: 'table' | 'view';
  /** The question it answers, or what one row is. */
  about: string;
  /** What identifies a row (the primary key of a table; the columns unique per row of a view). */
  key?: readonly string[];
  /** In the database's column order. */
  columns: Readonly<Record<string, string | ColumnDoc>>;
}

export interface FunctionDoc {
  /** As COMMENT ON FUNCTION takes it: name and argument types. */
  signature: string;
  about: string;
}

/** A join the foreign keys do not declare (or that goes to a view), for docs/schema.md. */
export interface JoinDoc {
  from: `${string}.${string}`;
  to: `${string}.${string}`;
  /** Many rows of `from` to one of `to` ('n:1'), or at most one each ('1:1'). */
  cardinality: 'n:1' | '1:1';
}

const i = (text: string): ColumnDoc => ({ text, unit: 'instant' });
const s = (text: string): ColumnDoc => ({ text, unit: 'seconds' });
const day = (text: string): ColumnDoc => ({ text, unit: 'localDate' });

const EXCLUDED = 'Tickets the API answered 404 for (deleted_at is set) and messages no longer in their ticket (removed_at is set) are left out.';

/** ticket_sla's columns, which sla_breaches has too. */
const SLA_COLUMNS: RelationDoc['columns'] = {
  ticket_id: 'the ticket (tickets.id)',
  created_at: i('when the ticket was created'),
  status: 'the ticket status',
  priority: 'the ticket priority',
  assigned_to_id: 'the assigned agent (agents.id); null when unassigned',
  widget_name: 'the widget the ticket came from',
  sla_clock: 'business_hours or calendar: how the elapsed seconds are counted',
  first_response_at: i('the first outbound message after creation; null when not answered yet'),
  first_response_target_seconds: s('the first-response target; null when REPORT_SLA_FIRST_RESPONSE is unset'),
  first_response_elapsed_seconds: s('from creation to the first response, or to now() while unanswered, on sla_clock'),
  first_response_breached: 'first_response_elapsed_seconds > first_response_target_seconds; null when no target is set',
  closed_at: i('when the ticket was closed or resolved; null while it is not'),
  resolution_target_seconds: s('the resolution target; null when REPORT_SLA_RESOLUTION is unset'),
  resolution_elapsed_seconds: s('from creation to closed_at, or to now() while open, on sla_clock'),
  resolution_breached: 'resolution_elapsed_seconds > resolution_target_seconds; null when no target is set',
};

export const RELATIONS: Readonly<Record<string, RelationDoc>> = {
  tickets: {
    kind: 'table',
    about:
      'One row per ticket ever seen in a list or fetched: the detail fields as the API gave them, the list membership as last seen, and the mirror\'s bookkeeping. Nothing is ever deleted: a ticket gone from the API keeps its row with deleted_at or missing_since set. tickets_current shows the business columns of the tickets that still exist.',
    key: ['id'],
    columns: {
      id: 'the API\'s ticket id',
      name: 'the customer\'s name',
      email: 'the customer\'s e-mail address',
      status: 'the ticket status as the API gives it (pending, open, on_hold, resolved, closed …)',
      priority: 'the ticket priority as the API gives it (low, medium, high, urgent …); null until the detail is fetched',
      has_unread_messages: 'the customer wrote something nobody has read yet',
      replied_to_customer: 'an agent has replied to the customer',
      closed_at: i('when the ticket was closed or resolved; null while it is not'),
      last_contact_at: i('the last message in either direction, as the API gives it'),
      created_at: i('when the ticket was created'),
      updated_at: i('the API\'s last change of the ticket'),
      assigned_to: 'the assigned agent as the API gives it (the simulator: {id, name, email}); SQL or JSON null when unassigned',
      widget_id: 'the id of the widget (channel) the ticket came from',
      widget_name: 'the name of that widget',
      ai_summary: 'the API\'s generated summary; null when it has none',
      in_open: 'the ticket was in the open list at the last poll of that list',
      in_self: 'the ticket was in the list of tickets assigned to the token\'s user at the last poll',
      in_unassigned: 'the ticket was in the unassigned list at the last poll',
      in_resolved: 'the ticket was in the resolved list at the last poll',
      first_seen_at: i('when the mirror first saw the ticket (a list or a detail)'),
      last_seen_at: i('the last time a list poll showed the ticket'),
      detail_synced_at: i('the last time its detail was fetched and stored; null before the first fetch'),
      missing_since: i('since when the ticket has been in none of the four lists (a sweep of all four missed it); null while listed'),
      deleted_at: i('when the API answered 404 for the ticket; null while it exists'),
      raw: 'the last detail payload as received, minus every attachment link (url, thumbnail_url, signed links in text): what rebuild re-derives the tables from',
      detail_due_since: i('internal: since when a list showed a change the stored detail does not have yet; cleared by the next fetch'),
      state_seen_at: i('internal: the last observation that still saw the current tracked state (see ticket_history.changed_after)'),
      detail_failures: 'internal: consecutive failures to fetch or store the detail; drives a per-ticket back-off',
      detail_retry_after: i('internal: no detail fetch before this instant (back-off after failures)'),
      assigned_to_id: 'assigned_to ->> \'id\' as a plain column (generated by PostgreSQL), for joins with agents.id; null when unassigned',
    },
  },
  messages: {
    kind: 'table',
    about:
      'One row per message of a ticket\'s detail: customer messages (inbound), replies (outbound) and internal notes. A message no longer in the ticket\'s detail keeps its row with removed_at set.',
    key: ['id'],
    columns: {
      id: 'the API\'s message id',
      ticket_id: 'the ticket (tickets.id)',
      message_type: 'inbound (from the customer), outbound (a reply e-mailed to the customer) or note (internal), as the API gives it',
      ticket_status: 'the ticket\'s status when the message was written',
      message: 'the text exactly as given, minus attachment links',
      outbound_sent: 'an outbound message was sent',
      outbound_delivered_at: i('when an outbound message was delivered; null when not (yet)'),
      outbound_bounced: 'an outbound message bounced',
      outbound_spam_complaint: 'the recipient marked an outbound message as spam',
      outbound_error: 'why an outbound message failed, as the API gives it; null when it did not',
      created_at: i('when the message was written'),
      author: 'the API\'s user of the message (an agent; the simulator: {id, name, email}); null for an inbound message',
      removed_at: i('when the mirror found the message gone from its ticket\'s detail; null while present'),
      author_id: 'author ->> \'id\' as a plain column (generated by PostgreSQL), for joins with agents.id',
      synced_at: i('the last time the mirror confirmed the row: a detail fetch that contained it (or the answer of the reply that posted it); stays put once the message is removed; null for rows removed before this column existed'),
    },
  },
  attachments: {
    kind: 'table',
    about:
      'One row per file of a ticket or of one of its messages: metadata only. No attachment URL, nor any part of one, is stored anywhere (ticket-mirror attachment fetches a fresh link).',
    key: ['id'],
    columns: {
      id: 'the API\'s attachment id',
      ticket_id: 'the ticket (tickets.id)',
      message_id: 'the message it came with (messages.id); null when it belongs to the ticket alone',
      name: 'the file name',
      mime_type: 'the MIME type, as the API gives it',
      size: { text: 'the file size', unit: 'bytes' },
      removed_at: i('when the mirror found the file gone from its ticket\'s detail; null while present'),
      synced_at: i('the last time the mirror confirmed the row: a detail fetch that contained it; stays put once the file is removed; null for rows removed before this column existed'),
    },
  },
  ticket_history: {
    kind: 'table',
    about:
      'Slowly changing dimension (type 2) of each ticket\'s status, priority, assignment and list membership: one row per observed state. A change happened in (changed_after, valid_from]: the mirror observes by polling.',
    key: ['id'],
    columns: {
      id: 'row id',
      ticket_id: 'the ticket (tickets.id)',
      status: 'the status in this state',
      priority: 'the priority in this state',
      assigned_to: 'the assignment in this state, as the API gives it',
      in_open: 'in the open list in this state',
      in_self: 'in the token user\'s list in this state',
      in_unassigned: 'in the unassigned list in this state',
      in_resolved: 'in the resolved list in this state',
      valid_from: i('when the mirror first observed this state'),
      valid_to: i('when the mirror first observed the next state; null for the current row'),
      changed_after: i('the last time the previous state was still observed: the change happened after it, at valid_from at the latest; null for a ticket\'s first row'),
      assigned_to_id: 'assigned_to ->> \'id\' as a plain column (generated by PostgreSQL)',
    },
  },
  reply_outbox: {
    kind: 'table',
    about:
      'Replies to post: INSERT (ticket_id, message) and the daemon posts each exactly once, pending → sending → sent | failed.',
    key: ['id'],
    columns: {
      id: 'row id',
      ticket_id: 'the ticket to answer (tickets.id; not a foreign key: a ticket not mirrored yet may be answered)',
      message: 'the reply text, at least 3 characters after trimming',
      requested_at: i('when the row was inserted'),
      state: 'pending, sending, sent or failed',
      attempts: 'how many times posting was tried',
      error: 'why the last attempt failed, or why the row ended failed',
      message_id: 'the posted message (messages.id) once sent',
      sent_at: i('when the service accepted the reply'),
      next_attempt_at: i('a pending row is not tried again before this instant (back-off after a transient failure)'),
      sending_since: i('when the row entered sending: the POST may have gone out from then on'),
      inserted_as:
        'request (only ticket_id and message were inserted: a reply to send) or forged (inserted with columns only the daemon writes: kept as failed, never delivered), as the trigger reply_outbox_inserted judged the INSERT',
      claimed_by: 'the deliverer working on the row right now (a term of leadership, one command run), while its POST or its check of the ticket is in flight; null otherwise',
      claimed_via:
        'what proves that deliverer gone after a crash, so the row is checked 30 s after its claim instead of when its 2-minute lease ends: embedded (it had the embedded database open, which only one process can) or leader (it held the PostgreSQL leader lock in the session claimer_pid, claimer_started); null: nothing can',
      claimer_pid: 'with claimed_via = leader: the process id of the session holding the leader lock (pg_stat_activity.pid)',
      claimer_started: i('with claimed_via = leader: when that session started (pg_stat_activity.backend_start)'),
    },
  },
  api_requests: {
    kind: 'table',
    about: 'The quota ledger: one row per request sent to the API, failures included. The request budget is computed from it.',
    key: ['id'],
    columns: {
      id: 'row id',
      at: i('when the request was sent'),
      method: 'the HTTP method',
      path: 'the request path, without the query string',
      status: 'the HTTP status; null when no response arrived (network error, timeout)',
      duration_ms: { text: 'how long the request took', unit: 'milliseconds' },
      kind: 'what the request was for: list_open, list_self, list_unassigned, list_resolved, detail, reply, attachment',
      ratelimit_remaining: 'the server\'s x-ratelimit-remaining header, when it sent one',
    },
  },
  sync_runs: {
    kind: 'table',
    about: 'One row per sync pass that did anything.',
    key: ['id'],
    columns: {
      id: 'row id',
      started_at: i('when the pass started'),
      finished_at: i('when it finished; null while running or if the process died'),
      requests: 'requests the pass sent',
      tickets_changed: 'tickets whose mirrored data changed',
      details_fetched: 'ticket details fetched',
      error: 'why the pass failed or ended early; null when it did not',
    },
  },
  list_polls: {
    kind: 'table',
    about: 'Bookkeeping: one row per list poll that got a valid answer; the planner adapts each list\'s poll interval to how often it changes.',
    key: ['id'],
    columns: {
      id: 'row id',
      list: 'open, self, unassigned or resolved',
      at: i('when the poll was answered'),
      items: 'tickets the list held',
      changes: 'changes the poll showed',
      withheld: 'tickets this poll showed leaving, kept in the list until the next poll confirms a shrink by more than half',
    },
  },
  report_settings: {
    kind: 'table',
    about:
      'The reporting settings of the daemon (REPORT_TIMEZONE, REPORT_BUSINESS_HOURS, REPORT_SLA_FIRST_RESPONSE, REPORT_SLA_RESOLUTION): one row, rewritten from the configuration by every migrate (run, sync, migrate), read by the views. Change the variables, not the row.',
    key: ['id'],
    columns: {
      id: 'always true: the table holds one row',
      time_zone: 'IANA time zone the views cut days, weeks and hours in (REPORT_TIMEZONE)',
      business_hours: 'REPORT_BUSINESS_HOURS as given, e.g. Mon-Fri 09:00-17:00; null when unset',
      business_windows:
        'the same, parsed: a JSON array of {isodow (1 = Monday), opens, closes} in local time of time_zone; null when unset (business_seconds() is then null)',
      sla_first_response_seconds: s('REPORT_SLA_FIRST_RESPONSE: the first-response target; null when unset (not judged)'),
      sla_resolution_seconds: s('REPORT_SLA_RESOLUTION: the resolution target; null when unset (not judged)'),
      updated_at: i('when the settings last changed'),
    },
  },
  __ticket_mirror_migrations: {
    kind: 'table',
    about: 'Internal: the migrations applied (drizzle\'s journal).',
    key: ['id'],
    columns: {
      id: 'row id',
      hash: 'hash of the migration file applied',
      created_at: { text: 'the migration\'s timestamp from migrations/meta/_journal.json', unit: 'milliseconds' },
    },
  },

  // ----- Views -----------------------------------------------------------------------------------------------------
  open_backlog_daily: {
    kind: 'view',
    about:
      'How many tickets were open at the end of each day? One row per day in the report time zone, from the day of the first ticket_history row to today. A ticket counts while its ticket_history row in effect at as_of has in_open; a deleted ticket only until its deleted_at.',
    key: ['day'],
    columns: {
      day: day('the day'),
      as_of: i('the instant counted: the midnight in the report time zone that ends the day (23 or 25 hours after the previous one on a daylight-saving change), or now() for today'),
      open_tickets: 'tickets in the open list at as_of, per ticket_history',
    },
  },
  ticket_first_response: {
    kind: 'view',
    about: `How long did the customer wait for our first reply? One row per ticket not deleted. ${EXCLUDED}`,
    key: ['ticket_id'],
    columns: {
      ticket_id: 'the ticket (tickets.id)',
      created_at: i('when the ticket was created'),
      first_response_at: i('the first outbound message strictly after the ticket\'s creation; null when nobody has answered yet'),
      first_response_seconds: s('first_response_at - created_at; null when not answered yet'),
      first_response_business_seconds: s('the same counted in business hours only (REPORT_BUSINESS_HOURS, in the report time zone; business_seconds()); null when not answered yet or no business hours are set'),
    },
  },
  ticket_resolution: {
    kind: 'view',
    about: 'How long did tickets take to resolve? One row per ticket with closed_at set, not deleted.',
    key: ['ticket_id'],
    columns: {
      ticket_id: 'the ticket (tickets.id)',
      created_at: i('when the ticket was created'),
      closed_at: i('when it was closed or resolved'),
      resolution_seconds: s('closed_at - created_at'),
      resolution_business_seconds: s('the same counted in business hours only; null when no business hours are set'),
    },
  },
  open_by_assignee: {
    kind: 'view',
    about: 'Who holds the open tickets? One row per assignee of open tickets (in_open, not deleted), unassigned ones together.',
    key: ['assignee_id', 'assignee_name'],
    columns: {
      assignee_id: 'assigned_to ->> \'id\'; null for unassigned tickets',
      assignee_name: 'assigned_to ->> \'name\'; \'unassigned\' for unassigned tickets',
      open_tickets: 'open tickets of this assignee',
      oldest_created_at: i('created_at of the oldest of them'),
      unread_tickets: 'of them, tickets with has_unread_messages',
    },
  },
  open_by_widget: {
    kind: 'view',
    about: 'Where do the open tickets come from? One row per widget of open tickets (in_open, not deleted).',
    key: ['widget_id', 'widget_name'],
    columns: {
      widget_id: 'the widget (tickets.widget_id)',
      widget_name: 'its name',
      open_tickets: 'open tickets from this widget',
      oldest_created_at: i('created_at of the oldest of them'),
      unread_tickets: 'of them, tickets with has_unread_messages',
    },
  },
  unread_waiting: {
    kind: 'view',
    about: 'Which customers are waiting for us, longest first? One row per open ticket (in_open, not deleted) with unread messages.',
    key: ['ticket_id'],
    columns: {
      ticket_id: 'the ticket (tickets.id)',
      name: 'the customer\'s name',
      email: 'the customer\'s e-mail address',
      status: 'the ticket status',
      priority: 'the ticket priority',
      assignee_id: 'assigned_to ->> \'id\'; null when unassigned',
      assignee_name: 'assigned_to ->> \'name\'; null when unassigned',
      widget_name: 'the widget the ticket came from',
      created_at: i('when the ticket was created'),
      waiting_since: i('the last inbound message (removed ones ignored), or last_contact_at when none is stored'),
      waiting_seconds: s('now() - waiting_since, at query time'),
    },
  },
  reply_delivery: {
    kind: 'view',
    about: `Do our replies reach the customers? One row per day (report time zone) with outbound messages, by their created_at. ${EXCLUDED}`,
    key: ['day'],
    columns: {
      day: day('the day the messages were written'),
      outbound_messages: 'outbound messages',
      sent: 'of them, outbound_sent',
      delivered: 'of them, with outbound_delivered_at set',
      bounced: 'of them, outbound_bounced',
      spam_complaints: 'of them, outbound_spam_complaint',
      errors: 'of them, with outbound_error set',
    },
  },
  ticket_load_hourly: {
    kind: 'view',
    about: `When does the work come in? One row per hour of the report time zone with any new ticket, customer message or reply. A day has 23 or 25 of these hours on a daylight-saving change. ${EXCLUDED}`,
    key: ['hour'],
    columns: {
      hour: i('the start of the hour (date_trunc in the report time zone)'),
      day: day('the day of the hour'),
      isodow: 'the day of the week, 1 = Monday … 7 = Sunday, in the report time zone',
      hour_of_day: 'the hour of the day, 0-23, in the report time zone (the hour repeated when clocks go back appears twice, as two rows)',
      tickets_created: 'tickets created in the hour',
      inbound_messages: 'customer messages (inbound) written in the hour',
      outbound_messages: 'replies (outbound) written in the hour',
    },
  },
  response_times_weekly: {
    kind: 'view',
    about:
      'How fast do we answer and resolve, week by week? One row per week (Monday to Sunday in the report time zone) with tickets created or resolved: percentiles of first response by week of creation (ticket_first_response) and of resolution by week of closing (ticket_resolution).',
    key: ['week'],
    columns: {
      week: day('the Monday that starts the week'),
      week_start: i('the first instant of the week (for a time axis)'),
      tickets_created: 'tickets created in the week',
      tickets_answered: 'of them, answered by now',
      first_response_p50_seconds: s('median first response of the answered ones'),
      first_response_p90_seconds: s('90th percentile of the same'),
      first_response_business_p50_seconds: s('median first response in business hours; null without business hours'),
      first_response_business_p90_seconds: s('90th percentile of the same'),
      tickets_resolved: 'tickets closed in the week',
      resolution_p50_seconds: s('median resolution time of them'),
      resolution_p90_seconds: s('90th percentile of the same'),
      resolution_business_p50_seconds: s('median resolution time in business hours; null without business hours'),
      resolution_business_p90_seconds: s('90th percentile of the same'),
    },
  },
  tickets_current: {
    kind: 'view',
    about:
      'The tickets as they are now, business columns only: one row per ticket not deleted, without the raw payload and the internal bookkeeping. The assignment as plain columns.',
    key: ['id'],
    columns: {
      id: 'the API\'s ticket id',
      name: 'the customer\'s name',
      email: 'the customer\'s e-mail address',
      status: 'the ticket status',
      priority: 'the ticket priority',
      has_unread_messages: 'the customer wrote something nobody has read yet',
      replied_to_customer: 'an agent has replied to the customer',
      created_at: i('when the ticket was created'),
      updated_at: i('the API\'s last change of the ticket'),
      last_contact_at: i('the last message in either direction'),
      closed_at: i('when the ticket was closed or resolved; null while it is not'),
      assigned_to_id: 'the assigned agent (agents.id); null when unassigned',
      assigned_to_name: 'the assigned agent\'s name as the ticket gives it',
      assigned_to_email: 'the assigned agent\'s e-mail address as the ticket gives it',
      widget_id: 'the widget the ticket came from',
      widget_name: 'its name',
      ai_summary: 'the API\'s generated summary',
      in_open: 'in the open list at the last poll',
      in_self: 'in the token user\'s list at the last poll',
      in_unassigned: 'in the unassigned list at the last poll',
      in_resolved: 'in the resolved list at the last poll',
      missing_since: i('since when the ticket has been in none of the lists; null while listed'),
      last_seen_at: i('the last time a list poll showed the ticket'),
      synced_at: i('the last time its detail was fetched (tickets.detail_synced_at): how current the detail columns are'),
    },
  },
  agents: {
    kind: 'view',
    about:
      'The helpdesk\'s agents the mirror has seen: one row per id found in a message\'s author or a ticket\'s assignment (current or in ticket_history). Name and e-mail from the latest sighting.',
    key: ['id'],
    columns: {
      id: 'the agent id (author ->> \'id\', assigned_to ->> \'id\')',
      name: 'the name at the latest sighting',
      email: 'the e-mail address at the latest sighting',
      first_seen_at: i('the earliest sighting: a message they wrote, or the first observation of an assignment to them'),
      last_seen_at: i('the latest sighting: a message they wrote, or the last observation that still showed a ticket assigned to them'),
      messages: 'messages they wrote (outbound and notes), removed ones and deleted tickets left out',
      assigned_tickets: 'tickets assigned to them now, deleted ones left out',
      open_tickets: 'of them, in the open list',
    },
  },
  ticket_sla: {
    kind: 'view',
    about:
      'Did each ticket meet the service levels? One row per ticket not deleted, judged against REPORT_SLA_FIRST_RESPONSE and REPORT_SLA_RESOLUTION (report_settings). Time is counted in business hours when REPORT_BUSINESS_HOURS is set (sla_clock = business_hours), on the wall clock otherwise (calendar). A ticket not answered or not resolved yet counts its time until now() and is breached as soon as that exceeds the target.',
    key: ['ticket_id'],
    columns: SLA_COLUMNS,
  },
  sla_breaches: {
    kind: 'view',
    about: 'The tickets of ticket_sla that breached a target (first response or resolution), with the same columns.',
    key: ['ticket_id'],
    columns: SLA_COLUMNS,
  },
};

export const FUNCTIONS: readonly FunctionDoc[] = [
  {
    signature: 'report_time_zone()',
    about: 'The report time zone (report_settings.time_zone, REPORT_TIMEZONE; UTC when unset), for your own queries: date_trunc(\'week\', created_at, report_time_zone()).',
  },
  {
    signature: 'business_seconds(timestamptz, timestamptz)',
    about:
      'Seconds between two instants that fall within the business hours of report_settings (REPORT_BUSINESS_HOURS, wall-clock times in the report time zone, so a daylight-saving change moves them with the clocks). 0 when the second instant is not after the first; null when either is null or no business hours are set.',
  },
  {
    signature: 'business_seconds(timestamptz, timestamptz, text, jsonb)',
    about:
      'business_seconds(from, to) with the time zone and the windows given: an IANA name and a JSON array of {isodow (1 = Monday), opens, closes} (HH:MM local times, closes up to 24:00), as in report_settings.business_windows.',
  },
];

/** Joins no foreign key declares, for the schema page. */
export const JOINS: readonly JoinDoc[] = [
  { from: 'reply_outbox.ticket_id', to: 'tickets.id', cardinality: 'n:1' },
  { from: 'reply_outbox.message_id', to: 'messages.id', cardinality: '1:1' },
  { from: 'tickets.assigned_to_id', to: 'agents.id', cardinality: 'n:1' },
  { from: 'messages.author_id', to: 'agents.id', cardinality: 'n:1' },
  { from: 'ticket_history.assigned_to_id', to: 'agents.id', cardinality: 'n:1' },
];

/** The comment stored for a relation. */
export function relationComment(doc: RelationDoc): string {
  return doc.key ? `${doc.about} Key: ${doc.key.join(', ')}.` : doc.about;
}

/** The comment stored for a column: its text, and its unit when it has one. */
export function columnComment(doc: string | ColumnDoc): string {
  if (typeof doc === 'string') return doc;
  return doc.unit ? `${doc.text} (${UNITS[doc.unit]})` : doc.text;
}
