import { performance } from 'node:perf_hooks';
import { queryRows, sql } from '../src/db/connect.ts';
import { localDate, parsePeriod } from '../src/report/period.ts';
import { loadReportData } from '../src/report/reportData.ts';
import { renderReportPage } from '../src/report/reportPage.ts';
import { findPostgres, freshDatabase } from './benchDatabase.ts';
import { quantile } from './stats.ts';
import { fillSupportData } from './supportData.ts';

/**
 * `npm run bench:report`: how long the report page takes on a large mirror. Fills a fresh schema with 100,000 tickets
 * over a year (`--tickets N`, `--days N` to change), with their messages and history (bench/supportData.ts), runs
 * ANALYZE as autovacuum would, then renders the page — the queries of db/repos/report.ts and the HTML, as `/report`
 * and `ticket-mirror report` do — for periods of 7, 28 (the default), 90 and 365 days ending today: one warm-up, then
 * the median of five. PostgreSQL when one answers (see benchDatabase.ts), else — or with `--pglite` — PGlite.
 */

const RUNS = 5;

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const n = Number(process.argv[at + 1]);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} needs a positive whole number`);
  return n;
}

const tickets = flag('tickets', 100_000);
const days = flag('days', 365);
const url = process.argv.includes('--pglite') ? null : await findPostgres();
const database = await freshDatabase(url, 'report');
try {
  const end = Date.now();
  let started = performance.now();
  await fillSupportData(database.db, { tickets, days, end });
  await database.db.execute(sql`analyze`);
  const fillSeconds = (performance.now() - started) / 1000;
  const [counts] = await queryRows<{ tickets: number; messages: number; history: number; open: number }>(
    database.db,
    sql`select (select count(*)::int from tickets) as tickets, (select count(*)::int from messages) as messages,
          (select count(*)::int from ticket_history) as history, (select count(*)::int from tickets where in_open) as open`,
  );
  console.log(
    `${database.kind}: ${counts!.tickets.toLocaleString('en-US')} tickets (${counts!.open.toLocaleString('en-US')} open), ` +
      `${counts!.messages.toLocaleString('en-US')} messages, ${counts!.history.toLocaleString('en-US')} history rows over ${days} days, ` +
      `written in ${fillSeconds.toFixed(1)} s\n`,
  );

  const today = localDate(end, 'UTC');
  console.log('| period | render time (median of 5) | page size |');
  console.log('|---|---:|---:|');
  for (const periodDays of [7, 28, 90, 365]) {
    const from = new Date(Date.parse(today) - (periodDays - 1) * 86_400_000).toISOString().slice(0, 10);
    const period = parsePeriod({ from, to: today }, today);
    const times: number[] = [];
    let size = 0;
    for (let run = 0; run <= RUNS; run++) {
      started = performance.now();
      const html = renderReportPage(await loadReportData(database.db, period, 'UTC', Date.now()), { form: { today } });
      if (run > 0) times.push(performance.now() - started);
      size = Buffer.byteLength(html);
    }
    console.log(`| ${periodDays} days | ${Math.round(quantile(times, 0.5)!)} ms | ${Math.round(size / 1024)} kB |`);
  }
} finally {
  await database.destroy();
}
