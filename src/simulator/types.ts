import type { RandomState } from './random.ts';

/**
 * Shapes of the simulated Support Ticket API: the wire objects (snake_case, exactly as the spec lists their fields)
 * and the model's internal records (camelCase). `views.ts` is the one place that maps records to wire objects.
 */

export const TICKET_STATUSES = ['pending', 'open', 'on_hold', 'resolved', 'closed'] as const;
export type TicketStatus = (typeof TICKET_STATUSES)[number];

/** Statuses that put a ticket in the resolved group (and out of the open ones); they come with a `closed_at`. */
export const CLOSED_STATUSES: ReadonlySet<TicketStatus> = new Set(['resolved', 'closed']);

export const PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
export type Priority = (typeof PRIORITIES)[number];

/** `note` is an internal agent note: never sent, but listed among the messages as helpdesks do. */
export type MessageType = 'inbound' | 'outbound' | 'note';

/** The four groups the list endpoints serve. */
export type TicketGroup = 'open' | 'self' | 'unassigned' | 'resolved';

/** A helpdesk agent; the spec does not show `assigned_to`/`user`, so the simulator uses this shape for both. */
export interface Agent {
  id: string;
  name: string;
  email: string;
}

export interface Widget {
  id: string;
  name: string;
}

export interface TicketListItem {
  id: string;
  name: string;
  email: string;
  status: TicketStatus;
  has_unread_messages: boolean;
  created_at: string;
}

export interface Attachment {
  id: string;
  name: string;
  mime_type: string;
  size: number;
  url: string;
}

export interface Message {
  id: string;
  message_type: MessageType;
  ticket_status: TicketStatus;
  message: string;
  outbound_sent: boolean;
  outbound_delivered_at: string | null;
  outbound_bounced: boolean;
  outbound_spam_complaint: boolean;
  outbound_error: string | null;
  created_at: string;
  user: Agent | null;
  attachments: Attachment[];
}

export interface TicketDetail {
  id: string;
  name: string;
  email: string;
  status: TicketStatus;
  priority: Priority;
  has_unread_messages: boolean;
  replied_to_customer: boolean;
  closed_at: string | null;
  last_contact_at: string;
  created_at: string;
  updated_at: string;
  assigned_to: Agent | null;
  widget: Widget;
  ai_summary: string | null;
  attachments: Attachment[];
  messages: Message[];
}

/** An attachment as the ground truth knows it: everything but the signed, time-dependent url. */
export type AttachmentTruth = Omit<Attachment, 'url'>;
export type MessageTruth = Omit<Message, 'attachments'> & { attachments: AttachmentTruth[] };
export type TicketTruth = Omit<TicketDetail, 'attachments' | 'messages'> & {
  attachments: AttachmentTruth[];
  messages: MessageTruth[];
};

/** The result of endpoint 6. */
export interface ReplyResult {
  id: string;
  created_at: string;
}

export interface AttachmentRecord {
  id: string;
  name: string;
  /** The bare extension-like word the API shows, e.g. `pdf`. */
  mimeType: string;
  size: number;
}

export interface MessageRecord {
  id: string;
  type: MessageType;
  ticketStatus: TicketStatus;
  text: string;
  outboundSent: boolean;
  deliveredAt: string | null;
  bounced: boolean;
  spamComplaint: boolean;
  error: string | null;
  createdAt: string;
  user: Agent | null;
  attachments: AttachmentRecord[];
}

export interface TicketRecord {
  id: string;
  name: string;
  email: string;
  status: TicketStatus;
  priority: Priority;
  hasUnread: boolean;
  repliedToCustomer: boolean;
  closedAt: string | null;
  lastContactAt: string;
  createdAt: string;
  updatedAt: string;
  assignedTo: Agent | null;
  widget: Widget;
  aiSummary: string | null;
  /** Every attachment of the ticket: those of its messages (the same objects) and ticket-level-only ones. */
  attachments: AttachmentRecord[];
  messages: MessageRecord[];
  /** `created_at` in epoch microseconds: the sort key of the lists. */
  createdUs: number;
  /** The latest timestamp used on this ticket, in epoch microseconds; the next event is stamped strictly after it. */
  lastEventUs: number;
  /** The list item, built once per change (the lists of 5,000 tickets are served many thousand times). */
  listItem?: Readonly<TicketListItem>;
  /**
   * Set on a historic ticket of a compact model that has not changed since: its messages are not kept (`messages` is
   * empty) and are generated again from this state when asked for (history.ts, `replayHistoric`).
   */
  replay?: { kind: HistoricKind; state: RandomState };
}

/** The two kinds of generated history: open tickets (recent) and resolved ones. */
export type HistoricKind = 'open' | 'resolved';

/** Options of the model's mutations (model.ts). */
export interface NewTicketOptions {
  name?: string;
  email?: string;
  /** The customer's first message. @default a generated one */
  message?: string;
  /** Files attached to the first message. @default 1–2 for about a third of tickets, else 0 */
  attachments?: number;
  /** @default a random one, mostly low or medium */
  priority?: Priority;
}

export interface InboundMessageOptions {
  /** @default a generated follow-up */
  message?: string;
  /** @default 1 for about a fifth of messages, else 0 */
  attachments?: number;
}

/** Who: the token's user, a random other agent, or an agent id. */
export type AgentChoice = 'self' | 'other' | (string & {});

export interface AgentReplyOptions {
  /** @default the assignee, or a random other agent when the ticket is unassigned */
  agent?: AgentChoice;
  /** @default a generated reply */
  message?: string;
}
