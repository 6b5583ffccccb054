import type { SQL } from 'drizzle-orm';
import { MAX_JSON_DEPTH } from '../../api/listBody.ts';
import type { MappedDetail, TicketRow } from '../../model/detail.ts';
import { emptyState, sameState, trackedOf, type MirrorTicket, type TrackedState } from '../../model/ticketState.ts';
import { queryRows, sql, type Tx } from '../connect.ts';
import { recordStateChanges } from './history.ts';
import { AHEAD_OF_CLOCK, MIRROR_TICKET_COLUMNS } from './rows.ts';
import { revalidationLearnt, type RevalidationSample } from './work.ts';

/** The ticket columns a detail gives, with their values: the one list `writeDetail` and `rederiveDetail` both set. */
function detailColumns(t: TicketRow): Array<[column: string, value: SQL]> {
  return [
    ['name', sql`${t.name}`],
    ['email', sql`${t.email}`],
    ['status', sql`${t.status}`],
    ['priority', sql`${t.priority}`],
    ['has_unread_messages', sql`${t.hasUnreadMessages}`],
    ['replied_to_customer', sql`${t.repliedToCustomer}`],
    ['closed_at', sql`${t.closedAt}::timestamptz`],
    ['last_contact_at', sql`${t.lastContactAt}::timestamptz`],
    ['created_at', sql`${t.createdAt}::timestamptz`],
    ['updated_at', sql`${t.updatedAt}::timestamptz`],
    ['assigned_to', sql`${json(t.assignedTo)}::jsonb`],
    ['widget_id', sql`${t.widgetId}`],
    ['widget_name', sql`${t.widgetName}`],
    ['ai_summary', sql`${t.aiSummary}`],
  ];
}

export interface DetailWriteResult {
  /** The stored payload differed from the new one (or there was none). */
  changed: boolean;
  /** Its messages and attachments whose ids another ticket holds, not written (see heldElsewhere), e.g. `message m1`. */
  heldElsewhere: string[];
}

/**
 * Writes one ticket detail, all or nothing (call inside a transaction): the ticket, its messages and attachments
 * upserted, each with `synced_at` = `at` (the detail confirmed it); messages and attachments no longer in the detail get
 * `removed_at` and keep their last `synced_at` (nothing is deleted); a history row when
 * status, priority or assignment moved. `requestedAt` is when the request left: a list change seen after it keeps the
 * detail due.
 */
/**
 * Whether a detail requested at `requestedAt` and stored at `at` answers the due mark in `column`: it was set before
 * the request (a change found while the request was in flight keeps it). A mark more than a minute ahead of `at` is
 * not one the mirror set (a row written by hand, a clock set back): kept, it had the ticket fetched at every pass.
 */
function dueAnswered(column: string, requestedAt: string, at: string): SQL {
  const c = sql.raw(column);
  return sql`(${c} <= ${requestedAt}::timestamptz or ${c} > ${at}::timestamptz + ${AHEAD_OF_CLOCK})`;
}

