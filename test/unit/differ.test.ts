import { describe, expect, it } from 'vitest';
import type { ListItem } from '../../src/model/lists.ts';
import { emptyState, type MirrorTicket } from '../../src/model/ticketState.ts';
import { confirmShrink, diffList, isSuspectShrink } from '../../src/sync/differ.ts';

const AT = '2026-01-05T12:00:00.000001Z';
const item = (id: string, over: Partial<ListItem> = {}): ListItem => ({
  id,
  name: 'Ann',
  email: 'ann@example.com',
  status: 'pending',
  hasUnreadMessages: false,
  createdAt: '2026-01-01T00:00:00.123456Z',
  unstorable: [],
  ...over,
});
const mirrored = (id: string, over: Partial<MirrorTicket> = {}): MirrorTicket => ({
  ...emptyState(),
  id,
  name: 'Ann',
  email: 'ann@example.com',
  status: 'pending',
  hasUnreadMessages: false,
  createdAt: '2026-01-01T00:00:00.123456Z',
  inOpen: true,
  detailDueSince: null,
  missingSince: null,
  deletedAt: null,
  stateSeenAt: '2026-01-05T11:00:00.000000Z',
  ...over,
});
const mirror = (...t: MirrorTicket[]) => ({ tickets: new Map(t.map((x) => [x.id, x])) });

describe('diffList', () => {
  it('leaves unchanged tickets to a light touch', () => {
    const d = diffList('open', [item('a')], mirror(mirrored('a')), AT);
    expect(d).toMatchObject({ writes: [], unchanged: ['a'], changes: 0 });
  });

  it('given what the database set aside, takes a listed ticket it was not handed as unchanged, one in `fresh` as new', () => {
    const d = diffList('open', [item('a'), item('n'), item('c', { name: 'Changed' })], { tickets: new Map([['c', mirrored('c')], ['gone', mirrored('gone')]]), fresh: new Set(['n']) }, AT);
    expect(d.unchanged).toEqual(['a']);
    expect(d.writes.map((w) => [w.id, w.isNew, w.seen])).toEqual([
      ['n', true, true],
      ['c', false, true],
      ['gone', false, false],
    ]);
    expect(d.changes).toBe(3);
  });

  it('writes a new ticket, due, with its first state', () => {
    const d = diffList('open', [item('n')], mirror(), AT);
    expect(d.writes).toEqual([expect.objectContaining({ id: 'n', isNew: true, due: true, flag: true, changedAfter: null })]);
    expect(d.writes[0]!.newState).toMatchObject({ status: 'pending', inOpen: true });
  });

  it('on a list\'s first poll, takes what it shows as backlog, not news', () => {
    const d = diffList('resolved', [item('n'), item('a')], mirror(mirrored('a')), AT, true);
    expect(d.writes.every((w) => !w.due)).toBe(true);
    expect(d.changes).toBe(0);
  });

  it.each([
    ['status', { status: 'open' }, true],
    ['unread flag', { hasUnreadMessages: true }, false],
    ['name', { name: 'Ann B.' }, false],
  ])('a changed %s is a list-visible change (state change: %s)', (_, over, stateChanged) => {
    const d = diffList('open', [item('a', over)], mirror(mirrored('a')), AT);
    expect(d.changes).toBe(1);
    expect(d.writes[0]).toMatchObject({ id: 'a', due: true });
    expect(d.writes[0]!.newState !== null).toBe(stateChanged);
    if (stateChanged) expect(d.writes[0]!.changedAfter).toBe('2026-01-05T11:00:00.000000Z');
  });

  it('a ticket that left the list loses its flag and is due; its fields are kept', () => {
    const d = diffList('open', [], mirror(mirrored('a')), AT);
    expect(d.writes).toEqual([expect.objectContaining({ id: 'a', seen: false, flag: false, due: true, name: 'Ann' })]);
    expect(d.writes[0]!.newState).toMatchObject({ inOpen: false });
  });

  it('a field no column could hold keeps its mirrored value', () => {
    const d = diffList('open', [item('a', { createdAt: null, unstorable: ['createdAt'] })], mirror(mirrored('a')), AT);
    expect(d.unchanged).toEqual(['a']);
  });

  it('a changed field is stored while one no column could hold keeps the mirrored value', () => {
    const d = diffList('open', [item('a', { name: 'Ann B.', createdAt: null, unstorable: ['createdAt'] })], mirror(mirrored('a')), AT);
    expect(d.writes).toEqual([expect.objectContaining({ id: 'a', name: 'Ann B.', createdAt: '2026-01-01T00:00:00.123456Z' })]);
  });

  it('a ticket listed twice does not count as having left', () => {
    const d = diffList('open', [item('a'), item('a')], mirror(mirrored('a'), mirrored('b')), AT);
    expect(d.writes.map((w) => [w.id, w.seen])).toEqual([['b', false]]);
  });

  it('a missing or deleted ticket that reappears is written again', () => {
    const d = diffList('open', [item('a')], mirror(mirrored('a', { missingSince: AT })), AT);
    expect(d.writes).toEqual([expect.objectContaining({ id: 'a', seen: true })]);
  });
});

