import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { Account } from '../../src/db/repos/accounts.ts';
import { intList } from '../../src/db/repos/fleetStatus.ts';
import { accountStatus, totalsOf, worstFirst, type AccountStatus, type FleetStatus } from '../../src/fleet/fleetStatus.ts';
import { safeText } from '../../src/logger.ts';
import { formatFleetStatus } from '../../src/fleet/formatFleetStatus.ts';
import { errorKind, FleetMetrics, labelledAccounts } from '../../src/fleet/metrics.ts';
import { renderFleetPage } from '../../src/fleet/statusPage.ts';
import type { FleetWorkerEventMap } from '../../src/fleet/workerEvents.ts';
import { MINUTE_MS } from '../../src/time.ts';

/** The fleet's status, pure: what each account shows, the order, the totals, the metrics' folding, the text. */

const NOW = Date.parse('2026-01-05T12:00:00.000Z');
const iso = (minutesAgo: number) => new Date(NOW - minutesAgo * MINUTE_MS).toISOString();

function account(name: string, o: Partial<Account> = {}): Account {
  return {
    name,
    schemaName: `tm_${name}`,
    apiUrl: 'https://x.example',
    tokenSealed: Buffer.alloc(40),
    dailyLimit: 1440,
    minuteLimit: 60,
    reserve: 0.1,
    pausedAt: null,
    createdAt: iso(600),
    state: 'ok',
    failures: 0,
    notBefore: null,
    lastPassAt: iso(1),
    lastPassRequests: 3,
    lastError: null,
    nextPassAt: iso(-1),
    worker: 'w1',
    ...o,
  };
}

const figures = (cleanMinutesAgo: number | null) => ({ samples: [], live: 10, fetched: 4, lastCleanPassAt: cleanMinutesAgo === null ? null : iso(cleanMinutesAgo) });

describe('accountStatus', () => {
  it('a paused account shows paused, whatever the worker recorded, and is never overdue', () => {
    const a = accountStatus(account('p', { pausedAt: iso(5), state: 'failing', nextPassAt: iso(30) }), figures(40), null, NOW);
    expect([a.state, a.overdueSeconds, a.lagSeconds]).toEqual(['paused', 0, 40 * 60]);
  });

  it('lag runs from the last clean pass, else from when the account was added', () => {
    expect(accountStatus(account('a'), figures(7), null, NOW).lagSeconds).toBe(7 * 60);
    expect(accountStatus(account('a'), figures(null), null, NOW).lagSeconds).toBe(600 * 60);
    expect(accountStatus(account('a'), undefined, null, NOW).lagSeconds).toBe(600 * 60);
  });

  it('overdue: past its next pass and not running', () => {
    expect(accountStatus(account('a', { nextPassAt: iso(2) }), figures(1), null, NOW).overdueSeconds).toBe(120);
    expect(accountStatus(account('a', { nextPassAt: iso(2) }), figures(1), iso(0.5), NOW).overdueSeconds).toBe(0);
    expect(accountStatus(account('a', { nextPassAt: iso(-2) }), figures(1), null, NOW).overdueSeconds).toBe(0);
  });

  it('not migrated: no budget and no backfill, rather than zeros', () => {
    const a = accountStatus(account('n', { state: 'new', lastPassAt: null, nextPassAt: null }), undefined, null, NOW);
    expect([a.budget, a.backfill, a.lastPass]).toEqual([null, null, null]);
  });

  it('the budget is sync/budget.ts on the ledger and the account\'s own limits', () => {
    const samples = Array.from({ length: 30 }, (_, i) => ({ at: NOW - (i + 1) * 1_000, remaining: null, limit: null, status: 200 }));
    const a = accountStatus(account('b', { dailyLimit: 100, minuteLimit: 20, reserve: 0.2 }), { ...figures(1), samples }, null, NOW);
    expect(a.budget).toEqual({ dailyAllowed: 80, dailyUsed: 30, dailyLeft: 50, minuteAllowed: 16, minuteUsed: 30 });
  });
});

describe('intList', () => {
  it.each([
    ['{}', []],
    ['{7}', [7]],
    ['{1,-2,NULL,86399999}', [1, -2, null, 86_399_999]],
  ])('%s', (literal, list) => expect(intList(literal)).toEqual(list));
});

describe('safeText', () => {
  it.each([
    ['Bearer abc.def-123 rejected', 'Bearer [redacted] rejected'],
    ['GET https://h.example/x?token=s3cret&sig=1 failed', 'GET https://h.example/x?[redacted] failed'],
    ['a\u001b[2Jb\r\n\tc', 'a[2Jb c'],
    ['x'.repeat(400), `${'x'.repeat(299)}…`],
  ])('%j → %j', (input, output) => expect(safeText(input)).toBe(output));
});