export async function writeDetail(
  tx: Tx,
  d: MappedDetail,
  at: string,
  requestedAt: string,
  learn?: { sample: RevalidationSample; at: number },
): Promise<DetailWriteResult> {
  const t = d.ticket;
  const columns = detailColumns(t);
  const names = columns.map(([c]) => c);
  // The row as it was, and the row written, in one statement. Its parts run in no set order: the write reads `old`
  // (the count), so the row is read and locked before it is written, and `old` is the row before this write. A re-read
  // (`learn`) is counted in it too: it found a change when the row is new or its raw payload differs (`changed` below).
  const [old] = await queryRows<MirrorTicket & { same_raw: boolean | null }>(
    tx,
    sql`
    with old as (
      select ${sql.raw(MIRROR_TICKET_COLUMNS)}, raw = ${JSON.stringify(d.raw)}::jsonb as same_raw from tickets where id = ${t.id} for update
    ),
    written as (
      insert into tickets as t (id, ${sql.raw(names.join(', '))}, raw, first_seen_at, last_seen_at, detail_synced_at, state_seen_at)
      select ${t.id}, ${sql.join(columns.map(([, v]) => v), sql`, `)}, ${JSON.stringify(d.raw)}::jsonb,
        ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
      from (select count(*) from old) as locked
      on conflict (id) do update set
        ${sql.raw(names.map((c) => (d.absent.includes(c) ? `${c} = coalesce(excluded.${c}, t.${c})` : `${c} = excluded.${c}`)).join(', '))}, raw = excluded.raw,
        detail_synced_at = excluded.detail_synced_at, deleted_at = null,
        detail_due_since = case when ${dueAnswered('t.detail_due_since', requestedAt, at)} then null else t.detail_due_since end,
        detail_failures = 0, detail_retry_after = null, state_seen_at = excluded.state_seen_at
    )${learn ? sql`, learnt as (${revalidationLearnt(learn.sample, sql`not coalesce((select same_raw from old), false)`, learn.at)})` : sql``}
    select * from old`,
  );

  const content = await writeContent(tx, d, at, requestedAt);

  const before = old ?? null;
  const state: TrackedState = {
    ...(before ? trackedOf(before) : emptyState()),
    status: d.absent.includes('status') && before ? before.status : t.status,
    priority: d.absent.includes('priority') && before ? before.priority : t.priority,
    assignedTo: d.absent.includes('assigned_to') && before ? before.assignedTo : (t.assignedTo ?? null),
  };
  if (!before || !sameState(state, before)) {
    await recordStateChanges(tx, [{ ticketId: t.id, state, changedAfter: before?.stateSeenAt ?? null }], at);
  }
  return { changed: !old || old.same_raw !== true, heldElsewhere: heldElsewhere(d, content) };
}

/** The ids of a detail's messages and attachments that writeContent wrote (not those another ticket holds). */
interface WrittenContent {
  messages: Set<string>;
  attachments: Set<string>;
}

/**
 * Writes the detail's messages and attachments, in one statement, and returns the ids written (not those another
 * ticket holds: see heldElsewhere). A null where the spec gives a value (a text, a time) keeps the stored one, as the
 * ticket's fields do (MappedDetail.absent); the nullable fields are taken as given. An attachment's message must be
 * one written here (not in the detail, or another ticket's: it would break the foreign key or point across tickets):
 * otherwise the attachment belongs to the ticket.
 *
 * The ticket's messages and attachments the detail no longer shows are marked removed (unless it listed none:
 * MappedDetail's `complete`) — for messages, only those the mirror held before `seenBy` (when the request left; for
 * `rebuild`, when the payload was stored). A reply recorded at once after that (`ticket-mirror reply`, the outbox) is
 * newer than the payload, not gone from it: `rebuild` marked such replies removed, at an instant before they were even
 * sent. The rows marked removed are never among those written (their ids are not in the detail), so the parts of the
 * statement never touch the same row.
 */
