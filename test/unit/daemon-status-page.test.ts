import { describe, expect, it } from 'vitest';
import { renderQuotaChart } from '../../src/daemon/quotaChart.ts';
import type { HourBar, StatusPageData } from '../../src/daemon/statusData.ts';
import { renderStatusPage } from '../../src/daemon/statusPage.ts';
import { duration, niceCeiling } from '../../src/pageFormat.ts';
import { budgetAt } from '../../src/sync/budget.ts';
import { emptyHistory } from '../../src/model/plannerHistory.ts';
import { planPass } from '../../src/sync/planner.ts';

const NOW = Date.UTC(2026, 0, 5, 14, 20, 0);
const HOUR = 3_600_000;

function hours(perHour: (i: number) => [number, number]): HourBar[] {
  const current = Math.floor(NOW / HOUR) * HOUR;
  return Array.from({ length: 24 }, (_, i) => {
    const [requests, failed] = perHour(i);
    return { start: current - (23 - i) * HOUR, requests, failed };
  });
}

function data(overrides: Partial<StatusPageData> = {}): StatusPageData {
  const budget = budgetAt({ daily: 1440, minute: 60, reserve: 0.1 }, [], NOW);
  const never = { lastPolledAt: null };
  const plan = planPass({
    now: NOW,
    budget,
    lists: { open: never, self: never, unassigned: never, resolved: never },
    dueCount: 0,
    backfillCount: 10,
    history: emptyHistory(),
  });
  return {
    status: {
      now: new Date(NOW).toISOString(),
      budget,
      plan,
      lastSync: { startedAt: '2026-01-05T14:19:00.000000Z', finishedAt: '2026-01-05T14:19:01.000000Z', requests: 4, detailsFetched: 0, error: null },
      lastPolls: { open: '2026-01-05T14:19:00.000000Z', self: null, unassigned: null, resolved: null },
      counts: { tickets: 12, open: 5, self: 1, unassigned: 2, resolved: 7, missing: 0, deleted: 0, messages: 40, attachments: 3, outboxPending: 0, outboxFailed: 0 },
      backfill: { fetched: 2, total: 12, remaining: 10, etaHours: 1.5 },
      freshness: { detailsDue: 0, oldestDueSince: null, oldestOpenDetail: null, medianOpenDetailAgeMinutes: null },
    },
    health: { role: 'leader', state: 'ok', reason: null, lastPass: null },
    readiness: { ready: true, reason: 'leader: syncing' },
    hours: hours((i) => [i * 3, i > 0 && i % 5 === 0 ? 1 : 0]),
    errors: [],
    ...overrides,
  };
}

describe('the status page', () => {
  it('is one document with nothing to fetch: no script, no external link, no src', () => {
    const html = renderStatusPage(data());
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script|<link|\ssrc=|https?:\/\//);
    expect(html).toContain('<svg class="chart"');
    expect(html).toContain('<meta http-equiv="refresh" content="30">');
  });

  it('escapes what comes from outside: error texts from the API', () => {
    const html = renderStatusPage(data({ errors: [{ at: '2026-01-05T14:00:00.000000Z', error: '<img src=x onerror=alert(1)> & "quotes"' }] }));
    expect(html).toContain('&#60;img src=x onerror=alert(1)&#62; &#38; &#34;quotes&#34;');
    expect(html).not.toContain('<img');
    expect(html).toContain('20 min ago');
  });

  it('shows the numbers a person looks for', () => {
    const html = renderStatusPage(data());
    expect(html).toContain('0 <small>of 1,296 used in the last 24 h</small>');
    expect(html).toContain('16 % <small>2 of 12 details fetched</small>');
    expect(html).toContain('<dt>Time to finish</dt><dd>about 1.5 h</dd>');
    expect(html).toContain('<td>open</td><td>5</td>');
    expect(html).toContain('No sync pass recorded an error.');
  });
});

describe('the quota chart', () => {
  it('draws one bar group per hour, failures stacked in red, and the even pace', () => {
    const svg = renderQuotaChart(hours((i) => [i * 3, i > 0 && i % 5 === 0 ? 1 : 0]), 54);
    expect(svg.match(/<g>/g)).toHaveLength(24);
    // Hours 5, 10, 15 and 20 have one failure each.
    expect(svg.match(/class="bar-failed"/g)).toHaveLength(4);
    expect(svg).toContain('even pace: 54 / h');
    expect(svg).toContain('<title>13:00–14:00 UTC: 66 requests</title>');
    expect(svg).not.toContain('no requests in the last 24 h');
  });

  it('says so when there were no requests', () => {
    expect(renderQuotaChart(hours(() => [0, 0]), 54)).toContain('no requests in the last 24 h');
  });

  it.each([
    [7, 8],
    [10, 10],
    [11, 15],
    [21, 25],
    [26, 30],
    [121, 150],
    [740, 800],
    [810, 1000],
  ])('rounds the axis up: %d → %d', (value, nice) => {
    expect(niceCeiling(value)).toBe(nice);
  });
});

describe('duration', () => {
  it.each([
    [20_000, '20 s'],
    [5 * 60_000, '5 min'],
    [3 * HOUR, '3 h'],
    [3.25 * HOUR, '3.3 h'],
    [72 * HOUR, '3 days'],
  ])('%d ms → %s', (ms, text) => {
    expect(duration(ms)).toBe(text);
  });
});
