import { describe, expect, it } from 'vitest';
import { mapDetail, MAX_ID_BYTES, parseListItems, Problems, UnstorableError } from '../../src/sync/mapping.ts';

const URL1 = 'https://files.example/files/a1/x.pdf?expires=1&signature=abc';
const detail = () => ({
  id: 't1',
  name: 'Zoë',
  email: 'zoe@example.com',
  status: 'pending',
  priority: 'low',
  has_unread_messages: true,
  replied_to_customer: false,
  closed_at: null,
  last_contact_at: '2024-05-01T10:20:30.123456Z',
  created_at: '2024-05-01T10:20:30.000001Z',
  updated_at: '2024-05-01T10:20:31.999999Z',
  assigned_to: null,
  widget: { id: 'w1', name: 'Chat' },
  ai_summary: null,
  future_field: { kept: true },
  attachments: [{ id: 'a1', name: 'x.pdf', mime_type: 'pdf', size: 10, url: URL1 }],
  messages: [
    {
      id: 'm1',
      message_type: 'inbound',
      ticket_status: 'pending',
      message: `line 1\nline 2 — see ${URL1}`,
      outbound_sent: false,
      outbound_delivered_at: null,
      outbound_bounced: false,
      outbound_spam_complaint: false,
      outbound_error: null,
      created_at: '2024-05-01T10:20:30.000001Z',
      user: null,
      attachments: [{ id: 'a1', name: 'x.pdf', mime_type: 'pdf', size: 10, url: URL1 }],
    },
  ],
});

describe('mapDetail', () => {
  it('maps every field and stores an attachment listed twice once, with its message', () => {
    const d = mapDetail(detail(), 't1');
    expect(d.ticket).toMatchObject({ id: 't1', name: 'Zoë', widgetId: 'w1', widgetName: 'Chat', closedAt: null });
    expect(d.messages).toHaveLength(1);
    expect(d.attachments).toEqual([{ id: 'a1', ticketId: 't1', messageId: 'm1', name: 'x.pdf', mimeType: 'pdf', size: 10 }]);
    expect(d.problems).toEqual([]);
  });

  it(`skips, and reports, a message or an attachment whose id is longer than ${MAX_ID_BYTES} bytes, with the message's attachments`, () => {
    const long = 'é'.repeat(MAX_ID_BYTES / 2) + 'x';
    const body = detail();
    const m1 = body.messages[0]!;
    body.messages.push({ ...m1, id: long, attachments: [{ ...m1.attachments[0]!, id: 'a2' }] });
    m1.attachments.push({ ...m1.attachments[0]!, id: `${long}a` });
    const d = mapDetail(body, 't1');
    expect(d.messages.map((m) => m.id)).toEqual(['m1']);
    expect(d.attachments.map((a) => a.id)).toEqual(['a1']);
    expect(d.problems).toEqual([
      'ticket t1 message m1: an attachment id of 1002 bytes, longer than the 1000 the mirror stores: skipped',
      'ticket t1: messages[1] has an id of 1001 bytes, longer than the 1000 the mirror stores: skipped',
    ]);
  });

  it('keeps unknown fields in raw and no part of any attachment URL', () => {
    const d = mapDetail(detail(), 't1');
    const text = JSON.stringify(d.raw);
    expect(d.raw.future_field).toEqual({ kept: true });
    expect(text).not.toContain('signature');
    expect(text).not.toContain('files.example');
    // A message that quotes its signed link keeps its text, minus the link.
    expect(d.messages[0]!.message).toBe('line 1\nline 2 — see [attachment link removed]');
  });

  it('stores an odd type as given where the column can hold it, and reports it', () => {
    const body = { ...detail(), priority: 3, ai_summary: { text: 'x' } };
    const d = mapDetail(body, 't1');
    expect(d.ticket.priority).toBe('3');
    expect(d.ticket.aiSummary).toBe('{"text":"x"}');
    expect(d.problems).toEqual([expect.stringMatching(/priority is number/), expect.stringMatching(/ai_summary is object/)]);
  });

  it('reports a null where the spec gives a string, and stores null', () => {
    const d = mapDetail({ ...detail(), name: null }, 't1');
    expect(d.ticket.name).toBeNull();
    expect(d.problems).toEqual([expect.stringMatching(/name is null/)]);
  });

  it.each([
    ['a non-timestamp in a timestamp', { created_at: 'yesterday' }],
    ['a non-boolean flag', { has_unread_messages: 'maybe' }],
    ['a detail for another ticket', { id: 't2' }],
    ['messages that are not an array', { messages: 'none' }],
  ])('refuses to store %s', (_, over) => {
    expect(() => mapDetail({ ...detail(), ...over }, 't1')).toThrow(UnstorableError);
  });
});

