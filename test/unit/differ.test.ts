import { describe, expect, it } from 'vitest';
import type { ListItem } from '../../src/model/lists.ts';
import { emptyState, type MirrorTicket } from '../../src/model/ticketState.ts';
import { diffList } from '../../src/sync/differ.ts';

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
