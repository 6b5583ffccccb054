import type { ColumnDoc, FunctionDoc, RelationDoc } from './comments.ts';

/**
 * What the fleet's control schema (FLEET_SCHEMA) holds, as db/comments.ts says it for each mirror's schema: the one
 * source of its comments, applied by every fleet migrate (db/fleet.ts). test/integration/fleet-accounts.test.ts fails
 * for anything in the control schema without a comment, and for anything here it does not have.
 */

const i = (text: string): ColumnDoc => ({ text, unit: 'instant' });
const s = (text: string): ColumnDoc => ({ text, unit: 'seconds' });

const ACCOUNT = 'the account (accounts.name)';
const ONE_BRANCH =
  'Reads the accounts table when queried: the rows of every account whose schema has the relation with each column read (an account whose schema does not exist yet is left out), one account\'s query at a time, with the caller\'s privileges. For one account, its own schema is faster to query.';

export const FLEET_RELATIONS: Readonly<Record<string, RelationDoc>> = {
  accounts: {
    kind: 'table',
    about:
      'The helpdesk accounts this fleet mirrors, one row each: where its API is, its token (sealed), its limits, and what the workers last recorded. Each account\'s mirror is the schema schema_name, with the tables of a single-account mirror. SQL works as well as the CLI: update paused_at to pause, delete to remove, insert with a token from `ticket-mirror accounts seal NAME`; workers read the row at each pass.',
    key: ['name'],
    columns: {
      name: 'the account\'s name: lower case letters, digits and _, starting with a letter, at most 40; also a label of the metrics',
      schema_name: 'the PostgreSQL schema holding this account\'s mirror (default tm_<name>; public for an adopted single-account mirror)',
      api_url: 'the helpdesk\'s base URL; requests go to api_url/api/v1/...',
      token_sealed:
        'the API token, encrypted with AES-256-GCM under FLEET_KEY: version byte, key id (4 bytes), IV, tag, ciphertext; authenticated with the account\'s name, so it does not open in another row. Never the token itself',
      daily_limit: 'requests per rolling 24 h the token may make (as API_DAILY_LIMIT)',
      minute_limit: 'requests per minute (as API_MINUTE_LIMIT)',
      reserve: 'fraction of both limits left unused for other clients of the token (as API_RESERVE), at least 0 and below 1',
      paused_at: i('when the account was paused; null while it is synced. A paused account gets no request'),
      created_at: i('when the account was added'),
      state: 'what the last pass found: new (no pass yet), ok, failing (errors; retried with back-off), auth_failed (the token was refused; fix it and resume)',
      failures: 'passes that failed in a row (0 after a pass that ran)',
      not_before: i('no pass before this instant (back-off after failures); null when none'),
      last_pass_at: i('when the last pass ended'),
      last_pass_requests: 'requests the last pass sent',
      last_error: 'the last pass\'s error, one line without secrets; null when it ran',
      next_pass_at: i('when the next pass is due (the planner\'s wake-up)'),
      worker: 'the worker that ran the last pass (its id, as fleet run was given or made it)',
    },
  },
  fleet_tickets: {
    kind: 'view',
    about: `Every account's tickets (the contract columns of its tickets table), with the account in front. ${ONE_BRANCH}`,
    key: ['account', 'id'],
    columns: {
      account: ACCOUNT,
      id: 'the ticket id (its account\'s tickets.id)',
      name: 'the customer\'s name',
      email: 'the customer\'s email',
      status: 'the ticket status as the API gave it',
      priority: 'the ticket priority as the API gave it',
      has_unread_messages: 'whether the ticket has unread messages',
      replied_to_customer: 'whether the customer has been replied to',
      closed_at: i('when the ticket was closed or resolved'),
      last_contact_at: i('the last contact with the customer'),
      created_at: i('when the ticket was created'),
      updated_at: i('when the ticket was last updated'),
      assigned_to: 'the assigned agent as the API gave it (jsonb)',
      widget_id: 'the widget the ticket came from',
      widget_name: 'the widget\'s name',
      ai_summary: 'the API\'s summary of the ticket',
      in_open: 'in the open list when last seen',
      in_self: 'in the self list when last seen',
      in_unassigned: 'in the unassigned list when last seen',
      in_resolved: 'in the resolved list when last seen',
      first_seen_at: i('when the mirror first saw the ticket'),
      last_seen_at: i('when a list last showed the ticket'),
      detail_synced_at: i('when the ticket\'s detail was last fetched'),
      missing_since: i('since when the ticket is in no list; null while it is in one'),
      deleted_at: i('when the API answered 404 for the ticket'),
      raw: 'the last detail payload as received, minus every attachment URL',
    },
  },
  account_backlog: {
    kind: 'view',
    about: `Open tickets at the end of each day, per account: each account's open_backlog_daily (days in that account's REPORT_TIMEZONE). ${ONE_BRANCH}`,
    key: ['account', 'day'],
    columns: {
      account: ACCOUNT,
      day: { text: 'the day, in the account\'s report time zone', unit: 'localDate' },
      as_of: i('the instant the count is taken at: the end of the day, or now for today'),
      open_tickets: 'tickets in the open list at as_of',
    },
  },
  account_first_response: {
    kind: 'view',
    about: `Time to the first reply of each ticket, per account: each account's ticket_first_response. ${ONE_BRANCH}`,
    key: ['account', 'ticket_id'],
    columns: {
      account: ACCOUNT,
      ticket_id: 'the ticket (its account\'s tickets.id)',
      created_at: i('when the ticket was created'),
      first_response_at: i('the first outbound message after creation; null when not answered yet'),
      first_response_seconds: s('from creation to the first response, calendar time'),
      first_response_business_seconds: s('the same within the account\'s business hours; null when it has none set'),
    },
  },
  account_resolution: {
    kind: 'view',
    about: `Time to close of each closed ticket, per account: each account's ticket_resolution. ${ONE_BRANCH}`,
    key: ['account', 'ticket_id'],
    columns: {
      account: ACCOUNT,
      ticket_id: 'the ticket (its account\'s tickets.id)',
      created_at: i('when the ticket was created'),
      closed_at: i('when the ticket was closed or resolved'),
      resolution_seconds: s('from creation to closed_at, calendar time'),
      resolution_business_seconds: s('the same within the account\'s business hours; null when it has none set'),
    },
  },
};

const ROWS = (view: string, source: string) => ({
  signature: `${view}_rows()`,
  about: `The rows of the view ${view}: each account's ${source}, the account's name in front; see the view.`,
});

export const FLEET_FUNCTIONS: readonly FunctionDoc[] = [
  {
    signature: 'fleet_queries(text, jsonb)',
    about:
      'For the relation named and the columns given ([[name, type], …]), one query per account whose schema has that relation with each of those columns: the account\'s name and the query\'s text. What the fleet views run.',
  },
  ROWS('fleet_tickets', 'tickets'),
  ROWS('account_backlog', 'open_backlog_daily'),
  ROWS('account_first_response', 'ticket_first_response'),
  ROWS('account_resolution', 'ticket_resolution'),
];
