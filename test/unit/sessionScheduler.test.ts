import { describe, expect, it } from 'vitest';
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

  it('a failing unit rejects its caller and frees the session', async () => {
    const scheduler = new SessionScheduler({ holds: () => false });
    await expect(scheduler.run(1, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await scheduler.run(2, async () => 2)).toBe(2);
  });
});
