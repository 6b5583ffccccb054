import { systemClock, type Clock } from '../clock.ts';
import { TicketFactory } from './factory.ts';
import { historicTickets, replayHistoric } from './history.ts';
import { Random } from './random.ts';
import { AttachmentSigner, signingSecret } from './signing.ts';
import { formatMicros, nextStamp } from './stamps.ts';
import {
  CLOSED_STATUSES,
  PRIORITIES,
  TICKET_STATUSES,
  type Agent,
  type AttachmentRecord,
  type MessageRecord,
  type MessageTruth,
  type Priority,
  type ReplyResult,
  type TicketDetail,
  type TicketGroup,
  type TicketListItem,
  type TicketRecord,
  type TicketStatus,
  type TicketTruth,
} from './types.ts';
import type { AgentChoice, AgentReplyOptions, InboundMessageOptions, NewTicketOptions } from './types.ts';
import { toDetail, toListItem, toMessageTruth, toTruth } from './views.ts';

export type { AgentChoice, AgentReplyOptions, InboundMessageOptions, NewTicketOptions } from './types.ts';

export interface SimulatorModelOptions {
  /** Same seed (and same clock start) → identical dataset. @default 1 */
  seed?: number;
  /** Every timestamp comes from it; pass a ManualClock for virtual time. @default systemClock */
  clock?: Clock;
  /** Tickets in an open status at the start. @default 40 */
  openTickets?: number;
  /** Resolved or closed tickets at the start. @default 120 */
  resolvedTickets?: number;
  /** Signs attachment links. @default a signer keyed by the seed, for a storage origin at http://storage.invalid */
  signer?: AttachmentSigner;
  /**
   * The instant the generated history ends: the same seed and instant give the same dataset, whenever it is built (a
   * simulator's accounts are built on their first request, as of when they were added). @default clock.now()
   */
  historyEndsAt?: number;
  /**
   * Keep no messages of historic tickets that have not changed; generate them again, identical, when a detail, the
   * truth or a change needs them. The same answers in about a quarter of the memory (history.ts). @default false
   */
  compactHistory?: boolean;
}

/**
 * Group membership as bits. Open means not resolved/closed; self and unassigned are subsets of open (a resolved
 * ticket assigned to the token's user is not "self": the endpoint serves the user's current work).
 */
const GROUP_BITS: Readonly<Record<TicketGroup, number>> = { open: 1, self: 2, unassigned: 4, resolved: 8 };

/** A mutation named a ticket that does not exist (never did, or was deleted). */
export class UnknownTicketError extends Error {
  override name = 'UnknownTicketError';

  constructor(readonly ticketId: string) {
    super(`no ticket with id ${JSON.stringify(ticketId)}`);
  }
}

/**
 * The helpdesk's state, in memory, with the mutations a helpdesk sees. No HTTP here: tests and the benchmark drive it
 * directly, the server only reads it and calls `reply`. Every timestamp comes from the injected clock, and one
 * ticket's events are stamped strictly in order (see `nextStamp`).
 *
 * Performance: the lists are served many thousand times by the benchmark, so tickets are kept sorted newest first and
 * each group's list is cached until the next mutation.
 */
export class SimulatorModel {
  /** The token's user. */
  readonly self: Agent;
  /** The token's user first, then the other agents. */
  readonly agents: readonly Agent[];
  readonly signer: AttachmentSigner;
  /** The clock every mutation reads. */
  readonly clock: Clock;
  readonly #rng: Random;
  readonly #factory: TicketFactory;
  readonly #historyEndsAt: number;
  readonly #tickets = new Map<string, TicketRecord>();
  /** Invariant: every ticket of #tickets, sorted by `newestFirst`. */
  readonly #newest: TicketRecord[] = [];
  readonly #files = new Map<string, AttachmentRecord>();
  /** Bumped per group whenever a ticket enters, leaves or changes its list item within that group. */
  readonly #versions: Record<TicketGroup, number> = { open: 0, self: 0, unassigned: 0, resolved: 0 };
  readonly #lists = new Map<TicketGroup, { version: number; items: readonly Readonly<TicketListItem>[] }>();

