import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { createActivityDriver } from '../../src/simulator/index.ts';
import { DAY_MS } from '../../src/time.ts';
import { freshPostgres, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { TICK_MS, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * A working day in virtual time against a realistic helpdesk: hundreds of open tickets, thousands resolved, the
 * standard activity. The mirror must stay within the quota (no 429, no rolling 24 h window above 1,440), and mirror
 * every list-visible change by the end of a quiet hour.
 */
describe.skipIf(!postgresUrl)('a simulated day', () => {
  let database: TestDatabase;
  let m: VirtualMirror;

  beforeAll(async () => {
    database = await freshPostgres('day');
    m = await virtualMirror(database, { seed: 11, openTickets: 300, resolvedTickets: 2000 });
  }, 120_000);
  afterAll(async () => {
    await m?.close();
    await database?.destroy();
  });

  it('stays within the quota with zero 429s and mirrors every list-visible change', { timeout: 600_000 }, async () => {
    const driver = createActivityDriver(m.sim.model, { seed: 3 });
    const end = m.clock.now() + DAY_MS;
    while (m.clock.now() < end) {
      driver.step(m.clock.now(), m.clock.now() + TICK_MS);
      await m.engine.pass();
      m.clock.advance(TICK_MS);
    }
    await m.runFor(60 * 60_000);

    const log = m.sim.log;
    expect(log.filter((r) => r.status === 429)).toHaveLength(0);
    // The largest rolling-24 h total, over every request the simulator received.
    let largest = 0;
    for (let i = 0, j = 0; i < log.length; i++) {
      while (log[j]!.at <= log[i]!.at - DAY_MS) j++;
      largest = Math.max(largest, i - j + 1);
    }
    expect(largest).toBeLessThanOrEqual(1296);
    expect(log.length).toBeGreaterThan(1000);

    const rows = await queryRows<{ id: string; status: string; has_unread_messages: boolean; in_open: boolean; in_self: boolean; in_unassigned: boolean; in_resolved: boolean; deleted: boolean }>(
      m.db,
      sql`select id, status, has_unread_messages, in_open, in_self, in_unassigned, in_resolved,
            (deleted_at is not null or missing_since is not null) as deleted from tickets`,
    );
    const mirror = new Map(rows.map((r) => [r.id, r]));
    const model = m.sim.model;
    const member = (list: readonly { id: string }[]) => new Set(list.map((t) => t.id));
    const [open, self, unassigned, resolved] = [member(model.listOpen()), member(model.listSelf()), member(model.listUnassigned()), member(model.listResolved())];
    const wrong: string[] = [];
    for (const t of model.groundTruth()) {
      const r = mirror.get(t.id);
      const expected = { status: t.status, has_unread_messages: t.has_unread_messages, in_open: open.has(t.id), in_self: self.has(t.id), in_unassigned: unassigned.has(t.id), in_resolved: resolved.has(t.id), deleted: false };
      if (!r || JSON.stringify({ ...r, id: undefined }) !== JSON.stringify({ id: undefined, ...expected })) wrong.push(t.id);
      mirror.delete(t.id);
    }
    // What is left was deleted in the simulator: the mirror keeps it, marked.
    for (const r of mirror.values()) if (!r.deleted) wrong.push(r.id);
    expect(wrong).toEqual([]);
  });
});
