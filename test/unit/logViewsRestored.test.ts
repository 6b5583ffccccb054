import { describe, expect, it } from 'vitest';
import { logViewsRestored } from '../../src/db/repos/views.ts';
import { createLogger } from '../../src/logger.ts';

describe('logViewsRestored: what every command that migrates says of the BI views', () => {
  function lines(report: Parameters<typeof logViewsRestored>[1]): Array<Record<string, unknown>> {
    const out: string[] = [];
    logViewsRestored(createLogger('info', { write: (line: string) => void out.push(line) }), report);
    return out.map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  it('nothing when every view stood', () => {
    expect(lines({ restored: [], notRestored: [] })).toEqual([]);
  });

  it('one line for the views made again, a warning for each that could not be', () => {
    const logged = lines({
      restored: ['agents', 'open_backlog_daily'],
      notRestored: [{ name: 'ticket_sla', reason: 'function business_seconds(…) does not exist (SQLSTATE 42883)' }],
    });
    expect(logged.map((l) => [l.level, l.views ?? l.view])).toEqual([
      [30, ['agents', 'open_backlog_daily']],
      [40, 'ticket_sla'],
    ]);
    expect(logged[1]!.reason).toMatch(/42883/);
  });
});