describe('text PostgreSQL refuses', () => {
  it('becomes U+FFFD in every column and in raw: names, messages, keys, nested objects, attachment names', () => {
    const body = detail();
    Object.assign(body, {
      name: 'Zo\u0000ë \ud83d',
      assigned_to: { id: 'u1', ['na\u0000me']: 'Agent \udc00' },
      widget: { id: 'w\u0000', name: 'Chat \ud83d' },
    });
    body.messages[0]!.message = 'hi\u0000 there \ud83d';
    (body.messages[0] as Record<string, unknown>).user = { id: 'u2', name: 'x\ud83d' };
    body.messages[0]!.attachments[0]!.name = 'f\u0000.pdf';
    const d = mapDetail(body, 't1');
    expect(d.ticket).toMatchObject({
      name: 'Zo\ufffdë \ufffd',
      assignedTo: { id: 'u1', 'na\ufffdme': 'Agent \ufffd' },
      widgetId: 'w\ufffd',
      widgetName: 'Chat \ufffd',
    });
    expect(d.messages[0]).toMatchObject({ message: 'hi\ufffd there \ufffd', author: { id: 'u2', name: 'x\ufffd' } });
    expect(d.attachments[0]!.name).toBe('f\ufffd.pdf');
    expect(d.raw.name).toBe('Zo\ufffdë \ufffd');
    expect(JSON.stringify(d.raw)).not.toMatch(/\\u0000|\\ud[89a-f][0-9a-f]{2}/i);
    expect(d.problems).toEqual([]);
  });

  it('becomes U+FFFD in list items too, on the fast path and off it', () => {
    const base = { email: 'a@x\u0000', status: 'open', has_unread_messages: true };
    const items = parseListItems(
      [
        { id: 'a', name: 'A\ud83d', ...base, created_at: '2026-01-05T12:00:00.000001Z' },
        { id: 'b\u0000', name: 'B\u0000', ...base, has_unread_messages: 'true', created_at: '2026-01-05T12:00:00.000001Z' },
      ],
      'open',
      new Problems(),
    );
    expect(items.map((i) => [i.id, i.name, i.email])).toEqual([
      ['a', 'A\ufffd', 'a@x\ufffd'],
      ['b\ufffd', 'B\ufffd', 'a@x\ufffd'],
    ]);
  });
});

describe('parseListItems', () => {
  it('refuses a list with an item it cannot name', () => {
    expect(() => parseListItems([{ id: 'a' }, { name: 'no id' }], 'open', new Problems())).toThrow(UnstorableError);
  });

  it(`skips, and reports, an item whose id is longer than ${MAX_ID_BYTES} bytes (UTF-8)`, () => {
    const problems = new Problems();
    const fits = 'é'.repeat(MAX_ID_BYTES / 2);
    const items = parseListItems([{ id: fits }, { id: `${fits}x` }, { id: 'b' }], 'open', problems);
    expect(items.map((i) => i.id)).toEqual([fits, 'b']);
    expect(problems.lines.filter((l) => l.startsWith('open[1]: a ticket id of 1001 bytes'))).toHaveLength(1);
  });

  it('keeps membership of an item with an odd field, and marks the field', () => {
    const problems = new Problems();
    const [item] = parseListItems(
      [{ id: 'a', name: 'A', email: 'a@x', status: 'pending', has_unread_messages: false, created_at: 'garbage' }],
      'open',
      problems,
    );
    expect(item).toMatchObject({ id: 'a', unstorable: ['createdAt'] });
    expect(problems.lines).toHaveLength(1);
  });

  it('takes an item in the spec\'s shape as given, and canonicalises anything else as before', () => {
    const problems = new Problems();
    const base = { name: 'A', email: 'a@x', status: 'open', has_unread_messages: true };
    const items = parseListItems(
      [
        { id: 'spec', ...base, created_at: '2024-02-29T23:59:59.999999Z' },
        // The spec's shape, but no such day: no timestamp (Date rolled it over into 2 March, stored without a word).
        { id: 'rolled', ...base, created_at: '2026-02-30T00:00:00.000000Z' },
        { id: 'offset', ...base, created_at: '2026-01-05 14:00:00.5+02' },
        { id: 7, ...base, has_unread_messages: 1, created_at: '2026-01-05T12:00:00.000001Z' },
      ],
      'open',
      problems,
    );
    expect(items.map((i) => [i.id, i.createdAt, i.hasUnreadMessages])).toEqual([
      ['spec', '2024-02-29T23:59:59.999999Z', true],
      ['rolled', null, true],
      ['offset', '2026-01-05T12:00:00.500000Z', true],
      ['7', '2026-01-05T12:00:00.000001Z', true],
    ]);
    expect(items[1]!.unstorable).toEqual(['createdAt']);
    expect(problems.lines).toEqual([
      'open[1] (rolled): created_at = "2026-02-30T00:00:00.000000Z" is not a timestamp',
      'open[2] (offset): created_at = "2026-01-05 14:00:00.5+02" is not in the spec\'s timestamp shape',
      'open[3] (7): has_unread_messages is 1 where the spec gives a boolean',
    ]);
  });
});
