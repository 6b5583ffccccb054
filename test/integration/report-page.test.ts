import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillSupportData } from '../../bench/supportData.ts';
import { systemClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { startService, type Service } from '../../src/daemon/service.ts';
import { createLogger } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { DAY_MS } from '../../src/time.ts';
import { freshPglite, type TestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/runProcess.ts';

/**
 * `/report` as a person and as an attacker see it: the daemon's HTTP server on an embedded database holding ten weeks
 * of a helpdesk's history (bench/supportData.ts, 3,000 tickets), next to a simulator with no tickets, so that the sync
 * changes nothing while the page is read. Real headless Chromium opens it; the screenshot goes to a temporary file,
 * or to REPORT_SCREENSHOT when set (`REPORT_SCREENSHOT=docs/report.png npx vitest run
 * test/integration/report-page.test.ts` refreshes the one in the README).
 */

const CHROMIUM = '/usr/bin/chromium';
const NO_SIDEWAYS_SCROLL = 'document.documentElement.scrollWidth <= window.innerWidth';
const REPORT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const chromiumMissing = existsSync(CHROMIUM)
  ? null
  : `SKIPPED: no ${CHROMIUM}, so the report page is not checked in a browser (apt-get install chromium)`;
if (chromiumMissing) console.warn(`[ticket-mirror tests] ${chromiumMissing}`);

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('the report page', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  let service: Service;
  let url: string;
  const now = Date.now();
  const today = day(now);

  beforeAll(async () => {
    sim = await startSimulator({ seed: 3, openTickets: 0, resolvedTickets: 0 });
    database = await freshPglite();
    await fillSupportData(database.db, { tickets: 3_000, days: 70, end: now });
    const config = loadConfig(
      { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, HTTP_PORT: String(await freePort()), PGLITE_PORT: '0' },
      { dotenv: false },
    );
    service = await startService({ config, database, logger: createLogger('silent'), clock: systemClock });
    await once(service.replica.events, 'pass:finished');
    url = `${service.http!.url}/report`;
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await sim?.close();
    await database?.destroy();
  });

  it.each([
    ['?from=2026-02-30', 'bad period: from must be a date as YYYY-MM-DD'],
    ['?from=%3Cscript%3Ealert(1)%3C/script%3E', 'bad period: from must be a date as YYYY-MM-DD'],
    ['?to=%ZZ', 'bad period: to must be a date as YYYY-MM-DD'],
    ['?from=2026-01-01&from=2026-01-02', 'bad period: from is given 2 times'],
    ['?from=2026-11-02&to=2026-11-01', 'bad period: from must not be after to'],
    ['?from=2020-01-01&to=2026-01-01', 'bad period: the period may be at most 366 days long; this one has 2193'],
    [`?from=${'1'.repeat(8_000)}`, 'bad period: from must be a date as YYYY-MM-DD'],
  ])('%.60s is a 400 saying why, without echoing the input', async (query, message) => {
    const response = await fetch(`${url}${query}`);
    const body = await response.text();
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(body.startsWith(message)).toBe(true);
    expect(body).not.toMatch(/script|%|111/);
  });

  it('serves the page with a strict policy, for a period without data too, and answers HEAD without a body', async () => {
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(REPORT_POLICY);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const html = await response.text();
    expect(html).toContain(`<title>Support report ${day(now - 27 * DAY_MS)} – ${today}</title>`);
    // Only the written file carries its own policy in a meta tag; the server sends the header.
    expect(html).not.toContain('http-equiv="Content-Security-Policy"');
    const empty = await fetch(`${url}?from=1990-01-01&to=1990-12-31`);
    expect(empty.status).toBe(200);
    const emptyHtml = await empty.text();
    expect(emptyHtml).toContain('no history recorded in this period');
    expect(emptyHtml).toContain('no first response in this period');
    const head = await fetch(url, { method: 'HEAD' });
    expect([head.status, await head.text()]).toEqual([200, '']);
    expect(await (await fetch(`${service.http!.url}/nope`)).text()).toContain('/report');
  });

  it('shows the charts and numbers of the views in Chromium, loads nothing else, and chooses periods', async (ctx) => {
    if (chromiumMissing) ctx.skip(chromiumMissing);
    const from = day(now - 55 * DAY_MS);
    const [truth] = await queryRows<{ created: number; open: number }>(
      database.db,
      sql`select (select count(*)::int from ticket_first_response where created_at >= ${from}::date::timestamptz) as created,
            (select count(*)::int from tickets where in_open and deleted_at is null) as open`,
    );

    let browser: Browser | undefined;
    const scratch = mkdtempSync(join(tmpdir(), 'tm-report-page-'));
    try {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
      });
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const problems: string[] = [];
      const requested: string[] = [];
      page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
      page.on('pageerror', (error) => problems.push(error.message));
      page.on('request', (request) => requested.push(request.url()));

      const first = `${url}?from=${from}&to=${today}`;
      expect((await page.goto(first))?.status()).toBe(200);
      expect(requested).toEqual([first]);
      expect(problems).toEqual([]);
      expect(await page.locator('h2').allTextContents()).toEqual([
        'Open tickets at the end of each day',
        'First response time by week created',
        'Resolution time by week closed',
        'New tickets by hour of the week (UTC)',
        'By widget',
        'Open now by assignee',
        'Customers waiting longest now',
      ]);
      const kpis = await page.locator('.kpi .value').allTextContents();
      expect(kpis).toHaveLength(5);
      expect(kpis[0]).toBe(truth!.created.toLocaleString('en-US'));
      expect(kpis[4]).toBe(truth!.open.toLocaleString('en-US'));

      const charts = page.locator('svg.chart');
      expect(await charts.count()).toBe(4);
      expect((await charts.first().boundingBox())!.width).toBeGreaterThan(900);
      // The backlog: one line and one hover target per day of the period.
      expect(await charts.nth(0).locator('polyline.line').count()).toBe(1);
      expect(await charts.nth(0).locator('g.pt').count()).toBe(56);
      // Weekly percentiles: a median and a 90th-percentile line over the 9 weeks the period touches.
      for (const i of [1, 2]) {
        expect(await charts.nth(i).locator('polyline.line').count()).toBe(2);
        expect(await charts.nth(i).locator('g.pt').count()).toBeGreaterThanOrEqual(8);
      }
      // The heat map: 7 × 24 cells whose counts add up to the tickets created.
      const heat = charts.nth(3);
      expect(await heat.locator('rect').count()).toBe(168);
      const cellCounts = (await heat.locator('text.cell').allTextContents()).map(Number);
      expect(cellCounts.reduce((a, b) => a + b, 0)).toBe(truth!.created);
      expect(await page.locator('table.bars').first().locator('tbody tr').count()).toBe(4);
      expect(await page.locator('table.waiting tbody tr').count()).toBe(12);
      expect(await page.evaluate(NO_SIDEWAYS_SCROLL)).toBe(true);

      const target = process.env.REPORT_SCREENSHOT ?? join(scratch, 'report.png');
      await page.screenshot({ path: target, fullPage: true });
      expect(statSync(target).size).toBeGreaterThan(50_000);

      // The form: GET to the page itself, which the policy's form-action 'self' allows.
      await page.fill('input[name=from]', day(now - 13 * DAY_MS));
      await page.fill('input[name=to]', day(now - 7 * DAY_MS));
      await Promise.all([page.waitForURL(/\?from=/), page.click('button[type=submit]')]);
      expect(new URL(page.url()).search).toBe(`?from=${day(now - 13 * DAY_MS)}&to=${day(now - 7 * DAY_MS)}`);
      expect(await charts.nth(0).locator('g.pt').count()).toBe(7);
      await Promise.all([page.waitForURL(/to=/), page.click('text=last 90 days')]);
      expect(await page.locator('.period strong').textContent()).toMatch(/ – /);
      expect(await page.locator('nav a[aria-current]').textContent()).toBe('last 90 days');
      expect(problems).toEqual([]);

      // A phone's width: the cards stack, the waiting list scrolls inside its card, the page does not.
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate(NO_SIDEWAYS_SCROLL)).toBe(true);
    } finally {
      await browser?.close();
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);
});
