import type { AttachmentSigner } from './signing.ts';
import type {
  Agent,
  Attachment,
  AttachmentRecord,
  AttachmentTruth,
  Message,
  MessageRecord,
  MessageTruth,
  TicketDetail,
  TicketListItem,
  TicketRecord,
  TicketTruth,
} from './types.ts';

/**
 * Records → wire objects, in one place. Keys are written in the spec's order (JSON keeps insertion order) and every
 * object is a fresh copy, so nothing a caller does to a response can reach the model's state.
 */

export function toListItem(t: TicketRecord): TicketListItem {
  return {
    id: t.id,
    name: t.name,
    email: t.email,
    status: t.status,
    has_unread_messages: t.hasUnread,
    created_at: t.createdAt,
  };
}

export function toTruth(t: TicketRecord): TicketTruth {
  return ticket(t, t.attachments.map(attachmentTruth), (m) => message(m, m.attachments.map(attachmentTruth)));
}

/** The detail of endpoint 5, with attachment links signed at `issuedAtMs`. */
export function toDetail(t: TicketRecord, signer: AttachmentSigner, issuedAtMs: number): TicketDetail {
  const signed = (a: AttachmentRecord): Attachment => ({ ...attachmentTruth(a), url: signer.url(a, issuedAtMs) });
  return ticket(t, t.attachments.map(signed), (m) => message(m, m.attachments.map(signed)));
}

export function toMessageTruth(m: MessageRecord): MessageTruth {
  return message(m, m.attachments.map(attachmentTruth));
}

function ticket<A, M>(t: TicketRecord, attachments: A[], messageOf: (m: MessageRecord) => M) {
  return {
    id: t.id,
    name: t.name,
    email: t.email,
    status: t.status,
    priority: t.priority,
    has_unread_messages: t.hasUnread,
    replied_to_customer: t.repliedToCustomer,
    closed_at: t.closedAt,
    last_contact_at: t.lastContactAt,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
    assigned_to: agent(t.assignedTo),
    widget: { id: t.widget.id, name: t.widget.name },
    ai_summary: t.aiSummary,
    attachments,
    messages: t.messages.map(messageOf),
  };
}

function message<A>(m: MessageRecord, attachments: A[]): Omit<Message, 'attachments'> & { attachments: A[] } {
  return {
    id: m.id,
    message_type: m.type,
    ticket_status: m.ticketStatus,
    message: m.text,
    outbound_sent: m.outboundSent,
    outbound_delivered_at: m.deliveredAt,
    outbound_bounced: m.bounced,
    outbound_spam_complaint: m.spamComplaint,
    outbound_error: m.error,
    created_at: m.createdAt,
    user: agent(m.user),
    attachments,
  };
}

function attachmentTruth(a: AttachmentRecord): AttachmentTruth {
  return { id: a.id, name: a.name, mime_type: a.mimeType, size: a.size };
}

function agent(a: Agent | null): Agent | null {
  return a && { id: a.id, name: a.name, email: a.email };
}