  constructor(opts: SimulatorModelOptions = {}) {
    const seed = opts.seed ?? 1;
    this.clock = opts.clock ?? systemClock;
    this.#rng = new Random(seed);
    this.#factory = new TicketFactory(this.#rng);
    this.self = this.#factory.self;
    this.agents = [this.self, ...this.#factory.others];
    this.signer = opts.signer ?? new AttachmentSigner(signingSecret(seed), 'http://storage.invalid');
    this.#historyEndsAt = opts.historyEndsAt ?? this.clock.now();
    const open = opts.openTickets ?? 40;
    const resolved = opts.resolvedTickets ?? 120;
    for (const t of historicTickets(this.#factory, open, resolved, this.#historyEndsAt, opts.compactHistory ?? false)) {
      this.#register(t);
      this.#newest.push(t);
    }
    // One sort rather than thousands of sorted inserts.
    this.#newest.sort(newestFirst);
  }

  listOpen(): readonly Readonly<TicketListItem>[] {
    return this.list('open');
  }

  listSelf(): readonly Readonly<TicketListItem>[] {
    return this.list('self');
  }

  listUnassigned(): readonly Readonly<TicketListItem>[] {
    return this.list('unassigned');
  }

  listResolved(): readonly Readonly<TicketListItem>[] {
    return this.list('resolved');
  }

  /** A group's list items, newest first by created_at. The array is frozen and shared until the next mutation. */
  list(group: TicketGroup): readonly Readonly<TicketListItem>[] {
    const version = this.#versions[group];
    const cached = this.#lists.get(group);
    if (cached?.version === version) return cached.items;
    const bit = GROUP_BITS[group];
    const items: Readonly<TicketListItem>[] = [];
    for (const t of this.#newest) {
      if (this.#groups(t) & bit) items.push((t.listItem ??= Object.freeze(toListItem(t))));
    }
    this.#lists.set(group, { version, items: Object.freeze(items) });
    return items;
  }

  hasTicket(id: string): boolean {
    return this.#tickets.has(id);
  }

  /** Endpoint 5's object, attachment links signed at `issuedAtMs`; undefined when there is no such ticket. */
  detail(id: string, issuedAtMs: number = this.clock.now()): TicketDetail | undefined {
    const t = this.#tickets.get(id);
    return t && toDetail(this.#whole(t), this.signer, issuedAtMs);
  }

  /** Every existing ticket's detail minus the (time-dependent) attachment urls, newest first. */
  groundTruth(): TicketTruth[] {
    return this.#newest.map((t) => toTruth(this.#whole(t)));
  }

  /** An attachment of an existing ticket, for the storage origin. */
  attachment(id: string): Readonly<AttachmentRecord> | undefined {
    return this.#files.get(id);
  }

  /** A random ticket of a group (or of all), for drivers that need a target; undefined when there is none. */
  randomTicketId(group: TicketGroup | 'any' = 'any'): string | undefined {
    const pool: readonly { id: string }[] = group === 'any' ? this.#newest : this.list(group);
    return pool.length === 0 ? undefined : this.#rng.pick(pool).id;
  }

  /** A customer opens a ticket: status pending, unassigned, one unread inbound message. */
  newTicket(opts: NewTicketOptions = {}): TicketTruth {
    const f = this.#factory;
    if (opts.priority !== undefined) checkPriority(opts.priority);
    const nowMs = this.clock.now();
    const generated = f.content.customer();
    const person = { name: opts.name ?? generated.name, email: opts.email ?? generated.email };
    const t = f.ticket(person, nextStamp(nowMs, 0, this.#rng), opts.priority ?? f.priority());
    const us = nextStamp(nowMs, t.createdUs, this.#rng);
    const files = f.files(opts.attachments ?? (this.#rng.chance(1 / 3) ? this.#rng.int(1, 2) : 0));
    const m = f.inbound(opts.message ?? f.content.opening(), 'pending', us, files);
    t.messages.push(m);
    t.attachments.push(...files);
    t.hasUnread = true;
    t.lastContactAt = t.updatedAt = m.createdAt;
    t.lastEventUs = us;
    this.#register(t);
    this.#newest.splice(insertionIndex(this.#newest, t), 0, t);
    this.#invalidate(this.#groups(t));
    return toTruth(t);
  }

  /** The customer writes. A resolved or closed ticket is reopened by it, as helpdesks do. */
  inboundMessage(ticketId: string, opts: InboundMessageOptions = {}): MessageTruth {
    return this.#change(ticketId, (t, us) => {
      if (CLOSED_STATUSES.has(t.status)) {
        t.status = 'open';
        t.closedAt = null;
      }
      const f = this.#factory;
      const files = f.files(opts.attachments ?? (this.#rng.chance(0.2) ? 1 : 0));
      const m = f.inbound(opts.message ?? f.content.followUp(), t.status, us, files);
      this.#addMessage(t, m);
      t.hasUnread = true;
      t.lastContactAt = m.createdAt;
      return toMessageTruth(m);
    });
  }

  /** An agent answers by e-mail: the ticket counts as replied and read, and a pending ticket becomes open. */
  agentReply(ticketId: string, opts: AgentReplyOptions = {}): MessageTruth {
    const agent = this.#agent(opts.agent, this.#require(ticketId).assignedTo);
    return this.#change(ticketId, (t, us) => {
      return toMessageTruth(this.#reply(t, us, agent, opts.message ?? this.#factory.content.reply(t.name, agent.name)));
    });
  }

  /** Endpoint 6: a reply from the token's user. */
  reply(ticketId: string, message: string): ReplyResult {
    return this.#change(ticketId, (t, us) => {
      const m = this.#reply(t, us, this.self, message);
      return { id: m.id, created_at: m.createdAt };
    });
  }

  /** Sets any status; entering resolved/closed sets `closed_at`, leaving them clears it. */
  setStatus(ticketId: string, status: TicketStatus): TicketTruth {
    if (!TICKET_STATUSES.includes(status)) throw new RangeError(`unknown status ${JSON.stringify(status)}`);
    return this.#change(ticketId, (t, us) => {
      if (!CLOSED_STATUSES.has(status)) t.closedAt = null;
      else if (t.closedAt === null) t.closedAt = formatMicros(us);
      t.status = status;
      return toTruth(t);
    });
  }

  resolve(ticketId: string): TicketTruth {
    return this.setStatus(ticketId, 'resolved');
  }

  reopen(ticketId: string): TicketTruth {
    return this.setStatus(ticketId, 'open');
  }

  /** Assigns to the token's user, to a random other agent (a different one if possible), or to an agent id. */
  assign(ticketId: string, who: AgentChoice): TicketTruth {
    const agent = this.#agent(who, this.#require(ticketId).assignedTo);
    return this.#change(ticketId, (t) => {
      t.assignedTo = agent;
      return toTruth(t);
    });
  }

  unassign(ticketId: string): TicketTruth {
    return this.#change(ticketId, (t) => {
      t.assignedTo = null;
      return toTruth(t);
    });
  }

