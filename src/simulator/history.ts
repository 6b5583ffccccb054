import type { TicketFactory } from './factory.ts';
import { Random } from './random.ts';
import { avoidWholeSecond, formatMicros, MICROS_PER_MS } from './stamps.ts';
import type { Agent, HistoricKind, MessageRecord, MessageType, TicketRecord, TicketStatus } from './types.ts';

/**
 * The dataset a simulator starts with: tickets whose whole life happened before the clock's start. Open tickets are
 * recent (up to a month old, most of them days old); resolved ones spread over the past six months.
 */

const MINUTE_US = 60 * 1000 * MICROS_PER_MS;
const HOUR_US = 60 * MINUTE_US;
const DAY_US = 24 * HOUR_US;

/** The messages of a compact ticket: none kept (see `replayHistoric`); frozen, so a push fails loudly. */
const NOT_KEPT: MessageRecord[] = Object.freeze([]) as unknown as MessageRecord[];

/**
 * The history of a new model: `open` open tickets, then `resolved` resolved ones, drawn in that order.
 *
 * `compact`: each ticket keeps what the lists and its detail's own fields show, its attachments, and the generator's
 * state when it began (`replay`), but not its messages — the bulk of the memory. `replayHistoric` draws them again,
 * identical, when they are asked for. A ticket one of whose ids collided keeps its messages: a replica, which checks
 * no id, would have drawn another.
 */
export function historicTickets(f: TicketFactory, open: number, resolved: number, nowMs: number, compact: boolean): TicketRecord[] {
  const tickets: TicketRecord[] = [];
  for (let i = 0; i < open + resolved; i++) {
    const kind: HistoricKind = i < open ? 'open' : 'resolved';
    const state = compact ? f.rng.state() : undefined;
    const collisions = f.collisions;
    const t = historicTicket(f, kind, nowMs);
    // A new record rather than `t` changed: `t` and its messages then die young, in the nursery, instead of keeping
    // each other alive through scavenges into the old generation (as garbage there: a third more RSS).
    tickets.push(state && f.collisions === collisions ? compactCopy(t, { kind, state }) : t);
  }
  return tickets;
}

/** `t` without its messages, field by field (a spread would give a slower, larger object). */
function compactCopy(t: TicketRecord, replay: NonNullable<TicketRecord['replay']>): TicketRecord {
  return {
    id: t.id,
    name: t.name,
    email: t.email,
    status: t.status,
    priority: t.priority,
    hasUnread: t.hasUnread,
    repliedToCustomer: t.repliedToCustomer,
    closedAt: t.closedAt,
    lastContactAt: t.lastContactAt,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
    assignedTo: t.assignedTo,
    widget: t.widget,
    aiSummary: t.aiSummary,
    attachments: t.attachments,
    messages: NOT_KEPT,
    createdUs: t.createdUs,
    lastEventUs: t.lastEventUs,
    listItem: undefined,
    replay,
  };
}

/** A compact ticket (`t.replay` set) as it was generated, messages included: a new record, `t` is not changed. */
export function replayHistoric(f: TicketFactory, t: TicketRecord, nowMs: number): TicketRecord {
  const again = historicTicket(f.replica(Random.fromState(t.replay!.state)), t.replay!.kind, nowMs);
  if (again.id !== t.id) throw new Error(`replaying ticket ${t.id} drew ${again.id}: the history changed`);
  return again;
}

