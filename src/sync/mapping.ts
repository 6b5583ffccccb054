import { isObject, type JsonObject } from '../api/client.ts';
import { storableJson, storableText } from '../text.ts';
import { canonicalTimestamp, isCanonicalApiTimestamp, toEpochMicros } from '../time.ts';
import type { AttachmentRow, MappedDetail, MessageRow, TicketRow } from '../model/detail.ts';
import type { ListItem } from '../model/lists.ts';
import { stripAttachmentUrls, withoutSignedLinks } from './redact.ts';

/**
 * From the API's JSON to the mirror's rows. The spec's shapes are checked field by field, leniently: unknown fields
 * are kept (in `tickets.raw`); a value of an unexpected type is stored as given where its column can hold it, and
 * reported; a value no column can hold (a non-timestamp in a timestamp column, an attachment without an id) makes
 * the ticket unstorable — it is reported and retried later, and the rest of the pass goes on.
 *
 * Attachment URLs are signed secrets that expire: they are stripped here (see redact.ts), before anything is stored or
 * logged.
 *
 * PostgreSQL refuses NUL and lone surrogates in text and jsonb: every string of a body, keys included, is made
 * storable here (each refused code unit becomes U+FFFD, see src/text.ts), once, before anything else looks at it.
 */

export class UnstorableError extends Error {
  override name = 'UnstorableError';
}

type Kind = 'text' | 'bool' | 'timestamp' | 'json' | 'integer';

interface Field {
  key: string;
  kind: Kind;
  /** The spec allows null here. */
  nullable?: boolean;
}

/** Collects what was odd about a payload: one line per field, prefixed with where it was found. */
export class Problems {
  readonly lines: string[] = [];
  add(where: string, what: string): void {
    if (this.lines.length < 50) this.lines.push(`${where}: ${what}`);
  }
}

function convert(obj: JsonObject, field: Field, where: string, problems: Problems): unknown {
  const { key, kind, nullable = false } = field;
  const value = obj[key];
  if (value === undefined || value === null) {
    if (value === undefined) problems.add(where, `${key} is missing`);
    else if (!nullable) problems.add(where, `${key} is null where the spec gives a ${kind}`);
    return null;
  }
  switch (kind) {
    case 'text':
      if (typeof value === 'string') return value;
      problems.add(where, `${key} is ${typeof value} where the spec gives a string`);
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
    case 'bool':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false' || value === 1 || value === 0) {
        problems.add(where, `${key} is ${JSON.stringify(value)} where the spec gives a boolean`);
        return value === 'true' || value === 1;
      }
      throw new UnstorableError(`${where}: ${key} = ${JSON.stringify(value).slice(0, 80)} is not a boolean`);
    case 'integer':
      if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
      if (typeof value === 'string' && /^-?\d{1,15}$/.test(value)) {
        problems.add(where, `${key} is a string where the spec gives an integer`);
        return Number(value);
      }
      throw new UnstorableError(`${where}: ${key} = ${JSON.stringify(value).slice(0, 80)} is not an integer`);
    case 'timestamp':
      if (typeof value === 'string' && toEpochMicros(value) !== null) {
        if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/.test(value)) {
          problems.add(where, `${key} = ${JSON.stringify(value)} is not in the spec's timestamp shape`);
        }
        return canonicalTimestamp(value);
      }
      throw new UnstorableError(`${where}: ${key} = ${JSON.stringify(value).slice(0, 80)} is not a timestamp`);
    case 'json':
      return value;
  }
}

function convertAll(obj: JsonObject, fields: readonly Field[], where: string, problems: Problems): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) out[field.key] = convert(obj, field, where, problems);
  return out;
}

function requireId(value: unknown, where: string): string {
  if (typeof value === 'string' && value.length > 0) return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  throw new UnstorableError(`${where}: id ${JSON.stringify(value)} is not a usable identifier`);
}

// ---------------------------------------------------------------------------------------------------------------
// List items

/** The `unstorable` of every item the spec's shape fits: one shared array, not 100,000 empty ones. */
const NONE: readonly string[] = Object.freeze([]);

