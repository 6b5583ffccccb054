import { timestampOrNull } from '../../time.ts';
import { sql, type Tx } from '../connect.ts';

export interface PostedReply {
  ticketId: string;
  /** The new message's id, from endpoint 6's answer. */
  messageId: string;
  /** The text as sent. */
  text: string;
  /** Endpoint 6's `created_at`. */
  createdAt: string;
  /** The token's user when known (see tokenUser), else null. */
  author: unknown;
}

/**
 * Writes a reply the service just accepted into `messages`, without waiting for the next sync, from what is known:
 * id, text, time and type. The ticket's next detail fetch completes the row (delivery, status, author).
 *
 * If the ticket is not mirrored yet, a minimal ticket row is inserted rather than its detail fetched first: the
 * reply's success proves the ticket exists, and the row is marked due, so the next pass fetches its detail anyway —
 * one request instead of two. A mirrored ticket is marked due as well: the reply changed it (replied_to_customer,
 * status, updated_at) in ways no list shows.
 */
export async function recordPostedReply(tx: Tx, reply: PostedReply, at: string): Promise<void> {
  await tx.execute(sql`
    insert into tickets as t (id, first_seen_at, last_seen_at, detail_due_since)
    values (${reply.ticketId}, ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz)
    on conflict (id) do update set detail_due_since = coalesce(t.detail_due_since, excluded.detail_due_since)`);
  // A detail fetched meanwhile may have stored the full row already: it wins.
  await tx.execute(sql`
    insert into messages (id, ticket_id, message_type, message, created_at, author, synced_at)
    values (${reply.messageId}, ${reply.ticketId}, 'outbound', ${reply.text}, ${timestampOrNull(reply.createdAt)}::timestamptz,
      ${reply.author === null ? null : JSON.stringify(reply.author)}::jsonb, ${at}::timestamptz)
    on conflict (id) do nothing`);
}
