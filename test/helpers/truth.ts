import { queryRows, sql, type Db } from '../../src/db/connect.ts';
import type { TicketTruth } from '../../src/simulator/index.ts';
import { canonicalTimestamp } from '../../src/time.ts';

/**
 * The mirror in the API's shape, and the simulator's ground truth normalised the same way (attachments by id, messages
 * by time then id, timestamps canonical to the microsecond): equal when the mirror is an exact copy. Grouped by ticket,
 * so that it stays linear at benchmark sizes. Used by the integration tests and the benchmark.
 */

type Row = Record<string, unknown>;

/** Every live ticket of the mirror, by id, in the API's shape. */
export async function mirrorTickets(db: Db): Promise<Map<string, unknown>> {
  const tickets = await queryRows<Row>(db, sql`select * from tickets where deleted_at is null`);
  const ts = (v: unknown) => (v === null ? null : canonicalTimestamp(String(v)));
  // Sorted here, not in SQL: the database's collation need not order ids as JavaScript does.
  const messages = (await queryRows<Row>(db, sql`select * from messages where removed_at is null`))
    .map((m): Row => ({ ...m, created_at: ts(m.created_at), outbound_delivered_at: ts(m.outbound_delivered_at) }))
    .sort(byTimeThenId);
  const attachments = (await queryRows<Row>(db, sql`select * from attachments where removed_at is null`)).sort(byId);
  const att = (a: Row) => ({ id: a.id, name: a.name, mime_type: a.mime_type, size: Number(a.size) });
  const byTicket = groupBy(attachments, 'ticket_id');
  const byMessage = groupBy(attachments, 'message_id');
  const messagesOf = groupBy(messages, 'ticket_id');
  const out = new Map<string, unknown>();
  for (const t of tickets) {
    out.set(String(t.id), {
      id: t.id,
      name: t.name,
      email: t.email,
      status: t.status,
      priority: t.priority,
      has_unread_messages: t.has_unread_messages,
      replied_to_customer: t.replied_to_customer,
      closed_at: ts(t.closed_at),
      last_contact_at: ts(t.last_contact_at),
      created_at: ts(t.created_at),
      updated_at: ts(t.updated_at),
      assigned_to: t.assigned_to,
      widget: { id: t.widget_id, name: t.widget_name },
      ai_summary: t.ai_summary,
      attachments: (byTicket.get(String(t.id)) ?? []).map(att),
      messages: (messagesOf.get(String(t.id)) ?? []).map((m) => ({
        id: m.id,
        message_type: m.message_type,
        ticket_status: m.ticket_status,
        message: m.message,
        outbound_sent: m.outbound_sent,
        outbound_delivered_at: m.outbound_delivered_at,
        outbound_bounced: m.outbound_bounced,
        outbound_spam_complaint: m.outbound_spam_complaint,
        outbound_error: m.outbound_error,
        created_at: m.created_at,
        user: m.author,
        attachments: (byMessage.get(String(m.id)) ?? []).map(att),
      })),
    });
  }
  return out;
}

/** The simulator's truth in the mirror's order: attachments by id, messages by time then id. */
export function normaliseTruth(t: TicketTruth): unknown {
  const messages = t.messages.map((m) => ({ ...m, attachments: [...m.attachments].sort(byId) })).sort(byTimeThenId);
  return { ...t, attachments: [...t.attachments].sort(byId), messages };
}

function byId(a: { id?: unknown }, b: { id?: unknown }): number {
  const x = String(a.id);
  const y = String(b.id);
  return x < y ? -1 : x > y ? 1 : 0;
}

function byTimeThenId(a: { id?: unknown; created_at?: unknown }, b: { id?: unknown; created_at?: unknown }): number {
  const x = String(a.created_at);
  const y = String(b.created_at);
  return x < y ? -1 : x > y ? 1 : byId(a, b);
}

function groupBy(rows: Row[], key: string): Map<string, Row[]> {
  const out = new Map<string, Row[]>();
  for (const r of rows) {
    const k = r[key];
    if (k === null || k === undefined) continue;
    const list = out.get(String(k));
    if (list) list.push(r);
    else out.set(String(k), [r]);
  }
  return out;
}