const LIST_FIELDS: readonly (Field & { prop: keyof ListItem })[] = [
  { key: 'name', kind: 'text', prop: 'name' },
  { key: 'email', kind: 'text', prop: 'email' },
  { key: 'status', kind: 'text', prop: 'status' },
  { key: 'has_unread_messages', kind: 'bool', prop: 'hasUnreadMessages' },
  { key: 'created_at', kind: 'timestamp', prop: 'createdAt' },
];

/**
 * The items of one list response. Membership is all a list must be sure of: an item without a usable id makes the
 * whole response unusable (a ticket we cannot name could be wrongly taken for gone), while an odd field only loses
 * that field's update.
 *
 * A list may hold 100,000 items: an item exactly as the spec gives it takes a fast path that skips the per-field
 * checks (it is what they would return, with nothing to report); any other item goes through them.
 *
 * A list read in batches (sync/listPoll.ts) maps each item as it is parsed (parseListItem), with its index in the list
 * (for the messages) and one `seen` for the whole list: the ids listed so far, a ticket listed twice is dropped
 * whichever batches its two items are in.
 */
export function parseListItems(body: readonly unknown[], listName: string, problems: Problems): ListItem[] {
  const seen = new Set<string>();
  const items: ListItem[] = [];
  for (let index = 0; index < body.length; index++) {
    const item = parseListItem(body[index], index, listName, problems, seen);
    if (item) items.push(item);
  }
  return items;
}

/**
 * The longest ticket id stored, in UTF-8 bytes. A PostgreSQL B-tree entry holds at most 2,704 bytes, and some of the
 * mirror's indexes pair the id with another column: a longer id would fail the write of the whole list, at every poll.
 */
export const MAX_ID_BYTES = 1_000;

function tooLong(id: string): boolean {
  return id.length > MAX_ID_BYTES / 4 && Buffer.byteLength(id) > MAX_ID_BYTES;
}

/**
 * Item `index` of a list (see parseListItems); null when its ticket is already in `seen`, to which it is added, or when
 * its id is longer than MAX_ID_BYTES: such a ticket can never have been stored, so leaving it out takes nothing for gone.
 */
export function parseListItem(raw: unknown, index: number, listName: string, problems: Problems, seen: Set<string>): ListItem | null {
  if (!isObject(raw)) throw new UnstorableError(`${listName}[${index}] is not an object`);
  const id = storableText(typeof raw.id === 'string' && raw.id.length > 0 ? raw.id : requireId(raw.id, `${listName}[${index}]`));
  if (tooLong(id)) {
    problems.add(`${listName}[${index}]`, `a ticket id of ${Buffer.byteLength(id)} bytes, longer than the ${MAX_ID_BYTES} the mirror stores: skipped`);
    return null;
  }
  if (seen.has(id)) {
    problems.add(`${listName}[${index}]`, `ticket ${id} is listed twice`);
    return null;
  }
  seen.add(id);
  const { name, email, status, has_unread_messages: unread, created_at: createdAt } = raw;
  if (
    typeof name === 'string' &&
    typeof email === 'string' &&
    typeof status === 'string' &&
    typeof unread === 'boolean' &&
    typeof createdAt === 'string' &&
    isCanonicalApiTimestamp(createdAt)
  ) {
    return {
      id,
      // A list has no attachments to name their links by; a signed one is cut out all the same (redact.ts).
      name: withoutSignedLinks(storableText(name)),
      email: withoutSignedLinks(storableText(email)),
      status: withoutSignedLinks(storableText(status)),
      hasUnreadMessages: unread,
      createdAt,
      unstorable: NONE,
    };
  }
  return checkedListItem(storableJson(raw), id, `${listName}[${index}] (${id})`, problems);
}

function checkedListItem(raw: JsonObject, id: string, where: string, problems: Problems): ListItem {
  const unstorable: string[] = [];
  const item: ListItem = { id, name: null, email: null, status: null, hasUnreadMessages: null, createdAt: null, unstorable };
  for (const field of LIST_FIELDS) {
    try {
      const value = convert(raw, field, where, problems);
      // Missing or null where the spec gives a value (convert reported it): no news of the field, which keeps the
      // mirror's value. Taken for null, it wiped the detail's value at every poll and made the detail due again.
      if (value === null) unstorable.push(field.prop);
      (item as unknown as Record<string, unknown>)[field.prop] = typeof value === 'string' && field.kind === 'text' ? withoutSignedLinks(value) : value;
    } catch (error) {
      if (!(error instanceof UnstorableError)) throw error;
      problems.add(where, error.message.replace(/^[^:]*: /, ''));
      unstorable.push(field.prop);
    }
  }
  return item;
}

