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
  /** The payload as received minus every attachment URL: `tickets.raw`. */
  raw: JsonObject;
  problems: string[];
}
