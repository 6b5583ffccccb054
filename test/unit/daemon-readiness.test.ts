import { describe, expect, it } from 'vitest';
import { readiness } from '../../src/daemon/readiness.ts';
import type { ReplicaHealth } from '../../src/daemon/replica.ts';

const health = (h: Partial<ReplicaHealth>): ReplicaHealth => ({ role: 'leader', state: 'ok', reason: null, lastPass: null, ...h });

describe('readiness', () => {
  it.each<[string, ReplicaHealth, string | null, boolean, string]>([
    ['a leader whose last pass went well', health({}), null, true, 'leader: syncing'],
    ['a standby', health({ role: 'standby', state: 'standby' }), null, true, 'standby: another process holds the sync lock'],
    ['any role without its database', health({ role: 'standby', state: 'standby' }), 'ECONNREFUSED', false, 'database unreachable: ECONNREFUSED'],
    ['a leader whose token was rejected', health({ state: 'auth_failed', reason: 'HTTP 401' }), null, false, 'token rejected: HTTP 401'],
    ['a leader whose last pass failed', health({ state: 'failing', reason: 'HTTP 503' }), null, false, 'last sync pass failed: HTTP 503'],
    ['a leader before its first pass', health({ state: 'starting' }), null, false, 'leader: the first sync pass has not finished yet'],
    ['a process that is stopping', health({ role: 'stopped', state: 'stopped' }), null, false, 'stopping'],
  ])('%s', (_, h, databaseProblem, ready, reason) => {
    expect(readiness(h, databaseProblem)).toEqual({ ready, reason });
  });
});