export function historicTicket(f: TicketFactory, kind: HistoricKind, nowMs: number): TicketRecord {
  const { rng } = f;
  const nowUs = Math.floor(nowMs) * MICROS_PER_MS;
  const ageUs = kind === 'open' ? 10 * MINUTE_US + 30 * DAY_US * rng.next() ** 2 : DAY_US + 180 * DAY_US * rng.next();
  const t = f.ticket(f.content.customer(), avoidWholeSecond(nowUs - Math.floor(ageUs) + rng.int(1, 999)));
  t.assignedTo = assignee(f, kind);

  // Open tickets were active until a minute ago at most; resolved ones leave room for their resolution.
  const spanUs =
    kind === 'open'
      ? (ageUs - MINUTE_US) * (0.2 + 0.8 * rng.next())
      : Math.min(ageUs * 0.8, HOUR_US + 10 * DAY_US * rng.next());
  const times = eventTimes(f, t.createdUs, spanUs, 2 + Math.floor(rng.next() ** 1.5 * 9));
  addMessages(f, t, times, nowUs);

  const replied = t.messages.some((m) => m.type === 'outbound');
  const last = t.messages[t.messages.length - 1]!;
  t.repliedToCustomer = replied;
  t.lastContactAt = t.messages.findLast((m) => m.type === 'inbound')!.createdAt;
  t.updatedAt = last.createdAt;
  if (kind === 'open') {
    t.status = replied ? rng.weighted([['open', 70], ['on_hold', 30]] as const) : 'pending';
    last.ticketStatus = t.status;
    t.hasUnread = last.type === 'inbound' && rng.chance(0.85);
  } else {
    const lastUs = t.lastEventUs;
    const delayUs = Math.min(MINUTE_US + 2 * DAY_US * rng.next(), (nowUs - lastUs) / 2);
    const closedUs = avoidWholeSecond(lastUs + Math.floor(delayUs));
    t.status = rng.weighted([['resolved', 80], ['closed', 20]] as const);
    t.closedAt = formatMicros(closedUs);
    t.updatedAt = t.closedAt;
    t.lastEventUs = closedUs;
  }
  addTicketLevelFile(f, t);
  if (t.messages.length >= 3 && rng.chance(0.15)) t.aiSummary = f.content.summary();
  return t;
}

function assignee(f: TicketFactory, kind: HistoricKind): Agent | null {
  const weights = kind === 'open' ? [30, 35, 35] : [25, 65, 10];
  const who = f.rng.weighted([['self', weights[0]!], ['other', weights[1]!], ['none', weights[2]!]] as const);
  if (who === 'none') return null;
  return who === 'self' ? f.self : f.rng.pick(f.others);
}

/** `count` strictly increasing instants: the first just after creation, the rest spread over `spanUs`. */
function eventTimes(f: TicketFactory, createdUs: number, spanUs: number, count: number): number[] {
  const offsets = Array.from({ length: count - 1 }, () => Math.floor(f.rng.next() * spanUs)).sort((a, b) => a - b);
  let prev = avoidWholeSecond(createdUs + f.rng.int(1_000, 900_000));
  const times = [prev];
  for (const offset of offsets) {
    prev = avoidWholeSecond(Math.max(createdUs + offset, prev + f.rng.int(1, 999)));
    times.push(prev);
  }
  return times;
}

/** A conversation: the customer opens, agents answer (sometimes with an internal note), the customer follows up. */
function addMessages(f: TicketFactory, t: TicketRecord, times: number[], nowUs: number): void {
  const { rng, content } = f;
  const withFiles = rng.chance(1 / 3);
  let type: MessageType = 'inbound';
  let replied = false;
  times.forEach((us, i) => {
    const status: TicketStatus = replied || type === 'outbound' ? 'open' : 'pending';
    const agent = t.assignedTo ?? rng.pick([f.self, ...f.others]);
    let m: MessageRecord;
    let lastUs = us;
    if (type === 'inbound') {
      const files = withFiles && rng.chance(0.5) ? f.files(rng.int(1, 2)) : [];
      m = f.inbound(i === 0 ? content.opening() : content.followUp(), status, us, files);
    } else if (type === 'outbound') {
      // Delivery takes seconds, but never reaches the next event (or the present).
      const room = ((times[i + 1] ?? nowUs) - us) / 2;
      const deliveryUs = Math.max(1, Math.floor(Math.min(rng.int(300_000, 20_000_000), room)));
      m = f.outbound(agent, content.reply(t.name, agent.name), status, us, deliveryUs);
      lastUs = us + deliveryUs;
      if (withFiles && rng.chance(0.15)) m.attachments = f.files(1);
      replied = true;
    } else {
      m = f.note(agent, status, us);
    }
    t.messages.push(m);
    t.attachments.push(...m.attachments);
    t.lastEventUs = lastUs;
    type = nextType(f, type);
  });
  if (withFiles && t.attachments.length === 0) {
    const first = t.messages[0]!;
    first.attachments = f.files(1);
    t.attachments.push(...first.attachments);
  }
}

function nextType(f: TicketFactory, previous: MessageType): MessageType {
  return previous === 'inbound'
    ? f.rng.weighted([['outbound', 65], ['inbound', 30], ['note', 5]] as const)
    : f.rng.weighted([['inbound', 75], ['outbound', 20], ['note', 5]] as const);
}

/** Some tickets carry a file that belongs to no message (uploaded by an agent in the helpdesk's UI). */
function addTicketLevelFile(f: TicketFactory, t: TicketRecord): void {
  if (f.rng.chance(0.06)) t.attachments.push(...f.files(1));
}
