import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { SimulatorModel, UnknownTicketError } from '../../src/simulator/model.ts';
import type { TicketTruth } from '../../src/simulator/types.ts';
import { isApiTimestamp, toEpochMicros } from '../../src/time.ts';

const START = Date.UTC(2026, 0, 5, 8, 0, 0);

function model(opts: { seed?: number; openTickets?: number; resolvedTickets?: number } = {}) {
  const clock = new ManualClock(START);
  return { clock, model: new SimulatorModel({ clock, ...opts }) };
}

const micros = (timestamp: string): bigint => toEpochMicros(timestamp)!;

/** Every timestamp of a ticket in event order: creation, messages (and deliveries), then updated_at. */
function expectOrderedTimestamps(t: TicketTruth): void {
  const stamps = [t.created_at, ...t.messages.map((m) => m.created_at)];
  for (let i = 1; i < stamps.length; i++) expect(micros(stamps[i]!)).toBeGreaterThan(micros(stamps[i - 1]!));
  expect(micros(t.updated_at)).toBeGreaterThanOrEqual(micros(stamps[stamps.length - 1]!));
  if (t.closed_at) expect(micros(t.closed_at)).toBeGreaterThan(micros(stamps[stamps.length - 1]!));
}

function allTimestamps(t: TicketTruth): string[] {
  const own = [t.created_at, t.updated_at, t.last_contact_at, t.closed_at];
  const ofMessages = t.messages.flatMap((m) => [m.created_at, m.outbound_delivered_at]);
  return [...own, ...ofMessages].filter((s): s is string => s !== null);
}

