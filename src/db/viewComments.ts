import { day, i, s, type FunctionDoc, type JoinDoc, type RelationDoc } from './docTypes.ts';

/** The BI views of each mirror's schema, its SQL functions and the joins no foreign key declares (see db/comments.ts). */

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

export const VIEWS: Readonly<Record<string, RelationDoc>> = {
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
