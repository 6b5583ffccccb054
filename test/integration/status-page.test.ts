import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { startService, type Service } from '../../src/daemon/service.ts';
import { createLogger } from '../../src/logger.ts';
import { createActivityDriver, startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { freshPglite, type TestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/runProcess.ts';

/**
 * The status page as a person sees it: real headless Chromium (Debian's `chromium` package, driven by
 * playwright-core) opens /status of a mirror with 14 hours of history. The screenshot goes to a temporary file,
 * or to STATUS_PAGE_SCREENSHOT when set (`STATUS_PAGE_SCREENSHOT=docs/status-page.png npx vitest run
 * test/integration/status-page.test.ts` refreshes the one in the docs).
 */

const CHROMIUM = '/usr/bin/chromium';
/** Evaluated in the page (a string: the project's TypeScript has no DOM types). */
const NO_SIDEWAYS_SCROLL = 'document.documentElement.scrollWidth <= window.innerWidth';
const HOUR = 3_600_000;
/** Virtual time between two passes while the history is made: coarser than the daemon's 15 s, to keep the test quick. */
const STEP = 2 * 60_000;
const chromiumMissing = existsSync(CHROMIUM)
  ? null
  : `SKIPPED: no ${CHROMIUM}, so the status page is not checked in a browser (apt-get install chromium)`;
if (chromiumMissing) console.warn(`[ticket-mirror tests] ${chromiumMissing}`);

describe('the status page in a browser', () => {
  let sim: RunningSimulator | undefined;
  let database: TestDatabase | undefined;
  let service: Service | undefined;
  let browser: Browser | undefined;
  let scratch: string | undefined;

  afterEach(async () => {
    await browser?.close();
    await service?.stop();
    await sim?.close();
    await database?.destroy();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /** 14 hours of a helpdesk's life mirrored in virtual time, ending now, with a few failures on the way. */
  async function mirrorWithHistory(): Promise<{ sim: RunningSimulator; database: TestDatabase }> {
    const end = Date.now();
    const clock = new ManualClock(end - 14 * HOUR);
    const s = await startSimulator({ seed: 71, openTickets: 40, resolvedTickets: 160, clock });
    const db = await freshPglite();
    const engine = new SyncEngine({
      db: db.db,
      apiUrl: s.url,
      apiToken: s.token,
      clock,
      limits: { daily: 1440, minute: 60, reserve: 0.1 },
      logger: createLogger('silent'),
      realTime: false,
      sleep: async (ms) => void clock.advance(ms),
    });
    const activity = createActivityDriver(s.model, { seed: 71 });
    while (clock.now() < end) {
      const from = clock.now();
      if (end - from <= 9 * HOUR && end - from > 9 * HOUR - STEP) {
        // The open list is polled every few minutes: a garbled answer, then a 503 that outlives the retries.
        s.faults.inject({ match: /^\/api\/v1\/tickets$/, kind: 'truncated', times: 1 });
        s.faults.inject({ match: /^\/api\/v1\/tickets$/, kind: 'status503', times: 3 });
      }
      await engine.pass();
      clock.advance(Math.min(STEP, end - from));
      activity.step(from, clock.now());
    }
    // From here on the daemon runs on the system clock; the simulator's quota windows follow it.
    clock.set(Date.now());
    return { sim: s, database: db };
  }

  it('renders the quota chart, counts, backfill and errors, with nothing from outside', async (ctx) => {
    if (chromiumMissing) ctx.skip(chromiumMissing);
    ({ sim, database } = await mirrorWithHistory());
    const config = loadConfig(
      { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, HTTP_PORT: String(await freePort()), PGLITE_PORT: '0' },
      { dotenv: false },
    );
    service = await startService({ config, database, logger: createLogger('silent'), clock: systemClock });
    await once(service.replica.events, 'pass:finished');

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

    const url = `${service.http!.url}/status`;
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);
    expect(await page.title()).toBe('ticket-mirror status');
    // Self-contained: the page loads nothing else, and the strict CSP blocked nothing (it would log an error).
    expect(requested).toEqual([url]);
    expect(problems).toEqual([]);

    await expect.poll(() => page.locator('h2').allTextContents()).toEqual([
      'Request budget',
      'Backfill',
      'Freshness',
      'Quota used, last 24 hours',
      'Tickets',
      'Recent errors',
    ]);
    expect(await page.locator('.badge').textContent()).toBe('leader');
    const chart = page.locator('svg.chart');
    expect(await chart.isVisible()).toBe(true);
    expect((await chart.boundingBox())!.width).toBeGreaterThan(900);
    expect(await chart.locator('g').count()).toBe(24);
    expect(await chart.locator('rect.bar').count()).toBeGreaterThanOrEqual(14);
    expect(await chart.locator('rect.bar-failed').count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator('table.errors tbody tr').count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator('table.errors').textContent()).toMatch(/answered HTTP 503/);
    expect(await page.evaluate(NO_SIDEWAYS_SCROLL)).toBe(true);

    scratch = mkdtempSync(join(tmpdir(), 'tm-status-page-'));
    const target = process.env.STATUS_PAGE_SCREENSHOT ?? join(scratch, 'status-page.png');
    await page.screenshot({ path: target, fullPage: true });
    expect(statSync(target).size).toBeGreaterThan(20_000);

    // A phone's width: the cards stack, nothing overflows sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(NO_SIDEWAYS_SCROLL)).toBe(true);
  }, 180_000);
});
