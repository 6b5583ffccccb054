import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../src/db/connect.ts';
import type { PassSummary } from '../../src/sync/events.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, mirrorAsTruth, truthOf, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * Probes between sweeps (sync/planner.ts `probeMinutes`): the open and unassigned lists alone, and the other two in
 * the same pass when they show a change. Real HTTP to the simulator, a real database, virtual time.
 */

const MIN = 60_000;
const SWEEP = ['open', 'unassigned', 'self', 'resolved'];

describe.each(backends)('probes between sweeps, on $name', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const synced = async () =>
    (await count(m.db, sql`select count(*)::int as n from tickets`)) > 0 &&
    (await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null and deleted_at is null`)) === 0;
  /** Passes until one that polls, or `maxMs` of virtual time. */
  const nextPolling = async (maxMs: number): Promise<PassSummary | undefined> => {
    const end = m.clock.now() + maxMs;
    while (m.clock.now() < end) {
      const [summary] = await m.runUntil(() => false, 1);
      if (summary!.polls.length > 0) return summary;
    }
    return undefined;
  };

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
    await m.runUntil(synced);
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('a quiet probe polls two lists; one that finds a change polls the rest in the same pass, and its detail follows at once', async () => {
    const plan = await m.engine.plan();
    expect(plan.probeMinutes).not.toBeNull();
    expect(plan.probeMinutes!).toBeLessThan(plan.sweepMinutes);

    // Nothing changed: the lists are read more often than a sweep would, two at a time.
    let quiet: PassSummary | undefined;
    for (let i = 0; i < 10 && !quiet; i++) {
      const summary = await nextPolling(60 * MIN);
      if (summary && summary.polls.length === 2) quiet = summary;
    }
    expect(quiet?.polls).toEqual(['open', 'unassigned']);
    expect(quiet?.detailsFetched).toBe(0);

    // A new ticket shows in both: the next probe finds it, follows up with the other two, and fetches its detail.
    const ticket = m.sim.model.newTicket();
    const found = await nextPolling(60 * MIN);
    expect(found?.polls).toEqual(SWEEP);
    expect(found!.startedAt - quiet!.startedAt).toBeLessThan(plan.sweepMinutes * 3 * MIN);
    // Its detail in that pass, or the one right after (a pass plans its details before its polls find any).
    if (found!.detailsFetched === 0) expect((await m.runUntil(() => false, 1))[0]!.detailsFetched).toBeGreaterThan(0);
    expect(await count(m.db, sql`select count(*)::int as n from tickets where id = ${ticket.id} and detail_synced_at is not null`)).toBe(1);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });

  it('a full sweep still comes within three sweep intervals when no probe finds anything', async () => {
    const summaries = await m.runFor(3 * 60 * MIN);
    const polling = summaries.filter((s) => s.polls.length > 0);
    const sweeps = polling.filter((s) => s.polls.length === 4);
    const probes = polling.filter((s) => s.polls.length === 2);
    expect(probes.length).toBeGreaterThan(sweeps.length);
    const { sweepMinutes } = await m.engine.plan();
    for (let i = 1; i < sweeps.length; i++) expect(sweeps[i]!.startedAt - sweeps[i - 1]!.startedAt).toBeLessThanOrEqual(3 * sweepMinutes * MIN + 30_000);
    expect(sweeps.length).toBeGreaterThanOrEqual(2);
  });
});