describe('worst first', () => {
  const row = (name: string, state: AccountStatus['state'], lagSeconds: number) => ({ name, state, lagSeconds }) as AccountStatus;
  it('auth_failed, failing, then by lag (new and ok alike), paused last; ties by name', () => {
    const rows = [
      row('p', 'paused', 99_999),
      row('ok_small', 'ok', 10),
      row('new_big', 'new', 500),
      row('f', 'failing', 1),
      row('ok_big', 'ok', 900),
      row('a2', 'auth_failed', 1),
      row('a1', 'auth_failed', 1),
    ].sort(worstFirst);
    expect(rows.map((r) => r.name)).toEqual(['a1', 'a2', 'f', 'ok_big', 'new_big', 'ok_small', 'p']);
  });
});

function fleet(accounts: AccountStatus[]): FleetStatus {
  return {
    now: new Date(NOW).toISOString(),
    schema: 'ticket_mirror_fleet',
    accounts,
    totals: totalsOf(accounts),
    jobs: { schema: 'ticket_mirror_fleet_jobs', queues: [{ name: 'account-pass', policy: 'stately', queued: 3, retry: 0, active: 1, due: 0, oldestDueWaitSeconds: null }] },
  };
}

const statuses = (n: number, minutesApart = 1) =>
  Array.from({ length: n }, (_, i) => accountStatus(account(`a${i}`, { createdAt: iso(1_000 - i * minutesApart) }), figures(1), null, NOW));

describe('FleetMetrics, bounded', () => {
  const passReport = (a: string) => ({ account: a, summary: { stoppedBy: null }, outcome: { state: 'ok' } }) as never;

  it('labels the oldest accounts only; a new account never takes a label away', () => {
    expect([...labelledAccounts(fleet(statuses(5)), 3)]).toEqual(['a0', 'a1', 'a2']);
    const younger = accountStatus(account('aa_young', { createdAt: iso(1) }), figures(1), null, NOW);
    expect([...labelledAccounts(fleet([...statuses(5), younger]), 3)]).toEqual(['a0', 'a1', 'a2']);
  });

  it('sums the others under _other, keeps counts of removed accounts there, and never exceeds the series bound', async () => {
    const metrics = new FleetMetrics({ accountsLimit: 10, processMetrics: false });
    const events = new EventEmitter<FleetWorkerEventMap>();
    metrics.observe(events);
    for (let i = 0; i < 50; i++) events.emit('pass:finished', passReport(`a${i}`));
    metrics.update(fleet(statuses(50)));
    let text = await metrics.text();
    const accountSeries = (t: string) => t.split('\n').filter((l) => /^ticket_mirror_fleet_account_\w+\{account=/.test(l));
    expect(new Set(accountSeries(text).map((l) => /account="([^"]+)"/.exec(l)![1])).size).toBe(11);
    expect(accountSeries(text).length).toBeLessThanOrEqual(9 * 11);
    expect(text).toContain('ticket_mirror_fleet_account_passes_total{account="_other"} 40');

    // a45 goes: its pass stays counted under _other, which never goes down.
    metrics.update(fleet(statuses(50).filter((a) => a.name !== 'a45')));
    text = await metrics.text();
    expect(text).toContain('ticket_mirror_fleet_account_passes_total{account="_other"} 40');
    expect(text).toContain('ticket_mirror_fleet_metrics_folded_accounts 39');
  });

  it('with a limit of 0, only _other and the totals', async () => {
    const metrics = new FleetMetrics({ accountsLimit: 0, processMetrics: false });
    metrics.update(fleet(statuses(3)));
    const labels = new Set([...(await metrics.text()).matchAll(/account="([^"]+)"/g)].map((m) => m[1]));
    expect(labels).toEqual(new Set(['_other']));
  });

  it.each([
    [{ summary: { stoppedBy: null }, outcome: { state: 'ok' } }, null],
    [{ summary: { stoppedBy: 'rate_limited' }, outcome: { state: 'ok' } }, 'rate_limited'],
    [{ summary: { stoppedBy: 'server_error' }, outcome: { state: 'failing' } }, 'server_error'],
    [{ summary: null, outcome: { state: 'auth_failed' } }, 'auth_failed'],
    [{ summary: { stoppedBy: null }, outcome: { state: 'auth_failed' } }, 'auth_failed'],
    [{ summary: null, outcome: { state: 'failing' } }, 'failed'],
  ])('errorKind(%j) = %s', (report, kind) => expect(errorKind(report as never)).toBe(kind));
});

describe('text and page', () => {
  it('an empty fleet says how to add an account; an unreadable pg-boss says why', () => {
    const s = { ...fleet([]), jobs: { schema: 'x_jobs', queues: null, problem: 'pg-boss is not installed yet: no worker has started' } };
    const text = formatFleetStatus(s);
    expect(text).toContain('jobs      pg-boss is not installed yet: no worker has started');
    expect(text).toContain('no accounts: `ticket-mirror accounts add NAME ...` adds one');
  });

  it('the page lists at most 500 accounts and counts the rest', () => {
    const html = renderFleetPage({ status: fleet(statuses(503, 0.01)), worker: { id: 'w<1>', concurrency: 4, running: [] } });
    expect(html.match(/<tr><td>a\d+<\/td>/g)).toHaveLength(500);
    expect(html).toContain('3 more accounts, in better shape');
    expect(html).toContain('served by worker w&#60;1&#62;');
  });
});