async function writeContent(tx: Tx, d: MappedDetail, at: string, seenBy: string): Promise<WrittenContent> {
  const messages = JSON.stringify(
    d.messages.map((m) => ({
      id: m.id,
      ticket_id: m.ticketId,
      message_type: m.messageType,
      ticket_status: m.ticketStatus,
      message: m.message,
      outbound_sent: m.outboundSent,
      outbound_delivered_at: m.outboundDeliveredAt,
      outbound_bounced: m.outboundBounced,
      outbound_spam_complaint: m.outboundSpamComplaint,
      outbound_error: m.outboundError,
      created_at: m.createdAt,
      author: m.author,
    })),
  );
  const attachments = JSON.stringify(
    d.attachments.map((a) => ({
      id: a.id,
      ticket_id: a.ticketId,
      message_id: a.messageId,
      name: a.name,
      mime_type: a.mimeType,
      size: a.size,
    })),
  );
  const idsOf = (rows: ReadonlyArray<{ id: string }>) => JSON.stringify(rows.map((r) => r.id));
  const rows = await queryRows<{ kind: 'message' | 'attachment'; id: string }>(tx, sql`
    with removed_messages as (
      update messages set removed_at = ${at}::timestamptz
      where ${d.complete.messages}::boolean and ticket_id = ${d.ticket.id} and removed_at is null
        and (synced_at is null or synced_at <= ${seenBy}::timestamptz)
        and id not in (select jsonb_array_elements_text(${idsOf(d.messages)}::jsonb))
    ),
    removed_attachments as (
      update attachments set removed_at = ${at}::timestamptz
      where ${d.complete.attachments}::boolean and ticket_id = ${d.ticket.id} and removed_at is null
        and id not in (select jsonb_array_elements_text(${idsOf(d.attachments)}::jsonb))
    ),
    written_messages as (
      insert into messages (id, ticket_id, message_type, ticket_status, message, outbound_sent, outbound_delivered_at,
        outbound_bounced, outbound_spam_complaint, outbound_error, created_at, author, removed_at, synced_at)
      select r.id, r.ticket_id, r.message_type, r.ticket_status, r.message, r.outbound_sent, r.outbound_delivered_at,
        r.outbound_bounced, r.outbound_spam_complaint, r.outbound_error, r.created_at, r.author, null, ${at}::timestamptz
      from jsonb_to_recordset(${messages}::jsonb) as r(id text, ticket_id text, message_type text, ticket_status text,
        message text, outbound_sent boolean, outbound_delivered_at timestamptz, outbound_bounced boolean,
        outbound_spam_complaint boolean, outbound_error text, created_at timestamptz, author jsonb)
      on conflict (id) do update set
        ticket_id = excluded.ticket_id, message_type = coalesce(excluded.message_type, messages.message_type),
        ticket_status = coalesce(excluded.ticket_status, messages.ticket_status), message = coalesce(excluded.message, messages.message),
        outbound_sent = coalesce(excluded.outbound_sent, messages.outbound_sent),
        outbound_delivered_at = excluded.outbound_delivered_at, outbound_bounced = coalesce(excluded.outbound_bounced, messages.outbound_bounced),
        outbound_spam_complaint = coalesce(excluded.outbound_spam_complaint, messages.outbound_spam_complaint),
        outbound_error = excluded.outbound_error, created_at = coalesce(excluded.created_at, messages.created_at),
        author = excluded.author, removed_at = null, synced_at = excluded.synced_at
      where messages.ticket_id = excluded.ticket_id or messages.removed_at is not null
      returning id
    ),
    written_attachments as (
      insert into attachments (id, ticket_id, message_id, name, mime_type, size, removed_at, synced_at)
      select r.id, r.ticket_id, case when r.message_id in (select id from written_messages) then r.message_id end,
        r.name, r.mime_type, r.size, null, ${at}::timestamptz
      from jsonb_to_recordset(${attachments}::jsonb) as r(id text, ticket_id text, message_id text, name text, mime_type text, size bigint)
      on conflict (id) do update set
        ticket_id = excluded.ticket_id, message_id = excluded.message_id, name = excluded.name,
        mime_type = excluded.mime_type, size = excluded.size, removed_at = null, synced_at = excluded.synced_at
      where attachments.ticket_id = excluded.ticket_id or attachments.removed_at is not null
      returning id
    )
    select 'message' as kind, id from written_messages
    union all
    select 'attachment', id from written_attachments`);
  const written: WrittenContent = { messages: new Set(), attachments: new Set() };
  for (const r of rows) (r.kind === 'message' ? written.messages : written.attachments).add(r.id);
  return written;
}

/**
 * The detail's message and attachment ids another ticket holds (not removed from it): left with that ticket. Ids are
 * the mirror's primary keys, global; an API whose ids are per ticket moved the row to whichever ticket was read last,
 * back and forth at every read, and an attachment could point at another ticket's message.
 */
