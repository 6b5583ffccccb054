import { describe, expect, it } from 'vitest';
import { AuthError, TransientError } from '../../src/errors.ts';
import { backOffEnd, decideOutcome, type OutcomeInput, type PassResult } from '../../src/fleet/passOutcome.ts';
import { DEFAULT_TIMING, fleetTiming, takeoverBoundMs } from '../../src/fleet/timing.ts';
import { SealError } from '../../src/fleet/tokenSeal.ts';
import type { PassStop, PassSummary } from '../../src/sync/events.ts';

const S = 1_000;
const MIN = 60 * S;
const NOW = Date.UTC(2026, 0, 5, 9, 0, 0);

const summary = (stoppedBy: PassStop | null = null, errors: string[] = []): PassSummary => ({
  startedAt: NOW - 5 * S,
  finishedAt: NOW,
  requests: 4,
  polls: [],
  ticketsChanged: 0,
  detailsFetched: 0,
  deleted: 0,
  missing: 0,
  errors,
  failedLists: [],
  stoppedBy,
});

const decide = (result: PassResult, o: Partial<OutcomeInput> = {}) =>
  decideOutcome({ now: NOW, failures: 0, result, planWakeAt: NOW + 10 * MIN, nextSlotAt: NOW, minGapMs: 1_200, maxWaitMs: 30 * MIN, ...o });

describe('a fleet pass decides its account’s row as the daemon decides its own state', () => {
  it.each<[string, PassResult, number, { state: string; failures: number; notBefore: number | null; nextPassAt: number }]>([
    ['a pass that ran', { kind: 'passed', summary: summary() }, 2, { state: 'ok', failures: 0, notBefore: null, nextPassAt: NOW + 10 * MIN }],
    ['server trouble: 1 min, doubling', { kind: 'passed', summary: summary('server_error', ['503']) }, 2, { state: 'failing', failures: 3, notBefore: NOW + 4 * MIN, nextPassAt: NOW + 10 * MIN }],
    ['a failure: 1 min first', { kind: 'failed', error: new Error('boom') }, 0, { state: 'failing', failures: 1, notBefore: NOW + MIN, nextPassAt: NOW + 10 * MIN }],
    ['a refused token: 15 min first', { kind: 'failed', error: new AuthError('401', 401) }, 0, { state: 'auth_failed', failures: 1, notBefore: NOW + 15 * MIN, nextPassAt: NOW + 15 * MIN }],
    ['a token refused for a reply', { kind: 'passed', summary: summary(), afterPassError: new AuthError('403', 403) }, 1, { state: 'auth_failed', failures: 2, notBefore: NOW + 30 * MIN, nextPassAt: NOW + 30 * MIN }],
    ['a token that does not open', { kind: 'failed', error: new SealError('wrong key', 'wrong_key') }, 0, { state: 'auth_failed', failures: 1, notBefore: NOW + 15 * MIN, nextPassAt: NOW + 15 * MIN }],
    ['the outbox failed otherwise: the pass counts', { kind: 'passed', summary: summary(), afterPassError: new TransientError('reset') }, 3, { state: 'ok', failures: 0, notBefore: null, nextPassAt: NOW + 10 * MIN }],
  ])('%s', (_, result, failures, expected) => {
    expect(decide(result, { failures })).toMatchObject(expected);
  });

  it('a 429 or a spent budget: ok, and no pass before the next free slot', () => {
    const o = decide({ kind: 'passed', summary: summary('rate_limited') }, { failures: 2, nextSlotAt: NOW + 40 * S, planWakeAt: NOW });
    expect(o).toMatchObject({ state: 'ok', failures: 0, notBefore: NOW + 40 * S, nextPassAt: NOW + 40 * S });
  });

  it('the next pass: the plan’s instant, at least a slot after this one, at most maxWaitMs away, after the back-off', () => {
    const ok: PassResult = { kind: 'passed', summary: summary() };
    expect(decide(ok, { planWakeAt: NOW }).nextPassAt).toBe(NOW + 1_200);
    expect(decide(ok, { planWakeAt: NOW + 3 * 60 * MIN }).nextPassAt).toBe(NOW + 30 * MIN);
    expect(decide(ok, { planWakeAt: null }).nextPassAt).toBe(NOW + MIN);
    const auth = decide({ kind: 'failed', error: new AuthError('401', 401) }, { failures: 4, planWakeAt: NOW });
    expect(auth.nextPassAt).toBe(NOW + 120 * MIN);
  });
});

describe('the fleet’s clockwork', () => {
  it('a dead worker’s accounts resume within 60 s with the defaults (issue 14), and a handler fits its expiry', () => {
    expect(takeoverBoundMs(DEFAULT_TIMING)).toBe(54 * S);
    expect(takeoverBoundMs(DEFAULT_TIMING)).toBeLessThanOrEqual(60 * S);
    // slice + delivery + a request in flight (~1 s) + lock, open and plan (~1 s) stay under the expiry.
    expect(DEFAULT_TIMING.sliceMs + DEFAULT_TIMING.deliverySliceMs + 2 * S).toBeLessThan(DEFAULT_TIMING.expireInSeconds * S);
    // A due poll waits for a slot at most a slice, a delivery, a request and a fetch poll: under the bench's 30 s.
    expect(DEFAULT_TIMING.sliceMs + DEFAULT_TIMING.deliverySliceMs + S + DEFAULT_TIMING.pollIntervalMs).toBeLessThan(30 * S);
    // A graceful stop: the grace, then ~2 s to cut off and hand back, within the 10 s.
    expect(DEFAULT_TIMING.stopGraceMs + 2 * S).toBeLessThanOrEqual(10 * S);
  });

  it('shrinks for tests, and refuses what cannot work', () => {
    const t = fleetTiming({ expireInSeconds: 4, maintenanceIntervalSeconds: 1, pollIntervalMs: 500 });
    expect(takeoverBoundMs(t)).toBe(4 * S + 2 * S + 2 * S + 500);
    expect(() => fleetTiming({ pollIntervalMs: 100 })).toThrow(/pollIntervalMs/);
    expect(() => fleetTiming({ expireInSeconds: 0 })).toThrow(/expireInSeconds/);
    expect(() => fleetTiming({ sliceMs: 1.5 })).toThrow(/sliceMs/);
    expect(fleetTiming({ retryLimit: 0, successorGapMs: 0 })).toMatchObject({ retryLimit: 0, successorGapMs: 0 });
  });
});

describe('backOffEnd: an account row’s not_before as it holds now', () => {
  const HOUR = 60 * MIN;
  it.each<[string, number | null, number | null]>([
    ['none', null, null],
    ['passed already', NOW - MIN, null],
    ['right now: over', NOW, null],
    ['a failure’s minute', NOW + MIN, NOW + MIN],
    ['a refused token’s 2 h', NOW + 2 * HOUR, NOW + 2 * HOUR],
    ['a spent rolling window’s next slot, a day away', NOW + 24 * HOUR + 1, NOW + 24 * HOUR + 1],
    ['a year away: stamped by a clock that ran ahead, then was set back', NOW + 365 * 24 * HOUR, null],
    ['a day and two minutes away: no back-off reaches it', NOW + 24 * HOUR + 2 * MIN, null],
  ])('%s', (_, notBefore, expected) => {
    expect(backOffEnd(notBefore, NOW)).toBe(expected);
  });
});
