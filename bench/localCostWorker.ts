import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scanListBody } from '../src/api/listBody.ts';
import { writeDetail } from '../src/db/repos/details.ts';
import { writeListPoll } from '../src/sync/listPoll.ts';
import { mapDetail, Problems } from '../src/sync/mapping.ts';
import { isoMicros } from '../src/time.ts';
import { freshPglite, freshPostgres, type BenchDatabase } from './benchDatabase.ts';
import { changedItems, detailBody, encode, listItems } from './payloads.ts';

/**
 * One local-cost measurement in a process of its own, so that its peak RSS is its own (`prepare` writes the bodies
 * first, in another process; `measure` reads them one at a time): see `usage()`.
 *
 * - `list`: a list response of `size` items, processed as the engine processes a poll from the body's bytes on (as the
 *   API client hands them over) — the scan of the array, then a batch at a time JSON.parse, item checks, the mirror's
 *   view of the batch, the diff, the write; then the leaves (sync/listPoll.ts; one transaction). First into an empty mirror (every item new), then
 *   `runs` times against the mirror it left, 1 % of the items changed each time (the common case).
 * - `detail`: one ticket detail with `size` messages — JSON.parse, mapping, the write (one transaction). First as a new
 *   ticket, then `runs` times again with one more message each time.
 *
 * The floor is JSON.parse alone on the same body (timed by `prepare`): no client can do less.
 */

export interface CostResult {
  backend: 'pg' | 'pglite';
  kind: 'list' | 'detail';
  size: number;
  bodyBytes: number;
  /** Milliseconds. */
  parseMedian: number;
  firstMs: number;
  steadyMedian: number;
  steadyRuns: number[];
  /** The process's RSS with its database open, before any body was read, and its peak over the measurement. */
  restRssMb: number;
  peakRssMb: number;
}

function usage(): never {
  process.stderr.write(
    'usage: localCostWorker.ts prepare <list|detail> <size> <runs> <dir>\n' +
      '       localCostWorker.ts measure <pg|pglite> <list|detail> <size> <runs> <dir> <out.json> [postgres-url]\n',
  );
  process.exit(2);
}

/**
 * Writes the bodies (`body-<i>.json`, i = 0…runs) and times JSON.parse on them (`parse.json`), in a process of its own:
 * making a body of 100,000 items costs more memory than processing it, and must not count in the measurement.
 */
async function prepare([kind, sizeArg, runsArg, dir]: string[]): Promise<void> {
  const size = Number(sizeArg);
  const runs = Number(runsArg);
  if ((kind !== 'list' && kind !== 'detail') || !dir || !(size > 0) || !(runs > 0)) usage();
  const bodyOf = kind === 'list' ? listBody(size) : (i: number) => encode(detailBody('Tk000001', size + i));
  const parseTimes: number[] = [];
  let bodyBytes = 0;
  for (let i = 0; i <= runs; i++) {
    const body = bodyOf(i);
    bodyBytes ||= Buffer.byteLength(body);
    parseTimes.push(time(() => JSON.parse(body)));
    writeFileSync(join(dir, `body-${i}.json`), body);
  }
  writeFileSync(join(dir, 'parse.json'), JSON.stringify({ parseMedian: median(parseTimes), bodyBytes }));
}

async function measure([backend, kind, sizeArg, runsArg, dir, out, url]: string[]): Promise<void> {
  const size = Number(sizeArg);
  const runs = Number(runsArg);
  if ((backend !== 'pg' && backend !== 'pglite') || (kind !== 'list' && kind !== 'detail') || !dir || !out || !(size > 0) || !(runs > 0)) usage();
  if (backend === 'pg' && !url) throw new Error('a PostgreSQL URL is needed for pg');
  const database: BenchDatabase = backend === 'pg' ? await freshPostgres(url!, 'cost') : await freshPglite();
  try {
    const restRssMb = process.memoryUsage().rss / 1_048_576;
    const times: number[] = [];
    for (let i = 0; i <= runs; i++) {
      // Read one at a time: the peak RSS is that of processing one response, as it arrives.
      const bytes = readFileSync(join(dir, `body-${i}.json`));
      times.push(await timeAsync(() => (kind === 'list' ? processList(database, bytes, i) : processDetail(database, bytes.toString('utf8'), i))));
    }
    const { parseMedian, bodyBytes } = JSON.parse(readFileSync(join(dir, 'parse.json'), 'utf8')) as { parseMedian: number; bodyBytes: number };
    const [firstMs, ...steadyRuns] = times as [number, ...number[]];
    const result: CostResult = {
      backend,
      kind,
      size,
      bodyBytes,
      parseMedian,
      firstMs,
      steadyMedian: median(steadyRuns),
      steadyRuns,
      restRssMb,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
    };
    writeFileSync(out, JSON.stringify(result));
  } finally {
    await database.destroy();
  }
}

const at = (i: number) => isoMicros(Date.UTC(2026, 0, 5, 12) + i * 60_000);

/** Body i of a list: the items as first listed, then with 1 % of them changed (a different 1 % each time). */
function listBody(n: number): (i: number) => string {
  const base = listItems(n);
  return (i) => encode(i === 0 ? base : changedItems(base, 0.01, i));
}

/** What the engine does with one list response (the API client's classifyListAnswer, then SyncEngine's poll). */
async function processList(database: BenchDatabase, bytes: Buffer, i: number): Promise<void> {
  const body = scanListBody(bytes);
  if (!body) throw new Error('the list body is not a JSON array');
  await database.db.transaction((tx) => writeListPoll(tx, 'resolved', body, at(i), new Problems()));
}

/** What the engine does with one detail response (SyncEngine's detail fetch). */
async function processDetail(database: BenchDatabase, body: string, i: number): Promise<void> {
  const mapped = mapDetail(JSON.parse(body) as Record<string, unknown>, 'Tk000001');
  await database.db.transaction((tx) => writeDetail(tx, mapped, at(i), at(i)));
}

function time(f: () => unknown): number {
  const t0 = performance.now();
  f();
  return performance.now() - t0;
}

async function timeAsync(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'prepare') await prepare(args);
else if (mode === 'measure') await measure(args);
else usage();