  setPriority(ticketId: string, priority: Priority): TicketTruth {
    checkPriority(priority);
    return this.#change(ticketId, (t) => {
      t.priority = priority;
      return toTruth(t);
    });
  }

  markRead(ticketId: string): TicketTruth {
    return this.#change(ticketId, (t) => {
      t.hasUnread = false;
      return toTruth(t);
    });
  }

  /** Removes a ticket and its files: endpoint 5 answers 404 from now on. Returns its last state. */
  deleteTicket(ticketId: string): TicketTruth {
    const t = this.#require(ticketId);
    this.#tickets.delete(ticketId);
    this.#newest.splice(this.#newest.indexOf(t), 1);
    for (const a of t.attachments) this.#files.delete(a.id);
    this.#invalidate(this.#groups(t));
    return toTruth(this.#whole(t));
  }

  #require(ticketId: string): TicketRecord {
    const t = this.#tickets.get(ticketId);
    if (!t) throw new UnknownTicketError(ticketId);
    return t;
  }

  /** Applies one change to a ticket at a fresh instant, which becomes its `updated_at`. */
  #change<R>(ticketId: string, apply: (t: TicketRecord, us: number) => R): R {
    const t = this.#require(ticketId);
    if (t.replay) this.#keepWhole(t);
    const before = { status: t.status, hasUnread: t.hasUnread, groups: this.#groups(t) };
    const us = nextStamp(this.clock.now(), t.lastEventUs, this.#rng);
    t.lastEventUs = us;
    t.updatedAt = formatMicros(us);
    const result = apply(t, us);
    const groups = this.#groups(t);
    // Only what a list shows (status, unread flag, membership) costs a list its cache.
    if (before.status !== t.status || before.hasUnread !== t.hasUnread || before.groups !== groups) {
      t.listItem = undefined;
      this.#invalidate(before.groups | groups);
    }
    return result;
  }

  /** The bit set of the groups a ticket is in (see GROUP_BITS). */
  #groups(t: TicketRecord): number {
    if (CLOSED_STATUSES.has(t.status)) return GROUP_BITS.resolved;
    if (t.assignedTo === null) return GROUP_BITS.open | GROUP_BITS.unassigned;
    return t.assignedTo.id === this.self.id ? GROUP_BITS.open | GROUP_BITS.self : GROUP_BITS.open;
  }

  #invalidate(groups: number): void {
    for (const group of Object.keys(GROUP_BITS) as TicketGroup[]) {
      if (groups & GROUP_BITS[group]) this.#versions[group]++;
    }
  }

  #reply(t: TicketRecord, us: number, agent: Agent, text: string): MessageRecord {
    if (t.status === 'pending') t.status = 'open';
    const deliveryUs = this.#rng.int(1_000, 400_000);
    const m = this.#factory.outbound(agent, text, t.status, us, deliveryUs);
    this.#addMessage(t, m);
    // The delivery instant is an event of this ticket too: later events are stamped after it.
    t.lastEventUs = us + deliveryUs;
    t.repliedToCustomer = true;
    t.hasUnread = false;
    return m;
  }

  #addMessage(t: TicketRecord, m: MessageRecord): void {
    t.messages.push(m);
    t.attachments.push(...m.attachments);
    for (const a of m.attachments) this.#files.set(a.id, a);
  }

  /** A ticket with all its messages: itself, or for a compact one a copy with them generated again. */
  #whole(t: TicketRecord): TicketRecord {
    return t.replay ? { ...t, messages: replayHistoric(this.#factory, t, this.#historyEndsAt).messages } : t;
  }

  /** A compact ticket about to change keeps its messages from now on (with the same attachments, generated again). */
  #keepWhole(t: TicketRecord): void {
    const again = replayHistoric(this.#factory, t, this.#historyEndsAt);
    t.messages = again.messages;
    t.attachments = again.attachments;
    t.replay = undefined;
    this.#register(t);
  }

  /** Indexes a ticket and its files; the caller puts it in #newest. */
  #register(t: TicketRecord): void {
    this.#tickets.set(t.id, t);
    for (const a of t.attachments) this.#files.set(a.id, a);
  }

  #agent(choice: AgentChoice | undefined, current: Agent | null): Agent {
    if (choice === 'self') return this.self;
    if (choice === undefined && current) return current;
    if (choice === undefined || choice === 'other') {
      const others = this.#factory.others.filter((a) => a.id !== current?.id);
      return this.#rng.pick(others.length > 0 ? others : this.#factory.others);
    }
    const agent = this.agents.find((a) => a.id === choice);
    if (!agent) throw new RangeError(`unknown agent ${JSON.stringify(choice)}`);
    return agent;
  }
}

function checkPriority(priority: Priority): void {
  if (!PRIORITIES.includes(priority)) throw new RangeError(`unknown priority ${JSON.stringify(priority)}`);
}

/** Newest first by created_at; the id breaks ties so the order is total and deterministic. */
function newestFirst(a: TicketRecord, b: TicketRecord): number {
  return b.createdUs - a.createdUs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Where `t` goes in a list sorted by `newestFirst` (binary search: new tickets usually go first, but not always). */
function insertionIndex(sorted: readonly TicketRecord[], t: TicketRecord): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (newestFirst(sorted[mid]!, t) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
