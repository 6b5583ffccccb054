import { describe, expect, it } from 'vitest';
import { cliOutput } from '../../src/cli/context.ts';
import { BackfillProgress, formatDuration, formatProgress, type BackfillNumbers } from '../../src/cli/progress.ts';
import { TerminalLine } from '../../src/cli/terminalLine.ts';
import { SyncEvents, type PassSummary } from '../../src/sync/events.ts';

const ERASE = '\r\x1b[2K';

function fakeTerminal(columns = 200) {
  const chunks: string[] = [];
  return { chunks, columns, isTTY: true, hasColors: () => false, write: (chunk: string) => void chunks.push(chunk) };
}

const numbers = (n: Partial<BackfillNumbers> = {}): BackfillNumbers => ({
  fetched: 30,
  known: 120,
  remaining: 90,
  requestsLeft: 1302,
  etaMs: 4 * 60_000,
  ...n,
});

function passFinished(requests: number, finishedAt: number): PassSummary {
  return { startedAt: finishedAt, finishedAt, requests, polls: [], ticketsChanged: 0, detailsFetched: 0, deleted: 0, missing: 0, errors: [], failedLists: [], stoppedBy: null };
}

describe('formatProgress', () => {
  it.each<[Partial<BackfillNumbers>, string]>([
    [{}, 'backfill █████░░░░░░░░░░░░░░░ 25% · 30 of 120 tickets fetched · 1,302 requests left today · ETA about 4 min'],
    [{ etaMs: null }, 'backfill █████░░░░░░░░░░░░░░░ 25% · 30 of 120 tickets fetched · 1,302 requests left today · ETA unknown (no budget left for it)'],
    [{ fetched: 120, remaining: 0, etaMs: 0 }, 'mirror: 120 of 120 tickets fetched · 1,302 requests left today · backfill done'],
    [{ fetched: 0, known: 0, remaining: 0 }, 'backfill: waiting for the first list poll · 1,302 requests left today'],
  ])('%o', (n, line) => {
    expect(formatProgress(numbers(n))).toBe(line);
  });

  it.each([
    [20_000, 'under a minute'],
    [4 * 60_000, 'about 4 min'],
    [3.46 * 3_600_000, 'about 3.5 h'],
    [30 * 3_600_000, 'about 30 h'],
    [5 * 86_400_000, 'about 5 days'],
  ])('a duration of %d ms is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe('TerminalLine', () => {
  it('writes log lines above the bottom line, which it erases first and redraws after', () => {
    const out = fakeTerminal();
    const line = new TerminalLine(out);
    line.write('before\n');
    line.show('progress 1');
    line.show('progress 1'); // unchanged: nothing written
    line.write('a log line\n');
    line.show('progress 2');
    line.clear();
    line.clear();
    line.write('after\n');
    expect(out.chunks).toEqual([
      'before\n',
      `${ERASE}progress 1`,
      `${ERASE}a log line\nprogress 1`,
      `${ERASE}progress 2`,
      ERASE,
      'after\n',
    ]);
  });

  it('cuts the line to the terminal width, which it would otherwise wrap and leave behind', () => {
    const out = fakeTerminal(10);
    const line = new TerminalLine(out);
    line.show('0123456789abc');
    expect(line.text).toBe('01234567…');
  });
});

describe('BackfillProgress', () => {
  it('follows the events, re-reads after a pass that sent requests, and stops for good', async () => {
    const out = fakeTerminal();
    const progress = new BackfillProgress(new TerminalLine(out));
    const events = new SyncEvents();
    const reads: BackfillNumbers[] = [numbers(), numbers({ fetched: 33, remaining: 87, requestsLeft: 1290 })];
    let readCount = 0;
    await progress.follow(events, async () => reads[readCount++]!);
    expect(out.chunks.at(-1)).toBe(`${ERASE}${formatProgress(numbers())}`);

    events.emit('request:sent', { at: 0, method: 'GET', path: '/api/v1/ticket/1', kind: 'backfill', status: 200, durationMs: 5, ratelimitRemaining: null, ratelimitLimit: null });
    events.emit('detail:fetched', { id: '1', changed: true, kind: 'backfill' });
    events.emit('detail:fetched', { id: '2', changed: true, kind: 'due' }); // not the backfill's
    expect(progress.numbers).toEqual(numbers({ fetched: 31, remaining: 89, requestsLeft: 1301 }));
    expect(out.chunks.at(-1)).toContain('31 of 120 tickets fetched · 1,301 requests left today');

    events.emit('pass:finished', passFinished(3, 1_000_000));
    await progress.stop(); // waits for the read the pass started
    expect(readCount).toBe(2);
    expect(progress.numbers).toEqual(reads[1]);
    expect(out.chunks.at(-1)).toBe(ERASE);
    const written = out.chunks.length;
    events.emit('detail:fetched', { id: '3', changed: true, kind: 'backfill' });
    expect(out.chunks).toHaveLength(written);
  });

  it('re-reads after an idle pass only once a minute of the engine clock has passed', async () => {
    const progress = new BackfillProgress(new TerminalLine(fakeTerminal()));
    const events = new SyncEvents();
    let reads = 0;
    await progress.follow(events, async () => (reads++, numbers()));
    events.emit('pass:finished', passFinished(0, 1_000_000));
    events.emit('pass:finished', passFinished(0, 1_030_000));
    events.emit('pass:finished', passFinished(0, 1_059_999));
    events.emit('pass:finished', passFinished(0, 1_060_000));
    await progress.stop();
    expect(reads).toBe(3); // the first, at 1_000_000 and at 1_060_000
  });

  it('a failed read leaves the line as it was', async () => {
    const out = fakeTerminal();
    const progress = new BackfillProgress(new TerminalLine(out));
    const events = new SyncEvents();
    let fail = false;
    await progress.follow(events, async () => {
      if (fail) throw new Error('the database is gone');
      return numbers();
    });
    fail = true;
    await progress.refresh();
    expect(progress.numbers).toEqual(numbers());
  });
});

describe('progress only with pretty lines on a terminal', () => {
  it('a log line written while the progress shows lands above it', async () => {
    const out = fakeTerminal();
    const { logger, terminal } = cliOutput({ logLevel: 'info', logFormat: undefined }, out);
    const progress = new BackfillProgress(terminal!);
    await progress.follow(new SyncEvents(), async () => numbers());
    logger.info({ requests: 3 }, 'sync pass');
    expect(out.chunks.at(-1)).toMatch(new RegExp(`^\\r\\x1b\\[2K\\[\\d\\d:\\d\\d:\\d\\d\\] INFO: sync pass {2}requests=3\\n${escape(formatProgress(numbers()))}$`));
  });

  it.each([
    ['JSON on a terminal', { logFormat: 'json' as const }, true],
    ['pretty into a file', { logFormat: 'pretty' as const }, false],
    ['JSON into a pipe', { logFormat: undefined }, false],
  ])('%s: no terminal line, so no progress', (_name, config, isTTY) => {
    const out = { ...fakeTerminal(), isTTY };
    expect(cliOutput({ logLevel: 'info', ...config }, out).terminal).toBeUndefined();
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