// ---------------------------------------------------------------------------------------------------------------
// Details

const TICKET_FIELDS: readonly Field[] = [
  { key: 'name', kind: 'text' },
  { key: 'email', kind: 'text' },
  { key: 'status', kind: 'text' },
  { key: 'priority', kind: 'text' },
  { key: 'has_unread_messages', kind: 'bool' },
  { key: 'replied_to_customer', kind: 'bool' },
  { key: 'closed_at', kind: 'timestamp', nullable: true },
  { key: 'last_contact_at', kind: 'timestamp' },
  { key: 'created_at', kind: 'timestamp' },
  { key: 'updated_at', kind: 'timestamp' },
  { key: 'assigned_to', kind: 'json', nullable: true },
  { key: 'ai_summary', kind: 'text', nullable: true },
];

const MESSAGE_FIELDS: readonly Field[] = [
  { key: 'message_type', kind: 'text' },
  { key: 'ticket_status', kind: 'text' },
  { key: 'message', kind: 'text' },
  { key: 'outbound_sent', kind: 'bool' },
  { key: 'outbound_delivered_at', kind: 'timestamp', nullable: true },
  { key: 'outbound_bounced', kind: 'bool' },
  { key: 'outbound_spam_complaint', kind: 'bool' },
  { key: 'outbound_error', kind: 'text', nullable: true },
  { key: 'created_at', kind: 'timestamp' },
  { key: 'user', kind: 'json', nullable: true },
];

const ATTACHMENT_FIELDS: readonly Field[] = [
  { key: 'name', kind: 'text' },
  { key: 'mime_type', kind: 'text' },
  { key: 'size', kind: 'integer' },
];

