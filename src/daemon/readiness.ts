import type { ReplicaHealth } from './replica.ts';

export interface Readiness {
  ready: boolean;
  /** One line for a person: why not, or what this process is doing. */
  reason: string;
}

/**
 * What `/readyz` answers. Ready means the process does its job: the database answers and, when it leads, its last
 * pass did not fail and the API still takes the token. A standby is ready: waiting is its job.
 *
 * @param databaseProblem why the database did not answer a probe, or null when it did
 */
export function readiness(health: ReplicaHealth, databaseProblem: string | null): Readiness {
  if (databaseProblem !== null) return { ready: false, reason: `database unreachable: ${databaseProblem}` };
  if (health.role === 'stopped') return { ready: false, reason: 'stopping' };
  if (health.role === 'standby') return { ready: true, reason: 'standby: another process holds the sync lock' };
  switch (health.state) {
    case 'ok':
      return { ready: true, reason: 'leader: syncing' };
    case 'auth_failed':
      return { ready: false, reason: `token rejected: ${health.reason ?? 'the API refused it'}` };
    case 'failing':
      return { ready: false, reason: `last sync pass failed: ${health.reason ?? 'unknown error'}` };
    case 'starting':
      return { ready: false, reason: 'leader: the first sync pass has not finished yet' };
    default:
      return { ready: false, reason: health.state };
  }
}