function heldElsewhere(d: MappedDetail, written: WrittenContent): string[] {
  return [
    ...d.messages.filter((m) => !written.messages.has(m.id)).map((m) => `message ${m.id}`),
    ...d.attachments.filter((a) => !written.attachments.has(a.id)).map((a) => `attachment ${a.id}`),
  ];
}

/**
 * Re-derives one ticket's rows from its stored payload, for `rebuild`: the detail columns, messages and attachments,
 * as of the time the payload was fetched. Bookkeeping and history are left as they are.
 */
export async function rederiveDetail(tx: Tx, d: MappedDetail, syncedAt: string): Promise<void> {
  const t = d.ticket;
  const set = sql.join(
    detailColumns(t).map(([c, v]) => (d.absent.includes(c) ? sql`${sql.raw(c)} = coalesce(${v}, ${sql.raw(c)})` : sql`${sql.raw(c)} = ${v}`)),
    sql`, `,
  );
  await tx.execute(sql`update tickets set ${set} where id = ${t.id}`);
  await writeContent(tx, d, syncedAt, syncedAt);
}

/** For `rebuild`: up to `limit` stored payloads, in id order from after `after` (`''`: from the first). */
export function storedDetails(
  tx: Tx,
  after: string,
  limit: number,
): Promise<Array<{ id: string; raw: unknown; too_deep: boolean; detail_synced_at: string }>> {
  // A payload nested deeper than any answer of the API (MAX_JSON_DEPTH; a row written by hand) is not read: walking it
  // overflowed the stack and stopped the whole rebuild. jsonpath's `.**{n}` descends n levels and no further.
  const deep = sql.raw(`jsonb_path_exists(raw, '$.**{${MAX_JSON_DEPTH + 1}}')`);
  return queryRows(
    tx,
    sql`select id, case when ${deep} then null else raw end as raw, ${deep} as too_deep, detail_synced_at
        from tickets where raw is not null and id > ${after} order by id limit ${limit}`,
  );
}

/** The ticket an attachment belongs to, or null when the mirror does not have it. */
export async function attachmentTicketId(tx: Tx, attachmentId: string): Promise<string | null> {
  const [row] = await queryRows<{ ticket_id: string }>(tx, sql`select ticket_id from attachments where id = ${attachmentId}`);
  return row?.ticket_id ?? null;
}

/**
 * The API answered 404: the ticket is gone there. It stays in the mirror, marked. Not while a list still shows it,
 * though: the 404 then contradicts the lists, and the next poll would revive the ticket and ask for it again, at every
 * poll. Returns whether it was marked; the caller backs off one that was not (recordDetailFailure) until the lists agree.
 */
export async function markDeleted(tx: Tx, id: string, at: string, requestedAt: string): Promise<boolean> {
  const rows = await queryRows<{ id: string }>(
    tx,
    sql`
    update tickets set deleted_at = coalesce(deleted_at, ${at}::timestamptz), detail_failures = 0, detail_retry_after = null,
      detail_due_since = case when ${dueAnswered('detail_due_since', requestedAt, at)} then null else detail_due_since end
    where id = ${id} and not (in_open or in_self or in_unassigned or in_resolved)
    returning id`,
  );
  return rows.length > 0;
}

/**
 * A detail that could not be fetched or stored: back off this ticket (1 min, doubling, at most 6 h). The count stops at
 * a million (a row set by hand to 2^31 − 1 would overflow it, and fail every pass).
 */
export async function recordDetailFailure(tx: Tx, id: string, at: string): Promise<void> {
  await tx.execute(sql`
    update tickets set detail_failures = least(detail_failures, 999999) + 1,
      detail_retry_after = ${at}::timestamptz + least(interval '6 hours', interval '1 minute' * power(2, least(detail_failures, 12)))
    where id = ${id}`);
}

function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
