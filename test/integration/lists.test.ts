import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { applyListDiff, loadMirrorForList } from '../../src/db/repos/lists.ts';
import { diffList } from '../../src/sync/differ.ts';
import { parseListItems, Problems } from '../../src/sync/mapping.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';

/** The list writer against a real database: what goes in as array parameters comes back byte for byte. */

const AWKWARD = ['say "hi"', 'back\\slash', 'NULL', '', '{a,b}', ' padded ', 'tab\there', 'Zoë 王芳 🚀', ','];
const at = (minute: number) => `2026-01-05T12:${String(minute).padStart(2, '0')}:00.000001Z`;
const listed = (id: string, name: string, extra: Record<string, unknown> = {}) => ({
  id,
  name,
  email: `${id}@example.com`,
  status: 'open',
  has_unread_messages: false,
  created_at: '2026-01-01T00:00:00.100000Z',
  ...extra,
});

describe.each(backends)('list writer on $name', ({ open }) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await open();
  });
  afterAll(() => database.destroy());

  async function poll(body: unknown[], minute: number, initial = false) {
    const items = parseListItems(body, 'open', new Problems());
    return database.db.transaction(async (tx) => {
      const mirror = await loadMirrorForList(tx, 'open', items);
      const diff = diffList('open', items, mirror, at(minute), initial);
      await applyListDiff(tx, diff);
      return { mirror, diff };
    });
  }

  it('stores awkward text exactly, finds it equal to the list in the database, and touches the unchanged', async () => {
    const body = AWKWARD.map((name, i) => listed(`t${i}"\\${i}`, name));
    const first = await poll(body, 0, true);
    expect([...(first.mirror.fresh ?? [])].sort()).toEqual(body.map((b) => b.id).sort());
    const { mirror, diff } = await poll(body, 1);
    // The database compared every item with its row and found each equal: nothing for the differ to look at.
    expect(mirror.tickets.size).toBe(0);
    expect(mirror.fresh?.size).toBe(0);
    expect(diff.writes).toEqual([]);
    expect(diff.unchanged).toHaveLength(AWKWARD.length);
    const stored = await queryRows<{ id: string; name: string; created_at: string }>(
      database.db,
      sql`select id, name, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at from tickets`,
    );
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    expect(stored.sort(byId)).toEqual(body.map((b) => ({ id: b.id, name: b.name, created_at: b.created_at })).sort(byId));
    const rows = await queryRows<{ n: number }>(
      database.db,
      sql`select count(*)::int as n from tickets where last_seen_at = ${at(1)}::timestamptz and state_seen_at = ${at(1)}::timestamptz`,
    );
    expect(rows[0]!.n).toBe(AWKWARD.length);
  });

  it('hands the differ exactly the listed tickets that changed and those that left', async () => {
    const body = AWKWARD.map((name, i) => listed(`t${i}"\\${i}`, name));
    const changed = body.map((b, i) => (i === 3 ? { ...b, name: `${b.name}!` } : i === 5 ? { ...b, has_unread_messages: true } : b));
    changed.splice(7, 1);
    changed.push(listed('new', 'New'));
    const items = parseListItems(changed, 'open', new Problems());
    const mirror = await database.db.transaction((tx) => loadMirrorForList(tx, 'open', items));
    expect([...mirror.tickets.keys()].sort()).toEqual([body[3]!.id, body[5]!.id, body[7]!.id].sort());
    expect([...(mirror.fresh ?? [])]).toEqual(['new']);
  });

  it('writes changes, leavers and the poll row', async () => {
    const body = AWKWARD.map((name, i) => listed(`t${i}"\\${i}`, name));
    body[0] = { ...body[0]!, name: null as unknown as string, created_at: 'garbage' };
    body.pop();
    const { diff } = await poll(body, 2);
    // t0's null name and garbage created_at are no news of either: it keeps both, and is no change.
    expect(diff.writes.map((w) => [w.id, w.seen])).toEqual([['t8"\\8', false]]);
    const [t0] = await queryRows<{ name: string | null; created_at: string; in_open: boolean }>(
      database.db,
      sql`select name, created_at, in_open from tickets where id = ${'t0"\\0'}`,
    );
    expect(t0).toMatchObject({ name: AWKWARD[0], in_open: true });
    expect(t0!.created_at).toMatch(/^2026-01-01 00:00:00\.1\+00/);
    const polls = await queryRows<{ items: number; changes: number }>(database.db, sql`select items, changes from list_polls order by id`);
    expect(polls.at(-1)).toEqual({ items: AWKWARD.length - 1, changes: 1 });
  });

  it('leaves room on each page of tickets for a poll\'s updates (fillfactor)', async () => {
    const [row] = await queryRows<{ options: string[] | null }>(
      database.db,
      sql`select reloptions as options from pg_class where oid = 'tickets'::regclass`,
    );
    expect(row!.options).toContain('fillfactor=50');
  });
});