describe('SimulatorModel dataset', () => {
  it('is identical for the same seed and clock, different for another seed', () => {
    expect(model({ seed: 7 }).model.groundTruth()).toEqual(model({ seed: 7 }).model.groundTruth());
    expect(model({ seed: 8 }).model.groundTruth()).not.toEqual(model({ seed: 7 }).model.groundTruth());
  });

  it('has the requested numbers of open and resolved tickets', () => {
    const { model: m } = model({ openTickets: 12, resolvedTickets: 30 });
    expect(m.listOpen()).toHaveLength(12);
    expect(m.listResolved()).toHaveLength(30);
    expect(m.groundTruth()).toHaveLength(42);
  });

  it('puts tickets in the groups by status and assignee', () => {
    const { model: m } = model();
    const truth = new Map(m.groundTruth().map((t) => [t.id, t]));
    const ids = (list: readonly { id: string }[]) => new Set(list.map((t) => t.id));
    const open = ids(m.listOpen());
    for (const t of truth.values()) {
      const isOpen = !['resolved', 'closed'].includes(t.status);
      expect(open.has(t.id)).toBe(isOpen);
      expect(ids(m.listResolved()).has(t.id)).toBe(!isOpen);
      expect(ids(m.listSelf()).has(t.id)).toBe(isOpen && t.assigned_to?.id === m.self.id);
      expect(ids(m.listUnassigned()).has(t.id)).toBe(isOpen && t.assigned_to === null);
    }
    // A realistic mix: every group has members, and some open tickets belong to other agents.
    expect(m.listSelf().length).toBeGreaterThan(0);
    expect(m.listUnassigned().length).toBeGreaterThan(0);
    expect(m.listSelf().length + m.listUnassigned().length).toBeLessThan(m.listOpen().length);
  });

  it('lists newest first by created_at, as list items with exactly the spec fields', () => {
    const { model: m } = model();
    for (const list of [m.listOpen(), m.listSelf(), m.listUnassigned(), m.listResolved()]) {
      for (let i = 1; i < list.length; i++) {
        expect(micros(list[i - 1]!.created_at)).toBeGreaterThanOrEqual(micros(list[i]!.created_at));
      }
      for (const item of list) {
        expect(Object.keys(item)).toEqual(['id', 'name', 'email', 'status', 'has_unread_messages', 'created_at']);
      }
    }
  });

  it('gives details with the spec fields in the spec order', () => {
    const { model: m } = model();
    const withFiles = m.groundTruth().find((t) => t.messages.some((msg) => msg.attachments.length > 0))!;
    const detail = m.detail(withFiles.id)!;
    expect(Object.keys(detail)).toEqual([
      'id', 'name', 'email', 'status', 'priority', 'has_unread_messages', 'replied_to_customer', 'closed_at',
      'last_contact_at', 'created_at', 'updated_at', 'assigned_to', 'widget', 'ai_summary', 'attachments', 'messages',
    ]);
    expect(Object.keys(detail.messages[0]!)).toEqual([
      'id', 'message_type', 'ticket_status', 'message', 'outbound_sent', 'outbound_delivered_at', 'outbound_bounced',
      'outbound_spam_complaint', 'outbound_error', 'created_at', 'user', 'attachments',
    ]);
    expect(Object.keys(detail.attachments[0]!)).toEqual(['id', 'name', 'mime_type', 'size', 'url']);
    expect(Object.keys(detail.widget)).toEqual(['id', 'name']);
    expect(m.detail('nope')).toBeUndefined();
  });

  it('uses 8-character base62 ids, unique across tickets, messages and attachments', () => {
    const { model: m } = model({ resolvedTickets: 300 });
    const ids = m
      .groundTruth()
      .flatMap((t) => [t.id, ...t.messages.map((x) => x.id), ...t.attachments.map((a) => a.id)]);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('stamps with microseconds, never a whole second, in order within each ticket', () => {
    const { model: m } = model({ resolvedTickets: 300 });
    for (const t of m.groundTruth()) {
      for (const stamp of allTimestamps(t)) {
        expect(isApiTimestamp(stamp)).toBe(true);
        expect(stamp).not.toMatch(/\.000000Z$/);
        expect(Date.parse(stamp)).toBeLessThan(START);
      }
      expectOrderedTimestamps(t);
    }
    // Real sub-millisecond digits, not a constant.
    const subMillis = new Set(m.groundTruth().map((t) => t.created_at.slice(23, 26)));
    expect(subMillis.size).toBeGreaterThan(50);
  });

  it('generates realistic, varied content', () => {
    const { model: m } = model({ resolvedTickets: 500 });
    const truth = m.groundTruth();
    const share = (p: (t: TicketTruth) => boolean) => truth.filter(p).length / truth.length;
    expect(share((t) => t.attachments.length > 0)).toBeGreaterThan(0.25);
    expect(share((t) => t.attachments.length > 0)).toBeLessThan(0.5);
    expect(share((t) => t.ai_summary !== null)).toBeGreaterThan(0);
    expect(share((t) => t.ai_summary !== null)).toBeLessThan(0.3);
    for (const t of truth) expect(t.messages.length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...truth.map((t) => t.messages.length))).toBeLessThanOrEqual(10);
    expect(share((t) => /[^\x00-\x7f]/.test(t.name))).toBeGreaterThan(0);
    expect(share((t) => /\p{Script=Han}|\p{Script=Hangul}/u.test(t.name))).toBeGreaterThan(0);
    expect(share((t) => /\p{Extended_Pictographic}/u.test(t.name))).toBeGreaterThan(0);
    expect(share((t) => t.messages.some((msg) => msg.message.includes('\n')))).toBeGreaterThan(0.3);
    const messages = truth.flatMap((t) => t.messages);
    expect(messages.some((msg) => msg.outbound_error !== null && msg.outbound_bounced)).toBe(true);
    expect(messages.some((msg) => msg.outbound_spam_complaint)).toBe(true);
    expect(new Set(truth.map((t) => t.widget.name)).size).toBeGreaterThan(1);
    // Spread over months before the start.
    const oldest = Math.min(...truth.map((t) => Date.parse(t.created_at)));
    expect(START - oldest).toBeGreaterThan(90 * 86_400_000);
  });

  it('shows each message attachment on its message and on the ticket; some files are ticket-level only', () => {
    const { model: m } = model({ resolvedTickets: 500 });
    let ticketLevelOnly = 0;
    for (const t of m.groundTruth()) {
      const onMessages = t.messages.flatMap((msg) => msg.attachments);
      for (const a of onMessages) expect(t.attachments).toContainEqual(a);
      ticketLevelOnly += t.attachments.length - onMessages.length;
      for (const a of t.attachments) {
        expect(a.mime_type).toMatch(/^[a-z]+$/);
        expect(Number.isInteger(a.size)).toBe(true);
      }
    }
    expect(ticketLevelOnly).toBeGreaterThan(0);
  });

  it('keeps inbound and outbound messages in their shapes', () => {
    const { model: m } = model();
    const messages = m.groundTruth().flatMap((t) => t.messages);
    for (const msg of messages.filter((x) => x.message_type === 'inbound')) {
      expect(msg).toMatchObject({ user: null, outbound_sent: false, outbound_delivered_at: null });
    }
    for (const msg of messages.filter((x) => x.message_type === 'outbound')) {
      expect(msg.user).toEqual(expect.objectContaining({ id: expect.any(String), name: expect.any(String) }));
      expect(msg.outbound_sent).toBe(true);
      expect(msg.outbound_delivered_at === null).toBe(msg.outbound_bounced);
    }
  });

  it('generates 5,500 tickets quickly and serves a cached list of 5,000 cheaply', () => {
    const begun = performance.now();
    const { model: m } = model({ resolvedTickets: 5_500 });
    expect(performance.now() - begun).toBeLessThan(3_000);
    const lists = performance.now();
    for (let i = 0; i < 10_000; i++) m.listResolved();
    expect(performance.now() - lists).toBeLessThan(100);
    expect(m.listResolved()).toBe(m.listResolved());
    expect(Object.isFrozen(m.listResolved())).toBe(true);
  });
});

describe('SimulatorModel mutations', () => {
  it('newTicket: pending, unassigned, unread, first in open and unassigned', () => {
    const { clock, model: m } = model();
    clock.advance(60_000);
    const t = m.newTicket({ name: 'Zoë Ünal 🚀', email: 'zoe@example.com', message: 'Hello\nworld', attachments: 2 });
    expect(t).toMatchObject({ name: 'Zoë Ünal 🚀', status: 'pending', has_unread_messages: true, assigned_to: null });
    expect(t.messages).toHaveLength(1);
    expect(t.messages[0]).toMatchObject({ message_type: 'inbound', message: 'Hello\nworld', ticket_status: 'pending' });
    expect(t.attachments).toHaveLength(2);
    expect(t.attachments).toEqual(t.messages[0]!.attachments);
    expect(m.listOpen()[0]!.id).toBe(t.id);
    expect(m.listUnassigned()[0]!.id).toBe(t.id);
    expect(Date.parse(t.created_at)).toBe(clock.now());
    expect(m.detail(t.id)).toBeDefined();
  });

  it('inboundMessage: unread, last contact, updated; reopens a resolved ticket', () => {
    const { clock, model: m } = model();
    const id = m.listResolved()[0]!.id;
    clock.advance(1_000);
    const msg = m.inboundMessage(id, { message: 'Still broken', attachments: 1 });
    const t = m.groundTruth().find((x) => x.id === id)!;
    expect(msg).toMatchObject({ message_type: 'inbound', user: null, ticket_status: 'open' });
    expect(t).toMatchObject({ status: 'open', closed_at: null, has_unread_messages: true });
    expect(t.last_contact_at).toBe(msg.created_at);
    expect(t.updated_at).toBe(msg.created_at);
    expect(t.attachments).toContainEqual(msg.attachments[0]);
    expect(m.listOpen().map((x) => x.id)).toContain(id);
  });

  it('agentReply: outbound from the agent, delivered, replied, read; a pending ticket becomes open', () => {
    const { model: m } = model();
    const id = m.newTicket().id;
    const msg = m.agentReply(id, { agent: 'self', message: 'On it!' });
    expect(msg).toMatchObject({ message_type: 'outbound', user: m.self, outbound_sent: true, message: 'On it!' });
    const t = m.groundTruth().find((x) => x.id === id)!;
    expect(t).toMatchObject({ status: 'open', replied_to_customer: true, has_unread_messages: false });
    const other = m.agentReply(id, { agent: 'other' });
    expect(other.user!.id).not.toBe(m.self.id);
  });

  it('reply: an outbound message from the token user, returning id and created_at', () => {
    const { model: m } = model();
    const id = m.listOpen()[0]!.id;
    const result = m.reply(id, 'Thanks, fixed.');
    expect(Object.keys(result)).toEqual(['id', 'created_at']);
    const msg = m.detail(id)!.messages.at(-1)!;
    expect(msg).toMatchObject({ id: result.id, created_at: result.created_at, message: 'Thanks, fixed.' });
    expect(msg.user).toEqual(m.self);
  });

  it('resolve and reopen move a ticket between the groups and set or clear closed_at', () => {
    const { model: m } = model();
    const id = m.listOpen()[0]!.id;
    const resolved = m.resolve(id);
    expect(resolved.status).toBe('resolved');
    expect(resolved.closed_at).toBe(resolved.updated_at);
    expect(m.listResolved().map((t) => t.id)).toContain(id);
    expect(m.listOpen().map((t) => t.id)).not.toContain(id);
    const reopened = m.reopen(id);
    expect(reopened).toMatchObject({ status: 'open', closed_at: null });
    expect(m.listOpen().map((t) => t.id)).toContain(id);
    expect(m.setStatus(id, 'closed').closed_at).not.toBeNull();
    expect(() => m.setStatus(id, 'bogus' as never)).toThrow(RangeError);
  });

  it('assign and unassign move a ticket between self and unassigned', () => {
    const { model: m } = model();
    const id = m.newTicket().id;
    expect(m.assign(id, 'self').assigned_to).toEqual(m.self);
    expect(m.listSelf()[0]!.id).toBe(id);
    expect(m.listUnassigned().map((t) => t.id)).not.toContain(id);
    const other = m.assign(id, 'other').assigned_to!;
    expect(other.id).not.toBe(m.self.id);
    expect(m.listSelf().map((t) => t.id)).not.toContain(id);
    expect(m.assign(id, m.agents[2]!.id).assigned_to).toEqual(m.agents[2]);
    expect(m.unassign(id).assigned_to).toBeNull();
    expect(m.listUnassigned()[0]!.id).toBe(id);
    expect(() => m.assign(id, 'nobody')).toThrow(RangeError);
  });

  it('setPriority, markRead', () => {
    const { model: m } = model();
    const id = m.newTicket({ priority: 'low' }).id;
    expect(m.setPriority(id, 'urgent').priority).toBe('urgent');
    expect(() => m.setPriority(id, 'asap' as never)).toThrow(RangeError);
    expect(m.markRead(id).has_unread_messages).toBe(false);
    expect(m.listOpen().find((t) => t.id === id)!.has_unread_messages).toBe(false);
  });

  it('deleteTicket: gone from details, lists and truth; later mutations throw UnknownTicketError', () => {
    const { model: m } = model();
    const id = m.listOpen()[3]!.id;
    m.deleteTicket(id);
    expect(m.detail(id)).toBeUndefined();
    expect(m.listOpen().map((t) => t.id)).not.toContain(id);
    expect(m.groundTruth().map((t) => t.id)).not.toContain(id);
    expect(() => m.resolve(id)).toThrow(UnknownTicketError);
    expect(() => m.deleteTicket(id)).toThrow(UnknownTicketError);
  });

  it('stamps every change strictly later, even many in one millisecond of a paused clock', () => {
    const { model: m } = model();
    const id = m.newTicket().id;
    let previous = micros(m.detail(id)!.updated_at);
    for (let i = 0; i < 200; i++) {
      const t = i % 2 ? m.markRead(id) : m.setPriority(id, 'high');
      expect(micros(t.updated_at)).toBeGreaterThan(previous);
      expect(t.updated_at).not.toMatch(/\.000000Z$/);
      previous = micros(t.updated_at);
    }
    m.agentReply(id);
    m.inboundMessage(id);
    m.resolve(id);
    expectOrderedTimestamps(m.groundTruth().find((t) => t.id === id)!);
  });

  it('serves the same list array until a change that a list shows', () => {
    const { model: m } = model();
    const id = m.listOpen()[0]!.id;
    const before = m.listOpen();
    m.setPriority(id, 'urgent');
    expect(m.listOpen()).toBe(before);
    m.resolve(id);
    expect(m.listOpen()).not.toBe(before);
    expect(m.listOpen()).toHaveLength(before.length - 1);
  });

  it('picks random targets from a group', () => {
    const { model: m } = model();
    const self = new Set(m.listSelf().map((t) => t.id));
    for (let i = 0; i < 20; i++) expect(self.has(m.randomTicketId('self')!)).toBe(true);
    expect(model({ openTickets: 0, resolvedTickets: 1 }).model.randomTicketId('open')).toBeUndefined();
  });
});

describe('attachment links', () => {
  it('expire 10 minutes after the detail response was generated', () => {
    const { clock, model: m } = model();
    const t = m.groundTruth().find((x) => x.attachments.length > 0)!;
    const issuedAt = clock.now() + 123;
    const url = new URL(m.detail(t.id, issuedAt)!.attachments[0]!.url);
    expect(url.origin).toBe('http://storage.invalid');
    expect(url.pathname).toBe(`/files/${t.attachments[0]!.id}/${encodeURIComponent(t.attachments[0]!.name)}`);
    const expires = url.searchParams.get('expires');
    const signature = url.searchParams.get('signature');
    expect(Number(expires)).toBe(Math.floor((issuedAt + 600_000) / 1000));
    expect(signature).toMatch(/^[0-9a-f]{64}$/);
    const id = t.attachments[0]!.id;
    expect(m.signer.check(id, expires, signature, issuedAt + 599_000)).toBe('valid');
    expect(m.signer.check(id, expires, signature, issuedAt + 600_000)).toBe('expired');
    expect(m.signer.check(id, String(Number(expires) + 60), signature, issuedAt)).toBe('invalid');
    const forged = signature!.replace(/^./, (c) => (c === 'a' ? 'b' : 'a'));
    expect(m.signer.check(id, expires, forged, issuedAt)).toBe('invalid');
  });

  it('are fresh on every detail call', () => {
    const { clock, model: m } = model();
    const t = m.groundTruth().find((x) => x.attachments.length > 0)!;
    const first = m.detail(t.id)!.attachments[0]!.url;
    clock.advance(11 * 60_000);
    const second = new URL(m.detail(t.id)!.attachments[0]!.url);
    expect(second.href).not.toBe(first);
    const { searchParams } = second;
    const id = t.attachments[0]!.id;
    const check = m.signer.check(id, searchParams.get('expires'), searchParams.get('signature'), clock.now());
    expect(check).toBe('valid');
  });
});
