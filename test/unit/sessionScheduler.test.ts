import { describe, expect, it, vi } from 'vitest';
import { SessionScheduler, type SessionUser } from '../../src/db/sessionScheduler.ts';

describe('SessionScheduler', () => {
  it('runs units in arrival order, but only the holder while the session is held', async () => {
    const holding = new Set<SessionUser>();
    const scheduler = new SessionScheduler({ holds: (user) => holding.has(user) });
    const order: string[] = [];
    const unit = (user: SessionUser, label: string, hold?: boolean) =>
      scheduler.run(user, async (previous) => {
        order.push(`${label}<-${previous ?? 'none'}`);
        if (hold === true) holding.add(user);
        if (hold === false) holding.delete(user);
      });
    const begin = unit(1, 'begin', true);
    const daemon = unit('daemon', 'daemon');
    const other = unit(2, 'other');
    const commit = unit(1, 'commit', false);
    await Promise.all([begin, daemon, other, commit]);
    // 1 holds after `begin`: its `commit` overtakes the daemon and client 2, who then run in their order.
    expect(order).toEqual(['begin<-none', 'commit<-1', 'daemon<-1', 'other<-daemon']);
    expect(scheduler.holder).toBe(null);
  });

  it('cancels the waiting units of a user, and reports a quiet holder that keeps others waiting', async () => {
    let timedOut: SessionUser | null = null;
    const holding = new Set<SessionUser>([1]);
    const scheduler = new SessionScheduler({
      holds: (user) => holding.has(user),
      holdTimeoutMs: 1,
      onHoldTimeout: (holder) => {
        timedOut = holder;
        holding.delete(holder);
        void scheduler.run(holder, async () => {}); // the owner ends it: one last unit, holding nothing
      },
    });
    await scheduler.run(1, async () => 'begin');
    expect(scheduler.holder).toBe(1);
    const stale = scheduler.run(2, async () => 'never');
    scheduler.cancel(2, new Error('gone'));
    await expect(stale).rejects.toThrow('gone');
    expect(await scheduler.run('daemon', async () => 'ran')).toBe('ran');
    expect(timedOut).toBe(1);
  });

  it('reports a holder once it has kept others waiting holdTimeoutMs in all, however often it sends something meanwhile', async () => {
    vi.useFakeTimers();
    try {
      const holding = new Set<SessionUser>([1]);
      const timedOutAfter: number[] = [];
      const start = performance.now();
      const scheduler = new SessionScheduler({
        holds: (user) => holding.has(user),
        holdTimeoutMs: 60_000,
        onHoldTimeout: (holder) => {
          timedOutAfter.push(performance.now() - start);
          holding.delete(holder);
          void scheduler.run(holder, async () => {});
        },
      });
      await scheduler.run(1, async () => 'begin');
      const daemon = scheduler.run('daemon', async () => 'ran');
      // A client with autocommit off that runs a query every 30 s: never idle 60 s at a stretch, never committing.
      for (let i = 0; i < 10 && timedOutAfter.length === 0; i++) {
        await vi.advanceTimersByTimeAsync(30_000);
        if (timedOutAfter.length === 0) await scheduler.run(1, async () => 'select 1');
      }
      expect(timedOutAfter).toEqual([60_000]);
      expect(await daemon).toBe('ran');
    } finally {
      vi.useRealTimers();
    }
  });

  it('a failing unit rejects its caller and frees the session', async () => {
    const scheduler = new SessionScheduler({ holds: () => false });
    await expect(scheduler.run(1, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await scheduler.run(2, async () => 2)).toBe(2);
  });
});