/** Maps one detail payload to rows, or throws UnstorableError. `expectedId` is the id that was asked for. */
export function mapDetail(received: JsonObject, expectedId: string): MappedDetail {
  const problems = new Problems();
  // Everything is mapped from the storable, stripped copy: a message quoting its signed link must not store it either.
  const raw = stripAttachmentUrls(storableJson(received));
  const body = raw;
  const id = requireId(body.id, `ticket ${expectedId}`);
  if (id !== expectedId) throw new UnstorableError(`ticket ${expectedId}: the detail answered for ticket ${id}`);
  const where = `ticket ${id}`;
  const f = convertAll(body, TICKET_FIELDS, where, problems);
  // Missing, or null where the spec gives a value: no news (a missing assigned_to is not "unassigned").
  const absent = TICKET_FIELDS.filter((field) => body[field.key] === undefined || (!field.nullable && f[field.key] === null)).map((field) => field.key);
  const widget = body.widget;
  let widgetId: string | null = null;
  let widgetName: string | null = null;
  if (isObject(widget)) {
    widgetId = convert(widget, { key: 'id', kind: 'text' }, `${where} widget`, problems) as string | null;
    widgetName = convert(widget, { key: 'name', kind: 'text' }, `${where} widget`, problems) as string | null;
  } else {
    problems.add(where, `widget is ${widget === undefined ? 'missing' : JSON.stringify(widget)} where the spec gives an object`);
  }
  if (widgetId === null) absent.push('widget_id');
  if (widgetName === null) absent.push('widget_name');
  const ticket: TicketRow = {
    id,
    name: f.name as string | null,
    email: f.email as string | null,
    status: f.status as string | null,
    priority: f.priority as string | null,
    hasUnreadMessages: f.has_unread_messages as boolean | null,
    repliedToCustomer: f.replied_to_customer as boolean | null,
    closedAt: f.closed_at as string | null,
    lastContactAt: f.last_contact_at as string | null,
    createdAt: f.created_at as string | null,
    updatedAt: f.updated_at as string | null,
    assignedTo: f.assigned_to ?? null,
    widgetId,
    widgetName,
    aiSummary: f.ai_summary as string | null,
  };

  const messages: MessageRow[] = [];
  const attachments = new Map<string, AttachmentRow>();
  const messageIds = new Set<string>();
  const messageList = arrayField(body, 'messages', where, problems);
  const ticketAttachments = arrayField(body, 'attachments', where, problems);
  const complete = { messages: messageList !== null, attachments: messageList !== null && ticketAttachments !== null };
  for (const [index, m] of (messageList ?? []).entries()) {
    if (!isObject(m)) throw new UnstorableError(`${where}: messages[${index}] is not an object`);
    const messageId = requireId(m.id, `${where} messages[${index}]`);
    // As a list item's (see MAX_ID_BYTES): stored, it failed the write of the whole ticket, at every retry. Left out, it
    // is never stored, so nothing stored is taken for gone; its attachments go with it.
    if (tooLong(messageId)) {
      problems.add(where, `messages[${index}] has an id of ${Buffer.byteLength(messageId)} bytes, longer than the ${MAX_ID_BYTES} the mirror stores: skipped`);
      continue;
    }
    if (messageIds.has(messageId)) {
      problems.add(where, `message ${messageId} is listed twice`);
      continue;
    }
    messageIds.add(messageId);
    const mf = convertAll(m, MESSAGE_FIELDS, `${where} message ${messageId}`, problems);
    messages.push({
      id: messageId,
      ticketId: id,
      messageType: mf.message_type as string | null,
      ticketStatus: mf.ticket_status as string | null,
      message: mf.message as string | null,
      outboundSent: mf.outbound_sent as boolean | null,
      outboundDeliveredAt: mf.outbound_delivered_at as string | null,
      outboundBounced: mf.outbound_bounced as boolean | null,
      outboundSpamComplaint: mf.outbound_spam_complaint as boolean | null,
      outboundError: mf.outbound_error as string | null,
      createdAt: mf.created_at as string | null,
      author: mf.user ?? null,
    });
    const messageAttachments = arrayField(m, 'attachments', `${where} message ${messageId}`, problems);
    if (messageAttachments === null) complete.attachments = false;
    for (const a of messageAttachments ?? []) {
      const row = mapAttachment(a, id, messageId, `${where} message ${messageId}`, problems);
      if (row) attachments.set(row.id, row);
    }
  }
  // The same attachment is listed at ticket level and inside its message: stored once, with its message.
  for (const a of ticketAttachments ?? []) {
    const row = mapAttachment(a, id, null, where, problems);
    if (row && !attachments.has(row.id)) attachments.set(row.id, row);
  }
  return { ticket, absent, messages, attachments: [...attachments.values()], complete, raw, problems: problems.lines };
}

/** One attachment's row; null, reported, when its id is too long to store (see MAX_ID_BYTES). */
function mapAttachment(a: unknown, ticketId: string, messageId: string | null, where: string, problems: Problems): AttachmentRow | null {
  if (!isObject(a)) throw new UnstorableError(`${where}: an attachment is not an object`);
  const id = requireId(a.id, `${where} attachment`);
  if (tooLong(id)) {
    problems.add(where, `an attachment id of ${Buffer.byteLength(id)} bytes, longer than the ${MAX_ID_BYTES} the mirror stores: skipped`);
    return null;
  }
  const f = convertAll(a, ATTACHMENT_FIELDS, `${where} attachment ${id}`, problems);
  return { id, ticketId, messageId, name: f.name as string | null, mimeType: f.mime_type as string | null, size: f.size as number | null };
}

/**
 * The array `key` of `obj`; null, reported, when it is missing or null. That says nothing of what it holds: the rows
 * the mirror has of it are kept, not marked removed (see MappedDetail's `complete`).
 */
function arrayField(obj: JsonObject, key: string, where: string, problems: Problems): unknown[] | null {
  const value = obj[key];
  if (Array.isArray(value)) return value;
  if (value !== undefined && value !== null) throw new UnstorableError(`${where}: ${key} is not an array`);
  problems.add(where, `${key} is ${value === undefined ? 'missing' : 'null'} where the spec gives an array: what the mirror holds of it is kept`);
  return null;
}