describe('the shrinking-list rule', () => {
  it.each([
    // members, leaving, suspect
    [500, 500, true], // an empty answer for a list of 500
    [500, 251, true], // more than half
    [500, 250, false], // exactly half
    [20, 11, true],
    [20, 10, false], // half, not more
    [19, 10, true], // more than half, and 10
    [12, 9, false], // more than half, but fewer than 10
    [9, 9, false], // a small list may empty
    [10, 10, true],
    [1000, 400, false],
    [0, 0, false],
  ])('%i members, %i leaving → suspect %s', (members, leaving, suspect) => {
    expect(isSuspectShrink(members, leaving)).toBe(suspect);
  });

  const members = (n: number, prefix = 't') => Array.from({ length: n }, (_, i) => mirrored(`${prefix}${String(i).padStart(3, '0')}`));
  const listed = (tickets: readonly { id: string }[]) => tickets.map((t) => item(t.id));

  it('diffList counts the members the mirror had in the list, set aside by the database or not', () => {
    const all = members(30);
    const fresh = { tickets: new Map(all.slice(20).map((t) => [t.id, t])), fresh: new Set(['n1']) };
    const d = diffList('open', [...listed(all.slice(0, 10)), item('n1')], fresh, AT);
    // 10 set aside as unchanged, 10 leaving; the new ticket was no member.
    expect(d).toMatchObject({ members: 20, withheld: 0 });
    expect(diffList('open', listed(all), mirror(...all), AT).members).toBe(30);
  });

  it.each([
    // what the poll shows, what the last poll withheld, what is written
    ['an empty answer for 30, first seen', 0, 0, { leaves: 0, withheld: 30 }],
    ['an empty answer for 30, seen again: confirmed', 0, 30, { leaves: 30, withheld: 0 }],
    ['the list back to normal after a held shrink', 30, 30, { leaves: 0, withheld: 0 }],
    ['16 of 30 leave, first seen', 14, 0, { leaves: 0, withheld: 16 }],
    ['15 of 30 leave: half is not a shrink to confirm', 15, 0, { leaves: 15, withheld: 0 }],
    ['9 of 12 leave: fewer than 10', 3, 0, { leaves: 9, withheld: 0, total: 12 }],
  ] as const)('%s', (_, stay, previousWithheld, expected) => {
    const total = 'total' in expected ? expected.total : 30;
    const all = members(total);
    const fresh = item('new1');
    const d = confirmShrink(diffList('open', [...listed(all.slice(0, stay)), fresh], mirror(...all), AT), previousWithheld);
    expect(d.writes.filter((w) => !w.seen)).toHaveLength(expected.leaves);
    expect(d.withheld).toBe(expected.withheld);
    // Whatever is held, the rest of the answer is written: the new ticket joins.
    expect(d.writes.filter((w) => w.seen).map((w) => w.id)).toEqual(['new1']);
    expect(d.changes).toBe(1 + expected.leaves);
    // Nothing that is held leaves a history row or a due detail behind.
    expect(d.writes.filter((w) => w.newState !== null && !w.seen)).toHaveLength(expected.leaves);
  });

  it('a list\'s first poll is never held (the mirror has no members of it yet)', () => {
    const d = confirmShrink(diffList('resolved', [], mirror(), AT, true), 0);
    expect(d).toMatchObject({ withheld: 0, members: 0, changes: 0 });
  });
});
