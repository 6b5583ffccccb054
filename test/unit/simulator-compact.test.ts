import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { createActivityDriver } from '../../src/simulator/activity.ts';
import { SimulatorModel } from '../../src/simulator/model.ts';
import { formatMicros } from '../../src/simulator/stamps.ts';
import type { TicketGroup } from '../../src/simulator/types.ts';
import { HOUR_MS, isoMicros } from '../../src/time.ts';

/** A compact model (messages of unchanged historic tickets generated again on demand) answers as a full one. */

const START = Date.UTC(2026, 0, 5, 8, 0, 0);
const GROUPS: readonly TicketGroup[] = ['open', 'self', 'unassigned', 'resolved'];

function pair(seed: number, sizes = { openTickets: 25, resolvedTickets: 120 }) {
  const full = { clock: new ManualClock(START) };
  const compact = { clock: new ManualClock(START) };
  return {
    full: { ...full, model: new SimulatorModel({ seed, ...sizes, clock: full.clock }) },
    compact: { ...compact, model: new SimulatorModel({ seed, ...sizes, clock: compact.clock, compactHistory: true }) },
  };
}

function expectSameAnswers(a: SimulatorModel, b: SimulatorModel, now: number): void {
  expect(b.groundTruth()).toEqual(a.groundTruth());
  for (const group of GROUPS) expect(b.list(group)).toEqual(a.list(group));
  for (const { id } of a.groundTruth()) expect(b.detail(id, now)).toEqual(a.detail(id, now));
}

describe('SimulatorModel with compactHistory', () => {
  it.each([1, 2, 3, 42, 1234])('answers exactly as a full model of seed %i', (seed) => {
    const { full, compact } = pair(seed);
    expectSameAnswers(full.model, compact.model, START);
    // Attachments of tickets whose messages are not kept are still there for the storage origin.
    for (const t of full.model.groundTruth()) {
      for (const a of t.attachments) expect(compact.model.attachment(a.id)).toEqual(full.model.attachment(a.id));
    }
  });

  it('stays identical through a week of activity and every kind of change', () => {
    const { full, compact } = pair(9);
    const drivers = [createActivityDriver(full.model, { seed: 9 }), createActivityDriver(compact.model, { seed: 9 })];
    for (let hour = 0; hour < 7 * 24; hour++) {
      const from = full.clock.now();
      full.clock.advance(HOUR_MS);
      compact.clock.advance(HOUR_MS);
      expect(drivers[1]!.step(from, compact.clock.now())).toEqual(drivers[0]!.step(from, full.clock.now()));
    }
    // Each change to a historic resolved ticket nobody touched yet, in both.
    const untouched = full.model.listResolved().slice(-6).map((t) => t.id);
    const [a, b, c, d, e, f] = untouched as [string, string, string, string, string, string];
    for (const m of [full.model, compact.model]) {
      m.reply(a, 'We are on it.');
      m.inboundMessage(b, { attachments: 1 });
      m.assign(c, 'self');
      m.markRead(d);
      m.setPriority(e, 'urgent');
    }
    expect(compact.model.deleteTicket(f)).toEqual(full.model.deleteTicket(f));
    expectSameAnswers(full.model, compact.model, full.clock.now());
  });

  it('builds, at any later time, the dataset of the instant given as historyEndsAt', () => {
    const early = new SimulatorModel({ seed: 5, clock: new ManualClock(START), compactHistory: true });
    const clock = new ManualClock(START + 3 * HOUR_MS);
    const late = new SimulatorModel({ seed: 5, clock, historyEndsAt: START, compactHistory: true });
    expectSameAnswers(early, late, START);
    const unpinned = new SimulatorModel({ seed: 5, clock, compactHistory: true });
    expect(unpinned.groundTruth()).not.toEqual(early.groundTruth());
  });
});

describe('formatMicros', () => {
  it('writes what isoMicros writes, for instants across years, leap days and second boundaries', () => {
    const instants = [
      0,
      999,
      1_000_000,
      Date.UTC(2024, 1, 29, 23, 59, 59) * 1000 + 999_999,
      Date.UTC(2000, 1, 29, 0, 0, 0) * 1000 + 1,
      Date.UTC(2026, 0, 5, 8, 0, 0) * 1000 + 123_456,
      Date.UTC(2100, 2, 1, 12, 30, 0) * 1000 + 7,
      Date.UTC(9999, 11, 31, 23, 59, 59) * 1000 + 999_999,
    ];
    for (let us = Date.UTC(2025, 11, 31) * 1000; us < Date.UTC(2026, 0, 2) * 1000; us += 3_599_999_937) instants.push(us);
    for (const us of instants) expect(formatMicros(us)).toBe(isoMicros(Math.floor(us / 1000), us % 1000));
  });
});
