import type { JsonObject } from '../api/client.ts';

/** One ticket detail as rows: what sync/mapping.ts `mapDetail` makes of a payload and db/repos/details.ts writes. */

export interface TicketRow {
  id: string;
  name: string | null;
  email: string | null;
  status: string | null;
  priority: string | null;
  hasUnreadMessages: boolean | null;
  repliedToCustomer: boolean | null;
  closedAt: string | null;
  lastContactAt: string | null;
  createdAt: string | null;
  updatedAt: string | null;
  assignedTo: unknown;
  widgetId: string | null;
  widgetName: string | null;
  aiSummary: string | null;
}

export interface MessageRow {
  id: string;
  ticketId: string;
  messageType: string | null;
  ticketStatus: string | null;
  message: string | null;
  outboundSent: boolean | null;
  outboundDeliveredAt: string | null;
  outboundBounced: boolean | null;
  outboundSpamComplaint: boolean | null;
  outboundError: string | null;
  createdAt: string | null;
  author: unknown;
}

export interface AttachmentRow {
  id: string;
  ticketId: string;
  messageId: string | null;
  name: string | null;
  mimeType: string | null;
  size: number | null;
}

export interface MappedDetail {
  ticket: TicketRow;
  messages: MessageRow[];
  attachments: AttachmentRow[];
  /**
   * The ticket's columns (the spec's names: `widget_id`, `widget_name` for the widget's) the payload left missing, or
   * null where the spec gives a value: no news of them, so they keep the mirror's value. Taken for null, a detail that
   * lacks a field the lists show wiped it, and the next poll, seeing it differ, made the detail due again: one detail
   * request a poll for as long as the service answered so.
   */
  absent: readonly string[];
  /**
   * Whether the payload listed all of them: a `messages` (or an `attachments`) that was missing or null says nothing of
   * what the ticket holds, so the rows the mirror has are not marked removed by it.
   */
  complete: { messages: boolean; attachments: boolean };
  /** The payload as received minus every attachment URL: `tickets.raw`. */
  raw: JsonObject;
  problems: string[];
}
